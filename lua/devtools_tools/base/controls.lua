-- devtools_tools.base.controls: the one cleaner of page text. A page's
-- strings reach terminals and editors (a front end's line, a debug log,
-- pretty JSON), where some characters act instead of showing: the C0
-- controls (escape sequences start with one) and DEL, the C1 controls
-- (U+0080-009F, CSI among them) and the bidirectional overrides and
-- isolates that reorder a line (U+202A-202E, U+2066-2069). This module
-- says which those are and finds them; each use says what they become
-- (present/text: "?"; present/pretty: \u escapes inside JSON strings;
-- the CDP debug log: \u escapes, and \xNN for a byte that is not UTF-8).
--
-- What it must never do: take more than linear time on any input, or
-- change a character it was not asked to (text without them is returned
-- as it is).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local byte, sfind, ssub, sformat, concat = string.byte, string.find, string.sub, string.format, table.concat

local M = {}

-- hidden(cp) -> true for a code point that acts instead of showing
function M.hidden(cp)
  return cp <= 0x9F and (cp >= 0x7F or cp < 0x20)
    or (cp >= 0x202A and cp <= 0x202E) or (cp >= 0x2066 and cp <= 0x2069)
end
local hidden = M.hidden

-- The code point of the UTF-8 sequence at s[i] (lead byte b) and its
-- length; nil for a byte that starts no valid sequence (a stray
-- continuation, an overlong form, a surrogate, past U+10FFFF, cut short).
local function utf8_at(s, i, b)
  local c1, c2, c3 = byte(s, i + 1, i + 3)
  if not c1 or c1 < 0x80 or c1 > 0xBF then return nil end
  if b >= 0xC2 and b <= 0xDF then return (b - 0xC0) * 64 + (c1 - 0x80), 2 end
  if not c2 or c2 < 0x80 or c2 > 0xBF then return nil end
  if b >= 0xE0 and b <= 0xEF then
    if (b == 0xE0 and c1 < 0xA0) or (b == 0xED and c1 > 0x9F) then return nil end
    return (b - 0xE0) * 4096 + (c1 - 0x80) * 64 + (c2 - 0x80), 3
  end
  if not c3 or c3 < 0x80 or c3 > 0xBF then return nil end
  if b >= 0xF0 and b <= 0xF4 then
    if (b == 0xF0 and c1 < 0x90) or (b == 0xF4 and c1 > 0x8F) then return nil end
    return (b - 0xF0) * 262144 + (c1 - 0x80) * 4096 + (c2 - 0x80) * 64 + (c3 - 0x80), 4
  end
  return nil
end

-- The bytes a hidden character starts with: C0, DEL, and the lead bytes
-- of C1 (C2) and of the overrides (E2). Every byte but ASCII, when bytes
-- that are not UTF-8 are looked for too.
local LEADS = "[%z\1-\31\127\194\226]"
local ANY = "[%z\1-\31\127-\255]"

-- has(s) -> true when s may hold a hidden character (a byte one starts
-- with: a quick look before a clean)
function M.has(s)
  return sfind(s, LEADS) ~= nil
end

-- clean(s, rep, bad?) -> s, each hidden character replaced by rep(cp)
-- (nil: kept), and, when bad is given, each byte that starts no valid
-- UTF-8 sequence by bad(byte) (nil: kept). One pass, jumping from one
-- candidate byte to the next.
function M.clean(s, rep, bad)
  local pattern = bad and ANY or LEADS
  local i = sfind(s, pattern)
  if not i then return s end
  local out, n, from, len = {}, 0, 1, #s
  while i and i <= len do
    local b = byte(s, i)
    local size, r = 1, nil
    if b < 0x80 then
      if b < 0x20 or b == 0x7F then r = rep(b) end
    else
      local cp, k = utf8_at(s, i, b)
      if not cp then
        if bad then r = bad(b) end
      else
        size = k
        if hidden(cp) then r = rep(cp) end
      end
    end
    if r then
      out[n + 1], out[n + 2] = ssub(s, from, i - 1), r
      n = n + 2
      from = i + size
    end
    i = sfind(s, pattern, i + size)
  end
  if n == 0 then return s end
  out[n + 1] = ssub(s, from)
  return concat(out)
end

-- u_escape(cp) -> "\uXXXX" (inside a JSON string: the same value);
-- x_escape(byte) -> "\xNN" (which JSON never writes)
function M.u_escape(cp) return sformat("\\u%04x", cp) end
function M.x_escape(b) return sformat("\\x%02x", b) end

return M
