-- tools/fuzz/json_target.lua: `make fuzz` cases for the JSON codec
-- (devtools_tools.base.json over the C core).
--
-- Five kinds of case:
--   text     a valid JSON text written with random spacing, escapes and
--            number spellings; decode must give exactly the value it was
--            written from (numbers as Lua's own tonumber reads the literal)
--   mutated  such a text with bytes flipped, inserted, cut or spliced
--   special  deep nesting, huge and tiny numbers, bad UTF-8, lone
--            surrogates, truncation
--   value    a Lua value JSON can hold; encode must succeed and decode of
--            the result must equal the value as the codec documents it
--   bad      a Lua value JSON cannot hold; encode must raise bad_argument
-- For every text, decode returns a value or raises protocol_error; a value
-- it returns must encode, and decode back to itself. Never anything else.
-- Generation must stay a pure function of the case's generator (no pairs
-- order, no clock): a reported case is reproduced by generating it again.

local json = require "devtools_tools.base.json"
local dt_errors = require "devtools_tools.base.errors"

local T = { name = "json", batch = 400 }

local array_mt = json.array_mt
local null = json.null
local mtype = math.type

---------------------------------------------------------------- helpers

-- Strict UTF-8, except that a surrogate code point standing alone (one
-- not right after a high surrogate) is allowed: what the decoder makes of
-- a lone "\ud800" and the encoder writes back as the same escape.
local function clean_string(s)
  local i, n, prev_high = 1, #s, false
  while i <= n do
    local c = s:byte(i)
    local len, cp
    if c < 0x80 then len, cp = 1, c
    elseif c >= 0xC2 and c <= 0xDF then len, cp = 2, c & 0x1F
    elseif c >= 0xE0 and c <= 0xEF then len, cp = 3, c & 0x0F
    elseif c >= 0xF0 and c <= 0xF4 then len, cp = 4, c & 0x07
    else return false end
    if i + len - 1 > n then return false end
    for k = i + 1, i + len - 1 do
      local b = s:byte(k)
      if b < 0x80 or b > 0xBF then return false end
      cp = (cp << 6) | (b & 0x3F)
    end
    if (len == 3 and cp < 0x800) or (len == 4 and (cp < 0x10000 or cp > 0x10FFFF)) then
      return false
    end
    local high = cp >= 0xD800 and cp <= 0xDBFF
    if cp >= 0xDC00 and cp <= 0xDFFF and prev_high then return false end
    prev_high = high
    i = i + len
  end
  return true
end
T.clean_string = clean_string

-- Is every string (key or value) in v clean?
local function all_clean(v, seen)
  if type(v) == "string" then return clean_string(v) end
  if type(v) ~= "table" then return true end
  seen = seen or {}
  if seen[v] then return true end
  seen[v] = true
  for k, x in pairs(v) do
    if not all_clean(k, seen) or not all_clean(x, seen) then return false end
  end
  return true
end

-- deep_equal(a, b, loose) -> true | false, where (a path). loose: a float
-- in a may come back as an integer of the same value (the encoder writes
-- 3.0 as 3, so the decoder reads an integer).
local function deep_equal(a, b, loose, path)
  path = path or "$"
  if type(a) ~= type(b) then
    return false, ("%s: %s against %s"):format(path, type(a), type(b))
  end
  if type(a) == "number" then
    if mtype(a) ~= mtype(b) and not (loose and mtype(a) == "float") then
      return false, ("%s: %s %s against %s %s"):format(path, mtype(a), a, mtype(b), b)
    end
    if a ~= b or (a == 0 and 1 / a ~= 1 / b) then
      return false, ("%s: %.17g against %.17g"):format(path, a, b)
    end
    return true
  end
  if type(a) ~= "table" then
    if a ~= b then return false, ("%s: %q against %q"):format(path, tostring(a), tostring(b)) end
    return true
  end
  -- An object may carry json.object_mt (what decoding gives) or none (what
  -- a caller writes): both are objects. An array carries array_mt.
  if (getmetatable(a) == array_mt) ~= (getmetatable(b) == array_mt) then
    return false, path .. ": one is an array, the other not"
  end
  for k, x in pairs(a) do
    local ok, where = deep_equal(x, rawget(b, k), loose, path .. "." .. tostring(k))
    if not ok then return false, where end
  end
  for k in pairs(b) do
    if rawget(a, k) == nil then return false, path .. "." .. tostring(k) .. ": extra key" end
  end
  return true
end
T.deep_equal = deep_equal

local function utf8_char(cp)
  if cp >= 0xD800 and cp <= 0xDFFF then     -- what the decoder makes of a lone surrogate
    return string.char(0xE0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3F), 0x80 | (cp & 0x3F))
  end
  return utf8.char(cp)
end

---------------------------------------------------------------- generators

local SPACE = { "", "", "", " ", "\n", "\t", "\r\n", "  " }

local function ws(r)
  if r:chance(0.7) then return "" end
  local t = {}
  for i = 1, r:int(1, 3) do t[i] = r:pick(SPACE) end
  return table.concat(t)
end

-- A code point: mostly ASCII, some of everything else.
local function code_point(r)
  local k = r:int(1, 10)
  if k <= 5 then return r:int(0x20, 0x7E)
  elseif k == 6 then return r:int(0, 0x1F)
  elseif k == 7 then return r:int(0x80, 0x7FF)
  elseif k == 8 then return r:pick({ r:int(0x800, 0xD7FF), r:int(0xE000, 0xFFFF) })
  elseif k == 9 then return r:int(0x10000, 0x10FFFF)
  else return r:int(0xD800, 0xDFFF) end   -- a lone surrogate
end

local SHORT = { [0x22] = '\\"', [0x5C] = "\\\\", [0x2F] = "\\/", [0x08] = "\\b",
  [0x0C] = "\\f", [0x0A] = "\\n", [0x0D] = "\\r", [0x09] = "\\t" }

local function escape_u(cp, r)
  local f = r:chance(0.5) and "\\u%04x" or "\\u%04X"
  if cp >= 0x10000 then
    local v = cp - 0x10000
    return f:format(0xD800 | (v >> 10)) .. f:format(0xDC00 | (v & 0x3FF))
  end
  return f:format(cp)
end

-- gen_string(r) -> JSON text, the Lua string it decodes to
local function gen_string(r)
  local text, value = { '"' }, {}
  local prev_high = false
  for _ = 1, r:size(40) do
    local cp = code_point(r)
    -- a lone high surrogate followed by a lone low one would be a pair
    if prev_high and cp >= 0xDC00 and cp <= 0xDFFF then cp = 0x41 end
    prev_high = cp >= 0xD800 and cp <= 0xDBFF
    value[#value + 1] = utf8_char(cp)
    local must_escape = cp < 0x20 or cp == 0x22 or cp == 0x5C or (cp >= 0xD800 and cp <= 0xDFFF)
    if must_escape or r:chance(0.15) then
      text[#text + 1] = (SHORT[cp] and r:chance(0.7)) and SHORT[cp] or escape_u(cp, r)
    else
      text[#text + 1] = utf8.char(cp)
    end
  end
  text[#text + 1] = '"'
  return table.concat(text), table.concat(value)
end

local function digits(r, n, first_nonzero)
  local t = {}
  for i = 1, n do t[i] = tostring(r:int((i == 1 and first_nonzero) and 1 or 0, 9)) end
  return table.concat(t)
end

-- gen_number(r) -> JSON literal, the value the codec must give for it:
-- integers that fit int64 as integers, everything else as the nearest
-- double (Lua's tonumber rounds correctly), "-0" as -0.0.
local function gen_number(r)
  local k, lit = r:int(1, 9)
  if k == 1 then lit = tostring(r:int(-1000, 1000))
  elseif k == 2 then lit = tostring(r:next64())
  elseif k == 3 then lit = r:pick({ "9223372036854775807", "9223372036854775808", "-9223372036854775808",
      "-9223372036854775809", "18446744073709551616", "0", "-0", "1e400", "-1e400", "1e-400",
      "4.9e-324", "2.2250738585072011e-308", "1.7976931348623157e308", "0.1", "1E+2", "-0.0" })
  elseif k == 4 then
    local x = r:next64() >> 12 | 0x3FF0000000000000
    lit = ("%.17g"):format(string.unpack("d", string.pack("i8", x)) * 2.0 ^ r:int(-1070, 1020))
    if not lit:find("[.eE]") then lit = lit .. ".0" end
    if lit:find("inf") or lit:find("nan") then lit = "1.5" end
  else
    lit = (r:chance(0.3) and "-" or "")
    local int = r:chance(0.2) and "0" or digits(r, r:int(1, 25), true)
    lit = lit .. int
    if r:chance(0.6) then lit = lit .. "." .. digits(r, r:int(1, 25)) end
    if r:chance(0.5) then
      lit = lit .. r:pick({ "e", "E" }) .. r:pick({ "", "+", "-" }) .. tostring(r:int(0, r:chance(0.9) and 30 or 400))
    end
  end
  local v = tonumber(lit)
  if lit:match("^%-0$") then v = -0.0 end
  if mtype(v) == "integer" and lit:find("[.eE]") then v = v + 0.0 end
  return lit, v
end

-- gen_text(r, depth) -> JSON text, the value it decodes to
local function gen_text(r, depth)
  local k = r:int(1, depth > 6 and 6 or 8)
  if k == 1 then return "null", null
  elseif k == 2 then
    local b = r:chance(0.5)
    return tostring(b), b
  elseif k == 3 or k == 4 then return gen_number(r)
  elseif k == 5 or k == 6 then return gen_string(r)
  elseif k == 7 then
    local parts, value = {}, setmetatable({}, array_mt)
    for i = 1, r:size(8) do
      local t, v = gen_text(r, depth + 1)
      parts[i] = ws(r) .. t .. ws(r)
      value[i] = v
    end
    return "[" .. (#parts == 0 and ws(r) or table.concat(parts, ",")) .. "]", value
  else
    local parts, value, keys = {}, {}, {}
    for i = 1, r:size(8) do
      local kt, kv = gen_string(r)
      if r:chance(0.1) and #keys > 0 then      -- a repeated key: the last one wins
        local k = r:pick(keys)
        kt, kv = k[1], k[2]
      end
      keys[#keys + 1] = { kt, kv }
      local t, v = gen_text(r, depth + 1)
      parts[i] = ws(r) .. kt .. ws(r) .. ":" .. ws(r) .. t .. ws(r)
      value[kv] = v
    end
    return "{" .. (#parts == 0 and ws(r) or table.concat(parts, ",")) .. "}", value
  end
end

local TOKENS = { "[", "]", "{", "}", '"', "\\", "\\u", "\\ud800", "\\udc00", ",", ":", "1e999",
  "-", ".", "0", "null", "tru", "\255", "\192\128", "\237\160\128", "\244\144\128\128",
  "\0", "\"\\u12", "9223372036854775808", "1e-999", "[[[[[[[[", "}}}}", "\226\130" }

local function mutate(r, s)
  for _ = 1, r:int(1, 4) do
    local n = #s
    local at = r:int(1, n + 1)
    local k = r:int(1, 6)
    if k == 1 and n > 0 then                       -- flip a byte
      at = math.min(at, n)
      s = s:sub(1, at - 1) .. string.char(s:byte(at) ~ (1 << r:int(0, 7))) .. s:sub(at + 1)
    elseif k == 2 then                             -- insert a token or byte
      local ins = r:chance(0.7) and r:pick(TOKENS) or r:bytes(r:int(1, 3))
      s = s:sub(1, at - 1) .. ins .. s:sub(at)
    elseif k == 3 then                             -- cut a range
      s = s:sub(1, at - 1) .. s:sub(at + r:size(16))
    elseif k == 4 then                             -- truncate
      s = s:sub(1, at - 1)
    elseif k == 5 and n > 0 then                   -- duplicate a range
      local len = r:size(32)
      s = s:sub(1, at - 1) .. s:sub(at, at + len - 1) .. s:sub(at)
    else                                           -- replace a byte
      s = s:sub(1, at - 1) .. r:bytes(1) .. s:sub(at + 1)
    end
  end
  return s
end

local function gen_special(r)
  local k = r:int(1, 6)
  if k == 1 then                                   -- deep nesting
    local d = r:pick({ 999, 1000, 1001, 1002, r:int(1, 3000), 20000, 200000 })
    local open, close = "[", "]"
    if r:chance(0.3) then open, close = '{"a":', "}" end
    local inner = r:pick({ "1", "", '"x"', "[]", "{}" })
    local closed = r:chance(0.8) and close:rep(d) or close:rep(r:int(0, d))
    return open:rep(d) .. inner .. closed
  elseif k == 2 then                               -- numbers at and past the edges
    local lit = r:pick({ "1e400", "-1e400", "1e-400", "1" .. ("0"):rep(r:int(18, 400)),
      "0." .. ("0"):rep(r:int(300, 400)) .. "1", ("9"):rep(r:int(15, 40)) .. ".5e-3",
      "01", "1.", ".5", "-", "+1", "1e", "1e+", "NaN", "Infinity", "-Infinity", "0x10",
      "1_000", "١", "1.0e" .. tostring(r:next64()) })
    return r:chance(0.5) and lit or "[" .. lit .. "]"
  elseif k == 3 then                               -- strings with bad UTF-8 or odd escapes
    local body = r:pick({ "\255", "\192\128", "\224\128\128", "\237\160\128", "\237\191\191",
      "\244\144\128\128", "\248\136\128\128\128", "\226\130", "\\ud800", "\\udc00", "\\udc00\\ud800",
      "\\ud800\\u0041", "\\ud83d\\ude00", "\\ud83d", "\\u12", "\\u12G4", "\\x41", "\\", "\\U0041",
      "a\0b", "\t", "\127" })
    return '"' .. body:rep(r:int(1, 3)) .. (r:chance(0.8) and '"' or "")
  elseif k == 4 then                               -- a long string or array
    local n = r:pick({ 65535, 65536, 100000, 1 << 20 })
    if r:chance(0.5) then return '"' .. ("x"):rep(n) .. '"' end
    return "[" .. ("0,"):rep(n // 2) .. "0]"
  elseif k == 5 then                               -- truncation of a valid text
    local t = gen_text(r, 0)
    return t:sub(1, r:int(0, #t))
  else                                             -- empty and blank
    return r:pick({ "", " ", "\n\t ", "\239\187\191{}", "{}\0", "[] []", "nul", "[,]", "{,}", "[1,]" })
  end
end

-- Lua values for encode: valid ones and the documented result of encoding
local function gen_value(r, depth)
  local k = r:int(1, depth > 5 and 6 or 11)
  if k == 1 then return null
  elseif k == 2 then return r:chance(0.5)
  elseif k == 3 then return r:chance(0.5) and r:next64() or r:int(-100, 100)
  elseif k == 4 then
    local x = r:pick({ 0/0, 1/0, -1/0, -0.0, 0.5, 1e308, 5e-324, 2^53, 2^63, -2^63, math.pi })
    if r:chance(0.5) then
      x = string.unpack("d", string.pack("i8", r:next64()))
    end
    return x
  elseif k == 5 or k == 6 then
    local _, s = gen_string(r)
    return s
  elseif k == 7 or k == 8 then                     -- a sequence, marked or not
    local t = {}
    for i = 1, r:int(1, 6) do t[i] = gen_value(r, depth + 1) end
    if r:chance(0.5) then setmetatable(t, array_mt) end
    return t
  elseif k == 9 then                               -- a marked array with holes
    local t = setmetatable({}, array_mt)
    for i = 1, r:int(0, 6) do if r:chance(0.6) then t[i] = gen_value(r, depth + 1) end end
    return t
  else                                             -- an object, integer keys too
    local t, names = {}, {}
    for _ = 1, r:size(6) do
      local key
      if r:chance(0.3) then key = r:int(-5, 20) else key = select(2, gen_string(r)) end
      -- 4 and "4" would be one JSON name (as expected_of writes it): the
      -- codec refuses such a table (json_spec), so a value never holds both
      local name = mtype(key) == "integer" and tostring(key) or key
      if names[name] == nil or names[name] == key then
        names[name] = key
        t[key] = gen_value(r, depth + 1)
      end
    end
    return t
  end
end

-- What decode(encode(v)) must give, as the codec's header documents it.
local function expected_of(v)
  local tv = type(v)
  if tv == "number" then
    if v ~= v or v == math.huge or v == -math.huge then return null end
    return v
  elseif tv ~= "table" then
    return v
  end
  local n = #v
  local is_array = getmetatable(v) == array_mt
  if not is_array and n > 0 then                   -- keys exactly 1..n
    local count = 0
    for _ in pairs(v) do count = count + 1 end
    is_array = count == n
  end
  local out = {}
  if is_array then
    for i = 1, n do
      local x = rawget(v, i)
      out[i] = x == nil and null or expected_of(x)
    end
    return setmetatable(out, array_mt)
  end
  for key, x in pairs(v) do
    out[mtype(key) == "integer" and tostring(key) or key] = expected_of(x)
  end
  return out
end

local function gen_bad(r)
  local v = { gen_value(r, 3), gen_value(r, 3) }
  local k = r:int(1, 8)
  local where = r:chance(0.5) and v or {}
  if where ~= v then v[#v + 1] = where end
  if k == 1 then where.x = function() end
  elseif k == 2 then where[true] = 1
  elseif k == 3 then where[1.5] = 1
  elseif k == 4 then where[{}] = 1
  elseif k == 5 then where.s = r:pick({ "\255", "\192\128", "a\226\130", "\237\160\189\237\184\128x\255" })
  elseif k == 6 then where[r:pick({ "\255", "\244\144\128\128" })] = 1
  elseif k == 7 then
    local deep = {}
    local cur = deep
    for _ = 1, r:pick({ 1001, 1500, 5000 }) do cur[1] = {}; cur = cur[1] end
    where.deep = deep
  else
    where.cycle = v
  end
  return v
end

T.gen_text, T.mutate = gen_text, mutate

---------------------------------------------------------------- the target

function T.gen(r)
  local k = r:int(1, 10)
  if k <= 3 then
    local text, value = gen_text(r, 0)
    return { kind = "text", text = ws(r) .. text .. ws(r), value = value }
  elseif k <= 6 then
    return { kind = "mutated", text = mutate(r, (gen_text(r, 0))) }
  elseif k <= 7 then
    return { kind = "special", text = gen_special(r),
             max_depth = r:chance(0.2) and r:pick({ 0, 1, 2, 10, 5000 }) or nil }
  elseif k <= 9 then
    return { kind = "value", value = gen_value(r, 0) }
  else
    return { kind = "bad", value = gen_bad(r) }
  end
end

local function show_text(s)
  if #s > 600 then
    return ("%q ... (%d bytes) ... %q"):format(s:sub(1, 300), #s, s:sub(-100))
  end
  return ("%q"):format(s)
end

local function show_value(v, depth, seen)
  depth, seen = depth or 0, seen or {}
  if type(v) == "string" then return show_text(v) end
  if type(v) == "number" then return mtype(v) == "integer" and tostring(v) or ("%.17g"):format(v) end
  if v == null then return "null" end
  if type(v) ~= "table" then return tostring(v) end
  if seen[v] then return "<cycle>" end
  if depth > 20 then return "{...deeper...}" end
  seen[v] = true
  local parts = {}
  for key, x in pairs(v) do
    parts[#parts + 1] = "[" .. show_value(key, depth + 1, seen) .. "]=" .. show_value(x, depth + 1, seen)
  end
  seen[v] = nil
  return (getmetatable(v) == array_mt and "array{" or "{") .. table.concat(parts, ", ") .. "}"
end

function T.show(c)
  if c.text then
    return c.kind .. " text " .. show_text(c.text) .. (c.max_depth and " max_depth " .. c.max_depth or "")
  end
  return c.kind .. " value " .. show_value(c.value)
end

local function is_code(err, code)
  return dt_errors.is_error(err) and err.code == code
end

-- Decoded value v (from text): it must encode and come back as itself.
local function round_trip(v, opts)
  local ok, s = pcall(json.encode, v, opts)
  if not ok then
    if is_code(s, "bad_argument") and not all_clean(v) then return nil end
    return "decoded value does not encode: " .. tostring(s)
  end
  if not clean_string(s) or not utf8.len(s) then return "encode wrote text that is not UTF-8: " .. show_text(s) end
  local ok2, back = pcall(json.decode, s, opts)
  if not ok2 then return "encode wrote text decode refuses: " .. tostring(back) end
  if not all_clean(v) then return nil end      -- bytes a string kept as they came
  local same, where = deep_equal(expected_of(v), back, true)
  if not same then return "decode(encode(v)) differs from v at " .. where end
  return nil
end

function T.run(c)
  if c.kind == "value" or c.kind == "bad" then
    local ok, s = pcall(json.encode, c.value)
    if c.kind == "bad" then
      if ok then return "encode accepted a value JSON cannot hold: " .. show_text(s) end
      if not is_code(s, "bad_argument") then return "encode raised other than bad_argument: " .. tostring(s) end
      return nil
    end
    if not ok then return "encode refused a value JSON can hold: " .. tostring(s) end
    if not utf8.len(s) then return "encode wrote text that is not UTF-8" end
    local ok2, back = pcall(json.decode, s)
    if not ok2 then return "decode refused what encode wrote (" .. show_text(s) .. "): " .. tostring(back) end
    local same, where = deep_equal(expected_of(c.value), back, true)
    if not same then return "decode(encode(v)) is not v as documented, at " .. where .. "; text " .. show_text(s) end
    return nil
  end
  local opts = c.max_depth and { max_depth = c.max_depth } or nil
  local ok, v = pcall(json.decode, c.text, opts)
  if not ok then
    if not is_code(v, "protocol_error") then return "decode raised other than protocol_error: " .. tostring(v) end
    if c.kind == "text" then return "decode refused a valid text: " .. tostring(v) end
    return nil
  end
  if c.kind == "text" then
    local same, where = deep_equal(c.value, v)
    if not same then return "decode gave a different value at " .. where end
  end
  return round_trip(v, opts)
end

return T
