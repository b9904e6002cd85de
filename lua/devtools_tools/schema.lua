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
-- user code while validating (other than a metatable's __index or __len on
-- a value: give it plain tables, as the codec does). Validation that
-- succeeds allocates nothing (formats, multipleOf with decimals and the
-- length of a non-ASCII string near its limit excepted).
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

-- Generated checks that failed to load (a bug; the specs assert it stays 0).
M._codegen_failures = 0

local MAX_DEPTH = 1200   -- nested passes through circular $refs (LuaJIT's stack
                         -- holds about 1700 of the simplest)

---------------------------------------------------------------- values

-- The one place that knows what an element reference is.
local ELEMENT_NAME = "devtools_tools.Element"
local function is_element(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__name") == ELEMENT_NAME
end

-- A plain table is sent as an array when its keys are exactly 1..n (as the
-- codec decides); {1, 2, x = 3} is an object.
local function is_sequence(t)
  local n = #t
  for i = 1, n do
    if t[i] == nil then return false end
  end
  local c = 0
  for _ in next, t do
    c = c + 1
    if c > n then return false end
  end
  return c == n
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
  if rawget(v, 1) ~= nil and is_sequence(v) then return "array" end
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
  return rawget(t, 1) ~= nil and is_sequence(t)
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
    info = {},          -- node check -> its keyword data, for code generation
    cells = {},         -- forwarding check -> its cell
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
    local fwd = function(v, e)          -- recursion: through a cell
      depth = depth + 1
      if depth > MAX_DEPTH then
        depth = 0
        errors.raise("bad_argument", "schema recursion deeper than " .. MAX_DEPTH ..
                     " levels at " .. loc .. " (is the value nested that deep, or cyclic?)")
      end
      local ok
      if e then ok = cell.fn(v, e) else ok = (cell.fast or cell.fn)(v) end
      depth = depth - 1
      return ok
    end
    self.cells[fwd] = cell
    return fwd
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

-- The simplest keywords are checked inline by node_check: their builders
-- only leave { limit, message, location } in g.
local function bound(name, op)
  K[name] = function(_, s, g, loc)
    local b = need_number(s[name], loc)
    g[name] = { b, "must be " .. op .. " " .. num_str(b), loc }
  end
end
bound("maximum", "<=")
bound("minimum", ">=")
bound("exclusiveMaximum", "<")
bound("exclusiveMinimum", ">")

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

local function limit(name, what, cmp)
  K[name] = function(_, s, g, loc)
    local lim = need_count(s[name], loc)
    g[name] = { lim, "must NOT have " .. cmp .. " than " .. num_str(lim) .. " " .. what, loc }
  end
end
limit("maxLength", "characters", "more")
limit("minLength", "characters", "fewer")
limit("maxItems", "items", "more")
limit("minItems", "items", "fewer")

function K.pattern(c, s, g, loc)
  local p = need_string(s.pattern, loc)
  local r = c:regex(p, loc)
  g.pattern = { r, 'must match pattern "' .. p .. '"', loc }
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
  if f ~= TRUE then g.items = f end
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

local function nkeys(v)
  local n = 0
  for _ in next, v do n = n + 1 end
  return n
end
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
  g.required = { names, msgs, loc }
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
  local addmsg = "must NOT have additional properties"
  if np == 0 and (addno or addf) then
    -- one pass over the value's keys does properties and the rest
    local map = {}
    for k in pairs(set) do map[k] = TRUE end
    for i = 1, n do map[keys[i]] = fns[i] end
    g.merged = { map, addno, addf, addmsg, aloc }
    g.mkeys = keys
    return
  end
  if n > 0 then g.props = { keys, fns } end
  if np == 0 and not addno and not addf then return end
  g.obj[#g.obj + 1] = function(v, e)
    local ok = true
    for k, pv in next, v do
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
    for k in next, v do
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
        msgs[i] = "must have property " .. d[i] .. " when property " .. k .. " is present"
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

local function unpack3(t)
  if t then return t[1], t[2], t[3] end
  return nil
end

-- The check for one schema object: the type, the simplest keywords inline
-- (one closure call per value, not one per keyword), then the lists of
-- keyword closures for the value's kind. In collecting mode (e ~= nil)
-- every failed keyword adds its error; otherwise the first failure returns.
-- (LuaJIT allows 60 upvalues: messages and locations stay in g, read on
-- the error path only.)
local function node_check(g)
  local tmask = g.tmask
  local anyf, strf, numf = all_of(g.any), all_of(g.str), all_of(g.num)
  local arrf, objf = all_of(g.arr), all_of(g.obj)
  local maxlen = g.maxLength and g.maxLength[1]
  local minlen = g.minLength and g.minLength[1]
  local rx = g.pattern and g.pattern[1]
  local rx_test = rx and rx.test
  local max = g.maximum and g.maximum[1]
  local min = g.minimum and g.minimum[1]
  local xmax = g.exclusiveMaximum and g.exclusiveMaximum[1]
  local xmin = g.exclusiveMinimum and g.exclusiveMinimum[1]
  local items = g.items
  local maxit = g.maxItems and g.maxItems[1]
  local minit = g.minItems and g.minItems[1]
  local req = g.required and g.required[1]
  local nreq = req and #req or 0
  local pkeys, pfns = unpack3(g.props)
  local nprops = pkeys and #pkeys or 0
  local map, addno, addf
  if g.merged then map, addno, addf = g.merged[1], g.merged[2], g.merged[3] end
  g.anyf, g.strf, g.numf, g.arrf, g.objf = anyf, strf, numf, arrf, objf
  local has_str = strf or maxlen or minlen or rx
  local has_num = numf or max or min or xmax or xmin
  local has_arr = arrf or items or maxit or minit
  local has_obj = objf or req or pkeys or map
  if not (tmask or anyf or has_str or has_num or has_arr or has_obj) then
    return TRUE
  end
  local allow_obj = not tmask or tmask.object
  local allow_arr = not tmask or tmask.array

  return function(v, e)
    local tv = type(v)
    local ok = true
    if tv == "string" then
      if tmask and not tmask.string then
        if not e then return false end
        add(e, "type", g.tmsg, g.tloc)
        ok = false
      end
      if has_str then
        if maxlen and #v > maxlen and ulen(v) > maxlen then
          if not e then return false end
          add(e, "maxLength", g.maxLength[2], g.maxLength[3])
          ok = false
        end
        if minlen and (#v < minlen or (#v < 4 * minlen and ulen(v) < minlen)) then
          if not e then return false end
          add(e, "minLength", g.minLength[2], g.minLength[3])
          ok = false
        end
        if rx and not rx_test(rx, v) then
          if not e then return false end
          add(e, "pattern", g.pattern[2], g.pattern[3])
          ok = false
        end
        if strf and not strf(v, e) then
          if not e then return false end
          ok = false
        end
      end
    elseif tv == "number" then
      if tmask and not tmask.number and not (tmask.integer and v % 1 == 0) then
        if not e then return false end
        add(e, "type", g.tmsg, g.tloc)
        ok = false
      end
      if has_num then
        if max and not (v <= max) then
          if not e then return false end
          add(e, "maximum", g.maximum[2], g.maximum[3])
          ok = false
        end
        if xmax and not (v < xmax) then
          if not e then return false end
          add(e, "exclusiveMaximum", g.exclusiveMaximum[2], g.exclusiveMaximum[3])
          ok = false
        end
        if min and not (v >= min) then
          if not e then return false end
          add(e, "minimum", g.minimum[2], g.minimum[3])
          ok = false
        end
        if xmin and not (v > xmin) then
          if not e then return false end
          add(e, "exclusiveMinimum", g.exclusiveMinimum[2], g.exclusiveMinimum[3])
          ok = false
        end
        if numf and not numf(v, e) then
          if not e then return false end
          ok = false
        end
      end
    elseif tv == "table" then
      -- which kind: plain tables without [1] are objects, and also arrays
      -- when empty; metatables say so for the others
      local is_obj, is_arr
      local mt = getmetatable(v)
      if mt == nil then
        if v[1] ~= nil and is_sequence(v) then
          is_arr = true
        else
          is_obj = true
          if (has_arr or (tmask and not allow_obj)) and next(v) == nil then is_arr = true end
        end
      else
        local k = table_kind(v)
        is_obj = k == "object" or k == "empty"
        is_arr = k == "array" or k == "empty"
      end
      if tmask and not ((is_obj and allow_obj) or (is_arr and allow_arr)) then
        if not e then return false end
        add(e, "type", g.tmsg, g.tloc)
        ok = false
      end
      if is_obj and has_obj then
        for i = 1, nreq do
          if v[req[i]] == nil then
            if not e then return false end
            add(e, "required", g.required[2][i], g.required[3], req[i])
            ok = false
          end
        end
        for i = 1, nprops do
          local pv = v[pkeys[i]]
          if pv ~= nil then
            if e then
              if not at(pfns[i], pkeys[i], pv, e) then ok = false end
            elseif not pfns[i](pv) then
              return false
            end
          end
        end
        if map then
          for k, pv in next, v do
            if type(k) ~= "string" then k = key_string(k) end
            local f = map[k] or addf
            if f then
              if e then
                if not at(f, k, pv, e) then ok = false end
              elseif not f(pv) then
                return false
              end
            elseif addno then
              if not e then return false end
              add(e, "additionalProperties", g.merged[4], g.merged[5], k)
              ok = false
            end
          end
        end
        if objf and not objf(v, e) then
          if not e then return false end
          ok = false
        end
      end
      if is_arr and has_arr then
        local n = #v
        if maxit and n > maxit then
          if not e then return false end
          add(e, "maxItems", g.maxItems[2], g.maxItems[3])
          ok = false
        end
        if minit and n < minit then
          if not e then return false end
          add(e, "minItems", g.minItems[2], g.minItems[3])
          ok = false
        end
        if items then
          for i = 1, n do
            if e then
              if not at(items, i - 1, v[i], e) then ok = false end
            elseif not items(v[i]) then
              return false
            end
          end
        end
        if arrf and not arrf(v, e) then
          if not e then return false end
          ok = false
        end
      end
    elseif tmask then
      local name = tv == "boolean" and "boolean" or (v == null and "null") or nil
      if not (name and tmask[name]) then
        if not e then return false end
        add(e, "type", g.tmsg, g.tloc)
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
  local f = node_check(g)
  if f ~= TRUE then self.info[f] = g end
  return f
end

---------------------------------------------------- code generation

-- The closures above answer both questions (valid? and why not?). The
-- question asked on every call is the first, so the compiler also writes
-- it out as one Lua function (as ajv writes JavaScript): the type dispatch
-- and the simple keywords become straight-line code, child schemas are
-- inlined, and only the rarer keywords are called as closures. It answers
-- exactly what the closures answer (the same data drives both); the
-- closures stay the reference and collect the errors.

local load = loadstring or load
local MAX_LINES = 2000       -- past this, children are called, not inlined
local MAX_INLINE = 6         -- nesting depth of inlined schemas
local PROPS_CHUNK = 64       -- properties per generated function (LuaJIT
                             -- limits the length of a jump)

local function lit(x)        -- a number or string as Lua source
  if type(x) == "string" then return (sformat("%q", x):gsub("\n", "n")) end
  if x == huge then return "(1/0)" end
  if x == -huge then return "(-1/0)" end
  if x % 1 == 0 and x > -2 ^ 53 and x < 2 ^ 53 then return sformat("%d", x) end
  return sformat("%.17g", x)
end

local Gen = {}
Gen.__index = Gen

function Gen:k(x)            -- a constant (function, userdata, table)
  local id = self.kmap[x]
  if not id then
    id = #self.consts + 1
    self.consts[id] = x
    self.kmap[x] = id
  end
  return "K[" .. id .. "]"
end

function Gen:emit(line)
  self.n = self.n + 1
  self.lines[self.n] = line
end

function Gen:var(prefix)
  self.nvar = self.nvar + 1
  return prefix .. self.nvar
end

-- A generated function for a check that is called rather than inlined.
-- (or for a part of one, written by emitter(gen) with the value in v)
function Gen:fn_for(f, emitter)
  local name = self.fnames[f]
  if name then return name end
  name = "F[" .. (#self.queue + 1) .. "]"
  self.fnames[f] = name
  self.queue[#self.queue + 1] = f
  if emitter then self.emitters[f] = emitter end
  return name
end

-- Emits statements that `return false` unless value x passes check f.
function Gen:check(f, x, nest)
  if f == TRUE then return end
  local g = self.info[f]
  if not g then
    local cell = self.cells[f]
    if cell then self.fwd[#self.fwd + 1] = cell end
    self:emit("if not " .. self:k(f) .. "(" .. x .. ") then return false end")
    return
  end
  if nest > MAX_INLINE or self.n > MAX_LINES then
    self:emit("if not " .. self:fn_for(f) .. "(" .. x .. ") then return false end")
    return
  end
  self:emit("do")
  self:node(g, x, nest)
  self:emit("end")
end

function Gen:strings(g, x)
      if g.maxLength then
        local m = lit(g.maxLength[1])
        self:emit("if #" .. x .. " > " .. m .. " and ulen(" .. x .. ") > " .. m .. " then return false end")
      end
      if g.minLength then
        local m = lit(g.minLength[1])
        self:emit("if #" .. x .. " < " .. m .. " or (#" .. x .. " < 4 * " .. m ..
                  " and ulen(" .. x .. ") < " .. m .. ") then return false end")
      end
      if g.pattern then
        local r = g.pattern[1]
        self:emit("if not " .. self:k(r.test) .. "(" .. self:k(r) .. ", " .. x .. ") then return false end")
      end
      if g.strf then self:emit("if not " .. self:k(g.strf) .. "(" .. x .. ") then return false end") end
end

function Gen:numbers(g, x)
      if g.maximum then self:emit("if not (" .. x .. " <= " .. lit(g.maximum[1]) .. ") then return false end") end
      if g.exclusiveMaximum then self:emit("if not (" .. x .. " < " .. lit(g.exclusiveMaximum[1]) .. ") then return false end") end
      if g.minimum then self:emit("if not (" .. x .. " >= " .. lit(g.minimum[1]) .. ") then return false end") end
      if g.exclusiveMinimum then self:emit("if not (" .. x .. " > " .. lit(g.exclusiveMinimum[1]) .. ") then return false end") end
      if g.numf then self:emit("if not " .. self:k(g.numf) .. "(" .. x .. ") then return false end") end
end

function Gen:tables(g, x, nest, has_obj, has_arr)
  local tm = g.tmask
  local allow_obj = not tm or tm.object
  local allow_arr = not tm or tm.array
  local o, a = self:var("o"), self:var("a")
  local mt = self:var("m")
  self:emit("local " .. o .. ", " .. a)
  self:emit("local " .. mt .. " = getmetatable(" .. x .. ")")
  self:emit("if " .. mt .. " == nil then")
  self:emit("if " .. x .. "[1] ~= nil and is_sequence(" .. x .. ") then " .. a ..
            " = true else " .. o .. " = true")
  if has_arr or (tm and not allow_obj) then
    self:emit("if next(" .. x .. ") == nil then " .. a .. " = true end")
  end
  self:emit("end")
  self:emit("elseif " .. mt .. " == array_mt then " .. a .. " = true")
  self:emit("else")
  local k = self:var("k")
  self:emit("local " .. k .. " = table_kind(" .. x .. ")")
  self:emit(o .. " = " .. k .. ' == "object" or ' .. k .. ' == "empty"')
  self:emit(a .. " = " .. k .. ' == "array" or ' .. k .. ' == "empty"')
  self:emit("end")
  if tm then
    local conds = {}
    if allow_obj then conds[#conds + 1] = o end
    if allow_arr then conds[#conds + 1] = a end
    self:emit("if not (" .. concat(conds, " or ") .. ") then return false end")
  end
  if has_obj then
    self:emit("if " .. o .. " then")
    self:object(g, x, nest)
    self:emit("end")
  end
  if has_arr then
    self:emit("if " .. a .. " then")
    self:array(g, x, nest)
    self:emit("end")
  end
end

function Gen:node(g, x, nest)
  local tm = g.tmask
  local has_str = g.strf or g.maxLength or g.minLength or g.pattern
  local has_num = g.numf or g.maximum or g.minimum or g.exclusiveMaximum or g.exclusiveMinimum
  local has_arr = g.arrf or g.items or g.maxItems or g.minItems
  local has_obj = g.objf or g.required or g.props or g.merged
  local single
  if tm then
    local count = 0
    for name in pairs(TYPES) do
      if tm[name] then count = count + 1; single = name end
    end
    if count == 2 and tm.integer and tm.number then count, single = 1, "number" end
    if count == 2 and tm.object and tm.array then count, single = 1, "table" end
    if single == "object" or single == "array" then single = "table" end
    if single == "integer" then single = "number" end
    if count ~= 1 then single = nil end
  end
  if single then                        -- one type: no dispatch needed
    if single == "boolean" then
      self:emit("if " .. x .. " ~= true and " .. x .. " ~= false then return false end")
    elseif single == "null" then
      self:emit("if " .. x .. " ~= null then return false end")
    else
      self:emit("if type(" .. x .. ') ~= "' .. single .. '" then return false end')
      if single == "string" then
        self:strings(g, x)
      elseif single == "number" then
        if not tm.number then self:emit("if " .. x .. " % 1 ~= 0 then return false end") end
        self:numbers(g, x)
      else
        self:tables(g, x, nest, has_obj, has_arr)
      end
    end
    if g.anyf then self:emit("if not " .. self:k(g.anyf) .. "(" .. x .. ") then return false end") end
    return
  end
  local t = self:var("t")
  self:emit("local " .. t .. " = type(" .. x .. ")")
  local branch = "if"
  if has_str or tm then
    self:emit(branch .. " " .. t .. ' == "string" then')
    branch = "elseif"
    if tm and not tm.string then self:emit("return false") else self:strings(g, x) end
  end
  if has_num or tm then
    self:emit(branch .. " " .. t .. ' == "number" then')
    branch = "elseif"
    if tm and not tm.number then
      if tm.integer then
        self:emit("if " .. x .. " % 1 ~= 0 then return false end")
      else
        self:emit("return false")
      end
    end
    if not tm or tm.number or tm.integer then self:numbers(g, x) end
  end
  if has_obj or has_arr or tm then
    self:emit(branch .. " " .. t .. ' == "table" then')
    branch = "elseif"
    if tm and not tm.object and not tm.array then
      self:emit("return false")
    else
      self:tables(g, x, nest, has_obj, has_arr)
    end
  end
  -- booleans, null, and values that are not JSON
  if tm then
    local conds = {}
    if tm.boolean then conds[#conds + 1] = t .. ' == "boolean"' end
    if tm.null then conds[#conds + 1] = x .. " == null" end
    self:emit(branch == "if" and "do" or "else")
    if #conds == 0 then
      self:emit("return false")
    else
      self:emit("if not (" .. concat(conds, " or ") .. ") then return false end")
    end
    self:emit("end")
  elseif branch ~= "if" then
    self:emit("end")
  end
  if g.anyf then self:emit("if not " .. self:k(g.anyf) .. "(" .. x .. ") then return false end") end
end

function Gen:object(g, x, nest)
  if g.required then
    local names = g.required[1]
    for i = 1, #names do
      self:emit("if " .. x .. "[" .. lit(names[i]) .. "] == nil then return false end")
    end
  end
  if g.props then
    local keys, fns = g.props[1], g.props[2]
    local function props(gen, from, to, y, depth)
      for i = from, to do
        local p = gen:var("p")
        gen:emit("do local " .. p .. " = " .. y .. "[" .. lit(keys[i]) .. "]")
        gen:emit("if " .. p .. " ~= nil then")
        gen:check(fns[i], p, depth + 1)
        gen:emit("end end")
      end
    end
    if #keys <= PROPS_CHUNK then
      props(self, 1, #keys, x, nest)
    else                                -- many: in functions of their own
      for from = 1, #keys, PROPS_CHUNK do
        local to = from + PROPS_CHUNK - 1
        if to > #keys then to = #keys end
        local name = self:fn_for({}, function(gen) props(gen, from, to, "v", 0) end)
        self:emit("if not " .. name .. "(" .. x .. ") then return false end")
      end
    end
  end
  if g.merged then
    local map, addno, addf = g.merged[1], g.merged[2], g.merged[3]
    local names = {}
    for name in pairs(map) do names[#names + 1] = name end
    sort(names)
    local kk, pv = self:var("k"), self:var("v")
    self:emit("for " .. kk .. ", " .. pv .. " in next, " .. x .. " do")
    if #names <= 12 then
      local branch = "if"
      for _, name in ipairs(names) do
        self:emit(branch .. " " .. kk .. " == " .. lit(name) .. " then")
        branch = "elseif"
        self:check(map[name], pv, nest + 1)
      end
      self:emit(branch == "if" and "do" or "else")
    end
    -- a key not matched above; one that is not a string is looked up as
    -- the codec would write it
    local f = self:var("f")
    self:emit("local " .. f .. " = " .. self:k(map) .. "[" .. kk .. "]")
    self:emit("if " .. f .. " == nil then " .. f .. " = " .. self:k(map) ..
              "[key_string(" .. kk .. ")] end")
    self:emit("if " .. f .. " then")
    self:emit("if not " .. f .. "(" .. pv .. ") then return false end")
    self:emit("else")
    if addno then
      self:emit("return false")
    else
      self:check(addf, pv, nest + 1)
    end
    self:emit("end")
    if #names <= 12 then self:emit("end") end
    self:emit("end")
  end
  if g.objf then self:emit("if not " .. self:k(g.objf) .. "(" .. x .. ") then return false end") end
end

function Gen:array(g, x, nest)
  local n = self:var("n")
  self:emit("local " .. n .. " = #" .. x)
  if g.maxItems then self:emit("if " .. n .. " > " .. lit(g.maxItems[1]) .. " then return false end") end
  if g.minItems then self:emit("if " .. n .. " < " .. lit(g.minItems[1]) .. " then return false end") end
  if g.items then
    local i, it = self:var("i"), self:var("x")
    self:emit("for " .. i .. " = 1, " .. n .. " do")
    self:emit("local " .. it .. " = " .. x .. "[" .. i .. "]")
    self:check(g.items, it, nest + 1)
    self:emit("end")
  end
  if g.arrf then self:emit("if not " .. self:k(g.arrf) .. "(" .. x .. ") then return false end") end
end

-- Writes, loads and returns the fast check for root (nil if that fails:
-- the closures then serve alone).
local function generate(c, root)
  if root == TRUE or not c.info[root] then return nil end
  local gen = setmetatable({ info = c.info, cells = c.cells, consts = {}, kmap = {},
                             lines = {}, n = 0, nvar = 0, fnames = {}, queue = {},
                             emitters = {},
                             fwd = {} }, Gen)
  gen:fn_for(root)
  local i = 1
  local body = {}
  while gen.queue[i] do
    local f = gen.queue[i]
    gen.lines, gen.n = {}, 0
    gen:emit("F[" .. i .. "] = function(v)")
    local g = gen.info[f]
    if gen.emitters[f] then
      gen.emitters[f](gen)
    elseif g then
      gen:node(g, "v", 0)
    else
      gen:check(f, "v", 0)
    end
    gen:emit("return true")
    gen:emit("end")
    body[#body + 1] = concat(gen.lines, "\n")
    -- a recursive target gets its own fast function too
    for _, cell in ipairs(gen.fwd) do
      if cell.fn and cell.fn ~= TRUE and gen.info[cell.fn] and not cell.gen then
        cell.gen = gen:fn_for(cell.fn)
        gen.cells_done = gen.cells_done or {}
        gen.cells_done[#gen.cells_done + 1] = cell
      end
    end
    gen.fwd = {}
    i = i + 1
  end
  local src = "local K, type, getmetatable, next, null, ulen, table_kind, array_mt, is_sequence, " ..
              "key_string = ...\n" ..
              "local F = {}\n" .. concat(body, "\n") .. "\nreturn F\n"
  local chunk, err = load(src, "=schema")
  if not chunk then                     -- a bug of ours: counted for the tests
    M._codegen_failures = M._codegen_failures + 1
    M._codegen_error = err
    return nil
  end
  local fns = chunk(gen.consts, type, getmetatable, next, null, ulen, table_kind, array_mt,
                    is_sequence, key_string)
  for _, cell in ipairs(gen.cells_done or {}) do
    cell.fast = fns[tonumber(smatch(cell.gen, "%d+"))]
  end
  return fns[1]
end

------------------------------------------------------------------- API

local function validator(check, fast)
  fast = fast or check
  return function(value)
    D, depth = 0, 0
    if fast(value) then return true end
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
-- opts.closures: true to skip the generated check (the specs compare both).
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
  local check = c:compile(s, "", "#")
  return validator(check, not (opts and opts.closures) and generate(c, check) or nil)
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

-- format_errors(errors, sep?) -> string, one line per error
-- ("<path>: <message>", "(root)" for the value itself), joined by sep
-- (default "\n").
function M.format_errors(errs, sep)
  local lines = {}
  for i, err in ipairs(errs) do
    local line = (err.path == "" and "(root)" or err.path) .. ": " .. err.message
    if err.keyword == "additionalProperties" and err.property then
      line = line .. " ('" .. err.property .. "')"
    end
    lines[i] = line
  end
  return concat(lines, sep or "\n")
end

M.is_element = is_element

return M
