-- devtools_tools.present.schema: reading a tool's inputSchema for people -
-- the one $ref walker of the front ends, the budget every walk of a page's
-- schema runs on, the parameter list and the one-line summary of a tool's
-- arguments.
--
-- A schema is page data: it is read with rawget only, never trusted to be
-- well formed, and an odd part reads as "any". Every walk takes a budget
-- (a number of nodes and a deadline on dt.now()): a schema that $refs its
-- root three times under a required property would otherwise expand 3^16
-- nodes. A walk that runs out stops where it is and says so: its budget's
-- `cut` is true and what it returns shows the cut ("..."). Validation is
-- not done here (the library's validator owns it).
--
-- It must never raise on a schema, never index a page-provided name into a
-- table of ours, and never walk without a budget.

local dt = require "devtools_tools"
local text = require "devtools_tools.present.text"
local schema = require "devtools_tools.schema"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, rawget, ipairs, pairs, tostring, setmetatable =
      type, rawget, ipairs, pairs, tostring, setmetatable
local concat, sort = table.concat, table.sort
local kind, now = dt.json.kind, dt.now

local M = {}

M.MAX_REFS = 16          -- $refs followed one after another before giving up
M.MAX_DEPTH = 64         -- nested branches a walk goes down (the budget bounds the rest)
M.NODES = 4000           -- a walk's default budget: schema nodes looked at
M.SECONDS = 0.05         -- and time
local TICK = 32          -- nodes between two looks at the clock

-- ---- the budget -------------------------------------------------------------------

local Budget = {}
Budget.__index = Budget

-- budget(opts?) -> a walk's allowance. opts: nodes (M.NODES), seconds
-- (M.SECONDS) or deadline (absolute, dt.now() seconds; the earlier wins).
-- A budget may be shared by several walks that make one answer (a table of
-- every tool's summary).
function M.budget(opts)
  opts = opts or {}
  local deadline = now() + (opts.seconds or M.SECONDS)
  if opts.deadline and opts.deadline < deadline then deadline = opts.deadline end
  return setmetatable({ left = opts.nodes or M.NODES, deadline = deadline, tick = 0, cut = false }, Budget)
end

-- take() -> true while the walk may look at one more node; false from the
-- moment nodes or time are spent (cut is then true).
function Budget:take()
  if self.cut then return false end
  local left = self.left - 1
  self.left = left
  local tick = self.tick + 1
  if tick >= TICK then
    tick = 0
    if now() > self.deadline then left = -1 end
  end
  self.tick = tick
  if left < 0 then
    self.cut = true
    return false
  end
  return true
end

local function budget_of(b) return b or M.budget() end

-- ---- JSON Pointer references ------------------------------------------------------

-- is_list(t): a JSON array as decoded (or a Lua sequence)
local function is_list(t)
  return type(t) == "table" and (kind(t) == "array" or rawget(t, 1) ~= nil)
end
M.is_list = is_list

-- resolve(root, ref) -> the node a local reference ("#", "#/a/b") names,
-- or nil: read as the validator reads it (devtools_tools.schema: ajv 6's
-- pointers), so what a person is shown is what the page checks
local resolve = schema.local_target

-- deref(root, node) -> node with its local "$ref"s followed (at most
-- MAX_REFS in a row); nil when a reference cannot be followed here (a
-- remote one, one that names nothing, a loop).
function M.deref(root, node)
  for _ = 1, M.MAX_REFS do
    if type(node) ~= "table" then return node end
    local ref = rawget(node, "$ref")
    if type(ref) ~= "string" then return node end
    node = resolve(root, ref)
  end
  return nil
end

-- ---- parameters -------------------------------------------------------------------

-- The schema a value is read from: a $ref followed, or the first branch of
-- allOf / anyOf / oneOf when the node says nothing itself (each step
-- taken from b).
function M.settle(root, node, b)
  b = budget_of(b)
  for _ = 1, M.MAX_REFS do
    node = M.deref(root, node)
    if type(node) ~= "table" or not b:take() then return node end
    if rawget(node, "type") ~= nil or rawget(node, "properties") ~= nil or rawget(node, "enum") ~= nil
        or rawget(node, "const") ~= nil or rawget(node, "default") ~= nil then
      return node
    end
    local nxt
    for _, k in ipairs({ "allOf", "anyOf", "oneOf" }) do
      local list = rawget(node, k)
      if is_list(list) and rawget(list, 1) ~= nil then nxt = rawget(list, 1) break end
    end
    if nxt == nil then return node end
    node = nxt
  end
  return node
end

-- params(root, node?, mode?, b?) -> list of {name, required, schema}: the
-- keys of an object schema (node, default the root settled), the required
-- ones first in their order, then the others sorted (mode "defaults": only
-- those with a default; else all); schema is the property's own, $refs
-- followed. Stops where b runs out (b.cut).
function M.params(root, node, mode, b)
  b = budget_of(b)
  if node == nil then node = M.settle(root, root, b) end
  local out, seen = {}, {}
  if type(node) ~= "table" then return out end
  local props = rawget(node, "properties")
  if type(props) ~= "table" then props = {} end
  local req = rawget(node, "required")
  if is_list(req) then
    for _, k in ipairs(req) do
      if not b:take() then return out end
      if type(k) == "string" and not seen[k] then
        seen[k] = true
        out[#out + 1] = { name = k, required = true, schema = M.deref(root, rawget(props, k)) }
      end
    end
  end
  local rest = {}
  for k, v in pairs(props) do
    if not b:take() then break end
    if type(k) == "string" and not seen[k] then
      local s = M.deref(root, v)
      if mode ~= "defaults" or (type(s) == "table" and rawget(s, "default") ~= nil) then
        rest[#rest + 1] = { name = k, required = false, schema = s }
      end
    end
  end
  sort(rest, function(x, y) return x.name < y.name end)
  for _, p in ipairs(rest) do out[#out + 1] = p end
  return out
end

-- ---- types ------------------------------------------------------------------------

local function encode(v)
  local ok, s = pcall(dt.json.encode, v)
  return ok and s or "?"
end

M.ENUM_FEW = 6           -- values an enum may have to be shown all, "a"|"b"|...
M.ENUM_COLUMNS = 40      -- columns its values may take, all or the first few

-- The values of an enum: all of them ("a"|"b"|"c") when they are few and
-- short, else their count and the first ones that fit ('one of 8: "a",
-- "b", ...'), each as JSON (cleaned when shown).
local function enum_text(enum, b)
  local n = #enum
  local parts, all = {}, 0
  for i, v in ipairs(enum) do
    if all > M.ENUM_COLUMNS or not b:take() then break end
    parts[i] = encode(v)
    all = all + text.width(parts[i]) + 1
  end
  if n <= M.ENUM_FEW and #parts == n and all - 1 <= M.ENUM_COLUMNS then return concat(parts, "|") end
  local head = "one of " .. n .. ": "
  local shown, w = {}, text.width(head)
  for i, p in ipairs(parts) do
    local pw = text.width(p) + 2
    if i > 1 and w + pw > M.ENUM_COLUMNS then break end
    shown[i], w = p, w + pw
  end
  return head .. concat(shown, ", ") .. (#shown < n and ", ..." or "")
end

-- type_of(s, root, b, depth?) -> a short name of what s admits: "string",
-- "integer|null", "element", "\"a\"|\"b\"", "one of 8: \"a\", \"b\", ...",
-- "string[]", "any"
function M.type_of(s, root, b, depth)
  depth = depth or 0
  if type(s) ~= "table" or depth > 4 or not b:take() then return b.cut and "..." or "any" end
  if rawget(s, "x-mcp-type") == "HTMLElement" then return "element" end
  local enum = rawget(s, "enum")
  if is_list(enum) and #enum > 0 then return enum_text(enum, b) end
  local t = rawget(s, "type")
  if is_list(t) then
    local parts = {}
    for i, v in ipairs(t) do parts[i] = tostring(v) end
    return concat(parts, "|")
  end
  local items = rawget(s, "items")
  if t == "array" and type(items) == "table" and type(rawget(items, "type")) == "string" then
    return rawget(items, "type") .. "[]"
  end
  if t == nil and rawget(s, "const") ~= nil then
    local c = encode(rawget(s, "const"))
    if #c <= 24 then return c end
  end
  -- without a type of its own: the types of its anyOf or oneOf branches
  -- ({anyOf: [{type: "integer"}, {type: "null"}]} is integer|null)
  local branches = t == nil and (is_list(rawget(s, "anyOf")) and rawget(s, "anyOf")
    or is_list(rawget(s, "oneOf")) and rawget(s, "oneOf"))
  if branches and #branches > 0 then
    local parts, seen = {}, {}
    for _, br in ipairs(branches) do
      local bt = M.type_of(M.deref(root, br), root, b, depth + 1)
      if bt == "any" or bt == "..." then return bt end
      if not seen[bt] then seen[bt] = true parts[#parts + 1] = bt end
    end
    return concat(parts, "|")
  end
  return t ~= nil and tostring(t) or "any"
end

-- summary(root, b?) -> one cleaned line: required arguments first, in
-- the order the schema lists them ("name: type"), then optional ones in
-- [...], then {...} when other names are allowed too; "..." at the end
-- when the budget ran out.
function M.summary(root, b)
  b = budget_of(b)
  if type(root) ~= "table" then return "" end
  local parts = {}
  local ps = M.params(root, root, "all", b)
  for _, p in ipairs(ps) do
    local t = M.type_of(p.schema, root, b)
    parts[#parts + 1] = p.required and (p.name .. ": " .. t) or ("[" .. p.name .. ": " .. t .. "]")
    if b.cut then break end
  end
  if b.cut then
    parts[#parts + 1] = "..."
  elseif #ps == 0 and rawget(root, "additionalProperties") ~= false then
    parts[#parts + 1] = "{...}"
  end
  return text.clean(concat(parts, ", "))
end

-- types(s, root, b, set?, depth?) -> set of the JSON type names s admits:
-- its type, the types of its enum and const values, and those of the
-- branches of anyOf, oneOf and allOf ($refs followed): a nullable number
-- is often {anyOf: [{type: "number"}, {type: "null"}]}, a small set
-- {enum: [1, 2]}.
local function value_type(v)
  if v == dt.null then return "null" end
  local t = type(v)
  return (t == "number" or t == "boolean" or t == "string") and t or nil
end

function M.types(s, root, b, set, depth)
  set, depth = set or {}, depth or 0
  if type(s) ~= "table" or depth > M.MAX_DEPTH or not b:take() then return set end
  local t = rawget(s, "type")
  if type(t) == "string" then set[t] = true
  elseif is_list(t) then
    for _, x in ipairs(t) do if type(x) == "string" then set[x] = true end end
  end
  local enum = rawget(s, "enum")
  if is_list(enum) then
    for _, v in ipairs(enum) do
      local vt = value_type(v)
      if vt then set[vt] = true end
    end
  end
  local ct = rawget(s, "const") ~= nil and value_type(rawget(s, "const"))
  if ct then set[ct] = true end
  for _, key in ipairs({ "anyOf", "oneOf", "allOf" }) do
    local list = rawget(s, key)
    if is_list(list) then
      for _, br in ipairs(list) do M.types(M.deref(root, br), root, b, set, depth + 1) end
    end
  end
  return set
end

return M
