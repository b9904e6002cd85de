-- devtools_tools.page.ready: is the page ready to be looked at? The rule
-- every front end uses (page:settle), and the waits for what a caller
-- names (page:wait_for_selector; what the page's scripts say of WebMCP
-- when a tool never came).
--
-- A page registers tools after its load event (an app mounts a widget, a
-- cross-origin frame with tools of its own, once its data has come) and
-- fills its tables from requests that answer later. It is settled once
-- nothing has happened for QUIET seconds - no change of its tools (a
-- listener came or went, a frame, a navigation, WebMCP), no request sent
-- or finished - and no request is in flight but those older than LONG (a
-- long poll, a stream), and no frame is loading (from
-- Page.frameStartedLoading to its frameStoppedLoading, across the swap
-- of a cross-origin frame into a process of its own); MAX seconds at most.
-- A frame's tools come while it loads, after gaps without requests. QUIET
-- is wall time, and a loaded machine is slow to run what the page does
-- with an answer, so once quiet the page's main thread is asked to catch
-- up (js/idle.js: an idle callback runs only when the tasks queued before
-- it have run, and what they started is told before its answer); an
-- event in between: the wait goes on.
--
-- The page's activity is followed from its attach on (a Readiness, which
-- Page holds and feeds), so settling after a navigation counts the load's
-- requests.
--
-- What it must never do: sleep (every wait is on the page's events, or on
-- an answer of the page), wait past the call's deadline or MAX, take a
-- busy page for a stuck one (the idle probe is sent raw: a timeout there
-- stops no script), or fail because a page never settles (settle answers
-- false; the page is looked at as it is).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local remote = require "devtools_tools.wire.remote"
local pagejs = require "devtools_tools.tools.pagejs"

local raise = errors.raise
local now = core.now
local type, next, ipairs, error, setmetatable = type, next, ipairs, error, setmetatable
local math_min, math_max, math_floor, math_huge = math.min, math.max, math.floor, math.huge

local M = {}

M.QUIET = 0.1        -- seconds without an event
M.MAX = 3            -- seconds at most
M.LONG = 1           -- a request in flight for longer does not hold the wait

-- ---- the page's activity ------------------------------------------------------------

local Readiness = {}
Readiness.__index = Readiness

-- new() -> Readiness: last (when something last happened), seen (how many
-- things have), the requests in flight (since when) and the frames loading
function M.new()
  return setmetatable({ last = now(), seen = 0, inflight = {}, n_inflight = 0, frames = {} }, Readiness)
end

-- event(): something happened that may change what the page shows or offers
function Readiness:event()
  self.last = now()
  self.seen = self.seen + 1
end

-- How many requests in flight are kept before the oldest are looked at (a
-- record the page's ring dropped while in flight never finishes here).
local PRUNE_AT = 256

-- request(rec) / finished(rec): a request was sent / finished or failed
-- (the page's network records: see page/observe.lua)
function Readiness:request(rec)
  if self.inflight[rec] == nil then self.n_inflight = self.n_inflight + 1 end
  self.inflight[rec] = now()
  if self.n_inflight > PRUNE_AT then self:busy_until(now(), M.LONG) end
  self:event()
end

function Readiness:finished(rec)
  if self.inflight[rec] ~= nil then
    self.inflight[rec] = nil
    self.n_inflight = self.n_inflight - 1
  end
  self:event()
end

-- dispatch(method, params): the page's events that tell of frames loading
function Readiness:dispatch(method, p)
  if method == "Page.frameStartedLoading" then
    if type(p.frameId) == "string" then self.frames[p.frameId] = true end
    self:event()
  elseif method == "Page.frameStoppedLoading" then
    if type(p.frameId) == "string" then self.frames[p.frameId] = nil end
    self:event()
  elseif method == "Page.frameDetached" then
    -- (reason "swap": the frame goes on loading in a process of its own)
    if p.reason ~= "swap" and type(p.frameId) == "string" then self.frames[p.frameId] = nil end
    self:event()
  end
end

-- busy_until(t, long) -> when the page may stop holding a wait, nil when it
-- does not hold it: a frame loading holds it until an event says otherwise
-- (math.huge), a request in flight until it is `long` old.
function Readiness:busy_until(t, long)
  if next(self.frames) ~= nil then return math_huge end
  local soonest
  for r, since in next, self.inflight do
    local ends = since + long
    if ends <= t then
      self.inflight[r] = nil
      self.n_inflight = self.n_inflight - 1
    elseif not soonest or ends < soonest then
      soonest = ends
    end
  end
  return soonest
end

-- ---- settle -------------------------------------------------------------------------

-- The main frame's default execution context, or nil while it has none.
local function main_context(page)
  local docs = page.docs
  local c = docs:context(docs.main_frame, docs.session)
  return c and c.id
end

-- call_in_page(page, fn, args, deadline, what) -> ok, value | err: fn
-- (a function declaration of js/) called in the main frame's document,
-- raw: a timeout here leaves the page alone (no probe, no stop later)
local function call_in_page(page, fn, args, deadline, what)
  local conn = page.conn
  local ctx = main_context(page)
  local params = { functionDeclaration = fn, arguments = args, awaitPromise = true, returnByValue = true,
    executionContextId = ctx }
  if not ctx then
    return false, errors.new("navigated", what .. ": the main frame has no document now")
  end
  local ok, r = errors.catch(function()
    return conn:await(conn:send("Runtime.callFunctionOn", params, page.session, deadline), deadline,
      "Runtime.callFunctionOn")
  end)
  if not ok then return false, r end
  if r.exceptionDetails then
    remote.release_thrown(conn, page.session, r)
    local message, details = remote.exception_info(r.exceptionDetails)
    return false, errors.new("js_error", message, { details = details })     -- (the page's words, as evaluate's)
  end
  return true, remote.remote_value(r.result)
end

-- caught_up(page, r, stop_at) -> true when the page answered an idle
-- callback with nothing happening before, false when something happened,
-- nil when stop_at came first. Whatever the page's script made of it (it
-- replaced requestIdleCallback or Promise), an answer means its thread got
-- there; an error (it navigated) counts as an event.
local function caught_up(page, r, stop_at)
  local seen, t = r.seen, now()
  local ms = math_floor((stop_at - t) * 1000)
  if ms <= 0 then return nil end
  local ok, e = call_in_page(page, pagejs.IDLE, { { value = ms } }, stop_at, "settle")
  if not ok then
    if e.code == "timeout" then return nil end
    if e.code == "cancelled" or e.code == "disconnected" then error(e, 0) end
    return false
  end
  return r.seen == seen
end

-- settle(page, r, opts, deadline) -> true when the page settled, false
-- when opts.max (M.MAX) or the deadline came first. opts: quiet, max, long
-- (seconds).
function M.settle(page, r, opts, deadline)
  local quiet, long = opts.quiet or M.QUIET, opts.long or M.LONG
  local stop_at = math_min(now() + (opts.max or M.MAX), deadline)
  while true do
    local t = now()
    if t >= stop_at then return false end
    local wait_for
    local busy = r:busy_until(t, long)
    if busy then
      wait_for = math_min(busy, stop_at) - t              -- until an event, or the request is old
    else
      local q = r.last + quiet - t
      if q <= 0 then
        local done = caught_up(page, r, stop_at)
        if done == nil then return false end
        if done then return true end
        q, t = quiet, now()
      end
      wait_for = math_min(q, stop_at - t)
    end
    local seen = r.seen
    if wait_for > 0 then
      page:wait_until(function() return r.seen ~= seen end, { timeout = wait_for })
    end
  end
end

-- ---- waits for what the caller names ------------------------------------------------

-- wait_for_selector(page, css, deadline): until css matches an element of
-- the main frame's document (a MutationObserver in the page: no polling);
-- raises timeout when it does not by the deadline, js_error for a selector
-- the page cannot read.
function M.wait_for_selector(page, css, deadline)
  if type(css) ~= "string" then
    raise("bad_argument", "wait_for_selector: expected a CSS selector (a string), got " .. type(css))
  end
  local left = deadline - now()
  -- (the page gives up a little before the call does, to say so)
  local ms = math_max(0, math_floor(left * 1000) - 50)
  local ok, found = call_in_page(page, pagejs.WAIT_SELECTOR, { { value = css }, { value = ms } }, deadline,
    "wait_for_selector")
  -- (a loaded machine may answer the page's false later than the call's
  -- deadline: the call's own timeout says the same, and is said so)
  local timed_out = not ok and errors.is_error(found) and found.code == "timeout"
  if not ok and not timed_out then error(found, 0) end
  if found ~= true then
    raise("timeout", "wait_for_selector: no element matches the selector " .. css .. " before the timeout",
      { details = { selector = css } })
  end
  return true
end

-- What webmcp_usage reads at most of the page's scripts.
M.MAX_SCRIPTS = 20
M.MAX_BODY = 4 * 1024 * 1024

-- webmcp_usage(page, name, deadline) -> {enabled, uses, named}: is the
-- WebMCP page API on, and do the page's scripts use it (document.modelContext),
-- naming `name`? Their text inline, then the bodies of the scripts the page
-- loaded as its history holds them (a few, within the deadline). For a tool
-- that never came: a front end can say that WebMCP would show it. A look
-- that fails answers what it found so far.
function M.webmcp_usage(page, name, deadline)
  local out = { enabled = false, uses = false, named = false }
  local ok, r = call_in_page(page, pagejs.WEBMCP_USAGE, { { value = name } }, deadline, "webmcp_usage")
  if not ok then
    if r.code == "cancelled" then error(r, 0) end
    return out
  end
  if type(r) ~= "table" then return out end
  out.enabled, out.uses, out.named = r[1] == true, r[2] == true, r[3] == true
  if out.enabled or out.named then return out end
  local n = 0
  local okr, recs = errors.catch(page.network_requests, page)
  for _, rec in ipairs(okr and recs or {}) do
    local left = deadline - now()
    if n >= M.MAX_SCRIPTS or left <= 0 then break end
    if rec.type == "Script" and rec.done and not rec.failed
        and (rec.sizes and rec.sizes.body or 0) <= M.MAX_BODY then
      n = n + 1
      local okb, body = errors.catch(page.response_body, page, rec, { timeout = left })
      if not okb and body.code == "cancelled" then error(body, 0) end
      if okb and type(body) == "string" and body:find("modelContext", 1, true) then
        out.uses = true
        if body:find(name, 1, true) then
          out.named = true
          break
        end
      end
    end
  end
  return out
end

-- ---- the viewport ---------------------------------------------------------------------

-- set_viewport(page, width, height, deadline): the page's viewport
-- (innerWidth x innerHeight) made width x height, through its window's
-- bounds (which outlive the call: a tab attached again keeps its size)
function M.set_viewport(page, width, height, deadline)
  for _, v in ipairs({ width, height }) do
    if type(v) ~= "number" or v < 1 or v > 100000 or v % 1 ~= 0 then
      raise("bad_argument", "set_viewport: width and height are whole numbers of CSS pixels, 1 to 100000")
    end
  end
  local conn = page.conn
  local function call(method, params, session)
    return conn:await(conn:send(method, params, session, deadline), deadline, method)
  end
  local cur = call("Runtime.evaluate", { expression = "[innerWidth, innerHeight, outerWidth, outerHeight]",
    returnByValue = true }, page.session)
  local v = cur.result and cur.result.value
  if type(v) ~= "table" then raise("protocol_error", "set_viewport: the page did not tell its size") end
  if v[1] == width and v[2] == height then return end
  local w = call("Browser.getWindowForTarget", nil, page.session)
  call("Browser.setWindowBounds", { windowId = w.windowId, bounds = { windowState = "normal",
    width = width + (v[3] - v[1]), height = height + (v[4] - v[2]) } }, page.session)
end

M.Readiness = Readiness
return M
