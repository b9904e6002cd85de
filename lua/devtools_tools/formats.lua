-- devtools_tools.formats: the JSON Schema `format` checks the schema module
-- applies, by name.
--
-- The set is the one ajv (with ajv-formats, "full" mode) knows, so a page's
-- schema means here what it means in Chrome DevTools for agents; a format
-- outside this set is ignored, as ajv ignores it. Where ajv's regular
-- expression and the RFC disagree, the RFC wins (RFC 3339 dates and times,
-- RFC 3986 URIs, RFC 1123/5890 host names with IDNA A-labels, RFC 6570
-- templates, RFC 6901 pointers). Each check is a pure function of one value;
-- none may ever raise on any input, nor reach for the network.

require("devtools_tools.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"

local tonumber, floor = tonumber, math.floor
local sbyte, sfind, smatch, ssub, sgsub, slower, schar =
      string.byte, string.find, string.match, string.sub, string.gsub,
      string.lower, string.char

local M = {}

-- Regexes for the few checks that need Unicode properties, compiled once.
local rx_cache = {}
local function rx(pattern)
  local r = rx_cache[pattern]
  if r == nil then
    r = assert(core.regex_compile(pattern, "u"))
    rx_cache[pattern] = r
  end
  return r
end

---------------------------------------------------------------- dates, times

local function leap(y)
  return y % 4 == 0 and (y % 100 ~= 0 or y % 400 == 0)
end

local mdays = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }

local function date(s)
  local y, m, d = smatch(s, "^(%d%d%d%d)%-(%d%d)%-(%d%d)$")
  if not y then return false end
  y, m, d = tonumber(y), tonumber(m), tonumber(d)
  if m < 1 or m > 12 or d < 1 then return false end
  local max = mdays[m]
  if m == 2 and leap(y) then max = 29 end
  return d <= max
end

-- RFC 3339 full-time; `strict` requires the offset (ajv's "time"), the
-- relaxed form is ajv's "iso-time".
local function time(s, relaxed)
  local h, mi, sec, rest = smatch(s, "^(%d%d):(%d%d):(%d%d)(.*)$")
  if not h then return false end
  local frac = smatch(rest, "^%.%d+")
  if frac then rest = ssub(rest, #frac + 1) end
  h, mi, sec = tonumber(h), tonumber(mi), tonumber(sec)
  if h > 23 or mi > 59 or sec > 60 then return false end
  local off = 0                       -- minutes east of UTC
  if rest == "z" or rest == "Z" then
    off = 0
  elseif rest == "" then
    if not relaxed then return false end
  else
    local sign, oh, om = smatch(rest, "^([%+%-])(%d%d):(%d%d)$")
    if not sign then return false end
    oh, om = tonumber(oh), tonumber(om)
    if oh > 23 or om > 59 then return false end
    off = oh * 60 + om
    if sign == "-" then off = -off end
  end
  if sec == 60 then                   -- a leap second happens at 23:59 UTC
    if (h * 60 + mi - off) % 1440 ~= 23 * 60 + 59 then return false end
  end
  return true
end

local function date_time(s, relaxed)
  local d, t = smatch(s, "^(%d%d%d%d%-%d%d%-%d%d)[Tt](.*)$")
  if not d and relaxed then d, t = smatch(s, "^(%d%d%d%d%-%d%d%-%d%d) (.*)$") end
  return d ~= nil and date(d) and time(t, relaxed)
end

M.date = date
M.time = function(s) return time(s, false) end
M["date-time"] = function(s) return date_time(s, false) end
M["iso-time"] = function(s) return time(s, true) end
M["iso-date-time"] = function(s) return date_time(s, true) end

M.duration = function(s)
  return rx("^P(?!$)((\\d+Y)?(\\d+M)?(\\d+D)?(T(?=\\d)(\\d+H)?(\\d+M)?(\\d+S)?)?|(\\d+W)?)$"):test(s) == true
end

-------------------------------------------------------------- IP addresses

local function ipv4(s)
  local parts = { smatch(s, "^(%d+)%.(%d+)%.(%d+)%.(%d+)$") }
  if #parts ~= 4 then return false end
  for i = 1, 4 do
    local p = parts[i]
    if #p > 3 or (#p > 1 and sbyte(p, 1) == 48) or tonumber(p) > 255 then
      return false
    end
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

local function ipv6(s)
  if s == "" or sfind(s, "[^%x:%.]") then return false end
  if sfind(s, ".", 1, true) then      -- an IPv4 tail counts as two groups
    local colon = smatch(s, "^.*():")
    if not colon or not ipv4(ssub(s, colon + 1)) then return false end
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

M.ipv4 = ipv4
M.ipv6 = ipv6

-------------------------------------------------------------- host names

-- RFC 3492 Punycode, decoding only: a list of code points, or nil.
local function adapt(delta, numpoints, first)
  delta = first and floor(delta / 700) or floor(delta / 2)
  delta = delta + floor(delta / numpoints)
  local k = 0
  while delta > 455 do                -- ((36 - 1) * 26) / 2
    delta = floor(delta / 35)
    k = k + 36
  end
  return k + floor(36 * delta / (delta + 38))
end

local function puny_digit(c)
  if c >= 48 and c <= 57 then return c - 22 end
  if c >= 65 and c <= 90 then return c - 65 end
  if c >= 97 and c <= 122 then return c - 97 end
  return nil
end

local function punycode_decode(s)
  local out, b = {}, 0
  for j = #s, 1, -1 do
    if sbyte(s, j) == 45 then b = j; break end
  end
  for j = 1, b - 1 do out[#out + 1] = sbyte(s, j) end
  local n, i, bias, pos = 128, 0, 72, b + 1
  while pos <= #s do
    local oldi, w, k = i, 1, 36
    while true do
      if pos > #s then return nil end
      local digit = puny_digit(sbyte(s, pos))
      pos = pos + 1
      if not digit then return nil end
      i = i + digit * w
      if i > 0x7fffffff then return nil end
      local t = k <= bias and 1 or (k >= bias + 26 and 26 or k - bias)
      if digit < t then break end
      w = w * (36 - t)
      k = k + 36
    end
    local len = #out + 1
    bias = adapt(i - oldi, len, oldi == 0)
    n = n + floor(i / len)
    i = i % len
    if n > 0x10ffff or (n >= 0xd800 and n <= 0xdfff) then return nil end
    table.insert(out, i + 1, n)
    i = i + 1
  end
  return out
end

local function utf8_char(cp)
  if cp < 0x80 then return schar(cp) end
  if cp < 0x800 then
    return schar(0xc0 + floor(cp / 64), 0x80 + cp % 64)
  end
  if cp < 0x10000 then
    return schar(0xe0 + floor(cp / 4096), 0x80 + floor(cp / 64) % 64, 0x80 + cp % 64)
  end
  return schar(0xf0 + floor(cp / 262144), 0x80 + floor(cp / 4096) % 64,
               0x80 + floor(cp / 64) % 64, 0x80 + cp % 64)
end

local function is_cp(cp, pattern)
  return cp ~= nil and rx(pattern):test(utf8_char(cp)) == true
end

-- RFC 5892 exceptions, and code points with canonical combining class 9.
local pvalid_exc = { [0xdf] = true, [0x3c2] = true, [0x6fd] = true,
  [0x6fe] = true, [0xf0b] = true, [0x3007] = true }
local disallowed_exc = { [0x640] = true, [0x7fa] = true, [0x302e] = true,
  [0x302f] = true, [0x3031] = true, [0x3032] = true, [0x3033] = true,
  [0x3034] = true, [0x3035] = true, [0x303b] = true }
local virama = {}
for _, cp in ipairs { 0x94d, 0x9cd, 0xa4d, 0xacd, 0xb4d, 0xbcd, 0xc4d, 0xccd,
  0xd3b, 0xd3c, 0xd4d, 0xdca, 0xe3a, 0xeba, 0xf84, 0x1039, 0x103a, 0x1714,
  0x1715, 0x1734, 0x17d2, 0x1a60, 0x1b44, 0x1baa, 0x1bab, 0x1bf2, 0x1bf3,
  0x2d7f, 0xa806, 0xa82c, 0xa8c4, 0xa953, 0xa9c0, 0xaaf6, 0xabed, 0x10a3f,
  0x11046, 0x11070, 0x1107f, 0x110b9, 0x11133, 0x11134, 0x111c0, 0x11235,
  0x112ea, 0x1134d, 0x11442, 0x114c2, 0x115bf, 0x1163f, 0x116b6, 0x1172b,
  0x11839, 0x1193d, 0x1193e, 0x119e0, 0x11a34, 0x11a47, 0x11a99, 0x11c3f,
  0x11d44, 0x11d45, 0x11d97, 0x11f41, 0x11f42 } do
  virama[cp] = true
end

local JOINING = "^[\\p{Script=Arabic}\\p{Script=Syriac}\\p{Script=Nko}" ..
  "\\p{Script=Mongolian}\\p{Script=Mandaic}\\p{Script=Manichaean}" ..
  "\\p{Script=Psalter_Pahlavi}\\p{Script=Phags_Pa}\\p{Script=Adlam}]$"

-- Zero width non-joiner between joining letters (marks in between skipped).
local function zwnj_context(cps, i)
  local j = i - 1
  while j >= 1 and is_cp(cps[j], "^\\p{Mn}$") do j = j - 1 end
  local k = i + 1
  while k <= #cps and is_cp(cps[k], "^\\p{Mn}$") do k = k + 1 end
  return is_cp(cps[j], JOINING) and is_cp(cps[k], JOINING)
end

-- IDNA2008 (RFC 5891/5892) rules for a decoded A-label, close enough for a
-- validator: DISALLOWED and CONTEXT code points by their exceptions and
-- rules, PVALID approximated by category (lower/other letters, marks,
-- digits).
local function u_label(cps)
  local n = #cps
  if n == 0 or cps[1] == 45 or cps[n] == 45 then return false end
  if cps[3] == 45 and cps[4] == 45 then return false end
  if is_cp(cps[1], "^\\p{M}$") then return false end
  local ascii_only, arabic, ext_arabic, kana_han = true, false, false, false
  for i = 1, n do
    local cp = cps[i]
    if cp >= 0x80 then ascii_only = false end
    if cp >= 0x660 and cp <= 0x669 then arabic = true end
    if cp >= 0x6f0 and cp <= 0x6f9 then ext_arabic = true end
    if cp ~= 0x30fb and is_cp(cp,
        "^[\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Han}]$") then
      kana_han = true
    end
  end
  if ascii_only or (arabic and ext_arabic) then return false end
  for i = 1, n do
    local cp = cps[i]
    local ok
    if cp < 0x80 then
      ok = (cp >= 48 and cp <= 57) or (cp >= 97 and cp <= 122)
        or (cp >= 65 and cp <= 90) or cp == 45
    elseif disallowed_exc[cp] then
      ok = false
    elseif pvalid_exc[cp] then
      ok = true
    elseif cp == 0xb7 then
      ok = cps[i - 1] == 0x6c and cps[i + 1] == 0x6c
    elseif cp == 0x375 then
      ok = is_cp(cps[i + 1], "^\\p{Script=Greek}$")
    elseif cp == 0x5f3 or cp == 0x5f4 then
      ok = is_cp(cps[i - 1], "^\\p{Script=Hebrew}$")
    elseif cp == 0x30fb then
      ok = kana_han
    elseif cp == 0x200d then
      ok = virama[cps[i - 1] or 0] == true
    elseif cp == 0x200c then
      ok = virama[cps[i - 1] or 0] == true or zwnj_context(cps, i)
    else
      ok = is_cp(cp, "^[\\p{Ll}\\p{Lo}\\p{Lm}\\p{Mn}\\p{Mc}\\p{Nd}]$")
    end
    if not ok then return false end
  end
  return true
end

local function hostname(s)
  local n = #s
  if n == 0 or n > 253 or sfind(s, "[^%w%.%-]") then return false end
  for label in (s .. "."):gmatch("([^%.]*)%.") do
    local len = #label
    if len == 0 or len > 63 then return false end
    if sbyte(label, 1) == 45 or sbyte(label, len) == 45 then return false end
    if ssub(label, 3, 4) == "--" then -- reserved, unless an A-label
      if slower(ssub(label, 1, 2)) ~= "xn" then return false end
      local cps = punycode_decode(ssub(label, 5))
      if not cps or not u_label(cps) then return false end
    end
  end
  return true
end

M.hostname = hostname

local ATEXT = "%w!#%$%%&'%*%+/=%?%^_`{|}~%-"

M.email = function(s)
  local lp, dom = smatch(s, "^([^@]+)@([^@]+)$")
  if not lp then return false end
  if sfind(lp, "[^" .. ATEXT .. "%.]") or sfind(lp, "^%.") or sfind(lp, "%.$")
     or sfind(lp, "..", 1, true) then
    return false
  end
  local labels = 0
  for label in (dom .. "."):gmatch("([^%.]*)%.") do
    if not smatch(label, "^%w$") and not smatch(label, "^%w[%w%-]*%w$") then
      return false
    end
    labels = labels + 1
  end
  return labels >= 2
end

-------------------------------------------------------------------- URIs

-- Only unreserved, sub-delims, percent-encoded triplets and `extra`?
local UNRES_SUB = "%w%-%._~!%$&'%(%)%*%+,;="
local function chars_ok(s, extra)
  local t = sgsub(s, "%%%x%x", "")
  return not sfind(t, "[^" .. UNRES_SUB .. extra .. "]")
end

local function authority(a)
  local at = sfind(a, "@", 1, true)
  if at then
    if not chars_ok(ssub(a, 1, at - 1), ":") then return false end
    a = ssub(a, at + 1)
  end
  local port
  if sbyte(a, 1) == 91 then           -- [ IP-literal ]
    local close = sfind(a, "]", 1, true)
    if not close then return false end
    local host = ssub(a, 2, close - 1)
    if not ipv6(host) and not smatch(host, "^[vV]%x+%.[" .. UNRES_SUB .. ":]+$") then
      return false
    end
    port = ssub(a, close + 1)
  else
    local host
    host, port = smatch(a, "^([^:]*)(.*)$")
    if not chars_ok(host, "") then return false end
  end
  return port == "" or smatch(port, "^:%d*$") ~= nil
end

-- RFC 3986 URI (absolute=true) or URI-reference.
local function uri(s, absolute)
  local scheme, rest = smatch(s, "^(%a[%w%+%-%.]*):(.*)$")
  if not scheme then
    if absolute then return false end
    rest = s
  end
  local h = sfind(rest, "#", 1, true)
  if h then
    if not chars_ok(ssub(rest, h + 1), ":@/%?") then return false end
    rest = ssub(rest, 1, h - 1)
  end
  local q = sfind(rest, "?", 1, true)
  if q then
    if not chars_ok(ssub(rest, q + 1), ":@/%?") then return false end
    rest = ssub(rest, 1, q - 1)
  end
  local path = rest
  if ssub(rest, 1, 2) == "//" then
    local slash = sfind(rest, "/", 3, true)
    if not authority(ssub(rest, 3, slash and slash - 1 or -1)) then return false end
    path = slash and ssub(rest, slash) or ""
  elseif not scheme and sfind(smatch(path, "^[^/]*"), ":", 1, true) then
    return false                      -- a relative path's first segment
  end
  return chars_ok(path, ":@/")
end

M.uri = function(s) return uri(s, true) end
M["uri-reference"] = function(s) return uri(s, false) end

-- RFC 6570 level 4 template.
local function template_expr(e)
  local op = smatch(e, "^[%+#%./;%?&=,!@|]")
  if op then e = ssub(e, 2) end
  if e == "" then return false end
  for spec in (e .. ","):gmatch("([^,]*),") do
    local name, mod = smatch(spec, "^([^:%*]+)(.*)$")
    if not name then return false end
    local nm = sgsub(name, "%%%x%x", "_")
    if sfind(nm, "[^%w_%.]") or sfind(nm, "^%.") or sfind(nm, "%.$")
       or sfind(nm, "..", 1, true) then
      return false
    end
    if mod ~= "" and mod ~= "*" and not smatch(mod, "^:[1-9]%d?%d?%d?$") then
      return false
    end
  end
  return true
end

M["uri-template"] = function(s)
  local i, n = 1, #s
  while i <= n do
    local c = sbyte(s, i)
    if c == 123 then                  -- {
      local close = sfind(s, "}", i + 1, true)
      if not close or not template_expr(ssub(s, i + 1, close - 1)) then
        return false
      end
      i = close + 1
    elseif c == 37 then               -- %
      if not smatch(s, "^%%%x%x", i) then return false end
      i = i + 3
    elseif c <= 32 or c == 127 or c == 34 or c == 60 or c == 62 or c == 92
        or c == 94 or c == 96 or c == 124 or c == 125 then
      return false
    else
      i = i + 1
    end
  end
  return true
end

M["json-pointer"] = function(s)
  if s ~= "" and sbyte(s, 1) ~= 47 then return false end
  return not sfind(sgsub(s, "~[01]", ""), "~", 1, true)
end

M["json-pointer-uri-fragment"] = function(s)
  if sbyte(s, 1) ~= 35 then return false end
  s = ssub(s, 2)
  if s ~= "" and sbyte(s, 1) ~= 47 then return false end
  if sfind(sgsub(sgsub(s, "~[01]", ""), "%%%x%x", ""), "[^%w_%-%.!%$&'%(%)%*%+,;:=@/]") then
    return false
  end
  return true
end

M["relative-json-pointer"] = function(s)
  local num, rest = smatch(s, "^(%d+)(.*)$")
  if not num or (#num > 1 and sbyte(num, 1) == 48) then return false end
  return rest == "#" or M["json-pointer"](rest)
end

M.uuid = function(s)
  return smatch(slower(s), "^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$") ~= nil
      or smatch(slower(s), "^urn:uuid:%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$") ~= nil
end

M.regex = function(s)
  if sfind(s, "[^\\]\\Z") then return false end     -- as ajv-formats
  return core.regex_check(s) == true
end

M.byte = function(s)                  -- base64
  if #s % 4 ~= 0 then return false end
  return smatch(s, "^[%w%+/]*=?=?$") ~= nil and not sfind(s, "=[^=]")
end

-- Formats ajv-formats accepts for any string (documentation only).
M.password = function() return true end
M.binary = function() return true end

-- Formats that apply to numbers rather than strings.
local number = {
  int32 = function(n) return n % 1 == 0 and n >= -2147483648 and n <= 2147483647 end,
  int64 = function(n) return n % 1 == 0 end,
  float = function() return true end,
  double = function() return true end,
}

return { string = M, number = number }
