-- devtools_tools.schema.values: what a value is, for the validator.
--
-- The kind of a table (array, object, empty, element) comes from the JSON
-- encoder's own decision (core.json.kind), so the validator checks exactly
-- what will be sent; only an Element, which the encoder never sees, is
-- known here (is_element is the one place that knows one). Also: JSON
-- equality, code-point length, ajv's multipleOf, number text, and a short
-- capped rendering of a value for error messages.
--
-- It must never modify a value, call user code other than a metatable's
-- __len, or hold state between calls.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"

local type, next, rawget, getmetatable, tostring, tonumber =
      type, next, rawget, getmetatable, tostring, tonumber
local floor, huge = math.floor, math.huge
local concat = table.concat
local sfind, ssub, sformat, sgsub = string.find, string.sub, string.format, string.gsub

local null, array_mt, json_kind = core.null, core.array_mt, core.json.kind

local M = {}

local ELEMENT_NAME = "devtools_tools.Element"

-- An element reference (discovery's Element objects, by their __name).
local function is_element(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__name") == ELEMENT_NAME
end
M.is_element = is_element

-- kind(t) -> "array" | "object" | "empty" (a plain {}: both) | "element",
-- for a table t.
local function kind(t)
  local mt = getmetatable(t)
  if mt == array_mt then return "array" end
  if mt ~= nil and is_element(t) then return "element" end
  return json_kind(t)
end
M.kind = kind

local object_mt = core.object_mt
local rawlen = rawlen or function(t) return #t end      -- Lua 5.1: # is raw on tables

-- raw_view(t) -> t, or a copy of t that the validator can index: the
-- encoder reads tables raw (no __index, __len or __pairs), so a table with
-- a metatable of its own is checked as a raw copy of its keys, of the same
-- kind. A plain table, a marked array or object and an Element are
-- returned as they are. Only the table itself is copied: its children get
-- their own view where the validator reaches them.
local function raw_view(t)
  local mt = getmetatable(t)
  if mt == nil or mt == array_mt or mt == object_mt or is_element(t) then return t end
  local k = json_kind(t)
  local copy = {}
  if k == "array" then
    for i = 1, rawlen(t) do copy[i] = rawget(t, i) end
  else
    for key, x in next, t do copy[key] = x end
  end
  if k == "array" then setmetatable(copy, array_mt)
  elseif k == "object" then setmetatable(copy, object_mt) end
  return copy
end
M.raw_view = raw_view

-- For equality a plain {} is an object, as the encoder sends it.
local function eq_is_array(t)
  return getmetatable(t) == array_mt or json_kind(t) == "array"
end

-- (Nesting past what JSON is sent with, or a table that holds itself:
-- an error, not Lua's "stack overflow".)
local MAX_EQUAL_DEPTH = 1000

local math_type = math.type    -- (nil on LuaJIT: every number is a double)
local TWO53 = 2 ^ 53

-- A number as the page holds it: the encoder writes a Lua 5.4 integer
-- whole, and JSON.parse reads one past 2^53 as the nearest double, which
-- x + 0.0 is too (9007199254740993 is 9007199254740992 there). Bounds,
-- const, enum and uniqueItems compare numbers so.
local function as_sent(x)
  if math_type and math_type(x) == "integer" and (x > TWO53 or x < -TWO53) then return x + 0.0 end
  return x
end
M.as_sent = as_sent

local function deep_equal(a, b, depth)
  if a == nil then a = null end       -- a hole in an array is sent as null
  if b == nil then b = null end
  if a == b then return true end
  if type(a) == "number" and type(b) == "number" then return as_sent(a) == as_sent(b) end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  depth = (depth or 0) + 1
  if depth > MAX_EQUAL_DEPTH then
    errors.raise("bad_argument", "a value nested more than "
      .. MAX_EQUAL_DEPTH .. " deep (or holding itself) cannot be compared for const, enum or uniqueItems")
  end
  if is_element(a) or is_element(b) then return false end
  local arr = eq_is_array(a)
  if arr ~= eq_is_array(b) then return false end
  if arr then
    local n = rawlen(a)
    if n ~= rawlen(b) then return false end
    for i = 1, n do
      if not deep_equal(rawget(a, i), rawget(b, i), depth) then return false end
    end
    return true
  end
  local n = 0
  for k, va in next, a do
    local vb = rawget(b, k)
    if vb == nil or not deep_equal(va, vb, depth) then return false end
    n = n + 1
  end
  for _ in next, b do n = n - 1 end
  return n == 0
end
M.deep_equal = deep_equal

-- Code points in a UTF-8 string (a stray byte counts as one).
function M.ulen(s)
  local n = #s
  if not sfind(s, "[\128-\255]") then return n end
  local _, cont = sgsub(s, "[\128-\191]", "")
  return n - cont
end

local function num_str(x)
  if x % 1 == 0 and x > -1e15 and x < 1e15 then return sformat("%d", x) end
  if math_type and math_type(x) == "integer" then return sformat("%d", x) end
  if x ~= x or x == huge or x == -huge then return tostring(x) end
  local s
  for p = 15, 17 do
    s = sformat("%." .. p .. "g", x)
    if tonumber(s) == x then break end
  end
  return s
end
M.num_str = num_str

-- An object key as the encoder writes it: a whole number as all its
-- digits (json.c's enc_key; a key 1e15 is sent "1000000000000000").
function M.key_string(k)
  if type(k) == "string" then return k end
  if type(k) == "number" then
    if k % 1 == 0 and k >= -2 ^ 63 and k < 2 ^ 63 then return sformat("%d", k) end
    return num_str(k)
  end
  return tostring(k)
end

-- numeric_key(name) -> the number whose key the encoder writes as name
-- ({[1] = 5, a = 1} is sent {"1":5,"a":1}), or nil: a property's value is
-- found under either.
function M.numeric_key(name)
  local n = tonumber(name)
  -- (whole numbers only: the encoder writes no other number as a key, and
  -- LuaJIT's tonumber reads "nan" and "inf")
  if n ~= nil and n % 1 == 0 and M.key_string(n) == name then return n end
  return nil
end

-- numeric_keys(names) -> list: each name's numeric_key, or false; nil when
-- no name has one (the common case: nothing more to look up).
function M.numeric_keys(names)
  local out, any = {}, false
  for i = 1, #names do
    out[i] = M.numeric_key(names[i]) or false
    any = any or out[i] ~= false
  end
  return any and out or nil
end

-- Is x a multiple of m (> 0)? As ajv decides it, which is what the page
-- decides: the quotient x / m in doubles must be an integer that
-- parseInt(String(q)) gives back, i.e. below 1e21 in magnitude (String
-- writes 1e21 and up with an exponent). So 0.3 is not a multiple of 0.1
-- (2.9999999999999996) nor 19.99 of 0.01, but 1e17 is one of 3
-- (33333333333333332). x / m is a float division in Lua 5.4 too, and an
-- integer past 2^53 rounds to the double the page parses from its text.
function M.multiple_of(x, m)
  local q = x / m
  return q == floor(q) and q < 1e21 and q > -1e21
end

---------------------------------------------------------------- rendering

local RENDER_MAX = 60       -- characters of a rendered value in a message

-- Appends a JSON-like rendering of v to out until `room` characters are
-- used; returns the room left (< 0: cut).
-- s cut to at most n bytes, never inside a UTF-8 sequence
local function cut(s, n)
  if #s <= n then return s end
  s = ssub(s, 1, n)
  local lead = sfind(s, "[\192-\255][\128-\191]*$")
  if lead then s = ssub(s, 1, lead - 1) end
  return s
end

M.cut = cut

local function put(out, s, room)
  out[#out + 1] = s
  return room - #s
end

local function render_into(v, out, room, depth)
  local tv = type(v)
  if room < 0 then return room end
  if tv == "string" then
    v = cut(v, room)
    return put(out, sformat("%q", v):gsub("\\\n", "\\n"), room)
  elseif tv == "number" then
    return put(out, num_str(v), room)
  elseif tv == "boolean" then
    return put(out, tostring(v), room)
  elseif v == null or v == nil then       -- nil: a hole in an array, sent as null
    return put(out, "null", room)
  elseif tv ~= "table" then
    return put(out, "a " .. tv, room)
  end
  if is_element(v) then
    return put(out, "Element(" .. tostring(rawget(v, "description")) .. ")", room)
  end
  if depth > 3 then return put(out, "...", room) end
  local k = kind(v)
  if k == "array" then
    room = put(out, "[", room)
    for i = 1, #v do
      if i > 1 then room = put(out, ",", room) end
      room = render_into(v[i], out, room, depth + 1)
      if room < 0 then return room end
    end
    return put(out, "]", room)
  end
  room = put(out, "{", room)
  local first = true
  for key, x in next, v do
    if not first then room = put(out, ",", room) end
    first = false
    room = render_into(M.key_string(key), out, room, depth + 1)
    room = put(out, ":", room)
    room = render_into(x, out, room, depth + 1)
    if room < 0 then return room end
  end
  return put(out, "}", room)
end

-- render(v, max?) -> a short text for v: JSON-like, cut to about max
-- characters (60) with "..." at the end when cut.
function M.render(v, max)
  max = max or RENDER_MAX
  local out = {}
  local room = render_into(v, out, max, 0)
  local s = concat(out)
  if room < 0 or #s > max then s = cut(s, max) .. "..." end
  return s
end

return M
