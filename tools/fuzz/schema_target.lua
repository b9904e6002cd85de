-- tools/fuzz/schema_target.lua: `make fuzz` cases for the validator
-- (devtools_tools.schema, with its patterns through the C regex code).
--
-- A case is a random draft-07 schema (sometimes with a keyword of the
-- wrong kind, a bad pattern or a dangling $ref) and a few values built to
-- reach into it. Checks: compile returns a validator or raises a dt.Error
-- bad_argument, nothing else; the generated validator and the closure one
-- (opts.closures) agree on which schemas compile and on every answer; a
-- validator returns true, or false and a non-empty list of errors that
-- each have a path, keyword, message and schema_path; neither the schema
-- nor the value is changed. Generation must never depend on pairs order.

local json = require "devtools_tools.base.json"
local schema = require "devtools_tools.schema"
local dt_errors = require "devtools_tools.base.errors"
local J = require "fuzz.json_target"
local core = require "devtools_tools.core"

local T = { name = "schema", batch = 1000 }

local null, array_mt = json.null, json.array_mt
local function arr(t) return setmetatable(t, array_mt) end

local NAMES = { "a", "b", "c", "x", "", "0", "__index", "a b", "é" }
local TYPES = { "null", "boolean", "object", "array", "number", "string", "integer" }
local FORMATS = { "date", "time", "date-time", "email", "hostname", "ipv4", "ipv6", "uri",
  "uri-reference", "uri-template", "url", "uuid", "json-pointer", "relative-json-pointer",
  "regex", "idn-email", "no-such-format" }
local STRINGS = { "", "a", "abc", "ABC-1234", "2020-02-29", "2021-02-29", "12:34:56Z",
  "2020-01-01T00:00:00+01:00", "a@b.co", "not an email", "example.com", "-bad-.com",
  "127.0.0.1", "256.1.1.1", "::1", "http://x/y?z#w", "/a/b~1c", "0/a", "[", "(a|b)*",
  "\u{1F600}", "é", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", "00000000-0000-0000-0000-000000000000",
  "\xED\xA0\xBD", "a\xED\xB0\xB2b", "\xED\xA0\xBD\xED\xB0\xB2", "{}]\\c1", "\xF0\x9F\x98", "\255" }
local PIECES = { "a", "b", ".", "\\d", "\\w", "\\s", "\\S", "[a-z]", "[^0-9]", "(", ")", "(?:",
  "|", "*", "+", "?", "*?", "{2,3}", "{2}", "{,", "{3,1}", "^", "$", "\\p{L}", "\\P{Lu}",
  "\\p{Script=Greek}", "\\u{1F600}", "\\u0041", "\\x41", "\\b", "\\B", "(?=", "(?!", "(?<=",
  "(?<!", "\\1", "\\k<n>", "(?<n>", "[", "]", "\\", "\\c", "\\cJ", "é", "\u{1F600}",
  "a{1000}", "(a+)+", "(a|a)*", "[\\d-z]", "[z-a]", "\\/", "\\-", "\\0", "(?i)", "\\Z", "\\A", "\\z",
  -- Annex B (patterns are read without flags): octal and identity escapes,
  -- lone braces, \c before a non-letter, units of an emoji, lone surrogates
  "\\12", "\\400", "\\8", "{", "}", "\\u{3}", "\\xg", "[\\c1]", "[\\c*]", "\\ud83d", "[\\uDC00-\\uDFFF]",
  "\xED\xA0\x80", "\xED\xA0\xBD\xED\xB0\xB2", "[\u{1F600}]", "\\k", "(?=a)*", "[\\s-\\d]",
  "{70000}", "{0,70000}", "{65535,140000}?", "[\\s\\S]", "[^]" }

local function gen_pattern(r)
  local t = {}
  for i = 1, r:int(1, 7) do t[i] = r:pick(PIECES) end
  return table.concat(t)
end

local function gen_string(r)
  if r:chance(0.6) then return r:pick(STRINGS) end
  if r:chance(0.5) then return r:pick(NAMES) end
  return r:bytes(r:size(12), "ab01 -_.@:/\\é")
end

local function gen_value(r, depth)
  local k = r:int(1, depth > 3 and 6 or 9)
  if k == 1 then return null
  elseif k == 2 then return r:chance(0.5)
  elseif k == 3 then return r:pick({ 0, 1, -1, 2, 3, 10, 100, 1.5, -0.5, 0.1, 1e308, 2^53 + 2, 3.0, -0.0 })
  elseif k == 4 then return r:int(-1000, 1000)
  elseif k <= 6 then return gen_string(r)
  elseif k <= 7 then
    local t = {}
    for i = 1, r:size(5) do t[i] = gen_value(r, depth + 1) end
    if r:chance(0.5) and #t > 0 and r:chance(0.3) then t[#t + 1] = t[1] end   -- a duplicate
    return r:chance(0.7) and arr(t) or t
  else
    local t = {}
    for _ = 1, r:size(5) do t[r:chance(0.8) and r:pick(NAMES) or gen_string(r)] = gen_value(r, depth + 1) end
    return t
  end
end

local function names_list(r)
  local t = {}
  for i = 1, r:size(4) do t[i] = r:pick(NAMES) end
  return arr(t)
end

local gen_schema

local function schema_list(r, depth)
  local t = {}
  for i = 1, r:int(1, 3) do t[i] = gen_schema(r, depth + 1) end
  return arr(t)
end

local function schema_map(r, depth, key)
  local t = {}
  for _ = 1, r:size(4) do t[key and key(r) or r:pick(NAMES)] = gen_schema(r, depth + 1) end
  return t
end

local REFS = { "#", "#/definitions/a", "#/definitions/b", "#/properties/a", "#/definitions/missing",
  "#/items/0", "other.json", "other.json#/definitions/x", "http://json-schema.org/draft-07/schema#",
  "#a", "#/definitions/a%20b", "##", "#/definitions/~0" }

-- keyword -> generator of a (usually valid) value for it
local KEYWORDS = {
  type = function(r)
    if r:chance(0.7) then return r:pick(TYPES) end
    local t = {}
    for i = 1, r:int(1, 3) do t[i] = r:pick(TYPES) end
    return arr(t)
  end,
  properties = function(r, d) return schema_map(r, d) end,
  patternProperties = function(r, d) return schema_map(r, d, gen_pattern) end,
  additionalProperties = function(r, d) return r:chance(0.5) and r:chance(0.5) or gen_schema(r, d + 1) end,
  required = names_list,
  propertyNames = function(r, d) return gen_schema(r, d + 1) end,
  dependencies = function(r, d)
    local t = {}
    for _ = 1, r:size(3) do t[r:pick(NAMES)] = r:chance(0.5) and names_list(r) or gen_schema(r, d + 1) end
    return t
  end,
  minProperties = function(r) return r:int(0, 4) end,
  maxProperties = function(r) return r:int(0, 4) end,
  items = function(r, d) return r:chance(0.6) and gen_schema(r, d + 1) or schema_list(r, d) end,
  additionalItems = function(r, d) return r:chance(0.5) and r:chance(0.5) or gen_schema(r, d + 1) end,
  contains = function(r, d) return gen_schema(r, d + 1) end,
  minItems = function(r) return r:int(0, 4) end,
  maxItems = function(r) return r:int(0, 4) end,
  uniqueItems = function(r) return r:chance(0.5) end,
  minLength = function(r) return r:int(0, 6) end,
  maxLength = function(r) return r:int(0, 6) end,
  pattern = gen_pattern,
  format = function(r) return r:pick(FORMATS) end,
  minimum = function(r) return r:pick({ 0, 1, -1, 1.5, 100 }) end,
  maximum = function(r) return r:pick({ 0, 1, -1, 1.5, 100 }) end,
  exclusiveMinimum = function(r) return r:pick({ 0, 1, -1, 1.5 }) end,
  exclusiveMaximum = function(r) return r:pick({ 0, 1, 10, 1.5 }) end,
  multipleOf = function(r) return r:pick({ 1, 2, 0.1, 0.01, 1.5, 1e-9, 3 }) end,
  enum = function(r)
    local t = {}
    for i = 1, r:int(1, 4) do t[i] = gen_value(r, 2) end
    return arr(t)
  end,
  const = function(r) return gen_value(r, 1) end,
  allOf = schema_list, anyOf = schema_list, oneOf = schema_list,
  ["not"] = function(r, d) return gen_schema(r, d + 1) end,
  ["if"] = function(r, d) return gen_schema(r, d + 1) end,
  ["then"] = function(r, d) return gen_schema(r, d + 1) end,
  ["else"] = function(r, d) return gen_schema(r, d + 1) end,
  ["$ref"] = function(r) return r:pick(REFS) end,
  definitions = function(r, d) return schema_map(r, d) end,
  ["$id"] = function(r) return r:pick({ "#a", "http://example.com/root.json", "other.json", "item" }) end,
  title = function(r) return gen_string(r) end,
  default = function(r) return gen_value(r, 1) end,
  ["x-mcp-type"] = function(r) return r:pick({ "HTMLElement", "Other" }) end,
}
local KEYWORD_NAMES = {}
for k in pairs(KEYWORDS) do KEYWORD_NAMES[#KEYWORD_NAMES + 1] = k end
table.sort(KEYWORD_NAMES)

-- A value of the wrong kind for any keyword.
local function wrong(r)
  return r:pick({ -1, 1.5, "x", true, null, {}, arr({}), arr({ 1, 1 }), 0, { a = 1 } })
end

function gen_schema(r, depth)
  if r:chance(depth == 0 and 0.02 or 0.12) then return r:chance(0.5) end
  local s = {}
  for _ = 1, r:int(depth > 2 and 0 or 1, depth > 2 and 2 or 4) do
    local kw = r:pick(KEYWORD_NAMES)
    s[kw] = r:chance(0.03) and wrong(r) or KEYWORDS[kw](r, depth)
  end
  return s
end

function T.gen(r)
  local c = { schema = gen_schema(r, 0), values = {} }
  if r:chance(0.2) then                         -- a loader for remote $refs
    c.loader = { ["other.json"] = gen_schema(r, 1) }
  end
  for i = 1, r:int(1, 8) do c.values[i] = gen_value(r, 0) end
  return c
end

local function copy(v)
  if type(v) ~= "table" then return v end
  local t = {}
  for k, x in pairs(v) do t[k] = copy(x) end
  return setmetatable(t, getmetatable(v))
end

local function show(v)
  local ok, s = pcall(json.encode, v)
  return ok and s or ("(not JSON: " .. tostring(s) .. ")")
end

function T.show(c)
  local vals = {}
  for i, v in ipairs(c.values) do vals[i] = show(v) end
  return ("schema %s\n   loader %s\n   values %s"):format(show(c.schema),
    c.loader and show(c.loader) or "none", table.concat(vals, " | "))
end

local function check_result(ok, valid, errs)
  if not ok then return "the validator raised: " .. tostring(valid) end
  if valid == true then
    if errs ~= nil then return "true came with errors" end
    return nil
  end
  if valid ~= false then return "the validator returned " .. tostring(valid) end
  if type(errs) ~= "table" or errs[1] == nil then return "false came without errors" end
  for _, e in ipairs(errs) do
    for _, f in ipairs({ "path", "keyword", "message", "schema_path" }) do
      if type(e[f]) ~= "string" then return "an error without a string " .. f end
    end
  end
  return nil
end

-- The schema's own pattern, compiled with the u flag as well (the schema
-- reads it without): either answers a boolean, or nil and a message.
local function check_unicode_mode(c)
  local p = type(c.schema) == "table" and c.schema.pattern
  if type(p) ~= "string" then return nil end
  local ok, rx = pcall(core.regex.compile, p, "u")
  if not ok then return "regex_compile(p, 'u') raised: " .. tostring(rx) end
  if not rx then return nil end
  for i, v in ipairs(c.values) do
    if type(v) == "string" then
      local ok2, m, msg = pcall(rx.test, rx, v)
      if not ok2 then return ("value %d: Regex:test raised: %s"):format(i, tostring(m)) end
      if type(m) ~= "boolean" and not (m == nil and type(msg) == "string") then
        return ("value %d: Regex:test answered %s"):format(i, tostring(m))
      end
    end
  end
  rx:close()
  return nil
end

function T.run(c)
  local bad_u = check_unicode_mode(c)
  if bad_u then return bad_u end
  local schema_before = copy(c.schema)
  local opts = c.loader and { loader = c.loader } or {}
  local ok1, v1 = pcall(schema.compile, c.schema, opts)
  opts.closures = true
  local ok2, v2 = pcall(schema.compile, c.schema, opts)
  for _, r in ipairs({ { ok1, v1 }, { ok2, v2 } }) do
    if not r[1] and not (dt_errors.is_error(r[2]) and r[2].code == "bad_argument") then
      return "compile raised other than bad_argument: " .. tostring(r[2])
    end
  end
  if ok1 ~= ok2 then
    return ("the generated validator %s but the closure one %s"):format(
      ok1 and "compiled" or "refused (" .. tostring(v1) .. ")", ok2 and "compiled" or "refused (" .. tostring(v2) .. ")")
  end
  if ok1 then
    for i, value in ipairs(c.values) do
      local before = copy(value)
      local a_ok, a_valid, a_errs = pcall(v1, value)
      local b_ok, b_valid, b_errs = pcall(v2, value)
      local bad = check_result(a_ok, a_valid, a_errs) or check_result(b_ok, b_valid, b_errs)
      if bad then return ("value %d: %s"):format(i, bad) end
      if a_valid ~= b_valid then
        return ("value %d: the generated validator says %s, the closure one %s"):format(i, tostring(a_valid), tostring(b_valid))
      end
      if not a_valid and schema.format_errors(a_errs) ~= schema.format_errors(b_errs) then
        return ("value %d: the two validators give different errors:\n%s\n--\n%s"):format(i,
          schema.format_errors(a_errs), schema.format_errors(b_errs))
      end
      if not J.deep_equal(before, value) then return ("value %d was changed by validation"):format(i) end
    end
  end
  if not J.deep_equal(schema_before, c.schema) then return "the schema was changed by compile or validation" end
  return nil
end

return T
