-- devtools_tools.rt.loop: event-loop drivers, the only thing tasks need from a
-- loop.
--
-- A driver watches file descriptors and runs one-shot timers; tasks
-- (devtools_tools.rt.task) and connections (devtools_tools.wire.cdp) ask nothing
-- else of it, so any loop plugs in by offering these methods:
--
--   d:watch(fd, events, cb) -> handle   events "r", "w" or "rw"; cb(ready)
--                                       runs on the loop each time fd is
--                                       ready (level-triggered) until unwatch
--   d:modify(handle, events)            change what a watch waits for
--   d:unwatch(handle)
--   d:timer(seconds, cb) -> handle      cb() once, after seconds (>= 0)
--   d:cancel(handle)                    a timer that has not fired
--   d:ref(handle, yes)                  optional: whether a watch keeps the
--                                       loop alive (luv's ref/unref); a
--                                       driver that has it keeps a read
--                                       watch on every open connection,
--                                       unref'ed while no task waits on it
--                                       (rt/host.lua)
--   d:step(timeout)                     optional: run the loop once, waiting
--                                       at most timeout seconds (used only
--                                       by task:wait called outside tasks)
--   d:finish_closes()                   optional: called on the way back to
--                                       the program from outside the loop
--                                       (task:cancel, task:wait, a closed
--                                       connection), to finish handle closes
--
-- One watch per descriptor: libuv forbids two poll handles on one fd, so a
-- caller that wants both directions modifies its watch to "rw".
--
-- A driver runs callbacks later, on the loop: never from inside the watch
-- or timer call that set them up. Callbacks never block and never raise
-- into the loop: what they run is the library's own code, which catches
-- its errors (see cdp.lua).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"

local now, poll = core.now, core.poll
local pairs, ipairs, next, type, rawget, setmetatable, math_max, math_huge =
      pairs, ipairs, next, type, rawget, setmetatable, math.max, math.huge
local sort = table.sort

local M = {}

---------------------------------------------------------------- built-in

-- The built-in loop: poll(2) over the watched descriptors, timers in a
-- table. It runs only while someone waits on it (task:wait, dt.wait_all).
local Builtin = {}
Builtin.__index = Builtin
Builtin.__name = "devtools_tools.rt.loop.Builtin"

function M.builtin()
  return setmetatable({ watches = {}, timers = {}, kind = "built-in" }, Builtin)
end

function Builtin:watch(fd, events, cb)
  local h = { fd = fd, events = events, cb = cb }
  self.watches[h] = true
  return h
end

function Builtin:modify(h, events)
  h.events = events
end

function Builtin:unwatch(h)
  self.watches[h] = nil
end

-- An unref'ed watch is served while the loop turns, but does not by
-- itself make anything able to happen (idle, step).
function Builtin:ref(h, yes)
  h.unref = not yes or nil
end

function Builtin:timer(seconds, cb)
  local h = { at = now() + math_max(0, seconds), cb = cb }
  self.timers[h] = true
  return h
end

function Builtin:cancel(h)
  self.timers[h] = nil
end

-- idle() -> true when nothing is watched and no timer is set: nothing can
-- happen on this loop until something outside it (another loop) adds
-- one (dt.wait_all turning several loops asks).
function Builtin:idle()
  if next(self.timers) ~= nil then return false end
  for h in pairs(self.watches) do
    if not h.unref then return false end
  end
  return true
end

-- step(timeout): waits for the first descriptor or timer, at most timeout
-- seconds (nil: until something happens), and runs what is due.
function Builtin:step(timeout)
  local t = now()
  local wait = timeout or math_huge
  for h in pairs(self.timers) do
    local left = h.at - t
    if left < wait then wait = left end
  end
  if wait < 0 then wait = 0 end
  local fds, evs, hs, n, held = {}, {}, {}, 0, false
  for h in pairs(self.watches) do
    n = n + 1
    fds[n], evs[n], hs[n] = h.fd, h.events, h
    if not h.unref then held = true end
  end
  if not held and wait == math_huge then return false end   -- nothing can happen
  local ready = poll(fds, evs, wait ~= math_huge and wait or nil)
  for i, ev in pairs(ready) do
    local h = hs[i]
    if self.watches[h] then h.cb(ev) end
  end
  if next(self.timers) then
    t = now()
    local due = {}
    for h in pairs(self.timers) do
      if h.at <= t then due[#due + 1] = h end
    end
    sort(due, function(a, b) return a.at < b.at end)
    for _, h in ipairs(due) do
      if self.timers[h] then
        self.timers[h] = nil
        h.cb()
      end
    end
  end
  return true
end

---------------------------------------------------------------- luv

-- A luv-compatible loop: require "luv", vim.loop or vim.uv. Handles are
-- closed explicitly; a poll handle is reused per descriptor.
local Luv = {}
Luv.__index = Luv
Luv.__name = "devtools_tools.rt.loop.Luv"

-- One driver per luv module: dt.use_loop(uv) twice (two modules of one
-- program each setting it up) must not watch one fd twice, which libuv
-- refuses.
local luv_drivers = setmetatable({}, { __mode = "k" })

function M.luv(uv)
  if type(uv) ~= "table" or type(uv.new_poll) ~= "function" or type(uv.new_timer) ~= "function"
      or type(uv.run) ~= "function" then
    return nil
  end
  if luv_drivers[uv] then return luv_drivers[uv] end
  local d = setmetatable({ uv = uv, kind = "luv", closing = 0 }, Luv)
  luv_drivers[uv] = d
  local vim = rawget(_G, "vim")
  if type(vim) == "table" and (uv == rawget(vim, "loop") or uv == rawget(vim, "uv")) then
    d.kind = "neovim"
    d.vim = vim
  end
  return d
end

-- A handle closed outside uv.run is only half closed until the loop turns
-- again (luv runs its close callback then); a program that ends before
-- that dies in luv's own clean-up at exit (SIGSEGV). Each close is counted
-- until its callback has run, and finish_closes() gives the loop that turn.
local function close(self, handle)
  self.closing = self.closing + 1
  handle:close(function() self.closing = self.closing - 1 end)
end

-- finish_closes(): for the library on its way back to the program from
-- outside the loop (never inside a task or a loop callback): one turn
-- without waiting when closes are pending and the loop is not running.
-- Neovim's loop always turns again.
function Luv:finish_closes()
  local uv = self.uv
  if self.closing > 0 and not self.vim and uv.loop_mode and uv.loop_mode() == nil then
    uv.run("nowait")
  end
end

function Luv:watch(fd, events, cb)
  local p, err = self.uv.new_poll(fd)
  if not p then
    errors.raise("protocol_error", "the loop cannot watch fd " .. tostring(fd) .. " (" .. tostring(err)
      .. "): is it watched by another driver of the same loop?")
  end
  local h = { poll = p, cb = cb }
  p:start(events, function(perr, ready) cb(perr and "r" or ready) end)
  return h
end

function Luv:ref(h, yes)
  local p = h.poll
  if p and not p:is_closing() then
    if yes then p:ref() else p:unref() end
  end
end

function Luv:modify(h, events)
  h.poll:start(events, function(err, ready) h.cb(err and "r" or ready) end)
end

function Luv:unwatch(h)
  local p = h.poll
  if p and not p:is_closing() then
    p:stop()
    close(self, p)
  end
  h.poll = nil
end

function Luv:timer(seconds, cb)
  local uv = self.uv
  -- libuv counts from the loop's cached clock, which stood still while the
  -- program blocked outside the loop (a blocking launch before uv.run()):
  -- without this the timer fires early by that long.
  if uv.update_time then uv.update_time() end
  local t = uv.new_timer()
  local h = { timer = t }
  local ms = math_max(0, seconds) * 1000
  ms = ms - ms % 1 + ((ms % 1 > 0) and 1 or 0)      -- round up: never early
  -- luv takes an integer: a finite timeout past 9.2e15 s has none (Lua
  -- 5.4 refuses the float), so a wait that long waits 142,000 years
  if ms > 2^52 then ms = 2^52 end
  t:start(ms, 0, function()
    if not t:is_closing() then close(self, t) end
    h.timer = nil
    cb()
  end)
  return h
end

function Luv:cancel(h)
  local t = h.timer
  if t and not t:is_closing() then
    t:stop()
    close(self, t)
  end
  h.timer = nil
end

-- Waiting from outside any task: luv runs one iteration; inside Neovim the
-- loop already runs, so vim.wait processes events until pred or timeout.
function Luv:step(timeout, pred)
  if self.vim then
    -- In a loop callback (a fast event: on_done, a timer of the
    -- program's own) Neovim cannot wait: vim.wait there aborts Neovim
    -- 0.7 (SIGABRT, the editor gone) and raises E5560 in later ones.
    local fast = self.vim.in_fast_event
    if fast and fast() then
      errors.raise("bad_argument", "wait: Neovim's loop cannot be turned from inside one of its"
        .. " callbacks (on_done, a luv timer): wait inside a task, or go on in on_done")
    end
    local ms = timeout and math_max(0, timeout * 1000) or 1e9
    self.vim.wait(ms, pred or function() return false end, 5)
    return true
  end
  local guard
  if timeout then guard = self:timer(timeout, function() end) end
  local alive = self.uv.run("once")
  if guard then self:cancel(guard) end
  -- "once" ends by running due timers, after the phase that finishes
  -- closing handles: a handle closed there (or the guard just cancelled)
  -- would still be closing when we return, and luv crashes at exit if the
  -- program never runs its loop again. One turn without waiting finishes
  -- those closes.
  self.uv.run("nowait")
  -- nothing active on the loop (no watch, no timer: "once" returned at
  -- once): nothing can happen, as the built-in loop says
  return alive ~= false or guard ~= nil
end

-- idle(): as the built-in loop's, for a luv loop with no active handle
-- (Neovim's loop is never idle: the editor's own handles are on it).
function Luv:idle()
  local uv = self.uv
  return not self.vim and uv.loop_alive ~= nil and not uv.loop_alive()
end

-- as_driver(loop) -> driver: a driver as it is, or a luv module wrapped.
function M.as_driver(loop)
  if type(loop) ~= "table" then return nil end
  if type(loop.watch) == "function" and type(loop.timer) == "function"
      and type(loop.unwatch) == "function" and type(loop.cancel) == "function"
      and type(loop.modify) == "function" then
    return loop
  end
  return M.luv(loop)
end

return M
