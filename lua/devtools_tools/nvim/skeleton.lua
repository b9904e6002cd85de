-- devtools_tools.nvim.skeleton: a JSON skeleton of a tool's inputSchema,
-- what an argument buffer starts with, and the parameter list the tool
-- list shows.
--
-- The skeleton holds the required keys (in `required` order) and the keys
-- with a default; each value is the default, else `const`, else the first
-- `enum` value, else a placeholder of its type ("" / minimum or 0 / false /
-- [] / an object skeleton / null). Local "$ref"s ("#/...") are followed.
-- The schema is page data: it is read with rawget only, never trusted to
-- be well formed, and nothing here raises on an odd schema - a part it
-- cannot read becomes null. Pure Lua, no Neovim API.

require("devtools_tools.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local json = require "devtools_tools.json"

local type, rawget, ipairs, pairs, tonumber =
      type, rawget, ipairs, pairs, tonumber
local concat, sort = table.concat, table.sort

local M = {}

local MAX_DEPTH = 16

local function is_list(t)
  return type(t) == "table" and (json.is_array(t) or rawget(t, 1) ~= nil)
end

local function unescape(tok)
  tok = tok:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)
  tok = tok:gsub("~1", "/"):gsub("~0", "~")
  return tok
end

-- Follows "$ref": "#/a/b" inside the root schema; nil when it cannot.
local function deref(root, node)
  for _ = 1, MAX_DEPTH do
    if type(node) ~= "table" then return node end
    local ref = rawget(node, "$ref")
    if type(ref) ~= "string" then return node end
    if ref == "#" then
      node = root
    else
      local ptr = ref:match("^#(/.*)$")
      if not ptr then return nil end
      local cur = root
      for tok in ptr:gmatch("/([^/]*)") do
        if type(cur) ~= "table" then return nil end
        tok = unescape(tok)
        if is_list(cur) and tonumber(tok) then
          cur = rawget(cur, tonumber(tok) + 1)
        else
          cur = rawget(cur, tok)
        end
      end
      node = cur
    end
  end
  return nil
end

-- The schema a value is built from: a $ref followed, or the first branch
-- of allOf / anyOf / oneOf when the node says nothing itself.
local function settle(root, node, depth)
  node = deref(root, node)
  if type(node) ~= "table" or depth > MAX_DEPTH then return node end
  if rawget(node, "type") == nil and rawget(node, "properties") == nil
      and rawget(node, "enum") == nil and rawget(node, "const") == nil
      and rawget(node, "default") == nil then
    for _, k in ipairs({ "allOf", "anyOf", "oneOf" }) do
      local list = rawget(node, k)
      if is_list(list) and rawget(list, 1) ~= nil then
        return settle(root, rawget(list, 1), depth + 1)
      end
    end
  end
  return node
end

local function encode(v)
  local ok, s = pcall(json.encode, v)
  return ok and s or "null"
end

-- The keys of an object schema: required ones first, in their order.
-- with_defaults: also the other keys that have a default; all: every key.
local function keys_of(root, node, mode)
  local out, seen = {}, {}
  local props = rawget(node, "properties")
  if type(props) ~= "table" then props = {} end
  local req = rawget(node, "required")
  if is_list(req) then
    for _, k in ipairs(req) do
      if type(k) == "string" and not seen[k] then
        seen[k] = true
        out[#out + 1] = { name = k, required = true }
      end
    end
  end
  local rest = {}
  for k, v in pairs(props) do
    if type(k) == "string" and not seen[k] then
      local s = deref(root, v)
      if mode == "all" or (type(s) == "table" and rawget(s, "default") ~= nil) then
        rest[#rest + 1] = k
      end
    end
  end
  sort(rest)
  for _, k in ipairs(rest) do out[#out + 1] = { name = k, required = false } end
  return out, props
end

local placeholder = {
  string = '""', boolean = "false", null = "null", array = "[]",
}

local value

local function object(root, node, depth)
  local keys, props = keys_of(root, node, "defaults")
  if #keys == 0 then return "{}" end
  local parts = {}
  for i, k in ipairs(keys) do
    parts[i] = encode(k.name) .. ":" .. value(root, rawget(props, k.name), depth + 1)
  end
  return "{" .. concat(parts, ",") .. "}"
end

function value(root, node, depth)
  if depth > MAX_DEPTH then return "null" end
  node = settle(root, node, depth)
  if type(node) ~= "table" then return "null" end
  local v = rawget(node, "default")
  if v ~= nil then return encode(v) end
  v = rawget(node, "const")
  if v ~= nil then return encode(v) end
  local enum = rawget(node, "enum")
  if is_list(enum) and rawget(enum, 1) ~= nil then return encode(rawget(enum, 1)) end
  local t = rawget(node, "type")
  if is_list(t) then
    local first
    for _, x in ipairs(t) do
      if x ~= "null" then first = x break end
    end
    t = first or "null"
  end
  if t == nil and type(rawget(node, "properties")) == "table" then t = "object" end
  if t == "object" then return object(root, node, depth) end
  if t == "number" or t == "integer" then
    local min = rawget(node, "minimum")
    if type(min) == "number" then return encode(min) end
    local xmin = rawget(node, "exclusiveMinimum")
    if type(xmin) == "number" then return encode(t == "integer" and math.floor(xmin) + 1 or xmin + 1) end
    return "0"
  end
  if t == "array" then
    local items, min = rawget(node, "items"), rawget(node, "minItems")
    if type(min) == "number" and min > 0 and type(items) == "table" and not is_list(items) then
      return "[" .. value(root, items, depth + 1) .. "]"
    end
    return "[]"
  end
  return placeholder[t] or "null"
end

-- build(schema) -> compact JSON text of the skeleton ("{}" for an empty or
-- unreadable schema).
function M.build(schema)
  local s = value(schema, schema, 0)
  if s == "null" then return "{}" end
  return s
end

-- parameters(schema) -> list of {name, required}: every property, the
-- required ones first.
function M.parameters(schema)
  local node = settle(schema, schema, 0)
  if type(node) ~= "table" then return {} end
  return (keys_of(schema, node, "all"))
end

return M
