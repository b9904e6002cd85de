-- devtools_tools.page: one page target, attached through a flattened
-- session: navigation, evaluation, the bookkeeping of its frames and their
-- documents, and the page's face for tools (discovery cached per document,
-- lookup by name, calls), each public method under one deadline.
--
-- The page learns about its frames only from CDP events (frameNavigated,
-- executionContextCreated, ...), which arrive while some call waits on the
-- connection; handlers here only record state and never wait themselves.
-- It owns its fields: other modules read them and change them only through
-- its methods.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local options = require "devtools_tools.base.options"
local remote = require "devtools_tools.wire.remote"
local tools = require "devtools_tools.tools"
local kinds = require "devtools_tools.tools.kinds"
local calls = require "devtools_tools.tools.calls"
local discovery = require "devtools_tools.tools.discovery"
-- issue 14: console, network, raw CDP, WebMCP tools, screenshots
local observe = require "devtools_tools.page.observe"
local pagejs = require "devtools_tools.tools.pagejs"
local webmcp = require "devtools_tools.tools.webmcp"
local screenshot = require "devtools_tools.page.screenshot"
local marshal = require "devtools_tools.tools.marshal"
local element = require "devtools_tools.tools.element"
local json = require "devtools_tools.base.json"

local raise = errors.raise
local now = core.now
local type, tostring, pairs, ipairs, setmetatable, error, pcall, next =
      type, tostring, pairs, ipairs, setmetatable, error, pcall, next

local M = {}

local Page = {}
Page.__index = Page
Page.__name = "devtools_tools.Page"
M.Page = Page

-- ---- events ------------------------------------------------------------------

local handlers = {}
local watch_session         -- (defined with the tools watch, below; used by Target.attachedToTarget)

-- The frames inside frame `id`, at any depth (one pass over the frames).
local function descendants(self, id)
  local children = {}
  for fid, fr in pairs(self.frames) do
    if fr.parent then
      local list = children[fr.parent]
      if not list then list = {}; children[fr.parent] = list end
      list[#list + 1] = fid
    end
  end
  local out, i = { id }, 1
  while i <= #out do
    for _, c in ipairs(children[out[i]] or {}) do out[#out + 1] = c end
    i = i + 1
  end
  table.remove(out, 1)
  return out
end

-- A frame that went away: forgotten, and noted for each discovery under
-- way (its frame trees, asked before, may still hold it: _record_frames).
local function forget_frame(self, fid)
  self.frames[fid] = nil
  for gone in next, self._frame_watch do gone[fid] = true end
end

handlers["Page.frameNavigated"] = function(self, p, session)
  local f = p.frame
  self.nav_requested[f.id] = nil
  -- A new document has none of the old one's iframes (Chromium sends no
  -- frameDetached for them when the main frame navigates: 50 navigations
  -- of a page with two iframes left 103 frames). A document restored from
  -- the back/forward cache brings its iframes back as they were: kept.
  if p.type ~= "BackForwardCacheRestore" then
    for _, fid in ipairs(descendants(self, f.id)) do
      forget_frame(self, fid)
      self.nav_requested[fid] = nil
    end
  end
  local fr = self.frames[f.id] or {}
  fr.id, fr.url, fr.origin, fr.parent = f.id, f.url .. (f.urlFragment or ""), f.securityOrigin, f.parentId
  fr.loader_id = f.loaderId                 -- a new document: tools of the old one are stale
  fr.session = session or self.session
  self.frames[f.id] = fr
  if f.parentId == nil and (session == nil or session == self.session) then
    self.main_frame = f.id
    self.url = f.url
    self.nav_count = self.nav_count + 1
    self.crashed = nil                      -- a new document: a reload recovered
  end
end

-- Chromium has started a navigation that will replace the frame's
-- document: from then on it holds what is sent to the frame until the new
-- document commits, and answers "Cannot find context": such a call did not
-- run (see calls.lua). Only Page.frameStartedNavigating says so: after
-- frameRequestedNavigation alone a call still runs in the old document
-- (and a navigation cancelled in beforeunload never starts). Until the new
-- document, or the end of loading without one.
handlers["Page.frameStartedNavigating"] = function(self, p)
  local why = p.navigationType
  if type(p.frameId) == "string" and why ~= "sameDocument" and why ~= "historySameDocument" then
    self.nav_requested[p.frameId] = true
  end
end
handlers["Page.frameStoppedLoading"] = function(self, p) self.nav_requested[p.frameId or false] = nil end

handlers["Page.navigatedWithinDocument"] = function(self, p)
  local fr = self.frames[p.frameId]
  if fr then fr.url = p.url end
  if p.frameId == self.main_frame then self.url = p.url end
end

-- remember(set, order, key, limit): key put in set, which keeps the last
-- `limit` keys put in it (order: theirs, oldest first)
local function remember(set, order, key, limit)
  if set[key] then return end
  set[key] = true
  order[#order + 1] = key
  if #order > limit then set[table.remove(order, 1)] = nil end
end

-- The main frame's last loads, by loader id, for navigate and reload to
-- wait on (theirs is among the last few whatever the page does meanwhile;
-- every load was kept: 605 after an iframe reloaded 200 times).
local KEEP_LOADS = 16

handlers["Page.lifecycleEvent"] = function(self, p, session)
  if p.name == "load" and p.frameId == self.main_frame and (session == nil or session == self.session) then
    remember(self.loaded, self.load_order, p.loaderId, KEEP_LOADS)
  end
end

-- A frame its parent removed (not one that moved to another process:
-- "swap"): forgotten with the frames inside it, and so are the sessions of
-- the out-of-process ones among them (drop_removed, below).
local drop_removed           -- (defined with the sessions, below)

handlers["Page.frameDetached"] = function(self, p)
  self.nav_requested[p.frameId or false] = nil
  -- (one not known yet too: a tree already come in may hold it)
  if p.reason ~= "swap" and type(p.frameId) == "string" then
    local gone = descendants(self, p.frameId)
    gone[#gone + 1] = p.frameId
    for _, fid in ipairs(gone) do
      forget_frame(self, fid)
      self.contexts[fid] = nil
      self.nav_requested[fid] = nil
    end
    drop_removed(self, gone)
  end
end

handlers["Runtime.executionContextCreated"] = function(self, p, session)
  local c = p.context
  local aux = c.auxData
  local child = session and self.child_sessions[session]
  if child then child.crashed = nil end      -- (a crashed iframe's new document)
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

-- A renderer that crashed answers nothing: what waits on its session fails
-- at once (the browser session and other frames' sessions go on).
handlers["Inspector.targetCrashed"] = function(self, _, session)
  local sid = session or self.session
  if sid == self.session then
    self.crashed = true
    self.conn:fail_pending(sid, errors.new("disconnected",
      "the page crashed (its renderer process died); page:reload() recovers"))
  else
    self.conn:fail_pending(sid, errors.new("disconnected",
      "the renderer of an iframe crashed"))
    -- it answers nothing more: discovery leaves it out until it has a
    -- document again
    local child = self.child_sessions[sid]
    if child then child.crashed = true end
    for fid, c in pairs(self.contexts) do
      if c.session == sid then self.contexts[fid] = nil end
    end
  end
end

-- Out-of-process iframes arrive as targets of their own (auto-attach with
-- flatten): enable what discovery needs on their sessions, and let them run.
-- Listeners must not wait, so these commands are fire-and-forget; discovery
-- later awaits a Runtime.enable on each new session as a barrier. Each new
-- target waits for runIfWaitingForDebugger, sent after the enables on the
-- same session: a dedicated worker's first request was otherwise missed
-- now and then (the worker ran before Network.enable; under load, 2 of 8
-- tries of the observe spec waited out their timeout).
local AUTO_ATTACH = { autoAttach = true, waitForDebuggerOnStart = true, flatten = true }

handlers["Target.attachedToTarget"] = function(self, p, session)
  local info = p.targetInfo
  local conn, sid = self.conn, p.sessionId
  if info.type == "worker" and observe.enabled(self) then
    -- A dedicated worker: no tools live there, but its requests are the
    -- page's (the answer to its own script's request comes on its
    -- session), and so are its own workers'. Kept: the session it came
    -- through, which takes it along when it goes.
    self.worker_sessions[sid] = session or self.session
    conn:listen(sid, self._listener)
    conn:send_nowait("Network.enable", observe.network_params(self), sid)
    conn:send_nowait("Target.setAutoAttach", AUTO_ATTACH, sid)
    conn:send_nowait("Runtime.runIfWaitingForDebugger", nil, sid)
    return
  end
  if info.type ~= "iframe" or self._removed[info.targetId] or self._removed[info.parentFrameId or false] then
    -- Anything else, or an iframe its parent already removed (the browser
    -- may tell of the target after the renderer told of the removal):
    -- nothing of ours lives there; let it run.
    conn:send_nowait("Runtime.runIfWaitingForDebugger", nil, sid)
    conn:send_nowait("Target.detachFromTarget", { sessionId = sid }, session)
    return
  end
  self.child_sessions[sid] = { target_id = info.targetId, url = info.url,
    parent_frame = info.parentFrameId, order = self._attach_seq, via = session or self.session }
  self._attach_seq = self._attach_seq + 1
  conn:listen(sid, self._listener)
  conn:send_nowait("Page.enable", nil, sid)
  conn:send_nowait("Page.setLifecycleEventsEnabled", { enabled = true }, sid)
  conn:send_nowait("Runtime.enable", nil, sid)
  conn:send_nowait("Target.setAutoAttach", AUTO_ATTACH, sid)
  if self._watching then watch_session(self, sid) end      -- (before its scripts run)
  conn:send_nowait("Runtime.runIfWaitingForDebugger", nil, sid)
end

-- A worker's or an iframe's session ended: what was in flight on it will
-- not finish, and the workers attached through it went with it (Chromium
-- tells their end on a session nobody listens to any more).
local function session_gone(self, sid)
  self.conn:listen(sid, nil)
  observe.session_gone(self, sid)
  for wsid, parent in pairs(self.worker_sessions) do
    if parent == sid then
      self.worker_sessions[wsid] = nil
      session_gone(self, wsid)
    end
  end
end

-- What waits on a session that went away (its iframe removed, or moved to
-- another process) gets no reply: it fails now, as a request to a document
-- that went away does (a call: navigated; discovery skips the frame). What
-- is sent to it later Chromium answers at once ("Session with given id not
-- found"), so the session is not kept in the connection's list of ended ones.
local function detached_error()
  return errors.new("protocol_error", "Inspected target navigated or closed (its session was detached)",
    { details = { message = "Inspected target navigated or closed" } })
end

-- drop_child(self, sid, told): an iframe's session that ended (told: the
-- browser said so) or that we left (its frame removed). What was in flight
-- on it fails; its frames and contexts are forgotten, and so are the
-- iframes attached through it, whose end the browser tells on a session
-- nobody listens to any more.
local function drop_child(self, sid, told)
  local child = self.child_sessions[sid]
  if not child then return end
  self.child_sessions[sid] = nil
  session_gone(self, sid)
  self.conn:fail_pending(sid, detached_error())
  for fid, fr in pairs(self.frames) do
    if fr.session == sid then forget_frame(self, fid) end
  end
  -- its own frame (an out-of-process iframe's frame id is its target id)
  -- even when only the parent's tree told of it: removed before its
  -- session said anything, it was kept for good
  if self.frames[child.target_id] then forget_frame(self, child.target_id) end
  for fid, c in pairs(self.contexts) do
    if c.session == sid then self.contexts[fid] = nil end
  end
  -- (WebMCP forgets the session's tools as on the browser's word)
  if not told then webmcp.dispatch(self, "Target.detachedFromTarget", { sessionId = sid }) end
  for csid, c in pairs(self.child_sessions) do
    if c.via == sid then drop_child(self, csid, false) end
  end
end

handlers["Target.detachedFromTarget"] = function(self, p)
  local sid = p.sessionId
  if self.worker_sessions[sid] then
    self.worker_sessions[sid] = nil
    session_gone(self, sid)
    self.conn:fail_pending(sid, detached_error())
  end
  drop_child(self, sid, true)
end

-- How many removed frame ids are kept, for a target the browser tells of
-- after the removal.
local KEEP_REMOVED = 64

-- The out-of-process iframes among frames their parent removed: their
-- sessions are left at once. The browser may keep such a target, and its
-- session, for good: under load (four churning pages on two busy cores)
-- 7 to 19 removed iframes per page were still attached 35 s later, each
-- answering discovery with its old frame, which page.frames kept.
drop_removed = function(self, ids)
  local set = self._removed
  for _, fid in ipairs(ids) do remember(set, self._removed_order, fid, KEEP_REMOVED) end
  for sid, child in pairs(self.child_sessions) do
    if set[child.target_id] or set[child.parent_frame or false] then
      self.conn:send_nowait("Target.detachFromTarget", { sessionId = sid }, child.via)
      drop_child(self, sid, false)
    end
  end
end

-- Events that change which documents (and so which tools) the page has:
-- each bumps page.epoch, so a cached discovery knows it is out of date.
-- A navigation within the document (history.pushState, a hash change) is
-- one too: a single-page app's router swaps its views' tools on it.
local epoch_events = {
  ["Page.frameNavigated"] = true, ["Page.frameDetached"] = true, ["Page.navigatedWithinDocument"] = true,
  ["Runtime.executionContextCreated"] = true, ["Runtime.executionContextDestroyed"] = true,
  ["Runtime.executionContextsCleared"] = true, ["Target.attachedToTarget"] = true,
  ["Target.detachedFromTarget"] = true,
}

-- What a change of the page's tools is, for page:on("tools_changed").
local TOOLS_CHANGED = {
  ["Page.frameNavigated"] = "navigated", ["Page.navigatedWithinDocument"] = "navigated",
  ["WebMCP.toolsAdded"] = "webmcp", ["WebMCP.toolsRemoved"] = "webmcp",
  ["Runtime.bindingCalled"] = "listener",
}

local function on_event(self, method, params, session)
  local h = handlers[method]
  local epoch = self.epoch
  if h then
    h(self, params, session)
    if epoch_events[method] then self.epoch = self.epoch + 1 end
  end
  -- issue 14: the page's other records, and WebMCP tools (which change
  -- what a discovery finds, like a new document does)
  observe.dispatch(self, method, params, session)
  webmcp.dispatch(self, method, params, session)
  if method == "WebMCP.toolsAdded" or method == "WebMCP.toolsRemoved" then self.epoch = self.epoch + 1 end
  if self.epoch ~= epoch and self._watching then
    observe.tools_changed(self, TOOLS_CHANGED[method] or "frames")
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

function M.attach(browser, target_id, deadline, opts)
  local conn = browser.conn
  local r = conn:await(conn:send("Target.attachToTarget", { targetId = target_id, flatten = true },
    nil, deadline), deadline, "Target.attachToTarget")
  local self = setmetatable({
    browser = browser, conn = conn, target_id = target_id, session = r.sessionId,
    url = "about:blank", frames = {}, contexts = {}, loaded = {}, load_order = {}, nav_count = 0, nav_requested = {},
    child_sessions = {}, worker_sessions = {}, _attach_seq = 1, epoch = 0, _probes = {}, _probe_sent = {},
    _removed = {}, _removed_order = {},
    _frame_watch = setmetatable({}, { __mode = "k" }),
  }, Page)
  self._listener = function(method, params, session)
    on_event(self, method, params, session)
  end
  conn:listen(self.session, self._listener)
  -- issue 14: console, network and WebMCP records, enabled with the rest
  local extra = observe.attach_send(self, deadline, (opts and opts.history) or browser.history)
  local res = pipelined(conn, self.session, {
    { "Page.enable" },
    { "Page.setLifecycleEventsEnabled", { enabled = true } },
    { "Runtime.enable" },
    { "Target.setAutoAttach", AUTO_ATTACH },
    { "Page.getFrameTree" },
  }, deadline)
  local tree = res[5].frameTree.frame
  observe.attach_finish(self, extra, deadline)           -- issue 14
  self.main_frame = tree.id
  self.url = tree.url
  if not self.frames[tree.id] then
    self.frames[tree.id] = { id = tree.id, url = tree.url, origin = tree.securityOrigin,
      loader_id = tree.loaderId, session = self.session }
  end
  return self
end

-- ---- state other modules ask about ------------------------------------------

local function check_alive(self)
  if self.closed then raise("disconnected", "the page is closed") end
  if self.conn.closed then raise("disconnected", "the browser connection is closed: "
    .. tostring(self.conn.closed)) end
  if self.crashed then
    raise("disconnected", "the page crashed (its renderer process died); page:reload() recovers")
  end
end

function Page:_check_open(deadline)
  check_alive(self)
  self:_unstick(deadline)
end

-- _is_current(frame_id, loader_id, context_id?) -> true while that frame
-- still shows that document (and, if given, that execution context)
function Page:_is_current(frame_id, loader_id, context_id)
  if self.closed then return false end
  local fr = self.frames[frame_id]
  if not fr or fr.loader_id ~= loader_id then return false end
  if context_id ~= nil then
    local ctx = self.contexts[frame_id]
    if not ctx or ctx.id ~= context_id then return false end
  end
  return true
end

-- _record_frames(frames): what a discovery read from the frame trees
-- _watch_frames() -> gone: a set that collects the ids of the frames that
-- go away from now on, for _record_frames. Held weakly: dropped with the
-- discovery that asked for it, however that ends.
function Page:_watch_frames()
  local gone = {}
  self._frame_watch[gone] = true
  return gone
end

-- _record_frames(frames, gone?): the frames a discovery's trees showed;
-- those in gone went away after the trees were asked for (50 iframes added
-- and removed a second during discoveries left 16 frames, growing)
function Page:_record_frames(frames, gone)
  for _, f in ipairs(frames) do
    if not (gone and gone[f.id]) then
      local fr = self.frames[f.id] or {}
      self.frames[f.id] = fr
      fr.id, fr.url, fr.origin, fr.parent, fr.session = f.id, f.url, f.origin, f.parent, f.session
      fr.loader_id = f.loader_id
    end
  end
  if gone then self._frame_watch[gone] = nil end
end

-- _session_ready(sid): a child session's Runtime.enable was answered, so
-- its execution contexts are known
function Page:_session_ready(sid)
  local s = self.child_sessions[sid]
  if s then s.ready = true end
end

-- _timed_out(session): a request on that session ran out of time. Was it
-- page script that kept it (a busy loop in a tool or a listener)? A probe
-- tells: it is answered only once the page's thread is free. Never waits.
-- A probe still unanswered stays: a newer one would have behind it the
-- requests sent since, which _unstick waits for (two tasks taking turns at
-- a stuck page would then put it off for ever). Its reply is kept until
-- asked for (conn:keep), not forgotten by the connection's sweep.
function Page:_timed_out(session)
  local conn = self.conn
  if conn.closed then return end
  session = session or self.session
  local old = self._probes[session]
  if old and conn:waiting(old) then return end
  local ok, id = errors.catch(conn.send, conn, "Runtime.evaluate", { expression = "0" }, session, now())
  if ok then
    conn:keep(id)
    self._probes[session] = id
    self._probe_sent[session] = now()
  end
end

-- _unstick(): before the next call, a session whose probe has no answer is
-- still running the script that timed out: stop it (Runtime.terminateExecution)
-- so the page answers again. An idle page is left alone: terminating there
-- would cut short whatever script of the page runs next (another task's
-- tool: "Internal error"). So the probe's answer, if it is on its way, is
-- given until the probe is PROBE_AGE old, and at least PROBE_GRACE from
-- now: a busy machine is slow to answer even an idle page (under three make
-- tests at once a probe took more than the 50 ms once given, and another
-- task's tool was stopped). Every call that comes meanwhile waits for the
-- same answer, and the first wait to end without one stops the page: no
-- call goes out to the page before that stop, which Chromium would carry
-- out on whatever script runs when it arrives (a starved renderer still
-- running the probe and the calls behind it: another task's call was
-- stopped, "Internal error", beside two other make tests). And while a
-- request sent before the probe still has a caller waiting for it (another
-- task's tool may be what keeps the page busy), the page is left alone and
-- the probe asked again at the next call. Those requests have deadlines:
-- once they are answered or given up, the page is stopped.
local PROBE_GRACE, PROBE_AGE = 0.05, 1

function Page:_unstick(deadline)
  if next(self._probes) == nil then return end
  local conn = self.conn
  local list = {}                -- (the waits below may yield: another task adds probes)
  for sid, id in pairs(self._probes) do list[#list + 1] = { sid, id } end
  for _, e in ipairs(list) do
    local sid, id = e[1], e[2]
    if self._probes[sid] ~= id then
      -- (another task's call dealt with it meanwhile)
    elseif conn.closed or not conn:waiting(id) then
      self._probes[sid], self._probe_sent[sid] = nil, nil   -- answered (or forgotten): nothing runs
      errors.catch(conn.await, conn, id, now())
    elseif not conn:waiting_before(sid, id) then
      local wait = math.max(now() + PROBE_GRACE, (self._probe_sent[sid] or 0) + PROBE_AGE)
      if deadline and deadline < wait then wait = deadline end
      -- (a cancelled or lost wait decides nothing: its error goes on up)
      conn:wait_for(function() return self._probes[sid] ~= id or not conn:waiting(id) end, wait)
      if self._probes[sid] == id then        -- (not decided by another task meanwhile)
        self._probes[sid], self._probe_sent[sid] = nil, nil
        if conn:waiting(id) then
          conn:forget(id)
          conn:send_nowait("Runtime.terminateExecution", nil, sid)
        else
          errors.catch(conn.await, conn, id, now())
        end
      end
    end
  end
end

-- ---- navigation ----------------------------------------------------------------

local function wait_load(self, loader_id, deadline, what)
  local loaded = self.loaded
  local ok = self.conn:wait_for(function()
    return loaded[loader_id] or self.crashed or self.closed
  end, deadline)
  if self.crashed then raise("disconnected", what .. ": the page crashed") end
  if self.closed then raise("disconnected", what .. ": the page was closed") end
  if not ok then raise("timeout", what .. ": timed out waiting for the load event") end
end

-- Chromium's errors for a host name that resolves to no address.
local DNS_FAILURES = { ["net::ERR_NAME_NOT_RESOLVED"] = true, ["net::ERR_NAME_RESOLUTION_FAILED"] = true }

-- navigate(url, opts?) -> self, once the new document fired `load`. A
-- host name that does not resolve is connect_failed; another error of the
-- browser's (a refused connection, a bad URL) protocol_error.
function Page:navigate(url, opts)
  opts = options.check(opts, options.TIMEOUT, "navigate")
  self:_check_open()
  if type(url) ~= "string" then
    raise("bad_argument", "navigate: url must be a string, got " .. type(url))
  end
  local conn = self.conn
  local deadline = conn:deadline(opts)
  local r = conn:await(conn:send("Page.navigate", { url = url }, self.session, deadline),
    deadline, "Page.navigate")
  if r.errorText and r.errorText ~= "" then
    local details = { errorText = r.errorText, url = url }
    if DNS_FAILURES[r.errorText] then
      -- the host has no address: the name is wrong (or no DNS answers),
      -- which no browser fault explains
      local host = (url:match("^%a[%w+.-]*://([^/?#]+)") or url):gsub("^.*@", ""):gsub(":%d*$", "")
      raise("connect_failed", "navigate: " .. url .. ": the host name " .. host
        .. " was not found (DNS: " .. r.errorText .. ")", { details = details })
    end
    raise("protocol_error", "navigate: " .. url .. ": " .. r.errorText, { details = details })
  end
  if r.loaderId then     -- none for a same-document (fragment) navigation
    wait_load(self, r.loaderId, deadline, "navigate to " .. url)
  end
  return self
end

local reload_opts = { timeout = true, ignore_cache = "boolean" }

-- reload(opts?) -> self, once the new document fired `load`. Also recovers
-- a page whose renderer crashed.
function Page:reload(opts)
  opts = options.check(opts, reload_opts, "reload")
  if self.closed then raise("disconnected", "the page is closed") end
  local conn = self.conn
  if conn.closed then raise("disconnected", "the browser connection is closed: " .. tostring(conn.closed)) end
  local deadline = conn:deadline(opts)
  local before = self.nav_count
  self.crashed = nil
  self:_unstick()
  conn:await(conn:send("Page.reload", { ignoreCache = opts.ignore_cache or nil },
    self.session, deadline), deadline, "Page.reload")
  local ok = conn:wait_for(function() return self.nav_count > before or self.crashed end, deadline)
  if self.crashed then raise("disconnected", "reload: the page crashed") end
  if not ok then raise("timeout", "reload: timed out waiting for the new document") end
  local fr = self.frames[self.main_frame]
  wait_load(self, fr.loader_id, deadline, "reload")
  return self
end

-- ---- evaluate ------------------------------------------------------------------

local evaluate_opts = { timeout = true, context = "number", session = "string", elements = "boolean",
  repl = "boolean" }

-- The frame whose execution context is id (nil: the main frame's).
local function frame_of_context(self, id)
  if id == nil then return self.frames[self.main_frame] end
  for fid, c in pairs(self.contexts) do
    if c.id == id then return self.frames[fid] end
  end
end

-- with_elements(self, r, session, frame, deadline) -> the value of the
-- object r.result, its DOM elements as Element objects (js/evaluate.js
-- writes it as JSON with markers; the elements' node ids are asked for)
local function with_elements(self, r, session, frame, deadline)
  local conn = self.conn
  local group = r.group
  local key = "\0dt-element:" .. group
  local a = conn:await(conn:send("Runtime.callFunctionOn", { functionDeclaration = pagejs.EVALUATE,
    objectId = r.result.objectId, arguments = { { value = key }, { value = marshal.MAX_DEPTH } },
    returnByValue = false, objectGroup = group }, session, deadline), deadline, "Runtime.callFunctionOn")
  if a.exceptionDetails then
    local message, details = remote.exception_info(a.exceptionDetails)
    raise("js_error", message, { details = details })
  end
  local props = conn:await(conn:send("Runtime.getProperties", { objectId = a.result.objectId,
    ownProperties = true }, session, deadline), deadline, "Runtime.getProperties")
  local text, oids, order = nil, {}, {}
  for _, p in ipairs(type(props.result) == "table" and props.result or {}) do
    local i = tonumber(p.name)
    if i == 0 and type(p.value) == "table" then text = p.value.value
    elseif i and i > 0 and i % 1 == 0 and type(p.value) == "table" and type(p.value.objectId) == "string"
        and oids[i - 1] == nil then
      oids[i - 1] = p.value.objectId
      order[#order + 1] = i - 1
    end
  end
  if type(text) ~= "string" then raise("protocol_error", "evaluate: unexpected reply from the page") end
  local backend = element.backend_ids(conn, session, oids, order, deadline)
  local ok, v = pcall(json.decode, text)
  if not ok then raise("protocol_error", "evaluate: the page sent malformed JSON") end
  local fid, loader = frame and frame.id, frame and frame.loader_id
  return marshal.replace_elements(v, key, function(idx, description, etext)
    if backend[idx] == nil then return nil end
    return element.new({ backend_node_id = backend[idx],
      description = type(description) == "string" and description or "element",
      text = type(etext) == "string" and etext or "",
      frame = { id = fid, url = frame and frame.url, origin = frame and frame.origin },
      _page = self, _frame_id = fid, _loader = loader })
  end)
end

-- evaluate(expression, opts?) -> value. Awaits a promise; returns by value.
-- opts: timeout; context (an execution context id, default: the main
-- frame); session (the CDP session to send it on, default: the page's);
-- elements (true: the DOM elements in the value come back as Element
-- objects, described as a tool's result gives them, where returning by
-- value gives {}; the value is then written as JSON.stringify writes it);
-- repl (true: read as the DevTools console reads it, CDP's replMode: `await`
-- at the top level, `let` declared again; a promise the code ends with is
-- then not awaited).
function Page:evaluate(expression, opts)
  opts = options.check(opts, evaluate_opts, "evaluate")
  self:_check_open()
  if type(expression) ~= "string" then
    raise("bad_argument", "evaluate: expression must be a string, got " .. type(expression))
  end
  local conn = self.conn
  local deadline = conn:deadline(opts)
  local session = opts.session or self.session
  local group = opts.elements and remote.object_group() or nil
  local frame = opts.elements and frame_of_context(self, opts.context) or nil
  local ok, r = errors.catch(function()
    local reply = conn:await(conn:send("Runtime.evaluate", {
      expression = expression, awaitPromise = true, returnByValue = not group,
      contextId = opts.context, objectGroup = group, replMode = opts.repl or nil,
    }, session, deadline), deadline, "Runtime.evaluate")
    if group and not reply.exceptionDetails and type(reply.result) == "table" and reply.result.objectId then
      reply.group = group
      return { elements = with_elements(self, reply, session, frame, deadline) }
    end
    return reply
  end)
  if group then
    errors.catch(conn.send_nowait, conn, "Runtime.releaseObjectGroup", { objectGroup = group }, session)
  end
  if not ok then
    if remote.is_navigation_error(r) then
      if opts.context then
        raise("navigated", "evaluate: no execution context " .. tostring(opts.context)
          .. " (its document went away, or the id is not one of this page's)", { details = r.details })
      end
      raise("navigated", "evaluate: the document went away during the call", { details = r.details })
    elseif r.code == "protocol_error" and r.details and r.details.code == -32000 then
      -- e.g. a value that cannot be returned by value (a cycle)
      raise("js_error", r.details.message, { details = r.details })
    elseif (r.code == "timeout" and not (r.details and r.details.decoding)) or r.code == "cancelled" then
      self:_timed_out(session)         -- (a reply cut while decoding: the page did answer)
    end
    error(r, 0)
  end
  if r.exceptionDetails then
    remote.release_thrown(conn, session, r)
    local message, details = remote.exception_info(r.exceptionDetails)
    raise("js_error", message, { details = details })
  end
  if r.elements ~= nil then return r.elements end
  return remote.remote_value(r.result)
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
  self:_detached()
  -- Closing is best effort (a browser that does not answer still loses the
  -- page here), but a cancelled task must learn it was cancelled.
  if not ok and err.code == "cancelled" then error(err, 0) end
end

-- The page's tools changed in a way no event told of (a call answered
-- "changed": js/runtime.js): whatever was discovered is out of date.
function Page:_tools_changed()
  self.epoch = self.epoch + 1
  if self._watching then observe.tools_changed(self, "listener") end
end

-- Watching the page's tools (page:on("tools_changed")): a binding, and a
-- script at the start of every document (and now in those already there:
-- runImmediately) that calls it when a devtoolstooldiscovery listener is
-- added to or removed from window (js/watch.js), on the page's session
-- and each iframe's. Sent without waiting: the first listener change may
-- come before the script is in; the events of navigation and frames are
-- there at once. A page can call the binding itself: it only says the
-- tools may have changed.
local WATCH_BINDING = "__devtools_tools_changed"

handlers["Runtime.bindingCalled"] = function(self, p)
  if p.name == WATCH_BINDING then self.epoch = self.epoch + 1 end
end

function watch_session(self, sid)
  local conn = self.conn
  conn:send_nowait("Runtime.addBinding", { name = WATCH_BINDING }, sid)
  conn:send_nowait("Page.addScriptToEvaluateOnNewDocument", { source = pagejs.watch_source(WATCH_BINDING),
    runImmediately = true }, sid)
end

function Page:_watch_tools()
  if self._watching then return end
  self._watching = true
  watch_session(self, self.session)
  for sid in pairs(self.child_sessions) do watch_session(self, sid) end
end

function Page:_detached()
  if self.closed then return end
  self.closed = true
  local conn = self.conn
  conn:listen(self.session, nil)
  for sid in pairs(self.child_sessions) do conn:listen(sid, nil) end
  for sid in pairs(self.worker_sessions) do conn:listen(sid, nil) end
  self.browser:_forget(self)
  -- Requests other tasks still wait on will get no reply: they fail now,
  -- and so does what they send later, while they hold the page (which
  -- keeps the error: the connection forgets the sessions with it).
  local gone = errors.new("disconnected", "the page was closed (or detached) while the call waited")
  self._gone = gone
  conn:end_session(self.session, gone)
  for sid in pairs(self.child_sessions) do conn:end_session(sid, gone) end
  -- The probes of its stuck scripts: kept for its next call (conn:keep),
  -- which will never come (10 pages closed after a busy tool timed out
  -- left 10 requests in the connection for good).
  for _, id in pairs(self._probes) do conn:forget(id) end
  self._probes, self._probe_sent = {}, {}
  webmcp.detached(self)
end

-- ---- tools ------------------------------------------------------------------------

-- Discovers now and caches the result for the documents it is about.
-- The cache remembers the deadline of the call that made it: the same public
-- call never discovers twice.
local function discover_now(self, deadline)
  local groups, warnings, epoch, navigated, skipped = discovery.discover(self, deadline)
  webmcp.add_groups(self, groups, deadline)          -- issue 14: WebMCP groups after the others
  -- groups.warnings and groups.skipped (README): on a metatable, so the
  -- list holds only groups for ipairs, pairs and comparisons
  setmetatable(groups, { __index = { warnings = warnings, skipped = skipped } })
  self._tool_cache = { epoch = epoch, groups = groups, warnings = warnings, made_for = deadline,
    navigated = navigated, skipped = skipped }
  return groups, warnings
end

-- made_in(cache, deadline) -> true when the public call of that deadline
-- made the cache (a deadline tells calls apart; an infinite one does not)
local function made_in(c, deadline)
  return c.made_for == deadline and deadline ~= math.huge
end

-- groups(deadline) -> groups, warnings, fresh: the cached discovery while
-- no frame changed document, else a new one; fresh: made during this call
local function groups(self, deadline)
  local c = self._tool_cache
  if c then
    self.conn:poll()
    if c.epoch == self.epoch then return c.groups, c.warnings, made_in(c, deadline) end
  end
  local g, w = discover_now(self, deadline)
  return g, w, true
end

-- current_groups(deadline) -> groups: the cached discovery, or a new one
-- when a document (or the page's tools) changed since (calls.lua asks it
-- before it runs a Tool kept from an earlier discovery)
function Page:_current_groups(deadline)
  local c = self._tool_cache
  if c and c.epoch == self.epoch then return c.groups end   -- (the caller read the events)
  return (groups(self, deadline))
end

-- find(name, deadline) -> Tool | nil, groups. A miss in a cached discovery
-- looks once more (a page may register late); a discovery made during this
-- same call is not repeated, unless a document changed while it ran (what
-- it found is about the old one, or a new one whose scripts had not run):
-- then again, when the new one is known, up to MOVED_LOOKS times.
local MOVED_LOOKS = 3

local function find(self, name, deadline)
  local gs, _, fresh = groups(self, deadline)
  local t = discovery.find_in(gs, name)
  local c = self._tool_cache
  local looks = 0
  if t == nil then self.conn:poll() end      -- the events of a change that is under way
  while t == nil and looks < MOVED_LOOKS
      and ((looks == 0 and not fresh) or c.epoch ~= self.epoch or c.navigated) do
    looks = looks + 1
    if c.navigated and c.epoch == self.epoch then
      -- (a document went away under it, and its successor is not here yet)
      self.conn:wait_for(function() return self.epoch ~= c.epoch or self.closed or self.crashed end,
        deadline)
      self:_check_open()
    end
    gs = discover_now(self, deadline)
    t = discovery.find_in(gs, name)
    c = self._tool_cache
    if t == nil then self.conn:poll() end
  end
  return t, gs
end

local function check_name(name, fname)
  if type(name) ~= "string" then
    raise("bad_argument", fname .. ": tool name must be a string, got " .. type(name))
  end
end

local function lookup(self, name, deadline, fname)
  check_name(name, fname)
  local t, gs = find(self, name, deadline)
  if not t then error(discovery.not_found(name, gs, gs.skipped), 0) end
  return t
end

-- discover(opts?) -> groups, warnings: fresh discovery in every frame
function Page:discover(opts)
  opts = options.check(opts, options.TIMEOUT, "discover")
  local deadline = self.conn:deadline(opts)
  self:_check_open(deadline)
  return discover_now(self, deadline)
end

-- tool_groups(opts?) -> groups, warnings: cached while no frame changed document
function Page:tool_groups(opts)
  opts = options.check(opts, options.TIMEOUT, "tool_groups")
  local deadline = self.conn:deadline(opts)
  self:_check_open(deadline)
  local g, w = groups(self, deadline)
  return g, w
end

-- tool(name, opts?) -> Tool | nil: the main frame first, then frames in document order
function Page:tool(name, opts)
  opts = options.check(opts, options.TIMEOUT, "tool")
  self:_check_open()
  check_name(name, "tool")
  return (find(self, name, self.conn:deadline(opts)))
end

-- wait_for_tool(name, opts?) -> Tool, once the page offers it: discovers
-- again when a document changes and, with growing pauses, in between
-- (a page may register its listener at any time). Raises timeout.
function Page:wait_for_tool(name, opts)
  opts = options.check(opts, options.TIMEOUT, "wait_for_tool")
  self:_check_open()
  check_name(name, "wait_for_tool")
  local conn = self.conn
  local deadline = conn:deadline(opts)
  local gs = groups(self, deadline)
  local pause = 0.05
  while true do
    local t = discovery.find_in(gs, name)
    if t then return t end
    local epoch = self.epoch
    local until_ = now() + pause
    if until_ > deadline then until_ = deadline end
    conn:wait_for(function() return self.epoch ~= epoch or self.closed or self.crashed end, until_)
    self:_check_open()
    if now() >= deadline then
      local e = discovery.not_found(name, gs, gs.skipped)
      raise("timeout", "wait_for_tool: " .. e.message .. " before the timeout",
        { tool = name, details = e.details })
    end
    pause = pause * 2
    if pause > 0.5 then pause = 0.5 end
    local ok, fresh = errors.catch(discover_now, self, deadline)
    if ok then
      gs = fresh
    elseif fresh.code ~= "timeout" then
      error(fresh, 0)
    end
    -- (a discovery the deadline cut short: the last one answers below)
  end
end

-- wait_until(pred, opts?) -> true once pred() holds, false when opts.timeout
-- passed first. pred is asked at once and after each message the page's
-- connection reads, so the page's events (its page:on listeners) are
-- delivered meanwhile: for a holder that only listens between calls (an
-- MCP server), whose listeners are told nothing while nobody waits on the
-- connection. In a task it suspends the task. Raises disconnected when
-- the page or the browser goes away first, cancelled when the task is;
-- an error pred raises is raised here, after the wait.
function Page:wait_until(pred, opts)
  if type(pred) ~= "function" then
    raise("bad_argument", "wait_until: expected a function, got " .. type(pred))
  end
  opts = options.check(opts, options.TIMEOUT, "wait_until")
  local conn = self.conn
  local deadline = conn:deadline(opts)
  check_alive(self)              -- (a listener stops no script a call left running)
  local failed, why = false, nil
  local function holds()
    if failed or self.closed or self.crashed then return true end
    local ok, r = pcall(pred)
    if not ok then
      failed, why = true, r
      return true
    end
    return r and true or false
  end
  local ok = conn:wait_for(holds, deadline)
  if failed then error(why, 0) end
  check_alive(self)
  return ok
end

-- call(name, args?, opts?) -> value. A tool of the cache that did not run,
-- its document gone (the events saying so were not read yet: stale) or the
-- page's list changed without a new document (another client's discovery,
-- a page script: tool_not_found), is looked for again, once, unless this
-- call already discovered.
function Page:call(name, args, opts)
  if opts ~= nil then opts = options.check(opts, options.TIMEOUT, "call") end
  local deadline = self.conn:deadline(opts)
  self:_check_open(deadline)
  local t = lookup(self, name, deadline, "call")
  local c = self._tool_cache
  local ok, r = errors.catch(kinds.call, t, args, deadline)
  if ok then return r end
  -- The page changed its tools after the discovery this call made, or
  -- used (a listener swapped, a route changed: nothing ran): once more.
  local changed = r.code == "stale" and type(r.details) == "table" and r.details.changed == true
  if not changed and ((c and made_in(c, deadline)) or (r.code ~= "stale" and r.code ~= "tool_not_found")) then
    error(r, 0)
  end
  -- stale: the new document's tools are discovered; not found: the cache
  -- is no good
  if r.code == "tool_not_found" then self._tool_cache = nil end
  return kinds.call(lookup(self, name, deadline, "call"), args, deadline)
end

local call_many_opts = { timeout = true, errors = true }

-- The Tool an entry {name or Tool, args} of call_many names.
local function entry_tool(self, entry, i, deadline)
  if type(entry) ~= "table" then raise("bad_argument", "call_many: entry " .. i .. " must be {name, args}") end
  local t = entry[1]
  if tools.is_tool(t) then
    if t._page ~= self then raise("bad_argument", "call_many: entry " .. i .. " is a tool of another page") end
    return t
  end
  return lookup(self, t, deadline, "call_many entry " .. i)
end

-- call_many({{name or Tool, args}, ...}, opts?) -> {results..., n = count}
-- opts.errors = "return": failed entries hold their dt.Error
function Page:call_many(list, opts)
  opts = options.check(opts, call_many_opts, "call_many")
  if opts.errors ~= nil and opts.errors ~= "return" and opts.errors ~= "raise" then
    raise("bad_argument", "call_many: errors must be \"return\" or \"raise\"")
  end
  self:_check_open()
  if type(list) ~= "table" then raise("bad_argument", "call_many: expected a list of {name, args}") end
  local keep = opts.errors == "return"
  local deadline = self.conn:deadline(opts)
  local entries = {}
  for i = 1, #list do
    local ok, t = pcall(entry_tool, self, list[i], i, deadline)
    if ok then entries[i] = { tool = t, args = list[i][2] }
    elseif keep and errors.is_error(t) then entries[i] = { err = t }
    else error(t, 0) end
  end
  return kinds.call_many(entries, deadline, keep)
end

-- issue 14: console_messages, network_requests, response_body, on, on_cdp,
-- observe, mark, cdp (devtools_tools.page.observe); screenshot
-- What the page saw (page/observe.lua) and its pictures (page/screenshot.lua).
local P = observe.methods
function Page:on(event, fn) return P.on(self, event, fn) end
function Page:on_cdp(method, fn) return P.on_cdp(self, method, fn) end
function Page:cdp(method, params, opts) return P.cdp(self, method, params, opts) end
function Page:mark() return P.mark(self) end
function Page:console_messages(opts) return P.console_messages(self, opts) end
function Page:network_requests(opts) return P.network_requests(self, opts) end
function Page:response_body(rec, opts) return P.response_body(self, rec, opts) end
function Page:observe(fn, opts) return P.observe(self, fn, opts) end
function Page:screenshot(opts) return screenshot.screenshot(self, opts) end

-- _heard(method) -> true when a page:on_cdp listener of that event is there
-- (tools/webmcp.lua: such a listener wants a WebMCP result whole)
function Page:_heard(method)
  return observe.heard(self, method)
end

-- _in_latest(group) -> true when group is one of the latest discovery's
-- (tools/calls.lua: a Tool kept from before is checked against it)
function Page:_in_latest(group)
  local c = self._tool_cache
  if not c then return false end
  local set = c.group_set
  if not set then
    set = {}
    for _, g in ipairs(c.groups) do set[g] = true end
    c.group_set = set
  end
  return set[group] == true
end

-- _latest_groups() -> the latest discovery's groups, or nil when there is none
function Page:_latest_groups()
  local c = self._tool_cache
  return c and c.groups
end

function Page:__tostring()
  return "Page(" .. tostring(self.url) .. (self.closed and ", closed" or "")
    .. (self.crashed and ", crashed" or "") .. ")"
end

errors.guard_methods(Page, "Page", "page")

return M
