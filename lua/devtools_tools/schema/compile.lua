-- devtools_tools.schema.compile: a draft-07 schema to a graph of plain data.
--
-- compile(schema, loader, deadline) reads the schema once: it resolves
-- $id and $ref (remote documents only from the caller's loader, the
-- draft-07 meta-schema built in), checks that every keyword is well formed
-- (bad_argument naming where it is wrong), compiles regular expressions,
-- and returns the root of a graph of nodes, one per schema object. A node
-- holds its keywords as data (limits, messages, schema locations, child
-- nodes); it runs nothing. The two engines make functions of it:
-- schema/check.lua (closures) and schema/generate.lua (Lua source).
--
-- Node kinds: "true", "false", "element" (x-mcp-type HTMLElement), "ref"
-- (a $ref: see target), "node" (everything else, a $ref whose `type` ajv 6
-- still checks included: the type, then an allOf of the target). A node reached again
-- while it is being compiled is marked `cyclic` (recursion through data);
-- a cycle that never reaches a value is refused. A node the root reaches
-- in many ways gets `shared`: the engines memoise its verdict per value,
-- so that a schema cannot make validation exponential.
--
-- It must never reach the network, never modify the schema, and never
-- take longer than the caller's deadline.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local formats = require "devtools_tools.schema.formats"
local uri = require "devtools_tools.schema.uri"
local meta = require "devtools_tools.schema.meta"
local values = require "devtools_tools.schema.values"
local context = require "devtools_tools.schema.context"

local type, pairs, ipairs, next, rawget, getmetatable, setmetatable, tostring, tonumber =
      type, pairs, ipairs, next, rawget, getmetatable, setmetatable, tostring, tonumber
local concat, sort = table.concat, table.sort
local sfind, ssub, sgsub, smatch = string.find, string.sub, string.gsub, string.match

local array_mt, null = core.array_mt, core.null
local regex_compile = core.regex.compile
local now = core.now
local resolve, split_fragment, pct_decode, decode_component, inner_base =
      uri.resolve, uri.split_fragment, uri.pct_decode, uri.decode_component, uri.inner_base
local num_str, render, is_element, deep_equal =
      values.num_str, values.render, values.is_element, values.deep_equal
local escape_token = context.escape_token

local M = {}

local TRUE = { kind = "true" }
M.TRUE = TRUE

-- follows $ref aliases to the node that does the work
local function resolved(n)
  while n.kind == "ref" do n = n.target end
  return n
end
M.resolved = resolved

---------------------------------------------------------- schema shape

local function bad(loc, msg)
  if #loc > 120 then loc = ssub(loc, 1, 57) .. "..." .. ssub(loc, -60) end   -- (one 500 deep)
  errors.raise("bad_argument", "invalid schema at " .. loc .. ": " .. msg)
end
M.bad = bad

local function is_arrayish(t)
  if type(t) ~= "table" then return false end
  local mt = getmetatable(t)
  if mt == array_mt or rawget(t, 1) ~= nil then return true end
  return mt == nil and next(t) == nil
end

local function is_object(t)
  if type(t) ~= "table" then return false end
  local mt = getmetatable(t)
  return mt ~= array_mt and rawget(t, 1) == nil and not is_element(t)
end

local function need_array(v, loc)
  if not is_arrayish(v) then bad(loc, "must be an array") end
  return v
end

local function need_object(v, loc)
  if not is_object(v) then bad(loc, "must be an object") end
  return v
end

local function need_number(v, loc)
  if type(v) ~= "number" or v ~= v then bad(loc, "must be a number") end
  return v
end

local function need_count(v, loc)
  if type(v) ~= "number" or v % 1 ~= 0 or v < 0 then
    bad(loc, "must be a non-negative integer")
  end
  return v
end

local function need_string(v, loc)
  if type(v) ~= "string" then bad(loc, "must be a string") end
  return v
end

local function unique_strings(v, loc)
  need_array(v, loc)
  local seen = {}
  for i = 1, #v do
    local s = v[i]
    if type(s) ~= "string" then bad(loc .. "/" .. (i - 1), "must be a string") end
    if seen[s] then bad(loc, "must not have duplicate items ('" .. s .. "')") end
    seen[s] = true
  end
  return v
end

local function sub_loc(loc, key)
  return loc .. "/" .. escape_token(key)
end

-- Keywords whose value is a schema, an array of schemas, or a map of them.
local SCHEMA_KW = {
  additionalItems = 1, additionalProperties = 1, contains = 1,
  propertyNames = 1, ["not"] = 1, ["if"] = 1, ["then"] = 1, ["else"] = 1,
  allOf = 2, anyOf = 2, oneOf = 2,
  properties = 3, patternProperties = 3, definitions = 3,
}

local TYPES = { null = true, boolean = true, object = true, array = true,
                number = true, integer = true, string = true }
M.TYPES = TYPES

-------------------------------------------------------------- compiler

local Compiler = {}
Compiler.__index = Compiler

local COMPILE_TICK = 64     -- nodes between two looks at the clock
local MAX_NESTING = 500     -- schemas inside one another (a page's are cut at 512 JSON levels)
-- A $ref followed this deep in the compile's recursion is compiled later,
-- from the top: a chain of definitions each pointing at the next (490 of
-- them, each 4 levels deep) nests no deeper than one of them, and the
-- recursion stays within MAX_NESTING + REF_DEFER_DEPTH (LuaJIT's stack
-- ends near 1000 compile levels: "stack overflow").
local REF_DEFER_DEPTH = 32

local function new_compiler(loader, deadline, rs)
  return setmetatable({
    loader = loader,
    deadline = deadline,
    rs = rs,            -- the validator's run state (its call's deadline), or nil
    resources = {},     -- document URI -> { node, outer base }
    anchors = {},       -- URI#name -> { node, outer base }
    scanned = {},
    compiled = {},      -- schema -> inner base -> node
    pending = {},       -- schema -> inner base -> { node, level }, while compiling it
    level = 0,          -- data-consuming steps on the current compile path
    depth = 0,          -- schemas on the current compile path ($refs followed included)
    nest = 0,           -- schemas inside one another in the current $ref's target
    deferred = {},      -- $ref targets to compile from the top: { node, s, outer, loc }
    regexes = {},
    nodes = {},         -- every node made, in order
    finished = {},      -- the same, in the order their compiling ended
    main = {},
  }, Compiler)
end

-- Registers the $ids (base URIs and plain-name anchors) of a document.
function Compiler:scan(node, outer, depth)
  depth = (depth or 0) + 1
  if depth > MAX_NESTING then
    bad(outer ~= "" and outer or "#", "schemas nested more than " .. MAX_NESTING .. " deep")
  end
  if type(node) ~= "table" or self.scanned[node] then return end
  self.scanned[node] = true
  local inner = outer
  local id = rawget(node, "$id")
  if type(id) == "string" and rawget(node, "$ref") == nil then
    local doc, frag = split_fragment(resolve(outer, id))
    inner = doc
    if doc ~= split_fragment(outer) and not self.resources[doc] then
      self.resources[doc] = { node = node, outer = outer }
    end
    if frag and frag ~= "" and ssub(frag, 1, 1) ~= "/" then
      local key = doc .. "#" .. frag
      if not self.anchors[key] then
        self.anchors[key] = { node = node, outer = outer }
      end
    end
  end
  for k, sub in pairs(node) do
    local kind = SCHEMA_KW[k]
    if type(sub) == "table" then
      if kind == 1 then
        self:scan(sub, inner, depth)
      elseif kind == 2 or (k == "items" and is_arrayish(sub) and next(sub) ~= nil) then
        for _, s in ipairs(sub) do self:scan(s, inner, depth) end
      elseif kind == 3 or k == "dependencies" then
        for _, s in pairs(sub) do
          if not is_arrayish(s) then self:scan(s, inner, depth) end
        end
      elseif k == "items" then
        self:scan(sub, inner, depth)
      end
    end
  end
end

function Compiler:add_document(s, doc)
  if type(s) ~= "table" and type(s) ~= "boolean" then
    bad(doc, "a schema must be an object or a boolean")
  end
  if not self.resources[doc] then
    self.resources[doc] = { node = s, outer = doc }
  end
  self:scan(s, doc)
end

function Compiler:resource(doc, loc, ref)
  local r = self.resources[doc]
  if r then return r end
  local s
  local loader = self.loader
  if type(loader) == "table" then
    s = loader[doc]
    if s == nil then s = loader[doc .. "#"] end
  elseif loader ~= nil then
    s = loader(doc)
  end
  if s == nil and meta.documents[doc] then s = meta.documents[doc]() end
  if s == nil then
    bad(loc, "cannot resolve $ref \"" .. ref .. "\": no schema for \"" .. doc ..
        "\" (remote schemas come only from opts.loader)")
  end
  self:add_document(s, doc)
  return self.resources[doc]
end

-- Tokens after which ajv 6 does not follow a $ref it steps on: they hold
-- names (or values), not schemas.
local NAMES_HERE = { properties = true, patternProperties = true, enum = true,
                     dependencies = true, definitions = true }
local MAX_HOPS = 64       -- $refs followed within one pointer (ajv 6 overflows its stack)

-- Follows the JSON pointer frag (as written: percent-encoded) from the root
-- of document res, as ajv 6 does (its getJsonPointer), so that a pointer
-- means to us what it means to the reference: each token is
-- percent-decoded on its own, as decodeURIComponent does ("%2F" is a "/"
-- inside a name; an escape it cannot decode makes the schema malformed),
-- then "~1" and "~0"; an empty token is skipped ("#/properties/x/" is
-- "#/properties/x", "#//a" is "#/a") unless it names a member "" there (the
-- draft-07 suite's "#/definitions//definitions/"; ajv 6 skips it even
-- then, which README lists as a difference); an array is indexed only by
-- "0" or "1", "2", ..., never "01"; a $ref met before the last token is
-- followed first (but under properties, definitions, ...: NAMES_HERE);
-- a pointer that comes back to the document's root points at nothing.
-- Returns the node and the base URI around it, or nil.
-- The raw tokens of a pointer ("/a/b%2Fc" -> "a", "b%2Fc").
local function pointer_tokens(frag)
  local toks, i = {}, 2
  while true do
    local j = sfind(frag, "/", i, true)
    toks[#toks + 1] = ssub(frag, i, j and j - 1 or -1)
    if not j then break end
    i = j + 1
  end
  return toks
end

-- step(node, raw) -> SKIP | child, decoded token | nil (nothing there) |
-- MALFORMED (the token is not percent-encoded UTF-8): one token, as ajv 6
-- takes it (see Compiler:pointer). The two answers are tables of their own,
-- since a child may be any JSON value: the boolean schema false is one.
local SKIP, MALFORMED = {}, {}
local function pointer_step(node, raw)
  if raw == "" and not (type(node) == "table" and not is_arrayish(node) and node[""] ~= nil) then
    return SKIP
  end
  local tok = decode_component(raw)
  if tok == nil then return MALFORMED end
  tok = sgsub(sgsub(tok, "~1", "/"), "~0", "~")
  if type(node) ~= "table" then return nil end
  local child
  if is_arrayish(node) then
    child = smatch(tok, "^[1-9]%d*$") and node[tonumber(tok) + 1] or (tok == "0" and node[1]) or nil
  else
    child = node[tok]
  end
  return child, tok
end

function Compiler:pointer(res, frag, loc, ref, hops)
  local node, base, root = res.node, res.outer, res.node
  if frag == "" or frag == "/" then return node, base end
  local toks = pointer_tokens(frag)
  for k = 1, #toks do
    local raw = toks[k]
    local child, tok = pointer_step(node, raw)
    if child == MALFORMED then
      bad(loc, "$ref \"" .. ref .. "\": \"" .. raw .. "\" is not percent-encoded UTF-8 (URI malformed)")
    end
    if child ~= SKIP then
      if child == nil then return nil end
      base = inner_base(node, base)
      node = child
      local target = type(node) == "table" and rawget(node, "$ref")
      if type(target) == "string" and not NAMES_HERE[tok] and k < #toks then
        hops = hops + 1
        if hops > MAX_HOPS then bad(loc, "$ref \"" .. ref .. "\": its pointer goes round through $refs") end
        local doc2, frag2 = split_fragment(resolve(inner_base(node, base), target))
        frag2 = frag2 or ""
        if frag2 == "" or ssub(frag2, 1, 1) == "/" then
          local res2 = self:resource(doc2, loc, ref)
          local n2, b2 = self:pointer(res2, frag2, loc, ref, hops)
          if n2 ~= nil then node, base, root = n2, b2, res2.node end
        end
      end
    end
  end
  if node == root then return nil end
  return node, base
end

-- local_target(root, ref) -> the node a local $ref ("#", "#/a/b") names in
-- the document root, read as Compiler:pointer reads it (a $ref met before
-- the last token followed when it is local too), or nil: what front ends
-- show of a schema is what the validator reads of it.
function M.local_target(root, ref, hops)
  if type(ref) ~= "string" or ssub(ref, 1, 1) ~= "#" then return nil end
  local frag = ssub(ref, 2)
  if frag == "" or frag == "/" then return root end
  if ssub(frag, 1, 1) ~= "/" then return nil end
  hops = hops or 0
  local node = root
  local toks = pointer_tokens(frag)
  for k = 1, #toks do
    local child, tok = pointer_step(node, toks[k])
    if child == nil or child == MALFORMED then return nil end
    if child ~= SKIP then
      node = child
      local target = type(node) == "table" and rawget(node, "$ref")
      if type(target) == "string" and not NAMES_HERE[tok] and k < #toks then
        if hops >= MAX_HOPS then return nil end
        local n2 = M.local_target(root, target, hops + 1)
        if n2 ~= nil then node = n2 end
      end
    end
  end
  if node == root then return nil end
  return node
end

function Compiler:location(doc, frag)
  if self.main[doc] then return "#" .. frag end
  return doc .. "#" .. frag
end

function Compiler:ref(ref, base, loc)
  local full = resolve(base, ref)
  local doc, frag = split_fragment(full)
  frag = frag or ""
  if frag == "" or ssub(frag, 1, 1) == "/" then
    local res = self:resource(doc, loc, ref)
    local target, outer = self:pointer(res, frag, loc, ref, 0)
    if target == nil then bad(loc, "$ref \"" .. ref .. "\" points at nothing") end
    return self:target(target, outer, self:location(doc, pct_decode(frag)))
  end
  local a = self.anchors[doc .. "#" .. frag]
  if not a then
    self:resource(doc, loc, ref)
    a = self.anchors[doc .. "#" .. frag]
  end
  if not a then bad(loc, "$ref \"" .. ref .. "\" points at nothing") end
  return self:target(a.node, a.outer, self:location(doc, frag))
end

-- The node of a $ref's target: compiled now, its nesting counted from
-- its own place; or, deep in the recursion, a node filled later (M.compile).
function Compiler:target(s, outer, loc)
  if self.depth >= REF_DEFER_DEPTH and is_object(s) then
    local base = inner_base(s, outer)
    local done = self.compiled[s]
    local pend = self.pending[s]
    if not (done and done[base]) and not (pend and pend[base]) then
      local node = { kind = "pending", loc = loc }
      self.nodes[#self.nodes + 1] = node
      if not done then done = {}; self.compiled[s] = done end
      done[base] = node
      self.deferred[#self.deferred + 1] = { node = node, s = s, outer = outer, loc = loc }
      return node
    end
  end
  local nest = self.nest
  self.nest = 0
  local n = self:compile(s, outer, loc)
  self.nest = nest
  return n
end

-- A schema applied to another value (an item, a property): the step
-- consumes data, so a cycle through it is not an infinite loop.
function Compiler:deeper(s, base, loc)
  self.level = self.level + 1
  local n = self:compile(s, base, loc)
  self.level = self.level - 1
  return n
end

-- Compiles a schema found at loc, with `outer` the base URI around it.
function Compiler:compile(s, outer, loc)
  if s == true then return TRUE end
  if s == false then return { kind = "false", loc = loc } end
  if not is_object(s) then bad(loc, "a schema must be an object or a boolean") end
  local base = inner_base(s, outer)
  local done = self.compiled[s]
  if done and done[base] then return done[base] end
  local pend = self.pending[s]
  if pend and pend[base] then
    local p = pend[base]
    if p.level == self.level then
      bad(loc, "circular $ref that never reaches a value")
    end
    p.node.cyclic = true
    return p.node
  end
  local nodes = self.nodes
  if #nodes % COMPILE_TICK == 0 then
    context.check_deadline(self.deadline, context.COMPILE_LATE)
  end
  local node = { kind = "pending", loc = loc }
  nodes[#nodes + 1] = node
  self:fill(node, s, base, loc)
  if not done then done = {}; self.compiled[s] = done end
  done[base] = node
  return node
end

-- Builds node from schema s (its base URI: base), one level deeper.
function Compiler:fill(node, s, base, loc)
  local pend = self.pending[s]
  if not pend then pend = {}; self.pending[s] = pend end
  pend[base] = { node = node, level = self.level }
  local depth, nest = self.depth + 1, self.nest + 1
  if nest > MAX_NESTING then
    bad(loc, "schemas nested more than " .. MAX_NESTING .. " deep")
  end
  self.depth, self.nest = depth, nest
  self:build(node, s, base, loc)
  self.depth, self.nest = depth - 1, nest - 1
  pend[base] = nil
  self.finished[#self.finished + 1] = node
end

-- A pattern's test looks at the clock after each match: one match may take
-- up to PCRE2's match limit (80 ms for a catastrophic pattern), and a value
-- may hold thousands of strings or keys (300 of them took 24 s).
local function timed_test(w, s)
  local ok = w.rx:test(s)
  local d = w.rs.deadline
  if d and now() > d then errors.raise("timeout", context.VALIDATE_LATE) end
  return ok
end

-- A pattern (of pattern or patternProperties) as ajv 6 takes it: the
-- draft-07 meta-schema gives both format "regex", which ajv 6 checks when
-- it compiles a schema, so a `\Z` after anything but a backslash (an
-- anchor elsewhere, the letter Z in JavaScript) makes the whole schema
-- invalid there, and the page refuses every call.
function Compiler:regex(p, loc)
  local r = self.regexes[p]
  if r then return r end
  local msg
  if formats.z_anchor(p) then
    bad(loc, "must match format \"regex\": \\Z is no anchor in JavaScript (ajv refuses it)")
  end
  r, msg = regex_compile(p)
  if not r then bad(loc, msg) end
  if self.rs then r = { rx = r, rs = self.rs, test = timed_test } end
  self.regexes[p] = r
  return r
end

-------------------------------------------------------- keyword builders

-- Each builder reads its keyword from the schema object `s` and records it
-- in node `n`: the simplest keywords as fields (read inline by the
-- engines), the others as records { kw = name, ... } appended to the list
-- for any value (n.any) or for strings, numbers, arrays, objects (n.str,
-- n.num, n.arr, n.obj). Child schemas are nodes.

local K = {}

local function push(list, rec)
  list[#list + 1] = rec
  return rec
end

function K.type(_, s, n, loc)
  local t = s.type
  local names = {}
  if type(t) == "string" then
    names[1] = t
  else
    need_array(t, loc)
    if #t == 0 then bad(loc, "must not be empty") end
    for i = 1, #t do names[i] = t[i] end
  end
  local mask = {}
  for _, name in ipairs(names) do
    if not TYPES[name] then bad(loc, "unknown type \"" .. tostring(name) .. "\"") end
    if mask[name] then bad(loc, "must not have duplicate items") end
    mask[name] = true
  end
  n.tmask = mask
  n.tmsg = "must be " .. concat(names, ",")
  n.tloc = loc
end

-- ajv checks a schema against its draft-07 meta-schema, whose enum has at
-- least one item and no two equal: it refuses to compile
-- {"enum": [1, 1]} or {"enum": []}, so the page refuses every call.
function K.enum(_, s, n, loc)
  local vals = need_array(s.enum, loc)
  local count = #vals
  if count == 0 then bad(loc, "must not be empty") end
  local set, tables, nt = {}, {}, 0
  for i = 1, count do
    local x = vals[i]
    if x == nil then x = null end     -- a hole, as the encoder writes it
    if type(x) == "table" then
      for j = 1, nt do
        if deep_equal(x, tables[j]) then bad(loc, "must not have duplicate items") end
      end
      nt = nt + 1
      tables[nt] = x
    elseif x == x then
      x = values.as_sent(x)           -- (as the page holds it)
      if set[x] then bad(loc, "must not have duplicate items") end
      set[x] = true
    end
  end
  push(n.any, { kw = "enum", set = set, tables = tables, nt = nt, loc = loc,
                msg = "must be equal to one of the allowed values",
                allowed = render(vals) })
end

function K.const(_, s, n, loc)
  push(n.any, { kw = "const", value = s.const, loc = loc, msg = "must be equal to constant",
                allowed = render(s.const) })
end

-- The simplest keywords: { limit, message, location } in the node.
local function bound(name, op)
  K[name] = function(_, s, n, loc)
    local b = need_number(s[name], loc)
    n[name] = { values.as_sent(b), "must be " .. op .. " " .. num_str(b), loc }
  end
end
bound("maximum", "<=")
bound("minimum", ">=")
bound("exclusiveMaximum", "<")
bound("exclusiveMinimum", ">")

function K.multipleOf(_, s, n, loc)
  local m = need_number(s.multipleOf, loc)
  if m <= 0 then bad(loc, "must be greater than 0") end
  push(n.num, { kw = "multipleOf", m = m, msg = "must be multiple of " .. num_str(m), loc = loc })
end

local function limit(name, what, cmp)
  K[name] = function(_, s, n, loc)
    local lim = need_count(s[name], loc)
    n[name] = { lim, "must NOT have " .. cmp .. " than " .. num_str(lim) .. " " .. what, loc }
  end
end
limit("maxLength", "characters", "more")
limit("minLength", "characters", "fewer")
limit("maxItems", "items", "more")
limit("minItems", "items", "fewer")

function K.pattern(c, s, n, loc)
  local p = need_string(s.pattern, loc)
  local r = c:regex(p, loc)
  n.pattern = { r, 'must match pattern "' .. p .. '"', loc }
end

-- Formats check strings only (ajv 6 has none for numbers). One ajv 6 does
-- not know is ignored, where ajv 6 refuses the schema: see formats.lua.
function K.format(_, s, n, loc)
  local name = need_string(s.format, loc)
  local f = formats.string[name]
  if type(f) ~= "function" then return end
  push(n.str, { kw = "format", f = f, msg = 'must match format "' .. name .. '"', loc = loc })
end

function K.items(c, s, n, loc, base, nloc)
  local items = s.items
  if is_arrayish(items) and next(items) ~= nil or getmetatable(items) == array_mt then
    local nodes, count = {}, #items
    for i = 1, count do nodes[i] = c:deeper(items[i], base, loc .. "/" .. (i - 1)) end
    local addl = s.additionalItems
    local rec = { kw = "tuple", nodes = nodes, n = count, aloc = nloc .. "/additionalItems" }
    if addl == false then
      rec.addmsg = "must NOT have more than " .. count .. " items"
    elseif addl ~= nil and addl ~= true then
      rec.addnode = c:deeper(addl, base, nloc .. "/additionalItems")
    end
    push(n.arr, rec)
    return
  end
  local f = c:deeper(items, base, loc)
  if f ~= TRUE then n.items = f end
end

function K.additionalItems()
  -- applied by K.items when items is an array; otherwise ignored (and not
  -- compiled, as ajv 6 does not: the meta-schema check has read it)
end

function K.contains(c, s, n, loc, base)
  push(n.arr, { kw = "contains", node = c:deeper(s.contains, base, loc), loc = loc,
                msg = "must contain at least 1 valid item(s)" })
end

local function count_limit(name, cmp)
  K[name] = function(_, s, n, loc)
    local lim = need_count(s[name], loc)
    push(n.obj, { kw = name, lim = lim, more = cmp == "more", loc = loc,
                  msg = "must NOT have " .. cmp .. " than " .. num_str(lim) .. " properties" })
  end
end
count_limit("maxProperties", "more")
count_limit("minProperties", "fewer")

function K.uniqueItems(_, s, n, loc)
  local u = s.uniqueItems
  if type(u) ~= "boolean" then bad(loc, "must be a boolean") end
  if u then push(n.arr, { kw = "uniqueItems", loc = loc }) end
end

function K.required(_, s, n, loc)
  local req = unique_strings(s.required, loc)
  local count = #req
  if count == 0 then return end
  local names, msgs = {}, {}
  for i = 1, count do
    names[i] = req[i]
    msgs[i] = "must have required property '" .. req[i] .. "'"
  end
  n.required = { names, msgs, loc }
end

-- properties, patternProperties and additionalProperties work together.
function K.properties(c, s, n, loc, base, nloc)
  local props = s.properties
  local pats = s.patternProperties
  local addl = s.additionalProperties
  local keys, nodes, set, np = {}, {}, {}, 0
  if props ~= nil then
    need_object(props, loc)
    for k in pairs(props) do
      if type(k) ~= "string" then bad(loc, "property names must be strings") end
      keys[#keys + 1] = k
    end
    sort(keys)
    for _, k in ipairs(keys) do
      local f = c:deeper(props[k], base, sub_loc(loc, k))
      set[k] = true
      if f ~= TRUE then
        np = np + 1
        nodes[np] = f
        keys[np] = k
      end
    end
    for i = np + 1, #keys do keys[i] = nil end
  end
  local rxs, pnodes, npat = {}, {}, 0
  if pats ~= nil then
    local patloc = nloc .. "/patternProperties"
    need_object(pats, patloc)
    local plist = {}
    for p in pairs(pats) do
      if type(p) ~= "string" then bad(patloc, "property names must be strings") end
      plist[#plist + 1] = p
    end
    sort(plist)
    for _, p in ipairs(plist) do
      npat = npat + 1
      rxs[npat] = c:regex(p, sub_loc(patloc, p))
      pnodes[npat] = c:deeper(pats[p], base, sub_loc(patloc, p))
    end
  end
  local aloc = nloc .. "/additionalProperties"
  local addnode, addno
  if addl == false then
    addno = true
  elseif addl ~= nil and addl ~= true then
    addnode = c:deeper(addl, base, aloc)
    if addnode == TRUE then addnode = nil end
  end
  local addmsg = "must NOT have additional properties"
  if npat == 0 and (addno or addnode) then
    -- one pass over the value's keys does properties and the rest
    local map = {}
    for k in pairs(set) do map[k] = TRUE end
    for i = 1, np do map[keys[i]] = nodes[i] end
    n.merged = { map = map, addno = addno, addnode = addnode, msg = addmsg, loc = aloc }
    return
  end
  if np > 0 then n.props = { keys = keys, nodes = nodes } end
  if npat == 0 and not addno and not addnode then return end
  push(n.obj, { kw = "patternProperties", set = set, rxs = rxs, nodes = pnodes, n = npat,
                addno = addno, addnode = addnode, msg = addmsg, aloc = aloc })
end

function K.propertyNames(c, s, n, loc, base)
  local f = c:deeper(s.propertyNames, base, loc)
  if f == TRUE then return end
  push(n.obj, { kw = "propertyNames", node = f, loc = loc })
end

function K.dependencies(c, s, n, loc, base)
  local deps = need_object(s.dependencies, loc)
  local keys = {}
  for k in pairs(deps) do
    if type(k) ~= "string" then bad(loc, "property names must be strings") end
    keys[#keys + 1] = k
  end
  sort(keys)
  local list = {}
  for _, k in ipairs(keys) do
    local d, dloc = deps[k], sub_loc(loc, k)
    if is_arrayish(d) and (getmetatable(d) == array_mt or next(d) ~= nil) then
      unique_strings(d, dloc)
      local names, msgs = {}, {}
      for i = 1, #d do
        names[i] = d[i]
        msgs[i] = "must have property " .. d[i] .. " when property " .. k .. " is present"
      end
      if #names > 0 then list[#list + 1] = { key = k, names = names, msgs = msgs, loc = dloc } end
    else
      local f = c:compile(d, base, dloc)
      if f ~= TRUE then list[#list + 1] = { key = k, node = f } end
    end
  end
  if #list > 0 then push(n.obj, { kw = "dependencies", list = list }) end
end

-- ajv 6's RULES.all: a schema "has rules" when it holds one of these (or
-- is false). Where one without any (true, {}, {description}, {then}) makes
-- a keyword do nothing, ajv 6 does not compile that keyword's schemas: a
-- $ref in them that points nowhere goes unnoticed, and the schema is
-- taken (zod-to-json-schema's relative $refs next to z.any(), an unused
-- definition). We compile what it compiles, so that we refuse what it
-- refuses and take what it takes; the meta-schema check still reads all.
local AJV_RULES = {}
for _, k in ipairs { "type", "$comment", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
                     "multipleOf", "format", "maxLength", "minLength", "pattern", "maxItems", "minItems",
                     "items", "contains", "uniqueItems", "maxProperties", "minProperties", "required",
                     "dependencies", "propertyNames", "properties", "additionalProperties",
                     "patternProperties", "$ref", "const", "enum", "not", "anyOf", "oneOf", "allOf", "if",
                     "x-mcp-type" } do
  AJV_RULES[k] = true
end
local function has_rules(s)
  if s == nil or s == true then return false end
  if type(s) ~= "table" then return true end          -- (false, or malformed: compiled, refused there)
  for k in pairs(s) do
    if AJV_RULES[k] then return true end
  end
  return false
end

local function schema_list(c, s, name, loc, base)
  local list = need_array(s[name], loc)
  if #list == 0 then bad(loc, "must not be empty") end
  local nodes = {}
  for i = 1, #list do nodes[i] = c:compile(list[i], base, loc .. "/" .. (i - 1)) end
  return nodes
end

function K.allOf(c, s, n, loc, base)
  push(n.any, { kw = "allOf", nodes = schema_list(c, s, "allOf", loc, base) })
end

function K.anyOf(c, s, n, loc, base)
  local list = need_array(s.anyOf, loc)
  for i = 1, #list do
    if not has_rules(list[i]) then return end     -- always valid; ajv 6 compiles none of them
  end
  push(n.any, { kw = "anyOf", nodes = schema_list(c, s, "anyOf", loc, base), loc = loc,
                msg = "must match a schema in anyOf" })
end

function K.oneOf(c, s, n, loc, base)
  push(n.any, { kw = "oneOf", nodes = schema_list(c, s, "oneOf", loc, base), loc = loc,
                msg = "must match exactly one schema in oneOf" })
end

K["not"] = function(c, s, n, loc, base)
  push(n.any, { kw = "not", node = c:compile(s["not"], base, loc), loc = loc,
                msg = "must NOT be valid" })
end

K["if"] = function(c, s, n, loc, base, ploc)
  if not has_rules(s["then"]) and not has_rules(s["else"]) then return end   -- (nor does ajv 6 compile if)
  local iff = c:compile(s["if"], base, loc)
  local thenf = s["then"] ~= nil and c:compile(s["then"], base, ploc .. "/then") or nil
  local elsef = s["else"] ~= nil and c:compile(s["else"], base, ploc .. "/else") or nil
  if thenf == TRUE then thenf = nil end
  if elsef == TRUE then elsef = nil end
  if not thenf and not elsef then return end
  push(n.any, { kw = "if", cond = iff, ["then"] = thenf, ["else"] = elsef, ploc = ploc })
end

-- then/else alone do nothing (and ajv 6 does not compile them); the
-- meta-schema check has seen that they are schemas.
K["then"] = function() end
K["else"] = function() end

-- A definition is compiled when a $ref reaches it, as ajv 6 does (one
-- that nothing uses may hold a $ref that points nowhere).
function K.definitions(_, s, _, loc)
  local defs = need_object(s.definitions, loc)
  for k in pairs(defs) do
    if type(k) ~= "string" then bad(loc, "names must be strings") end
  end
end

K.patternProperties = function(c, s, n, _, base, nloc)
  if s.properties == nil then K.properties(c, s, n, nloc .. "/properties", base, nloc) end
end
K.additionalProperties = function(c, s, n, _, base, nloc)
  if s.properties == nil and s.patternProperties == nil then
    K.properties(c, s, n, nloc .. "/properties", base, nloc)
  end
end

for _, name in ipairs { "$id", "$schema", "$comment", "title", "description",
                        "contentMediaType", "contentEncoding" } do
  K[name] = function(_, s, _, loc) need_string(s[name], loc) end
end
K.examples = function(_, s, _, loc) need_array(s.examples, loc) end
K.readOnly = function(_, s, _, loc)
  if type(s.readOnly) ~= "boolean" then bad(loc, "must be a boolean") end
end
K.writeOnly = function(_, s, _, loc)
  if type(s.writeOnly) ~= "boolean" then bad(loc, "must be a boolean") end
end

-- Keywords in a fixed order, so that errors come out in a stable order.
local ORDER = {
  "$id", "$schema", "$comment", "title", "description", "examples",
  "readOnly", "writeOnly", "contentMediaType", "contentEncoding", "definitions",
  "type", "enum", "const",
  "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
  "maxLength", "minLength", "pattern", "format",
  "items", "additionalItems", "contains", "maxItems", "minItems", "uniqueItems",
  "required", "properties", "patternProperties", "additionalProperties",
  "propertyNames", "dependencies", "maxProperties", "minProperties",
  "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
}

-- What a node checks, for the engines: which kinds of value it looks at.
local function summarise(n)
  n.has_str = n.str[1] or n.maxLength or n.minLength or n.pattern
  n.has_num = n.num[1] or n.maximum or n.minimum or n.exclusiveMaximum or n.exclusiveMinimum
  n.has_arr = n.arr[1] or n.items or n.maxItems or n.minItems
  n.has_obj = n.obj[1] or n.required or n.props or n.merged
  n.has_any = n.any[1]
  n.trivial = not (n.tmask or n.has_any or n.has_str or n.has_num or n.has_arr or n.has_obj)
end

-- Beside a $ref, ajv 6 (extendRefs "ignore", as Chrome DevTools for agents
-- has it) ignores every keyword but `type`, which it still checks, before
-- the $ref, when the type is an array of two or more names; or integer,
-- boolean or null, which have no rule group of their own (RULES.types in
-- lib/compile/rules.js); or a type none of whose group's keywords stand
-- beside it (lib/dotjs/validate.js: the group would have checked it).
-- Draft-07 says to ignore `type` there too; ajv 6 wins. No case of the
-- draft-07 test suite has a `type` beside a $ref: none changes.
local TYPE_GROUP = {
  number = { "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "multipleOf", "format" },
  string = { "maxLength", "minLength", "pattern", "format" },
  array = { "maxItems", "minItems", "items", "contains", "uniqueItems" },
  object = { "maxProperties", "minProperties", "required", "dependencies", "propertyNames",
             "properties", "additionalProperties", "patternProperties" },
}

local function ref_checks_type(s)
  local t = rawget(s, "type")
  if t == nil then return false end
  if is_arrayish(t) and #t == 1 then t = t[1] end       -- ["string"] is "string"
  local group = type(t) == "string" and TYPE_GROUP[t]
  if not group then return true end     -- (a malformed type: K.type refuses it)
  for _, k in ipairs(group) do
    if rawget(s, k) ~= nil then return false end
  end
  return true
end

function Compiler:build(n, s, base, loc)
  local ref = rawget(s, "$ref")
  if ref ~= nil then
    if type(ref) ~= "string" then bad(sub_loc(loc, "$ref"), "must be a string") end
    if not ref_checks_type(s) then     -- the others are ignored
      n.kind = "ref"
      n.target = self:ref(ref, base, loc)
      return
    end
    n.any, n.str, n.num, n.arr, n.obj = {}, {}, {}, {}, {}
    K.type(self, s, n, sub_loc(loc, "type"))
    push(n.any, { kw = "allOf", nodes = { self:ref(ref, base, loc) } })
    summarise(n)
    n.kind = "node"
    return
  end
  if rawget(s, "x-mcp-type") == "HTMLElement" then
    n.kind = "element"
    n.loc = sub_loc(loc, "x-mcp-type")
    return
  end
  n.any, n.str, n.num, n.arr, n.obj = {}, {}, {}, {}, {}
  for _, name in ipairs(ORDER) do
    if rawget(s, name) ~= nil then
      local kloc = sub_loc(loc, name)
      if SCHEMA_KW[name] == 1 then
        local v = s[name]
        if v ~= true and v ~= false and not is_object(v) then
          bad(kloc, "must be a schema (an object or a boolean)")
        end
      end
      K[name](self, s, n, kloc, base, loc)
    end
  end
  summarise(n)
  n.kind = "node"
end

-- Marks the nodes that two or more same-value applicators use (through
-- $ref aliases): their verdicts are memoised per value.
-- The child nodes a node applies (one entry per use).
local function edges(n)
  local out = {}
  local function add(c) if c then out[#out + 1] = resolved(c) end end
  add(n.items)
  if n.props then for _, c in ipairs(n.props.nodes) do add(c) end end
  if n.merged then
    for _, c in next, n.merged.map do add(c) end
    add(n.merged.addnode)
  end
  for _, list in ipairs { n.any, n.str, n.num, n.arr, n.obj } do
    for _, r in ipairs(list) do
      add(r.node); add(r.addnode); add(r.cond); add(r["then"]); add(r["else"])
      for _, c in ipairs(r.nodes or {}) do add(c) end
      for _, d in ipairs(r.list or {}) do add(d.node) end
    end
  end
  return out
end

local SHARED_PATHS = 16     -- more ways than this from the root to a node: memoised

-- Counts the ways from the root to each node (back edges of cycles left
-- out), in reverse post-order, which is topological: a node reached more
-- than SHARED_PATHS ways gets `shared`, and its verdict is memoised per
-- value, so that a schema (anyOf of the same $ref twice, level after
-- level) cannot make validation exponential. A $ref found cyclic makes its
-- target cyclic: the engines count nesting at the node that does the work.
-- The nodes reached from root, children before parents (a depth-first
-- post-order, without recursion; edges back to a node still on the way
-- are cycles, left out). The order compiling finished them in is not one:
-- a $ref's target compiled later (Compiler:target) finishes after its user.
local function post_order(root)
  local order, state = {}, {}
  root = resolved(root)
  if root.kind ~= "node" then return order end
  local stack, kids, at = { root }, { edges(root) }, { 1 }
  state[root] = 1
  while #stack > 0 do
    local top = #stack
    local i = at[top]
    local c = kids[top][i]
    if c then
      at[top] = i + 1
      if c.kind == "node" and not state[c] then
        state[c] = 1
        stack[top + 1], kids[top + 1], at[top + 1] = c, edges(c), 1
      end
    else
      state[stack[top]] = 2
      order[#order + 1] = stack[top]
      stack[top], kids[top], at[top] = nil, nil, nil
    end
  end
  return order
end

local function mark_shared(root, all)
  for _, n in ipairs(all) do
    if n.kind == "ref" and n.cyclic then resolved(n).cyclic = true end
  end
  local finished = post_order(root)
  local pos = {}
  for i, n in ipairs(finished) do pos[n] = i end
  local paths = { [resolved(root)] = 1 }
  for i = #finished, 1, -1 do
    local n = finished[i]
    local p = paths[n]
    if p and n.kind == "node" then
      if p > SHARED_PATHS then n.shared = true end
      for _, c in ipairs(edges(n)) do
        if c.kind == "node" and pos[c] and pos[c] < i then
          local q = (paths[c] or 0) + p
          paths[c] = q < 1e9 and q or 1e9
        end
      end
    end
  end
end

-- compile(schema, loader?, deadline?, rs?) -> root node, bounded (true when some
-- node is shared or cyclic: then the checks use the run state), arrays
-- (true when some node says type "array" and not "object": schema.shape
-- has work to do). rs: the run state whose deadline the patterns watch.
function M.compile(s, loader, deadline, rs)
  local c = new_compiler(loader, deadline, rs)
  c.main[""] = true
  c:add_document(s, "")
  c.main[inner_base(s, "")] = true
  local root = c:compile(s, "", "#")
  -- the $ref targets met deep in the recursion, each from the top
  local deferred = c.deferred
  while #deferred > 0 do
    local d = deferred[#deferred]
    deferred[#deferred] = nil
    c.level = 0
    c:fill(d.node, d.s, inner_base(d.s, d.outer), d.loc)
  end
  -- a circle of $refs alone that crossed a deferral: refused as one met at
  -- once is (Compiler:compile), before anything follows it
  local sure = {}
  for _, n in ipairs(c.nodes) do
    local seen, m = {}, n
    while m.kind == "ref" and not sure[m] do
      if seen[m] then bad(n.loc, "circular $ref that never reaches a value") end
      seen[m] = true
      m = m.target
    end
    for k in next, seen do sure[k] = true end
  end
  mark_shared(root, c.finished)
  context.check_deadline(deadline, context.COMPILE_LATE)
  local bounded, arrays = false, false
  for _, n in ipairs(c.nodes) do
    if n.shared or n.cyclic then bounded = true end
    local tm = n.tmask
    if tm and tm.array and not tm.object then arrays = true end
  end
  return root, bounded, arrays
end

return M
