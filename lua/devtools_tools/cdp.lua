-- devtools_tools.cdp: one Chrome DevTools Protocol connection.
--
-- Correlates commands and replies by id, routes events to the session that
-- owns them (flattened target sessions: `sessionId` at the top level) and
-- puts a deadline on every wait. It speaks CDP over any transport object with
-- send(msg, deadline) and recv(deadline, decode) (the C transports, or a fake
-- in unit specs); it never touches a socket itself and knows nothing of pages
-- or tools.
--
-- Rules it keeps: a reply that arrives after its caller timed out is dropped;
-- once the transport is gone every waiting and later call fails with
-- `disconnected`; event listeners run inside the wait loop and must not wait
-- on the connection themselves.

local errors = require "devtools_tools.errors"
local json = require "devtools_tools.json"
local core = require "devtools_tools.core"

local now = core.now
local raise = errors.raise
local encode = json.encode
local type, tonumber, pairs, next, setmetatable, tostring =
      type, tonumber, pairs, next, setmetatable, tostring

local M = {}

local Conn = {}
Conn.__index = Conn
Conn.__name = "devtools_tools.Connection"

-- new(transport, opts) -> Connection. opts.timeout: default seconds per call.
function M.new(transport, opts)
  opts = opts or {}
  return setmetatable({
    transport = transport,
    timeout = opts.timeout or 30,
    next_id = 1,
    -- id -> false while waiting, then the reply message (or an Error)
    pending = {},
    -- id -> the session a waiting request was sent on ("" for the browser)
    pending_session = {},
    -- session id ("" for the browser) -> function(method, params, session)
    listeners = {},
    closed = nil,           -- a message once the connection is gone
    -- ids of replies whose result is a JSON text to decode in place: the
    -- transport decodes it straight into result.result.json
    json_ids = {},
  }, Conn)
end

-- deadline(opts) -> absolute deadline for one call
function Conn:deadline(opts)
  local t = opts and opts.timeout or self.timeout
  if type(t) ~= "number" or t ~= t or t < 0 then
    raise("bad_argument", "timeout must be a non-negative number of seconds, got " .. tostring(t))
  end
  return now() + t
end

function Conn:listen(session, fn)
  self.listeners[session or ""] = fn
end

local function disconnected(self)
  raise("disconnected", "the browser connection is closed: " .. self.closed)
end

-- The transport went away: every waiter learns it from `closed`.
local function lost(self, message)
  self.closed = self.closed or message or "connection lost"
end

-- send(method, params, session, deadline, json_reply) -> id, without
-- waiting for the reply. json_reply: the reply's result.result.value is a
-- JSON text (returnByValue of a string the page built); the transport
-- decodes it in place into result.result.json (or result.result.json_error).
function Conn:send(method, params, session, deadline, json_reply)
  if self.closed then disconnected(self) end
  local id = self.next_id
  self.next_id = id + 1
  local msg
  if session then
    msg = { id = id, method = method, params = params, sessionId = session }
  else
    msg = { id = id, method = method, params = params }
  end
  local text = encode(msg)
  self.pending[id] = false
  self.pending_session[id] = session or ""
  local ok, err, code = self.transport:send(text, deadline or (now() + self.timeout))
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
  if json_reply then self.json_ids[id] = true end
  return id
end

local function route_event(self, msg)
  local fn = self.listeners[msg.sessionId or ""]
  if fn then fn(msg.method, msg.params, msg.sessionId) end
end

-- Reads and routes one message. Returns false on timeout.
local function pump(self, deadline)
  local msg, err, code, head = self.transport:recv_cdp(deadline, self.json_ids)
  if msg == nil then
    if code == "timeout" then return false end
    if code == "too_large" then
      -- Whose reply was dropped? CDP writes the id first.
      local id = tonumber(head and head:match('^%s*{%s*"id"%s*:%s*(%d+)'))
      if id and self.pending[id] == false then
        self.pending[id] = errors.new("too_large", err)
      end
      return true
    end
    if code == "closed" then
      lost(self, err)
      return true
    end
    raise("protocol_error", "unreadable message from the browser: " .. tostring(err))
  end
  local id = msg.id
  if id ~= nil then
    if self.pending[id] == false then self.pending[id] = msg end
    -- else: a late reply to a call that timed out: dropped.
  elseif msg.method then
    route_event(self, msg)
  end
  return true
end

-- Handles events until the deadline or until pred() is true. Returns true
-- if pred became true, false on timeout.
function Conn:wait_for(pred, deadline)
  while not pred() do
    if self.closed then disconnected(self) end
    if not pump(self, deadline) then return false end
  end
  return true
end

-- Processes whatever has arrived, without waiting for more. With
-- buffered_only, only what the transport already holds (no system call).
function Conn:poll(buffered_only)
  if buffered_only then
    local t = self.transport
    while not self.closed and t:pending() do pump(self, 0) end
    return
  end
  while not self.closed and pump(self, 0) do end
end

-- send_nowait(method, params, session): fire and forget; the reply, when
-- it comes, is dropped like a late one. For clean-up and for commands sent
-- from event listeners, which must not wait.
function Conn:send_nowait(method, params, session)
  if self.closed then return end
  local id = self.next_id
  self.next_id = id + 1
  local msg = { id = id, method = method, params = params, sessionId = session }
  -- A deadline of now: what does not fit in the pipe stays queued and goes
  -- out with the next write, so this never waits.
  local ok, _, code = self.transport:send(encode(msg), now())
  if not ok and code == "closed" then lost(self, "the browser closed the connection") end
end

-- await(id, deadline, method) -> result; raises on error, timeout, loss
function Conn:await(id, deadline, method)
  local pending = self.pending
  while pending[id] == false do
    if self.closed then
      pending[id] = nil
      self.pending_session[id] = nil
      self.json_ids[id] = nil
      disconnected(self)
    end
    if not pump(self, deadline) then
      pending[id] = nil            -- a late reply will be dropped
      self.pending_session[id] = nil
      self.json_ids[id] = nil
      raise("timeout", (method or "call") .. " timed out")
    end
  end
  local msg = pending[id]
  pending[id] = nil
  self.pending_session[id] = nil
  self.json_ids[id] = nil
  if msg == nil then
    raise("protocol_error", "no call with id " .. tostring(id) .. " is waiting")
  end
  if errors.is_error(msg) then error(msg, 0) end
  local e = msg.error
  if e then
    raise("protocol_error", (method or "call") .. ": " .. tostring(e.message),
      { details = { code = e.code, message = e.message, data = e.data, method = method } })
  end
  return msg.result
end

-- fail_pending(session, err): every request still waiting for a reply on
-- that session (nil: the browser's) fails with err (a dt.Error) at once, e.g.
-- when its target crashed. Safe to call from an event listener.
function Conn:fail_pending(session, err)
  local want = session or ""
  for id, s in pairs(self.pending_session) do
    if s == want and self.pending[id] == false then self.pending[id] = err end
  end
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
  local t = self.transport
  if t then t:close() end
  for id in pairs(self.pending) do self.pending[id] = nil end
  for id in pairs(self.pending_session) do self.pending_session[id] = nil end
end

M.Connection = Conn
return M
