-- devtools_tools.browser: launching or attaching to Chromium, and the
-- Browser object (version, pages, new_page, close).
--
-- dt.launch() runs the real Chromium binary with --remote-debugging-pipe (no
-- TCP port: no other process can attach) and a throw-away profile; the C
-- Process object owns the child and the profile, so both are cleaned up even
-- if the Browser is only garbage-collected. dt.connect() attaches over a
-- websocket (ws:// or wss://, with the caller's headers) to a browser
-- someone else runs, refusing non-loopback hosts unless asked, verifying TLS
-- certificates unless told not to, and leaves that browser running when
-- closed.
--
-- What it must never do: open a debugging port for a browser it launches
-- (launch{detached = true} opens one on 127.0.0.1 for a browser meant to be
-- shared), attach to a non-loopback host unless asked, leave a launched
-- Chromium or its temporary profile behind, or wait without the call's
-- deadline (rt/wait).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local cdp = require "devtools_tools.wire.cdp"
local options = require "devtools_tools.base.options"
local tasks = require "devtools_tools.rt.task"
local wait = require "devtools_tools.rt.wait"
local endpoint = require "devtools_tools.wire.endpoint"
local Page = require "devtools_tools.page"
local observe = require "devtools_tools.page.observe"
local json = require "devtools_tools.base.json"
local holder = require "devtools_tools.browser.holder"

local raise = errors.raise
local now = core.now
local type, tostring, ipairs, pairs, setmetatable, tonumber =
      type, tostring, ipairs, pairs, setmetatable, tonumber
local concat = table.concat

local M = {}

local Browser = {}
Browser.__index = Browser
Browser.__name = "devtools_tools.Browser"

-- Parts of the browser window a headless browser never shows, yet runs for
-- every new tab: the WebUI omnibox popup (a renderer of its own that loads
-- and compiles some 70 modules per tab) and the top-chrome WebUIs it
-- preloads. Measured on Chromium 156 (2 cores, make bench's new-page rows):
-- new_page takes 30-40 % less CPU (all processes) and about 30 % less time
-- without them. Unknown names are ignored by Chromium. Headless only: a
-- visible window keeps Chrome's own.
M.disabled_features = { "WebUIOmniboxPopup", "WebUIOmniboxFullPopup", "WebUIOmniboxAimPopup",
  "PreloadTopChromeWebUI" }
local DISABLE_FEATURES = "--disable-features=" .. table.concat(M.disabled_features, ",")

-- The flags a headless browser needs on a root, offline machine: no
-- sandbox as root, no GPU, and nothing that phones home (the network is
-- closed and every attempt costs start-up time).
M.default_args = {
  "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
  "--no-default-browser-check", "--disable-background-networking",
  "--disable-component-update", "--disable-sync", "--disable-quic",
  "--disable-extensions", "--disable-default-apps", "--mute-audio",
  "--disable-breakpad", "--password-store=basic", "--use-mock-keychain",
  DISABLE_FEATURES,
}
local HEADLESS_ONLY = { ["--headless"] = true, [DISABLE_FEATURES] = true }

-- chromium_args(headless) -> a new list of the flags for a headless (true,
-- nil) or visible (false) browser: default_args, less the headless-only
-- ones for a visible one.
function M.chromium_args(headless)
  local out = {}
  for _, a in ipairs(M.default_args) do
    if headless ~= false or not HEADLESS_ONLY[a] then out[#out + 1] = a end
  end
  return out
end

-- Where to look when opts.executable and DEVTOOLS_TOOLS_CHROME are unset.
-- Debian's /usr/bin/chromium is a shell wrapper that costs 60-130 ms per
-- start; the binary behind it is tried first.
M.candidates = {
  "/usr/lib/chromium/chromium", "chromium", "chromium-browser",
  "google-chrome", "google-chrome-stable",
}

local is_executable = core.fs.is_executable

-- Resolves a name on PATH; returns the path or nil, plus the paths tried.
local function resolve(name, tried)
  if name:find("/", 1, true) then
    tried[#tried + 1] = name
    return is_executable(name) and name or nil
  end
  for dir in (os.getenv("PATH") or "/usr/bin:/bin"):gmatch("[^:]+") do
    local p = dir .. "/" .. name
    tried[#tried + 1] = p
    if is_executable(p) then return p end
  end
end

-- locate(wanted?) -> path | nil, tried, named: the Chromium to run:
-- wanted (a path or a name on PATH), else DEVTOOLS_TOOLS_CHROME, else the
-- first of the candidates found. tried: the paths looked at; named: true
-- if one was asked for by name (wanted or the environment).
function M.locate(wanted)
  local tried = {}
  wanted = wanted or os.getenv("DEVTOOLS_TOOLS_CHROME")
  if wanted and wanted ~= "" then return resolve(wanted, tried), tried, true end
  for _, c in ipairs(M.candidates) do
    local p = resolve(c, tried)
    if p then return p, tried end
  end
  return nil, tried
end

-- (details.tried: the paths looked at, for a front end that names its
-- own options in the advice)
local function find_executable(opts)
  local p, tried, named = M.locate(opts.executable)
  if p then return p end
  if named then
    raise("launch_failed", "Chromium not found: tried " .. concat(tried, ", "), { details = { tried = tried } })
  end
  raise("launch_failed", "no Chromium found: tried " .. concat(tried, ", ")
    .. " (install the chromium package, or set opts.executable or DEVTOOLS_TOOLS_CHROME)",
    { details = { tried = tried } })
end

local check_opts = options.check

local function new_browser(conn, fields)
  local b = setmetatable(fields, Browser)
  b.conn = conn
  b.pages_by_session = {}
  conn:listen(nil, function(method, params) b:_on_event(method, params) end)
  return b
end
-- For unit specs: a Browser over a connection made elsewhere (a fake transport).
M._new = new_browser

local function tail(s, n)
  s = s or ""
  if #s > n then s = "..." .. s:sub(-n) end
  return s
end

-- await_exit(proc, deadline) -> nil, or the `cancelled` dt.Error that cut
-- the wait short (rt/wait: the process's end, on the task's loop inside a
-- task; until deadline; other errors of the wait are of no interest here).
local function cancel_of(fn, a, b)
  local ok, err = errors.catch(fn, a, b)
  if not ok and err.code == "cancelled" then return err end
end

local function await_exit(proc, deadline)
  return cancel_of(wait.exit, proc, deadline)
end

-- await_removed(dir, deadline): the same for a directory the reaper removes.
local function await_removed(dir, deadline)
  return cancel_of(wait.condition, function() return not core.fs.exists(dir) end, deadline)
end

-- await_closed(browser, deadline): the same for another task's close.
local function await_closed(b, deadline)
  return cancel_of(wait.condition, function() return not b._closing end, deadline)
end

-- The names of the profiles we make ($TMPDIR/<prefix>XXXXXX): a detached
-- browser's profile is removed by stop_detached only if its name says it
-- is one of ours (a record read back from a file is not trusted further).
local PROFILE_PREFIX = "devtools_tools-profile-"
local DETACHED_PREFIX = "devtools_tools-detached-"

local function new_profile(prefix)
  local dir, err = core.fs.mkdtemp(prefix)
  if not dir then
    local tmp = os.getenv("TMPDIR")
    raise("launch_failed", "cannot create a profile under " .. ((tmp and tmp ~= "") and tmp or "/tmp"),
      { details = { reason = err } })
  end
  return dir
end

local launch_opts = { executable = "string", headless = "boolean", args = true,
  user_data_dir = "string", timeout = true, webmcp = "boolean", history = true,
  detached = "boolean", on_record = "function", socket = "string", port = "number" }

-- issue 14: {console = n, requests = n}, how many of each a page keeps,
-- and bytes = n, how much page text each of the two holds at most; issue
-- 33: bodies = n and body = n, how many bytes of response bodies the
-- browser keeps per page, in all and of one (Network.enable's buffers)
local HISTORY_KEYS = { console = true, requests = true, bytes = true, bodies = true, body = true }
local function check_history(h, fname)
  if h == nil then return nil end
  if type(h) ~= "table" then raise("bad_argument", fname .. ": history must be a table") end
  for k, v in pairs(h) do
    if not HISTORY_KEYS[k] or type(v) ~= "number" or v < 0 or v % 1 ~= 0 or v >= 2^53 then
      raise("bad_argument", fname .. ": history takes console = n, requests = n, bytes = n, bodies = n"
        .. " and body = n (whole numbers)")
    end
  end
  if h.body and h.bodies and h.body > h.bodies then
    raise("bad_argument", fname .. ": history.body (one response's body) must not be over history.bodies"
      .. " (all of them)")
  end
  return h
end

-- Chromium reads only the last of each --*-features= switch
-- (--enable-features, --disable-features, --enable-blink-features...): a
-- list added to argv (the caller's, webmcp = true's) is merged into the
-- one already there (ours).
local function add_features(argv, flag)
  local switch = flag:match("^(%-%-[%a-]+%-features=)")
  if switch then
    local list = flag:sub(#switch + 1)
    for i, a in ipairs(argv) do
      if a:sub(1, #switch) == switch then
        if list ~= "" then argv[i] = (a == switch and a or a .. ",") .. list end
        return
      end
    end
  end
  argv[#argv + 1] = flag
end

-- launch(opts?) -> Browser
function M.launch(opts)
  opts = check_opts(opts, launch_opts, "launch")
  if opts.args ~= nil and type(opts.args) ~= "table" then
    raise("bad_argument", "launch: args must be a list of strings")
  end
  for _, a in ipairs(opts.args or {}) do
    if type(a) ~= "string" then raise("bad_argument", "launch: args must be strings") end
  end
  for _, k in ipairs({ "executable", "user_data_dir" }) do
    -- "" would mean "the default" to Chromium (or to locate): refused, not guessed
    if opts[k] == "" then raise("bad_argument", "launch: " .. k .. " must not be empty") end
  end
  local history = check_history(opts.history, "launch")
  local exe = find_executable(opts)
  local timeout = opts.timeout or 30
  local deadline = now() + timeout

  if opts.detached then return M._launch_detached(opts, exe, deadline) end
  if opts.on_record ~= nil then raise("bad_argument", "launch: on_record goes with detached = true") end
  if opts.socket ~= nil or opts.port ~= nil then
    raise("bad_argument", "launch: socket and port go with detached = true")
  end

  local dir, cleanup = opts.user_data_dir, nil
  if dir == nil then
    dir = new_profile(PROFILE_PREFIX)
    cleanup = dir
  end
  local argv = M.chromium_args(opts.headless)
  table.insert(argv, 1, exe)
  argv[#argv + 1] = "--remote-debugging-pipe"
  argv[#argv + 1] = "--user-data-dir=" .. dir
  for _, a in ipairs(opts.args or {}) do add_features(argv, a) end
  if opts.webmcp then add_features(argv, "--enable-features=WebMCP") end
  -- A headless browser starts without a window: the first new_page opens
  -- one. A start-up window's blank tab would stay open for nobody, as
  -- new_page opens a page of its own (launch + new_page: 293 instead of
  -- 326 ms). A visible browser opens on about:blank, as Chrome does.
  argv[#argv + 1] = opts.headless == false and "about:blank" or "--no-startup-window"

  -- Chromium's crash handler keeps its database under $XDG_CONFIG_HOME, not
  -- the profile, and its singleton socket in a directory of its own under
  -- $TMPDIR, which a browser killed while it starts never removes: keep
  -- them in the throw-away profile too.
  local env = cleanup and { XDG_CONFIG_HOME = dir .. "/.config", XDG_CACHE_HOME = dir .. "/.cache",
    TMPDIR = dir } or nil
  local proc, transport, code = core.process.spawn(argv, { pipe = true, cleanup_dir = cleanup, env = env })
  if not proc then
    if cleanup then core.fs.rmtree(cleanup) end
    raise("launch_failed", transport .. " (" .. tostring(code) .. ")")
  end
  local conn = cdp.new(transport, { timeout = timeout, process = proc })
  local ok, version = errors.catch(conn.call, conn, "Browser.getVersion", nil,
    { timeout = math.max(0, deadline - now()) })
  if not ok and version.code == "cancelled" then
    -- The task launching it was cancelled: end the child, say so.
    conn:close()
    proc:close(0)
    error(version, 0)
  end
  if not ok and version.code == "timeout" then
    -- Alive but not answering within the call's deadline: ended now, not
    -- waited for.
    conn:close()
    local why = proc:stderr()
    proc:close(0, true)
    raise("timeout", "launch: Chromium (" .. exe .. ") did not answer within its timeout ("
      .. string.format("%g", timeout) .. " s)" .. (why ~= "" and ("; its output ends with:\n" .. tail(why, 2000)) or ""),
      { details = { stderr = why, executable = exe } })
  end
  if not ok then
    -- Died during start-up: say why, with what it printed.
    conn:close()
    if tasks.current() then
      local cancelled = await_exit(proc, now() + 1)
      if cancelled then                                  -- cancelled meanwhile: end it now
        proc:close(0)
        error(cancelled, 0)
      end
    else
      proc:wait(now() + 1)
    end
    local why = proc:stderr()
    local status, detail = proc:kill(0)
    proc:close(0)
    raise("launch_failed", "Chromium (" .. exe .. ") did not start: " .. version.message
      .. " [" .. tostring(status) .. " " .. tostring(detail) .. "]"
      .. (why ~= "" and ("; its output ends with:\n" .. tail(why, 2000)) or ""),
      { details = { stderr = why, executable = exe } })
  end
  return new_browser(conn, {
    process = proc, executable = exe, user_data_dir = dir,
    timeout = timeout, launched = true, _version = version, history = history,
    _headless = opts.headless ~= false, _temp_profile = cleanup,
  })
end

-- ---- detached: a Chromium that outlives the process that started it --------

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
  if base:sub(1, #DETACHED_PREFIX) ~= DETACHED_PREFIX then return end
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
function M._launch_detached(opts, exe, deadline)
  local socket = opts.socket
  if socket ~= nil and opts.port ~= nil then raise("bad_argument", "launch: socket or port, not both") end
  if opts.port ~= nil and (opts.port < 0 or opts.port > 65535 or opts.port % 1 ~= 0) then
    raise("bad_argument", "launch: port must be a whole number from 0 to 65535")
  end
  if socket ~= nil and (socket:sub(1, 1) ~= "/" or core.fs.exists(socket)) then
    raise("bad_argument", "launch: socket must be an absolute path where nothing is yet, got " .. socket)
  end
  local made = opts.user_data_dir == nil
  local dir = opts.user_data_dir or new_profile(DETACHED_PREFIX)
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
    local argv = M.chromium_args(opts.headless)
    table.insert(argv, 1, exe)
    if socket then
      argv[#argv + 1] = "--remote-debugging-pipe"
    else
      argv[#argv + 1] = "--remote-debugging-port=" .. string.format("%d", opts.port or 0)
      argv[#argv + 1] = "--remote-debugging-address=127.0.0.1"
    end
    argv[#argv + 1] = "--user-data-dir=" .. dir
    for _, a in ipairs(opts.args or {}) do add_features(argv, a) end
    if opts.webmcp then add_features(argv, "--enable-features=WebMCP") end
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
    local ok_b, b = errors.catch(M.connect, info.endpoint, { timeout = math.max(0, deadline - now()),
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

-- ---- connect ----------------------------------------------------------------

local connect_opts = { allow_remote = "boolean", timeout = true, history = true, headers = true,
  ca_file = "string", insecure = "boolean" }

local default_port = endpoint.DEFAULT_PORT
local parse_url, is_loopback, http = endpoint.parse, endpoint.is_loopback, endpoint.http
M.check_history = check_history

-- The TLS and header options of connect, as the C core takes them.
local function tls_opts(opts, host)
  return { ca_file = opts.ca_file, insecure = opts.insecure == true, server_name = host }
end

-- A refused websocket handshake's HTTP status, as details (the C core
-- writes it "the server answered HTTP 401 (...)"), or nil.
local function handshake_details(message)
  local status = tostring(message):match("the server answered HTTP (%d+)")
  return status and { details = { status = tonumber(status) } } or nil
end

-- greet(transport, url, timeout, deadline, history) -> Browser: the
-- connection's first call answered (the browser's version), or a
-- connect_failed that says why.
local function greet(transport, url, timeout, deadline, history)
  local conn = cdp.new(transport, { timeout = timeout })
  local ok, version = errors.catch(conn.call, conn, "Browser.getVersion", nil,
    { timeout = math.max(0, deadline - now()) })
  if not ok then
    -- A handshake that failed on the loop (async) says why itself.
    local state, why
    if transport.state then state, why = transport:state() end
    conn:close()
    if version.code == "cancelled" then error(version, 0) end
    local message = version.message
    if state == "closed" and why and version.code ~= "timeout" then message = why end
    error(errors.c_failure(version.code, "connect: " .. url .. ": " .. message, "connect_failed",
      handshake_details(message)), 0)
  end
  return new_browser(conn, { timeout = timeout, launched = false, url = url,
    _version = version, history = history })
end

-- connect("unix:PATH"): the private background browser's holder
-- (browser/holder.lua) at the socket PATH (absolute), served by a
-- process of this user only. opts: timeout, history.
local function connect_unix(url, opts, history)
  local path = url:sub(6)
  if path:sub(1, 2) == "//" then path = path:sub(3) end                   -- (unix:///path too)
  if path:sub(1, 1) ~= "/" then
    local problem = "expected unix:/absolute/path/of/a/socket"
    raise("bad_argument", "connect: " .. problem .. ", got " .. url, { details = { problem = problem, url = url } })
  end
  for _, k in ipairs({ "headers", "ca_file", "insecure", "allow_remote" }) do
    if opts[k] ~= nil then raise("bad_argument", "connect: " .. k .. " does not apply to a unix: socket") end
  end
  local timeout = opts.timeout or 30
  local deadline = now() + timeout
  return greet(holder.connect(path, deadline), url, timeout, deadline, history)
end

-- connect(url, opts?) -> Browser. url: http(s)://host:port (resolved
-- through /json/version), ws(s)://host:port/devtools/browser/<id>, or
-- unix:/path of a private background browser's socket.
-- opts: allow_remote, timeout, history, headers (on every request and the
-- handshake), ca_file (a private CA, PEM), insecure (no certificate check).
function M.connect(url, opts)
  opts = check_opts(opts, connect_opts, "connect")
  local history = check_history(opts.history, "connect")
  if type(url) ~= "string" then
    raise("bad_argument", "connect: url must be a string, got " .. type(url))
  end
  if url:sub(1, 5) == "unix:" then return connect_unix(url, opts, history) end
  local headers = endpoint.check_headers(opts.headers, "connect")
  local scheme, host, port, path = parse_url(url)
  -- (details.problem: what is wrong with the url, for a front end that
  -- names the url its own way; details.host, loopback_only: the host refused)
  if not scheme or not default_port[scheme] then
    local problem = "expected http(s)://host:port or ws(s)://host:port/..."
    raise("bad_argument", "connect: " .. problem .. ", got " .. url, { details = { problem = problem, url = url } })
  end
  if not is_loopback(host) and not opts.allow_remote then
    raise("connect_failed", "connect: refusing non-loopback host " .. host
      .. " (the DevTools protocol gives full control of the browser;"
      .. " pass allow_remote = true to allow it)", { details = { host = host, loopback_only = true } })
  end
  if port ~= nil and (port < 1 or port > 65535 or port % 1 ~= 0) then
    local problem = "port must be between 1 and 65535"
    raise("bad_argument", "connect: " .. problem .. ", got " .. tostring(port),
      { details = { problem = problem, url = url } })
  end
  port = port or default_port[scheme]
  local tls = scheme == "https" or scheme == "wss"
  local topts = tls_opts(opts, host)
  local timeout = opts.timeout or 30
  local deadline = now() + timeout
  -- Connect by address: "localhost" is resolved here (other names in the
  -- core, within the deadline), and the Host header stays what the URL
  -- says (Chromium answers 500 to a Host that is not an IP or localhost).
  local addr = host == "localhost" and "127.0.0.1" or host
  local hosthdr = (host:find(":", 1, true) and ("[" .. host .. "]") or host) .. ":" .. port
  if scheme == "http" or scheme == "https" then
    local status, body, code = http(addr, port, "/json/version", {
      deadline = deadline, headers = headers, tls = tls, server_name = topts.server_name,
      ca_file = topts.ca_file, insecure = topts.insecure })
    if not status then                                -- "GET http://host:port/json/version: why"
      error(errors.c_failure(code, "connect: " .. tostring(body), "connect_failed"), 0)
    end
    if status ~= 200 then
      raise("connect_failed", "connect: GET /json/version answered " .. tostring(status),
        { details = { status = status, body = body:sub(1, 200) } })
    end
    local ok, info = errors.catch(json.decode, body)
    local ws = ok and type(info) == "table" and info.webSocketDebuggerUrl
    if type(ws) ~= "string" then
      raise("connect_failed", "connect: /json/version has no webSocketDebuggerUrl")
    end
    local wscheme, _, _, wpath = parse_url(ws)
    if (wscheme ~= "ws" and wscheme ~= "wss") or not wpath then
      raise("connect_failed", "connect: /json/version gave an unusable webSocketDebuggerUrl: " .. ws)
    end
    -- The socket is the endpoint's own (host, port, TLS): a browser behind
    -- a TLS front still writes ws:// (it knows nothing of the front).
    path = wpath
    tls = tls or wscheme == "wss"
  end
  -- In a task the handshake is driven on the loop (async): the first CDP
  -- call below waits for it like for any reply.
  local transport, err, code = core.ws.connect(addr, port, path,
    { deadline = deadline, host_header = hosthdr, headers = headers, tls = tls,
      ca_file = topts.ca_file, insecure = topts.insecure, async = tasks.current() ~= nil })
  if not transport then
    error(errors.c_failure(code, "connect: " .. url .. ": " .. tostring(err), "connect_failed",
      handshake_details(err)), 0)
  end
  return greet(transport, url, timeout, deadline, history)
end

-- ---- Browser ------------------------------------------------------------------

local function check_open(self)
  if self.conn.closed then
    raise("disconnected", "the browser is closed")
  end
end

-- _gone() -> nil while the browser may still answer, else why it cannot.
-- Found without waiting, for a holder that keeps a browser while idle (the
-- Neovim plugin): nothing reads the connection then, so a browser killed
-- meanwhile would seem alive until a call failed. Reads what has arrived
-- (the end of the connection included) and asks whether a launched
-- Chromium still runs, which a helper still holding the pipe would hide.
function Browser:_gone()
  if self._closed then return "the browser was closed" end
  local conn = self.conn
  if not conn.closed then pcall(conn.poll, conn) end
  if conn.closed then return conn.closed end
  local proc = self.process
  if proc and not proc:running() then
    local how, n = proc:wait(0)
    if how == "signal" then return "Chromium was killed by signal " .. tostring(n) end
    return "Chromium exited" .. (how == "exit" and (" with status " .. tostring(n)) or "")
  end
  return nil
end

-- alive() -> true while the browser may still answer; false, why once it
-- cannot (closed, its connection ended, its Chromium exited or was
-- killed). Never waits: for a holder that keeps a browser while idle (an
-- editor), as _gone above.
function Browser:alive()
  local why = self:_gone()
  if why then return false, why end
  return true
end

function Browser:_on_event(method, params)
  if method == "Target.detachedFromTarget" then
    local page = self.pages_by_session[params.sessionId]
    if page then page:_detached() end
  end
end

-- cdp(method, params?, opts?) -> result, on the browser target (issue 14)
Browser.cdp = observe.browser_cdp

-- version() -> {product, protocolVersion, revision, userAgent, jsVersion}
function Browser:version(opts)
  opts = check_opts(opts, options.TIMEOUT, "version")
  check_open(self)
  return self.conn:call("Browser.getVersion", nil, opts)
end

-- pages() -> list of {id, url, title, attached} for targets of type "page"
function Browser:pages(opts)
  opts = check_opts(opts, options.TIMEOUT, "pages")
  check_open(self)
  local r = self.conn:call("Target.getTargets", nil, opts)
  local out = {}
  for _, t in ipairs(r.targetInfos or {}) do
    if t.type == "page" then
      out[#out + 1] = { id = t.targetId, url = t.url, title = t.title, attached = t.attached }
    end
  end
  return out
end

-- A headless Chromium gives each page a window of its own: of the tabs of
-- one window only the front one is visible, and the others are hidden
-- pages (requestAnimationFrame never runs there, timers slow down). A
-- visible browser opens a tab, as a user would. Costs about 20 ms more
-- for the second and later pages. Headless: as launched, or for a browser
-- connected to, its user agent says HeadlessChrome.
local function own_window(self)
  if self._headless ~= nil then return self._headless end
  local v = self._version
  local ua = type(v) == "table" and v.userAgent
  return type(ua) == "string" and ua:find("HeadlessChrome/", 1, true) ~= nil
end

-- new_page(url?, opts?) -> Page, attached, navigated to url (load awaited)
function Browser:new_page(url, opts)
  opts = check_opts(opts, options.TIMEOUT, "new_page")
  check_open(self)
  if url ~= nil and type(url) ~= "string" then
    raise("bad_argument", "new_page: url must be a string, got " .. type(url))
  end
  local conn = self.conn
  local deadline = conn:deadline(opts)
  -- (newWindow left out, not false: Chromium then opens a window when it
  -- has none, where false fails with "no browser is open")
  -- A new_page that fails (timed out, cancelled) closes its target: the
  -- caller never gets the Page, so nobody else would.
  local function close_target(target_id)
    if type(target_id) == "string" then
      conn:send_nowait("Target.closeTarget", { targetId = target_id })
    end
  end
  local created = conn:await(conn:send("Target.createTarget", { url = "about:blank",
    newWindow = own_window(self) or nil }, nil, deadline), deadline, "Target.createTarget",
    function(msg) close_target(msg.result and msg.result.targetId) end)
  local page
  local ok, err = errors.catch(function()
    page = Page.attach(self, created.targetId, deadline)
    self.pages_by_session[page.session] = page
    if url and url ~= "about:blank" then
      page:navigate(url, { timeout = math.max(0, deadline - now()) })
    end
  end)
  if not ok then
    close_target(created.targetId)
    if page then page:_detached() end
    error(err, 0)
  end
  return page
end

-- attach(target_id) -> Page for an existing page target (e.g. from pages())
function Browser:attach(target_id, opts)
  opts = check_opts(opts, options.TIMEOUT, "attach")
  check_open(self)
  if type(target_id) ~= "string" then
    raise("bad_argument", "attach: target_id must be a string, got " .. type(target_id))
  end
  local page = Page.attach(self, target_id, self.conn:deadline(opts))
  self.pages_by_session[page.session] = page
  return page
end

-- _forget(page): a page closed or detached
function Browser:_forget(page)
  if self.pages_by_session[page.session] == page then self.pages_by_session[page.session] = nil end
end

-- The work of close: see below.
local function close_now(self, deadline)
  local function soon(s) return math.min(now() + s, deadline) end
  local conn, proc = self.conn, self.process
  local stop                      -- a cancellation met on the way, raised at the end
  local function step(fn, ...)
    local ok, err = errors.catch(fn, ...)
    if not ok and err.code == "cancelled" then stop = stop or err end
    return ok
  end
  if proc and not conn.closed then
    -- Ask politely; the reply may never come, as the browser is exiting.
    step(conn.send, conn, "Browser.close", nil, nil, soon(1))
    if not stop then step(conn.wait_for, conn, function() return conn.closed ~= nil end, soon(2)) end
  end
  conn:close()
  if proc then
    if tasks.current() and not stop then
      -- Inside a task the exit is awaited on the loop, not in proc:close.
      stop = await_exit(proc, soon(2))
    end
    local left = soon(2) - now()
    if stop then
      proc:close(0)
    elseif left <= 0 then
      -- No time left: killed, then reaped and its profile removed in the
      -- background (the reaper), not within this call.
      proc:close(0, true)
    elseif tasks.current() and self._temp_profile and not proc:running() then
      -- Removing a profile takes 40-250 ms of work: the reaper does it,
      -- and the task waits on the loop, which goes on turning.
      proc:close(0, true)
      stop = await_removed(self._temp_profile, deadline)   -- (the last step: all that is left)
    else
      proc:close(left)
    end
  end
  -- What attached it may have more to undo (dt.webdriver deletes its
  -- WebDriver session), within close's deadline; an error there is raised
  -- once all else is done (the browser is closed all the same): the
  -- session may still be alive.
  local after, after_err = self._after_close, nil
  if after then
    self._after_close = nil
    local ok, err = errors.catch(after, self, deadline)
    if not ok then after_err = err end
  end
  if stop then error(stop, 0) end
  if after_err then error(after_err, 0) end
end

-- close(opts?): a launched browser is asked to exit, then ended by signal
-- if it does not, and its temporary profile removed; a connected one is
-- only disconnected. opts.timeout (5 s) bounds all of it: what is left of
-- it when the browser has not exited, it is killed (with none left, the
-- reaper finishes in the background). Idempotent. Inside a task that is
-- cancelled meanwhile, the clean-up still runs, then close raises
-- `cancelled`.
function Browser:close(opts)
  opts = check_opts(opts, options.TIMEOUT, "close")
  local deadline = now() + (opts.timeout or 5)
  if self._closed then
    -- Another task's close under way: this one returns when that one has
    -- (within its own deadline). Blocking, it cannot drive that task: it
    -- waits for Chromium's exit, which is what a caller relies on.
    local task = tasks.current()
    if self._closing and self._closing ~= task then   -- (not the closing task itself: a listener)
      if task then
        local err = await_closed(self, deadline)
        if err then error(err, 0) end
        if self._closing then
          raise("timeout", "close: another close of this browser was still under way at the deadline")
        end
      elseif self.process then
        wait.exit(self.process, deadline)
      end
    end
    return
  end
  self._closed, self._closing = true, tasks.current() or true
  local ok, err = pcall(close_now, self, deadline)
  self._closing = nil
  if not ok then error(err, 0) end
end

-- `local b <close> = dt.launch()`: Lua passes the error that ends the
-- scope, if any, which is not an opts table.
function Browser:__close() return self:close() end
-- No __gc here: a finalizer must never wait, and close() waits for Chromium
-- to exit. A Browser that is only collected is ended by its C Process
-- object's own finalizer (kills and reaps Chromium, removes the profile),
-- on every Lua version.

function Browser:__tostring()
  if self.webdriver then
    -- (the endpoint chose the id: shown as printable ASCII)
    local id = tostring(self.webdriver.session_id):gsub("[^\32-\126]", function(c)
      return ("\\x%02x"):format(c:byte())
    end)
    return "Browser(WebDriver session " .. id .. " at "
      .. tostring(self.webdriver.url) .. (self._closed and ", closed" or "") .. ")"
  end
  local how = self.launched and ("pid " .. tostring(self.process:pid() or "gone"))
    or ("connected to " .. tostring(self.url))
  return "Browser(" .. how .. (self._closed and ", closed" or "") .. ")"
end

M.Browser = Browser
errors.guard_methods(Browser, "Browser", "browser")

return M
