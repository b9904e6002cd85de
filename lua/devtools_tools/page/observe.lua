-- devtools_tools.page.observe: what a page did besides its tools. Console
-- messages (uncaught exceptions and browser log entries included) and
-- network requests, kept in a bounded ring per page; listeners on those
-- events (page:on) and on raw CDP events (page:on_cdp); page:observe(fn),
-- which brackets one action; raw CDP commands (page:cdp, browser:cdp);
-- and the end of each tool call, told to page:on("call") (observed).
--
-- Its state is an Observation, which Page holds (page.observation) and
-- feeds every event of its sessions (dispatch); Page's methods of the same
-- names call it.
--
-- What it must never do: wait inside an event handler (handlers only record
-- and call listeners; whatever needs a reply is fetched by the public call
-- that asks for it, within that call's deadline), keep more than the ring's
-- bound (bodies are fetched only on request), let a failing listener break
-- the connection's reader, or replace the page's own CDP listener (the
-- page's dispatcher calls dispatch() here).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local options = require "devtools_tools.base.options"
local remote = require "devtools_tools.wire.remote"
local base64 = require "devtools_tools.base.base64"

local raise = errors.raise
local now = core.now
local null = core.null
local array_mt = core.array_mt
local type, tostring, ipairs, pairs, pcall, select, error, next, setmetatable =
      type, tostring, ipairs, pairs, pcall, select, error, next, setmetatable
local concat = table.concat
local unpack = table.unpack or unpack

local M = {}

-- How many console messages and requests a page keeps by default.
M.DEFAULT_HISTORY = 1000
-- How many bytes of page text each of those two rings holds at most by
-- default (console text and string arguments; request URLs and bodies): a
-- page that logs megabytes in a loop must not take the host's memory.
M.DEFAULT_HISTORY_BYTES = 16 * 1024 * 1024
-- How many bytes of response bodies the browser keeps per page, in all
-- (history.bodies) and of one response (history.body), for response_body:
-- sent with Network.enable. Chromium's own defaults drop any body over
-- about 20 MB; a body over history.body is never kept, and the oldest go
-- first when all of them pass history.bodies.
M.DEFAULT_BODIES = 128 * 1024 * 1024
M.DEFAULT_BODY = 64 * 1024 * 1024

-- body_limits(history) -> the browser's buffer sizes for a page's bodies:
-- in all, and for one response (the total is raised to hold one body).
function M.body_limits(history)
  local body = history and history.body or M.DEFAULT_BODY
  local bodies = history and history.bodies or math.max(M.DEFAULT_BODIES, body)
  return bodies, body
end

-- ---- a bounded ring, indexed by absolute position -------------------------

local function len(s) return type(s) == "string" and #s or 0 end

-- ring(cap, max_bytes, on_drop?): at most cap items and max_bytes bytes
-- of them, but for the newest item, which stays whatever its size.
-- on_drop(item) is told of each item that falls out.
local function ring(cap, max_bytes, on_drop)
  return { cap = cap, max_bytes = max_bytes, bytes = 0, items = {}, sizes = {},
    first = 1, last = 0, on_drop = on_drop, pos = {} }      -- pos: item -> its index
end

-- The oldest fall out while the ring is over its bounds (never the newest).
local function trim(r)
  local last = r.last
  while last - r.first + 1 > r.cap or (r.bytes > r.max_bytes and r.first < last) do
    local i = r.first
    local old = r.items[i]
    r.bytes = r.bytes - r.sizes[i]
    r.items[i], r.sizes[i] = nil, nil
    r.pos[old] = nil
    r.first = i + 1
    if r.on_drop then r.on_drop(old) end
  end
end

-- push(r, v, size): adds v, which holds size bytes; the oldest fall out
local function push(r, v, size)
  local last = r.last + 1
  r.last = last
  r.items[last], r.sizes[last] = v, size
  r.pos[v] = last
  r.bytes = r.bytes + size
  trim(r)
end

-- grow(r, v, size): v, still in the ring, now holds size bytes more (a
-- response's headers, a console argument read by value)
local function grow(r, v, size)
  local i = r.pos[v]
  if not i or size == 0 then return end
  r.sizes[i] = r.sizes[i] + size
  r.bytes = r.bytes + size
  trim(r)
end

-- Bytes of the strings in a flat table (headers).
local function strings_size(t)
  local n = 0
  if type(t) == "table" then
    for k, v in next, t do n = n + len(k) + len(v) end
  end
  return n
end

-- Bytes of page text a JSON value holds (its strings and keys; 8 a number).
local function value_size(v, depth)
  local t = type(v)
  if t == "string" then return #v end
  if t ~= "table" or depth > 200 then return 8 end
  local n = 8
  for k, x in next, v do n = n + len(k) + value_size(x, depth + 1) end
  return n
end

-- ---- state --------------------------------------------------------------------

-- A request's key in inflight.
local function key(session, id) return (session or "") .. "\0" .. tostring(id) end

local EVENTS = { console = true, request = true, response = true, navigated = true, crashed = true,
  dialog = true, tools_changed = true, call = true }

-- The domains a page enables beside the library's own: WebMCP is
-- experimental, and a browser without it answers with an error, which
-- attach_finish forgives (as it does for the others, on odd targets).
-- Network's parameters are the page's (its history's body limits).
local ENABLE = { "Network.enable", "Log.enable", "WebMCP.enable" }

-- The remote objects a console record holds (its object arguments, a
-- thrown value) live on in the page until released: Chromium keeps each in
-- its "console" object group of our session for the document's life (a
-- page that logged an object 4000 times held all 4000, 16 MB of its heap,
-- where our ring kept 1000 records). So they are released when their
-- record falls out of the ring: queued there (the ring is being trimmed,
-- and a send may route events that add to it), sent after the event or
-- the read that dropped it.
local function hold(rec, oid)
  if type(oid) ~= "string" then return end
  local held = rec._held
  if not held then held = {}; rec._held = held end
  held[#held + 1] = oid
end

local function release_later(st, rec)
  local held = rec._held
  if not held then return end
  rec._held = nil
  local q = st.release
  q[#q + 1] = rec.session
  q[#q + 1] = held
end

local function release_dropped(st)
  local q = st.release
  if #q == 0 then return end
  st.release = {}
  for i = 1, #q, 2 do
    for _, oid in ipairs(q[i + 1]) do
      st.conn:send_nowait("Runtime.releaseObject", { objectId = oid }, q[i])
    end
  end
end

local Observation = {}
Observation.__index = Observation
M.Observation = Observation

-- new(site, history) -> Observation: the records of the page whose site it
-- is (page/site.lua: its connection, its frames site.docs). history:
-- {console = n, requests = n, bytes = n, bodies = n, body = n}.
function M.new(site, history)
  history = history or {}
  local bytes = history.bytes or M.DEFAULT_HISTORY_BYTES
  local bodies, body = M.body_limits(history)
  local inflight = {}       -- session .. "\0" .. requestId -> record
  local by_id = {}          -- requestId -> the latest record in flight with it (see find)
  local st
  st = {
    seq = 0,
    batches = 0,            -- call_many's heard by "call" listeners (observed_many)
    console = ring(history.console or M.DEFAULT_HISTORY, bytes, function(old) release_later(st, old) end),
    release = {},           -- session, object ids, ...: of records that fell out (see hold)
    requests = ring(history.requests or M.DEFAULT_HISTORY, bytes, function(old)
      -- a request that falls out is forgotten, finished or not: one still
      -- in flight says so (nothing will finish it)
      local k = key(old.session, old.id)
      if inflight[k] == old then inflight[k] = nil; old.dropped = true end
      if by_id[old.id] == old then by_id[old.id] = nil end
    end),
    inflight = inflight,
    by_id = by_id,
    listeners = {},         -- event name -> list of functions
    cdp_listeners = {},     -- CDP method -> list of functions (a plain table: names are data)
    bodies = bodies,        -- bytes of response bodies the browser keeps, in all
    body = body,            -- ... and of one response
    site = site, conn = site.conn, docs = site.docs, session = site.docs.session,
  }
  return setmetatable(st, Observation)
end

-- enable_send(deadline) -> ids: sends the enables, before the page's own
-- set-up replies are read
function Observation:enable_send(deadline)
  local ids = {}
  local network = self:network_params()
  for i, m in ipairs(ENABLE) do
    ids[i] = self.conn:send(m, m == "Network.enable" and network or nil, self.session, deadline)
  end
  return ids
end

-- network_params() -> Network.enable's parameters for another session
-- of the page (an out-of-process iframe's, a worker's): the same buffer
-- sizes as its own
function Observation:network_params()
  return { maxTotalBufferSize = self.bodies, maxResourceBufferSize = self.body }
end

-- enable_finish(ids, deadline): awaits the enables' replies.
function Observation:enable_finish(ids, deadline)
  local conn = self.conn
  for i, id in ipairs(ids) do
    local ok, err = errors.catch(conn.await, conn, id, deadline, ENABLE[i])
    if not ok and err.code ~= "protocol_error" then error(err, 0) end
  end
end

local function next_seq(st)
  st.seq = st.seq + 1
  return st.seq
end

-- An error value as text: its __tostring may raise too.
local function shown_error(err)
  local ok, s = pcall(tostring, err)
  if ok and type(s) == "string" then return s end
  return "(a " .. type(err) .. " that cannot be shown)"
end

-- A listener that failed (or answered nonsense) becomes a console record,
-- so that it is seen, and never reaches the connection's reader.
local function listener_error(st, text)
  push(st.console, { seq = next_seq(st), level = "error", type = "listener_error",
    source = "devtools_tools", text = text, args = {}, time = now() }, #text)
end

-- Calls the listeners of one event.
local function emit(st, list, event, ...)
  if not list or #list == 0 then return end
  local copy = { unpack(list) }
  for _, fn in ipairs(copy) do
    local ok, err = pcall(fn, ...)
    if not ok then
      listener_error(st, "a page:on(" .. tostring(event) .. ") listener failed: " .. shown_error(err))
    end
  end
end

-- ---- console ---------------------------------------------------------------------

local LEVEL_OF_TYPE = {
  debug = "debug", warning = "warning", error = "error", assert = "error",
}
local LEVEL_OF_LOG = { verbose = "debug", info = "info", warning = "warning", error = "error" }
local RANK = { debug = 1, info = 2, warning = 3, error = 4 }

-- A RemoteObject as far as it is known at event time.
local function arg_now(ro)
  if ro.objectId == nil or ro.type ~= "object" or ro.subtype == "null" then
    local v = remote.remote_value(ro)
    if v == nil and ro.type ~= "undefined" then v = ro.description end
    return v, false
  end
  return ro.description or ro.className or "Object", true
end

local function text_of(args)
  local one = args[1]
  if #args == 1 and one.type == "string" and type(one.value) == "string" then
    return one.value        -- the argument itself, not a copy (it may be megabytes)
  end
  local parts = {}
  for i, ro in ipairs(args) do
    local v = ro.value
    if ro.type == "string" then parts[i] = v
    elseif v == null or ro.subtype == "null" then parts[i] = "null"
    elseif type(ro.description) == "string" and ro.type ~= "object" then
      parts[i] = ro.description         -- a number as JavaScript writes it (0.30000000000000004)
    elseif v ~= nil and type(v) ~= "table" then parts[i] = tostring(v)
    elseif ro.type == "undefined" then parts[i] = "undefined"
    else parts[i] = tostring(ro.unserializableValue or ro.description or ro.type) end
  end
  return concat(parts, " ")
end

local function frame_of_context(st, ctx_id, session)
  if ctx_id == nil then return nil end
  local fr = st.docs:frame_of_context(ctx_id, session or st.session)
  return fr and fr.id
end

local function location_of(stack, url, line, col)
  local f = stack and stack.callFrames and stack.callFrames[1]
  if f then
    return { url = f.url, line = f.lineNumber, column = f.columnNumber, ["function"] = f.functionName }
  end
  if url or line then return { url = url, line = line, column = col } end
end

-- Bytes of page text a console record holds: its text, the strings among
-- its arguments that are not that text, where it came from, an exception's
-- message and stack, a dialog's default and URL.
local function console_size(rec)
  local text = rec.text
  local n = len(text)
  for _, v in ipairs(rec.args) do
    if type(v) == "string" and v ~= text then n = n + #v end
  end
  local loc, ex, d = rec.location, rec.exception, rec.dialog
  if loc then n = n + len(loc.url) + len(loc["function"]) end
  if ex then n = n + len(ex.message) + len(ex.stack) end
  if d then n = n + len(d.default_prompt) + len(d.url) + (d.message ~= text and len(d.message) or 0) end
  return n
end

local function record_console(st, rec, session)
  rec.seq = next_seq(st)
  rec.time = now()
  rec.session = session or st.session
  push(st.console, rec, console_size(rec))
  emit(st, st.listeners.console, "console", rec)
end

local handlers = {}

handlers["Runtime.consoleAPICalled"] = function(st, p, session)
  local args, objects = setmetatable({}, array_mt), nil
  local rec = { level = LEVEL_OF_TYPE[p.type] or "info", type = p.type, source = "console-api",
    args = args }
  for i, ro in ipairs(p.args or {}) do
    local v, is_obj = arg_now(ro)
    if v == nil then v = null end          -- undefined: JSON has no such value
    args[i] = v
    if is_obj then
      objects = objects or {}
      objects[i] = ro.objectId
    end
    hold(rec, ro.objectId)                 -- (a function's, a symbol's too)
  end
  rec.text, rec._objects = text_of(p.args or {}), objects
  rec.location = location_of(p.stackTrace)
  rec.frame = frame_of_context(st, p.executionContextId, session)
  record_console(st, rec, session)
end

handlers["Runtime.exceptionThrown"] = function(st, p, session)
  local ex = p.exceptionDetails or {}
  local message, details = remote.exception_info(ex)
  local rec = {
    level = "error", type = "exception", source = "exception",
    text = "Uncaught " .. tostring(details.stack or message), args = setmetatable({}, array_mt),
    exception = { message = message, stack = details.stack },
    location = location_of(ex.stackTrace, ex.url, ex.lineNumber, ex.columnNumber),
    frame = frame_of_context(st, ex.executionContextId, session),
  }
  hold(rec, type(ex.exception) == "table" and ex.exception.objectId or nil)   -- what was thrown
  record_console(st, rec, session)
end

handlers["Log.entryAdded"] = function(st, p, session)
  local e = p.entry or {}
  record_console(st, {
    level = LEVEL_OF_LOG[e.level] or "info", type = "entry", source = e.source,
    text = tostring(e.text), args = setmetatable({}, array_mt),
    location = location_of(e.stackTrace, e.url, e.lineNumber),
    request_id = e.networkRequestId,
  }, session)
end

-- ---- dialogs ---------------------------------------------------------------------

-- A JavaScript dialog (alert, confirm, prompt, beforeunload) stops its
-- page's script until it is answered, and every later call on the page
-- would time out. So each is answered as it opens: by the first "dialog"
-- listener that returns an answer (true accepts, false dismisses, a string
-- accepts a prompt with that text), else accepted for alert and
-- beforeunload (a navigation or close goes on) and dismissed for confirm
-- and prompt (false and null to the page, as if nobody clicked OK). Each
-- is kept as a console record of type "dialog".
local ACCEPT_BY_DEFAULT = { alert = true, beforeunload = true }

local function dialog_answer(st, d)
  for _, fn in ipairs({ unpack(st.listeners.dialog or {}) }) do
    local ok, r = pcall(fn, d)
    if not ok then
      listener_error(st, "a page:on(dialog) listener failed: " .. shown_error(r))
    elseif type(r) == "boolean" or type(r) == "string" then
      return r
    elseif r ~= nil then
      listener_error(st, "a page:on(dialog) listener answered a " .. type(r) .. " (true, false or a string)")
    end
  end
  return ACCEPT_BY_DEFAULT[d.type] == true
end

handlers["Page.javascriptDialogOpening"] = function(st, p, session)
  local d = { type = p.type, message = tostring(p.message or ""), default_prompt = p.defaultPrompt,
    url = p.url, frame = p.frameId }
  local answer = dialog_answer(st, d)
  d.answer = answer
  local params = { accept = answer ~= false }
  if type(answer) == "string" then params.promptText = answer end
  st.conn:send_nowait("Page.handleJavaScriptDialog", params, session)
  record_console(st, {
    level = "warning", type = "dialog", source = "dialog", text = d.message,
    args = setmetatable({}, array_mt), dialog = d, frame = p.frameId,
  }, session)
end

-- ---- network ---------------------------------------------------------------------

local function new_request(st, p, session)
  local r = p.request or {}
  local ini = p.initiator or {}
  local iframe = ini.stack and ini.stack.callFrames and ini.stack.callFrames[1]
  local rec = {
    seq = next_seq(st), id = p.requestId, session = session or st.session,
    method = r.method, url = r.url, type = p.type, frame = p.frameId,
    document = p.documentURL, post_data = r.postData, headers = r.headers,
    initiator = { type = ini.type, url = ini.url or (iframe and iframe.url),
      line = ini.lineNumber or (iframe and iframe.lineNumber) },
    timing = { start = p.timestamp, wall = p.wallTime },
    sizes = { transferred = 0, body = 0 },
    done = false, _loader = p.loaderId,
  }
  st.inflight[key(rec.session, rec.id)] = rec
  st.by_id[rec.id] = rec
  push(st.requests, rec, len(rec.url) + len(rec.post_data) + strings_size(rec.headers)
    + len(rec.document) + len(rec.initiator.url))
  emit(st, st.listeners.request, "request", rec)
  return rec
end

-- The record in flight a network event is about: by its session and id,
-- else by id alone (an out-of-process iframe's document: the parent's
-- session saw it sent, the iframe's own session sees the rest).
local function find(st, session, id)
  return st.inflight[key(session or st.session, id)] or st.by_id[id]
end

local function set_response(st, rec, resp, ts)
  rec.status = resp.status
  rec.status_text = resp.statusText
  rec.mime_type = resp.mimeType
  rec.response_headers = resp.headers
  rec.protocol = resp.protocol
  rec.remote_address = resp.remoteIPAddress and (resp.remoteIPAddress .. ":" .. tostring(resp.remotePort))
  rec.from_cache = resp.fromDiskCache or resp.fromPrefetchCache or resp.fromServiceWorker or nil
  rec.timing.response = ts
  grow(st.requests, rec, len(rec.status_text) + len(rec.mime_type) + strings_size(rec.response_headers)
    + len(rec.protocol) + len(rec.remote_address))
end

local function finish(st, rec, ts)
  rec.done = true
  rec.timing.finished = ts
  if ts and rec.timing.start then rec.timing.duration = ts - rec.timing.start end
  st.inflight[key(rec.session, rec.id)] = nil
  if st.by_id[rec.id] == rec then st.by_id[rec.id] = nil end
  emit(st, st.listeners.response, "response", rec)
end

handlers["Network.requestWillBeSent"] = function(st, p, session)
  local prev = find(st, session, p.requestId)
  if prev and p.redirectResponse then
    -- A redirect keeps the request id: the hop ends here, a new record starts.
    set_response(st, prev, p.redirectResponse, p.timestamp)
    prev.redirected_to = p.request and p.request.url
    grow(st.requests, prev, len(prev.redirected_to))
    finish(st, prev, p.timestamp)
  end
  new_request(st, p, session)
end

handlers["Network.responseReceived"] = function(st, p, session)
  local rec = find(st, session, p.requestId)
  if rec then
    set_response(st, rec, p.response or {}, p.timestamp)
    if p.type then rec.type = p.type end
  end
end

handlers["Network.dataReceived"] = function(st, p, session)
  local rec = find(st, session, p.requestId)
  if rec then rec.sizes.body = rec.sizes.body + (p.dataLength or 0) end
end

handlers["Network.loadingFinished"] = function(st, p, session)
  local rec = find(st, session, p.requestId)
  if rec then
    rec.sizes.transferred = p.encodedDataLength or rec.sizes.transferred
    finish(st, rec, p.timestamp)
  end
end

handlers["Network.loadingFailed"] = function(st, p, session)
  local rec = find(st, session, p.requestId)
  if rec then
    rec.failed = p.errorText or "failed"
    rec.canceled = p.canceled or nil
    rec.blocked = p.blockedReason
    finish(st, rec, p.timestamp)
  end
end

-- A document (or a worker) went away: what it still had in flight, the
-- records gone(rec) picks, is cancelled; Chromium says nothing more of it.
local function orphan(st, gone)
  local list = {}
  for _, rec in next, st.inflight do
    if gone(rec) then list[#list + 1] = rec end
  end
  table.sort(list, function(a, b) return a.seq < b.seq end)       -- in the order they were sent
  for _, rec in ipairs(list) do
    rec.failed = "net::ERR_ABORTED (its document went away)"
    rec.canceled = true
    finish(st, rec)
  end
end

-- A frame's new document: its own request goes on (its loader's).
handlers["Page.frameNavigated"] = function(st, p)
  local f = p.frame
  if f and f.id and f.loaderId then
    orphan(st, function(rec) return rec.frame == f.id and rec._loader ~= f.loaderId end)
  end
end

handlers["Page.frameDetached"] = function(st, p)
  if p.reason ~= "swap" and p.frameId then
    orphan(st, function(rec) return rec.frame == p.frameId end)
  end
end

-- session_gone(session): a worker's or an iframe's session ended
-- (page/frames.lua): its requests still in flight will not finish.
function Observation:session_gone(session)
  orphan(self, function(rec) return rec.session == session end)
end

-- heard(method) -> true when a page:on_cdp listener of that CDP event is there
function Observation:heard(method)
  local l = self.cdp_listeners[method]
  return l ~= nil and #l > 0
end

-- tools_changed(reason): the page's tools may have changed (the page
-- says when): its "tools_changed" listeners are told.
function Observation:tools_changed(reason)
  emit(self, self.listeners.tools_changed, "tools_changed", { reason = reason })
end

-- ---- tool calls ------------------------------------------------------------------

-- observed(name, args, fn, ...) -> fn(rec, ...)'s value. Each tool call
-- of the page (page:call; tool:call through its document's site) runs
-- through here. With no
-- "call" listener fn runs as it is (rec nil); with one, fn puts the Tool
-- in rec.tool once it has it, and the listeners are told, as the call
-- ends, {name, tool, args, ok, result | error, ms}. A failure that is no
-- dt.Error (a bug, an interrupt) is told to nobody.
function Observation:observed(name, args, fn, ...)
  local st = self
  local l = st.listeners.call
  if not l or #l == 0 then return fn(nil, ...) end
  local rec = { name = name, args = args }
  local t0 = now()
  local ok, r = pcall(fn, rec, ...)
  rec.ms = (now() - t0) * 1000
  if not ok and not errors.is_error(r) then error(r, 0) end
  rec.ok = ok
  if ok then rec.result = r else rec.error = r end
  emit(st, l, "call", rec)
  if not ok then error(r, 0) end
  return r
end

-- observed_many(entries, fn) -> fn(each)'s value, for call_many:
-- entries[i] is {name, tool, args} or {name, err}; fn is given each(i, ok,
-- value) (nil with no listener), to say each entry's outcome as it is
-- known. Once fn ends, the listeners are told of those entries, in their
-- order: as above, with batch (one number per call_many of the page) and
-- index i; ms is each entry's time from the start.
function Observation:observed_many(entries, fn)
  local st = self
  local l = st.listeners.call
  if not l or #l == 0 then return fn(nil) end
  st.batches = st.batches + 1
  local batch, t0, told = st.batches, now(), {}
  local function tell()
    for i = 1, #entries do
      local r = told[i]
      if r then emit(st, l, "call", r) end
    end
  end
  local ok, r = pcall(fn, function(i, ok_i, v)
    local e = entries[i]
    if not ok_i and not errors.is_error(v) then return end
    told[i] = { name = e.name, tool = e.tool, args = e.args, ok = ok_i, result = ok_i and v or nil,
      error = not ok_i and v or nil, ms = (now() - t0) * 1000, batch = batch, index = i }
  end)
  tell()
  if not ok then error(r, 0) end
  return r
end

-- ---- the dispatcher hook ---------------------------------------------------------


-- dispatch(method, params, session): called by the page's event
-- dispatcher after its frames' handlers, for every event of its sessions.
function Observation:dispatch(method, params, session)
  local st = self
  local h = handlers[method]
  if h then h(st, params or {}, session) end
  if method == "Page.frameNavigated" then
    local f = params.frame
    if f and f.parentId == nil and (session == nil or session == st.session) then
      emit(st, st.listeners.navigated, "navigated", { url = st.docs.url, frame = f.id })
    end
  elseif method == "Inspector.targetCrashed" and (session == nil or session == st.session) then
    emit(st, st.listeners.crashed, "crashed", { url = st.docs.url })
  elseif method == "Target.attachedToTarget" and params.sessionId ~= nil
      and st.docs.child_sessions[params.sessionId] then
    -- An out-of-process iframe the page kept (not one already removed):
    -- its requests and messages are ours too.
    for _, m in ipairs(ENABLE) do
      st.conn:send_nowait(m, m == "Network.enable" and st:network_params() or nil, params.sessionId)
    end
  end
  local l = st.cdp_listeners[method]
  if l then emit(st, l, method, params, session) end
  release_dropped(st)
end

-- ---- the page's methods (Page calls them) ----------------------------------------

local function state(self)
  self.site:check_open()
  return self
end

local function listen(list_of, name, fn, fname)
  if type(fn) ~= "function" then
    raise("bad_argument", fname .. ": expected a function, got " .. type(fn))
  end
  local list = list_of[name]
  if not list then list = {}; list_of[name] = list end
  list[#list + 1] = fn
  return function()
    for i = #list, 1, -1 do
      if list[i] == fn then table.remove(list, i) return true end
    end
    return false
  end
end

-- on(event, fn) -> remove(): fn(record) for "console" and "request" (a
-- request was sent), "response" (it finished or failed), "navigated"
-- ({url, frame}), "crashed" ({url}), "dialog" ({type, message,
-- default_prompt, url, frame}; fn may return the answer: see dialogs
-- above), "tools_changed" ({reason}: the page's tools may have changed;
-- see page.lua), "call" (a tool call ended: see observed above).
-- Listeners run inside the connection's reader (or the call) and must
-- not wait.
function Observation:on(event, fn)
  local st = state(self)
  if type(event) ~= "string" or not EVENTS[event] then
    raise("bad_argument", "on: unknown event " .. tostring(event)
      .. " (console, request, response, navigated, crashed, dialog, tools_changed, call)")
  end
  local remove = listen(st.listeners, event, fn, "on")
  if event == "tools_changed" then st.docs:watch_tools() end
  return remove
end

-- on_cdp(method, fn) -> remove(): fn(params, session_id) for every CDP event
-- of that name on the page's sessions, beside the library's own handling.
function Observation:on_cdp(method, fn)
  local st = state(self)
  if type(method) ~= "string" or not method:find("^%a+%.%a+$") then
    raise("bad_argument", "on_cdp: expected an event name such as \"Network.requestWillBeSent\", got "
      .. tostring(method))
  end
  local remove = listen(st.cdp_listeners, method, fn, "on_cdp")
  if method == "WebMCP.toolResponded" then st.site:webmcp():unwatch() end
  return remove
end

local function cdp_call(conn, session, method, params, opts, fname)
  if type(method) ~= "string" or not method:find("^%a+%.%a+$") then
    raise("bad_argument", fname .. ": expected a method such as \"Page.reload\", got " .. tostring(method))
  end
  if params ~= nil and type(params) ~= "table" then
    raise("bad_argument", fname .. ": params must be a table or nil, got " .. type(params))
  end
  opts = options.check(opts, options.TIMEOUT, fname)
  local deadline = conn:deadline(opts)
  return conn:await(conn:send(method, params, session, deadline), deadline, method)
end

-- cdp(method, params?, opts?) -> result, on the page's session
function Observation:cdp(method, params, opts)
  self.site:check_open()
  return cdp_call(self.conn, self.session, method, params, opts, "cdp")
end

-- browser_cdp(browser, method, params?, opts?) -> result, on the browser target
function M.browser_cdp(browser, method, params, opts)
  if browser.conn.closed then raise("disconnected", "the browser is closed") end
  return cdp_call(browser.conn, nil, method, params, opts, "browser:cdp")
end

-- mark() -> a position: records made after it have seq > that number
function Observation:mark()
  local st = state(self)
  st.conn:poll()            -- what already happened is before the mark
  return st.seq
end

local function since_of(v, fname)
  if v == nil then return 0 end
  if type(v) == "table" and type(v.seq) == "number" then return v.seq end
  if type(v) ~= "number" or v ~= v then
    raise("bad_argument", fname .. ": since must be a number from page:mark() or a record, got "
      .. options.shown(v))
  end
  return v
end

local function level_filter(level, fname)
  if level == nil then return nil end
  if type(level) == "string" then
    local r = RANK[level]
    if not r then raise("bad_argument", fname .. ": unknown level " .. level .. " (debug, info, warning, error)") end
    return function(rec) return (RANK[rec.level] or 2) >= r end
  end
  if type(level) == "table" then
    local set = {}
    for _, l in ipairs(level) do
      if not RANK[l] then raise("bad_argument", fname .. ": unknown level " .. tostring(l)) end
      set[l] = true
    end
    return function(rec) return set[rec.level] == true end
  end
  raise("bad_argument", fname .. ": level must be a string or a list of strings")
end

-- Reads the object arguments of console messages by value, pipelined, in
-- one deadline. An object that cannot be read (its document is gone, or a
-- cycle), or not by the deadline (the page's script is busy), keeps its
-- description; one not read in time is asked for again next time.
local READ_THIS = "function () { return this; }"
local function resolve_args(st, list, deadline)
  local conn, pend = st.conn, {}
  for _, rec in ipairs(list) do
    if rec._objects then
      for i, oid in pairs(rec._objects) do
        pend[#pend + 1] = { rec = rec, i = i, id = conn:send("Runtime.callFunctionOn", {
          functionDeclaration = READ_THIS, objectId = oid, returnByValue = true,
          silent = true }, rec.session, deadline) }
      end
    end
  end
  for _, p in ipairs(pend) do
    local ok, r = errors.catch(conn.await, conn, p.id, deadline, "Runtime.callFunctionOn")
    if ok and r.result and not r.exceptionDetails then
      local v = remote.remote_value(r.result)
      if v == nil then v = null end
      p.rec.args[p.i] = v
      grow(st.console, p.rec, value_size(v, 0))     -- it holds the value now
    elseif not ok and r.code == "timeout" then
      goto later                     -- the records are here: they go back as they are
    elseif not ok and r.code ~= "protocol_error" then
      error(r, 0)
    end
    p.rec._objects[p.i] = nil
    ::later::
  end
  for _, rec in ipairs(list) do
    if rec._objects and next(rec._objects) == nil then rec._objects = nil end
  end
  release_dropped(st)       -- (what the values read pushed out of the ring)
end

local console_opts = { since = true, level = true, timeout = true }

-- The records of a ring newer than since that keep (if any) accepts, oldest
-- first.
local function records_of(r, since, keep)
  local out = {}
  for i = r.first, r.last do
    local rec = r.items[i]
    if rec and rec.seq > since and (not keep or keep(rec)) then out[#out + 1] = rec end
  end
  return out
end

-- console_messages{since=, level=, timeout=} -> list of records, oldest
-- first: {seq, level, type, source, text, args (JSON values), location
-- {url, line, column, function}, frame, exception?, time}
function Observation:console_messages(opts)
  opts = options.check(opts, console_opts, "console_messages")
  local st = state(self)
  local deadline = st.conn:deadline(opts)
  st.conn:poll()
  local since = since_of(opts.since, "console_messages")
  local keep = level_filter(opts.level, "console_messages")
  local out = records_of(st.console, since, keep)
  resolve_args(st, out, deadline)
  return out
end

local request_opts = { since = true, url = true, timeout = true }

local function url_filter(url, fname)
  if url == nil then return nil end
  if type(url) == "string" then
    return function(rec) return type(rec.url) == "string" and rec.url:find(url, 1, true) ~= nil end
  end
  if type(url) == "function" then return function(rec) return url(rec.url) and true or false end end
  raise("bad_argument", fname .. ": url must be a string (matched as plain text) or a function")
end

-- network_requests{since=, url=} -> list of records, oldest first: {seq,
-- id, method, url, type, status, status_text, mime_type, failed?, frame,
-- initiator {type, url, line}, timing {start, response, finished,
-- duration} (seconds), sizes {transferred, body} (bytes), done}
function Observation:network_requests(opts)
  opts = options.check(opts, request_opts, "network_requests")
  local st = state(self)
  st.conn:poll()
  local since = since_of(opts.since, "network_requests")
  local keep = url_filter(opts.url, "network_requests")
  local out = records_of(st.requests, since, keep)
  return out
end

-- response_body(request, opts?) -> body (a string), mime type. Asks the
-- browser, which keeps the page's bodies up to its history's limits: none
-- over history.body, and the newest within history.bodies in all.
function Observation:response_body(rec, opts)
  opts = options.check(opts, options.TIMEOUT, "response_body")
  local site, docs = self.site, self.docs
  site:check_open()
  if type(rec) ~= "table" or type(rec.id) ~= "string" then
    raise("bad_argument", "response_body: expected a request record from network_requests")
  end
  local conn = self.conn
  local deadline = conn:deadline(opts)
  if rec.redirected_to then
    raise("protocol_error", "response_body: " .. tostring(rec.url) .. " is a redirect (to "
      .. tostring(rec.redirected_to) .. "): it has no body")
  end
  if not rec.done and not rec.dropped then      -- (a dropped one is asked for as it is)
    conn:wait_for(function() return rec.done or site:closed() or docs.crashed end, deadline)
    site:check_open()
    if not rec.done then raise("timeout", "response_body: " .. tostring(rec.url) .. " is still loading") end
  end
  if rec.failed then
    raise("protocol_error", "response_body: " .. tostring(rec.url) .. " failed: " .. rec.failed)
  end
  local ok, r = errors.catch(function()
    return conn:await(conn:send("Network.getResponseBody", { requestId = rec.id }, rec.session, deadline),
      deadline, "Network.getResponseBody")
  end)
  if not ok then
    if r.code == "protocol_error" then
      -- Why the browser has it not: too big to keep at all, or pushed out
      -- by newer ones (Chromium says "evicted" for both).
      local st, size = self, rec.sizes and rec.sizes.body
      if st and type(size) == "number" and size > st.body then
        raise("too_large", ("response_body: %s: its body of %d bytes is over the %d bytes the browser"
          .. " keeps of one response (history.body)"):format(tostring(rec.url), size, st.body),
          { details = { size = size, limit = st.body, browser = r.message } })
      end
      r.message = "response_body: " .. tostring(rec.url) .. ": " .. r.message
        .. (st and (" (the browser keeps at most %d bytes of the page's response bodies, history.bodies,"
          .. " dropping the oldest first)"):format(st.bodies) or "")
    end
    error(r, 0)
  end
  local body = r.body or ""
  if r.base64Encoded then body = base64.decode(body) end
  return body, rec.mime_type
end

local observe_opts = { timeout = true, settle = "seconds" }

-- observe(fn, opts?) -> {requests, console, since, complete}, fn's
-- results...: runs fn and returns what happened during it (since: the seq
-- it started after; complete: false when the page did not answer after fn
-- by the deadline). Requests it started are awaited (within opts.timeout)
-- so their status and sizes are known; opts.settle (1 s) bounds the wait
-- for bodies after every response has arrived.
function Observation:observe(fn, opts)
  if type(fn) ~= "function" then raise("bad_argument", "observe: expected a function, got " .. type(fn)) end
  opts = options.check(opts, observe_opts, "observe")
  local st = state(self)
  local site, docs = st.site, st.docs
  local conn = st.conn
  local t0 = now()
  local deadline = conn:deadline(opts)
  conn:poll()
  local from = st.seq
  local res = { n = 0 }
  local function pack(...) res = { n = select("#", ...), ... } end
  pack(fn())
  site:check_open()
  if now() >= deadline then
    raise("timeout", ("observe: the function used the whole deadline (%.3g s)"):format(deadline - t0))
  end
  -- A round trip on the page's session: what the page did before it
  -- answers has reached us. A page whose script keeps it busy answers only
  -- later: what has come by the deadline is returned as it is.
  local ok, e = errors.catch(function()
    return conn:await(conn:send("Runtime.evaluate", { expression = "0" }, st.session, deadline), deadline,
      "Runtime.evaluate")
  end)
  if not ok and e.code ~= "timeout" then error(e, 0) end
  local complete = ok
  local reqs = st:network_requests({ since = from })
  -- Every request answered (or failed), then finished: a response whose
  -- body the page never reads may never finish, so that second wait is
  -- bounded by opts.settle.
  conn:wait_for(function()
    if site:closed() or docs.crashed then return true end
    for _, r in ipairs(reqs) do if not r.done and not r.status and not r.dropped then return false end end
    return true
  end, deadline)
  site:check_open()
  local settle = now() + (opts.settle or 1)
  conn:wait_for(function()
    if site:closed() or docs.crashed then return true end
    for _, r in ipairs(reqs) do if not r.done and not r.dropped then return false end end
    return true
  end, settle < deadline and settle or deadline)
  site:check_open()
  local left = deadline - now()
  local msgs = st:console_messages({ since = from, timeout = left > 0 and left or 0 })
  return { requests = reqs, console = msgs, since = from, complete = complete }, unpack(res, 1, res.n)
end

return M
