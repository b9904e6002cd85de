-- devtools_tools.browser.background: one Chromium kept running in the background
-- for several processes to share (the command line's `browser start`),
-- known through a record file: {pid, profile, executable, endpoint, port},
-- or {starting = true, profile, executable[, pid]} while a start is under
-- way (or after one was killed).
--
-- The browser is a detached launch (browser.launch{detached = true}); its
-- record is written (0600, in a directory made 0700) at each step of the
-- start, so that a start killed at any point leaves a record that the next
-- start or stop ends. Starts and stops take turns through a lock beside the
-- record (flock: the kernel drops it with its holder, so a killed start
-- never leaves it held): several starts at once start one browser.
--
-- It must never end a process that is not the recorded Chromium (see
-- browser.stop_detached), nor leave a browser it started unrecorded.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local json = require "devtools_tools.base.json"
local options = require "devtools_tools.base.options"
local wait = require "devtools_tools.rt.wait"
local browser = require "devtools_tools.browser"

local raise = errors.raise
local now = core.now
local type, tostring, pcall, error, setmetatable = type, tostring, pcall, error, setmetatable

local M = {}

local Background = {}
Background.__index = Background
Background.__name = "devtools_tools.Background"

-- state_dir() -> the front ends' state directory ($XDG_STATE_HOME/
-- devtools-tools, else ~/.local/state/devtools-tools), where the command
-- line records its background browser (browser.json); nil with neither
-- XDG_STATE_HOME nor HOME set (cron, env -i). A relative XDG_STATE_HOME
-- is ignored, as the XDG base directory specification says (it would
-- name another directory in each working directory).
function M.state_dir()
  local base = os.getenv("XDG_STATE_HOME")
  if not base or base:sub(1, 1) ~= "/" then
    local home = os.getenv("HOME")
    if not home or home == "" then return nil end
    base = home .. "/.local/state"
  end
  return base .. "/devtools-tools"
end

-- new(path?) -> Background: the browser recorded at path (maybe none
-- yet); without path, the command line's (state_dir()/browser.json)
function M.new(path)
  if path == nil then
    local dir = M.state_dir()
    if not dir then
      raise("bad_argument", "background: neither XDG_STATE_HOME nor HOME is set: give the path of its record")
    end
    path = dir .. "/browser.json"
  end
  if type(path) ~= "string" or path == "" or path:sub(-1) == "/" then
    raise("bad_argument", "background: expected the path of its record file, got " .. tostring(path))
  end
  local dir = path:match("^(.*)/[^/]*$") or "."
  return setmetatable({ path = path, dir = dir, lock_path = path .. ".lock" }, Background)
end

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

-- status() -> state, record | "unreadable", nil, why. state: "none" (no
-- record), "starting" (a start under way, or one killed on the way),
-- "running", "gone" (recorded, but its Chromium is not running).
function Background:status()
  local text = read_file(self.path)
  if not text then return "none" end
  local ok, rec = pcall(json.decode, text)
  if not ok or type(rec) ~= "table" or type(rec.profile) ~= "string" or rec.profile == ""
      or (rec.pid ~= nil and type(rec.pid) ~= "number")
      or (type(rec.endpoint) ~= "string" and rec.starting ~= true) then
    return "unreadable", nil, "the record " .. self.path .. " is unreadable"
  end
  if rec.starting == true then return "starting", rec end
  return browser.detached_running(rec) and "running" or "gone", rec
end

local function write_record(self, rec)
  local ok, err = core.fs.write_file(self.path, json.encode(rec) .. "\n", 384)   -- 0600
  if not ok then raise("launch_failed", err) end
end

local function forget(self)
  os.remove(self.path)
end

-- with_lock(self, deadline, fn, ...): fn(...) holding the lock
local function with_lock(self, deadline, fn, ...)
  local ok, err = core.fs.mkdirs(self.dir, 448)                                -- 0700
  if not ok then raise("launch_failed", err) end
  -- (flock(2) without waiting, tried again on rt/wait's pauses: a wait in
  -- the kernel could not be cut at our deadline, nor let other tasks run)
  local lock, failed
  local got = wait.condition(function()
    local l, why = core.fs.lock(self.lock_path)
    if l then lock = l return true end
    if l == nil then failed = why return true end
    return false
  end, deadline)
  if failed then raise("launch_failed", failed) end
  if not got then
    raise("timeout", "another start or stop of the background browser was still under way ("
      .. self.lock_path .. ")")
  end
  local res = { pcall(fn, ...) }
  lock:release()
  if not res[1] then error(res[2], 0) end
  return res[2], res[3]
end

local start_opts = { executable = "string", headless = "boolean", args = true, webmcp = "boolean",
  timeout = true }

-- start(opts?) -> record, started: the recorded browser when it runs
-- (started false), else a new one (a stale record is ended first). opts:
-- executable, headless, args, webmcp (as launch's; for a new one only),
-- timeout (30: all of it, waiting for another start included).
function Background:start(opts)
  opts = options.check(opts, start_opts, "background:start")
  local deadline = now() + (opts.timeout or options.DEFAULT_TIMEOUT)
  return with_lock(self, deadline, function()
    local state, rec = self:status()
    if state == "running" then return rec, false end
    if rec then browser.stop_detached(rec, { timeout = math.max(0, deadline - now()) }) end
    if state ~= "none" then forget(self) end
    local ok, b = pcall(browser.launch, { detached = true, executable = opts.executable,
      headless = opts.headless, args = opts.args, webmcp = opts.webmcp,
      timeout = math.max(0, deadline - now()),
      on_record = function(r) write_record(self, r) end })
    if not ok then
      forget(self)                         -- (launch ended what it started)
      error(b, 0)
    end
    local final = b.detached
    b:close()                              -- disconnects; the browser runs on
    return final, true
  end)
end

-- stop(opts?) -> record | nil: ends the recorded browser (if it still
-- runs), removes its profile and the record; nil when there was none. An
-- unreadable record is removed. opts.timeout (5).
function Background:stop(opts)
  opts = options.check(opts, options.TIMEOUT, "background:stop")
  local deadline = now() + (opts.timeout or 5)
  return with_lock(self, deadline, function()
    local state, rec = self:status()
    if rec then browser.stop_detached(rec, { timeout = math.max(0, deadline - now()) }) end
    if state ~= "none" then forget(self) end
    return rec
  end)
end

function Background:__tostring()
  return "Background(" .. self.path .. ")"
end

M.Background = Background
errors.guard_methods(Background, "Background", "background")

return M
