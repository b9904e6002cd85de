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
-- Waiting has two faces and one reader. Outside a task the caller reads the
-- transport itself until its reply (or its condition) is there. Inside a
-- task (devtools_tools.rt.task) the caller registers a waiter and suspends; the
-- connection then watches the transport's descriptors on the task's loop,
-- and whatever reads (that watch, or a blocking caller) routes replies to
-- their waiters and wakes them. So many tasks share one connection.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local errors = require "devtools_tools.base.errors"
local json = require "devtools_tools.base.json"
local controls = require "devtools_tools.base.controls"
local options = require "devtools_tools.base.options"
local debug_env = require "devtools_tools.base.debug"
local core = require "devtools_tools.core"
local tasks = require "devtools_tools.rt.task"
local wait = require "devtools_tools.rt.wait"

local now = core.now
local raise = errors.raise
local encode = json.encode
-- What we send: a NaN or an infinity in a message (a tool's arguments, a
-- page:cdp() parameter) is refused, not sent as null.
local encode_out = json.encode_finite
local current_task = tasks.current
local type, tonumber, pairs, ipairs, next, setmetatable, getmetatable, tostring, pcall, error =
      type, tonumber, pairs, ipairs, next, setmetatable, getmetatable, tostring, pcall, error
local sformat, select, byte = string.format, select, string.byte

local M = {}

-- The debug log (DEVTOOLS_TOOLS_DEBUG=cdp, or dt.debug("cdp")): one line per
-- message sent or received, on stderr (log.out: anything with a write
-- method). Off, it costs one field test per message. It is process-wide by
-- nature, like the environment variable.
M.log = { on = debug_env.wants("cdp"),
  width = 400, t0 = now(), out = io.stderr }

-- A log line is the JSON of a message, whose strings a page wrote, on a
-- terminal: what could drive the terminal or disguise the line comes out
-- escaped, visibly (base/controls.lua): a hidden character as \uXXXX,
-- which inside a JSON string reads as the same value (a tab too: a line is
-- one line, and a tab hides among spaces); a byte that is not UTF-8 as
-- \xNN, which JSON never writes.
local function clean_log(s)
  return controls.clean(s, controls.u_escape, controls.x_escape)
end
M.clean_log = clean_log

local function log_line(dir, session, text)
  local L = M.log
  if #text > L.width then
    -- cut before a character the width would split: the cut shows as the
    -- count, never as bytes that are not UTF-8
    local cut = L.width
    for _ = 1, 3 do
      local b = byte(text, cut + 1)
      if b < 0x80 or b > 0xBF then break end
      cut = cut - 1
    end
    text = text:sub(1, cut) .. sformat("... (%d bytes)", #text)
  end
  L.out:write(clean_log(sformat("devtools_tools cdp %9.3f %s %s%s", now() - L.t0, dir,
    session and ("[" .. session:sub(1, 8) .. "] ") or "", text)), "\n")
end

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

local wake_waiters, rearm

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

local function log_received(msg)
  local ok, text = pcall(encode, msg)
  log_line("<-", msg.sessionId, ok and text or "(a message that cannot be shown)")
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

---------------------------------------------------------------- waiting

-- Past the deadline a wait still takes what has already arrived (a
-- deadline of now() means "is it there yet?"), but at most LATE_READS
-- messages: a peer that streams without pause cannot hold it.
local LATE_READS = 256

-- read_until(self, ready, a, b, deadline) -> true once ready(a, b), false
-- at the deadline: the caller reads the transport itself. ready takes its
-- state as arguments, so a call's wait makes no closure.
local serve_others                   -- (defined with the standing watch, below)

local function read_until(self, ready, a, b, deadline)
  local late = 0
  while not ready(a, b) do
    if self.closed then disconnected(self) end
    if now() >= deadline then
      late = late + 1
      if late > LATE_READS then return false end
    end
    -- Other connections of the program are served meanwhile (a browser's
    -- paused frame waits for no call on another): the wait is on their
    -- descriptors and ours; ours ready, what it has is read at once.
    local others = self.host and self.host:others(self)
    if others and not self.transport:pending() and now() < deadline then
      if serve_others(self, others, deadline) then pump(self, 0) end
    elseif not pump(self, deadline) then
      return ready(a, b)
    end
  end
  return true
end

local function call_pred(pred) return pred() end

-- Routes what the transport already holds, without a system call. A write
-- (a websocket services its socket both ways) or a read that stopped at its
-- own reply may have taken in messages for someone else; the socket is then
-- no longer readable, so no read event would bring them to their tasks.
-- Returns true if it routed any.
local function take_buffered(self)
  local t, n = self.transport, 0
  while not self.closed and t:pending() do
    pump(self, 0)
    n = n + 1
  end
  return n > 0
end

-- as_fault(pcall(...)) -> nil, or the failure as the dt.Error the waiting
-- tasks are woken with.
local function as_fault(ok, err)
  if ok then return nil end
  if not errors.is_error(err) then err = errors.new("protocol_error", tostring(err)) end
  return err
end

-- After a write or a blocking read: the tasks whose replies came in with
-- it are woken through their loop (we are inside someone else's work).
-- Not inside an event listener: the read that called it routes the rest
-- when the listener returns, so events keep their order.
local function hand_over(self)
  if self.dispatching > 0 or not next(self.waiters) then return end
  wake_waiters(self, true, as_fault(pcall(take_buffered, self)))
end

-- Blocking: read until pred() or the deadline. Tasks waiting meanwhile on
-- this connection are woken through their loop afterwards.
local function wait_blocking(self, pred, deadline)
  local ok, res = pcall(read_until, self, call_pred, pred, nil, deadline)
  hand_over(self)
  if not ok then error(res, 0) end
  return res
end

-- Past the deadline inside a task: take what has already arrived (a
-- blocking wait whose deadline has passed reads at most LATE_READS
-- messages, never waiting), then answer.
local function late_reads(self, pred)
  return wait_blocking(self, pred, 0)
end

-- A waiter is added and removed through these, which count the waiters
-- of each loop (rearm asks which loops have any, once per wait: with
-- hundreds of tasks waiting, going through them all each time showed).
local function add_waiter(self, w)
  self.waiters[w] = true
  local id = w.id
  if id ~= nil and self.keyed[id] == nil then self.keyed[id] = w
  else w.id = nil; self.unkeyed[w] = true end
  local d = w.task.driver
  self.waiting_on[d] = (self.waiting_on[d] or 0) + 1
end

local function remove_waiter(self, w)
  if not self.waiters[w] then return end
  self.waiters[w] = nil
  if w.id ~= nil then self.keyed[w.id] = nil else self.unkeyed[w] = nil end
  local d = w.task.driver
  local n = self.waiting_on[d] - 1
  self.waiting_on[d] = n > 0 and n or nil
end

-- In a task: register, watch the transport on the task's loop, suspend.
local function wait_in_task(self, task, pred, deadline, id)
  while true do
    if self.dispatching == 0 and take_buffered(self) and next(self.waiters) then
      wake_waiters(self, true)
    end
    if pred() then return true end
    if self.closed then disconnected(self) end
    if now() >= deadline then return late_reads(self, pred) end
    local s = wait.suspension()
    local w = { task = task, s = s, pred = pred, id = id }
    add_waiter(self, w)
    local armed, why = pcall(rearm, self)
    if not armed then                    -- the loop refused the watch: leave nothing behind
      remove_waiter(self, w)
      pcall(rearm, self)
      error(why, 0)
    end
    local ok, reason = pcall(wait.suspend, s, deadline)
    remove_waiter(self, w)
    rearm(self)
    if not ok then error(reason, 0) end                -- cancelled
    if type(reason) == "table" then error(reason, 0) end   -- a fault while reading
    if reason == "timeout" then
      -- The deadline's timer: what has arrived but was not read yet still
      -- counts (as past the deadline above).
      return late_reads(self, pred)
    end
  end
end

-- wait_for(pred, deadline, id?) -> true once pred() is true, false at the
-- deadline; raises disconnected when the connection goes first. id: the
-- request whose reply pred waits for (await's), so that a task is woken by
-- its reply's id instead of its pred being asked at every read.
function Conn:wait_for(pred, deadline, id)
  local task = current_task()
  if task then return wait_in_task(self, task, pred, deadline, id) end
  return wait_blocking(self, pred, deadline)
end

-- Wakes the tasks whose condition now holds (or all, when the connection
-- is gone or a fault is to be reported). later: through the loop, because
-- we are inside someone else's wait.
wake_waiters = function(self, later, fault)
  local ready, n = {}, 0
  if fault or self.closed then
    for w in pairs(self.waiters) do
      n = n + 1
      ready[n] = w
    end
  else
    local answered = self.answered
    if answered[1] ~= nil then
      self.answered = {}
      local keyed = self.keyed
      for i = 1, #answered do
        local w = keyed[answered[i]]
        if w and w.pred() then
          n = n + 1
          ready[n] = w
        end
      end
    end
    for w in pairs(self.unkeyed) do
      if w.pred() then
        n = n + 1
        ready[n] = w
      end
    end
  end
  for i = 1, n do
    local w = ready[i]
    remove_waiter(self, w)
    if later then w.s:wake_later(fault or "ready")
    else w.s:wake(fault or "ready") end
  end
end

-- Reads what the transport has (bounded, so timers still run while a peer
-- floods us) and wakes whoever it was for. Runs on the loop.
local BATCH = 256

-- in_callback(self, fn): runs fn as one of this connection's loop
-- callbacks: the tasks it wakes run inside it, and their watch is brought
-- up to date once, at its end (see rearm).
local function in_callback(self, fn)
  self.in_callback = self.in_callback + 1
  local ok, err = pcall(fn)
  self.in_callback = self.in_callback - 1
  rearm(self)
  if not ok then error(err, 0) end
end

local function on_readable(self)
  in_callback(self, function()
    local t = self.transport
    wake_waiters(self, false, as_fault(pcall(function()
      local n = 0
      while n < BATCH and not self.closed and pump(self, 0) do n = n + 1 end
      local driver = next(self.watches)
      if n >= BATCH and not self.closed and t:pending() and driver then
        driver:timer(0, function() if next(self.watches) then on_readable(self) end end)
      end
    end)))
  end)
end

local function on_writable(self)
  in_callback(self, function()
    local t = self.transport
    local ok, _, code = t:flush(0)
    if not ok and code == "closed" then lost(self, "the browser closed the connection") end
    -- What the flush took in (a websocket's socket is served both ways).
    wake_waiters(self, false, as_fault(pcall(take_buffered, self)))
  end)
end

local function unwatch_one(self, w)
  w.done = true
  self.watches[w.driver] = nil
  local d = w.driver
  for _, h in pairs(w.handles) do d:unwatch(h) end
end

local function unwatch_all(self)
  for _, w in pairs(self.watches) do unwatch_one(self, w) end
end

local arm

-- Watches the transport's descriptors while tasks wait on it (and no
-- longer: an idle watch would keep a luv loop alive for ever), for writing
-- while bytes are queued; on the loop of each task that waits (nearly
-- always one: tasks keep the loop they started on, and a program may have
-- switched loops since).
--
-- Inside one of this connection's own loop callbacks, a task it woke
-- nearly always waits on it again before the callback returns (the next
-- of sequential calls): a watch nobody waits on is then left up until the
-- callback's end, instead of taken down and set up again for every call
-- (on libuv that was 7 system calls per descriptor, 3 descriptors).
rearm = function(self)
  local t = self.transport
  if self.closed or not t then
    unwatch_all(self)
    return
  end
  local resident = self.resident
  if not next(self.waiters) then
    if self.in_callback == 0 then
      for d, w in pairs(self.watches) do
        if d ~= resident then unwatch_one(self, w) end
      end
      if resident then arm(self, resident) end
    end
    return
  end
  local waiting_on = self.waiting_on
  for d, w in pairs(self.watches) do
    if not waiting_on[d] and d ~= resident then unwatch_one(self, w) end
  end
  for d in pairs(waiting_on) do
    if self.closed then break end
    arm(self, d)
  end
  if resident and not self.closed and not waiting_on[resident] then arm(self, resident) end
end

-- arm(self, driver): the watch of one loop, made or brought up to date.
-- A watch's callbacks hold the connection weakly, and a sentinel that only
-- the connection holds takes its watches down when the collector takes
-- it: a loop's handles must not keep a Browser that the program let go of
-- (its process object, which ends Chromium, then never would be collected).
local function sentinel(fn)
  if newproxy then                    -- (LuaJIT, 5.1: a table's __gc never runs)
    local p = newproxy(true)
    getmetatable(p).__gc = fn
    return p
  end
  return setmetatable({}, { __gc = fn })
end

arm = function(self, driver)
  local t = self.transport
  local w = self.watches[driver]
  if not w then
    local rfd, wfd
    if t.fds then rfd, wfd = t:fds() else rfd = t:fd() end
    if not rfd then
      lost(self, "the browser closed the connection")     -- wakes the waiters
      return
    end
    w = { driver = driver, handles = {}, events = {}, rfd = rfd, wfd = wfd, held = {},
      ref = setmetatable({ conn = self }, { __mode = "v" }) }
    local handles, ref = w.handles, w.ref
    w.sentinel = sentinel(function()
      if w.done then return end
      w.done = true
      for _, h in pairs(handles) do pcall(driver.unwatch, driver, h) end
    end)
    self.watches[driver] = w
    w.handles.r = driver:watch(rfd, "r", function(ev)
      local c = ref.conn
      if not c then return end
      if ev ~= "w" then on_readable(c) end
      if ev ~= "r" and c.watches[driver] then on_writable(c) end
    end)
    w.events.r = "r"
    local proc = self.process
    local xfd = proc and proc.exit_fd and proc:exit_fd()
    if xfd then
      w.handles.x = driver:watch(xfd, "r", function()
        local c = ref.conn
        if c and not c.process:running() then
          on_readable(c)                             -- what it wrote before it went
          in_callback(c, function()
            lost(c, "the browser exited")
            wake_waiters(c, false)
          end)
        end
      end)
    end
  end
  -- The child's stderr is watched while it is open: the transport closes it
  -- at its end of file, and a closed descriptor must not stay watched.
  local efd
  if t.fds then efd = select(3, t:fds()) end
  if efd ~= w.efd then
    if w.handles.e then driver:unwatch(w.handles.e); w.handles.e = nil; w.held.e = nil end
    w.efd = efd
    local ref = w.ref
    if efd then w.handles.e = driver:watch(efd, "r", function() if ref.conn then on_readable(ref.conn) end end) end
  end
  -- Writing: only while bytes wait in the transport's queue.
  local want_w = t.queued and t:queued() > 0 and w.wfd ~= nil
  if w.wfd == w.rfd then
    local ev = want_w and "rw" or "r"
    if w.events.r ~= ev then driver:modify(w.handles.r, ev); w.events.r = ev end
  elseif want_w and not w.handles.w then
    local ref = w.ref
    w.handles.w = driver:watch(w.wfd, "w", function() if ref.conn then on_writable(ref.conn) end end)
  elseif not want_w and w.handles.w then
    driver:unwatch(w.handles.w)
    w.handles.w, w.held.w = nil, nil
  end
  -- A standing watch (the resident driver's) keeps the loop alive only
  -- while a task of that loop waits on the connection.
  if driver.ref then
    local held = self.waiting_on[driver] ~= nil
    for k, h in pairs(w.handles) do
      if w.held[k] ~= held then
        driver:ref(h, held)
        w.held[k] = held
      end
    end
  end
end

-- ---- the standing watch: served whether or not anyone calls --------------------

-- reside(driver?, host?): the connection keeps a read watch on driver for
-- as long as it is open (nil: none), so that its events are read whenever
-- that loop turns (a paused target is resumed, the page's records are
-- kept) with no call of ours running; the watch keeps the loop alive only
-- while a task of that loop waits here. host (rt/host.lua): the
-- connections served beside this one, which its blocking waits serve too.
function Conn:reside(driver, host)
  if host ~= nil then self.host = host end
  if self.resident == driver then return end
  local old = self.resident
  self.resident = driver
  if old and self.watches[old] and not self.waiting_on[old] then
    unwatch_one(self, self.watches[old])
    tasks.finish_closes(old)          -- (from outside the old loop: it finishes the close)
  end
  if self.in_callback == 0 then rearm(self) end
end

-- read_fds() -> the descriptors whose readiness means something came (the
-- browser's messages, a launched one's stderr), or nil once closed
function Conn:read_fds()
  local t = self.transport
  if self.closed or not t then return nil end
  local rfd, efd
  if t.fds then
    local _
    rfd, _, efd = t:fds()
  else
    rfd = t:fd()
  end
  if not rfd then return nil end
  return { rfd, efd }
end

-- serve(): reads and routes what has arrived, never waiting; the tasks
-- it has replies for are woken through their loop
function Conn:serve()
  self:poll()
end

-- serve_others(self, others, deadline) -> true once this connection has
-- something to read, false at the deadline: waits on its descriptors and
-- the others', serving each of the others that has something meanwhile.
serve_others = function(self, others, deadline)
  local mine = self:read_fds() or {}
  local fds, evs, owner, n = {}, {}, {}, 0
  for _, fd in ipairs(mine) do
    n = n + 1
    fds[n], evs[n] = fd, "r"
  end
  local own = n
  for _, c in ipairs(others) do
    for _, fd in ipairs(c:read_fds() or {}) do
      n = n + 1
      fds[n], evs[n], owner[n] = fd, "r", c
    end
  end
  while true do
    local left = deadline - now()
    if left <= 0 then return false end
    local ready = core.poll(fds, evs, left < math.huge and left or nil)
    local served, ours = {}, false
    for i in pairs(ready) do
      if i <= own then
        ours = true
      elseif not served[owner[i]] then
        served[owner[i]] = true
        pcall(owner[i].serve, owner[i])
      end
    end
    if ours then return true end
    if next(served) ~= nil then
      -- (a connection served may have closed: its descriptors go)
      return serve_others(self, others, deadline)
    end
  end
end

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

M.Connection = Conn
return M
