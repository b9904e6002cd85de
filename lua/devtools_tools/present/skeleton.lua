-- devtools_tools.present.skeleton: a JSON skeleton of a tool's inputSchema,
-- what a person starts to fill in (Neovim's argument buffer).
--
-- The skeleton holds the required keys (in `required` order) and the keys
-- with a default; each value is the default, else `const`, else the first
-- `enum` value, else a placeholder of its type ("" / minimum or 0 / false /
-- [] / an object skeleton / null). Local "$ref"s are followed (through
-- present.schema, the one walker). A part it cannot read becomes null.
--
-- It must never raise on a schema, nor grow with it unbounded: the walk
-- runs on a present.schema budget and stops at 16 levels; a skeleton that
-- was cut starts with a comment line saying so (its cut values are null).

local dt = require "devtools_tools"
local pschema = require "devtools_tools.present.schema"
local pretty = require "devtools_tools.present.pretty"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, rawget, ipairs, pcall = type, rawget, ipairs, pcall
local concat, floor = table.concat, math.floor
local is_list, settle, params = pschema.is_list, pschema.settle, pschema.params

local M = {}

M.MAX_DEPTH = 16
M.CUT_NOTE = "// cut: the inputSchema is too large to show whole here (null where it was cut)"

local function encode(v)
  local ok, s = pcall(dt.json.encode, v)
  return ok and s or "null"
end

local placeholder = { string = '""', boolean = "false", null = "null", array = "[]" }

local value

local function object(root, node, depth, b)
  local keys = params(root, node, "defaults", b)
  if #keys == 0 then return "{}" end
  local parts = {}
  for i, k in ipairs(keys) do
    parts[i] = encode(k.name) .. ":" .. value(root, k.schema, depth + 1, b)
  end
  return "{" .. concat(parts, ",") .. "}"
end

function value(root, node, depth, b)
  if depth > M.MAX_DEPTH or not b:take() then return "null" end
  node = settle(root, node, b)
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
  if t == "object" then return object(root, node, depth, b) end
  if t == "number" or t == "integer" then
    local min = rawget(node, "minimum")
    if type(min) == "number" then return encode(min) end
    local xmin = rawget(node, "exclusiveMinimum")
    if type(xmin) == "number" then return encode(t == "integer" and floor(xmin) + 1 or xmin + 1) end
    return "0"
  end
  if t == "array" then
    local items, min = rawget(node, "items"), rawget(node, "minItems")
    if type(min) == "number" and min > 0 and type(items) == "table" and not is_list(items) then
      return "[" .. value(root, items, depth + 1, b) .. "]"
    end
    return "[]"
  end
  return placeholder[t] or "null"
end

-- build(schema, b?) -> compact JSON text of the skeleton, always an
-- object ("{}" for an empty or unreadable schema, or one whose root says
-- a value that is none: a tool's arguments are an object), and whether
-- it was cut. b: a present.schema budget (default: its defaults).
function M.build(schema, b)
  b = b or pschema.budget()
  local s = value(schema, schema, 0, b)
  if s:sub(1, 1) ~= "{" then s = "{}" end
  return s, b.cut
end

-- text(schema, b?) -> the skeleton over several lines, as a person edits
-- it, with M.CUT_NOTE as its first line when it was cut; and whether it was.
function M.text(schema, b)
  local s, cut = M.build(schema, b)
  s = pretty.reindent(s)
  if cut then s = M.CUT_NOTE .. "\n" .. s end
  return s, cut
end

-- strip_notes(text) -> text without its comment lines (lines that start
-- with "//" after white space): what an edited skeleton holds as JSON.
-- (A JSON string cannot span lines, so such a line is never inside one.)
function M.strip_notes(s)
  return (("\n" .. s):gsub("\n[ \t]*//[^\n]*", "\n"):sub(2))
end

return M
