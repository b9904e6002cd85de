-- devtools_tools.cli: the command line, `devtools-tools` (bin/devtools-tools
-- only finds the library and calls main).
--
-- Lists, calls and scripts the developer tools a web page exposes, in a
-- headless Chromium it launches, in one it keeps in the background
-- (`devtools-tools browser start`), or in one given with --connect. Built
-- on the public API (require "devtools_tools") and present/ only:
--   cli.argv        the words: command, options, usage errors
--   cli.help        the help texts
--   cli.commands    list, call, describe, eval, screenshot, run, tabs, browser, mcp
--   cli.mcp         the MCP server on stdio
--   cli.target      the browser and the page a command works on
--   cli.tabs        the tabs of a running browser: which one, `tabs`
--   cli.background  browser start|stop|status, where it is recorded
--   cli.output      stdout, progress, warnings and errors on stderr
--
-- SIGTERM and SIGHUP end a command as Ctrl-C does (the interpreter's
-- "interrupted!" raised in its Lua code: dt.catch_signals with raise), so
-- the way out closes what it opened - a launched browser, a tab it was
-- opening in a running one - before the exit; `mcp` catches all three on
-- its loop instead (cli.mcp).
--
-- It must never: print anything but the result on stdout, leave a browser
-- it launched running, treat a page-provided name or text as anything but
-- data, spawn a shell, or catch a signal but these three. Exit status: 0
-- success, 1 a dt.Error (or stdout that cannot be written), 2 a usage
-- error, 128 + the signal's number after one (130 interrupted, 143
-- SIGTERM, 129 SIGHUP). Runs on Lua 5.4 and LuaJIT.

local dt = require "devtools_tools"
local argv = require "devtools_tools.cli.argv"
local help = require "devtools_tools.cli.help"
local output = require "devtools_tools.cli.output"
local text = require "devtools_tools.present.text"
local commands = require "devtools_tools.cli.commands"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local getmetatable, tostring, type, xpcall, error, ipairs = getmetatable, tostring, type, xpcall, error, ipairs
local unpack = table.unpack or unpack
local usage = argv.usage

local M = {}

local PROG = output.PROG

-- Our errors as they are; anything else (a bug) with its traceback.
local function handler(e)
  if getmetatable(e) == argv.Usage or getmetatable(e) == commands.ScriptError or dt.is_error(e) then
    return e
  end
  if type(e) == "string" and e:find("\nstack traceback:", 1, true) then return e end
  return debug.traceback(tostring(e), 2)
end

local function version(out)
  out:emit(PROG, " (", dt._VERSION, ", ", _VERSION, ")\n")
  return 0
end

-- command(out, words) -> exit status; raises usage errors and dt.Errors
local function command(out, words, state)
  words = argv.split_command(words)
  local cmd = words[1]
  if cmd == nil then                   -- a usage error: the help goes where errors go
    io.stderr:write(help.text())
    return 2
  end
  if cmd == "--version" then return version(out) end
  if cmd == "-h" or cmd == "--help" or cmd == "help" then
    -- help [COMMAND], --help [COMMAND]: the common options may come too
    local _, ws = argv.parse({ unpack(words, 2) })
    local topic = ws[1]
    if #ws > 1 then usage("help takes one command name") end
    if topic ~= nil and not help.has(topic) then usage("no help on " .. topic .. ": not a command") end
    out:emit(help.text(topic))
    return 0
  end
  local fn = commands.get(cmd)
  if not fn then
    local names = { "help" }
    for i, n in ipairs(commands.NAMES) do names[i + 1] = n end
    local meant = text.nearest(cmd, names)
    usage("unknown command " .. text.clean(cmd) .. (meant and ("; did you mean " .. meant .. "?") or ""))
  end
  local opts, pos, rest = argv.parse({ unpack(words, 2) }, cmd)
  state.verbose = opts.verbose
  local described_call = false
  if opts.help and cmd == "call" and (pos[1] ~= nil or (rest and rest[1] ~= nil)) then
    -- `call [URL] TOOL --help`: that tool's description and schema
    cmd, fn, opts.help, described_call = "describe", commands.get("describe"), nil, true
  end
  if rest and cmd ~= "run" and cmd ~= "call" and cmd ~= "eval" then
    -- after "--", words are positional (a URL or a file that starts with -)
    for _, w in ipairs(rest) do pos[#pos + 1] = w end
    rest = nil
  end
  if opts.help then out:emit(help.text(cmd)) return 0 end
  if opts.version then return version(out) end     -- (after the command too, as the man page says)
  if opts.json and cmd ~= "list" and cmd ~= "tabs" and cmd ~= "describe" then
    usage("--json is an option of list, describe and tabs", cmd)
  end
  if (opts["full-page"] or opts.element) and cmd ~= "screenshot" then
    usage("--full-page and --element are options of screenshot", cmd)
  end
  if opts.compact and cmd ~= "call" and cmd ~= "eval" and cmd ~= "list" then
    usage("--compact is an option of call, eval and list", cmd)
  end
  for _, o in ipairs({ "allow-eval", "no-webmcp", "trust-page", "allow-navigate" }) do
    if opts[o] and cmd ~= "mcp" then usage("--" .. o .. " is an option of mcp", cmd) end
  end
  if opts.connect and (opts.headful or opts.chromium) then
    usage("--connect uses a running browser: --headful and --chromium launch one", cmd)
  end
  if opts.debug then dt.debug("cdp") end
  local timeout = opts.timeout or dt.TIMEOUT
  local deadline = dt.now() + timeout
  local function too_late(what)
    return dt.new_error("timeout", "the command did not finish within " .. string.format("%g", timeout)
      .. " s (--timeout)" .. (what and (": " .. what) or ""))
  end
  local ctx = { opts = opts, pos = pos, rest = rest, out = out, progress = out:progress(opts.quiet),
    state = state, described_call = described_call }
  local late                        -- the error left() raised, if it did
  -- left() -> what is left of the command's deadline, for the next step
  function ctx.left()
    local l = dt.left(deadline)
    if l <= 0 then
      late = too_late()
      error(late, 0)
    end
    return l
  end
  local ok, res = xpcall(function() return fn(ctx) end, handler)
  ctx.progress:done()
  if ok then return res end
  -- The command's deadline ran out: say it was --timeout, and what was
  -- going on (every step is given what is left of it, on the library's
  -- clock, so a timeout is always it).
  if dt.is_error(res) and res.code == "timeout" and res ~= late then
    local e = too_late(tostring(res.message):match("^[^\n]*"))
    e.details = res.details
    error(e, 0)
  end
  error(res, 0)
end

local SIGNALS = { TERM = 15, HUP = 1, INT = 2 }

-- main(words) -> exit status: runs the command, and writes its errors
function M.main(words)
  local out = output.new()
  local state = {}
  local signals = dt.catch_signals({ "TERM", "HUP" }, { raise = true })
  local ok, res = xpcall(command, handler, out, words or {}, state)
  local caught = signals:take()
  signals:release()
  if ok then
    local written, why = out:finish()
    if not written then
      out:note("cannot write the output: " .. why)
      return 1
    end
    return res or 0
  end
  if getmetatable(res) == argv.Usage then
    out:usage(res)
    return 2
  elseif dt.is_error(res) then
    out:error(res, state.verbose)
    if state.where then out:note("(raised at " .. state.where .. ")") end
    return 1
  elseif getmetatable(res) == commands.ScriptError then
    out:note("error in script: " .. res.text)
    return 1
  end
  -- Ctrl-C: the interpreter raises "interrupted!" in Lua code; the browser
  -- was closed on the way out. Exit as a shell expects after SIGINT.
  if tostring(res):match("^[^\n]*interrupted!") then
    out:note(caught and ("ended by SIG" .. caught) or "interrupted")
    return 128 + SIGNALS[caught or "INT"]
  end
  out:note("internal error: " .. tostring(res))
  return 1
end

return M
