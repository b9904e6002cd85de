-- devtools_tools.browser: launching or attaching to Chromium, and the
-- Browser object (version, pages, new_page, close). This file launches
-- one over a pipe and names the parts of the rest: chromium.lua (the
-- executable, its flags and profile), detached.lua (a Chromium that
-- outlives us), connect.lua (a browser someone else runs), object.lua
-- (the Browser).
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
-- shared, unless given a socket: then a holder serves it to this user
-- only), attach to a non-loopback host unless asked, leave a launched
-- Chromium or its temporary profile behind, or wait without the call's
-- deadline (rt/wait).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local cdp = require "devtools_tools.wire.cdp"
local options = require "devtools_tools.base.options"
local tasks = require "devtools_tools.rt.task"
local chromium = require "devtools_tools.browser.chromium"
local detached = require "devtools_tools.browser.detached"
local connect = require "devtools_tools.browser.connect"
local object = require "devtools_tools.browser.object"

local raise = errors.raise
local now = core.now
local check_opts = options.check
local type, tostring, ipairs, error = type, tostring, ipairs, error

local M = {}

-- The parts' names, as this module has always given them.
M.disabled_features, M.default_args, M.candidates = chromium.disabled_features, chromium.default_args,
  chromium.candidates
M.chromium_args, M.locate, M.check_history = chromium.chromium_args, chromium.locate, chromium.check_history
M.detached_running, M.stop_detached = detached.detached_running, detached.stop_detached
M.connect = connect.connect
M.Browser, M.on_close = object.Browser, object.on_close
-- For unit specs: a Browser over a connection made elsewhere (a fake transport).
M._new = object.new

local launch_opts = { executable = "string", headless = "boolean", args = true,
  user_data_dir = "string", timeout = true, webmcp = "boolean", history = true,
  detached = "boolean", on_record = "function", socket = "string", port = "number" }

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
  local history = chromium.check_history(opts.history, "launch")
  local exe = chromium.find_executable(opts)
  local timeout = opts.timeout or options.DEFAULT_TIMEOUT
  local deadline = now() + timeout

  if opts.detached then return detached.launch(opts, exe, deadline) end
  if opts.on_record ~= nil then raise("bad_argument", "launch: on_record goes with detached = true") end
  if opts.socket ~= nil or opts.port ~= nil then
    raise("bad_argument", "launch: socket and port go with detached = true")
  end

  local dir, cleanup = opts.user_data_dir, nil
  if dir == nil then
    dir = chromium.new_profile(chromium.PROFILE_PREFIX)
    cleanup = dir
  end
  local argv = chromium.chromium_args(opts.headless)
  table.insert(argv, 1, exe)
  argv[#argv + 1] = "--remote-debugging-pipe"
  argv[#argv + 1] = "--user-data-dir=" .. dir
  for _, a in ipairs(opts.args or {}) do chromium.add_features(argv, a) end
  if opts.webmcp then chromium.add_features(argv, "--enable-features=WebMCP") end
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
      .. string.format("%g", timeout) .. " s)"
      .. (why ~= "" and ("; its output ends with:\n" .. chromium.tail(why, 2000)) or ""),
      { details = { stderr = why, executable = exe } })
  end
  if not ok then
    -- Died during start-up: say why, with what it printed.
    conn:close()
    if tasks.current() then
      local cancelled = chromium.await_exit(proc, now() + 1)
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
      .. (why ~= "" and ("; its output ends with:\n" .. chromium.tail(why, 2000)) or ""),
      { details = { stderr = why, executable = exe } })
  end
  return object.new(conn, {
    process = proc, executable = exe, user_data_dir = dir,
    timeout = timeout, launched = true, history = history,
  }, { version = version, headless = opts.headless ~= false, temp_profile = cleanup })
end

return M
