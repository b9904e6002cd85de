-- devtools_tools.trace.values: a call's arguments and result as a trace
-- keeps them, and the same made of a value a replay gets, so that the two
-- compare: JSON text, each Element as {"$element": its description}, and
-- a value whose text is over the trace's limit kept as its SHA-256 and
-- size only (the hash is over the canonical text: keys sorted, so equal
-- values hash alike whatever order their keys were made in).
--
-- What it must never do: change the value it is given (an Element is
-- replaced in a copy), or hash anything but what the page sent.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local json = require "devtools_tools.base.json"
local errors = require "devtools_tools.base.errors"
local is_element = require("devtools_tools.tools.element").is_element

local type, pairs, next, pcall, tostring, getmetatable, setmetatable =
      type, pairs, next, pcall, tostring, getmetatable, setmetatable
local sort, concat = table.sort, table.concat
local encode, kind, null = json.encode, json.kind, json.null

local M = {}

-- The default limit: a value whose JSON text is longer is kept as its
-- digest and size.
M.LIMIT = 1024 * 1024

-- The key an Element becomes (a page cannot send an Element, only a
-- description of one: the marker is ours to read back).
M.ELEMENT = "$element"

-- plain(v) -> v with each Element in it as {"$element": description}: v
-- itself when it holds none, else a copy of the tables on the way to one.
local function plain(v, depth)
  if type(v) ~= "table" then return v end
  if is_element(v) then return { [M.ELEMENT] = tostring(v.description) } end
  if depth > 1000 then return v end
  local copy
  for k, x in next, v do
    local y = plain(x, depth + 1)
    if y ~= x and not copy then
      copy = {}
      for k2, x2 in next, v do copy[k2] = x2 end
      setmetatable(copy, getmetatable(v))
    end
    if copy then copy[k] = y end
  end
  return copy or v
end
function M.plain(v) return plain(v, 0) end

-- canonical(v) -> JSON text with every object's keys sorted
local function canonical(v, out)
  if type(v) == "table" and kind(v) == "object" then
    local names, key_of = {}, {}
    for k in pairs(v) do
      local name = type(k) == "string" and k or encode({ [k] = true }):match('^{"(.*)":true}$') or tostring(k)
      names[#names + 1] = name
      key_of[name] = k
    end
    sort(names)
    out[#out + 1] = "{"
    for i = 1, #names do
      if i > 1 then out[#out + 1] = "," end
      out[#out + 1] = encode(names[i])
      out[#out + 1] = ":"
      canonical(v[key_of[names[i]]], out)
    end
    out[#out + 1] = "}"
  elseif type(v) == "table" and kind(v) == "array" then
    out[#out + 1] = "["
    for i = 1, #v do
      if i > 1 then out[#out + 1] = "," end
      local x = v[i]
      if x == nil then x = null end
      canonical(x, out)
    end
    out[#out + 1] = "]"
  else
    out[#out + 1] = encode(v)
  end
end
function M.canonical(v)
  local out = {}
  canonical(v, out)
  return concat(out)
end

-- digest(v) -> {sha256 =, bytes =}: the value's canonical text hashed
function M.digest(v, bytes)
  local text = M.canonical(v)
  local hex, message = core.digest.sha256(text)
  if not hex then errors.raise("protocol_error", "trace: " .. tostring(message)) end
  return { sha256 = hex, bytes = bytes or #text }
end

-- text(v, limit) -> JSON text | nil, digest: v as a trace line holds it
-- (nil for a Lua nil: JSON has none, so null), or, over limit bytes, its
-- digest instead. Raises bad_argument for a value JSON cannot hold.
function M.text(v, limit)
  if v == nil then return "null" end
  local ok, s = pcall(encode, v)
  if not ok then
    v = plain(v, 0)
    s = encode(v)
  end
  if #s > (limit or M.LIMIT) then return nil, M.digest(v, #s) end
  return s
end

-- same_digest(d, v) -> true when v is the value digest d was made of
function M.same_digest(d, v)
  if type(d) ~= "table" then return false end
  local got = M.digest(plain(v == nil and null or v, 0))
  return got.sha256 == d.sha256
end

return M
