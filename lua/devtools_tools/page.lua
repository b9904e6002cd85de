-- devtools_tools.page: one page target, attached through a flattened
-- session: navigation, evaluation, and the bookkeeping of its frames and
-- their documents that tool discovery builds on.
--
-- The page learns about its frames only from CDP events (frameNavigated,
-- executionContextCreated, ...), which arrive while some call waits on the
-- connection; handlers here only record state and never wait themselves.

local core = require "devtools_tools.core"
local errors = require "devtools_tools.errors"

local raise = errors.raise
local now = core.now
local null = core.null
local type, tostring, pairs, ipairs, setmetatable, math_huge =
      type, tostring, pairs, ipairs, setmetatable, math.huge

local M = {}

local Page = {}
Page.__index = Page
Page.__name = "devtools_tools.Page"
M.Page = Page

-- Messages Chromium uses when the document a call ran in went away.
local gone_patterns = {
  "Execution context was destroyed",
  "Inspected target navigated or closed",
  "Cannot find context with specified id",
  "Cannot find default execution context",
  "Frame with the given id was not found",
}

function M.is_navigation_error(err)
  if not errors.is_error(err) or err.code ~= "protocol_error" then return false end
  local msg = err.details and err.details.message or err.message
  for _, p in ipairs(gone_patterns) do
    if msg:find(p, 1, true) then return true end
  end
  return false
end

-- ---- events ------------------------------------------------------------------

local handlers = {}

handlers["Page.frameNavigated"] = function(self, p, session)
  local f = p.frame
  local fr = self.frames[f.id] or {}
  fr.id, fr.url, fr.origin, fr.parent = f.id, f.url .. (f.urlFragment or ""), f.securityOrigin, f.parentId
  fr.loader_id = f.loaderId                 -- a new document: tools of the old one are stale
  fr.session = session or self.session
  self.frames[f.id] = fr
  if f.parentId == nil and (session == nil or session == self.session) then
    self.main_frame = f.id
    self.url = f.url
    self.nav_count = self.nav_count + 1
  end
end

handlers["Page.navigatedWithinDocument"] = function(self, p)
  local fr = self.frames[p.frameId]
  if fr then fr.url = p.url end
  if p.frameId == self.main_frame then self.url = p.url end
end

handlers["Page.lifecycleEvent"] = function(self, p)
  if p.name == "load" then self.loaded[p.loaderId] = true end
end

handlers["Page.frameDetached"] = function(self, p)
  local fr = self.frames[p.frameId]
  if fr and p.reason ~= "swap" then
    self.frames[p.frameId] = nil
    self.contexts[p.frameId] = nil
  end
end

handlers["Runtime.executionContextCreated"] = function(self, p, session)
  local c = p.context
  local aux = c.auxData
  if aux and aux.isDefault and aux.frameId then
    self.contexts[aux.frameId] = { id = c.id, unique_id = c.uniqueId, origin = c.origin,
      session = session }
  end
end

handlers["Runtime.executionContextDestroyed"] = function(self, p, session)
  for fid, c in pairs(self.contexts) do
    if c.session == session and (c.id == p.executionContextId
        or (p.executionContextUniqueId and c.unique_id == p.executionContextUniqueId)) then
      self.contexts[fid] = nil
    end
  end
end

handlers["Runtime.executionContextsCleared"] = function(self, _, session)
  for fid, c in pairs(self.contexts) do
    if c.session == session then self.contexts[fid] = nil end
  end
end

handlers["Inspector.targetCrashed"] = function(self, _, session)
  if session == self.session then self.crashed = true end
end

-- Out-of-process iframes arrive as targets of their own (auto-attach with
-- flatten): enable what discovery needs on their sessions, and let them run.
-- Listeners must not wait, so these commands are fire-and-forget; discovery
-- later awaits a Runtime.enable on each new session as a barrier.
local AUTO_ATTACH = { autoAttach = true, waitForDebuggerOnStart = false, flatten = true }

handlers["Target.attachedToTarget"] = function(self, p)
  local info = p.targetInfo
  local conn, sid = self.conn, p.sessionId
  if info.type ~= "iframe" then
    -- Workers and the like: nothing of ours lives there; let them run.
    conn:send_nowait("Runtime.runIfWaitingForDebugger", nil, sid)
    conn:send_nowait("Target.detachFromTarget", { sessionId = sid })
    return
  end
  self.child_sessions[sid] = { target_id = info.targetId, url = info.url,
    parent_frame = info.parentFrameId, order = self._attach_seq }
  self._attach_seq = self._attach_seq + 1
  conn:listen(sid, self._listener)
  conn:send_nowait("Page.enable", nil, sid)
  conn:send_nowait("Page.setLifecycleEventsEnabled", { enabled = true }, sid)
  conn:send_nowait("Runtime.enable", nil, sid)
  conn:send_nowait("Target.setAutoAttach", AUTO_ATTACH, sid)
  conn:send_nowait("Runtime.runIfWaitingForDebugger", nil, sid)
end

handlers["Target.detachedFromTarget"] = function(self, p)
  local sid = p.sessionId
  if self.child_sessions[sid] then
    self.child_sessions[sid] = nil
    self.conn:listen(sid, nil)
    for fid, fr in pairs(self.frames) do
      if fr.session == sid then self.frames[fid] = nil end
    end
    for fid, c in pairs(self.contexts) do
      if c.session == sid then self.contexts[fid] = nil end
    end
  end
end

-- Events that change which documents (and so which tools) the page has:
-- each bumps page.epoch, so a cached discovery knows it is out of date.
local epoch_events = {
  ["Page.frameNavigated"] = true, ["Page.frameDetached"] = true,
  ["Runtime.executionContextCreated"] = true, ["Runtime.executionContextDestroyed"] = true,
  ["Runtime.executionContextsCleared"] = true, ["Target.attachedToTarget"] = true,
  ["Target.detachedFromTarget"] = true,
}

local function on_event(self, method, params, session)
  local h = handlers[method]
  if h then
    h(self, params, session)
    if epoch_events[method] then self.epoch = self.epoch + 1 end
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

function M.attach(browser, target_id, deadline)
  local conn = browser.conn
  local r = conn:await(conn:send("Target.attachToTarget", { targetId = target_id, flatten = true },
    nil, deadline), deadline, "Target.attachToTarget")
  local self = setmetatable({
    browser = browser, conn = conn, target_id = target_id, session = r.sessionId,
    url = "about:blank", frames = {}, contexts = {}, loaded = {}, nav_count = 0,
    child_sessions = {}, _attach_seq = 1, epoch = 0,
  }, Page)
  browser.pages_by_session[self.session] = self
  self._listener = function(method, params, session)
    on_event(self, method, params, session)
  end
  conn:listen(self.session, self._listener)
  local res = pipelined(conn, self.session, {
    { "Page.enable" },
    { "Page.setLifecycleEventsEnabled", { enabled = true } },
    { "Runtime.enable" },
    { "Target.setAutoAttach", AUTO_ATTACH },
    { "Page.getFrameTree" },
  }, deadline)
  local tree = res[5].frameTree.frame
  self.main_frame = tree.id
  self.url = tree.url
  if not self.frames[tree.id] then
    self.frames[tree.id] = { id = tree.id, url = tree.url, origin = tree.securityOrigin,
      loader_id = tree.loaderId, session = self.session }
  end
  return self
end

-- ---- navigation ----------------------------------------------------------------

local function check_open(self)
  if self.closed then raise("disconnected", "the page is closed") end
  if self.conn.closed then raise("disconnected", "the browser connection is closed: "
    .. tostring(self.conn.closed)) end
end

local function opt_table(opts, fname)
  if opts ~= nil and type(opts) ~= "table" then
    raise("bad_argument", fname .. ": opts must be a table, got " .. type(opts))
  end
  return opts
end

local function wait_load(self, loader_id, deadline, what)
  local loaded = self.loaded
  local ok = self.conn:wait_for(function()
    return loaded[loader_id] or self.crashed or self.closed
  end, deadline)
  if self.crashed then raise("disconnected", what .. ": the page crashed") end
  if self.closed then raise("disconnected", what .. ": the page was closed") end
  if not ok then raise("timeout", what .. ": timed out waiting for the load event") end
end

-- navigate(url, opts?) -> self, once the new document fired `load`
function Page:navigate(url, opts)
  check_open(self)
  opt_table(opts, "navigate")
  if type(url) ~= "string" then
    raise("bad_argument", "navigate: url must be a string, got " .. type(url))
  end
  local conn = self.conn
  local deadline = conn:deadline(opts)
  local r = conn:await(conn:send("Page.navigate", { url = url }, self.session, deadline),
    deadline, "Page.navigate")
  if r.errorText and r.errorText ~= "" then
    raise("protocol_error", "navigate: " .. url .. ": " .. r.errorText,
      { details = { errorText = r.errorText, url = url } })
  end
  if r.loaderId then     -- none for a same-document (fragment) navigation
    wait_load(self, r.loaderId, deadline, "navigate to " .. url)
  end
  return self
end

-- reload(opts?) -> self, once the new document fired `load`
function Page:reload(opts)
  check_open(self)
  opt_table(opts, "reload")
  local conn = self.conn
  local deadline = conn:deadline(opts)
  local before = self.nav_count
  conn:await(conn:send("Page.reload", { ignoreCache = opts and opts.ignore_cache or nil },
    self.session, deadline), deadline, "Page.reload")
  local ok = conn:wait_for(function() return self.nav_count > before or self.crashed end, deadline)
  if not ok then raise("timeout", "reload: timed out waiting for the new document") end
  local fr = self.frames[self.main_frame]
  wait_load(self, fr.loader_id, deadline, "reload")
  return self
end

-- ---- evaluate ------------------------------------------------------------------

-- A RemoteObject returned by value -> Lua value.
local unserializable = {
  NaN = 0 / 0, Infinity = math_huge, ["-Infinity"] = -math_huge, ["-0"] = -0.0,
}

function M.remote_value(ro)
  if ro == nil or ro.type == "undefined" then return nil end
  local u = ro.unserializableValue
  if u ~= nil then
    local v = unserializable[u]
    if v ~= nil then return v end
    return u                        -- a BigInt: "123n"
  end
  local v = ro.value
  if v == nil and ro.subtype == "null" then return null end
  return v
end

-- The JS exception of a failed evaluation -> message, details
function M.exception_info(ex)
  local e = ex.exception
  local message, stack
  if e then
    if e.type == "object" and e.description then
      stack = e.description
      message = e.description:match("^[^\n]*")
    elseif e.value ~= nil then
      message = tostring(e.value)
    elseif e.unserializableValue then
      message = e.unserializableValue
    elseif e.description then
      message = e.description
    end
  end
  message = message or ex.text or "exception"
  return message, { message = message, stack = stack, line = ex.lineNumber,
    column = ex.columnNumber, text = ex.text }
end

-- evaluate(expression, opts?) -> value. Awaits a promise; returns by value.
-- opts: timeout; context (an execution context id, default: the main frame).
function Page:evaluate(expression, opts)
  check_open(self)
  opt_table(opts, "evaluate")
  if type(expression) ~= "string" then
    raise("bad_argument", "evaluate: expression must be a string, got " .. type(expression))
  end
  local conn = self.conn
  local deadline = conn:deadline(opts)
  local ok, r = errors.catch(function()
    return conn:await(conn:send("Runtime.evaluate", {
      expression = expression, awaitPromise = true, returnByValue = true,
      contextId = opts and opts.context or nil,
    }, opts and opts.session or self.session, deadline), deadline, "Runtime.evaluate")
  end)
  if not ok then
    if M.is_navigation_error(r) then
      raise("navigated", "evaluate: the document went away during the call", { details = r.details })
    elseif r.code == "protocol_error" and r.details and r.details.code == -32000 then
      -- e.g. a value that cannot be returned by value (a cycle)
      raise("js_error", r.details.message, { details = r.details })
    end
    error(r, 0)
  end
  if r.exceptionDetails then
    local message, details = M.exception_info(r.exceptionDetails)
    raise("js_error", message, { details = details })
  end
  return M.remote_value(r.result)
end

-- close(opts?): closes the page's target. Idempotent.
function Page:close(opts)
  if self.closed then return end
  local conn = self.conn
  if not conn.closed then
    errors.catch(conn.call, conn, "Target.closeTarget", { targetId = self.target_id }, opts)
  end
  self.closed = true
  conn:listen(self.session, nil)
  for sid in pairs(self.child_sessions) do conn:listen(sid, nil) end
  self.browser.pages_by_session[self.session] = nil
end

-- ---- tools (see devtools_tools.discovery) -------------------------------------

local discovery   -- required lazily: it requires this module

local function disc()
  discovery = discovery or require "devtools_tools.discovery"
  return discovery
end

-- discover(opts?) -> groups, warnings: fresh discovery in every frame
function Page:discover(opts)
  check_open(self)
  opt_table(opts, "discover")
  return disc().discover(self, opts)
end

-- tool_groups(opts?) -> groups, warnings: cached while no frame changed document
function Page:tool_groups(opts)
  check_open(self)
  opt_table(opts, "tool_groups")
  return disc().tool_groups(self, opts)
end

-- tool(name) -> Tool | nil: the main frame first, then frames in document order
function Page:tool(name, opts)
  check_open(self)
  if type(name) ~= "string" then
    raise("bad_argument", "tool: name must be a string, got " .. type(name))
  end
  return disc().find(self, name, opts)
end

-- call(name, args?, opts?) -> value
function Page:call(name, args, opts)
  check_open(self)
  opt_table(opts, "call")
  return disc().call_tool(disc().lookup(self, name, opts), args, opts)
end

-- call_many({{name, args}, ...}, opts?) -> {results..., n = count}
function Page:call_many(list, opts)
  check_open(self)
  opt_table(opts, "call_many")
  return disc().call_many(self, list, opts)
end

function Page:_detached()
  self.closed = true
  self.conn:listen(self.session, nil)
end

function Page:__tostring()
  return "Page(" .. tostring(self.url) .. (self.closed and ", closed" or "") .. ")"
end

return M
