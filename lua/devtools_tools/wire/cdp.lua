-- devtools_tools.wire.cdp: one Chrome DevTools Protocol connection.
--
-- Correlates commands and replies by id, routes events to the session that
-- owns them (flattened target sessions: `sessionId` at the top level) and
-- puts a deadline on every wait. It speaks CDP over any transport object with
-- send(msg, deadline) and recv_cdp(deadline, ids, deadlines) (the C transports, or a fake
-- in unit specs); it never touches a socket itself and knows nothing of pages
-- or tools.
--
-- Rules it keeps: a reply that arrives after its caller timed out is dropped;
-- once the transport is gone every waiting and later call fails with
-- `disconnected`; event listeners run inside the wait loop and must not wait
-- on the connection themselves; a deadline holds even while messages keep
-- arriving (the clock is read between messages).
--
-- This file owns the requests (ids, replies, their deadlines, what is
-- forgotten), the reading and routing of one message (pump) and the
-- connection's end. Waiting has two faces and one reader: wire/waiting.lua
-- (a blocking caller reads itself; a task waits on its loop, which watches
-- the transport); the debug log is wire/log.lua. So many tasks share one
-- connection.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local errors = require "devtools_tools.base.errors"
local json = require "devtools_tools.base.json"
local options = require "devtools_tools.base.options"
local core = require "devtools_tools.core"
local tasks = require "devtools_tools.rt.task"
local log = require "devtools_tools.wire.log"
local waiting = require "devtools_tools.wire.waiting"

local now = core.now
local raise = errors.raise
-- What we send: a NaN or an infinity in a message (a tool's arguments, a
-- page:cdp() parameter) is refused, not sent as null.
local encode_out = json.encode_finite
local current_task = tasks.current
local type, tonumber, pairs, ipairs, next, setmetatable, getmetatable, tostring, pcall, error =
      type, tonumber, pairs, ipairs, next, setmetatable, getmetatable, tostring, pcall, error

local M = {}

-- The debug log (wire/log.lua): log.on, log.out, log.width, log.t0.
M.log = log.state
M.clean_log = log.clean_log
local log_line, log_received = log.line, log.received

-- The waits (wire/waiting.lua), each a function of the connection.
local read_until, take_buffered, hand_over = waiting.read_until, waiting.take_buffered, waiting.hand_over
local wake_waiters, unwatch_all = waiting.wake_waiters, waiting.unwatch_all

local Conn = {}
Conn.__index = Conn
Conn.__name = "devtools_tools.Connection"

-- new(transport, opts) -> Connection. opts.timeout: default seconds per
-- call; opts.process: the browser's Process when we launched it (a task's
-- wait also watches its exit, which a helper process still holding the pipe
-- would otherwise hide).
function M.new(transport, opts)
  opts = opts or {}
  return setmetatable({
    transport = transport,
    process = opts.process,
    timeout = opts.timeout or options.DEFAULT_TIMEOUT,
    next_id = 1,
    -- id -> false while waiting, then the reply message (or an Error)
    pending = {},
    -- id -> the session a waiting request was sent on ("" for the browser)
    pending_session = {},
    -- session id ("" for the browser) -> function(method, params, session)
    listeners = {},
    closed = nil,           -- a message once the connection is gone
    -- ids of replies whose result is a JSON text to decode in place: the
    -- transport decodes it straight into result.result.json. id -> the
    -- deadline of the call waiting for it (or true): decoding a large text
    -- stops there, whoever reads
    json_ids = {},
    -- id -> the deadline of the call waiting for any other reply: decoding
    -- a large one stops there too; and a WebMCP invocation id -> the
    -- deadline of the call waiting for its result (an event)
    deadlines = {},
    -- WebMCP invocation id -> false while its call waits, then the dt.Error
    -- decoding its result ran into
    cut = {},
    late = {},           -- id -> await's on_late, for a reply its caller gave up on
    -- tasks waiting on this connection: waiter -> true (see wait_in_task)
    waiters = {},
    waiting_on = {},     -- loop (driver) -> how many of the waiters are its tasks
    -- request id -> the waiter (a task) waiting for its reply, and the ids
    -- answered since the last wake that one waits for (see answer)
    keyed = {}, answered = {},
    unkeyed = {},        -- the other waiters (a navigation, an event): waiter -> true
    watches = {},        -- loop (driver) -> its watch of the transport
    -- session -> the dt.Error its requests fail with (end_session); weak:
    -- an entry lasts while its error does, which whoever ended the session
    -- keeps while anything may still send on it (a closed Page keeps its
    -- own; every page a server had closed was kept, 2 entries a page)
    ended_sessions = setmetatable({}, { __mode = "v" }),
    dispatching = 0,        -- event listeners running (see hand_over)
    in_callback = 0,        -- this connection's loop callbacks running (see rearm)
    awaits = 0,             -- awaits since the last sweep (see sweep)
  }, Conn)
end

-- deadline(opts) -> absolute deadline for one call
function Conn:deadline(opts)
  local t = opts and opts.timeout or self.timeout
  if type(t) ~= "number" or t ~= t or t < 0 then
    raise("bad_argument", "timeout must be a non-negative number of seconds, got "
      .. (t ~= t and "NaN" or tostring(t)))
  end
  return now() + t
end

function Conn:listen(session, fn)
  self.listeners[session or ""] = fn
end

local function disconnected(self)
  raise("disconnected", "the browser connection is closed: " .. self.closed)
end


-- The transport went away: every waiter learns it from `closed`. Tasks
-- already waiting are woken on their loop's next turn, whoever found it
-- out (a write that met a broken pipe before any read saw the end, too);
-- a reader on the loop wakes them at once itself.
local function lost(self, message)
  if self.closed then return end
  self.closed = message or "connection lost"
  local w = next(self.waiters)
  if w then w.task.driver:timer(0, function() wake_waiters(self, false) end) end
end

-- The next request id, on a connection still open.
local function take_id(self)
  if self.closed then disconnected(self) end
  local id = self.next_id
  self.next_id = id + 1
  return id
end

-- Writes request id (its text made) and records that it waits for a reply.
local function transmit(self, id, text, session, deadline, json_reply, method)
  if session then
    local ended = self.ended_sessions[session]
    if ended then error(ended, 0) end
  end
  if M.log.on then log_line("->", session, text) end
  self.pending[id] = false
  self.pending_session[id] = session or ""
  -- A task's write that waits for the pipe can raise (cancelled, or the
  -- connection lost): nobody will await this id, so it must not stay
  -- pending with no deadline, where it would count for ever as a caller
  -- still waiting (waiting_before: the page is then never unstuck).
  local wrote, ok, err, code = pcall(self._write, self, text, deadline or (now() + self.timeout))
  if not wrote then
    self.pending[id] = nil
    self.pending_session[id] = nil
    error(ok, 0)
  end
  if not ok then
    self.pending[id] = nil
    self.pending_session[id] = nil
    if code == "closed" then
      lost(self, err)
      disconnected(self)
    elseif code == "timeout" then
      -- The bytes stay queued and go out later; the reply will be dropped.
      raise("timeout", method .. ": " .. err)
    elseif code == "too_large" then
      raise("too_large", method .. ": " .. err)
    end
    raise("protocol_error", method .. ": " .. tostring(err))
  end
  if json_reply then
    self.json_ids[id] = deadline or true
  elseif deadline then
    self.deadlines[id] = deadline
  end
  return id
end

-- send(method, params, session, deadline, json_reply) -> id, without
-- waiting for the reply. json_reply: the reply's result.result.value is a
-- JSON text (returnByValue of a string the page built); the transport
-- decodes it in place into result.result.json (or result.result.json_error).
function Conn:send(method, params, session, deadline, json_reply)
  local id = take_id(self)
  local msg
  if session then
    msg = { id = id, method = method, params = params, sessionId = session }
  else
    msg = { id = id, method = method, params = params }
  end
  return transmit(self, id, encode_out(msg), session, deadline, json_reply, method)
end

-- send_text(head, session, deadline, json_reply, method) -> id: send, for a
-- request its caller wrote as JSON text (a tool call's, which repeats but
-- for its arguments). head: the text of the request object up to its id,
-- which is its last member: it ends in `"id":`.
function Conn:send_text(head, session, deadline, json_reply, method)
  local id = take_id(self)
  return transmit(self, id, head .. id .. "}", session, deadline, json_reply, method)
end

-- as_listener(self, fn, ...) -> pcall's results: fn runs as an event
-- listener does, so what it sends routes no further messages from inside
-- the read that called it (see hand_over)
local function as_listener(self, fn, a, b, c)
  local depth = self.dispatching
  self.dispatching = depth + 1
  local ok, err = pcall(fn, a, b, c)
  self.dispatching = depth
  return ok, err
end

local function route_event(self, msg)
  local fn = self.listeners[msg.sessionId or ""]
  if fn then
    local ok, err = as_listener(self, fn, msg.method, msg.params, msg.sessionId)
    if not ok then error(err, 0) end
  end
end

-- answer(self, id, value): the reply to request id came, or the error
-- that stands for it: a task waiting for it is woken by its id, without
-- asking every waiter (wake_waiters).
local function answer(self, id, value)
  self.pending[id] = value
  if self.keyed[id] then
    local a = self.answered
    a[#a + 1] = id
  end
end

-- Reads and routes one message. Returns false on timeout.
local function pump(self, deadline)
  local msg, err, code, head = self.transport:recv_cdp(deadline, self.json_ids, self.deadlines,
    self.event_prefix)
  if msg ~= nil and M.log.on then log_received(msg) end
  if msg ~= nil and (type(msg) ~= "table" or getmetatable(msg) == core.array_mt) then
    -- JSON, but not a CDP message (an array, a string, a number...).
    raise("protocol_error", "unreadable message from the browser: a JSON "
      .. (type(msg) == "table" and "array" or type(msg)) .. ", not an object")
  end
  if msg == nil then
    if code == "timeout" then
      -- With an id (head): the reply came, but decoding its JSON text ran
      -- past the deadline of the call that waits for it (json_ids, deadlines).
      if head == nil then return false end
      -- A string: a WebMCP tool's result, an event (see webmcp.call).
      if type(head) == "string" then
        self.deadlines[head] = nil
        if self.cut[head] == false then
          self.cut[head] = errors.new("timeout", "the result came, but " .. err,
            { details = { decoding = err } })
        end
        return true
      end
      if self.pending[head] == false then
        answer(self, head, errors.new("timeout", "the reply came, but " .. err,
          { details = { decoding = err } }))
      elseif self.pending[head] == nil then
        self.json_ids[head], self.deadlines[head] = nil, nil      -- a late one: see await
      end
      return true
    end
    if code == "too_large" then
      -- Whose reply was dropped? CDP writes the id first.
      local id = tonumber(head and head:match('^%s*{%s*"id"%s*:%s*(%d+)'))
      if id and self.pending[id] == false then
        answer(self, id, errors.new("too_large", err))
      end
      return true
    end
    if code == "closed" then
      lost(self, err)
      return true
    end
    -- A signal came while the read waited: read again. (Lua code runs in
    -- between, so lua.c's Ctrl-C hook raises at once, not when the page
    -- answers.)
    if code == "interrupted" then return true end
    -- A transport that ended the connection over what it read (a
    -- websocket frame head declaring an impossible length): this read
    -- fails with protocol_error, and every later call with disconnected,
    -- as after any end of the connection. A pipe's message that is not
    -- JSON ends nothing: the next one is read.
    local t = self.transport
    if t.state and t:state() == "closed" then lost(self, err) end
    raise("protocol_error", "unreadable message from the browser: " .. tostring(err))
  end
  local id = msg.id
  if id ~= nil then
    local was = self.pending[id]
    if was == false then
      answer(self, id, msg)
    elseif was == nil then
      -- a late reply to a call that timed out: dropped, unless its caller
      -- left something to undo with it (await's on_late)
      self.json_ids[id], self.deadlines[id] = nil, nil
      local fn = self.late[id]
      if fn then
        self.late[id] = nil
        as_listener(self, fn, msg)
      end
    end    -- (else an Error stands for it already, its session ended: it keeps
           -- its deadline, for its caller or for the sweep to forget it)
  elseif msg.method then
    route_event(self, msg)
  end
  return true
end

-- wait_for(pred, deadline, id?) -> true once pred() is true, false at the
-- deadline; raises disconnected when the connection goes first. id: the
-- request whose reply pred waits for (await's), so that a task is woken by
-- its reply's id instead of its pred being asked at every read.
Conn.wait_for = waiting.wait_for
-- reside(driver?, host?), read_fds(), serve(): the standing watch (rt/host.lua)
Conn.reside, Conn.read_fds, Conn.serve = waiting.reside, waiting.read_fds, waiting.serve

-- Writes one message: blocking outside tasks; inside one, what does not fit
-- is queued and the task waits for the queue to drain.
function Conn:_write(text, deadline)
  local t = self.transport
  local task = current_task()
  -- (What the write took in is routed by the wait for the reply.)
  if not task or not t.flush then return t:send(text, deadline) end
  local ok, err, code = t:send(text, now())
  if ok or code ~= "timeout" then return ok, err, code end
  if not self:wait_for(function() return self.closed or t:queued() == 0 end, deadline) then
    return nil, "timed out writing to the browser", "timeout"
  end
  if self.closed then return nil, self.closed, "closed" end
  return true
end

-- An event whose decoding a caller's deadline bounds, as a reply's is:
-- prefix is how its text starts, written as the browser writes it, up to
-- its key (a WebMCP result: its method, then its invocation id; see the
-- core's recv_cdp, which knows no method), key what follows up to a
-- quote. expect_event(prefix, key, deadline) before waiting (one prefix
-- per connection: the first given); event_cut(key) -> the dt.Error its
-- decoding ran into, or nil; end_event(key, gave_up) when done: if the
-- caller gave up, one that still comes is cut at its first clock check and
-- dropped (sweep forgets the entry if none comes).
function Conn:expect_event(prefix, key, deadline)
  if self.event_prefix == nil then self.event_prefix = prefix end
  if prefix ~= self.event_prefix then
    raise("bad_argument", "expect_event: this connection reads keys after " .. self.event_prefix)
  end
  self.deadlines[key], self.cut[key] = deadline, false
end

function Conn:event_cut(key)
  return self.cut[key] or nil
end

function Conn:end_event(key, gave_up)
  self.cut[key] = nil
  self.deadlines[key] = gave_up and now() or nil
end

-- Processes whatever has arrived, without waiting for more. With
-- buffered_only, only what the transport already holds (no system call).
function Conn:poll(buffered_only)
  if buffered_only then
    if take_buffered(self) and next(self.waiters) then wake_waiters(self, true) end
    return
  end
  while not self.closed and pump(self, 0) do end
  if next(self.waiters) then wake_waiters(self, true) end
end

-- send_nowait(method, params, session): fire and forget; the reply, when
-- it comes, is dropped like a late one. For clean-up and for commands sent
-- from event listeners, which must not wait.
function Conn:send_nowait(method, params, session)
  if self.closed or (session and self.ended_sessions[session]) then return end
  local id = self.next_id
  self.next_id = id + 1
  local msg = { id = id, method = method, params = params, sessionId = session }
  -- A deadline of now: what does not fit in the pipe stays queued and goes
  -- out with the next write, so this never waits.
  local ok, _, code = self.transport:send(encode_out(msg), now())
  if not ok and code == "closed" then lost(self, "the browser closed the connection") end
  hand_over(self)                   -- no wait follows: route what the write took in
end

-- await(id, deadline, method) -> result; raises on error, timeout, loss
-- Is the reply to request id there (or its Error)?
local function reply_arrived(pending, id) return pending[id] ~= false end

-- A caller that sent several requests and met an error awaiting the first
-- never awaits the others: their replies would wait in pending for ever
-- (200 discoveries cut short by their timeout left 425). So every
-- SWEEP_EVERY awaits, the requests whose deadline passed SWEEP_GRACE
-- seconds ago are forgotten; a reply that comes for one later is dropped,
-- as a late one is. keep: the id being awaited, which is never forgotten.
local SWEEP_EVERY, SWEEP_GRACE = 64, 10

local function sweep(self, keep)
  self.awaits = 0
  local too_old = now() - SWEEP_GRACE
  local pending, sessions, json_ids, deadlines = self.pending, self.pending_session, self.json_ids,
    self.deadlines
  for id, deadline in pairs(deadlines) do
    if deadline < too_old and id ~= keep then
      pending[id], sessions[id], json_ids[id], deadlines[id] = nil, nil, nil, nil
    end
  end
  for id, deadline in pairs(json_ids) do
    if deadline ~= true and deadline < too_old and id ~= keep then
      pending[id], sessions[id], json_ids[id] = nil, nil, nil
    end
  end
end

-- on_late(msg): for a request whose effect must be undone if its caller
-- gives up (a target created for a page the caller will never get): called
-- with the reply when await fails with it in hand or it comes later. It
-- must not wait (send_nowait).
function Conn:await(id, deadline, method, on_late)
  local pending = self.pending
  local n = self.awaits + 1
  self.awaits = n
  if n >= SWEEP_EVERY then sweep(self, id) end
  if pending[id] == false then
    local ok, got
    if next(self.waiters) == nil and current_task() == nil then
      -- the common case of a script: nothing else to look after
      ok, got = pcall(read_until, self, reply_arrived, pending, id, deadline)
    else
      ok, got = pcall(self.wait_for, self, function() return pending[id] ~= false end, deadline, id)
    end
    if not ok or not got then
      -- Timed out, cancelled or disconnected: a late reply will be dropped,
      -- and if large, decoding it stops at once (the first clock check),
      -- whoever reads it: its deadline is now. Unless on_late wants it;
      -- sweep forgets the entries if no reply comes.
      local msg = pending[id]
      if on_late then
        if msg == false then
          self.late[id] = on_late
        elseif type(msg) == "table" and not errors.is_error(msg) then
          pcall(on_late, msg)
        end
      end
      pending[id] = nil
      self.pending_session[id] = nil
      if msg == false and not on_late then
        local t = now()
        if self.json_ids[id] ~= nil then self.json_ids[id] = t end
        if self.deadlines[id] ~= nil then self.deadlines[id] = t end
      else
        self.json_ids[id] = nil
        self.deadlines[id] = nil
      end
      if not ok then error(got, 0) end
      raise("timeout", (method or "call") .. " timed out")
    end
  end
  local msg = pending[id]
  pending[id] = nil
  self.pending_session[id] = nil
  self.json_ids[id] = nil
  self.deadlines[id] = nil
  if msg == nil then
    raise("protocol_error", "no call with id " .. tostring(id) .. " is waiting")
  end
  if errors.is_error(msg) then
    if msg.details and msg.details.decoding then             -- see pump: name the call
      msg.message = (method or "call") .. ": " .. msg.message
    end
    error(msg, 0)
  end
  local e = msg.error
  if e then
    raise("protocol_error", (method or "call") .. ": " .. tostring(e.message),
      { details = { code = e.code, message = e.message, data = e.data, method = method } })
  end
  return msg.result
end

-- keep(id): the reply to request id stays until awaited; the sweep, which
-- forgets requests whose deadline passed long ago, leaves it alone
function Conn:keep(id)
  self.deadlines[id] = nil
end

-- forget(id): nobody will await request id (its caller went away): a
-- reply that comes is dropped, as a late one is, and nothing of it stays
function Conn:forget(id)
  self.pending[id], self.pending_session[id], self.json_ids[id], self.deadlines[id] = nil, nil, nil, nil
end

-- waiting(id) -> true while request id has no reply and its caller has
-- not given up
function Conn:waiting(id)
  return self.pending[id] == false
end

-- waiting_before(session, id) -> true while a request sent on that session
-- before request id waits for its reply within its deadline (one a caller
-- left unawaited when it failed, its deadline past, does not count)
function Conn:waiting_before(session, id)
  local pending, deadlines, json_ids, t = self.pending, self.deadlines, self.json_ids, now()
  for other, s in pairs(self.pending_session) do
    if s == session and other < id and pending[other] == false then
      local d = deadlines[other] or json_ids[other]
      if type(d) ~= "number" or d > t then return true end
    end
  end
  return false
end

-- fail_pending(session, err): every request still waiting for a reply on
-- that session (nil: the browser's) fails with err (a dt.Error) at once, e.g.
-- when its target crashed. Safe to call from an event listener.
function Conn:fail_pending(session, err)
  local want = session or ""
  for id, s in pairs(self.pending_session) do
    if s == want and self.pending[id] == false then answer(self, id, err) end
  end
  if next(self.waiters) then wake_waiters(self, true) end
end

-- end_session(session, err): the session is gone for good (its page was
-- closed or detached): what waits on it fails with err now, and what is
-- sent to it later fails with err at once (no reply would ever come), for
-- as long as the caller keeps err (see ended_sessions).
function Conn:end_session(session, err)
  self.ended_sessions[session] = err
  self:fail_pending(session, err)
end

-- call(method, params?, opts?) -> result. opts: session, timeout.
function Conn:call(method, params, opts)
  local deadline = self:deadline(opts)
  local session = opts and opts.session
  local id = self:send(method, params, session, deadline)
  return self:await(id, deadline, method)
end

function Conn:close()
  lost(self, "closed by the caller")
  local drivers = {}
  for d in pairs(self.watches) do drivers[#drivers + 1] = d end
  unwatch_all(self)
  -- A request still waiting (a task's) fails with disconnected when its
  -- task runs again.
  local gone
  for id, v in pairs(self.pending) do
    if v == false then
      gone = gone or errors.new("disconnected", "the browser connection is closed: closed by the caller")
      answer(self, id, gone)
    end
  end
  local t = self.transport
  if t then t:close() end
  -- Closed from the program, outside the loop: the loop finishes closing
  -- the watches (see loop.lua).
  for _, d in ipairs(drivers) do tasks.finish_closes(d) end
end

waiting.bind(pump, lost, disconnected)

M.Connection = Conn
return M
