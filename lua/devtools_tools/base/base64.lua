-- devtools_tools.base.base64: decoding the base64 text CDP uses for binary data
-- (screenshots, response bodies), with the C core's decoder (src/base64.c:
-- a full-page screenshot is tens of MB of it).
--
-- What it must never do: accept text that is not base64 (a stray byte is a
-- protocol_error, not silently skipped), or keep state between calls.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local errors = require "devtools_tools.base.errors"
local core = require "devtools_tools.core"

local base64_decode = core.base64.decode

local M = {}

-- decode(text) -> bytes; CR and LF are ignored, anything else outside
-- the alphabet (or "=" before the end) is a protocol_error naming its byte
function M.decode(s)
  local bytes, err = base64_decode(s)
  if bytes == nil then errors.raise("protocol_error", "base64: " .. err) end
  return bytes
end

return M
