-- devtools_tools.rt.host: what the host program's time serves - the loop
-- new tasks run on (dt.use_loop) and the connections that must be read
-- whether or not the program is calling the library.
--
-- A browser tells of what it does in events, and some wait on us: a new
-- frame's or worker's target stays paused until we resume it (the page
-- pauses each for its set-up). So every open connection is served
-- whenever the program gives the library time, not only while one of its
-- calls waits:
--   - a loop that runs on its own (luv, Neovim's vim.uv: a driver with
--     ref) keeps a read watch on each connection for as long as it is
--     open, which does not keep the loop alive (a script's uv.run() still
--     ends);
--   - the built-in loop does the same while it is turned (task:wait,
--     dt.wait_all);
--   - dt.sleep outside tasks waits on every connection's descriptors and
--     reads what comes; a connection's own blocking wait reads the other
--     connections too while there are others.
-- A program that never turns a loop nor sleeps through us (a busy loop of
-- its own, a sleep of another library) leaves the connections unread
-- until its next call: the browser holds a new frame's scripts until then.
--
--   new() -> Host
--   host:driver() -> the driver new tasks run on (the built-in loop unless
--                    use chose another)
--   host:use(loop?) -> driver        loop: a luv module or a driver; nil:
--                                    the built-in loop again
--   host:serve(conn)                 conn is served from now on, while it
--                                    is open (held weakly)
--   host:others(conn) -> list | nil  the other connections served, for a
--                                    blocking wait on conn
--   host:sleep(seconds)              a task's sleep, or a blocking one
--                                    that serves the connections
-- A connection offers: reside(driver|nil) (keep a read watch there),
-- read_fds() -> list (nil once closed), serve() (read and route what has
-- arrived, never waiting).
--
-- What it must never do: keep a loop alive that has nothing else to do,
-- hold a connection the program let go of, or wait past the caller's
-- deadline.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local loop = require "devtools_tools.rt.loop"
local task = require "devtools_tools.rt.task"

local now, poll = core.now, core.poll
local type, pairs, ipairs, pcall, next, setmetatable = type, pairs, ipairs, pcall, next, setmetatable
local math_huge = math.huge

local M = {}

local Host = {}
Host.__index = Host
Host.__name = "devtools_tools.rt.Host"

function M.new()
  return setmetatable({ current = nil, builtin = nil,
    served = setmetatable({}, { __mode = "k" }) }, Host)
end

-- The built-in loop is one: tasks started before and after a use(nil)
-- are driven together (two would each wait for the other's tasks).
local function builtin(self)
  if not self.builtin then self.builtin = loop.builtin() end
  return self.builtin
end

function Host:driver()
  local d = self.current
  if not d then
    d = builtin(self)
    self.current = d
  end
  return d
end

-- Where a connection keeps its standing watch: a driver that can let a
-- watch not hold its loop (ref), the one in use.
local function resident(self)
  local d = self:driver()
  return d.ref and d or nil
end

function Host:use(l)
  local d
  if l == nil then
    d = builtin(self)
  else
    d = loop.as_driver(l)
    if not d then
      errors.raise("bad_argument", "use_loop: expected a luv-compatible loop (require 'luv',"
        .. " vim.uv, vim.loop) or a driver with watch/unwatch/modify/timer/cancel, got " .. type(l))
    end
  end
  self.current = d
  local r = resident(self)
  for conn in pairs(self.served) do conn:reside(r) end
  return d
end

function Host:serve(conn)
  if self.served[conn] then return end
  self.served[conn] = true
  conn:reside(resident(self), self)
end

function Host:others(conn)
  local list
  for c in pairs(self.served) do
    if c ~= conn and c:read_fds() then
      list = list or {}
      list[#list + 1] = c
    end
  end
  return list
end

-- serve_until(conns, deadline): waits on the connections' descriptors
-- until the deadline, serving each that has something (their events run
-- their listeners: a paused target is resumed). A failure to read one is
-- left for its next call to find (the connection keeps why it closed).
function M.serve_until(conns, deadline)
  while true do
    local fds, evs, owner, n = {}, {}, {}, 0
    for _, c in ipairs(conns) do
      for _, fd in ipairs(c:read_fds() or {}) do
        n = n + 1
        fds[n], evs[n], owner[n] = fd, "r", c
      end
    end
    local left = deadline - now()
    if left <= 0 then return end
    if n == 0 then
      core.sleep(left)
      return
    end
    local ready = poll(fds, evs, left < math_huge and left or nil)
    local done = {}
    for i in pairs(ready) do
      local c = owner[i]
      if not done[c] then
        done[c] = true
        pcall(c.serve, c)
      end
    end
    if next(ready) == nil and now() >= deadline then return end
  end
end

function Host:sleep(seconds)
  if type(seconds) ~= "number" or not (seconds >= 0 and seconds < math_huge) then
    return task.sleep(seconds)            -- (which says what is wrong with it)
  end
  if task.current() then return task.sleep(seconds) end
  local list = {}
  for c in pairs(self.served) do list[#list + 1] = c end
  M.serve_until(list, now() + seconds)
end

return M
