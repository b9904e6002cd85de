-- devtools_tools.base64: decoding the base64 text CDP uses for binary data
-- (screenshots, response bodies), in plain Lua that runs on 5.1 and LuaJIT
-- (no bitwise operators).
--
-- What it must never do: accept text that is not base64 (a stray byte is a
-- protocol_error, not silently skipped), or keep state between calls.

require("devtools_tools.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local errors = require "devtools_tools.errors"

local byte, char, concat = string.byte, string.char, table.concat
local floor = math.floor
local unpack = table.unpack or unpack

local M = {}

local VALUE = {}
do
  local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
  for i = 1, #alphabet do VALUE[byte(alphabet, i)] = i - 1 end
end

local function bad(pos)
  errors.raise("protocol_error", "base64: not base64 text at byte " .. pos)
end

-- decode(text) -> bytes
function M.decode(s)
  s = s:gsub("[\r\n]", "")
  local n = #s
  if n % 4 ~= 0 then bad(n) end
  local out, k = {}, 0
  local chunk, c = {}, 0
  for i = 1, n, 4 do
    local b1, b2, b3, b4 = byte(s, i, i + 3)
    local v1, v2 = VALUE[b1], VALUE[b2]
    if not v1 or not v2 then bad(i) end
    local v3, v4 = VALUE[b3], VALUE[b4]
    local x = v1 * 262144 + v2 * 4096
    if v4 then
      if not v3 then bad(i + 2) end
      x = x + v3 * 64 + v4
      c = c + 3
      chunk[c - 2], chunk[c - 1], chunk[c] = floor(x / 65536), floor(x / 256) % 256, x % 256
    elseif b4 == 61 and i + 3 == n then         -- "=" padding, only at the end
      if v3 then
        x = x + v3 * 64
        c = c + 2
        chunk[c - 1], chunk[c] = floor(x / 65536), floor(x / 256) % 256
      elseif b3 == 61 then
        c = c + 1
        chunk[c] = floor(x / 65536)
      else
        bad(i + 2)
      end
    else
      bad(i + 3)
    end
    if c >= 3000 then
      k = k + 1
      out[k] = char(unpack(chunk, 1, c))
      c = 0
    end
  end
  if c > 0 then k = k + 1; out[k] = char(unpack(chunk, 1, c)) end
  return concat(out)
end

return M
