-- devtools_tools.browser.background: one Chromium kept running in the background
-- for several processes to share (the command line's `browser start`),
-- known through a record file: {pid, profile, executable, endpoint,
-- socket | port}, or {starting = true, profile, executable[, pid]} while a
-- start is under way (or after one was killed).
--
-- It is private by default: a holder process runs it on the pipe and
-- serves it on a Unix socket beside the record (browser.sock), to this
-- user only (browser/holder.lua). start{port = n} opens Chromium's own
-- debugging port on 127.0.0.1 instead, which any local user can drive.
--
-- The browser is a detached launch (browser.launch{detached = true}); its
-- record is written (0600, in a directory made 0700) at each step of the
-- start, so that a start killed at any point leaves a record that the next
-- start or stop ends. Starts and stops take turns through a lock beside the
-- record (flock: the kernel drops it with its holder, so a killed start
-- never leaves it held): several starts at once start one browser.
--
-- What is in the directory steers what we connect to and what we end, so
-- before anything there is used the directory must be ours and closed to
-- others (0700; its parent not open to others' writes), and each file in
-- it ours, not a link, with no group or other bits: anything else is
-- refused (launch_failed from start, connect_failed from the rest), never
-- repaired, since another user may have put it there. (The one exception:
-- a front end's own file that others may read but not write - tabs.json,
-- 0644 before this version - is made 0600.)
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
local format = string.format

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

-- default_path() -> where the background browser is recorded
-- (state_dir()/browser.json); nil, why with neither XDG_STATE_HOME nor
-- HOME set.
function M.default_path()
  local dir = M.state_dir()
  if not dir then
    return nil, "neither XDG_STATE_HOME nor HOME is set: the background browser cannot be recorded"
  end
  return dir .. "/browser.json"
end

-- new(path?) -> Background: the browser recorded at path (maybe none
-- yet), by default at default_path()
function M.new(path)
  if path == nil then
    local why
    path, why = M.default_path()
    if not path then raise("bad_argument", "background: " .. why) end
  end
  if type(path) ~= "string" or path:sub(1, 1) ~= "/" or path:sub(-1) == "/" then
    raise("bad_argument", "background: expected the absolute path of its record file, got " .. tostring(path))
  end
  local dir = path:match("^(.*)/[^/]*$")
  if dir == "" then dir = "/" end
  return setmetatable({ path = path, dir = dir, lock_path = path .. ".lock",
    socket = dir .. "/browser.sock" }, Background)
end

-- ---- the state directory and its files ------------------------------------------

local S_ISVTX, GROUP_OTHER, OTHERS_WRITE = 512, 63, 18     -- 01000, 077, 022

local function refuse(code, path, what, fields)
  raise(code, "refusing the background browser's state " .. path .. ": " .. what, fields)
end

local function octal(mode) return format("%04o", mode) end

-- bits(mode, mask) -> mode & mask (library files run on LuaJIT: no & there)
local function bits(mode, mask)
  local out, b = 0, 1
  while b <= mask do
    if mask % (2 * b) >= b and mode % (2 * b) >= b then out = out + b end
    b = b * 2
  end
  return out
end

-- check_dir(self, code) -> true when the directory is there (and fit to
-- use), false when it is not; raises code when it is not fit: not ours,
-- open to others, a link, or in a parent others may write to (who could
-- put another in its place).
local function check_dir(self, code)
  local me = core.process.euid()
  local st = core.fs.lstat(self.dir)
  if not st then return false end
  local fix = "; remove it, or make it yours and 0700"
  if st.type ~= "directory" then
    refuse(code, self.dir, "it is a " .. st.type .. ", not a directory", { details = { path = self.dir } })
  end
  if st.uid ~= me then
    refuse(code, self.dir, format("it belongs to uid %d, not to you (uid %d)", st.uid, me) .. fix,
      { details = { path = self.dir, uid = st.uid } })
  end
  if bits(st.mode, GROUP_OTHER) ~= 0 then
    refuse(code, self.dir, "its mode is " .. octal(st.mode) .. ", open to other users (chmod 700 "
      .. self.dir .. ")", { details = { path = self.dir, mode = st.mode } })
  end
  local parent = self.dir:match("^(.*)/[^/]*$")
  local pst = core.fs.lstat(parent == "" and "/" or parent)
  if pst and (pst.uid ~= me and pst.uid ~= 0 or bits(pst.mode, OTHERS_WRITE) ~= 0 and bits(pst.mode, S_ISVTX) == 0) then
    refuse(code, self.dir, "its parent " .. parent .. " may be written to by another user"
      .. " (owner uid " .. pst.uid .. ", mode " .. octal(pst.mode) .. ")",
      { details = { path = parent, uid = pst.uid, mode = pst.mode } })
  end
  return true
end

-- check_file(path, want, code, lenient) -> true when a file of type want
-- ("file", "socket") is there, fit to use; false when nothing is; raises
-- code when what is there is not fit. lenient: a file others may read
-- but not write is made 0600 (see the top).
local function check_file(path, want, code, lenient)
  local st = core.fs.lstat(path)
  if not st then return false end
  local me = core.process.euid()
  if st.type ~= want then
    refuse(code, path, "it is a " .. st.type .. ", not a " .. want, { details = { path = path } })
  end
  if st.uid ~= me then
    refuse(code, path, format("it belongs to uid %d, not to you (uid %d); remove it", st.uid, me),
      { details = { path = path, uid = st.uid } })
  end
  if bits(st.mode, GROUP_OTHER) ~= 0 then
    if lenient and bits(st.mode, OTHERS_WRITE) == 0 and core.fs.chmod(path, 384) then return true end
    refuse(code, path, "its mode is " .. octal(st.mode) .. ", open to other users; remove it",
      { details = { path = path, mode = st.mode } })
  end
  return true
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
-- "running", "gone" (recorded, but its Chromium is not running). A
-- directory or record not fit to use raises connect_failed.
function Background:status()
  return self:_status("connect_failed")
end

function Background:_status(code)
  if not check_dir(self, code) or not check_file(self.path, "file", code) then return "none" end
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

-- with_lock(self, code, deadline, fn, ...): fn(...) holding the lock, in
-- the directory (made 0700 if missing) checked (code when unfit)
local function with_lock(self, code, deadline, fn, ...)
  local ok, err = core.fs.mkdirs(self.dir, 448)                                -- 0700
  if not ok then raise("launch_failed", err) end
  check_dir(self, code)
  check_file(self.lock_path, "file", code)
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
  timeout = true, port = "number" }

-- A socket left by a holder that was killed (or by a start killed while
-- its holder ran): removed before a start, and with the record.
local function forget_socket(self, code)
  if check_file(self.socket, "socket", code) then os.remove(self.socket) end
end

-- start(opts?) -> record, started: the recorded browser when it runs
-- (started false), else a new one (a stale record is ended first). opts:
-- executable, headless, args, webmcp (as launch's; for a new one only),
-- port (a new one listens on this TCP port of 127.0.0.1, 0 for any free
-- one, open to every local user; default: none, private), timeout (30:
-- all of it, waiting for another start included).
function Background:start(opts)
  opts = options.check(opts, start_opts, "background:start")
  local deadline = now() + (opts.timeout or options.DEFAULT_TIMEOUT)
  return with_lock(self, "launch_failed", deadline, function()
    local state, rec = self:_status("launch_failed")
    if state == "running" then return rec, false end
    if rec then browser.stop_detached(rec, { timeout = math.max(0, deadline - now()) }) end
    if state ~= "none" then forget(self) end
    forget_socket(self, "launch_failed")
    local ok, b = pcall(browser.launch, { detached = true, executable = opts.executable,
      headless = opts.headless, args = opts.args, webmcp = opts.webmcp,
      port = opts.port, socket = opts.port == nil and self.socket or nil,
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
  if not check_dir(self, "connect_failed") then return nil end
  return with_lock(self, "connect_failed", deadline, function()
    local state, rec = self:status()
    if rec then browser.stop_detached(rec, { timeout = math.max(0, deadline - now()) }) end
    if state ~= "none" then forget(self) end
    forget_socket(self, "connect_failed")
    return rec
  end)
end

-- connect(opts?) -> Browser: the running background browser, connected
-- (opts as dt.connect's: timeout, history). connect_failed when none runs
-- (details.state: "none", "starting", "gone", "unreadable").
function Background:connect(opts)
  local state, rec, why = self:status()
  if state ~= "running" then
    local what = state == "none" and "no background browser runs (devtools-tools browser start)"
      or state == "starting" and "the background browser is starting, or its start was killed"
      or state == "gone" and format("the background browser (pid %d) is gone", rec.pid)
      or why
    raise("connect_failed", "connect: " .. what, { details = { state = state, path = self.path } })
  end
  return browser.connect(rec.endpoint, opts)
end

-- A front end's own file beside the record (the command line's tabs.json):
-- a plain name, not one of the background's.
local OWN = { ["browser.json"] = true, ["browser.json.lock"] = true, ["browser.sock"] = true }
local function state_file(self, name, fname)
  if type(name) ~= "string" or not name:match("^[%w][%w._-]*$") or OWN[name] then
    raise("bad_argument", "background:" .. fname .. ": expected a file name of the front end's own, got "
      .. tostring(name))
  end
  return self.dir .. "/" .. name
end

-- read(name) -> its text | nil (no such file, or no state directory yet);
-- connect_failed when it or the directory is not fit to use
function Background:read(name)
  local path = state_file(self, name, "read")
  if not check_dir(self, "connect_failed") or not check_file(path, "file", "connect_failed", true) then
    return nil
  end
  return read_file(path)
end

-- write(name, text) -> true, or false when there is no state directory
-- (no background browser was ever started: nothing to keep); written
-- whole, 0600
function Background:write(name, text)
  local path = state_file(self, name, "write")
  if type(text) ~= "string" then raise("bad_argument", "background:write: text must be a string") end
  if not check_dir(self, "connect_failed") then return false end
  check_file(path, "file", "connect_failed", true)
  local ok, err = core.fs.write_file(path, text, 384)                           -- 0600
  if not ok then raise("connect_failed", err) end
  return true
end

function Background:__tostring()
  return "Background(" .. self.path .. ")"
end

M.Background = Background
errors.guard_methods(Background, "Background", "background")

return M
