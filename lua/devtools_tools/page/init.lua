-- devtools_tools.page: one page target, attached through a flattened
-- session. The Page is made of parts that each own their state, and its
-- public methods call them:
--   page.docs         its frames and their documents, kept from its events
--                     (page/frames.lua)
--   page.site         its face for tools/ and its other parts: document
--                     handles, is it open (page/site.lua)
--   page.probes       scripts a call left running (page/probes.lua)
--   page.toolset      discovery, lookup, calls (page/toolset.lua)
--   page.observation  console, network, listeners, raw CDP (page/observe.lua)
--   page.webmcp       its WebMCP tools (tools/webmcp.lua)
--   page.readiness    what happens on it, for settle (page/ready.lua)
--   page.camera       screenshots (page/screenshot.lua)
-- and navigation (page/navigate.lua) and evaluation (page/evaluate.lua)
-- work on it. This file attaches a page, hands every event of its
-- sessions to its parts, and closes it.
--
-- The page learns about its frames only from CDP events, which arrive
-- while some call waits on the connection or whenever the program gives
-- the library time (rt/host.lua); handlers only record state and never
-- wait themselves.
--
-- What it must never do: let one part write another's state (each is
-- asked through its methods), or leave a session listened to once closed.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local errors = require "devtools_tools.base.errors"
local options = require "devtools_tools.base.options"
local webmcp = require "devtools_tools.tools.webmcp"
local frames = require "devtools_tools.page.frames"
local site_mod = require "devtools_tools.page.site"
local probes = require "devtools_tools.page.probes"
local toolset = require "devtools_tools.page.toolset"
local observe = require "devtools_tools.page.observe"
local ready = require "devtools_tools.page.ready"
local screenshot = require "devtools_tools.page.screenshot"
local navigate = require "devtools_tools.page.navigate"
local evaluate = require "devtools_tools.page.evaluate"

local raise = errors.raise
local type, tostring, ipairs, setmetatable, error, pcall =
      type, tostring, ipairs, setmetatable, error, pcall

local M = {}

local Page = {}
Page.__index = Page
Page.__name = "devtools_tools.Page"
M.Page = Page

-- ---- events ------------------------------------------------------------------

-- What a change of the page's tools is, for page:on("tools_changed").
local TOOLS_CHANGED = {
  ["Page.frameNavigated"] = "navigated", ["Page.navigatedWithinDocument"] = "navigated",
  ["WebMCP.toolsAdded"] = "webmcp", ["WebMCP.toolsRemoved"] = "webmcp",
  ["Runtime.bindingCalled"] = "listener",
}

local function on_event(self, method, params, session)
  local docs = self.docs
  local epoch = docs.epoch
  docs:dispatch(method, params, session)
  -- the page's other records, and WebMCP tools (which change what a
  -- discovery finds, like a new document does)
  self.observation:dispatch(method, params, session)
  self.webmcp:dispatch(method, params, session)
  if method == "WebMCP.toolsAdded" or method == "WebMCP.toolsRemoved" then docs:tools_changed() end
  local r = self.readiness
  r:dispatch(method, params or {})
  if docs.epoch ~= epoch then
    r:event()
    if docs.watching then self.observation:tools_changed(TOOLS_CHANGED[method] or "frames") end
  end
end

-- ---- attach ---------------------------------------------------------------------

-- Sends several commands on one session before awaiting any reply.
local function pipelined(conn, session, list, deadline)
  local ids = {}
  for i, c in ipairs(list) do ids[i] = conn:send(c[1], c[2], session, deadline) end
  local out = {}
  for i, c in ipairs(list) do out[i] = conn:await(ids[i], deadline, c[1]) end
  return out
end
M.pipelined = pipelined

-- attach(browser, target_id, deadline, opts?) -> Page. opts: history (the
-- page's records: see page/observe.lua), forget (called with the page once
-- it is closed or detached: the browser's list of its pages).
function M.attach(browser, target_id, deadline, opts)
  opts = opts or {}
  local conn = browser.conn
  local r = conn:await(conn:send("Target.attachToTarget", { targetId = target_id, flatten = true },
    nil, deadline), deadline, "Target.attachToTarget")
  local self = setmetatable({ browser = browser, conn = conn, target_id = target_id, session = r.sessionId,
    url = "about:blank", closed = false }, Page)
  local function listener(method, params, session) on_event(self, method, params, session) end
  self._forget = opts.forget
  local docs = frames.new(conn, self.session, listener, {
    network_params = function() return self.observation:network_params() end,
    session_gone = function(sid) self.observation:session_gone(sid) end,
    -- (WebMCP forgets the session's tools as on the browser's word)
    child_dropped = function(sid) self.webmcp:dispatch("Target.detachedFromTarget", { sessionId = sid }) end,
    -- (the main frame's id and URL, as the page has always shown them)
    url = function(url) self.url, self.main_frame = url, self.docs.main_frame end,
  })
  self.docs = docs
  -- (the frame bookkeeping's tables, as the page has always shown them)
  self.frames, self.child_sessions, self.worker_sessions = docs.frames, docs.child_sessions, docs.worker_sessions
  local site = site_mod.new(self)
  self.site = site
  self.probes = probes.new(conn, self.session)
  self.observation = observe.new(site, opts.history or browser.history)
  self.webmcp = webmcp.new(site)
  self.readiness = ready.new()
  self.toolset = toolset.new(site, self.webmcp, self.readiness)
  self.camera = screenshot.new(site)
  conn:listen(self.session, listener)
  -- console, network and WebMCP records, enabled with the rest
  local extra = self.observation:enable_send(deadline)
  -- What happens on the page from now on, for page:settle: its requests
  -- as the records have them (a document gone ends its own), its frames
  -- loading, its tools changing (on_event).
  local rd = self.readiness
  self.observation:on("request", function(rec) rd:request(rec) end)
  self.observation:on("response", function(rec) rd:finished(rec) end)
  local res = pipelined(conn, self.session, {
    { "Page.enable" },
    { "Page.setLifecycleEventsEnabled", { enabled = true } },
    { "Runtime.enable" },
    { "Target.setAutoAttach", frames.AUTO_ATTACH },
    { "Page.getFrameTree" },
  }, deadline)
  self.observation:enable_finish(extra, deadline)
  docs:main(res[5].frameTree.frame)
  return self
end

-- detached(page): the page was closed or its target detached: its sessions
-- are heard no more, and what other tasks still wait for on them fails
-- now, as what they send later does, while they hold the page (which keeps
-- the error: the connection forgets the sessions with it). For the
-- browser, which learns of a detach first.
function M.detached(self)
  if self.closed then return end
  self.closed = true
  local forget = self._forget
  if forget then forget(self) end
  local gone = errors.new("disconnected", "the page was closed (or detached) while the call waited")
  self._ended = gone
  self.docs:detach(gone)
  self.probes:forget()
  self.webmcp:detached()
end

-- target_destroyed(page, target_id): the browser destroyed a target (its
-- browser session heard it: browser/object.lua): one of the page's
-- out-of-process iframes, maybe, that it never told the page of
function M.target_destroyed(self, target_id)
  if not self.closed then on_event(self, "Target.targetDestroyed", { targetId = target_id }, nil) end
end

-- close(opts?): closes the page's target. Idempotent.
function Page:close(opts)
  opts = options.check(opts, options.TIMEOUT, "close")
  if self.closed then return end
  local conn = self.conn
  local ok, err = true, nil
  if not conn.closed then
    ok, err = errors.catch(conn.call, conn, "Target.closeTarget", { targetId = self.target_id }, opts)
  end
  M.detached(self)
  -- Closing is best effort (a browser that does not answer still loses the
  -- page here), but a cancelled task must learn it was cancelled.
  if not ok and err.code == "cancelled" then error(err, 0) end
end

-- ---- what the page does ------------------------------------------------------------

-- navigate(url, opts?), reload(opts?), evaluate(expression, opts?):
-- page/navigate.lua, page/evaluate.lua
function Page:navigate(url, opts) return navigate.navigate(self, url, opts) end
function Page:reload(opts) return navigate.reload(self, opts) end
function Page:evaluate(expression, opts) return evaluate.evaluate(self, expression, opts) end

-- discover, tool_groups, tool, wait_for_tool, call, call_many:
-- page/toolset.lua
function Page:discover(opts) return self.toolset:discover(opts) end
function Page:tool_groups(opts) return self.toolset:tool_groups(opts) end
function Page:tool(name, opts) return self.toolset:tool(name, opts) end
function Page:wait_for_tool(name, opts) return self.toolset:wait_for_tool(name, opts) end
function Page:call(name, args, opts) return self.toolset:call(name, args, opts) end
function Page:call_many(list, opts) return self.toolset:call_many(list, opts) end

local settle_opts = { timeout = true, quiet = "seconds", max = "seconds", long = "seconds" }

-- settle(opts?) -> true once the page is ready to be looked at, false when
-- opts.max (3 s) or opts.timeout passed first (page/ready.lua has the
-- rule; opts.quiet, 0.1 s, and opts.long, 1 s, are its figures).
function Page:settle(opts)
  opts = options.check(opts, settle_opts, "settle")
  self.site:check_open()
  local deadline = self.conn:deadline(opts)
  self.docs:watch_tools()                     -- (a listener added or removed tells)
  return ready.settle(self, self.readiness, opts, deadline)
end

-- wait_for_selector(css, opts?) -> true once css matches an element of
-- the main frame's document; raises timeout, or js_error for a selector
-- the page cannot read
function Page:wait_for_selector(css, opts)
  opts = options.check(opts, options.TIMEOUT, "wait_for_selector")
  self.site:check_open()
  return ready.wait_for_selector(self, css, self.conn:deadline(opts))
end

-- set_viewport(width, height, opts?): the page's viewport made width x
-- height CSS pixels (through its window's bounds, which outlive the call)
function Page:set_viewport(width, height, opts)
  opts = options.check(opts, options.TIMEOUT, "set_viewport")
  self.site:check_open()
  return ready.set_viewport(self, width, height, self.conn:deadline(opts))
end

-- wait_until(pred, opts?) -> true once pred() holds, false when opts.timeout
-- passed first. pred is asked at once and after each message the page's
-- connection reads, so the page's events (its page:on listeners) are
-- delivered meanwhile. In a task it suspends the task. Raises
-- disconnected when the page or the browser goes away first, cancelled
-- when the task is; an error pred raises is raised here, after the wait.
function Page:wait_until(pred, opts)
  if type(pred) ~= "function" then
    raise("bad_argument", "wait_until: expected a function, got " .. type(pred))
  end
  opts = options.check(opts, options.TIMEOUT, "wait_until")
  local conn, site, docs = self.conn, self.site, self.docs
  local deadline = conn:deadline(opts)
  site:check_alive()             -- (a listener stops no script a call left running)
  local failed, why = false, nil
  local function holds()
    if failed or self.closed or docs.crashed then return true end
    local ok, r = pcall(pred)
    if not ok then
      failed, why = true, r
      return true
    end
    return r and true or false
  end
  local ok = conn:wait_for(holds, deadline)
  if failed then error(why, 0) end
  site:check_alive()
  return ok
end

-- What the page saw (page/observe.lua) and its pictures (page/screenshot.lua).
function Page:on(event, fn) return self.observation:on(event, fn) end
function Page:on_cdp(method, fn) return self.observation:on_cdp(method, fn) end
function Page:cdp(method, params, opts) return self.observation:cdp(method, params, opts) end
function Page:mark() return self.observation:mark() end
function Page:console_messages(opts) return self.observation:console_messages(opts) end
function Page:network_requests(opts) return self.observation:network_requests(opts) end
function Page:response_body(rec, opts) return self.observation:response_body(rec, opts) end
function Page:observe(fn, opts) return self.observation:observe(fn, opts) end
function Page:screenshot(opts) return self.camera:screenshot(opts) end

function Page:__tostring()
  return "Page(" .. tostring(self.url) .. (self.closed and ", closed" or "")
    .. (self.docs.crashed and ", crashed" or "") .. ")"
end

errors.guard_methods(Page, "Page", "page")

return M
