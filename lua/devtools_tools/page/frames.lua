-- devtools_tools.page.frames: the page's frames and their documents, as its
-- events tell of them - frames, their loaders, the default execution
-- context of each, the sessions of out-of-process iframes and workers
-- (each new target set up and let run), the main frame's loads, and an
-- epoch that moves whenever a document (and so the page's tools) may have
-- changed. Page holds one (page.docs) and feeds it every event of its
-- sessions.
--
-- What it must never do: wait (handlers run inside the connection's
-- reader: what they send is fire and forget), keep a frame its parent
-- removed, or leave a target paused (each new one is resumed as soon as
-- its set-up is written).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local errors = require "devtools_tools.base.errors"
local pagejs = require "devtools_tools.tools.pagejs"

local type, pairs, ipairs, next, setmetatable = type, pairs, ipairs, next, setmetatable

local M = {}

local Frames = {}
Frames.__index = Frames
M.Frames = Frames

-- Out-of-process iframes arrive as targets of their own (auto-attach with
-- flatten): enable what discovery needs on their sessions, and let them run.
-- Listeners must not wait, so these commands are fire-and-forget; discovery
-- later awaits a Runtime.enable on each new session as a barrier. Each new
-- target waits for runIfWaitingForDebugger, sent after the enables on the
-- same session: a dedicated worker's first request was otherwise missed
-- now and then (the worker ran before Network.enable; under load, 2 of 8
-- tries of the observe spec waited out their timeout).
M.AUTO_ATTACH = { autoAttach = true, waitForDebuggerOnStart = true, flatten = true }

-- new(conn, session, listener, hooks) -> Frames. listener: the page's
-- event listener, for the sessions of the targets that attach; hooks (the
-- page's other records): network_params() -> Network.enable's parameters
-- for a new session, or nil when the page keeps no network records;
-- session_gone(sid) (a session ended: its requests will not finish);
-- child_dropped(sid) (an iframe's session we left); url(url) (the main
-- frame's URL changed).
function M.new(conn, session, listener, hooks)
  return setmetatable({
    conn = conn, session = session, listener = listener, hooks = hooks,
    url = "about:blank", main_frame = nil, frames = {}, contexts = {},   -- (contexts: see below)
    loaded = {}, load_order = {}, nav_count = 0, nav_requested = {},
    child_sessions = {}, worker_sessions = {}, attach_seq = 1, epoch = 0,
    removed = {}, removed_order = {}, crashed = nil, watching = false,
    frame_watch = setmetatable({}, { __mode = "k" }),
  }, Frames)
end

-- main(frame): the main frame as the page's tree first tells of it
function Frames:main(tree)
  self.main_frame = tree.id
  self:set_url(tree.url)
  if not self.frames[tree.id] then
    self.frames[tree.id] = { id = tree.id, url = tree.url, origin = tree.securityOrigin,
      loader_id = tree.loaderId, session = self.session }
  end
end

function Frames:set_url(url)
  self.url = url
  self.hooks.url(url)
end

-- ---- events ------------------------------------------------------------------

local handlers = {}

-- The frames inside frame `id`, at any depth (one pass over the frames).
function Frames:descendants(id)
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
-- way (its frame trees, asked before, may still hold it: record_frames).
local function forget_frame(self, fid)
  self.frames[fid] = nil
  for gone in next, self.frame_watch do gone[fid] = true end
end

handlers["Page.frameNavigated"] = function(self, p, session)
  local f = p.frame
  self.nav_requested[f.id] = nil
  -- A new document has none of the old one's iframes (Chromium sends no
  -- frameDetached for them when the main frame navigates: 50 navigations
  -- of a page with two iframes left 103 frames). A document restored from
  -- the back/forward cache brings its iframes back as they were: kept.
  if p.type ~= "BackForwardCacheRestore" then
    for _, fid in ipairs(self:descendants(f.id)) do
      forget_frame(self, fid)
      self.nav_requested[fid] = nil
    end
  end
  local fr = self.frames[f.id] or {}
  fr.id, fr.url, fr.origin, fr.parent = f.id, f.url .. (f.urlFragment or ""), f.securityOrigin, f.parentId
  fr.loader_id = f.loaderId                 -- a new document: tools of the old one are stale
  fr.session = session or self.session
  fr.swapped = nil
  self.frames[f.id] = fr
  if f.parentId == nil and (session == nil or session == self.session) then
    self.main_frame = f.id
    self:set_url(f.url)
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
  if p.frameId == self.main_frame then self:set_url(p.url) end
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

-- forget_removed(self, fid): frame fid and those inside it are gone
local function forget_removed(self, fid)
  local gone = self:descendants(fid)
  gone[#gone + 1] = fid
  for _, id in ipairs(gone) do
    forget_frame(self, id)
    for _, by_frame in next, self.contexts do by_frame[id] = nil end
    self.nav_requested[id] = nil
  end
  drop_removed(self, gone)
end

handlers["Page.frameDetached"] = function(self, p)
  self.nav_requested[p.frameId or false] = nil
  if p.reason == "swap" then
    -- It goes on in a process of its own: its target attaches next (or,
    -- removed meanwhile, is destroyed without attaching: see below).
    local fr = self.frames[p.frameId]
    if fr then fr.swapped = true end
  end
  -- (one not known yet too: a tree already come in may hold it)
  if p.reason ~= "swap" and type(p.frameId) == "string" then forget_removed(self, p.frameId) end
end

-- The default execution context of each frame's document, by session
-- then frame: contexts[session][frame id]. A frame moving to a process of
-- its own has one in each for a moment - the parent's initial about:blank
-- document and the new process's - and the two processes' events come in
-- either order: under load the parent's about:blank context was created
-- after the iframe's own and destroyed at the swap, and a table by frame
-- alone lost the iframe's (the sample app's support widget went missing
-- from 3 discoveries in 60 beside busy spec files). A session's events
-- touch only its own contexts.
local function session_key(self, session) return session or self.session or false end

local function contexts_of(self, session)
  local key = session_key(self, session)
  local by_frame = self.contexts[key]
  if not by_frame then
    by_frame = {}
    self.contexts[key] = by_frame
  end
  return by_frame
end

local function drop_contexts(self, session)
  self.contexts[session_key(self, session)] = nil
end

handlers["Runtime.executionContextCreated"] = function(self, p, session)
  local c = p.context
  local aux = c.auxData
  local child = session and self.child_sessions[session]
  if child then child.crashed = nil end      -- (a crashed iframe's new document)
  if aux and aux.isDefault and aux.frameId then
    contexts_of(self, session)[aux.frameId] = { id = c.id, unique_id = c.uniqueId, origin = c.origin,
      session = session }
  end
end

handlers["Runtime.executionContextDestroyed"] = function(self, p, session)
  local by_frame = self.contexts[session_key(self, session)]
  if not by_frame then return end
  for fid, c in pairs(by_frame) do
    if c.id == p.executionContextId or (p.executionContextUniqueId and c.unique_id == p.executionContextUniqueId) then
      by_frame[fid] = nil
    end
  end
end

handlers["Runtime.executionContextsCleared"] = function(self, _, session)
  drop_contexts(self, session)
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
    drop_contexts(self, sid)
  end
end

-- ---- the tools watch ---------------------------------------------------------------

-- Watching the page's tools (page:on("tools_changed"), page:settle): a
-- binding, and a script at the start of every document (and now in those
-- already there: runImmediately) that calls it when a
-- devtoolstooldiscovery listener is added to or removed from window
-- (js/watch.js), on the page's session and each iframe's. Sent without
-- waiting: the first listener change may come before the script is in;
-- the events of navigation and frames are there at once. A page can call
-- the binding itself: it only says the tools may have changed.
local WATCH_BINDING = "__devtools_tools_changed"

handlers["Runtime.bindingCalled"] = function(self, p)
  if p.name == WATCH_BINDING then self.epoch = self.epoch + 1 end
end

local function watch_session(self, sid)
  local conn = self.conn
  conn:send_nowait("Runtime.addBinding", { name = WATCH_BINDING }, sid)
  conn:send_nowait("Page.addScriptToEvaluateOnNewDocument", { source = pagejs.watch_source(WATCH_BINDING),
    runImmediately = true }, sid)
end

function Frames:watch_tools()
  if self.watching then return end
  self.watching = true
  watch_session(self, self.session)
  for sid in pairs(self.child_sessions) do watch_session(self, sid) end
end

-- tools_changed(): the page's tools changed in a way no event told of (a
-- call answered "changed": js/runtime.js)
function Frames:tools_changed()
  self.epoch = self.epoch + 1
end

-- ---- targets that attach ------------------------------------------------------------

handlers["Target.attachedToTarget"] = function(self, p, session)
  local info = p.targetInfo
  local conn, sid = self.conn, p.sessionId
  local network = info.type == "worker" and self.hooks.network_params()
  if network then
    -- A dedicated worker: no tools live there, but its requests are the
    -- page's (the answer to its own script's request comes on its
    -- session), and so are its own workers'. Kept: the session it came
    -- through, which takes it along when it goes.
    self.worker_sessions[sid] = session or self.session
    conn:listen(sid, self.listener)
    conn:send_nowait("Network.enable", network, sid)
    conn:send_nowait("Target.setAutoAttach", M.AUTO_ATTACH, sid)
    conn:send_nowait("Runtime.runIfWaitingForDebugger", nil, sid)
    return
  end
  if info.type ~= "iframe" or self.removed[info.targetId] or self.removed[info.parentFrameId or false] then
    -- Anything else, or an iframe its parent already removed (the browser
    -- may tell of the target after the renderer told of the removal):
    -- nothing of ours lives there; let it run.
    conn:send_nowait("Runtime.runIfWaitingForDebugger", nil, sid)
    conn:send_nowait("Target.detachFromTarget", { sessionId = sid }, session)
    return
  end
  self.child_sessions[sid] = { target_id = info.targetId, url = info.url,
    parent_frame = info.parentFrameId, order = self.attach_seq, via = session or self.session }
  self.attach_seq = self.attach_seq + 1
  conn:listen(sid, self.listener)
  conn:send_nowait("Page.enable", nil, sid)
  conn:send_nowait("Page.setLifecycleEventsEnabled", { enabled = true }, sid)
  conn:send_nowait("Runtime.enable", nil, sid)
  conn:send_nowait("Target.setAutoAttach", M.AUTO_ATTACH, sid)
  if self.watching then watch_session(self, sid) end      -- (before its scripts run)
  conn:send_nowait("Runtime.runIfWaitingForDebugger", nil, sid)
end

-- A worker's or an iframe's session ended: what was in flight on it will
-- not finish, and the workers attached through it went with it (Chromium
-- tells their end on a session nobody listens to any more).
local function session_gone(self, sid)
  self.conn:listen(sid, nil)
  self.hooks.session_gone(sid)
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
  drop_contexts(self, sid)
  -- (WebMCP forgets the session's tools as on the browser's word)
  if not told then self.hooks.child_dropped(sid) end
  for csid, c in pairs(self.child_sessions) do
    if c.via == sid then drop_child(self, csid, false) end
  end
end

-- Frames the browser forgot to tell us about. An out-of-process iframe
-- its parent removes before its target attached: the parent moved it to a
-- process of its own (frameDetached "swap"), its target never attaches
-- and no other detach comes, so the frame stayed in page.frames for good
-- (3 were kept under three make tests at once). The browser does say
-- that the target was destroyed (Target.targetDestroyed: the browser asks
-- to hear of its targets, browser/object.lua) - then the frame goes,
-- with what is inside it and its session if it had one. A frame that
-- came back into a process of ours (a new document there) is no longer
-- the target's and stays.
function Frames:target_destroyed(target_id)
  if type(target_id) ~= "string" or target_id == self.main_frame then return end
  local owner
  for sid, child in pairs(self.child_sessions) do
    if child.target_id == target_id then owner = sid end
  end
  local fr = self.frames[target_id]
  if fr and (fr.swapped or (owner and fr.session == owner)) then
    forget_removed(self, target_id)
    self.epoch = self.epoch + 1
  end
  if owner and self.child_sessions[owner] then drop_child(self, owner, false) end
end

handlers["Target.targetDestroyed"] = function(self, p)
  self:target_destroyed(p.targetId)
end

-- session_failed(sid): an iframe's session that answered as one that is
-- gone (discovery's first request on it: an attach that failed): its
-- frames, and those the parent's tree listed for its target, are forgotten
function Frames:session_failed(sid)
  local child = self.child_sessions[sid]
  if not child then return end
  drop_child(self, sid, false)
  if self.frames[child.target_id] then forget_removed(self, child.target_id) end
  self.epoch = self.epoch + 1
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
  local set = self.removed
  for _, fid in ipairs(ids) do remember(set, self.removed_order, fid, KEEP_REMOVED) end
  for sid, child in pairs(self.child_sessions) do
    if set[child.target_id] or set[child.parent_frame or false] then
      self.conn:send_nowait("Target.detachFromTarget", { sessionId = sid }, child.via)
      drop_child(self, sid, false)
    end
  end
end

-- Events that change which documents (and so which tools) the page has:
-- each moves the epoch, so a cached discovery knows it is out of date.
-- A navigation within the document (history.pushState, a hash change) is
-- one too: a single-page app's router swaps its views' tools on it.
local epoch_events = {
  ["Page.frameNavigated"] = true, ["Page.frameDetached"] = true, ["Page.navigatedWithinDocument"] = true,
  ["Target.targetDestroyed"] = true,
  ["Runtime.executionContextCreated"] = true, ["Runtime.executionContextDestroyed"] = true,
  ["Runtime.executionContextsCleared"] = true, ["Target.attachedToTarget"] = true,
  ["Target.detachedFromTarget"] = true,
}

-- dispatch(method, params, session): one event of the page's sessions
function Frames:dispatch(method, params, session)
  local h = handlers[method]
  if h then
    h(self, params, session)
    if epoch_events[method] then self.epoch = self.epoch + 1 end
  end
end

-- ---- what the others ask ------------------------------------------------------------

-- is_current(frame_id, loader_id, context_id?) -> true while that frame
-- still shows that document (and, if given, that execution context)
function Frames:is_current(frame_id, loader_id, context_id)
  if self.closed then return false end
  local fr = self.frames[frame_id]
  if not fr or fr.loader_id ~= loader_id then return false end
  if context_id ~= nil then
    local ctx = self:context(frame_id, fr.session)
    if not ctx or ctx.id ~= context_id then return false end
  end
  return true
end

-- context(frame_id, session?) -> {id, unique_id, origin, session}: the
-- default execution context of the frame's document in that session (by
-- default the one that holds the frame), nil while it has none
function Frames:context(frame_id, session)
  if session == nil then
    local fr = self.frames[frame_id]
    session = fr and fr.session
  end
  local by_frame = self.contexts[session_key(self, session)]
  return by_frame and by_frame[frame_id]
end

-- all_contexts() -> {context...}: every session's (a frame moving
-- between processes may have one in each)
function Frames:all_contexts()
  local out = {}
  for _, by_frame in next, self.contexts do
    for _, c in next, by_frame do out[#out + 1] = c end
  end
  return out
end

-- watch_frames() -> gone: a set that collects the ids of the frames that
-- go away from now on, for record_frames. Held weakly: dropped with the
-- discovery that asked for it, however that ends.
function Frames:watch_frames()
  local gone = {}
  self.frame_watch[gone] = true
  return gone
end

-- record_frames(frames, gone?): the frames a discovery's trees showed;
-- those in gone went away after the trees were asked for (50 iframes added
-- and removed a second during discoveries left 16 frames, growing)
function Frames:record_frames(frames, gone)
  for _, f in ipairs(frames) do
    if not (gone and gone[f.id]) then
      local fr = self.frames[f.id] or {}
      self.frames[f.id] = fr
      fr.id, fr.url, fr.origin, fr.parent, fr.session = f.id, f.url, f.origin, f.parent, f.session
      fr.loader_id = f.loader_id
    end
  end
  if gone then self.frame_watch[gone] = nil end
end

-- session_ready(sid): a child session's Runtime.enable was answered, so
-- its execution contexts are known
function Frames:session_ready(sid)
  local s = self.child_sessions[sid]
  if s then s.ready = true end
end

-- session_crashed(sid) -> true when that iframe's renderer crashed
function Frames:session_crashed(sid)
  if sid == self.session then return self.crashed == true end
  local child = self.child_sessions[sid]
  return child ~= nil and child.crashed == true
end

-- frame_of_context(id, session?) -> the frame whose execution context in
-- that session (the page's by default) is id (nil: the main frame's)
function Frames:frame_of_context(id, session)
  if id == nil then return self.frames[self.main_frame] end
  local by_frame = self.contexts[session_key(self, session)]
  for fid, c in next, by_frame or {} do
    if c.id == id then return self.frames[fid] end
  end
end

-- recover(): a reload is asked for: a crashed page gets its new document
function Frames:recover()
  self.crashed = nil
end

-- detach(gone): the page is closed or detached: its sessions are heard no
-- more, and what waits on them (or is sent to them later) fails with gone
function Frames:detach(gone)
  self.closed = true
  local conn = self.conn
  conn:listen(self.session, nil)
  for sid in pairs(self.child_sessions) do conn:listen(sid, nil) end
  for sid in pairs(self.worker_sessions) do conn:listen(sid, nil) end
  conn:end_session(self.session, gone)
  for sid in pairs(self.child_sessions) do conn:end_session(sid, gone) end
end

return M
