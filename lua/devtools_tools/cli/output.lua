-- devtools_tools.cli.output: what the command line writes - the result on
-- stdout, and on stderr progress (only on a terminal), warnings and errors
-- (rendered by present.errors, bounded; whole with --verbose).
--
-- It must never write anything but the result on stdout, nor page text
-- that is not cleaned on stderr; a write to stdout that fails is kept and
-- makes the command fail at the end (a full disk, a closed descriptor).

local dt = require "devtools_tools"
local text = require "devtools_tools.present.text"
local perrors = require "devtools_tools.present.errors"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local setmetatable, tostring, tonumber = setmetatable, tostring, tonumber
local clean = text.clean

local M = {}

M.PROG = "devtools-tools"
local PROG = M.PROG

-- The rule a refused remote host is told (the library's way out,
-- allow_remote, is no option here).
M.REMOTE_RULE = "the command line connects to loopback hosts only: 127.0.0.1, ::1, localhost"

local Out = {}
Out.__index = Out

-- new() -> Out: one per run of the command
function M.new()
  return setmetatable({ write_failed = nil, tty = nil, cols = nil }, Out)
end

-- emit(...): to stdout; a failure is remembered (finish reports it)
function Out:emit(...)
  local ok, err = io.stdout:write(...)
  if not ok then self.write_failed = self.write_failed or err end
end

-- finish() -> true | false, why: stdout flushed and every write taken
function Out:finish()
  local flushed, why = io.stdout:flush()
  if self.write_failed or not flushed then return false, tostring(self.write_failed or why) end
  return true
end

-- width() -> the columns a table on stdout may take: $COLUMNS when it is
-- a number, else the terminal's width when stdout is one; nil (no limit)
-- when it goes to a pipe or a file
function Out:width()
  if self.cols == nil then
    local c = tonumber(os.getenv("COLUMNS") or "")
    if c and c >= 20 and c % 1 == 0 then self.cols = c
    else self.cols = dt.term_size(1) or false end
  end
  return self.cols or nil
end

-- plain(): no colours and no progress from now on, whatever stderr is
-- (the REPL reading a pipe prints plain text)
function Out:plain()
  self.tty = false
end

function Out:stderr_is_tty()
  if self.tty == nil then self.tty = dt.isatty(2) end
  return self.tty
end

function Out:colour_ok()
  local nc = os.getenv("NO_COLOR")
  return (nc == nil or nc == "") and os.getenv("TERM") ~= "dumb" and self:stderr_is_tty()
end

-- warn(s): "devtools-tools: warning: s" (page text, cleaned)
function Out:warn(s)
  io.stderr:write(PROG, ": warning: ", clean(s), "\n")
end

-- note(s): "devtools-tools: s" (ours)
function Out:note(s)
  io.stderr:write(PROG, ": ", s, "\n")
end

-- usage(err): a usage error, and where its help is
function Out:usage(err)
  io.stderr:write(PROG, ": ", err.message, "\n", "Try `", PROG, " ",
    err.cmd and (err.cmd .. " --help") or "--help", "`.\n")
end

-- error(err, verbose): a dt.Error as "devtools-tools: CODE: message" (red
-- on a terminal), then its schema errors; bounded unless verbose, which
-- writes it whole (the stack too).
function Out:error(err, verbose)
  local red, off = "", ""
  if self:colour_ok() then red, off = "\27[31m", "\27[0m" end
  if verbose then
    io.stderr:write(red, PROG, ": ", perrors.whole(err), off, "\n")
    return
  end
  local lines, cut = perrors.render(err, { remote = M.REMOTE_RULE })
  io.stderr:write(red, PROG, ": ", lines[1], off, "\n")
  if #lines > 1 then io.stderr:write(table.concat(lines, "\n", 2), "\n") end
  if cut then io.stderr:write(PROG, ": (--verbose shows the whole error)\n") end
end

-- ---- progress ---------------------------------------------------------------------

local Progress = {}
Progress.__index = Progress

-- progress(quiet) -> Progress: steps on stderr, only on a terminal and
-- without --quiet; redrawn on one line when colours are on
function Out:progress(quiet)
  local p = setmetatable({ on = false, colour = false, shown = false }, Progress)
  if not quiet and self:stderr_is_tty() then
    p.on = true
    p.colour = self:colour_ok()
  end
  return p
end

function Progress:step(s)
  if not self.on then return end
  if self.colour then
    io.stderr:write("\r\27[K\27[2m", clean(s), "...\27[0m")
    self.shown = true
  else
    io.stderr:write(clean(s), "...\n")
  end
  io.stderr:flush()
end

function Progress:done()
  if self.on and self.shown then
    io.stderr:write("\r\27[K")
    io.stderr:flush()
    self.shown = false
  end
end

return M
