-- devtools_tools.wire.log: the debug log of CDP messages
-- (DEVTOOLS_TOOLS_DEBUG=cdp, dt.debug("cdp")): one line per message sent
-- or received, on stderr, cut and cleaned.
--
-- What it must never do: write page text to a terminal as it is (it is
-- cleaned: base/controls.lua), or cost more than a field test per message
-- when off.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local json = require "devtools_tools.base.json"
local controls = require "devtools_tools.base.controls"
local debug_env = require "devtools_tools.base.debug"

local now = core.now
local encode = json.encode
local sformat, byte, pcall = string.format, string.byte, pcall

local M = {}

-- The debug log (DEVTOOLS_TOOLS_DEBUG=cdp, or dt.debug("cdp")): one line per
-- message sent or received, on stderr (log.out: anything with a write
-- method). Off, it costs one field test per message. It is process-wide by
-- nature, like the environment variable.
M.state = { on = debug_env.wants("cdp"),
  width = 400, t0 = now(), out = io.stderr }

-- A log line is the JSON of a message, whose strings a page wrote, on a
-- terminal: what could drive the terminal or disguise the line comes out
-- escaped, visibly (base/controls.lua): a hidden character as \uXXXX,
-- which inside a JSON string reads as the same value (a tab too: a line is
-- one line, and a tab hides among spaces); a byte that is not UTF-8 as
-- \xNN, which JSON never writes.
local function clean_log(s)
  return controls.clean(s, controls.u_escape, controls.x_escape)
end
M.clean_log = clean_log

function M.line(dir, session, text)
  local L = M.state
  if #text > L.width then
    -- cut before a character the width would split: the cut shows as the
    -- count, never as bytes that are not UTF-8
    local cut = L.width
    for _ = 1, 3 do
      local b = byte(text, cut + 1)
      if b < 0x80 or b > 0xBF then break end
      cut = cut - 1
    end
    text = text:sub(1, cut) .. sformat("... (%d bytes)", #text)
  end
  L.out:write(clean_log(sformat("devtools_tools cdp %9.3f %s %s%s", now() - L.t0, dir,
    session and ("[" .. session:sub(1, 8) .. "] ") or "", text)), "\n")
end

-- received(msg): a message that came, logged (one that cannot be written
-- as JSON says so)
function M.received(msg)
  local ok, text = pcall(encode, msg)
  M.line("<-", msg.sessionId, ok and text or "(a message that cannot be shown)")
end

return M
