-- devtools_tools.trace.compare: two JSON values compared, each difference
-- named by its JSON Pointer (RFC 6901: "/cart/items/0/price", "" for the
-- value itself) with the recorded and the new value; pointers to ignore,
-- where "*" stands for any one segment and a pointer covers everything
-- beneath it ("/ts", "/items/*/id").
--
-- Arrays compare element by element (a longer one has its extra elements
-- as differences against nothing), objects key by key (in sorted order,
-- so the list reads the same each time); an array and an object are a
-- difference of their own, but an empty table of Lua's, which is either,
-- is equal to both empty ones; integers and floats of the same value are
-- equal, as JSON has one number.
--
-- What it must never do: report a difference under an ignored pointer,
-- or walk a value deeper than MAX_DEPTH (a cycle ends there too).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local json = require "devtools_tools.base.json"
local errors = require "devtools_tools.base.errors"

local type, tostring, pairs, ipairs, next, setmetatable = type, tostring, pairs, ipairs, next, setmetatable
local sort = table.sort
local concat = table.concat
local raise = errors.raise
local kind, null, encode = json.kind, json.null, json.encode

local M = {}

M.MAX_DEPTH = 1000

-- ABSENT stands for "no value there" (a key one side has and the other not).
M.ABSENT = setmetatable({}, { __tostring = function() return "(absent)" end, __name = "absent" })
local ABSENT = M.ABSENT

-- escape(segment) -> the segment as a pointer writes it (~ as ~0, / as ~1)
local function escape(seg)
  seg = tostring(seg)
  if not seg:find("[~/]") then return seg end
  return (seg:gsub("~", "~0"):gsub("/", "~1"))
end
M.escape = escape

local function unescape(seg)
  return (seg:gsub("~1", "/"):gsub("~0", "~"))
end

-- parse_pointer(s) -> list of segments; raises bad_argument for text that
-- is no pointer ("" is the whole value; otherwise it starts with "/")
function M.parse_pointer(s)
  if type(s) ~= "string" then raise("bad_argument", "ignore: expected a JSON pointer, got " .. type(s)) end
  if s == "" then return {} end
  if s:sub(1, 1) ~= "/" then
    raise("bad_argument", "ignore: " .. s .. " is no JSON pointer: it starts with \"/\" (e.g. /ts, /items/*/id)")
  end
  if s:find("~[^01]") or s:find("~$") then
    raise("bad_argument", "ignore: " .. s .. ": a \"~\" is written ~0 in a pointer (and \"/\" in a name ~1)")
  end
  local segs = {}
  for seg in (s .. "/"):sub(2):gmatch("([^/]*)/") do segs[#segs + 1] = seg end
  return segs
end

-- ignorer(list) -> function(segments) -> true when a pointer of list
-- covers the path (its segments, unescaped). list: pointer strings.
function M.ignorer(list)
  local pats = {}
  for i, s in ipairs(list or {}) do
    local segs = M.parse_pointer(s)
    for j, seg in ipairs(segs) do
      if seg ~= "*" then segs[j] = unescape(seg) else segs[j] = true end
    end
    pats[i] = segs
  end
  if #pats == 0 then return nil end
  return function(path)
    for _, p in ipairs(pats) do
      if #p <= #path then
        local hit = true
        for j = 1, #p do
          local want = p[j]
          if want ~= true and want ~= path[j] then hit = false break end
        end
        if hit then return true end
      end
    end
    return false
  end
end

-- pointer(segments) -> "/a/b~1c"
function M.pointer(path)
  if #path == 0 then return "" end
  local out = {}
  for i, seg in ipairs(path) do out[i] = escape(seg) end
  return "/" .. concat(out, "/")
end

local function shape(v)
  if type(v) ~= "table" then return nil end
  return kind(v)        -- "array" | "object" | "empty"
end

local function key_text(k)
  if type(k) == "string" then return k end
  if type(k) == "number" and k % 1 == 0 then return encode({ [k] = true }):match('^{"(.*)":true}$') or tostring(k) end
  return tostring(k)
end

local walk

-- step(x, y, ...): one member or element of both sides at path: a
-- difference when one side lacks it, else compared beneath it.
local function step(x, y, path, ignore, out, depth)
  if x == ABSENT or y == ABSENT then
    if not (ignore and ignore(path)) then
      out[#out + 1] = { path = M.pointer(path), recorded = x, new = y }
    end
  else
    walk(x, y, path, ignore, out, depth + 1)
  end
end

function walk(a, b, path, ignore, out, depth)
  if ignore and ignore(path) then return end
  if a == nil then a = null end
  if b == nil then b = null end
  local sa, sb = shape(a), shape(b)
  if not sa or not sb or depth >= M.MAX_DEPTH then
    if a ~= b then out[#out + 1] = { path = M.pointer(path), recorded = a, new = b } end
    return
  end
  if sa == "empty" or sb == "empty" then
    if next(a) == nil and next(b) == nil then return end
    if sa == "empty" then sa = sb else sb = sa end
  end
  if sa ~= sb then
    out[#out + 1] = { path = M.pointer(path), recorded = a, new = b }
    return
  end
  local n = #path + 1
  if sa == "array" then
    local na, nb = #a, #b
    for i = 1, (na > nb and na or nb) do
      path[n] = tostring(i - 1)
      local x, y = a[i], b[i]
      if i > na then x = ABSENT elseif x == nil then x = null end
      if i > nb then y = ABSENT elseif y == nil then y = null end
      step(x, y, path, ignore, out, depth)
    end
    path[n] = nil
    return
  end
  local keys, key_of = {}, {}
  for k in pairs(a) do
    local t = key_text(k)
    if not key_of[t] then keys[#keys + 1] = t end
    key_of[t] = key_of[t] or {}
    key_of[t].a = k
  end
  for k in pairs(b) do
    local t = key_text(k)
    if not key_of[t] then keys[#keys + 1] = t; key_of[t] = {} end
    key_of[t].b = k
  end
  sort(keys)
  for _, t in ipairs(keys) do
    local ks = key_of[t]
    path[n] = t
    local x, y = ABSENT, ABSENT
    if ks.a ~= nil then x = a[ks.a] end
    if ks.b ~= nil then y = b[ks.b] end
    step(x, y, path, ignore, out, depth)
  end
  path[n] = nil
end

-- diff(recorded, new, ignore?) -> list of {path, recorded, new} (ABSENT
-- where one side has nothing). ignore: from ignorer().
function M.diff(a, b, ignore)
  local out = {}
  walk(a, b, {}, ignore, out, 0)
  return out
end

return M
