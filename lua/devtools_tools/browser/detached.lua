-- devtools_tools.browser.detached: a Chromium that outlives the process that
-- started it (launch{detached = true}: a session and process group of its
-- own, its debugging port on 127.0.0.1, or with socket = path no port: a
-- holder, holder.lua, runs it on its pipe and serves it on a Unix socket
-- to this user only), the record that names it, and its end
-- (stop_detached), by its process group and by what names its profile,
-- read from /proc.
--
-- What it must never do: end a process that is no longer that Chromium
-- (a pid is checked against the profile it names), remove a profile that
-- is not one of ours (by its name), or leave what a failed start started.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local options = require "devtools_tools.base.options"
local wait = require "devtools_tools.rt.wait"
local chromium = require "devtools_tools.browser.chromium"
local connect = require "devtools_tools.browser.connect"
local holder = require "devtools_tools.browser.holder"

local raise = errors.raise
local now = core.now
local check_opts = options.check
local type, ipairs, pairs, pcall, error, tonumber = type, ipairs, pairs, pcall, error, tonumber
local tail = chromium.tail

local M = {}

local function read_proc(pid, what)
  local f = io.open(("/proc/%d/%s"):format(pid, what), "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

-- is_ours(pid, profile): pid is alive (not a zombie) and is the Chromium
-- of that profile (its command line names it as its --user-data-dir).
local function is_ours(pid, profile)
  if type(pid) ~= "number" or pid % 1 ~= 0 or pid < 2 or pid >= 2 ^ 31
      or type(profile) ~= "string" or profile == "" then
    return false
  end
  local stat = read_proc(pid, "stat")
  if not stat or stat:match("%) ([ZX])") then return false end
  local cmd = read_proc(pid, "cmdline")
  return cmd ~= nil and cmd:find("--user-data-dir=" .. profile .. "\0", 1, true) ~= nil
end

local until_or = wait.condition

-- alive(pid) -> true while pid runs (not a zombie). For the Chromium a
-- launch has just started, whose pid it knows: its command line is not a
-- sure sign then, Chromium rewrites it (its process title) as it starts.
local function alive(pid)
  local stat = read_proc(pid, "stat")
  return stat ~= nil and not stat:match("%) ([ZX])")
end

local function check_record(info, fname)
  if type(info) ~= "table" or type(info.profile) ~= "string" or info.profile == "" then
    raise("bad_argument", fname .. ": expected the record of a detached browser ({pid, profile, ...})")
  end
  if info.pid ~= nil and (type(info.pid) ~= "number" or info.pid % 1 ~= 0) then
    raise("bad_argument", fname .. ": the record's pid must be a whole number")
  end
end

-- detached_running(info) -> true while the record's Chromium runs
function M.detached_running(info)
  check_record(info, "detached_running")
  return is_ours(info.pid, info.profile)
end

local function signal_all(pids, sig)
  for _, pid in ipairs(pids) do
    core.process.kill(pid, sig, true)                 -- its group, when it leads one
    core.process.kill(pid, sig)
  end
end

-- stop_detached(info, opts?): ends the Chromium a detached launch started
-- (its process group: SIGTERM, then SIGKILL a second before opts.timeout,
-- default 5 s), then any process still naming its profile (helpers that
-- left the group, or a start killed before the pid was recorded), and
-- removes the profile. Only a profile of ours (its name says so) is
-- scanned for and removed; a pid that is no longer that Chromium is left
-- alone. Raises timeout when the browser outlives the deadline.
function M.stop_detached(info, opts)
  opts = check_opts(opts, options.TIMEOUT, "stop_detached")
  check_record(info, "stop_detached")
  local deadline = now() + (opts.timeout or 5)
  local pid, profile = info.pid, info.profile
  if is_ours(pid, profile) then
    signal_all({ pid }, "TERM")
    local function gone() return not is_ours(pid, profile) end
    if not until_or(gone, deadline - 1) then
      signal_all({ pid }, "KILL")
      if not until_or(gone, deadline) then
        raise("timeout", "stop_detached: the browser (pid " .. string.format("%d", pid) .. ") did not exit")
      end
    end
  end
  local base = profile:match("([^/]+)$") or ""
  local prefix = chromium.DETACHED_PREFIX
  if base:sub(1, #prefix) ~= prefix then return end
  local left = core.process.processes_with(profile)
  if #left > 0 then
    signal_all(left, "TERM")
    if not until_or(function() return #core.process.processes_with(profile) == 0 end, deadline - 0.5) then
      signal_all(core.process.processes_with(profile), "KILL")
      until_or(function() return #core.process.processes_with(profile) == 0 end, deadline)
    end
  end
  -- (late writes of dying helpers can re-create a file: tries for a while)
  wait.condition(function() return core.fs.rmtree(profile) end, math.min(deadline, now() + 0.5))
end

-- launch{detached = true}: Chromium with its debugging port on 127.0.0.1
-- (opts.port, default 0: the one it binds is read from its profile), in a
-- session of its own, none of our children: our exit does not end it, nor
-- does closing the Browser (which only disconnects). With opts.socket (a
-- path) it opens no port: a holder process (browser/holder.lua) runs it
-- on the pipe and serves it on a Unix socket at that path to this user
-- only (endpoint "unix:PATH"; the holder's is the pid recorded, and the
-- browser ends with it). opts.on_record(info) is called
-- with what there is to record at each step - {starting = true, profile,
-- executable, headless, webmcp} before Chromium starts, then with its pid
-- - so a caller killed meanwhile leaves a record that stop_detached can
-- end; the Browser's .detached is the final record {pid, profile,
-- executable, headless, webmcp, endpoint, port | socket}. A launch that
-- fails ends what it started.
function M.launch(opts, exe, deadline)
  local socket = opts.socket
  if socket ~= nil and opts.port ~= nil then raise("bad_argument", "launch: socket or port, not both") end
  if opts.port ~= nil and (opts.port < 0 or opts.port > 65535 or opts.port % 1 ~= 0) then
    raise("bad_argument", "launch: port must be a whole number from 0 to 65535")
  end
  if socket ~= nil and (socket:sub(1, 1) ~= "/" or core.fs.exists(socket)) then
    raise("bad_argument", "launch: socket must be an absolute path where nothing is yet, got " .. socket)
  end
  local made = opts.user_data_dir == nil
  local dir = opts.user_data_dir or chromium.new_profile(chromium.DETACHED_PREFIX)
  local info = { starting = true, profile = dir, executable = exe, headless = opts.headless ~= false,
    webmcp = opts.webmcp == true }
  local function record()
    if opts.on_record then
      local copy = {}
      for k, v in pairs(info) do copy[k] = v end
      opts.on_record(copy)
    end
  end
  local ok, res = pcall(function()
    record()
    local argv = chromium.chromium_args(opts.headless)
    table.insert(argv, 1, exe)
    if socket then
      argv[#argv + 1] = "--remote-debugging-pipe"
    else
      argv[#argv + 1] = "--remote-debugging-port=" .. string.format("%d", opts.port or 0)
      argv[#argv + 1] = "--remote-debugging-address=127.0.0.1"
    end
    argv[#argv + 1] = "--user-data-dir=" .. dir
    for _, a in ipairs(opts.args or {}) do chromium.add_features(argv, a) end
    if opts.webmcp then chromium.add_features(argv, "--enable-features=WebMCP") end
    argv[#argv + 1] = "about:blank"
    if socket then argv = holder.command(argv, socket) end
    -- its temporary files and crash database in the profile, removed with it
    local env = made and { XDG_CONFIG_HOME = dir .. "/.config", XDG_CACHE_HOME = dir .. "/.cache",
      TMPDIR = dir } or nil
    local log = dir .. "/chromium.log"
    local pid, err = core.process.spawn_detached(argv, { output = log, env = env })
    if not pid then raise("launch_failed", err) end
    info.pid = pid
    record()
    local port, path
    local answered = until_or(function()
      if socket then
        local st = core.fs.lstat(socket)
        return (st and st.type == "socket") or not alive(pid)
      end
      local f = io.open(dir .. "/DevToolsActivePort", "rb")
      local text = f and f:read("*a") or ""
      if f then f:close() end
      port, path = text:match("^(%d+)\n(/devtools/browser/[%w-]+)")
      return port ~= nil or not alive(pid)
    end, deadline)
    local function failed(code, what)
      local f = io.open(log, "rb")
      local why = f and f:read("*a") or ""
      if f then f:close() end
      raise(code, "launch: Chromium (" .. exe .. ") " .. what
        .. (why ~= "" and ("; its output ends with:\n" .. tail(why, 2000)) or ""),
        { details = { stderr = why, executable = exe } })
    end
    if socket and not (answered and alive(pid)) then
      failed(answered and "launch_failed" or "timeout", "did not start, or its holder did not listen")
    elseif not socket and not port then
      failed(answered and "launch_failed" or "timeout", "did not open its debugging port")
    end
    info.starting = nil
    if socket then
      info.socket, info.endpoint = socket, "unix:" .. socket
    else
      info.port, info.endpoint = tonumber(port), "ws://127.0.0.1:" .. port .. path
    end
    record()
    local ok_b, b = errors.catch(connect.connect, info.endpoint, { timeout = math.max(0, deadline - now()),
      history = opts.history })
    if not ok_b then
      -- (through the holder: Chromium died starting, or did not answer)
      if socket and b.code ~= "cancelled" then
        failed(b.code == "timeout" and "timeout" or "launch_failed", "did not answer: " .. b.message)
      end
      error(b, 0)
    end
    local final = {}
    for k, v in pairs(info) do final[k] = v end
    b.detached = final
    return b
  end)
  if not ok then
    -- whatever started is ended (a failed record, a timeout, a cancel):
    -- the group of the pid it started, whatever its command line says at
    -- this moment (under load a Chromium read while it rewrote its title
    -- was taken for gone and outlived the launch), then what names the profile
    if info.pid and alive(info.pid) then
      core.process.kill(info.pid, "KILL", true)
      core.process.kill(info.pid, "KILL")
    end
    pcall(M.stop_detached, { pid = info.pid, profile = dir }, { timeout = 5 })
    if made then core.fs.rmtree(dir) end
    local st = socket and core.fs.lstat(socket)
    if st and st.type == "socket" then os.remove(socket) end     -- (a holder killed leaves it)
    error(res, 0)
  end
  return res
end

return M
