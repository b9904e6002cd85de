-- devtools_tools.trace: a session of tool calls kept as a trace and used
-- again - dt.record (record.lua), and dt.trace: read and parse
-- (format.lua), compare (compare.lua), replay (replay.lua), lua (the
-- recipe export.lua writes) and write (a trace whole, for --update).
--
-- What it must never do: hold state of its own (a Recorder is the
-- caller's object), or reach a page or a browser other than through
-- their public methods and events.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local format = require "devtools_tools.trace.format"
local record = require "devtools_tools.trace.record"
local compare = require "devtools_tools.trace.compare"
local replay = require "devtools_tools.trace.replay"
local export = require "devtools_tools.trace.export"
local values = require "devtools_tools.trace.values"

return {
  FORMAT = format.FORMAT,
  VERSION = format.VERSION,
  LIMIT = values.LIMIT,
  record = record.record,
  read = format.read,
  parse = format.parse,
  write = format.write,
  diff = compare.diff,
  ignorer = compare.ignorer,
  pointer = compare.pointer,
  ABSENT = compare.ABSENT,
  replay = replay.replay,
  rebase = replay.rebase,
  lua = export.lua,
}
