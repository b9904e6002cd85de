-- devtools_tools.schema: JSON Schema draft-07 validation of tool arguments.
--
-- A tool's inputSchema is compiled once into a tree of closures, one per
-- keyword, and the validator runs on every call before anything is sent to
-- the page. The meaning follows ajv (what Chrome DevTools for agents uses),
-- including its error wording, with patterns as ECMA-262 regular expressions
-- (through PCRE2 in the C core) and formats from devtools_tools.formats.
--
-- It must never reach the network (remote $refs come only from the caller's
-- loader), never modify the schema or the value it is given, and never call
-- user code while validating. Validation that succeeds allocates nothing.
--
-- Values are what our JSON codec produces: dt.null, numbers (1 and 1.0 are
-- both integers in JSON terms), strings, booleans, arrays (tables carrying
-- dt.array_mt, or plain sequences) and objects (plain tables). An empty plain
-- table `{}` is both an empty array and an empty object: it matches type
-- "array" and "object", and both array and object keywords apply to it.

local core = require "devtools_tools.core"
local errors = require "devtools_tools.errors"
local formats = require "devtools_tools.formats"

local type, pairs, ipairs, next, rawget, getmetatable, setmetatable =
      type, pairs, ipairs, next, rawget, getmetatable, setmetatable
local tostring, tonumber = tostring, tonumber
local floor, huge = math.floor, math.huge
local concat, sort = table.concat, table.sort
local sfind, ssub, sformat, sgsub, smatch, schar =
      string.find, string.sub, string.format, string.gsub, string.match, string.char

local null, array_mt = core.null, core.array_mt
local regex_compile = core.regex_compile

local M = {}

local MAX_DEPTH = 2000   -- nested passes through one circular $ref

---------------------------------------------------------------- values

-- The one place that knows what an element reference is.
local ELEMENT_NAME = "devtools_tools.Element"
local function is_element(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__name") == ELEMENT_NAME
end

-- "array", "object", "empty" (a plain {}: both) or "element". A metatable
-- with __jsontype = "array" or "object" (dkjson's convention, which
-- dt.array_mt follows) says which one a table is.
local function table_kind(v)
  local mt = getmetatable(v)
  if mt ~= nil then
    if mt == array_mt then return "array" end
    if type(mt) == "table" then
      if rawget(mt, "__name") == ELEMENT_NAME then return "element" end
      local jt = rawget(mt, "__jsontype")
      if jt == "object" or jt == "array" then return jt end
    end
  end
  if next(v) == nil then return "empty" end
  if rawget(v, 1) ~= nil then return "array" end
  return "object"
end

-- For equality a plain {} is an object, as the codec sends it.
local function eq_is_array(t)
  local mt = getmetatable(t)
  if mt == array_mt then return true end
  if type(mt) == "table" then
    local jt = rawget(mt, "__jsontype")
    if jt then return jt == "array" end
  end
  return rawget(t, 1) ~= nil
end

local function deep_equal(a, b)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  local arr = eq_is_array(a)
  if arr ~= eq_is_array(b) then return false end
  if arr then
    local n = #a
    if n ~= #b then return false end
    for i = 1, n do
      if not deep_equal(a[i], b[i]) then return false end
    end
    return true
  end
  local n = 0
  for k, va in pairs(a) do
    local vb = b[k]
    if vb == nil or not deep_equal(va, vb) then return false end
    n = n + 1
  end
  for _ in pairs(b) do n = n - 1 end
  return n == 0
end

-- Code points in a UTF-8 string (a stray byte counts as one).
local function ulen(s)
  local n = #s
  if not sfind(s, "[\128-\255]") then return n end
  local _, cont = sgsub(s, "[\128-\191]", "")
  return n - cont
end

local function num_str(x)
  if x % 1 == 0 and x > -1e15 and x < 1e15 then return sformat("%d", x) end
  if x ~= x or x == huge or x == -huge then return tostring(x) end
  local s
  for p = 15, 17 do
    s = sformat("%." .. p .. "g", x)
    if tonumber(s) == x then break end
  end
  return s
end

-- x > 0 as digits * 10^exp with at most 14 digits (exact in a double too).
local function decimal(x)
  local s = num_str(x)
  local int, frac, ex = smatch(s, "^(%d+)%.?(%d*)[eE]?([-+]?%d*)$")
  if not int then return nil end
  local digits = sgsub(int .. frac, "^0+", "")
  local e10 = (tonumber(ex) or 0) - #frac
  if digits == "" then return 0, 0 end
  local tz = #smatch(digits, "0*$")
  if tz > 0 then
    digits = ssub(digits, 1, #digits - tz)
    e10 = e10 + tz
  end
  if #digits > 14 then return nil end
  return tonumber(digits), e10
end

-- Is x a multiple of m (> 0)? Exact for decimals as written (0.3 is a
-- multiple of 0.1); falls back to division for numbers with many digits.
local function multiple_of(x, m)
  if x < 0 then x = -x end
  if x == 0 then return true end
  if x % 1 == 0 and m % 1 == 0 and x < 2 ^ 53 then return x % m == 0 end
  if x ~= x or x == huge then return false end
  local a, p = decimal(x)
  local b, q = decimal(m)
  if a and b then
    if p >= q then
      local r = a % b
      for _ = 1, p - q do
        if r == 0 then break end
        r = (r * 10) % b
      end
      return r == 0
    end
    local bb = b
    for _ = 1, q - p do
      bb = bb * 10
      if bb > a then return false end
    end
    return a % bb == 0
  end
  local ratio = x / m
  return ratio == floor(ratio) and ratio ~= huge
end

----------------------------------------------------- paths and errors

-- The path of the value being checked, kept only while collecting errors:
-- keys (strings) and 0-based indexes (numbers) on a stack.
local P, D = {}, 0
local depth = 0

local function escape_token(k)
  if type(k) ~= "string" then return tostring(k) end
  if sfind(k, "[~/]") then k = sgsub(sgsub(k, "~", "~0"), "/", "~1") end
  return k
end

local function current_path()
  if D == 0 then return "" end
  local parts = {}
  for i = 1, D do parts[i] = escape_token(P[i]) end
  return "/" .. concat(parts, "/")
end

local function add(e, keyword, message, spath, property)
  e[#e + 1] = { path = current_path(), keyword = keyword, message = message,
                schema_path = spath, property = property }
end

local function key_string(k)
  if type(k) == "string" then return k end
  if type(k) == "number" then return num_str(k) end
  return tostring(k)
end

---------------------------------------------------------------- URIs

local function split_uri(u)
  local scheme, rest = smatch(u, "^(%a[%w%+%-%.]*):(.*)$")
  if not scheme then rest = u end
  local frag, query, auth
  local h = sfind(rest, "#", 1, true)
  if h then frag = ssub(rest, h + 1); rest = ssub(rest, 1, h - 1) end
  local q = sfind(rest, "?", 1, true)
  if q then query = ssub(rest, q + 1); rest = ssub(rest, 1, q - 1) end
  if ssub(rest, 1, 2) == "//" then
    local s = sfind(rest, "/", 3, true)
    auth = ssub(rest, 3, s and s - 1 or -1)
    rest = s and ssub(rest, s) or ""
  end
  return scheme, auth, rest, query, frag
end

-- RFC 3986 section 5.2.4
local function remove_dots(input)
  local out = {}
  while input ~= "" do
    if ssub(input, 1, 3) == "../" then input = ssub(input, 4)
    elseif ssub(input, 1, 2) == "./" then input = ssub(input, 3)
    elseif ssub(input, 1, 3) == "/./" then input = ssub(input, 3)
    elseif input == "/." then input = "/"
    elseif ssub(input, 1, 4) == "/../" then input = ssub(input, 4); out[#out] = nil
    elseif input == "/.." then input = "/"; out[#out] = nil
    elseif input == "." or input == ".." then input = ""
    else
      local s = sfind(input, "/", 2, true)
      out[#out + 1] = s and ssub(input, 1, s - 1) or input
      input = s and ssub(input, s) or ""
    end
  end
  return concat(out)
end

-- RFC 3986 section 5.2.2: ref resolved against base.
local function resolve(base, ref)
  local rs, ra, rp, rq, rf = split_uri(ref)
  local ts, ta, tp, tq
  if rs then
    ts, ta, tp, tq = rs, ra, remove_dots(rp), rq
  else
    local bs, ba, bp, bq = split_uri(base)
    ts = bs
    if ra then
      ta, tp, tq = ra, remove_dots(rp), rq
    else
      ta = ba
      if rp == "" then
        tp, tq = bp, rq or bq
      else
        if ssub(rp, 1, 1) == "/" then
          tp = remove_dots(rp)
        elseif ba and bp == "" then
          tp = remove_dots("/" .. rp)
        else
          tp = remove_dots((smatch(bp, "^(.*/)") or "") .. rp)
        end
        tq = rq
      end
    end
  end
  local out = {}
  if ts then out[#out + 1] = ts .. ":" end
  if ta then out[#out + 1] = "//" .. ta end
  out[#out + 1] = tp
  if tq then out[#out + 1] = "?" .. tq end
  if rf then out[#out + 1] = "#" .. rf end
  return concat(out)
end

local function split_fragment(u)
  local h = sfind(u, "#", 1, true)
  if h then return ssub(u, 1, h - 1), ssub(u, h + 1) end
  return u, nil
end

local function pct_decode(s)
  return (sgsub(s, "%%(%x%x)", function(h) return schar(tonumber(h, 16)) end))
end

-- The base URI inside a schema node, given the one around it. In draft-07
-- a $ref makes every sibling keyword, $id included, ignored.
local function inner_base(node, outer)
  if type(node) == "table" then
    local id = rawget(node, "$id")
    if type(id) == "string" and rawget(node, "$ref") == nil then
      return (split_fragment(resolve(outer, id)))
    end
  end
  return outer
end

---------------------------------------------------------- schema shape

local function bad(loc, msg)
  errors.raise("bad_argument", "invalid schema at " .. loc .. ": " .. msg)
end

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

--------------------------------------------------------- the draft-07 meta

local function A(t) return setmetatable(t, array_mt) end

local function draft07()
  local ref = function(p) return { ["$ref"] = p } end
  local nni = ref "#/definitions/nonNegativeInteger"
  local nni0 = ref "#/definitions/nonNegativeIntegerDefault0"
  return {
    ["$schema"] = "http://json-schema.org/draft-07/schema#",
    ["$id"] = "http://json-schema.org/draft-07/schema#",
    title = "Core schema meta-schema",
    definitions = {
      schemaArray = { type = "array", minItems = 1, items = ref "#" },
      nonNegativeInteger = { type = "integer", minimum = 0 },
      nonNegativeIntegerDefault0 = { allOf = A { nni, { default = 0 } } },
      simpleTypes = { enum = A { "array", "boolean", "integer", "null",
                                 "number", "object", "string" } },
      stringArray = { type = "array", items = { type = "string" },
                      uniqueItems = true, default = A {} },
    },
    type = A { "object", "boolean" },
    properties = {
      ["$id"] = { type = "string", format = "uri-reference" },
      ["$schema"] = { type = "string", format = "uri" },
      ["$ref"] = { type = "string", format = "uri-reference" },
      ["$comment"] = { type = "string" },
      title = { type = "string" },
      description = { type = "string" },
      default = true,
      readOnly = { type = "boolean", default = false },
      writeOnly = { type = "boolean", default = false },
      examples = { type = "array", items = true },
      multipleOf = { type = "number", exclusiveMinimum = 0 },
      maximum = { type = "number" },
      exclusiveMaximum = { type = "number" },
      minimum = { type = "number" },
      exclusiveMinimum = { type = "number" },
      maxLength = nni,
      minLength = nni0,
      pattern = { type = "string", format = "regex" },
      additionalItems = ref "#",
      items = { anyOf = A { ref "#", ref "#/definitions/schemaArray" }, default = true },
      maxItems = nni,
      minItems = nni0,
      uniqueItems = { type = "boolean", default = false },
      contains = ref "#",
      maxProperties = nni,
      minProperties = nni0,
      required = ref "#/definitions/stringArray",
      additionalProperties = ref "#",
      definitions = { type = "object", additionalProperties = ref "#", default = {} },
      properties = { type = "object", additionalProperties = ref "#", default = {} },
      patternProperties = { type = "object", additionalProperties = ref "#",
                            propertyNames = { format = "regex" }, default = {} },
      dependencies = { type = "object", additionalProperties = {
        anyOf = A { ref "#", ref "#/definitions/stringArray" } } },
      propertyNames = ref "#",
      const = true,
      enum = { type = "array", items = true },
      type = { anyOf = A {
        ref "#/definitions/simpleTypes",
        { type = "array", items = ref "#/definitions/simpleTypes",
          minItems = 1, uniqueItems = true },
      } },
      format = { type = "string" },
      contentMediaType = { type = "string" },
      contentEncoding = { type = "string" },
      ["if"] = ref "#",
      ["then"] = ref "#",
      ["else"] = ref "#",
      allOf = ref "#/definitions/schemaArray",
      anyOf = ref "#/definitions/schemaArray",
      oneOf = ref "#/definitions/schemaArray",
      ["not"] = ref "#",
    },
    default = true,
  }
end

local builtin = {
  ["http://json-schema.org/draft-07/schema"] = draft07,
}

------------------------------------------------------------ small closures

local function TRUE() return true end

local function false_schema(loc)
  return function(_, e)
    if e then add(e, "false schema", "boolean schema is false", loc) end
    return false
  end
end

local function element_check(loc)
  local msg = "must be an element reference (an Element a tool returned)"
  return function(v, e)
    if type(v) == "table" and is_element(v) then return true end
    if e then add(e, "x-mcp-type", msg, loc) end
    return false
  end
end

-- One check for a list of checks on the same value.
local function all_of(list)
  local n = #list
  if n == 0 then return nil end
  if n == 1 then return list[1] end
  if n == 2 then
    local a, b = list[1], list[2]
    return function(v, e)
      if e then
        local ra = a(v, e)
        return b(v, e) and ra
      end
      return a(v) and b(v)
    end
  end
  return function(v, e)
    if e then
      local ok = true
      for i = 1, n do
        if not list[i](v, e) then ok = false end
      end
      return ok
    end
    for i = 1, n do
      if not list[i](v) then return false end
    end
    return true
  end
end

-- Calls fn on the value under key (string) or index (0-based number),
-- with the path kept while collecting errors.
local function at(fn, key, v, e)
  D = D + 1
  P[D] = key
  local ok = fn(v, e)
  D = D - 1
  return ok
end

-------------------------------------------------------------- compiler

local Compiler = {}
Compiler.__index = Compiler

local function new_compiler(loader)
  return setmetatable({
    loader = loader,
    resources = {},     -- document URI -> { node, outer base }
    anchors = {},       -- URI#name -> { node, outer base }
    scanned = {},
    compiled = {},      -- node -> inner base -> check
    pending = {},       -- node -> inner base -> cell, while compiling it
    level = 0,          -- data-consuming steps on the current compile path
    regexes = {},
  }, Compiler)
end

-- Registers the $ids (base URIs and plain-name anchors) of a document.
function Compiler:scan(node, outer)
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
        self:scan(sub, inner)
      elseif kind == 2 or (k == "items" and is_arrayish(sub) and next(sub) ~= nil) then
        for _, s in ipairs(sub) do self:scan(s, inner) end
      elseif kind == 3 or k == "dependencies" then
        for _, s in pairs(sub) do
          if not is_arrayish(s) then self:scan(s, inner) end
        end
      elseif k == "items" then
        self:scan(sub, inner)
      end
    end
  end
end

function Compiler:add_document(s, uri)
  if type(s) ~= "table" and type(s) ~= "boolean" then
    bad(uri, "a schema must be an object or a boolean")
  end
  if not self.resources[uri] then
    self.resources[uri] = { node = s, outer = uri }
  end
  self:scan(s, uri)
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
  if s == nil and builtin[doc] then s = builtin[doc]() end
  if s == nil then
    bad(loc, "cannot resolve $ref \"" .. ref .. "\": no schema for \"" .. doc ..
        "\" (remote schemas come only from opts.loader)")
  end
  self:add_document(s, doc)
  return self.resources[doc]
end

-- Follows a JSON pointer; returns the node and the base URI around it.
local function walk(root, outer, ptr)
  local node, base = root, outer
  if ptr == "" then return node, base end
  local i = 2
  while true do
    local j = sfind(ptr, "/", i, true)
    local tok = ssub(ptr, i, j and j - 1 or -1)
    tok = sgsub(sgsub(tok, "~1", "/"), "~0", "~")
    if type(node) ~= "table" then return nil end
    base = inner_base(node, base)
    local child
    if is_arrayish(node) and smatch(tok, "^%d+$") then
      child = node[tonumber(tok) + 1]
    else
      child = node[tok]
    end
    if child == nil then return nil end
    node = child
    if not j then break end
    i = j + 1
  end
  return node, base
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
    local ptr = pct_decode(frag)
    local target, outer = walk(res.node, res.outer, ptr)
    if target == nil then bad(loc, "$ref \"" .. ref .. "\" points at nothing") end
    return self:compile(target, outer, self:location(doc, ptr))
  end
  local a = self.anchors[doc .. "#" .. frag]
  if not a then
    self:resource(doc, loc, ref)
    a = self.anchors[doc .. "#" .. frag]
  end
  if not a then bad(loc, "$ref \"" .. ref .. "\" points at nothing") end
  return self:compile(a.node, a.outer, self:location(doc, frag))
end

-- A schema applied to another value (an item, a property): the step
-- consumes data, so a cycle through it is not an infinite loop.
function Compiler:deeper(s, base, loc)
  self.level = self.level + 1
  local f = self:compile(s, base, loc)
  self.level = self.level - 1
  return f
end

-- Compiles a schema found at loc, with `outer` the base URI around it.
function Compiler:compile(s, outer, loc)
  if s == true then return TRUE end
  if s == false then return false_schema(loc) end
  if not is_object(s) then bad(loc, "a schema must be an object or a boolean") end
  local base = inner_base(s, outer)
  local done = self.compiled[s]
  if done and done[base] then return done[base] end
  local pend = self.pending[s]
  if pend and pend[base] then
    local cell = pend[base]
    if cell.level == self.level then
      bad(loc, "circular $ref that never reaches a value")
    end
    return function(v, e)               -- recursion: through a cell
      depth = depth + 1
      if depth > MAX_DEPTH then
        depth = 0
        errors.raise("bad_argument", "schema recursion deeper than " .. MAX_DEPTH ..
                     " levels at " .. loc .. " (is the value nested that deep, or cyclic?)")
      end
      local ok = cell.fn(v, e)
      depth = depth - 1
      return ok
    end
  end
  if not pend then pend = {}; self.pending[s] = pend end
  local cell = { level = self.level }
  pend[base] = cell
  local f = self:build(s, base, loc)
  pend[base] = nil
  cell.fn = f
  if not done then done = {}; self.compiled[s] = done end
  done[base] = f
  return f
end

function Compiler:regex(p, loc)
  local r = self.regexes[p]
  if r then return r end
  local msg
  r, msg = regex_compile(p)
  if not r then bad(loc, msg) end
  self.regexes[p] = r
  return r
end

-------------------------------------------------------- keyword builders

-- Each builder reads its keyword from the node `s` and appends checks to
-- the lists for any value (g.any), strings, numbers, arrays and objects.

local K = {}

function K.type(_, s, g, loc)
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
  for i, name in ipairs(names) do
    if not TYPES[name] then bad(loc, "unknown type \"" .. tostring(name) .. "\"") end
    if mask[name] then bad(loc, "must not have duplicate items") end
    mask[name] = true
    names[i] = name
  end
  mask.empty = mask.array or mask.object
  g.tmask = mask
  g.tmsg = "must be " .. concat(names, ",")
  g.tloc = loc
end

function K.enum(_, s, g, loc)
  local vals = need_array(s.enum, loc)
  local set, tables, nt = {}, {}, 0
  for i = 1, #vals do
    local x = vals[i]
    if type(x) == "table" then
      nt = nt + 1
      tables[nt] = x
    elseif x == x then
      set[x] = true
    end
  end
  local msg = "must be equal to one of the allowed values"
  g.any[#g.any + 1] = function(v, e)
    if set[v] then return true end
    if nt > 0 and type(v) == "table" then
      for i = 1, nt do
        if deep_equal(v, tables[i]) then return true end
      end
    end
    if e then add(e, "enum", msg, loc) end
    return false
  end
end

function K.const(_, s, g, loc)
  local k = s.const
  local msg = "must be equal to constant"
  if type(k) == "table" then
    g.any[#g.any + 1] = function(v, e)
      if deep_equal(v, k) then return true end
      if e then add(e, "const", msg, loc) end
      return false
    end
  else
    g.any[#g.any + 1] = function(v, e)
      if v == k then return true end
      if e then add(e, "const", msg, loc) end
      return false
    end
  end
end

local function bound(name, op, cmp)
  K[name] = function(_, s, g, loc)
    local b = need_number(s[name], loc)
    local msg = "must be " .. op .. " " .. num_str(b)
    g.num[#g.num + 1] = function(v, e)
      if cmp(v, b) then return true end
      if e then add(e, name, msg, loc) end
      return false
    end
  end
end
bound("maximum", "<=", function(v, b) return v <= b end)
bound("minimum", ">=", function(v, b) return v >= b end)
bound("exclusiveMaximum", "<", function(v, b) return v < b end)
bound("exclusiveMinimum", ">", function(v, b) return v > b end)

function K.multipleOf(_, s, g, loc)
  local m = need_number(s.multipleOf, loc)
  if m <= 0 then bad(loc, "must be greater than 0") end
  local msg = "must be multiple of " .. num_str(m)
  if m % 1 == 0 then
    g.num[#g.num + 1] = function(v, e)
      if (v % 1 == 0 and v % m == 0) or multiple_of(v, m) then return true end
      if e then add(e, "multipleOf", msg, loc) end
      return false
    end
  else
    g.num[#g.num + 1] = function(v, e)
      if multiple_of(v, m) then return true end
      if e then add(e, "multipleOf", msg, loc) end
      return false
    end
  end
end

function K.maxLength(_, s, g, loc)
  local max = need_count(s.maxLength, loc)
  local msg = "must NOT have more than " .. num_str(max) .. " characters"
  g.str[#g.str + 1] = function(v, e)
    if #v <= max or ulen(v) <= max then return true end
    if e then add(e, "maxLength", msg, loc) end
    return false
  end
end

function K.minLength(_, s, g, loc)
  local min = need_count(s.minLength, loc)
  local msg = "must NOT have fewer than " .. num_str(min) .. " characters"
  g.str[#g.str + 1] = function(v, e)
    local n = #v
    if n >= min and (n >= 4 * min or ulen(v) >= min) then return true end
    if e then add(e, "minLength", msg, loc) end
    return false
  end
end

function K.pattern(c, s, g, loc)
  local p = need_string(s.pattern, loc)
  local r = c:regex(p, loc)
  local test = r.test
  local msg = 'must match pattern "' .. p .. '"'
  g.str[#g.str + 1] = function(v, e)
    if test(r, v) then return true end
    if e then add(e, "pattern", msg, loc) end
    return false
  end
end

function K.format(_, s, g, loc)
  local name = need_string(s.format, loc)
  local msg = 'must match format "' .. name .. '"'
  local f, list = formats.string[name], g.str
  if f == nil then f, list = formats.number[name], g.num end
  if type(f) ~= "function" then return end      -- unknown: ignored, as ajv
  list[#list + 1] = function(v, e)
    if f(v) then return true end
    if e then add(e, "format", msg, loc) end
    return false
  end
end

function K.items(c, s, g, loc, base, nloc)
  local items = s.items
  local arr = g.arr
  if is_arrayish(items) and next(items) ~= nil or getmetatable(items) == array_mt then
    local fns, n = {}, #items
    for i = 1, n do fns[i] = c:deeper(items[i], base, loc .. "/" .. (i - 1)) end
    local addl = s.additionalItems
    local addf, addmsg
    if addl == false then
      addmsg = "must NOT have more than " .. n .. " items"
    elseif addl ~= nil and addl ~= true then
      addf = c:deeper(addl, base, nloc .. "/additionalItems")
    end
    local aloc = nloc .. "/additionalItems"
    arr[#arr + 1] = function(v, e)
      local len, ok = #v, true
      local m = len < n and len or n
      for i = 1, m do
        if e then
          if not at(fns[i], i - 1, v[i], e) then ok = false end
        elseif not fns[i](v[i]) then
          return false
        end
      end
      if len > n then
        if addmsg then
          if e then add(e, "additionalItems", addmsg, aloc) end
          return false
        elseif addf then
          for i = n + 1, len do
            if e then
              if not at(addf, i - 1, v[i], e) then ok = false end
            elseif not addf(v[i]) then
              return false
            end
          end
        end
      end
      return ok
    end
    return
  end
  local f = c:deeper(items, base, loc)
  if f == TRUE then return end
  arr[#arr + 1] = function(v, e)
    local ok = true
    for i = 1, #v do
      if e then
        if not at(f, i - 1, v[i], e) then ok = false end
      elseif not f(v[i]) then
        return false
      end
    end
    return ok
  end
end

function K.additionalItems(c, s, _, loc, base)
  -- applied by K.items when items is an array; otherwise ignored, but a
  -- malformed value is still an error
  if s.items == nil or not is_arrayish(s.items) then
    c:deeper(s.additionalItems, base, loc)
  end
end

function K.contains(c, s, g, loc, base)
  local f = c:deeper(s.contains, base, loc)
  local msg = "must contain at least 1 valid item(s)"
  g.arr[#g.arr + 1] = function(v, e)
    for i = 1, #v do
      if f(v[i]) then return true end
    end
    if e then add(e, "contains", msg, loc) end
    return false
  end
end

local function count_limit(name, what, cmp, kind, count)
  K[name] = function(_, s, g, loc)
    local lim = need_count(s[name], loc)
    local msg = "must NOT have " .. cmp .. " than " .. num_str(lim) .. " " .. what
    local more = cmp == "more"
    g[kind][#g[kind] + 1] = function(v, e)
      local n = count(v)
      if more then
        if n <= lim then return true end
      elseif n >= lim then
        return true
      end
      if e then add(e, name, msg, loc) end
      return false
    end
  end
end

local function len(v) return #v end
local function nkeys(v)
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  return n
end
count_limit("maxItems", "items", "more", "arr", len)
count_limit("minItems", "items", "fewer", "arr", len)
count_limit("maxProperties", "properties", "more", "obj", nkeys)
count_limit("minProperties", "properties", "fewer", "obj", nkeys)

function K.uniqueItems(_, s, g, loc)
  local u = s.uniqueItems
  if type(u) ~= "boolean" then bad(loc, "must be a boolean") end
  if not u then return end
  g.arr[#g.arr + 1] = function(v, e)
    local n = #v
    if n < 2 then return true end
    if n <= 32 then                   -- small: pairwise, nothing allocated
      for i = 2, n do
        local x = v[i]
        for j = 1, i - 1 do
          if deep_equal(x, v[j]) then
            if e then
              add(e, "uniqueItems", "must NOT have duplicate items (items ## " ..
                  (i - 1) .. " and " .. (j - 1) .. " are identical)", loc)
            end
            return false
          end
        end
      end
      return true
    end
    local seen, tables = {}, {}
    for i = 1, n do
      local x = v[i]
      local j
      if type(x) == "table" then
        for t = 1, #tables do
          if deep_equal(x, v[tables[t]]) then j = tables[t]; break end
        end
        tables[#tables + 1] = i
      else
        j = seen[x]
        seen[x] = seen[x] or i
      end
      if j then
        if e then
          add(e, "uniqueItems", "must NOT have duplicate items (items ## " ..
              (i - 1) .. " and " .. (j - 1) .. " are identical)", loc)
        end
        return false
      end
    end
    return true
  end
end

function K.required(_, s, g, loc)
  local req = unique_strings(s.required, loc)
  local n = #req
  if n == 0 then return end
  local names, msgs = {}, {}
  for i = 1, n do
    names[i] = req[i]
    msgs[i] = "must have required property '" .. req[i] .. "'"
  end
  g.obj[#g.obj + 1] = function(v, e)
    local ok = true
    for i = 1, n do
      if v[names[i]] == nil then
        if not e then return false end
        add(e, "required", msgs[i], loc, names[i])
        ok = false
      end
    end
    return ok
  end
end

-- properties, patternProperties and additionalProperties work together.
function K.properties(c, s, g, loc, base, nloc)
  local props = s.properties
  local pats = s.patternProperties
  local addl = s.additionalProperties
  local keys, fns, set, n = {}, {}, {}, 0
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
        n = n + 1
        fns[n] = f
        keys[n] = k
      end
    end
    for i = n + 1, #keys do keys[i] = nil end
  end
  local rxs, tests, pfns, np = {}, {}, {}, 0
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
      np = np + 1
      rxs[np] = c:regex(p, sub_loc(patloc, p))
      tests[np] = rxs[np].test
      pfns[np] = c:deeper(pats[p], base, sub_loc(patloc, p))
    end
  end
  local aloc = nloc .. "/additionalProperties"
  local addf, addno
  if addl == false then
    addno = true
  elseif addl ~= nil and addl ~= true then
    addf = c:deeper(addl, base, aloc)
    if addf == TRUE then addf = nil end
  end
  if n > 0 then
    g.obj[#g.obj + 1] = function(v, e)
      local ok = true
      for i = 1, n do
        local pv = v[keys[i]]
        if pv ~= nil then
          if e then
            if not at(fns[i], keys[i], pv, e) then ok = false end
          elseif not fns[i](pv) then
            return false
          end
        end
      end
      return ok
    end
  end
  if np == 0 and not addno and not addf then return end
  local addmsg = "must NOT have additional properties"
  g.obj[#g.obj + 1] = function(v, e)
    local ok = true
    for k, pv in pairs(v) do
      if type(k) ~= "string" then k = key_string(k) end
      local matched = set[k]
      for j = 1, np do
        if tests[j](rxs[j], k) then
          matched = true
          if e then
            if not at(pfns[j], k, pv, e) then ok = false end
          elseif not pfns[j](pv) then
            return false
          end
        end
      end
      if not matched then
        if addno then
          if not e then return false end
          add(e, "additionalProperties", addmsg, aloc, k)
          ok = false
        elseif addf then
          if e then
            if not at(addf, k, pv, e) then ok = false end
          elseif not addf(pv) then
            return false
          end
        end
      end
    end
    return ok
  end
end

function K.propertyNames(c, s, g, loc, base)
  local f = c:deeper(s.propertyNames, base, loc)
  if f == TRUE then return end
  g.obj[#g.obj + 1] = function(v, e)
    local ok = true
    for k in pairs(v) do
      if type(k) ~= "string" then k = key_string(k) end
      if not f(k) then
        if not e then return false end
        ok = false
        local sub, msgs = {}, {}
        f(k, sub)
        for i = 1, #sub do msgs[i] = sub[i].message end
        add(e, "propertyNames", "property name '" .. k .. "' is invalid: " ..
            concat(msgs, "; "), loc, k)
      end
    end
    return ok
  end
end

function K.dependencies(c, s, g, loc, base)
  local deps = need_object(s.dependencies, loc)
  local keys = {}
  for k in pairs(deps) do
    if type(k) ~= "string" then bad(loc, "property names must be strings") end
    keys[#keys + 1] = k
  end
  sort(keys)
  local checks = {}
  for _, k in ipairs(keys) do
    local d, dloc = deps[k], sub_loc(loc, k)
    if is_arrayish(d) and (getmetatable(d) == array_mt or next(d) ~= nil) then
      unique_strings(d, dloc)
      local names, msgs = {}, {}
      for i = 1, #d do
        names[i] = d[i]
        msgs[i] = "must have property '" .. d[i] .. "' when property '" .. k .. "' is present"
      end
      if #names > 0 then
        checks[#checks + 1] = function(v, e)
          if v[k] == nil then return true end
          local ok = true
          for i = 1, #names do
            if v[names[i]] == nil then
              if not e then return false end
              add(e, "dependencies", msgs[i], dloc, names[i])
              ok = false
            end
          end
          return ok
        end
      end
    else
      local f = c:compile(d, base, dloc)
      if f ~= TRUE then
        checks[#checks + 1] = function(v, e)
          if v[k] == nil then return true end
          return f(v, e)
        end
      end
    end
  end
  local f = all_of(checks)
  if f then g.obj[#g.obj + 1] = f end
end

local function schema_list(c, s, name, loc, base)
  local list = need_array(s[name], loc)
  if #list == 0 then bad(loc, "must not be empty") end
  local fns = {}
  for i = 1, #list do fns[i] = c:compile(list[i], base, loc .. "/" .. (i - 1)) end
  return fns
end

function K.allOf(c, s, g, loc, base)
  local fns = schema_list(c, s, "allOf", loc, base)
  local f = all_of(fns)
  g.any[#g.any + 1] = f
end

function K.anyOf(c, s, g, loc, base)
  local fns = schema_list(c, s, "anyOf", loc, base)
  local n = #fns
  local msg = "must match a schema in anyOf"
  g.any[#g.any + 1] = function(v, e)
    for i = 1, n do
      if fns[i](v) then return true end
    end
    if e then
      for i = 1, n do fns[i](v, e) end
      add(e, "anyOf", msg, loc)
    end
    return false
  end
end

function K.oneOf(c, s, g, loc, base)
  local fns = schema_list(c, s, "oneOf", loc, base)
  local n = #fns
  local msg = "must match exactly one schema in oneOf"
  g.any[#g.any + 1] = function(v, e)
    local count = 0
    for i = 1, n do
      if fns[i](v) then
        count = count + 1
        if count > 1 then break end
      end
    end
    if count == 1 then return true end
    if e then
      if count == 0 then
        for i = 1, n do fns[i](v, e) end
      end
      add(e, "oneOf", msg, loc)
    end
    return false
  end
end

K["not"] = function(c, s, g, loc, base)
  local f = c:compile(s["not"], base, loc)
  local msg = "must NOT be valid"
  g.any[#g.any + 1] = function(v, e)
    if not f(v) then return true end
    if e then add(e, "not", msg, loc) end
    return false
  end
end

K["if"] = function(c, s, g, loc, base, ploc)
  local iff = c:compile(s["if"], base, loc)
  local thenf = s["then"] ~= nil and c:compile(s["then"], base, ploc .. "/then") or nil
  local elsef = s["else"] ~= nil and c:compile(s["else"], base, ploc .. "/else") or nil
  if thenf == TRUE then thenf = nil end
  if elsef == TRUE then elsef = nil end
  if not thenf and not elsef then return end
  g.any[#g.any + 1] = function(v, e)
    local f, which = elsef, "else"
    if iff(v) then f, which = thenf, "then" end
    if not f or f(v) then return true end
    if e then
      f(v, e)
      add(e, "if", 'must match "' .. which .. '" schema', ploc .. "/" .. which)
    end
    return false
  end
end

-- then/else alone do nothing, but must still be schemas.
K["then"] = function(c, s, _, loc, base)
  if s["if"] == nil then c:compile(s["then"], base, loc) end
end
K["else"] = function(c, s, _, loc, base)
  if s["if"] == nil then c:compile(s["else"], base, loc) end
end

function K.definitions(c, s, _, loc, base)
  local defs = need_object(s.definitions, loc)
  for k, d in pairs(defs) do
    if type(k) ~= "string" then bad(loc, "names must be strings") end
    c:deeper(d, base, sub_loc(loc, k))  -- checks it; $refs find it compiled
  end
end

K.patternProperties = function(c, s, g, _, base, nloc)
  if s.properties == nil then K.properties(c, s, g, nloc .. "/properties", base, nloc) end
end
K.additionalProperties = function(c, s, g, _, base, nloc)
  if s.properties == nil and s.patternProperties == nil then
    K.properties(c, s, g, nloc .. "/properties", base, nloc)
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

-------------------------------------------------------- the node check

local function node_check(g)
  local tmask, tmsg, tloc = g.tmask, g.tmsg, g.tloc
  local anyf, strf, numf = all_of(g.any), all_of(g.str), all_of(g.num)
  local arrf, objf = all_of(g.arr), all_of(g.obj)
  if not tmask and not anyf and not strf and not numf and not arrf and not objf then
    return TRUE
  end
  return function(v, e)
    local tv = type(v)
    local ok = true
    if tv == "table" then
      local k = table_kind(v)
      if tmask and not tmask[k] then
        if not e then return false end
        add(e, "type", tmsg, tloc)
        ok = false
      end
      if k == "object" then
        if objf and not objf(v, e) then
          if not e then return false end
          ok = false
        end
      elseif k == "array" then
        if arrf and not arrf(v, e) then
          if not e then return false end
          ok = false
        end
      elseif k == "empty" then
        if objf and not objf(v, e) then
          if not e then return false end
          ok = false
        end
        if arrf and not arrf(v, e) then
          if not e then return false end
          ok = false
        end
      end
    elseif tv == "string" then
      if tmask and not tmask.string then
        if not e then return false end
        add(e, "type", tmsg, tloc)
        ok = false
      end
      if strf and not strf(v, e) then
        if not e then return false end
        ok = false
      end
    elseif tv == "number" then
      if tmask and not tmask.number and not (tmask.integer and v % 1 == 0) then
        if not e then return false end
        add(e, "type", tmsg, tloc)
        ok = false
      end
      if numf and not numf(v, e) then
        if not e then return false end
        ok = false
      end
    elseif tmask then
      local name = tv == "boolean" and "boolean" or (v == null and "null") or nil
      if not (name and tmask[name]) then
        if not e then return false end
        add(e, "type", tmsg, tloc)
        ok = false
      end
    end
    if anyf and not anyf(v, e) then
      if not e then return false end
      ok = false
    end
    return ok
  end
end

function Compiler:build(s, base, loc)
  local ref = rawget(s, "$ref")
  if ref ~= nil then                    -- draft-07: siblings are ignored
    if type(ref) ~= "string" then bad(sub_loc(loc, "$ref"), "must be a string") end
    return self:ref(ref, base, loc)
  end
  if rawget(s, "x-mcp-type") == "HTMLElement" then
    return element_check(sub_loc(loc, "x-mcp-type"))
  end
  local g = { any = {}, str = {}, num = {}, arr = {}, obj = {} }
  for _, name in ipairs(ORDER) do
    if rawget(s, name) ~= nil then
      local kloc = sub_loc(loc, name)
      if SCHEMA_KW[name] == 1 then
        local v = s[name]
        if v ~= true and v ~= false and not is_object(v) then
          bad(kloc, "must be a schema (an object or a boolean)")
        end
      end
      K[name](self, s, g, kloc, base, loc)
    end
  end
  return node_check(g)
end

------------------------------------------------------------------- API

local function validator(check)
  return function(value)
    D, depth = 0, 0
    if check(value) then return true end
    D, depth = 0, 0
    local errs = {}
    check(value, errs)
    if errs[1] == nil then
      errs[1] = { path = "", keyword = "", message = "is invalid", schema_path = "#" }
    end
    return false, errs
  end
end

-- compile(schema, opts?) -> validator
-- opts.loader: table URI -> schema, or function(uri) -> schema | nil, for
-- remote $refs (the draft-07 meta-schema is built in).
function M.compile(s, opts)
  if opts ~= nil and type(opts) ~= "table" then
    errors.raise("bad_argument", "schema.compile: opts must be a table")
  end
  local loader = opts and opts.loader
  if loader ~= nil and type(loader) ~= "table" and type(loader) ~= "function" then
    errors.raise("bad_argument", "schema.compile: opts.loader must be a table or a function")
  end
  if s ~= true and s ~= false and type(s) ~= "table" then
    errors.raise("bad_argument", "schema.compile: a schema must be a table or a boolean, got " .. type(s))
  end
  local c = new_compiler(loader)
  c.main = { [""] = true }
  c:add_document(s, "")
  c.main[inner_base(s, "")] = true
  return validator(c:compile(s, "", "#"))
end

local cache = setmetatable({}, { __mode = "k" })

-- validate(schema, value, opts?) -> true | false, errors
-- Compiles once per schema table (when no opts are given) and caches it;
-- a schema changed after its first use is not seen again.
function M.validate(s, value, opts)
  local v
  if opts == nil and type(s) == "table" then
    v = cache[s]
    if not v then
      v = M.compile(s)
      cache[s] = v
    end
  else
    v = M.compile(s, opts)
  end
  return v(value)
end

-- format_errors(errors) -> string, one line per error: "<path>: <message>",
-- with "(root)" for the value itself.
function M.format_errors(errs)
  local lines = {}
  for i, err in ipairs(errs) do
    local line = (err.path == "" and "(root)" or err.path) .. ": " .. err.message
    if err.keyword == "additionalProperties" and err.property then
      line = line .. " ('" .. err.property .. "')"
    end
    lines[i] = line
  end
  return concat(lines, "\n")
end

M.is_element = is_element

return M
