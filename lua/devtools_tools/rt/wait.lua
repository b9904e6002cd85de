-- devtools_tools.rt.wait: the one way anything in the library waits, for a
-- file descriptor, a child process's end or a condition, each with an
-- absolute deadline and a task's cancel. Inside a task (rt/task.lua) a
-- wait suspends the task and its loop's driver (rt/loop.lua) watches the
-- descriptors and the deadline's timer; outside any task it blocks in
-- poll(2) (the core's poll) with the deadline.
--
--   suspension() -> s | nil        the current task's next suspension
--                                  (nil outside tasks): s.task, and
--                                  s:wake(reason) from the loop, or
--                                  s:wake_later(reason) from anywhere
--   suspend(s, deadline) -> reason "ready", "timeout", or what woke it;
--                                  raises `cancelled`
--   fds(rfd, wfd, deadline) -> true | false (the deadline passed)
--   exit(proc, deadline) -> true | false: the process ended (its pidfd
--                                  watched; where the kernel has none,
--                                  looked at as condition does)
--   condition(pred, deadline) -> true | false: pred() held. For what no
--                                  descriptor tells of (a file another
--                                  process writes, a process of no child
--                                  of ours): looked at again after growing
--                                  pauses (5 ms to 100 ms), on the loop's
--                                  timer inside a task.
--
-- What it must never do: start a clock of its own (every wait takes the
-- caller's absolute deadline), wake a suspension that is not the one it
-- was made for, or swallow a cancel.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local task = require "devtools_tools.rt.task"

local now, poll = core.now, core.poll
local math_min, math_huge, pcall, error, next = math.min, math.huge, pcall, error, next

local M = {}

-- ---- suspensions -----------------------------------------------------------------

-- (a suspension belongs to its task: rt/task.lua makes and wakes it)
M.suspension = task.suspension

function M.suspend(s, deadline)
  return s.task:suspend(deadline)
end

-- ---- descriptors ------------------------------------------------------------------

local function events_of(rfd, wfd)
  if rfd and wfd then return "rw" end
  return rfd and "r" or "w"
end

function M.fds(rfd, wfd, deadline)
  if rfd == nil and wfd == nil then errors.raise("bad_argument", "wait.fds: no descriptor") end
  local s = M.suspension()
  if not s then
    local fds, evs = {}, {}
    if rfd then fds[#fds + 1], evs[#evs + 1] = rfd, "r" end
    if wfd then fds[#fds + 1], evs[#evs + 1] = wfd, "w" end
    while true do
      local left = deadline - now()
      if left <= 0 then left = 0 end
      local ready = poll(fds, evs, left < math_huge and left or nil)
      if next(ready) ~= nil then return true end
      if left == 0 or now() >= deadline then return false end
      -- (an interrupted wait: again, for the time left)
    end
  end
  local driver = s.task.driver
  local fd = rfd or wfd
  local h = driver:watch(fd, events_of(rfd, wfd), function() s:wake("ready") end)
  local ok, reason = pcall(M.suspend, s, deadline)
  driver:unwatch(h)
  if not ok then error(reason, 0) end
  return reason ~= "timeout"
end

-- ---- conditions -------------------------------------------------------------------

local FIRST_PAUSE, LAST_PAUSE = 0.005, 0.1

function M.condition(pred, deadline)
  local pause = FIRST_PAUSE
  while not pred() do
    local t = now()
    if t >= deadline then return false end
    local until_ = math_min(t + pause, deadline)
    local s = M.suspension()
    if s then
      M.suspend(s, until_)            -- (only its timer wakes it)
    else
      core.sleep(until_ - t)
    end
    pause = math_min(pause * 2, LAST_PAUSE)
  end
  return true
end

-- ---- processes --------------------------------------------------------------------

function M.exit(proc, deadline)
  while proc:running() do
    local fd = proc.exit_fd and proc:exit_fd()
    if not fd then
      return M.condition(function() return not proc:running() end, deadline)
    end
    if not M.fds(fd, nil, deadline) then return not proc:running() end
  end
  return true
end

return M
