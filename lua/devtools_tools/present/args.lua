-- devtools_tools.present.args: a tool's arguments from words a person
-- types, typed by the tool's inputSchema.
--
--   key=value    typed by the property's schema (its type, enum and const
--                values, the branches of anyOf, oneOf and allOf, $refs
--                followed): a decimal number where it admits number or
--                integer, true/false where boolean, null where null,
--                otherwise the string
--   key:=json    the value as raw JSON (httpie's convention)
--   {...}        a JSON object of arguments (first word only)
--
-- The schema is read through present.schema (its $ref walker, on a
-- budget); validation stays the library's (tool:call checks the result).
-- It must never raise for what a person typed: a word it cannot use is
-- `nil, message`, for the front end to report as a usage error.

local dt = require "devtools_tools"
local pschema = require "devtools_tools.present.schema"
local text = require "devtools_tools.present.text"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, tostring, tonumber, pcall, pairs, ipairs, rawget, getmetatable =
      type, tostring, tonumber, pcall, pairs, ipairs, rawget, getmetatable
local tointeger = math.tointeger
local brief = text.brief

local M = {}

-- decimal(s) -> true for a number as people write it in decimal: 12, -1.5,
-- .5, 2e3 (tonumber would also take "0x10" as 16, LuaJIT's "0b101" as 5,
-- and spaces around).
function M.decimal(s)
  local m = s:match("^[-+]?(.*)$")
  local mant = m:match("^([%d.]+)[eE][-+]?%d+$") or m
  return (mant:match("^%d+%.?%d*$") or mant:match("^%.%d+$")) ~= nil
end

-- typed(value, prop, root, b?) -> the value of key=value under the
-- property's schema prop (root: the whole inputSchema, for $refs); nil,
-- message for a number JSON cannot hold.
function M.typed(value, prop, root, b)
  local types = pschema.types(pschema.deref(root, prop), root, b or pschema.budget())
  if types.integer or types.number then
    local n = tonumber(value)
    if n and M.decimal(value) then
      if n ~= n or n == math.huge or n == -math.huge then
        return nil, "too large for a JSON number"
      end
      if n == 0 and value:match("^%-") then return -0.0 end       -- (Lua 5.4 reads "-0" as the integer 0)
      if tointeger and value:match("^[-+]?%d+$") then n = tointeger(n) or n end
      return n
    end
  end
  if types.boolean and (value == "true" or value == "false") then return value == "true" end
  if types.null and value == "null" then return dt.null end
  return value
end

local function why(err)
  return tostring(dt.is_error(err) and err.message or err)
end

-- from_words(schema, words) -> args | nil, message. schema: the tool's
-- inputSchema, or nil (then every key=value is a string: the words are
-- checked before any browser is there to tell the schema).
function M.from_words(schema, words)
  local args = {}
  local props = type(schema) == "table" and rawget(schema, "properties")
  if type(props) ~= "table" then props = {} end
  local b = pschema.budget()
  for i, w in ipairs(words) do
    local object = i == 1 and w:match("^%s*{") ~= nil
    if w:match("^:=") then return nil, "key:=json needs a key, got: " .. brief(w) end
    local k, raw
    if not object then k, raw = w:match("^([^=]+):=(.*)$") end
    if k then
      local ok, v = pcall(dt.json.decode, raw)
      if not ok then return nil, "not JSON after " .. k .. ":= (" .. why(v) .. "): " .. brief(raw) end
      args[k] = v
    elseif object then
      local ok, v = pcall(dt.json.decode, w)
      if not ok then return nil, "the JSON arguments are not JSON (" .. why(v) .. "): " .. brief(w) end
      if type(v) ~= "table" or getmetatable(v) == dt.array_mt then
        return nil, "the JSON arguments must be an object: " .. brief(w)
      end
      for kk, vv in pairs(v) do args[kk] = vv end
    else
      local key, value = w:match("^([^=]+)=(.*)$")
      if not key then return nil, "expected JSON, key=value or key:=json, got: " .. brief(w) end
      local v, err = M.typed(value, rawget(props, key), schema, b)
      if err then return nil, key .. "=" .. brief(value) .. ": " .. err end
      args[key] = v
    end
  end
  return args
end

return M
