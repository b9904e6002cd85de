-- devtools_tools.rt.task: tasks, coroutines the library's waits yield from.
--
-- Code inside a task reads sequentially; each wait (a CDP reply, a write
-- that does not fit, navigation, a process exit) suspends the task with a
-- deadline, and the loop's driver (devtools_tools.rt.loop) resumes it when the
-- connection has what it waited for, when the deadline passes, or when the
-- task is cancelled. Outside a task the same calls block, as a script
-- expects: the waiting code asks `current()` which of the two it is and
-- nothing else in the library needs to know.
--
-- What it must never do: resume a task from inside another wait's
-- bookkeeping (wakes that come from there go through the loop), or let a
-- wait have no deadline (a task that nothing will wake would hang its
-- loop's caller).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local shown = require("devtools_tools.base.options").shown     -- a bad value, as a message names it

local now = core.now
local raise = errors.raise
local co_create, co_resume, co_running, co_status, co_yield =
      coroutine.create, coroutine.resume, coroutine.running, coroutine.status, coroutine.yield
local type, select, setmetatable, getmetatable, ipairs, pairs, error, xpcall, pcall, rawequal =
      type, select, setmetatable, getmetatable, ipairs, pairs, error, xpcall, pcall, rawequal
local unpack = table.unpack or unpack
local traceback = debug.traceback
local math_huge, math_max = math.huge, math.max

local M = {}

-- coroutine -> Task, for `current()`. A finished task's coroutine is
-- dropped from here when it ends, and a forgotten one (never resumed
-- again: tasks waiting for each other) must not stay alive through this
-- table. Weak values as well as keys: the Task holds its coroutine, and
-- LuaJIT's weak keys are no ephemerons, so with weak keys alone such a
-- task, and all its stack held (a Browser, whose Chromium the collector
-- would end), stayed for good there.
local by_co = setmetatable({}, { __mode = "kv" })

-- What a task yields when it waits; anything else it yields (the user's own
-- coroutine.yield) is resumed on the next turn of the loop.
local WAIT = {}

local Task = {}
Task.__index = Task
Task.__name = "devtools_tools.Task"
M.Task = Task

-- current() -> the Task running now, or nil outside tasks.
function M.current()
  local co = co_running()
  return co and by_co[co] or nil
end

local function pack(...) return { n = select("#", ...), ... } end

-- A string error gets the task's traceback; any other value (a dt.Error,
-- the user's own error object) passes untouched.
local function handler(e)
  if type(e) == "string" then return traceback(e, 2) end
  return e
end

local finish

-- Runs the task until it waits again or ends.
local function resume(task, ...)
  local ok, r = co_resume(task.co, ...)
  if co_status(task.co) == "dead" then
    if ok then
      finish(task, r[1], r)
    else
      finish(task, false, { n = 2, false, r })
    end
  elseif r ~= WAIT then
    -- A plain coroutine.yield inside the task: carry on at the next turn.
    task.driver:timer(0, function() if not task.done then resume(task) end end)
  end
end

finish = function(task, ok, r)
  task.done = true
  by_co[task.co] = nil
  if ok then
    task.results = { n = r.n - 1, unpack(r, 2, r.n) }
  else
    task.failed = true      -- the error may be any value, nil too
    task.error = r[2]
  end
  -- on_done runs on the loop, never inside the call that ended the task:
  -- dt.async, for a function that never waited (whose caller has not got
  -- the Task yet), or task:cancel. Scheduled before the joiners' wakes, so
  -- that a wait returns after it ran.
  local cb = task.on_done
  if cb then
    task.on_done = nil
    task.notifying = true
    task.driver:timer(0, function()
      if not task.notifying then return end   -- once, whatever the driver does
      task.notifying = nil
      if ok then
        cb(true, unpack(task.results, 1, task.results.n))
      else
        cb(false, task.error)
      end
    end)
  end
  local joiners = task.joiners
  task.joiners = nil
  for _, j in ipairs(joiners or {}) do j.task:_wake_later(j.seq, "ready") end
end

-- Has the task ended, and its on_done run? (A driver that cannot be turned
-- from outside a task runs on_done when its own loop turns.)
local function settled(task)
  return task.done and not (task.notifying and task.driver.step)
end

-- Tasks started inside tasks that are starting: each start resumes a
-- coroutine inside the one before, and Lua 5.4's C stack ends at about 100
-- of them ("C stack overflow"). Past this many, a task starts on the
-- loop's next turn instead.
local MAX_NESTED_STARTS = 32
local starting = 0

-- spawn(driver, fn, on_done?) -> Task, already running until its first wait
-- (or, started deep inside others starting, at the loop's next turn).
function M.spawn(driver, fn, on_done, ...)
  local task = setmetatable({ driver = driver, done = false, on_done = on_done,
    seq = 0 }, Task)
  local args = pack(...)
  task.co = co_create(function()
    return pack(xpcall(function() return fn(unpack(args, 1, args.n)) end, handler))
  end)
  by_co[task.co] = task
  if starting >= MAX_NESTED_STARTS then
    task.driver:timer(0, function() if not task.done and co_status(task.co) == "suspended" then resume(task) end end)
    return task
  end
  starting = starting + 1
  local ok, err = pcall(resume, task)
  starting = starting - 1
  if not ok then error(err, 0) end
  return task
end

-- suspend(deadline) -> "ready" | "timeout". Only the task itself calls it;
-- it raises `cancelled` when the task is (or gets) cancelled. A wake for
-- an older suspension is ignored (seq tells them apart).
function Task:suspend(deadline)
  if self.cancelled then raise("cancelled", "the task was cancelled") end
  local seq = self.seq + 1
  self.seq = seq
  self.waiting = seq
  local timer
  if deadline and deadline < math_huge then
    timer = self.driver:timer(math_max(0, deadline - now()), function()
      timer = nil
      self:_wake(seq, "timeout")
    end)
  end
  local reason = co_yield(WAIT)
  self.waiting = nil
  if timer then self.driver:cancel(timer) end
  -- Cancelled while a wake was already on its way (a reply's, queued on
  -- the loop before another task's cancel): the cancel still wins, as
  -- cancel promised when it returned true.
  if reason == "cancelled" or self.cancelled then raise("cancelled", "the task was cancelled") end
  return reason
end

-- _wake(seq, reason): resumes the task now if it still waits in suspension
-- seq. Call it only from the loop (a driver callback), never from inside
-- another task or a blocking wait: use _wake_later there.
function Task:_wake(seq, reason)
  if self.waiting ~= seq or self.done then return end
  self.waiting = nil
  resume(self, reason)
end

function Task:_wake_later(seq, reason)
  self.driver:timer(0, function() self:_wake(seq, reason) end)
end

-- suspension() -> s | nil: the current task's next suspension (nil outside
-- tasks), for whoever will wake it (rt/wait.lua, wire/cdp.lua): s.task,
-- s:wake(reason) from the loop, s:wake_later(reason) from anywhere.
local Suspension = {}
Suspension.__index = Suspension

function M.suspension()
  local t = M.current()
  if not t then return nil end
  return setmetatable({ task = t, seq = t.seq + 1 }, Suspension)
end

function Suspension:wake(reason)
  self.task:_wake(self.seq, reason)
end

function Suspension:wake_later(reason)
  self.task:_wake_later(self.seq, reason)
end

-- cancel(): the task's pending wait (or its next one) raises `cancelled`,
-- and so does every later wait. Returns true if the task had not ended.
-- finish_closes(driver): on the way back to the program from outside any
-- task, the loop finishes closing what the task closed (see loop.lua).
local function finish_closes(driver)
  if driver.finish_closes and not M.current() then driver:finish_closes() end
end
M.finish_closes = finish_closes

function Task:cancel()
  if self.done then return false end
  self.cancelled = true
  local seq = self.waiting
  if seq then
    if M.current() then
      self:_wake_later(seq, "cancelled")
    else
      self:_wake(seq, "cancelled")
      finish_closes(self.driver)
    end
  end
  return true
end

-- check_timeout(what, t): t is nil or a number of seconds >= 0 (not NaN).
local function check_timeout(what, t)
  if t ~= nil and (type(t) ~= "number" or t ~= t or t < 0) then
    raise("bad_argument", what .. ": timeout must be a non-negative number of seconds, got "
      .. shown(t))
  end
end

local function outcome(task)
  if task.failed then error(task.error, 0) end
  local r = task.results
  return unpack(r, 1, r.n)
end

-- wait(timeout?) -> what the task's function returned, or raises its error.
-- Inside another task it suspends that task; outside, it runs the loop
-- until the task ends (a `timeout` dt.Error after timeout seconds; the task
-- itself goes on).
function Task:wait(timeout)
  check_timeout("wait", timeout)
  local me = M.current()
  if self.done and (me or settled(self)) then
    if not me then finish_closes(self.driver) end
    return outcome(self)
  end
  local deadline = timeout and (now() + timeout) or math_huge
  if me == self then raise("bad_argument", "wait: a task cannot wait for itself") end
  if me then
    while not self.done do
      local joiners = self.joiners or {}
      self.joiners = joiners
      local j = { task = me, seq = me.seq + 1 }
      joiners[#joiners + 1] = j
      local ok, reason = pcall(me.suspend, me, deadline)
      if not self.done then
        -- not woken by the end: forget this waiter (a task that polls with
        -- short timeouts would otherwise pile them up until the end)
        for i = #joiners, 1, -1 do
          if joiners[i] == j then table.remove(joiners, i) break end
        end
      end
      if not ok then error(reason, 0) end
      if reason == "timeout" and not self.done then
        raise("timeout", "wait: the task did not end in time")
      end
    end
    return outcome(self)
  end
  M.run_until(self.driver, function() return settled(self) end, deadline)
  if not self.done then
    if deadline == math_huge then
      raise("timeout", "wait: the task can never end: it waits with no deadline, and nothing on"
        .. " the loop can wake it (tasks waiting for each other?)")
    end
    raise("timeout", "wait: the task did not end in time")
  end
  return outcome(self)
end

-- run_until(driver, pred, deadline): turns the loop (outside any task)
-- until pred() or the deadline.
function M.run_until(driver, pred, deadline)
  if pred() then return true end
  if not driver.step then
    raise("bad_argument", "this loop cannot be run from outside a task (its driver has no step):"
      .. " wait with a callback instead")
  end
  local turned = false
  while not pred() do
    local left = deadline - now()
    if left <= 0 then
      -- at least one turn, without waiting: wait(0) on a task that has
      -- just ended runs its on_done (a timer already due)
      if turned then return false end
      left = 0
    end
    turned = true
    if driver:step(left < math_huge and left or nil, pred) == false then
      return pred()           -- nothing is watched and no timer runs: nothing can change
    end
  end
  return true
end

-- turn_in_turn(drivers, settled_on, deadline): tasks of one loop may wait
-- for tasks of another (a built-in loop's task for a luv one's), so no
-- loop can be turned until its own tasks end before the next is turned:
-- the first would wait for what only the second can bring, up to the
-- deadline (or, with none, be found unable to end). Each loop is turned
-- in turn instead, for at most SLICE seconds at a time, until every
-- task has settled, the deadline passed, or a round in which no loop had
-- anything that could happen (a driver's optional idle(): nothing
-- watched, no timer; a wake one loop's turn gives a task of another is a
-- timer there, so such a round ran nothing and changed nothing).
local SLICE = 0.01

local function turn_in_turn(drivers, settled_on, deadline)
  for _, d in ipairs(drivers) do
    if not d.step and not settled_on(d)() then
      raise("bad_argument", "this loop cannot be run from outside a task (its driver has no step):"
        .. " wait with a callback instead")
    end
  end
  while true do
    local waiting, alive = false, false
    for _, d in ipairs(drivers) do
      local pred = settled_on(d)
      if not pred() then
        waiting = true
        if not (d.idle and d:idle()) then
          local left = deadline - now()
          if left < 0 then left = 0 end
          if d:step(left < SLICE and left or SLICE, pred) ~= false then alive = true end
        end
      end
    end
    if not waiting then return true end
    if not alive or now() >= deadline then
      for _, d in ipairs(drivers) do
        if not settled_on(d)() then return false, not alive end
      end
      return true
    end
  end
end

-- sleep(seconds): suspends the task (or blocks outside tasks).
function M.sleep(seconds)
  if type(seconds) ~= "number" or not (seconds >= 0 and seconds < math_huge) then
    raise("bad_argument", "sleep: seconds must be a non-negative finite number, got "
      .. shown(seconds))
  end
  local task = M.current()
  if task then
    -- at least one turn of the loop, even for 0: a task polling with
    -- sleep(0) lets the others run
    local deadline = now() + seconds
    repeat task:suspend(deadline) until now() >= deadline
  else
    core.sleep(seconds)
  end
end

-- wait_all(tasks, timeout?) -> the results of each task in order (the
-- first value each returned); raises the first failure (in list order)
-- once all have ended.
function M.wait_all(list, timeout)
  if type(list) ~= "table" then raise("bad_argument", "wait_all: expected a list of tasks") end
  check_timeout("wait_all", timeout)
  local n = #list
  for k in pairs(list) do
    if type(k) ~= "number" or k < 1 or k > n or k % 1 ~= 0 then
      raise("bad_argument", "wait_all: expected a list of tasks, found the key "
        .. (type(k) == "string" and ("%q"):format(k:sub(1, 40)) or shown(k)))
    end
  end
  for i = 1, n do
    if getmetatable(list[i]) ~= Task then
      raise("bad_argument", "wait_all: entry " .. i .. " is not a Task")
    end
  end
  local deadline = timeout and (now() + timeout) or math_huge
  local function all_done()
    for _, t in ipairs(list) do if not t.done then return false end end
    return true
  end
  local me = M.current()
  local stuck                 -- no loop has anything left that could happen
  if me then
    for _, t in ipairs(list) do
      if not t.done then
        -- a task's own failure waits for the others (raised below, in list
        -- order); this task's timeout or cancellation ends the wait
        local ok, err = pcall(t.wait, t, deadline < math_huge and math_max(0, deadline - now()) or nil)
        if not ok and not (t.failed and rawequal(err, t.error)) then error(err, 0) end
      end
    end
  else
    -- Each loop the tasks run on (tasks started before a dt.use_loop
    -- switch keep theirs).
    local drivers, seen = {}, {}
    for _, t in ipairs(list) do
      if not seen[t.driver] then
        seen[t.driver] = true
        drivers[#drivers + 1] = t.driver
      end
    end
    local function settled_on(d)
      return function()
        for _, t in ipairs(list) do
          if t.driver == d and not settled(t) then return false end
        end
        return true
      end
    end
    if #drivers == 1 then
      M.run_until(drivers[1], settled_on(drivers[1]), deadline)
    else
      local _
      _, stuck = turn_in_turn(drivers, settled_on, deadline)
    end
    for _, d in ipairs(drivers) do finish_closes(d) end
  end
  if not all_done() then
    if deadline == math_huge or stuck then
      raise("timeout", "wait_all: the tasks can never all end: they wait with no deadline, and"
        .. " nothing on the loop can wake them (tasks waiting for each other?)")
    end
    raise("timeout", "wait_all: the tasks did not all end in time")
  end
  local out = { n = #list }
  for i, t in ipairs(list) do
    if t.failed then error(t.error, 0) end
    out[i] = t.results[1]
  end
  return out
end

function Task:__tostring()
  return "Task(" .. (self.done and (self.failed and "failed" or "done")
    or (self.cancelled and "cancelling" or (self.waiting and "waiting" or "running"))) .. ")"
end

errors.guard_methods(Task, "Task", "task")

return M
