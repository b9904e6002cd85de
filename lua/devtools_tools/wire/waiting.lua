-- devtools_tools.wire.waiting: every wait on a connection (wire/cdp.lua).
-- Outside a task the caller reads the transport itself until its reply
-- (or its condition) is there, reading the other connections the host
-- serves meanwhile. Inside a task (devtools_tools.rt.task) the caller
-- registers a waiter and suspends; the connection then watches the
-- transport's descriptors on the task's loop, and whatever reads (that
-- watch, or a blocking caller) routes replies to their waiters and wakes
-- them. On a loop that runs on its own the connection keeps a standing
-- watch, so its events are read whenever the loop turns (rt/host.lua).
--
-- What it must never do: resume a task from inside another wait's
-- bookkeeping (wakes from there go through the loop), leave a watch up
-- that keeps a loop alive with nothing waiting, or keep a connection the
-- program let go of (a watch's callbacks hold it weakly).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local errors = require "devtools_tools.base.errors"
local core = require "devtools_tools.core"
local tasks = require "devtools_tools.rt.task"
local wait = require "devtools_tools.rt.wait"

local now = core.now
local current_task = tasks.current
local type, pairs, ipairs, next, setmetatable, getmetatable, pcall, error, select =
      type, pairs, ipairs, next, setmetatable, getmetatable, pcall, error, select
-- newproxy: LuaJIT and 5.1 only (nil on Lua 5.4), where a table's __gc never runs
local newproxy = newproxy

local M = {}

-- What the connection gives its waits (wire/cdp.lua, once, as it loads):
-- pump(self, deadline) reads and routes one message; lost(self, why) marks
-- the connection gone; disconnected(self) raises that it is.
local pump, lost, disconnected
function M.bind(p, l, d)
  pump, lost, disconnected = p, l, d
end

local wake_waiters, rearm, serve_others

---------------------------------------------------------------- waiting

-- Past the deadline a wait still takes what has already arrived (a
-- deadline of now() means "is it there yet?"), but at most LATE_READS
-- messages: a peer that streams without pause cannot hold it.
local LATE_READS = 256

-- M.read_until(self, ready, a, b, deadline) -> true once ready(a, b), false
-- at the deadline: the caller reads the transport itself. ready takes its
-- state as arguments, so a call's wait makes no closure.

function M.read_until(self, ready, a, b, deadline)
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
function M.take_buffered(self)
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
function M.hand_over(self)
  if self.dispatching > 0 or not next(self.waiters) then return end
  wake_waiters(self, true, as_fault(pcall(M.take_buffered, self)))
end

-- Blocking: read until pred() or the deadline. Tasks waiting meanwhile on
-- this connection are woken through their loop afterwards.
local function wait_blocking(self, pred, deadline)
  local ok, res = pcall(M.read_until, self, call_pred, pred, nil, deadline)
  M.hand_over(self)
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
    if self.dispatching == 0 and M.take_buffered(self) and next(self.waiters) then
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
function M.wait_for(self, pred, deadline, id)
  local task = current_task()
  if task then return wait_in_task(self, task, pred, deadline, id) end
  return wait_blocking(self, pred, deadline)
end

-- Wakes the tasks whose condition now holds (or all, when the connection
-- is gone or a fault is to be reported). later: through the loop, because
-- we are inside someone else's wait.
function M.wake_waiters(self, later, fault)
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
    wake_waiters(self, false, as_fault(pcall(M.take_buffered, self)))
  end)
end

local function unwatch_one(self, w)
  w.done = true
  self.watches[w.driver] = nil
  local d = w.driver
  for _, h in pairs(w.handles) do d:unwatch(h) end
end

function M.unwatch_all(self)
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
function M.rearm(self)
  local t = self.transport
  if self.closed or not t then
    M.unwatch_all(self)
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
function M.reside(self, driver, host)
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
function M.read_fds(self)
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
function M.serve(self)
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


wake_waiters, rearm = M.wake_waiters, M.rearm

return M
