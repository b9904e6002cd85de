-- devtools_tools.schema.formats: the JSON Schema `format` checks the schema module
-- applies to strings, by name.
--
-- The set and the meaning are ajv 6.15's, as Chrome DevTools for agents
-- uses it (chrome-devtools-mcp 1.11.0 validates a tool's arguments with
-- `new Ajv()`, default options): the "fast" formats of
-- lib/compile/formats.js, which are date, time, date-time, uri,
-- uri-reference, uri-template, url, email, hostname, ipv4, ipv6, regex,
-- uuid, json-pointer, json-pointer-uri-fragment and relative-json-pointer.
-- Each check is ajv's regular expression written out, applied to the
-- string as the page holds it (UTF-16 code units; a lone surrogate arrives
-- here as WTF-8), with its flags: where the expression has `i`, ASCII
-- letters match in either case. It is ajv's verdict, not the RFC's: fast
-- mode takes 2020-19-39 for a date, 29:59:59 for a time, "a:" followed by
-- anything but white space for a uri, and refuses 10.0.0.1 as a url. A
-- format applies to strings only; any other value passes, as in ajv.
--
-- One divergence, on purpose: a format ajv 6 does not know (duration,
-- iso-time, iso-date-time, byte, password, binary, int32, int64, float,
-- double, iri, iri-reference, idn-email, idn-hostname, any other name) is
-- ignored here and every value passes. ajv 6 (unknownFormats: true) throws
-- 'unknown format "..." is used in schema' when it compiles such a schema,
-- so the page refuses every call of that tool; we do not refuse them all
-- ourselves, and leave the page to answer.
--
-- `regex` is `new RegExp(s)` compiling (core.regex.check) and no `\Z`
-- after anything but a backslash, as ajv 6 has it.
--
-- What it must never do: raise on any input (malformed UTF-8 included),
-- reach for the network, or hold state: each check is a pure function of
-- one string.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"

local tonumber, floor, ipairs = tonumber, math.floor, ipairs
local schar, concat = string.char, table.concat
local sbyte, sfind, smatch, ssub, sgsub =
      string.byte, string.find, string.match, string.sub, string.gsub

local M = {}

------------------------------------------------------------- white space

-- ECMA-262 WhiteSpace and LineTerminator (what `\s` matches) at byte i of
-- UTF-8 s: its length in bytes, or nil. They are U+0009-000D, U+0020,
-- U+00A0, U+1680, U+2000-200A, U+2028, U+2029, U+202F, U+205F, U+3000 and
-- U+FEFF.
local function space_at(s, i)
  local c = sbyte(s, i)
  if c == nil then return nil end
  if c == 32 or (c >= 9 and c <= 13) then return 1 end
  if c < 0xc2 then return nil end
  local c2, c3 = sbyte(s, i + 1) or 0, sbyte(s, i + 2) or 0
  if c == 0xc2 then
    if c2 == 0xa0 then return 2 end
  elseif c == 0xe1 then
    if c2 == 0x9a and c3 == 0x80 then return 3 end
  elseif c == 0xe2 then
    if c2 == 0x80 and ((c3 >= 0x80 and c3 <= 0x8a) or c3 == 0xa8 or c3 == 0xa9
                       or c3 == 0xaf) then
      return 3
    end
    if c2 == 0x81 and c3 == 0x9f then return 3 end
  elseif c == 0xe3 then
    if c2 == 0x80 and c3 == 0x80 then return 3 end
  elseif c == 0xef then
    if c2 == 0xbb and c3 == 0xbf then return 3 end
  end
  return nil
end

local SPACE_LEAD = "[\t-\r \194\225-\227\239]"

-- Does s hold a `\s` character?
local function has_space(s)
  local i = sfind(s, SPACE_LEAD)
  while i do
    if space_at(s, i) then return true end
    i = sfind(s, SPACE_LEAD, i + 1)
  end
  return false
end

-- Does s hold a line terminator (what `.` does not match)?
local function has_line_end(s)
  return sfind(s, "[\n\r]") ~= nil or sfind(s, "\226\128[\168\169]") ~= nil
end

---------------------------------------------------------- dates, times

--   date: /^\d\d\d\d-[0-1]\d-[0-3]\d$/
--   time: /^(?:[0-2]\d:[0-5]\d:[0-5]\d|23:59:60)(?:\.\d+)?(?:z|[+-]\d\d(?::?\d\d)?)?$/i
--   date-time: /^\d\d\d\d-[0-1]\d-[0-3]\d[t\s]<time, offset required>$/i

M.date = function(s)
  return sfind(s, "^%d%d%d%d%-[01]%d%-[0-3]%d$") ~= nil
end

-- The time of day and fraction from byte i: the byte past them, or nil.
local function clock(s, i)
  local j = smatch(s, "^[0-2]%d:[0-5]%d:[0-5]%d()", i) or smatch(s, "^23:59:60()", i)
  if not j then return nil end
  return smatch(s, "^%.%d+()", j) or j
end

-- The offset from byte j to the end: z, +hh, +hhmm or +hh:mm (any digits).
local function offset(s, j, required)
  if j > #s then return not required end
  return sfind(s, "^[zZ]$", j) ~= nil or sfind(s, "^[%+%-]%d%d$", j) ~= nil
      or sfind(s, "^[%+%-]%d%d:?%d%d$", j) ~= nil
end

M.time = function(s)
  local j = clock(s, 1)
  return j ~= nil and offset(s, j, false)
end

M["date-time"] = function(s)
  if not sfind(s, "^%d%d%d%d%-[01]%d%-[0-3]%d") then return false end
  local c = sbyte(s, 11)
  local w = (c == 116 or c == 84) and 1 or space_at(s, 11)    -- t, T or white space
  if not w then return false end
  local j = clock(s, 11 + w)
  return j ~= nil and offset(s, j, true)
end

-------------------------------------------------------------------- URIs

--   uri: /^(?:[a-z][a-z0-9+\-.]*:)(?:\/?\/)?[^\s]*$/i
M.uri = function(s)
  return sfind(s, "^[A-Za-z][A-Za-z0-9%+%-%.]*:") ~= nil and not has_space(s)
end

--   uri-reference: /^(?:(?:[a-z][a-z0-9+\-.]*:)?\/?\/)?(?:[^\\\s#][^\s#]*)?(?:#[^\\\s]*)?$/i
-- No white space; not a backslash first (the part before the first `#`
-- may start with anything else: a scheme, `/` and `//` are all optional);
-- no backslash after the first `#`.
M["uri-reference"] = function(s)
  if sbyte(s, 1) == 92 or has_space(s) then return false end
  local h = sfind(s, "#", 1, true)
  return not (h and sfind(s, "\\", h + 1, true))
end

--   uri-template: /^(?:(?:[^\x00-\x20"'<>%\\^`{|}]|%[0-9a-f]{2})|\{[+#./;?&=,!@|]?
--     (?:[a-z0-9_]|%[0-9a-f]{2})+(?::[1-9][0-9]{0,3}|\*)?
--     (?:,(?:[a-z0-9_]|%[0-9a-f]{2})+(?::[1-9][0-9]{0,3}|\*)?)*\})*$/i
local NOT_LITERAL = {}
for c in ("\"'<>%\\^`{|}"):gmatch(".") do NOT_LITERAL[sbyte(c)] = true end

-- A variable and its modifier from byte i: the byte past them, or nil.
local function template_var(s, i)
  local j = i
  while true do
    local c = sbyte(s, j)
    if c == 95 or (c and ((c >= 48 and c <= 57) or (c >= 65 and c <= 90) or (c >= 97 and c <= 122))) then
      j = j + 1
    elseif c == 37 and sfind(s, "^%%%x%x", j) then
      j = j + 3
    else
      break
    end
  end
  if j == i then return nil end
  return smatch(s, "^:[1-9]%d?%d?%d?()", j) or smatch(s, "^%*()", j) or j
end

M["uri-template"] = function(s)
  local i, n = 1, #s
  while i <= n do
    local c = sbyte(s, i)
    if c == 123 then                  -- {
      i = i + 1
      if sfind(s, "^[%+#%./;%?&=,!@|]", i) then i = i + 1 end
      while true do
        i = template_var(s, i)
        if not i then return false end
        local d = sbyte(s, i)
        i = i + 1
        if d == 125 then break end    -- }
        if d ~= 44 then return false end
      end
    elseif c == 37 then               -- %
      if not sfind(s, "^%%%x%x", i) then return false end
      i = i + 3
    elseif c <= 32 or NOT_LITERAL[c] then
      return false
    else
      i = i + 1
    end
  end
  return true
end

-------------------------------------------------------------------- url

-- ajv 6's url is dperini's expression (https://gist.github.com/dperini/729294)
-- made to run without the `u` flag, so it works on UTF-16 code units:
--   /^(?:(?:http[s\u017F]?|ftp):\/\/)(?:X+(?::X*)?@)?
--     (?:<public IPv4>|(?:(?:L+-)*L+)(?:\.(?:L+-)*L+)*(?:\.T{2,}))
--     (?::[0-9]{2,5})?(?:\/X*)?$/i
-- where X, L and T each stand for one of
--   a single unit: X not white space and not a surrogate, L
--     [0-9a-z\xA1-\uD7FF\uE000-\uFFFF], T the same without the digits;
--   [\uD800-\uDBFF][\uDC00-\uDFFF] (X only): a surrogate pair;
--   [\uD800-\uDBFF](?![\uDC00-\uDFFF]): a lone high surrogate;
--   (?:[^\uD800-\uDBFF]|^)[\uDC00-\uDFFF]: a low surrogate with the unit
--     before it, whatever that unit is ("a b\uDC00" is two L: "a", " \uDC00";
--     the `^` never applies, the scheme comes first).
-- So astral characters are no part of a host, and a lone surrogate makes
-- the unit before it a letter. The expression is run here as the automaton
-- it is, over the units, which takes time linear in the length.

-- The UTF-16 code units of s from byte `pos` on (a lone surrogate comes as
-- WTF-8), decoded as they are asked for: units(k) makes u[1..k] (fewer at
-- the end of s), with b[k] the byte where unit k starts. Malformed UTF-8
-- gives some units, never an error.
local function decoder(s, pos)
  local u, b, n, len = {}, {}, 0, #s
  local function units(k)
    while n < k and pos <= len do
      local c = sbyte(s, pos)
      local cp
      b[n + 1] = pos
      if c < 0x80 then
        cp, pos = c, pos + 1
      elseif c < 0xe0 then
        cp, pos = (c % 32) * 64 + (sbyte(s, pos + 1) or 0) % 64, pos + 2
      elseif c < 0xf0 then
        cp = (c % 16) * 4096 + (sbyte(s, pos + 1) or 0) % 64 * 64 + (sbyte(s, pos + 2) or 0) % 64
        pos = pos + 3
      else
        cp = (c % 8) * 262144 + (sbyte(s, pos + 1) or 0) % 64 * 4096
             + (sbyte(s, pos + 2) or 0) % 64 * 64 + (sbyte(s, pos + 3) or 0) % 64
        pos = pos + 4
      end
      if cp >= 0x10000 then
        cp = cp - 0x10000
        u[n + 1], u[n + 2] = 0xd800 + floor(cp / 1024) % 1024, 0xdc00 + cp % 1024
        n = n + 2
      else
        n = n + 1
        u[n] = cp
      end
    end
    return n
  end
  return u, b, units
end

local function is_high(x) return x ~= nil and x >= 0xd800 and x <= 0xdbff end
local function is_low(x) return x ~= nil and x >= 0xdc00 and x <= 0xdfff end

local function is_space(x)
  return x == 32 or (x >= 9 and x <= 13) or x == 0xa0 or x == 0x1680
      or (x >= 0x2000 and x <= 0x200a) or x == 0x2028 or x == 0x2029
      or x == 0x202f or x == 0x205f or x == 0x3000 or x == 0xfeff
end

local function is_letter(x)           -- [a-z\xA1-\uD7FF\uE000-\uFFFF], i
  return (x >= 97 and x <= 122) or (x >= 65 and x <= 90)
      or (x >= 0xa1 and x <= 0xd7ff) or (x >= 0xe000 and x <= 0xffff)
end

-- X, L and T at unit i: whether one of length 1, and one of length 2, starts there.
local function x_at(u, i)
  local x, nx = u[i], u[i + 1]
  if is_high(x) then
    if is_low(nx) then return false, true end
    return true, false
  end
  return not is_space(x) and not is_low(x), is_low(nx)
end

local function l_at(u, i, digits)
  local x, nx = u[i], u[i + 1]
  if is_high(x) then return not is_low(nx), false end
  return is_letter(x) or (digits and x >= 48 and x <= 57), is_low(nx)
end

-- The IPv4 alternative, from the ASCII digits and dots h: ajv's lookaheads
-- refuse 10/8, 127/8, 169.254/16, 192.168/16 and 172.16/12 as written;
-- then 1-223, two of 0-255 (leading zeros as written below), 1-254.
local PRIVATE = {
  "^10%.%d%d?%d?%.%d%d?%d?%.%d", "^127%.%d%d?%d?%.%d%d?%d?%.%d",
  "^169%.254%.%d%d?%d?%.%d", "^192%.168%.%d%d?%d?%.%d",
  "^172%.1[6-9]%.%d%d?%d?%.%d", "^172%.2%d%.%d%d?%d?%.%d", "^172%.3[01]%.%d%d?%d?%.%d",
}
local OCTET = {
  { "^[1-9]%d?$", "^1%d%d$", "^2[01]%d$", "^22[0-3]$" },
  { "^1?%d%d?$", "^2[0-4]%d$", "^25[0-5]$" },
  { "^1?%d%d?$", "^2[0-4]%d$", "^25[0-5]$" },
  { "^[1-9]%d?$", "^1%d%d$", "^2[0-4]%d$", "^25[0-4]$" },
}

-- Calls found(e) with the byte past each way octets k.. of h match from byte pos.
local function ipv4_ends(h, k, pos, found)
  for len = 1, 3 do
    local d = ssub(h, pos, pos + len - 1)
    if #d < len or not sfind(d, "^%d+$") then return end
    local ok = false
    for _, p in ipairs(OCTET[k]) do
      if sfind(d, p) then ok = true; break end
    end
    if ok then
      if k == 4 then
        found(pos + len)
      elseif sbyte(h, pos + len) == 46 then
        ipv4_ends(h, k + 1, pos + len + 1, found)
      end
    end
  end
end

-- States of the automaton (after the scheme and "://").
local START, USER, HOST, LABEL, HYPHEN, DOT, TLD1, TLD2, HOSTEND,
      COLON, PORT1, PORT2, PORT3, PORT4, PORT5, PORTEND, PATH =
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17
local NSTATES = 17

-- ε moves, taken in this order (each leads further down the list).
local EPSILON_FROM = { START, TLD2, HOSTEND, PORT2, PORT3, PORT4, PORT5 }
local EPSILON = { [START] = HOST, [TLD2] = HOSTEND, [HOSTEND] = PORTEND,
  [PORT2] = PORTEND, [PORT3] = PORTEND, [PORT4] = PORTEND, [PORT5] = PORTEND }
local DIGIT_FROM = { COLON, PORT1, PORT2, PORT3, PORT4 }

-- A move goes at most 15 units ahead (an IPv4 host): the sets of states
-- for the units ahead live in a ring of RING tables.
local RING = 16

local function url(s)
  local p = smatch(s, "^[hH][tT][tT][pP]://()") or smatch(s, "^[hH][tT][tT][pP][sS]://()")
         or smatch(s, "^[hH][tT][tT][pP]\197\191://()") or smatch(s, "^[fF][tT][pP]://()")
  if not p then return false end
  local lone = sfind(s, "\237[\160-\191]", p) ~= nil   -- a lone surrogate (WTF-8)
  local last_at = smatch(s, "^.*()@") or 0                -- the last @
  local u, b, units = decoder(s, p)
  local ring, ahead = {}, 0           -- ahead: how many sets past the current one are non-empty
  for k = 0, RING - 1 do ring[k] = {} end
  local i = 1
  local function add(j, st)
    local set = ring[j % RING]
    if not set[0] then set[0] = true; ahead = ahead + 1 end
    set[st] = true
  end
  add(1, START)
  while ahead > 0 do
    local set = ring[i % RING]
    if set[0] then
      ahead = ahead - 1
      local n = units(i + RING)
      for k = 1, #EPSILON_FROM do
        local st = EPSILON_FROM[k]
        if set[st] then set[EPSILON[st]] = true end
      end
      if i == n + 1 then return set[PORTEND] == true or set[PATH] == true end
      if set[PATH] and ahead == 0 and not lone and b[i] and b[i] > last_at then
        -- only the path is left (the user part waits for an @ that will
        -- not come): without a lone surrogate, every unit but white space
        -- is an X (a pair is one)
        local only = true
        for st = 1, NSTATES do
          if st ~= PATH and st ~= USER and set[st] then only = false; break end
        end
        if only then return not has_space(ssub(s, b[i])) end
      end
      local x = u[i]                  -- (i <= n here)
      if set[START] or set[USER] or set[PATH] then
        local one, two = x_at(u, i)
        if set[START] or set[USER] then
          if one then add(i + 1, USER) end
          if two then add(i + 2, USER) end
        end
        if set[PATH] then
          if one then add(i + 1, PATH) end
          if two then add(i + 2, PATH) end
        end
      end
      if set[USER] and x == 64 then add(i + 1, HOST) end      -- @
      if set[HOST] or set[LABEL] or set[HYPHEN] or set[DOT] then
        local one, two = l_at(u, i, true)
        if one then add(i + 1, LABEL) end
        if two then add(i + 2, LABEL) end
      end
      if set[LABEL] then
        if x == 45 then add(i + 1, HYPHEN) end                 -- -
        if x == 46 then add(i + 1, DOT) end                    -- .
      end
      if set[DOT] or set[TLD1] or set[TLD2] then
        local one, two = l_at(u, i, false)
        if set[DOT] then
          if one then add(i + 1, TLD1) end
          if two then add(i + 2, TLD1) end
        end
        if set[TLD1] or set[TLD2] then
          if one then add(i + 1, TLD2) end
          if two then add(i + 2, TLD2) end
        end
      end
      if set[HOST] then
        local h = {}
        for k = i, i + 14 do
          local c = u[k]
          if c == nil or not (c == 46 or (c >= 48 and c <= 57)) then break end
          h[#h + 1] = schar(c)
        end
        h = concat(h)
        local private = false
        for _, pat in ipairs(PRIVATE) do
          if sfind(h, pat) then private = true; break end
        end
        if not private then
          ipv4_ends(h, 1, 1, function(e) add(i + e - 1, HOSTEND) end)
        end
      end
      if set[HOSTEND] and x == 58 then add(i + 1, COLON) end   -- :
      if x >= 48 and x <= 57 then
        for k = 1, #DIGIT_FROM do
          if set[DIGIT_FROM[k]] then add(i + 1, DIGIT_FROM[k] + 1) end
        end
      end
      if set[PORTEND] and x == 47 then add(i + 1, PATH) end    -- /
      for st = 0, NSTATES do set[st] = nil end
    end
    i = i + 1
  end
  return false
end

M.url = url

-------------------------------------------------------------- e-mail, hosts

--   email: /^[a-z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?
--            (?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i
--   hostname: /^(?=.{1,253}\.?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?
--               (?:\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*\.?$/i

-- Labels of 1 to 63 letters, digits and inner hyphens, joined by dots.
local function labels(s)
  for label in (s .. "."):gmatch("([^%.]*)%.") do
    if #label > 63 or not (sfind(label, "^[A-Za-z0-9]$")
                           or sfind(label, "^[A-Za-z0-9][A-Za-z0-9%-]*[A-Za-z0-9]$")) then
      return false
    end
  end
  return true
end

M.email = function(s)
  local lp, dom = smatch(s, "^([^@]*)@(.*)$")
  return lp ~= nil and sfind(lp, "^[A-Za-z0-9%.!#%$%%&'%*%+/=%?%^_`{|}~%-]+$") ~= nil
     and labels(dom)
end

M.hostname = function(s)
  local n = #s
  if n == 0 then return false end
  if sbyte(s, n) == 46 then            -- one final dot, outside the 253
    s, n = ssub(s, 1, n - 1), n - 1
    if n == 0 then return false end
  end
  return n <= 253 and labels(s)
end

-------------------------------------------------------------- IP addresses

--   ipv4: /^(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?)$/
-- (leading zeros allowed: 010.001.0.00)
M.ipv4 = function(s)
  local a, b, c, d = smatch(s, "^(%d%d?%d?)%.(%d%d?%d?)%.(%d%d?%d?)%.(%d%d?%d?)$")
  return a ~= nil and tonumber(a) <= 255 and tonumber(b) <= 255
     and tonumber(c) <= 255 and tonumber(d) <= 255
end

-- An IPv4 tail inside ipv6, (?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d) four
-- times: no leading zeros.
local function dotted_quad(s)
  local parts = { smatch(s, "^(%d+)%.(%d+)%.(%d+)%.(%d+)$") }
  if #parts ~= 4 then return false end
  for _, p in ipairs(parts) do
    if #p > 3 or (#p > 1 and sbyte(p, 1) == 48) or tonumber(p) > 255 then return false end
  end
  return true
end

-- Each group 1 to 4 hex digits; `s` may be empty (no groups).
local function hex_groups(s)
  if s == "" then return 0 end
  local n = 0
  for g in (s .. ":"):gmatch("([^:]*):") do
    if not smatch(g, "^%x%x?%x?%x?$") then return nil end
    n = n + 1
  end
  return n
end

-- The address: eight groups, or fewer around one "::" (at most seven); an
-- IPv4 tail counts as two. ajv's expression lists exactly these forms.
local function ipv6_address(s)
  if s == "" or sfind(s, "[^%x:%.]") then return false end
  if sfind(s, ".", 1, true) then
    local colon = smatch(s, "^.*():")
    if not colon or not dotted_quad(ssub(s, colon + 1)) then return false end
    s = ssub(s, 1, colon) .. "0:0"
  end
  local dc = sfind(s, "::", 1, true)
  if dc then
    if sfind(s, "::", dc + 1, true) then return false end
    local l, r = hex_groups(ssub(s, 1, dc - 1)), hex_groups(ssub(s, dc + 2))
    return l ~= nil and r ~= nil and l + r <= 7
  end
  return hex_groups(s) == 8
end

--   ipv6: /^\s*(?:<the address>)(?:%.+)?\s*$/i
-- White space around; after a `%`, a zone of at least one character where
-- no line terminator comes before the last character that is not white space.
M.ipv6 = function(s)
  local i, n = 1, #s
  while true do
    local w = space_at(s, i)
    if not w then break end
    i = i + w
  end
  local j = sfind(s, "[^%x:%.]", i) or n + 1   -- the address ends at % or white space
  if j <= n and sbyte(s, j) ~= 37 and not space_at(s, j) then return false end
  if not ipv6_address(ssub(s, i, j - 1)) then return false end
  if sbyte(s, j) == 37 then           -- %
    local zone = ssub(s, j + 1)
    if zone == "" then return false end
    local k, last = 1, 0
    while k <= #zone do
      local w = space_at(zone, k)
      if w then k = k + w else last = k; k = k + 1 end
    end
    if last == 0 then last = space_at(zone, 1) end  -- all white space: `.` takes the first
    return not has_line_end(ssub(zone, 1, last))
  end
  while j <= n do
    local w = space_at(s, j)
    if not w then return false end
    j = j + w
  end
  return true
end

------------------------------------------------------------------- others

--   uuid: /^(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$/i
M.uuid = function(s)
  local p = smatch(s, "^[uU][rR][nN]:[uU][uU][iI][dD]:()") or 1
  return sfind(s, "^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$", p) ~= nil
end

--   json-pointer: /^(?:\/(?:[^~/]|~0|~1)*)*$/
M["json-pointer"] = function(s)
  if s ~= "" and sbyte(s, 1) ~= 47 then return false end
  return not sfind(sgsub(s, "~[01]", ""), "~", 1, true)
end

--   json-pointer-uri-fragment:
--     /^#(?:\/(?:[a-z0-9_\-.!$&'()*+,;:=@]|%[0-9a-f]{2}|~0|~1)*)*$/i
local FRAGMENT = {}
for c in ("_-.!$&'()*+,;:=@/"):gmatch(".") do FRAGMENT[sbyte(c)] = true end
for c = 48, 57 do FRAGMENT[c] = true end
for c = 65, 90 do FRAGMENT[c] = true; FRAGMENT[c + 32] = true end

M["json-pointer-uri-fragment"] = function(s)
  if sbyte(s, 1) ~= 35 then return false end
  local n = #s
  if n > 1 and sbyte(s, 2) ~= 47 then return false end
  local i = 2
  while i <= n do
    local c = sbyte(s, i)
    if c == 37 then                   -- %
      if not sfind(s, "^%%%x%x", i) then return false end
      i = i + 3
    elseif c == 126 then              -- ~
      if not sfind(s, "^~[01]", i) then return false end
      i = i + 2
    elseif FRAGMENT[c] then
      i = i + 1
    else
      return false
    end
  end
  return true
end

--   relative-json-pointer: /^(?:0|[1-9][0-9]*)(?:#|(?:\/(?:[^~/]|~0|~1)*)*)$/
M["relative-json-pointer"] = function(s)
  local num, rest = smatch(s, "^(%d+)(.*)$")
  if not num or (#num > 1 and sbyte(num, 1) == 48) then return false end
  return rest == "#" or M["json-pointer"](rest)
end

--   regex: !/[^\\]\\Z/.test(s) && new RegExp(s) compiles
-- z_anchor(s): a \Z after anything but a backslash, which ajv 6 refuses
-- (an anchor elsewhere, the letter Z in JavaScript); the schema compiler
-- asks it of every pattern too.
local function z_anchor(s)
  return sfind(s, "[^\\]\\Z") ~= nil
end

M.regex = function(s)
  return not z_anchor(s) and core.regex.check(s) == true
end

return { string = M, z_anchor = z_anchor }
