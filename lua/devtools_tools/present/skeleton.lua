-- devtools_tools.present.skeleton: a JSON skeleton of a tool's inputSchema,
-- what a person starts to fill in (Neovim's argument buffer).
--
-- The skeleton holds the required keys (in `required` order) and the keys
-- with a default; each value is the default, else `const`, else the first
-- `enum` value, else a placeholder of its type ("" / minimum or 0 / false /
-- [] / an object skeleton / null). Local "$ref"s are followed (through
-- present.schema, the one walker). A part it cannot read becomes null.
-- Values a person already typed (`given`, a JSON object) take the place
-- of the top level's placeholders. An enum offers more than the one value
-- the skeleton holds: text() shows each enum met as a comment line above
-- the JSON ("// /tableName: one of "orders", "users", ...").
--
-- It must never raise on a schema, nor grow with it unbounded: the walk
-- runs on a present.schema budget and stops at 16 levels; a skeleton that
-- was cut starts with a comment line saying so (its cut values are null).
-- The enum notes are bounded too (M.MAX_NOTES lines of M.NOTE_WIDTH
-- bytes), and a page's values in them are JSON text, escaped as
-- present.pretty escapes them: a note is one line, whatever they hold.

local dt = require "devtools_tools"
local pschema = require "devtools_tools.present.schema"
local pretty = require "devtools_tools.present.pretty"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, rawget, ipairs, pairs, pcall = type, rawget, ipairs, pairs, pcall
local concat, floor, sort = table.concat, math.floor, table.sort
local is_list, settle, params = pschema.is_list, pschema.settle, pschema.params

local M = {}

M.MAX_DEPTH = 16
M.CUT_NOTE = "// cut: the inputSchema is too large to show whole here (null where it was cut)"
M.MAX_NOTES = 20          -- enum notes shown
M.NOTE_WIDTH = 200        -- bytes of one (its values cut with ", ...")

local function encode(v)
  local ok, s = pcall(dt.json.encode, v)
  return ok and s or "null"
end

local placeholder = { string = '""', boolean = "false", null = "null", array = "[]" }

-- A JSON Pointer's segment (RFC 6901), as the validator's paths write it.
local function segment(name)
  return (name:gsub("~", "~0"):gsub("/", "~1"))
end

-- The note of an enum at path: "// /path: one of v1, v2, ..." (each value
-- as JSON, escaped), at most M.NOTE_WIDTH bytes.
local function enum_note(path, enum)
  local head = "// " .. (path == "" and "/" or path) .. ": one of "
  local n = #enum
  local parts, len = {}, #head
  for i = 1, n do
    local v = pretty.escape_controls(encode(rawget(enum, i)))
    local tail = i < n and (" (" .. n .. " values)") or ""
    if len + #v + 2 + #tail + 5 > M.NOTE_WIDTH then
      parts[#parts + 1] = "... (" .. n .. " values)"
      break
    end
    parts[#parts + 1] = v
    len = len + #v + 2
  end
  local line = head .. concat(parts, ", ")
  if #line > M.NOTE_WIDTH then line = line:sub(1, M.NOTE_WIDTH - 3) .. "..." end
  return line
end

local function add_note(notes, path, enum)
  if #notes < M.MAX_NOTES and #enum > 1 then notes[#notes + 1] = enum_note(path, enum) end
end

local value

-- given: the values already typed for this object's keys (the top level
-- only), shown in place of placeholders; its keys the schema does not
-- name follow, sorted.
local function object(root, node, depth, b, path, notes, given)
  local keys = params(root, node, "defaults", b)
  local parts, seen = {}, {}
  for _, k in ipairs(keys) do
    local sub = path .. "/" .. segment(k.name)
    local g = given and rawget(given, k.name)
    if g ~= nil then
      seen[k.name] = true
      -- (its enum is still worth a note)
      local s = settle(root, k.schema, b)
      local enum = type(s) == "table" and rawget(s, "enum")
      if is_list(enum) then add_note(notes, sub, enum) end
      parts[#parts + 1] = encode(k.name) .. ":" .. encode(g)
    else
      parts[#parts + 1] = encode(k.name) .. ":" .. value(root, k.schema, depth + 1, b, sub, notes)
    end
  end
  if given then
    local extra = {}
    for name in pairs(given) do
      if type(name) == "string" and not seen[name] then extra[#extra + 1] = name end
    end
    sort(extra)
    for _, name in ipairs(extra) do
      parts[#parts + 1] = encode(name) .. ":" .. encode(rawget(given, name))
    end
  end
  if #parts == 0 then return "{}" end
  return "{" .. concat(parts, ",") .. "}"
end

function value(root, node, depth, b, path, notes, given)
  if depth > M.MAX_DEPTH or not b:take() then return "null" end
  node = settle(root, node, b)
  if type(node) ~= "table" then return "null" end
  local enum = rawget(node, "enum")
  if is_list(enum) then add_note(notes, path, enum) end
  local v = rawget(node, "default")
  if v ~= nil then return encode(v) end
  v = rawget(node, "const")
  if v ~= nil then return encode(v) end
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
  if t == "object" then return object(root, node, depth, b, path, notes, given) end
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
      return "[" .. value(root, items, depth + 1, b, path .. "/0", notes) .. "]"
    end
    return "[]"
  end
  return placeholder[t] or "null"
end

-- build(schema, b?, given?) -> compact JSON text of the skeleton, always
-- an object ("{}" for an empty or unreadable schema, or one whose root
-- says a value that is none: a tool's arguments are an object), whether
-- it was cut, and the enum notes (comment lines). b: a present.schema
-- budget (default: its defaults). given: a JSON object of values already
-- typed for the top level's keys (anything else is left out).
function M.build(schema, b, given)
  b = b or pschema.budget()
  if dt.json.kind(given) ~= "object" then given = nil end
  local notes = {}
  local s = value(schema, schema, 0, b, "", notes, given)
  if s:sub(1, 1) ~= "{" then
    s = "{}"
    if given then
      local ok, g = pcall(dt.json.encode, given)
      if ok and g:sub(1, 1) == "{" then s = g end
    end
  end
  return s, b.cut, notes
end

-- text(schema, b?, given?) -> the skeleton over several lines, as a person
-- edits it: M.CUT_NOTE first when it was cut, then the enum notes, then
-- the JSON; and whether it was cut.
function M.text(schema, b, given)
  local s, cut, notes = M.build(schema, b, given)
  s = pretty.reindent(s)
  if #notes > 0 then s = concat(notes, "\n") .. "\n" .. s end
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
