-- devtools_tools: script the developer tools web pages expose, from Lua.
--
-- The facade: it requires the pieces and exports a curated table.
--
-- What it must never do: re-export raw core functions (everything a user
-- can call raises dt.Error objects: see README, "Errors and timeouts"),
-- hold state beyond the host's time (the loop new tasks run on, the
-- connections it serves: rt/host.lua), or be skipped by a front
-- end (the command line, Neovim and the MCP server stand on it alone,
-- with present/).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

-- A directory as a person reads it: from $PWD when relative, "a/.." gone.
local function shown_dir(d)
  local pwd = os.getenv("PWD")
  if d:sub(1, 1) ~= "/" and pwd and pwd:sub(1, 1) == "/" then d = pwd .. "/" .. d end
  local parts = {}
  for seg in d:gmatch("[^/]+") do
    if seg == ".." and #parts > 0 and parts[#parts] ~= ".." then parts[#parts] = nil
    elseif seg ~= "." then parts[#parts + 1] = seg end
  end
  local s = table.concat(parts, "/")
  if d:sub(1, 1) == "/" then return "/" .. s end
  return s ~= "" and s or "."
end

-- Raises, when this interpreter cannot load the C core, an error whose first
-- line says which build it needs and where to run it (a checkout's
-- `make LUA=luajit` before a script runs under LuaJIT, as Neovim's
-- plugin names `make nvim`), require's own message below it.
local function check_core()
  local ok, err = pcall(require, "devtools_tools.core")
  if ok then return end
  local why = tostring(err)
  local luajit = rawget(_G, "jit") ~= nil
  local engine = luajit and "LuaJIT" or _VERSION
  local build = luajit and "make LUA=luajit" or ({ ["Lua 5.4"] = "make", ["Lua 5.1"] = "make LUA=lua5.1" })[_VERSION]
  if rawget(_G, "vim") then engine, build = "this Neovim", "make nvim" end    -- (nvim/build.lua says it too)
  local head
  if not build then
    head = "devtools_tools runs on Lua 5.4 and LuaJIT, not " .. _VERSION
  else
    local what = why:find("module 'devtools_tools.core' not found", 1, true) and "is not built for "
      or (why:find("undefined symbol", 1, true) or why:find("wrong ELF", 1, true)) and "was built for another Lua than "
      or "does not load in "
    -- a checkout: this file is ROOT/lua/devtools_tools/init.lua beside ROOT/Makefile
    local luadir = debug.getinfo(1, "S").source:match("^@(.-)/?devtools_tools/init%.lua$")
    local root = luadir and ((luadir == "" and "." or luadir) .. "/..")
    local mk = root and io.open(root .. "/Makefile")
    if mk then mk:close() end
    head = "devtools_tools: the C core " .. what .. engine .. ": "
      .. (mk and ("run `" .. build .. "` in " .. shown_dir(root))
          or ("build and install it for " .. engine .. " (`" .. build .. (rawget(_G, "vim") and "" or " install")
            .. "` in its source tree)"))
  end
  error(head .. "\n" .. why, 0)
end

check_core()
local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local json = require "devtools_tools.base.json"
local browser = require "devtools_tools.browser"
local task = require "devtools_tools.rt.task"
local cdp = require "devtools_tools.wire.cdp"
local webdriver = require "devtools_tools.browser.webdriver"
local background = require "devtools_tools.browser.background"
local host_mod = require "devtools_tools.rt.host"
local controls = require "devtools_tools.base.controls"
local options = require "devtools_tools.base.options"
local debug_env = require "devtools_tools.base.debug"

local type, tostring, ipairs, setmetatable = type, tostring, ipairs, setmetatable

-- The host's time: the loop new tasks run on (the one thing dt.use_loop
-- changes) and the browsers' connections it serves between calls
-- (rt/host.lua). It lives here, in the facade, so the modules beneath take
-- their driver from the task they run in and hold no such setting
-- themselves.
local host = host_mod.new()

local function driver()
  return host:driver()
end

-- use_loop(loop?) -> driver. loop: a luv-compatible module (require "luv",
-- vim.uv, vim.loop) or a driver of one's own (see devtools_tools.rt.loop);
-- nil goes back to the built-in poll loop. Tasks already running keep the
-- loop they started on; the open browsers' connections are watched on the
-- new one.
local function use_loop(l)
  return host:use(l)
end

-- served(browser) -> browser, whose connection the host serves from now on
local function served(b)
  if type(b) == "table" and type(b.conn) == "table" and b.conn.reside then host:serve(b.conn) end
  return b
end

local function launch(opts)
  local b = browser.launch(opts)
  -- (a detached launch's Browser is only its record, without a connection)
  return served(b)
end

local function connect(url, opts)
  return served(browser.connect(url, opts))
end

local function connect_webdriver(url, capabilities, opts)
  return served(webdriver.connect(url, capabilities, opts))
end

-- loop() -> the driver new tasks run on (the built-in poll loop unless
-- use_loop chose another): for code that watches descriptors of its own
-- beside the library's tasks (a stdio server's stdin), with the driver
-- methods README's "Plugging in another loop" lists.
local function current_loop()
  return driver()
end

-- async(fn, on_done?, ...) -> Task: runs fn(...) as a task on the loop,
-- at once until its first wait. on_done(ok, result_or_err, ...) runs on
-- the loop after it ends (never inside async itself).
local function async(fn, on_done, ...)
  if type(fn) ~= "function" then
    errors.raise("bad_argument", "async: expected a function, got " .. type(fn))
  end
  if on_done ~= nil and type(on_done) ~= "function" then
    errors.raise("bad_argument", "async: on_done must be a function, got " .. type(on_done))
  end
  return task.spawn(driver(), fn, on_done, ...)
end

-- debug(what?): "cdp" logs every CDP message to stderr (as the environment
-- variable DEVTOOLS_TOOLS_DEBUG=cdp does); false or nil turns it off.
local function debug(what)
  if what ~= nil and what ~= false and what ~= "cdp" then
    errors.raise("bad_argument", "debug: expected \"cdp\", false or nil, got " .. tostring(what))
  end
  cdp.log.on = what == "cdp"
end

-- new_error(code, message, fields?) -> a dt.Error, not raised: for code
-- around the library (the front ends) that reports in the library's terms.
-- code must be one of the library's codes.
local function new_error(code, message, fields)
  if type(code) ~= "string" or not errors.codes[code] then
    errors.raise("bad_argument", "new_error: expected one of the error codes, got " .. tostring(code))
  end
  if fields ~= nil and type(fields) ~= "table" then
    errors.raise("bad_argument", "new_error: fields must be a table, got " .. type(fields))
  end
  return errors.new(code, message, fields)
end

-- left(deadline) -> the seconds from now to an absolute deadline (on
-- dt.now()'s clock), never below 0: what a call's opts.timeout is when a
-- front end gives several calls one deadline.
local now = core.now
local function left(deadline)
  if type(deadline) ~= "number" or deadline ~= deadline then
    errors.raise("bad_argument", "left: expected a deadline (a number of dt.now() seconds)")
  end
  local l = deadline - now()
  return l > 0 and l or 0
end

-- fd_read(fd, max?) -> bytes (at most max, and 64 KiB; "" when fd holds
-- none now) | nil, why (the
-- input ended, or cannot be read); fd_write(fd, s, from?) -> how many
-- bytes of s from byte `from` went (0: none fit now) | nil, why (the
-- reader is gone, or the write failed). Neither ever waits nor changes
-- the descriptor's flags: for code that watches descriptors on dt.loop()
-- (a stdio server's stdin and stdout).
local function check_fd(fname, fd)
  if type(fd) ~= "number" or fd < 0 or fd % 1 ~= 0 or fd > 2147483647 then
    errors.raise("bad_argument", fname .. ": expected a file descriptor (an integer >= 0), got "
      .. tostring(fd))
  end
end

local function fd_read(fd, max)
  check_fd("fd_read", fd)
  if max ~= nil and (type(max) ~= "number" or max < 1 or max % 1 ~= 0) then
    errors.raise("bad_argument", "fd_read: max must be a whole number of bytes, at least 1")
  end
  local s, why = core.fd.read(fd, max)
  if s == nil then return nil, why end
  return s
end

local function fd_write(fd, s, from)
  check_fd("fd_write", fd)
  if type(s) ~= "string" then errors.raise("bad_argument", "fd_write: expected a string, got " .. type(s)) end
  if from ~= nil and (type(from) ~= "number" or from < 1 or from > #s + 1 or from % 1 ~= 0) then
    errors.raise("bad_argument", "fd_write: from must be a byte position of the string")
  end
  local n, why = core.fd.write(fd, s, from)
  if n == nil then return nil, why end
  return n
end

-- catch_signals(names, opts?) -> Signals: for a program that owns its
-- process (a command line, a stdio server), never the library's own
-- doing. From now on each of names ("TERM", "HUP", "INT") is caught once
-- (a second one of a kind has its default action, so a clean-up that
-- hangs can still be ended): signals:fd() becomes readable (watch it on
-- dt.loop()), and signals:take() gives the oldest caught name, or nil.
-- opts.raise: Lua code of the main thread also raises "interrupted!" at
-- once, as the interpreter does for Ctrl-C, for a program that waits
-- without a loop. signals:release() puts the dispositions back.
local Signals = {}
Signals.__index = Signals
Signals.__name = "devtools_tools.Signals"
function Signals:fd() return self.read_fd end
function Signals:take() return core.signal.take() end
function Signals:release() core.signal.release() end

local SIGNAL_NAMES = { TERM = true, HUP = true, INT = true }
local function catch_signals(names, opts)
  if type(names) ~= "table" or #names == 0 then
    errors.raise("bad_argument", "catch_signals: expected a list of signal names (TERM, HUP, INT)")
  end
  for _, n in ipairs(names) do
    if not SIGNAL_NAMES[n] then
      errors.raise("bad_argument", "catch_signals: unknown signal " .. tostring(n) .. " (TERM, HUP or INT)")
    end
  end
  if opts ~= nil and type(opts) ~= "table" then
    errors.raise("bad_argument", "catch_signals: opts must be a table")
  end
  local fd, why = core.signal.catch(names, opts and opts.raise and true or false)
  if not fd then errors.raise("bad_argument", "catch_signals: " .. tostring(why)) end
  return setmetatable({ read_fd = fd }, Signals)
end

-- std_fd(fname, fd) -> fd when it is 0, 1 or 2; bad_argument otherwise
local function std_fd(fname, fd)
  if fd ~= 0 and fd ~= 1 and fd ~= 2 then
    errors.raise("bad_argument", fname .. ": expected 0, 1 or 2 (stdin, stdout, stderr), got " .. tostring(fd))
  end
  return fd
end

local dt = {
  _VERSION = "devtools_tools 0.1.0",
  -- seconds a call may take by default (every call's opts.timeout, a
  -- front end's command)
  TIMEOUT = options.DEFAULT_TIMEOUT,
  now = now,
  left = left,
  isatty = function(fd) return core.fs.isatty(std_fd("isatty", fd)) end,
  -- term_size(fd) -> columns, rows of the terminal fd (0, 1 or 2) is; nil
  -- when it is none (a pipe, a file) or tells no size
  term_size = function(fd) return core.fs.term_size(std_fd("term_size", fd)) end,
  nojit = require("devtools_tools.base.nojit"),
  -- the one cleaner of page text (base/controls.lua): has(s), clean(s,
  -- rep, bad?), hidden(cp), for what a front end shows
  controls = { has = controls.has, clean = controls.clean, hidden = controls.hidden },
  new_error = new_error,
  launch = launch,
  connect = connect,
  stop_detached = browser.stop_detached,
  background = background.new,
  webdriver = connect_webdriver,
  use_loop = use_loop,
  loop = current_loop,
  fd_read = fd_read,
  fd_write = fd_write,
  async = async,
  wait_all = task.wait_all,
  sleep = function(seconds) return host:sleep(seconds) end,
  current_task = task.current,
  debug = debug,
  -- debugging(what) -> true when DEVTOOLS_TOOLS_DEBUG names that log
  -- ("cdp", "mcp"): its one reader (base/debug.lua), for a front end's log
  debugging = debug_env.wants,
  Task = task.Task,
  Error = errors.Error,
  is_error = errors.is_error,
  is_element = require("devtools_tools.tools.element").is_element,
  null = core.null,
  array_mt = core.array_mt,
  array = json.array,
  json = { encode = json.encode, decode = json.decode, null = core.null,
    array = json.array, array_mt = core.array_mt, object_mt = json.object_mt, kind = json.kind,
    utf8_error = json.utf8_error },
  catch_signals = catch_signals,
}

return dt
