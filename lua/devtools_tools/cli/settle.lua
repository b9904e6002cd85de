-- devtools_tools.cli.settle: waiting until a page the command opened is
-- ready to be looked at - its tool set has stopped changing and its
-- network is idle - and, when asked, until a CSS selector matches.
--
-- A page registers tools after its load event (the sample app mounts its
-- support widget, a cross-origin frame with tools of its own, once its
-- session has loaded) and fills its tables from requests that answer
-- later: `list`, `call` and `screenshot` look once nothing has happened
-- for QUIET seconds - no tools_changed event (a listener came or went, a
-- frame, a navigation, WebMCP), no request sent or answered - and no
-- request is in flight but those older than LONG (a long poll, a stream),
-- and no frame is loading (from Page.frameStartedLoading to its
-- frameStoppedLoading, across the swap of a cross-origin frame into a
-- process of its own); MAX seconds at most after the load. A frame's
-- tools come while it loads, after gaps without requests: on a loaded
-- machine the support widget's came more than QUIET after the last one.
-- QUIET is wall time, and a loaded machine is slow to run what the page
-- does with an answer (the sample app mounts its widget on its session's
-- answer: 3 in 6 `list`s settled first at a load of 8 on two cores), so
-- once quiet the page's main thread is asked to catch up: an idle callback
-- runs only when the tasks queued before it have run, and what they
-- started (a request, a frame) is told before its answer. An event in
-- between: the wait goes on. Every wait is on the page's events
-- (page:wait_until) or its answer, never a sleep.
--
-- It must never wait past the command's deadline, nor longer than MAX
-- after the load; a page that never settles is looked at as it is.

local dt = require "devtools_tools"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local pairs, next, error, tostring, pcall, setmetatable, type = pairs, next, error, tostring, pcall, setmetatable, type
local now = dt.now

local M = {}

M.QUIET = 0.1        -- seconds without an event
M.MAX = 3            -- seconds at most after the load
M.LONG = 1           -- a request in flight for longer does not hold the wait

local Watch = {}
Watch.__index = Watch

-- watch(page) -> Watch: follows the page's events from now on (before it
-- is navigated: the requests of the load count)
function M.watch(page)
  local w = setmetatable({ page = page, last = now(), inflight = {}, frames = {}, seen = 0 }, Watch)
  local function event() w.last = now() w.seen = w.seen + 1 end
  -- frame(p, loading): the frame p names is loading (true) or not (nil);
  -- its id, a string the page's browser gives, is a key of frames only
  local function frame(p, loading)
    if type(p) == "table" and type(p.frameId) == "string" then w.frames[p.frameId] = loading end
    event()
  end
  w.offs = {
    page:on("tools_changed", event),
    page:on("request", function(r) w.inflight[r] = now() event() end),
    page:on("response", function(r) w.inflight[r] = nil event() end),
    page:on_cdp("Page.frameStartedLoading", function(p) frame(p, true) end),
    page:on_cdp("Page.frameStoppedLoading", function(p) frame(p, nil) end),
    -- (reason "swap": the frame goes on loading in a process of its own)
    page:on_cdp("Page.frameDetached", function(p)
      if type(p) == "table" and p.reason == "swap" then event() else frame(p, nil) end
    end),
  }
  return w
end

function Watch:stop()
  for _, off in pairs(self.offs or {}) do off() end
  self.offs = nil
end

-- busy_until(t) -> when the page may stop holding the wait, nil when it
-- does not hold it: a frame loading holds it until an event says otherwise
-- (math.huge: what it loads is what the command looks at), a request in
-- flight until it is LONG old (a long poll, a stream).
local function busy_until(self, t)
  if next(self.frames) ~= nil then return math.huge end
  local soonest
  for r, since in next, self.inflight do
    local ends = since + M.LONG
    if ends <= t then
      self.inflight[r] = nil
    elseif not soonest or ends < soonest then
      soonest = ends
    end
  end
  return soonest
end

-- The page's main thread has nothing queued: an idle callback (a page
-- without one: a task) runs, at most ms milliseconds from now.
local IDLE = [[
new Promise((r) => typeof requestIdleCallback === 'function'
  ? requestIdleCallback(() => r(true), { timeout: %d }) : setTimeout(() => r(true), 0))]]

-- caught_up(self, stop_at) -> true when the page answered an idle callback
-- with no event of ours before, false when an event came, nil when
-- stop_at came first. Whatever the page's script made of it (it replaced
-- requestIdleCallback or Promise), an answer means its thread got there;
-- an error (it navigated) is taken as an event. Sent raw (page:cdp): a
-- page busy past MAX is looked at as it is, not taken for a stuck one
-- whose script the next call would stop (as page:evaluate's timeout does).
local function caught_up(self, stop_at)
  local seen, t = self.seen, now()
  local ms = math.floor((stop_at - t) * 1000)
  if ms <= 0 then return nil end
  local ok, e = pcall(self.page.cdp, self.page, "Runtime.evaluate",
    { expression = IDLE:format(ms), awaitPromise = true, returnByValue = true }, { timeout = stop_at - t })
  if not ok and dt.is_error(e) and e.code == "timeout" then return nil end
  if not ok and not dt.is_error(e) then error(e, 0) end
  return ok and self.seen == seen
end

-- wait(left, quiet?, max?) -> true when the page settled, false when MAX
-- (or what left() gives, the command's deadline) ran out first. left: a
-- function giving the seconds the command has left.
function Watch:wait(left, quiet, max)
  quiet, max = quiet or M.QUIET, max or M.MAX
  local stop_at = now() + math.min(max, left())
  local ok, res = pcall(function()
    while true do
      local t = now()
      if t >= stop_at then return false end
      local wait_for
      local busy = busy_until(self, t)
      if busy then
        wait_for = math.min(busy, stop_at) - t              -- until an event, or the request is old
      else
        local q = self.last + quiet - t
        if q <= 0 then
          local done = caught_up(self, stop_at)
          if done == nil then return false end
          if done then return true end
          q, t = quiet, now()
        end
        wait_for = math.min(q, stop_at - t)
      end
      local seen = self.seen
      if wait_for > 0 then
        self.page:wait_until(function() return self.seen ~= seen end, { timeout = wait_for })
      end
    end
  end)
  self:stop()
  if not ok then error(res, 0) end
  return res
end

-- The expression that waits in the page until selector matches (a
-- MutationObserver: no polling), or ms milliseconds pass (false then).
local WAIT_SELECTOR = [[
((sel, ms) => new Promise((resolve, reject) => {
  let obs, timer;
  const done = (v) => { if (obs) obs.disconnect(); clearTimeout(timer); resolve(v); };
  const look = () => { try { return document.querySelector(sel) !== null; } catch (e) { reject(e); return false; } };
  if (look()) return resolve(true);
  obs = new MutationObserver(() => { if (look()) done(true); });
  obs.observe(document, { childList: true, subtree: true, attributes: true });
  timer = setTimeout(() => done(false), ms);
}))(%s, %d)]]

-- selector(page, css, left) -> nil; raises timeout when it does not match
-- within what the command has left (a selector the page cannot read:
-- js_error, as the page says)
function M.selector(page, css, left)
  local l = left()
  -- (the page gives up a little before the command does, to say so)
  local expr = WAIT_SELECTOR:format(dt.json.encode(css), math.max(0, math.floor(l * 1000) - 50))
  local found = page:evaluate(expr, { timeout = l })
  if found ~= true then
    error(dt.new_error("timeout", "no element matches the selector " .. tostring(css)
      .. " (--wait-for-selector)"), 0)
  end
end

return M
