-- schema_spec: devtools_tools.schema, JSON Schema draft-07 validation.
-- Scenario tables: schema, value, and either true or the expected errors
-- ({path, keyword, message}). Every scenario runs through both engines,
-- the generated one and the closures, which must give the same verdict and
-- the same errors (every field: path, keyword, message, schema_path,
-- property, received, allowed).

local core = require("devtools_tools.core")
local json = require("devtools_tools.base.json")
local schema = require("devtools_tools.schema")
local errors = require("devtools_tools.base.errors")

local context = require("devtools_tools.schema.context")
local formats = require("devtools_tools.schema.formats")

local null, A = json.null, json.array
local Element = { __name = "devtools_tools.Element" }
local function element() return setmetatable({ backend_node_id = 7 }, Element) end

-- check(s, value, opts?) -> ok, errs (both engines agree, errors included)
local function check(s, value, opts)
  local o1, o2 = {}, { closures = true }
  for k, v in pairs(opts or {}) do o1[k] = v; o2[k] = v end
  local ok1, errs1 = schema.compile(s, o1)(value)
  local ok2, errs2 = schema.compile(s, o2)(value)
  assert.are.equal(ok2, ok1, "generated check and closures disagree")
  assert.are.same(errs2, errs1, "generated check and closures report different errors")
  if not ok1 then assert.is_true(#errs1 > 0) end
  return ok1, errs1
end

local function valid(s, value, opts)
  local ok, errs = check(s, value, opts)
  assert(ok, "expected valid, got: " .. (errs and schema.format_errors(errs) or "?"))
end

-- invalid(s, value, {path, keyword, message}...): exactly these errors
local function invalid(s, value, ...)
  local ok, errs = check(s, value)
  assert.is_false(ok)
  local want = { ... }
  if #want == 0 then return errs end
  local got = {}
  for i, e in ipairs(errs) do got[i] = { e.path, e.keyword, e.message } end
  assert.are.same(want, got)
  return errs
end

local function bad_schema(s, pattern, opts)
  local ok, err = errors.catch(schema.compile, s, opts)
  assert.is_false(ok, "schema should be rejected")
  assert.are.equal("bad_argument", err.code)
  if pattern then assert.matches(pattern, err.message) end
  return err
end

after_each(function()
  assert.are.equal(0, schema._codegen_failures, tostring(schema._codegen_error))
end)

describe("type", function()
  local cases = {
    { "string", "x", true }, { "string", 1, false },
    { "number", 1, true }, { "number", 1.5, true }, { "number", "1", false },
    { "integer", 1, true }, { "integer", 1.0, true }, { "integer", 1.5, false },
    { "integer", -0.0, true }, { "integer", 1e300, true }, { "integer", 1 / 0, false },
    { "boolean", false, true }, { "boolean", 0, false },
    { "null", null, true }, { "null", false, false },
    { "object", { a = 1 }, true }, { "object", A {}, false }, { "object", { 1 }, false },
    { "array", { 1, 2 }, true }, { "array", A {}, true }, { "array", { a = 1 }, false },
    -- a plain {} is both
    { "object", {}, true }, { "array", {}, true },
    { "string", {}, false }, { "object", null, false },
    -- a function is not a JSON value of any type; an Element is an object
    -- to the page (issue 11, item 15)
    { "object", print, false }, { "object", element(), true }, { "array", element(), false },
  }
  for _, c in ipairs(cases) do
    it(("%s %s %s"):format(c[1], tostring(c[2]), c[3] and "passes" or "fails"), function()
      if c[3] then
        valid({ type = c[1] }, c[2])
      else
        invalid({ type = c[1] }, c[2], { "", "type", "must be " .. c[1] })
      end
    end)
  end

  it("takes a list of types", function()
    local s = { type = A { "integer", "null" } }
    valid(s, 3)
    valid(s, null)
    invalid(s, 3.5, { "", "type", "must be integer,null" })
    invalid(s, "x", { "", "type", "must be integer,null" })
  end)

  it("treats a value without a type keyword as anything", function()
    valid({}, print)
    valid(true, element())
  end)
end)

describe("enum and const", function()
  it("enum compares JSON values deeply", function()
    local s = { enum = A { 6, "foo", A {}, true, { foo = 12 }, null } }
    valid(s, 6)
    valid(s, 6.0)
    valid(s, "foo")
    valid(s, A {})
    valid(s, true)
    valid(s, { foo = 12 })
    valid(s, null)
    invalid(s, { foo = 13 }, { "", "enum", "must be equal to one of the allowed values" })
    invalid(s, false)
    invalid(s, "6")
    invalid(s, { foo = 12, bar = 1 })
  end)

  it("enum tells 0 from false and 1 from true", function()
    invalid({ enum = A { 0 } }, false)
    invalid({ enum = A { false } }, 0)
    invalid({ enum = A { 1 } }, true)
  end)

  it("const compares deeply; a plain {} is an object there", function()
    valid({ const = { a = A { 1, 2 } } }, { a = { 1, 2 } })
    invalid({ const = { a = A { 1, 2 } } }, { a = { 2, 1 } },
      { "", "const", "must be equal to constant" })
    valid({ const = 2 }, 2.0)
    valid({ const = null }, null)
    invalid({ const = null }, false)
    invalid({ const = A {} }, {})
    valid({ const = {} }, {})
  end)
end)

describe("numbers", function()
  it("maximum, minimum and the exclusive forms", function()
    valid({ maximum = 3 }, 3)
    invalid({ maximum = 3 }, 3.5, { "", "maximum", "must be <= 3" })
    valid({ minimum = 1 }, 1)
    invalid({ minimum = 1 }, 0, { "", "minimum", "must be >= 1" })
    invalid({ minimum = 1.5 }, 1, { "", "minimum", "must be >= 1.5" })
    invalid({ exclusiveMaximum = 3 }, 3, { "", "exclusiveMaximum", "must be < 3" })
    invalid({ exclusiveMinimum = 0 }, 0, { "", "exclusiveMinimum", "must be > 0" })
    valid({ exclusiveMinimum = 0 }, 0.0001)
    valid({ maximum = 3 }, "not a number")
  end)

  -- The encoder writes a Lua 5.4 integer whole, and the page's JSON.parse
  -- reads one past 2^53 as the nearest double (9007199254740993 is
  -- 9007199254740992 there): bounds, const, enum and uniqueItems compare
  -- what the page will hold. ajv 6.15's verdicts on the same JSON text.
  it("compares an integer past 2^53 as the page parses it", function()
    local big = math.tointeger and math.tointeger("9007199254740993") or 2 ^ 53
    valid({ maximum = 2 ^ 53 }, big)
    valid({ minimum = -2 ^ 53 }, -big)
    invalid({ exclusiveMinimum = 2 ^ 53 }, big, { "", "exclusiveMinimum", "must be > 9007199254740992" })
    valid({ const = 2 ^ 53 }, big)
    valid({ const = A { big } }, A { 2 ^ 53 })
    valid({ enum = A { 2 ^ 53 } }, big)
    invalid({ uniqueItems = true }, A { 2 ^ 53, big },
      { "", "uniqueItems", "must NOT have duplicate items (items ## 1 and 0 are identical)" })
    valid({ maximum = 5 }, 5)                 -- nothing below 2^53 moves
    invalid({ maximum = 2 ^ 53 - 1 }, math.tointeger and math.tointeger("9007199254740992") or 2 ^ 53)
  end)

  -- ajv (what the page validates with) divides: x / m in doubles must be an
  -- integer below 1e21. The verdicts below are ajv 6.15's and 8's.
  it("multipleOf divides as ajv does", function()
    invalid({ multipleOf = 0.01 }, 19.99, { "", "multipleOf", "must be multiple of 0.01" })  -- 1998.9999999999998
    invalid({ multipleOf = 0.01 }, 0.07)                                                       -- 7.000000000000001
    invalid({ multipleOf = 0.1 }, 0.3)                                                         -- 2.9999999999999996
    invalid({ multipleOf = 0.05 }, 1.15)
    valid({ multipleOf = 0.1 }, 0.5)
    valid({ multipleOf = 0.0001 }, 0.0075)
    invalid({ multipleOf = 0.0001 }, 0.00751, { "", "multipleOf", "must be multiple of 0.0001" })
    invalid({ multipleOf = 0.01 }, 19.999, { "", "multipleOf", "must be multiple of 0.01" })
    valid({ multipleOf = 2 }, 10)
    valid({ multipleOf = 2 }, -10)
    invalid({ multipleOf = 2 }, 7, { "", "multipleOf", "must be multiple of 2" })
    invalid({ multipleOf = 2 }, 7.5)
    valid({ multipleOf = 1.5 }, 4.5)
    valid({ multipleOf = 1e-8 }, 12391239123)
    invalid({ multipleOf = 0.123456789 }, 1e308)                                               -- Infinity
    valid({ multipleOf = 3 }, 0)
    -- past 2^53: the quotient in doubles (1e16 / 3 is 3333333333333333.5,
    -- 1e17 / 3 is 33333333333333332, 1e21 / 7 is 142857142857142860000)
    invalid({ multipleOf = 3 }, 1e16, { "", "multipleOf", "must be multiple of 3" })
    valid({ multipleOf = 3 }, 1e17)
    valid({ multipleOf = 7 }, 1e21)
    valid({ multipleOf = 0.07 }, 1e15)
    valid({ multipleOf = 2 }, 2 ^ 60)
    -- a quotient of 1e21 or more is never one (parseInt reads "1e+21" as 1)
    invalid({ multipleOf = 1 }, 1e21, { "", "multipleOf", "must be multiple of 1" })
    invalid({ multipleOf = 1 }, -1e21)
    valid({ multipleOf = 1 }, 9.99e20)
    invalid({ multipleOf = 0.5 }, 1e21)
    invalid({ multipleOf = 10 }, 1e300)
  end)

  it("bounds past 2^53 compare as the page holds them (Lua 5.3+ integers)", function()
    if not math.type then return end                   -- (LuaJIT: doubles only)
    local big = math.tointeger(2 ^ 53) + 1                 -- 9007199254740993, 2^53 to the page
    valid({ maximum = big }, big)
    invalid({ minimum = big + 1 }, big - 1, { "", "minimum", "must be >= 9007199254740994" })
    invalid({ exclusiveMaximum = math.maxinteger }, math.maxinteger,
      { "", "exclusiveMaximum", "must be < 9223372036854775807" })
    valid({ maximum = math.maxinteger - 1 }, math.maxinteger)   -- both 2^63 to the page
    valid({ const = big }, big)
    valid({ enum = { big } }, big - 1)
    invalid({ enum = { big + 1 } }, big - 1)
  end)
end)

describe("strings", function()
  it("maxLength and minLength count code points, not bytes", function()
    valid({ maxLength = 2 }, "\u{1F432}\u{1F432}")
    invalid({ maxLength = 2 }, "abc", { "", "maxLength", "must NOT have more than 2 characters" })
    invalid({ maxLength = 2 }, "\u{e9}\u{e9}\u{e9}")
    valid({ minLength = 2 }, "\u{e9}\u{e9}")
    invalid({ minLength = 2 }, "\u{1F432}", { "", "minLength", "must NOT have fewer than 2 characters" })
    invalid({ minLength = 1 }, "")
    valid({ minLength = 3 }, 12)
  end)

  -- as new RegExp(p) reads it (ajv 6, which Chrome DevTools for agents
  -- validates with): Annex B, UTF-16 units. Verdicts are ajv 6.15's.
  it("pattern is an ECMA-262 regular expression without flags, searched anywhere", function()
    valid({ pattern = "\\Zx" }, "aZx")                   -- ajv 6 takes a \Z first, or after \\
    valid({ pattern = "^a\\\\\\Z$" }, "a\\Z")
    valid({ pattern = "b" }, "abc")
    valid({ pattern = "^[A-Z]{3}-\\d{4}$" }, "ABC-1234")
    valid({ pattern = "^\\d{3}\\-\\d{4}$" }, "555-1234")   -- the u flag refuses \-
    invalid({ pattern = "^a" }, "ba", { "", "pattern", 'must match pattern "^a"' })
    invalid({ pattern = "^abc$" }, "abc\n")
    invalid({ pattern = "^.$" }, "\u{1F432}")                -- two units
    valid({ pattern = "^..$" }, "\u{1F432}")
    invalid({ pattern = "^\\p{Letter}+$" }, "\u{e9}t\u{e9}")  -- \p is p
    valid({ pattern = "^\\p{Letter}+$" }, "p{Letter}}}")
    invalid({ pattern = "^\\w+$" }, "\u{e9}t\u{e9}")
    invalid({ pattern = "^a" }, "a\255")            -- not UTF-8: no match
    valid({ pattern = "^a" }, 5)
  end)

  -- Chrome DevTools for agents validates with ajv 6.15, new Ajv(): its
  -- "fast" formats (lib/compile/formats.js). The verdicts below are ajv
  -- 6.15's, run in node; they are not the RFCs' (2021-02-29 is a date,
  -- te..st@example.com an e-mail, 10.0.0.1 no url).
  local FORMATS = {
    ["date"] = {
      { "2020-01-01", true },
      { "2021-02-29", true },
      { "2020-19-39", true },
      { "2020-20-01", false },
      { "2020-01-40", false },
      { "2020-1-01", false },
      { "2020-01-01\n", false },
      { "\u{662}\u{660}\u{662}\u{660}-01-01", false },
    },
    ["time"] = {
      { "12:00:00", true },
      { "29:59:59z", true },
      { "23:59:60", true },
      { "22:59:60Z", false },
      { "12:00:00+0100", true },
      { "12:00:00+01", true },
      { "12:00:00.5Z", true },
      { "30:00:00", false },
      { "12:60:00", false },
      { "12:00:00 Z", false },
      { "12:00:00+1", false },
    },
    ["date-time"] = {
      { "1963-06-19T08:30:06.283185Z", true },
      { "1963-06-19t08:30:06z", true },
      { "1963-06-19 08:30:06Z", true },
      { "1963-06-19\u{a0}08:30:06Z", true },
      { "1963-06-19\u{2028}08:30:06+01", true },
      { "1963-06-19T08:30:06", false },
      { "1963-06-19x08:30:06Z", false },
      { "1963-06-19\u{180e}08:30:06Z", false },
      { "2021-02-30T29:59:59+9999", true },
    },
    ["uri"] = {
      { "http://foo.bar/?baz=qux#quux", true },
      { "//foo.bar/", false },
      { "a:", true },
      { "x:\\y", true },
      { "http://\u{fc}.de", true },
      { "HTTP+S.x-y:z", true },
      { "http://a b", false },
      { "http://a\u{3000}b", false },
      { "1a:b", false },
    },
    ["uri-reference"] = {
      { "../a?b#c", true },
      { "\\\\WINDOWS\\fileshare", false },
      { "a\\b", true },
      { "#a#b", true },
      { "#a\\b", false },
      { "", true },
      { "a b", false },
      { "\u{e9}", true },
    },
    ["uri-template"] = {
      { "http://example.com/{term:1}/{term}", true },
      { "{+a}", true },
      { "{%41,B*}", true },
      { "\u{e9}{a}", true },
      { "{}", false },
      { "{a.b}", false },
      { "'", false },
      { "{a:10000}", false },
      { "%2", false },
    },
    ["url"] = {
      { "http://a.com", true },
      { "https://user:pw@ex.ample.co:8080/p?q#f", true },
      { "ftp://1.2.3.4/", true },
      { "HTTPS://A.BC", true },
      { "http\u{17f}://a.bc", true },
      { "http://\u{e9}\u{fc}.de", true },
      { "http://172.160.0.1", true },
      { "http://10.0.0.1", false },
      { "http://172.16.0.1", false },
      { "http://localhost:8080/", false },
      { "http://a.bc?x", false },
      { "http://a.\u{1f600}b", false },
      { "http://a.bc/ x", false },
      { "mailto:x@y.z", false },
      { "http://a.b", false },
      { "http://a.b/\237\176\128", true },
    },
    ["email"] = {
      { "joe.bloggs@example.com", true },
      { "te..st@example.com", true },
      { ".a@b", true },
      { "A@B.C", true },
      { "a@-b.c", false },
      { "a@b.", false },
      { "\u{e9}@b.c", false },
      { "\"a b\"@c.d", false },
      { "a@" .. ("x"):rep(64), false },
    },
    ["hostname"] = {
      { "www.example.com", true },
      { "xn--X", true },
      { "a.", true },
      { "XN--9N2BP8Q.com", true },
      { ("x"):rep(63), true },
      { (("a"):rep(62) .. "."):rep(4) .. "a.", true },    -- 254, with the final dot
      { "-bad.example", false },
      { "a..b", false },
      { "a_b", false },
      { "\u{e9}.de", false },
      { ("x"):rep(64), false },
      { (("a"):rep(62) .. "."):rep(5):sub(1, 254), false },   -- 254, without
    },
    ["ipv4"] = {
      { "192.168.0.1", true },
      { "192.168.0.01", true },
      { "010.001.000.255", true },
      { "256.1.1.1", false },
      { "1.2.3", false },
      { "1.2.3.4\n", false },
      { "0000.1.1.1", false },
    },
    ["ipv6"] = {
      { "::ffff:192.168.0.1", true },
      { "fe80::1%eth0", true },
      { " ::1 ", true },
      { "::1%a\n", true },
      { "\u{3000}::1\u{feff}", true },
      { "1:2:3:4:5:6:7::", true },
      { "ABCD::EF", true },
      { "1::2::3", false },
      { "::1%", false },
      { "::1%\na", false },
      { "::ffff:01.2.3.4", false },
    },
    ["json-pointer-uri-fragment"] = {
      { "#/a%20b", true },
      { "#/~0%41", true },
      { "#/A", true },
      { "#", true },
      { "#/%~0ab", false },
      { "#/\u{e9}", false },
      { "#a", false },
    },
  }
  for _, name in ipairs { "date", "time", "date-time", "uri", "uri-reference", "uri-template",
                          "url", "email", "hostname", "ipv4", "ipv6", "json-pointer-uri-fragment" } do
    it(name .. " as ajv 6 has it", function()
      for _, c in ipairs(FORMATS[name]) do
        local ok, errs = check({ format = name }, c[1])
        assert(ok == c[2], ("format %s, %q: ajv 6 says %s"):format(name, c[1], tostring(c[2])))
        if not ok then
          assert.are.same({ { "", "format", 'must match format "' .. name .. '"' } },
                          { { errs[1].path, errs[1].keyword, errs[1].message } })
          assert.are.equal(1, #errs)
        end
      end
      valid({ format = name }, 12)
    end)
  end

  it("uuid, json-pointer, relative-json-pointer and regex as ajv 6 has them", function()
    local cases = {
      { "json-pointer", "/foo/bar~0~1", "/foo/bar~" },
      { "relative-json-pointer", "0#", "01/a" },
      { "regex", "([abc])+\\s+$", "^(abc]" },
      { "regex", "a\\\\Z", "a\\Z" },         -- ajv 6 refuses \Z after anything but a backslash
      { "uuid", "URN:UUID:2EB8AA08-AA98-11EA-B4AA-73B441D16380", "2eb8aa08-aa98-11ea-b4aa" },
    }
    for _, c in ipairs(cases) do
      valid({ format = c[1] }, c[2])
      invalid({ format = c[1] }, c[3], { "", "format", 'must match format "' .. c[1] .. '"' })
      valid({ format = c[1] }, 12)
    end
  end)

  -- ajv 6 throws 'unknown format "..." is used in schema' at compile, so
  -- the page refuses every call; we let the value through (formats.lua).
  it("ignores formats ajv 6 does not know, those of ajv-formats included, and checks no numbers", function()
    for _, name in ipairs { "duration", "iso-time", "iso-date-time", "byte", "int32", "int64",
                            "float", "double", "idn-email", "iri", "no-such-format" } do
      valid({ format = name }, "not a " .. name)
      valid({ format = name }, 2147483648.5)
    end
  end)
end)

describe("arrays", function()
  it("items (one schema) applies to every item", function()
    local s = { items = { type = "integer" } }
    valid(s, A { 1, 2, 3 })
    valid(s, { 1, 2 })                 -- a plain sequence is an array
    valid(s, A {})
    invalid(s, A { 1, "x", 3 }, { "/1", "type", "must be integer" })
    valid(s, { a = "x" })              -- not an array: items does not apply
  end)

  it("items (tuple) and additionalItems", function()
    local s = { items = A { { type = "integer" }, { type = "string" } }, additionalItems = false }
    valid(s, A { 1, "a" })
    valid(s, A { 1 })
    invalid(s, A { "a", 1 }, { "/0", "type", "must be integer" }, { "/1", "type", "must be string" })
    invalid(s, A { 1, "a", true }, { "", "additionalItems", "must NOT have more than 2 items" })
    local s2 = { items = A { { type = "integer" } }, additionalItems = { type = "boolean" } }
    valid(s2, A { 1, true, false })
    invalid(s2, A { 1, true, 3 }, { "/2", "type", "must be boolean" })
    valid({ additionalItems = false }, A { 1, 2 })  -- without tuple items it does nothing
  end)

  it("contains", function()
    local s = { contains = { minimum = 5 } }
    valid(s, A { 1, 7 })
    invalid(s, A { 1, 2 }, { "", "contains", "must contain at least 1 valid item(s)" })
    invalid(s, A {})
    invalid(s, {}, { "", "contains", "must contain at least 1 valid item(s)" })
    valid(s, { a = 1 })
  end)

  it("maxItems, minItems", function()
    invalid({ maxItems = 2 }, A { 1, 2, 3 }, { "", "maxItems", "must NOT have more than 2 items" })
    invalid({ minItems = 1 }, A {}, { "", "minItems", "must NOT have fewer than 1 items" })
    invalid({ minItems = 1 }, {})      -- a plain {} is also an empty array
    valid({ minItems = 1 }, A { 0 })
  end)

  it("uniqueItems compares deeply", function()
    local s = { uniqueItems = true }
    valid(s, A { 1, 2, "1", true, null, A { 1 }, { a = 1 } })
    invalid(s, A { 1, 2, 1.0 }, { "", "uniqueItems",
      "must NOT have duplicate items (items ## 2 and 0 are identical)" })
    invalid(s, A { { a = A { 1 } }, { a = A { 1 } } })
    valid(s, A { A { 1, 2 }, A { 2, 1 } })
    valid(s, A { {}, A {} })            -- {} is sent as an object, [] as an array
    valid({ uniqueItems = false }, A { 1, 1 })
    local big = {}
    for i = 1, 100 do big[i] = i end
    valid(s, A(big))
    big[100] = 50
    invalid(s, A(big), { "", "uniqueItems",
      "must NOT have duplicate items (items ## 99 and 49 are identical)" })
    big[100] = { x = 1 }
    big[60] = { x = 1 }
    invalid(s, A(big))
  end)
end)

describe("objects", function()
  it("properties and required", function()
    local s = { type = "object", properties = { qty = { type = "integer", minimum = 1 } },
                required = A { "qty", "sku" } }
    valid(s, { qty = 3, sku = "x" })
    invalid(s, { qty = 0, sku = "x" }, { "/qty", "minimum", "must be >= 1" })
    invalid(s, { qty = 3 }, { "", "required", "must have required property 'sku'" })
    invalid(s, {}, { "", "required", "must have required property 'qty'" },
      { "", "required", "must have required property 'sku'" })
    valid(s, { qty = 1, sku = null })  -- null is present
  end)

  it("paths are JSON pointers with ~0 and ~1", function()
    local s = { properties = { ["a/b"] = { properties = { ["c~d"] = { items = { type = "string" } } } } } }
    invalid(s, { ["a/b"] = { ["c~d"] = A { "x", 1 } } }, { "/a~1b/c~0d/1", "type", "must be string" })
  end)

  it("additionalProperties false, or a schema", function()
    local s = { properties = { a = true }, additionalProperties = false }
    valid(s, { a = 1 })
    local errs = invalid(s, { a = 1, b = 2 },
      { "", "additionalProperties", "must NOT have additional properties" })
    assert.are.equal("b", errs[1].property)
    valid({ additionalProperties = { type = "string" } }, { x = "y" })
    invalid({ additionalProperties = { type = "string" } }, { x = 1 },
      { "/x", "type", "must be string" })
  end)

  it("patternProperties, with additionalProperties", function()
    local s = { patternProperties = { ["^x-"] = { type = "string" } },
                properties = { id = { type = "integer" } }, additionalProperties = false }
    valid(s, { id = 1, ["x-a"] = "b" })
    invalid(s, { ["x-a"] = 1 }, { "/x-a", "type", "must be string" })
    invalid(s, { other = 1 }, { "", "additionalProperties", "must NOT have additional properties" })
    valid({ patternProperties = { ["^\\u00c9"] = { type = "integer" } } }, { ["\u{c9}t\u{e9}"] = 1, abc = "x" })
    invalid({ patternProperties = { ["^\\u00c9"] = { type = "integer" } } }, { ["\u{c9}t\u{e9}"] = "x" })
    -- a class of an emoji's two units holds neither the emoji nor its halves twice
    valid({ patternProperties = { ["^[\u{1F432}]$"] = { type = "integer" } } }, { ["\u{1F432}"] = "x" })
    invalid({ patternProperties = { ["^[\u{1F432}]$"] = { type = "integer" } } }, { ["\xED\xA0\xBD"] = "x" })
  end)

  it("propertyNames", function()
    local s = { propertyNames = { maxLength = 3 } }
    valid(s, { abc = 1 })
    invalid(s, { abcd = 1 }, { "", "propertyNames",
      "property name 'abcd' is invalid: must NOT have more than 3 characters" })
  end)

  it("dependencies, array and schema forms", function()
    local s = { dependencies = { card = A { "billing" }, gift = { required = A { "to" } } } }
    valid(s, { card = 1, billing = 2 })
    valid(s, { billing = 2 })
    invalid(s, { card = 1 }, { "", "dependencies", "must have property billing when property card is present" })
    invalid(s, { gift = true }, { "", "required", "must have required property 'to'" })
    valid(s, { gift = true, to = "x" })
  end)

  it("maxProperties, minProperties", function()
    invalid({ maxProperties = 1 }, { a = 1, b = 2 }, { "", "maxProperties", "must NOT have more than 1 properties" })
    invalid({ minProperties = 1 }, {}, { "", "minProperties", "must NOT have fewer than 1 properties" })
    valid({ minProperties = 1 }, { a = 1 })
  end)

  it("keys and values that are data, not methods", function()
    local s = { properties = { __index = { type = "string" }, ["\"]]"] = { type = "integer" } },
                additionalProperties = false }
    valid(s, { __index = "x", ["\"]]"] = 1 })
    invalid(s, { __index = 1 }, { "/__index", "type", "must be string" })
  end)

  it("an empty plain table gets both array and object keywords", function()
    invalid({ required = A { "a" } }, {}, { "", "required", "must have required property 'a'" })
    valid({ required = A { "a" } }, A {})     -- dt.array{} is only an array
    valid({ type = "object", properties = { a = { type = "string" } } }, {})
  end)
end)

describe("combinations", function()
  it("allOf", function()
    local s = { allOf = A { { type = "integer" }, { minimum = 3 } } }
    valid(s, 4)
    invalid(s, 2, { "", "minimum", "must be >= 3" })
    invalid(s, 2.5, { "", "type", "must be integer" }, { "", "minimum", "must be >= 3" })
  end)

  it("anyOf", function()
    local s = { anyOf = A { { type = "string" }, { type = "null" } } }
    valid(s, "x")
    valid(s, null)
    invalid(s, 1, { "", "type", "must be string" }, { "", "type", "must be null" },
      { "", "anyOf", "must match a schema in anyOf" })
  end)

  it("oneOf", function()
    local s = { oneOf = A { { type = "integer" }, { minimum = 2 } } }
    valid(s, 1)
    valid(s, 2.5)
    invalid(s, 3, { "", "oneOf", "must match exactly one schema in oneOf" })
    invalid(s, 1.5, { "", "type", "must be integer" }, { "", "minimum", "must be >= 2" },
      { "", "oneOf", "must match exactly one schema in oneOf" })
  end)

  it("not", function()
    valid({ ["not"] = { type = "string" } }, 1)
    invalid({ ["not"] = { type = "string" } }, "x", { "", "not", "must NOT be valid" })
  end)

  it("if, then, else", function()
    local s = { ["if"] = { properties = { kind = { const = "card" } } },
                ["then"] = { required = A { "number" } },
                ["else"] = { required = A { "iban" } } }
    valid(s, { kind = "card", number = "1" })
    valid(s, { kind = "bank", iban = "1" })
    invalid(s, { kind = "card" }, { "", "required", "must have required property 'number'" },
      { "", "if", 'must match "then" schema' })
    invalid(s, { kind = "bank" }, { "", "required", "must have required property 'iban'" },
      { "", "if", 'must match "else" schema' })
    valid({ ["then"] = false }, 1)              -- then without if does nothing
    valid({ ["if"] = true, ["else"] = false }, 1)
  end)

  it("boolean schemas", function()
    valid(true, "anything")
    invalid(false, 1, { "", "false schema", "boolean schema is false" })
    invalid({ properties = { a = false } }, { a = 1 }, { "/a", "false schema", "boolean schema is false" })
  end)

  it("collects every error in one call, with schema paths", function()
    local s = { type = "object", properties = { items = { type = "array", items = {
      type = "object", properties = { qty = { type = "integer", minimum = 1 } } } } },
      required = A { "id" } }
    local errs = invalid(s, { items = A { { qty = 0 }, { qty = "x" } } },
      { "", "required", "must have required property 'id'" },
      { "/items/0/qty", "minimum", "must be >= 1" },
      { "/items/1/qty", "type", "must be integer" })
    assert.are.equal("#/required", errs[1].schema_path)
    assert.are.equal("#/properties/items/items/properties/qty/minimum", errs[2].schema_path)
  end)
end)

describe("$ref", function()
  it("into definitions, with siblings ignored (draft-07)", function()
    local s = { definitions = { pos = { type = "integer", minimum = 1 } },
                properties = { qty = { ["$ref"] = "#/definitions/pos", maximum = 0 } } }
    valid(s, { qty = 5 })
    local errs = invalid(s, { qty = 0 }, { "/qty", "minimum", "must be >= 1" })
    assert.are.equal("#/definitions/pos/minimum", errs[1].schema_path)
  end)

  -- ajv 6 (extendRefs "ignore", as Chrome DevTools for agents has it)
  -- ignores every keyword beside a $ref but `type`, which it checks first
  -- when it is an array, integer, boolean or null, or when no keyword of
  -- its group (minLength for string, multipleOf for number, ...) stands
  -- beside it. Each string below is what ajv 6.15 (allErrors) answers, run
  -- in node, for "x", 5, 0, 2.5, true, null, [] and {"b": 1}: ok, or the
  -- keywords of its errors.
  it("checks a type beside it as ajv 6 does", function()
    local values = { "x", 5, 0, 2.5, true, null, A {}, { b = 1 } }
    local cases = {
      { { type = "string" }, "ok type type+minimum type type type type type" },
      { { type = "string", minLength = 5 }, "ok ok minimum ok ok ok ok ok" },
      { { type = "string", format = "email" }, "ok ok minimum ok ok ok ok ok" },
      { { type = A { "string" }, maxLength = 5 }, "ok ok minimum ok ok ok ok ok" },
      { { type = A { "string", "null" }, minLength = 5 }, "ok type type+minimum type type ok type type" },
      { { type = "integer", maximum = 0 }, "type ok minimum type type type type type" },
      { { type = "boolean" }, "type type type+minimum type ok type type type" },
      { { type = "null", minLength = 1 }, "type type type+minimum type type ok type type" },
      { { type = "number", multipleOf = 2 }, "ok ok minimum ok ok ok ok ok" },
      { { type = "number", minLength = 2 }, "type ok minimum ok type type type type" },
      { { type = "object", additionalProperties = false }, "ok ok minimum ok ok ok ok ok" },
      { { type = "array" }, "type type type+minimum type type type ok type" },
      { { maxLength = 0 }, "ok ok minimum ok ok ok ok ok" },
    }
    for _, c in ipairs(cases) do
      local s = { definitions = { a = { minimum = 1 } }, ["$ref"] = "#/definitions/a" }
      for k, v in pairs(c[1]) do s[k] = v end
      local i = 0
      for want in c[2]:gmatch("%S+") do
        i = i + 1
        local ok, errs = check(s, values[i])
        local got = {}
        for j, e in ipairs(ok and {} or errs) do got[j] = e.keyword end
        assert.are.equal(want, ok and "ok" or table.concat(got, "+"),
                         json.encode(c[1]) .. " with " .. json.encode(values[i]))
      end
    end
    local errs = invalid({ definitions = { a = { minimum = 1 } },
                           properties = { p = { ["$ref"] = "#/definitions/a", type = "boolean" } } },
                         { p = 0 }, { "/p", "type", "must be boolean" }, { "/p", "minimum", "must be >= 1" })
    assert.are.equal("#/properties/p/type", errs[1].schema_path)
    assert.are.equal("#/definitions/a/minimum", errs[2].schema_path)
  end)

  it("JSON pointers with ~0, ~1 and percent-escapes", function()
    local s = { definitions = { ["a/b"] = { type = "integer" }, ["c~d"] = { type = "string" },
                                ["e%f"] = { type = "null" } },
                properties = { x = { ["$ref"] = "#/definitions/a~1b" }, y = { ["$ref"] = "#/definitions/c~0d" },
                               z = { ["$ref"] = "#/definitions/e%25f" } } }
    valid(s, { x = 1, y = "s", z = null })
    invalid(s, { x = "1" })
    invalid(s, { y = 1 })
    invalid(s, { z = 1 })
  end)

  -- What ajv 6.15's getJsonPointer does, checked against it (tools/differential):
  -- each token decoded on its own, empty tokens skipped, a $ref on the way
  -- followed, decodeURIComponent's refusals kept.
  it("JSON pointers as ajv 6 reads them: token by token, empty tokens skipped", function()
    local function p(name, ref) return { properties = { [name] = { type = "string" }, b = { ["$ref"] = ref } } } end
    invalid(p("a/b", "#/properties/a%2Fb"), { b = 1 }, { "/b", "type", "must be string" })   -- a "/" in the name
    valid(p("a/b", "#/properties/a%2Fb"), { b = "x" })
    invalid(p("x", "#/properties/x/"), { b = 1 })
    invalid(p("x", "#//properties//x"), { b = 1 })
    valid({ properties = { b = { ["$ref"] = "#/properties/" } } }, { b = 1 })   -- the properties object: no keyword of ours
    -- but a member "" is named by an empty token (the draft-07 suite; ajv 6 skips it even then)
    invalid(p("", "#/properties/"), { b = 1 }, { "/b", "type", "must be string" })
    invalid(p("x", "#/properties/%78"), { b = 1 })
    invalid(p("x%", "#/properties/x%25"), { b = 1 })
    valid({ items = A { { type = "integer" }, { ["$ref"] = "#/items/0" } } }, A { 1, 2 })
    bad_schema({ items = A { { type = "integer" }, { ["$ref"] = "#/items/01" } } }, "points at nothing")
    bad_schema({ items = A { { type = "integer" }, { ["$ref"] = "#/items/-0" } } }, "points at nothing")
    bad_schema(p("x", "#//"), "points at nothing")      -- back at the root
  end)

  it("a $ref met on the way of a pointer is followed first, as ajv 6 does", function()
    local s = { definitions = { A = { ["$ref"] = "#/definitions/B" }, B = { items = { type = "string" } } },
                properties = { b = { ["$ref"] = "#/definitions/A/items" } } }
    invalid(s, { b = 1 }, { "/b", "type", "must be string" })
    valid(s, { b = "x" })
    -- but not under properties or definitions, whose members are names
    local t = { definitions = { ["$ref"] = { type = "integer" } }, properties = { b = { ["$ref"] = "#/definitions/$ref" } } }
    invalid(t, { b = "x" }, { "/b", "type", "must be integer" })
    -- a pointer that goes round through $refs (ajv 6 overflows its stack)
    bad_schema({ definitions = { A = { ["$ref"] = "#/definitions/A" } },
                 properties = { b = { ["$ref"] = "#/definitions/A/items" } } })
    bad_schema({ properties = { b = { ["$ref"] = "#/properties/b/type" } } }, "goes round")
  end)

  -- ajv 6 does not compile a keyword's schemas where one without rules
  -- makes the keyword do nothing: a $ref there that points nowhere is taken
  -- (checked against ajv 6.15 with tools/differential's copy of it).
  it("what ajv 6 never compiles may hold a $ref that points nowhere", function()
    local nope = { ["$ref"] = "nope.json" }
    for _, s in ipairs {
      { anyOf = A { nope, {} } }, { anyOf = A { nope, { description = "x" } } }, { anyOf = A { nope, true } },
      { ["if"] = nope }, { ["if"] = nope, ["then"] = { description = "x" } }, { ["then"] = nope },
      { definitions = { a = nope } }, { additionalItems = nope }, { properties = { x = { ["then"] = nope } } },
      { definitions = { a = { ["$ref"] = "#/definitions/a" } } },
    } do
      valid(s, 5)
      valid(s, "x")
    end
    -- and refuses it wherever ajv 6 compiles it
    for _, s in ipairs {
      { anyOf = A { nope, { ["$comment"] = "x" } } }, { anyOf = A { nope, { type = "string" } } },
      { ["if"] = nope, ["then"] = { type = "string" } }, { oneOf = A { nope, {} } }, { allOf = A { nope, {} } },
      { ["not"] = nope }, { contains = nope }, { items = A { nope } },
      { definitions = { a = nope }, properties = { x = { ["$ref"] = "#/definitions/a" } } },
    } do
      bad_schema(s, "cannot resolve")
    end
  end)

  it("a pointer escape decodeURIComponent refuses makes the schema malformed", function()
    for _, ref in ipairs({ "#/properties/%", "#/properties/%zz", "#/properties/%C3", "#/properties/%C0%80",
                           "#/properties/%ED%A0%80", "#/properties/%E9", "#/properties/%F4%90%80%80" }) do
      bad_schema({ properties = { x = { type = "string" }, b = { ["$ref"] = ref } } }, "URI malformed")
    end
    -- and what it decodes is the name: é written %C3%A9
    invalid({ properties = { ["é"] = { type = "string" }, b = { ["$ref"] = "#/properties/%C3%A9" } } }, { b = 1 },
            { "/b", "type", "must be string" })
  end)

  -- the draft-07 suite's ref.json, "$ref to boolean schema false": the
  -- pointer's target is the value false, which is a schema, not a miss
  it("to a boolean schema: false fails every value, true passes it", function()
    for _, v in ipairs({ 1, "x", null, A {}, { a = 1 } }) do
      local errs = invalid({ allOf = A { { ["$ref"] = "#/definitions/bool" } }, definitions = { bool = false } }, v,
                           { "", "false schema", "boolean schema is false" })
      assert.are.equal("#/definitions/bool", errs[1].schema_path)
      valid({ allOf = A { { ["$ref"] = "#/definitions/bool" } }, definitions = { bool = true } }, v)
      invalid({ properties = { a = { ["$ref"] = "#/definitions/no" } }, definitions = { no = false } }, { a = v },
              { "/a", "false schema", "boolean schema is false" })
    end
    -- front ends read the target as the validator does (present/schema.lua)
    assert.is_false(schema.local_target({ definitions = { bool = false } }, "#/definitions/bool"))
    assert.is_nil(schema.local_target({ definitions = { bool = false } }, "#/definitions/bool/x"))
  end)

  it("into tuple items by index", function()
    local s = { items = A { { type = "integer" }, { ["$ref"] = "#/items/0" } } }
    valid(s, A { 1, 2 })
    invalid(s, A { 1, "x" }, { "/1", "type", "must be integer" })
  end)

  it("recursive: a tree", function()
    local s = { type = "object", properties = {
      value = { type = "number" }, children = { type = "array", items = { ["$ref"] = "#" } } },
      additionalProperties = false }
    valid(s, { value = 1, children = A { { value = 2, children = A { { value = 3 } } } } })
    invalid(s, { value = 1, children = A { { value = 2, children = A { { value = "x" } } } } },
      { "/children/0/children/0/value", "type", "must be number" })
  end)

  it("circular between definitions", function()
    local s = { definitions = {
      a = { type = "object", properties = { b = { ["$ref"] = "#/definitions/b" } } },
      b = { type = "object", properties = { a = { ["$ref"] = "#/definitions/a" } } } },
      ["$ref"] = "#/definitions/a" }
    valid(s, { b = { a = { b = {} } } })
    invalid(s, { b = { a = { b = 1 } } }, { "/b/a/b", "type", "must be object" })
  end)

  it("refuses a cycle that never reaches a value", function()
    bad_schema({ ["$ref"] = "#" }, "circular %$ref")
    bad_schema({ definitions = { a = { ["$ref"] = "#/definitions/b" }, b = { ["$ref"] = "#/definitions/a" } },
                 ["$ref"] = "#/definitions/a" }, "circular %$ref")
  end)

  it("stops a cycle it cannot see at compile time, instead of looping", function()
    -- the cycle root -> b -> root is found first through `properties`,
    -- which consumes data; through allOf it never does
    local s = { definitions = { b = { allOf = A { { ["$ref"] = "#" } } } },
                properties = { x = { ["$ref"] = "#/definitions/b" } },
                allOf = A { { ["$ref"] = "#/definitions/b" } } }
    for _, closures in ipairs { false, true } do
      local ok, err = pcall(schema.compile(s, { closures = closures }), 1)
      assert.is_false(ok)
      assert.are.equal("bad_argument", err.code)
      assert.matches("recursion deeper than %d+ levels", err.message)
    end
  end)

  it("stops on a cyclic Lua value instead of looping", function()
    local v = {}
    v.next = v
    local s = { properties = { next = { ["$ref"] = "#" } } }
    local ok, err = pcall(schema.compile(s), v)
    assert.is_false(ok)
    assert.are.equal("bad_argument", err.code)
  end)

  it("$id base URIs and location-independent identifiers", function()
    local s = { ["$id"] = "http://example.com/root.json",
                definitions = {
                  A = { ["$id"] = "#foo", type = "integer" },
                  B = { ["$id"] = "other.json", definitions = { X = { ["$id"] = "#bar", type = "string" } } } },
                properties = { a = { ["$ref"] = "#foo" }, b = { ["$ref"] = "other.json#bar" },
                               c = { ["$ref"] = "http://example.com/root.json#/definitions/A" } } }
    valid(s, { a = 1, b = "x", c = 2 })
    invalid(s, { a = "1" })
    invalid(s, { b = 1 })
    invalid(s, { c = "x" })
  end)

  it("an $id inside const or enum is not an identifier", function()
    local s = { definitions = { c = { const = { ["$id"] = "#x" } } }, ["$ref"] = "#x" }
    bad_schema(s, "points at nothing")
  end)

  it("remote references come from opts.loader (a table or a function)", function()
    local remote = { definitions = { pos = { type = "integer", minimum = 1 } } }
    local s = { properties = { n = { ["$ref"] = "http://x/defs.json#/definitions/pos" } } }
    valid(s, { n = 1 }, { loader = { ["http://x/defs.json"] = remote } })
    assert.is_false((check(s, { n = 0 }, { loader = { ["http://x/defs.json"] = remote } })))
    local asked = {}
    local function loader(uri) asked[#asked + 1] = uri; return remote end
    valid(s, { n = 1 }, { loader = loader })
    assert.are.equal("http://x/defs.json", asked[1])
    bad_schema(s, 'no schema for "http://x/defs.json"')
    bad_schema(s, "no schema", { loader = function() return nil end })
    bad_schema(s, "loader", { loader = 5 })
  end)

  it("relative references in a remote document resolve against its URI", function()
    local docs = {
      ["http://x/a/one.json"] = { properties = { two = { ["$ref"] = "two.json" } } },
      ["http://x/a/two.json"] = { type = "string" },
    }
    local s = { ["$ref"] = "http://x/a/one.json" }
    valid(s, { two = "y" }, { loader = docs })
    assert.is_false((check(s, { two = 1 }, { loader = docs })))
  end)

  it("knows the draft-07 meta-schema", function()
    local s = { ["$ref"] = "http://json-schema.org/draft-07/schema#" }
    valid(s, { type = "string", minLength = 1 })
    invalid(s, { minLength = -1 })
    invalid(s, { type = "strnig" })
  end)

  it("a $ref that points at nothing is a schema error", function()
    bad_schema({ ["$ref"] = "#/definitions/nope" }, "invalid schema at #: %$ref \"#/definitions/nope\" points at nothing")
    bad_schema({ properties = { a = { ["$ref"] = 5 } } }, "invalid schema at #/properties/a/%$ref: must be a string")
  end)
end)

describe("x-mcp-type HTMLElement", function()
  local s = { type = "object", properties = { target = { ["x-mcp-type"] = "HTMLElement", type = "object" } },
              required = A { "target" } }

  it("accepts an Element", function()
    valid(s, { target = element() })
  end)

  it("rejects anything else there with a clear message", function()
    invalid(s, { target = { backend_node_id = 7 } },
      { "/target", "x-mcp-type", "must be an element reference (an Element a tool returned)" })
    invalid(s, { target = "div#cart" })
    invalid(s, { target = null })
  end)

  it("an Element is accepted wherever the schema accepts an object", function()
    -- chrome-devtools-mcp's own tests send an element as {uid: ...}, which
    -- passes {type: "object"}; the page receives the element
    valid({ properties = { a = { type = "object" } } }, { a = element() })
    valid({ properties = { a = { type = A { "object", "null" } } } }, { a = element() })
    valid({ properties = { a = { type = "object", required = A { "uid" } } } }, { a = element() })
    valid({ properties = { a = { anyOf = A { { type = "string" }, { type = "object" } } } } }, { a = element() })
    valid({ items = { type = "object" } }, A { element(), element() })
    valid({ additionalProperties = { type = "object" } }, { x = element() })
    invalid({ properties = { a = { type = "array" } } }, { a = element() },
      { "/a", "type", "must be array" })
    invalid({ properties = { a = { type = "string" } } }, { a = element() },
      { "/a", "type", "must be string" })
    invalid({ properties = { a = { enum = A { 1 } } } }, { a = element() })
  end)

  it("is_element is the one check", function()
    assert.is_true(schema.is_element(element()))
    assert.is_false(schema.is_element({}))
    assert.is_false(schema.is_element("x"))
  end)
end)

describe("malformed schemas raise bad_argument naming the location", function()
  local cases = {
    { 5, "a schema must be a table or a boolean" },
    { { type = "strnig" }, "invalid schema at #/type: unknown type \"strnig\"" },
    { { type = A {} }, "invalid schema at #/type: must not be empty" },
    { { type = A { "string", "string" } }, "#/type: must not have duplicate items" },
    { { properties = { qty = { minimum = "1" } } }, "invalid schema at #/properties/qty/minimum: must be a number" },
    { { maxLength = -1 }, "#/maxLength: must be a non%-negative integer" },
    { { minItems = 1.5 }, "#/minItems: must be a non%-negative integer" },
    { { multipleOf = 0 }, "#/multipleOf: must be greater than 0" },
    { { pattern = "^(abc]" }, "#/pattern: invalid regular expression" },
    { { pattern = "(?<=a+)b" }, "#/pattern: unsupported regular expression" },
    { { patternProperties = { ["("] = true } }, "#/patternProperties/%(: invalid regular expression" },
    -- ajv checks the whole schema against the draft-07 meta-schema before
    -- it compiles it, keywords beside a $ref (which it then ignores)
    -- included, and $ref and $id as URI references (ajv 6.15 refuses each)
    { { ["$ref"] = "#/definitions/a", minLength = -1, definitions = { a = true } }, "#/minLength: must be >= 0" },
    { { ["$ref"] = "#/definitions/a", properties = { x = { type = "strnig" } }, definitions = { a = true } },
      "#/properties/x/type: must be equal to one of the allowed values" },
    { { ["$ref"] = "#/definitions/a", required = "x", definitions = { a = true } }, "#/required: must be array" },
    { { ["$ref"] = "#/definitions/a b", definitions = { ["a b"] = true } }, "#/%$ref: must match format \"uri%-reference\"" },
    { { ["$id"] = "a b" }, "#/%$id: must match format \"uri%-reference\"" },
    { { readOnly = "yes" }, "#/readOnly: must be a boolean" },
    -- ajv 6 checks pattern and patternProperties' names with its format
    -- "regex": a \Z after anything but a backslash is refused
    { { pattern = "^abc\\Z" }, "#/pattern: must match format \"regex\": \\Z is no anchor" },
    { { patternProperties = { ["a\\Z"] = true } }, "#/patternProperties/a\\Z: must match format \"regex\"" },
    { { required = "a" }, "#/required: must be an array" },
    { { required = A { "a", "a" } }, "#/required: must not have duplicate items" },
    { { required = A { 1 } }, "#/required/0: must be a string" },
    { { enum = "a" }, "#/enum: must be an array" },
    -- ajv refuses to compile these (its draft-07 meta-schema: enum has
    -- minItems 1 and uniqueItems), so the page refuses every call
    { { enum = A {} }, "#/enum: must not be empty" },
    { { enum = A { 1, "1", 1.0 } }, "#/enum: must not have duplicate items" },
    { { properties = { a = { enum = A { { x = 1, y = A { 2 } }, { y = A { 2.0 }, x = 1 } } } } },
      "#/properties/a/enum: must not have duplicate items" },
    { { enum = A { null, false, null } }, "#/enum: must not have duplicate items" },
    { { allOf = A {} }, "#/allOf: must not be empty" },
    { { anyOf = A { 1 } }, "#/anyOf/0: a schema must be an object or a boolean" },
    { { items = A { true, "x" } }, "#/items/1: a schema must be an object or a boolean" },
    { { ["not"] = 1 }, "#/not: must be a schema" },
    { { properties = A { true } }, "#/properties: must be an object" },
    -- (a definition is compiled when used, as ajv 6 does; the meta-schema check reads all)
    { { definitions = { a = { type = 1 } } }, "#/definitions/a/type: must be equal to one of the allowed values" },
    { { dependencies = { a = A { 1 } } }, "#/dependencies/a/0: must be a string" },
    { { uniqueItems = "yes" }, "#/uniqueItems: must be a boolean" },
    { { format = 1 }, "#/format: must be a string" },
    { { ["$id"] = 1 }, "#/%$id: must be a string" },
    { { description = false }, "#/description: must be a string" },
    { A { 1 }, "invalid schema at #: a schema must be an object or a boolean" },
  }
  for _, c in ipairs(cases) do
    it(c[2], function() bad_schema(c[1], c[2]) end)
  end

  it("rejects bad options", function()
    bad_schema({}, "opts must be a table", 5)
  end)
end)

describe("API", function()
  it("compile returns a validator to reuse", function()
    local v = schema.compile({ type = "integer" })
    assert.is_true(v(1))
    local ok, errs = v("x")
    assert.is_false(ok)
    assert.are.equal("must be integer", errs[1].message)
    assert.is_true(v(2))
  end)

  it("validate compiles once per schema table", function()
    local s = { type = "string" }
    assert.is_true(schema.validate(s, "x"))
    assert.is_false((schema.validate(s, 1)))
    assert.is_true(schema.validate(true, 1))
  end)

  it("refuses what is not its own: format_errors of anything but a check's errors, NaN deadlines", function()
    local function code(f, ...) local ok, e = errors.catch(f, ...); assert.is_false(ok); return e.code end
    for _, bad in ipairs({ { nil }, { "x" }, { { {} } }, { { { path = 1, message = "m" } } } }) do
      assert.are.equal("bad_argument", code(schema.format_errors, bad[1]))
    end
    assert.are.equal("bad_argument", code(schema.format_errors, {}, {}))
    assert.are.equal("", schema.format_errors({}))
    local c = schema.compile({ type = "array" })
    assert.are.equal("bad_argument", code(schema.compile, { type = "string" }, { deadline = 0 / 0 }))
    assert.are.equal("bad_argument", code(c, {}, 0 / 0))
    assert.are.equal("bad_argument", code(schema.shape, c, {}, 0 / 0))
  end)

  it("format_errors gives one line per error", function()
    local _, errs = schema.validate({ properties = { a = { type = "string" } }, required = A { "b" },
                                      additionalProperties = false }, { a = 1, c = 2 })
    local text = schema.format_errors(errs)
    local lines = {}
    for line in text:gmatch("[^\n]+") do lines[#lines + 1] = line end
    table.sort(lines)
    assert.are.equal("(root): must NOT have additional properties ('c') (got 2)", lines[1])
    -- (the object's keys come in table order)
    assert.matches("^%(root%): must have required property 'b' %(got {.*}%)$", lines[2])
    assert.are.equal("/a: must be string (got 1)", lines[3])
    assert.are.equal(3, #lines)
    assert.matches("; ", schema.format_errors(errs, "; "))
  end)

  it("never changes the schema or the value", function()
    local s = { properties = { a = { type = "string" } } }
    local v = { a = "x", b = A { 1 } }
    schema.validate(s, v)
    assert.are.same({ properties = { a = { type = "string" } } }, s)
    assert.are.same({ a = "x", b = A { 1 } }, v)
  end)

  it("allocates nothing when the value is valid", function()
    local v = schema.compile({ type = "object", properties = { a = { type = "string", maxLength = 10 },
      b = { type = "integer", minimum = 0 }, c = { type = "array", items = { type = "boolean" } } },
      required = A { "a" }, additionalProperties = false })
    local value = { a = "x", b = 1, c = A { true, false } }
    assert.is_true(v(value))
    for _ = 1, 5000 do v(value) end   -- LuaJIT: let the traces settle first
    -- LuaJIT may record a trace again (it allocates) during any one round,
    -- when many schemas were compiled before; a validator that allocates
    -- grows the heap in every round, so the smallest growth is the measure
    local least = math.huge
    for _ = 1, 5 do
      collectgarbage()
      collectgarbage("stop")
      local before = collectgarbage("count")
      for _ = 1, 1000 do v(value) end
      least = math.min(least, collectgarbage("count") - before)
      collectgarbage("restart")
    end
    assert.is_true(least < 1, "grew by " .. least .. " KiB")
  end)

  it("copes with big schemas", function()
    local props, value = {}, {}
    for i = 1, 300 do
      props["p" .. i] = { type = "string", pattern = "^a" }
      value["p" .. i] = "abc"
    end
    for _, addl in ipairs { true, false } do
      local s = { type = "object", properties = props, additionalProperties = addl }
      valid(s, value)
      value.p150 = "b"
      invalid(s, value, { "/p150", "pattern", 'must match pattern "^a"' })
      value.p150 = "a"
    end
    -- thousands of required properties: the generated code still loads
    -- (LuaJIT limits the length of a jump), in both of its functions
    local many, names, full = {}, {}, {}
    for i = 1, 3000 do
      many["q" .. i] = { type = "string" }
      names[i] = "q" .. i
      full["q" .. i] = "x"
    end
    for _, addl in ipairs { true, false } do
      local s = { type = "object", properties = many, required = A(names), additionalProperties = addl }
      valid(s, full)
      full.q7 = 1
      full.q8 = nil
      invalid(s, full, { "", "required", "must have required property 'q8'" }, { "/q7", "type", "must be string" })
      full.q7, full.q8 = "x", "x"
    end
    -- each definition uses the next one twice: inlining must not double up
    local defs = {}
    for i = 1, 16 do
      defs["d" .. i] = { type = "object", properties = {
        l = { ["$ref"] = "#/definitions/d" .. (i + 1) }, r = { ["$ref"] = "#/definitions/d" .. (i + 1) } } }
    end
    defs.d17 = { type = "integer" }
    local s = { definitions = defs, ["$ref"] = "#/definitions/d1" }
    local v = { l = { r = { l = {} } } }
    valid(s, v)
    v.l.r.l = "x"
    invalid(s, v, { "/l/r/l", "type", "must be object" })
  end)

  it("uses the core's null and array marker", function()
    assert.are.equal(core.null, null)
    valid({ type = "array" }, setmetatable({}, core.array_mt))
  end)
end)

describe("tables as the codec sends them", function()
  it("a plain table is an array only when its keys are exactly 1..n", function()
    valid({ type = "array" }, { 1, 2 })
    invalid({ type = "array" }, { 1, 2, x = 3 }, { "", "type", "must be array" })
    valid({ type = "object" }, { 1, 2, x = 3 })
    invalid({ type = "array" }, { [1] = 1, [3] = 3 })
    invalid({ uniqueItems = true }, { 1, 1 })
    valid({ uniqueItems = true }, { 1, 1, x = 1 })   -- an object: uniqueItems does not apply
  end)

  it("a table with a metatable is checked raw, as the encoder reads it", function()
    local req = { type = "object", required = { "a" }, properties = { a = { type = "number" } } }
    local inherits = setmetatable({}, { __index = { a = 1 } })
    assert.are.equal("{}", json.encode(inherits))          -- what is sent: no "a"
    invalid(req, inherits, { "", "required", "must have required property 'a'" })
    invalid({ properties = { o = req } }, { o = setmetatable({}, { __index = { a = 1 } }) },
      { "/o", "required", "must have required property 'a'" })
    valid(req, setmetatable({ a = 1 }, { __index = function() return "x" end }))
    local lying = setmetatable({ 1, 2 }, { __len = function() return 9 end,
      __index = function() return "s" end })
    assert.are.equal("[1,2]", json.encode(lying))
    valid({ type = "array", maxItems = 2, items = { type = "number" } }, lying)
    valid({ enum = { { 1, 2 } } }, lying)
    valid({ type = "object", properties = { a = { type = "string" } } },
      setmetatable({ a = "x" }, { __pairs = function() return next, {} end }))
    invalid({ type = "object", properties = { a = { type = "number" } } },
      setmetatable({ a = "x" }, { __pairs = function() return next, {} end }))
    local locked = { __metatable = "locked", __index = { a = 1 } }
    invalid(req, setmetatable({}, locked))
    valid(req, setmetatable({ a = 2 }, locked))
    -- marked arrays and objects and Elements are taken as they are
    valid({ type = "array", maxItems = 0 }, A({}))
    valid({ type = "object" }, element())
  end)

  it("a hole in a marked array is null, as it is sent", function()
    assert.are.equal("[null,null,3]", json.encode(A { nil, null, 3 }))
    valid({ items = { type = { "null", "number" } } }, A { nil, null, 3 })
    valid({ items = { type = "null" } }, A { nil, null })
    valid({ items = { enum = { null } } }, A { nil, null })
    valid({ items = { const = null } }, A { nil, null })
    valid({ items = { { type = "null" }, { type = "number" } } }, A { nil, 2 })    -- a tuple
    valid({ contains = { type = "null" } }, A { nil, 1 })
    invalid({ items = { type = "number" } }, A { nil, 1 }, { "/0", "type", "must be number" })
    invalid({ items = { type = "null" } }, A { nil, 1 }, { "/1", "type", "must be null" })
    invalid({ uniqueItems = true }, A { nil, null },
      { "", "uniqueItems", "must NOT have duplicate items (items ## 1 and 0 are identical)" })
    valid({ enum = { A { nil, 1 } } }, A { null, 1 })
    valid({ enum = { A { null, 1 } } }, A { nil, 1 })
    valid({ enum = A { nil, 1 } }, null)                    -- in the schema too
    -- more than 32 items take another path: a hole, and NaN (equal to nothing)
    local long = A {}
    for i = 1, 40 do long[i] = i end
    long[5] = nil
    valid({ uniqueItems = true }, long)
    long[10] = null
    invalid({ uniqueItems = true }, long,
      { "", "uniqueItems", "must NOT have duplicate items (items ## 9 and 4 are identical)" })
    long[5], long[10] = 0 / 0, 0 / 0
    valid({ uniqueItems = true }, long)
  end)

  it("integer keys of an object are matched as the decimal strings sent", function()
    local s = { properties = { ["2"] = { type = "string" } }, additionalProperties = false }
    valid(s, { [2] = "x" })
    invalid(s, { [2] = 5 }, { "/2", "type", "must be string" })
    invalid(s, { [3] = "x" }, { "", "additionalProperties", "must NOT have additional properties" })
    local many = { additionalProperties = false, properties = {} }
    for i = 1, 20 do many.properties[tostring(i * 10)] = { type = "integer" } end
    valid(many, { [20] = 1, [30] = 2 })
    invalid(many, { [20] = "x" })
    invalid(many, { [21] = 1 })
    -- and by properties, required and dependencies alone (no additionalProperties)
    local mixed = { [1] = 5, a = 1 }
    assert.are.same({ ["1"] = 5, a = 1 }, json.decode(json.encode(mixed)))
    invalid({ properties = { ["1"] = { type = "string" } } }, mixed, { "/1", "type", "must be string" })
    valid({ properties = { ["1"] = { type = "number" } } }, mixed)
    valid({ required = { "1", "a" } }, mixed)
    invalid({ required = { "2" } }, mixed, { "", "required", "must have required property '2'" })
    invalid({ dependencies = { ["1"] = { "b" } } }, mixed,
      { "", "dependencies", "must have property b when property 1 is present" })
    valid({ dependencies = { ["1"] = { "a" }, a = { "1" } } }, mixed)
    invalid({ dependencies = { ["1"] = { required = { "b" } } } }, mixed)
    local props, req = { type = "object", properties = {} }, {}
    for i = 1, 70 do props.properties[tostring(i)] = { type = "integer" }; req[i] = tostring(i) end
    props.required = req                                -- many: the generated code loops
    local full = { x = 0 }
    for i = 1, 70 do full[i] = i end
    valid(props, full)
    full[7] = "x"
    invalid(props, full, { "/7", "type", "must be integer" })
    full[7] = nil
    invalid(props, full, { "", "required", "must have required property '7'" })
    -- keys of 1e15 and more are sent with all their digits, and matched so
    invalid({ properties = { ["1000000000000000"] = { type = "string" } } }, { [1e15] = 5 },
      { "/1000000000000000", "type", "must be string" })
    valid({ propertyNames = { pattern = "^[0-9]+$" } }, { [2 ^ 60] = 1 })
    -- "nan" and "inf" are names (LuaJIT's tonumber reads them as numbers)
    invalid({ required = { "nan" } }, mixed, { "", "required", "must have required property 'nan'" })
    invalid({ required = { "inf" } }, mixed)
    -- a name the encoder would not write for a number stays a name
    valid({ required = { "01" } }, { [1] = 5, a = 1, ["01"] = 2 })
    invalid({ required = { "01" } }, mixed)
    invalid({ required = { "1.0" } }, mixed)
  end)
end)

describe("deep schemas and values: a dt.Error, never Lua's stack overflow", function()
  local function nest(key, n)
    local s = {}
    local t = s
    for _ = 1, n do t[key] = {}; t = t[key] end
    return s
  end

  it("compiles schemas 500 deep and refuses deeper ones, on LuaJIT as on Lua 5.4", function()
    assert.is_function(schema.compile(nest("items", 499)))
    for _, n in ipairs({ 501, 10000, 50000 }) do
      for _, key in ipairs({ "items", "not", "additionalProperties" }) do
        local ok, e = pcall(schema.compile, nest(key, n))
        assert.is_false(ok)
        assert.is_true(errors.is_error(e), tostring(e))
        assert.equal("bad_argument", e.code)
        assert.matches("schemas nested more than 500 deep", e.message)
        assert.is_true(#e.message < 300)                      -- its location is cut short
      end
    end
  end)

  it("counts nesting, not $ref hops: 490 definitions each 4 levels deep, each pointing at the next", function()
    local defs = {}
    for i = 1, 490 do
      defs["d" .. i] = { type = "object", properties = { v = { type = "object", properties = { w = {
        type = "object", properties = { next = i < 490 and { ["$ref"] = "#/definitions/d" .. (i + 1) }
          or { type = "integer" } } } } } } }
    end
    local v = schema.compile({ type = "object", definitions = defs,
      properties = { head = { ["$ref"] = "#/definitions/d1" } } })
    assert.is_true(v({ head = { v = { w = { next = { v = { w = { next = { v = { w = {} } } } } } } } } }))
    local ok, errs = v({ head = { v = { w = { next = { v = 5 } } } } })
    assert.is_false(ok)
    assert.equal("/head/v/w/next/v", errs[1].path)
    -- a circle of $refs alone, met deeper than the compiler follows $refs
    -- at once, is refused as one met at once is
    local deep = { ["$ref"] = "#/definitions/a" }
    for _ = 1, 40 do deep = { type = "object", properties = { x = deep } } end
    bad_schema({ definitions = { a = { ["$ref"] = "#/definitions/b" }, b = { ["$ref"] = "#/definitions/a" } },
      type = "object", properties = { p = deep } }, "circular $ref that never reaches a value")
    local ring = {}
    for i = 1, 100 do ring["r" .. i] = { ["$ref"] = "#/definitions/r" .. (i % 100 + 1) } end
    bad_schema({ definitions = ring, ["$ref"] = "#/definitions/r1" }, "circular $ref that never reaches a value")
  end)

  it("compares values for const, enum and uniqueItems up to JSON's nesting, then refuses", function()
    local function arr(n) local t = A { 1 }; for _ = 1, n do t = A { t } end; return t end
    valid({ const = arr(900) }, arr(900))
    for _, s in ipairs({ { const = arr(5000) }, { enum = { arr(5000) } }, { uniqueItems = true } }) do
      local v = s.uniqueItems and A { arr(5000), arr(5000) } or arr(5000)
      for _, closures in ipairs({ false, true }) do
        local ok, e = pcall(schema.compile(s, { closures = closures }), v)
        assert.is_false(ok)
        assert.is_true(errors.is_error(e), tostring(e))
        assert.equal("bad_argument", e.code)
      end
    end
    local loop = {}
    loop.self = loop                                    -- a table that holds itself
    local ok, e = pcall(schema.compile({ const = { self = { self = {} } } }), loop)
    assert.is_true(ok or (errors.is_error(e) and e.code == "bad_argument"), tostring(e))
  end)
end)

describe("hostile schemas stay bounded (issue 11, item 1)", function()
  -- d_i = {anyOf: [{$ref: d_(i+1)}, {$ref: d_(i+1)}]}: without memo the
  -- work (and the errors) double at each level
  local function doubling(levels, leaf)
    local d = {}
    for i = 0, levels - 1 do
      local r = { ["$ref"] = "#/definitions/d" .. (i + 1) }
      d["d" .. i] = { anyOf = A { r, r } }
    end
    d["d" .. levels] = leaf
    return { definitions = d, ["$ref"] = "#/definitions/d0" }
  end

  -- a format that counts how often the leaf is looked at (and stops the
  -- spec quickly instead of hanging if it is looked at exponentially often)
  local calls
  before_each(function()
    calls = 0
    formats.string["x-spec-count"] = function(v)
      calls = calls + 1
      if calls > 100000 then error("the leaf was checked more than 100000 times") end
      return v == "ok"
    end
  end)
  after_each(function() formats.string["x-spec-count"] = nil end)

  it("26 levels of anyOf over the same $ref: each level looked at once per value", function()
    local s = doubling(26, { format = "x-spec-count" })
    for _, closures in ipairs { false, true } do
      local v = schema.compile(s, { closures = closures })
      calls = 0
      assert.is_true(v("ok"))
      assert.are.equal(1, calls)
      calls = 0
      local ok, errs = v("bad")
      assert.is_false(ok)
      assert.is_true(calls <= 2 * context.MAX_ERRORS + 2, calls .. " looks at the leaf")
      assert.are.equal(context.MAX_ERRORS + 1, #errs)
      assert.are.same({ path = "", keyword = "errors", schema_path = "#",
        message = "more errors were found; only the first " .. context.MAX_ERRORS .. " are listed" },
        errs[#errs])
      local msg = schema.format_errors(errs, "; ")
      assert.is_true(#msg < 8000, #msg .. " characters")
      assert.matches("; %.%.%. and 81 more$", msg)
    end
  end)

  it("the same, entered 40 levels deep (where the compiler follows $refs later)", function()
    local s = doubling(26, { format = "x-spec-count" })
    local wrapped, value = { ["$ref"] = "#/definitions/d0" }, "ok"
    for _ = 1, 40 do
      wrapped = { type = "object", properties = { x = wrapped } }
      value = { x = value }
    end
    wrapped.definitions = s.definitions
    for _, closures in ipairs { false, true } do
      calls = 0
      assert.is_true(schema.compile(wrapped, { closures = closures })(value))
      assert.are.equal(1, calls)
    end
  end)

  it("both engines give the same errors, cut at the same place", function()
    check(doubling(20, { type = "string" }), { a = 1 })
    check(doubling(20, { type = "string" }), "x")
  end)

  it("the same node reached through properties and patternProperties, level after level", function()
    local d = {}
    for i = 0, 29 do
      local r = { ["$ref"] = "#/definitions/d" .. (i + 1) }
      d["d" .. i] = { properties = { a = r }, patternProperties = { ["^a"] = r } }
    end
    d.d30 = { format = "x-spec-count" }
    local s = { definitions = d, ["$ref"] = "#/definitions/d0" }
    local value = {}
    local at = value
    for _ = 1, 29 do at.a = {}; at = at.a end
    at.a = "ok"
    for _, closures in ipairs { false, true } do
      calls = 0
      assert.is_true(schema.compile(s, { closures = closures })(value))
      assert.are.equal(1, calls)
    end
  end)
end)

describe("deadlines (issue 11, items 1 and 9)", function()
  local function timeout_of(fn, ...)
    local ok, err = errors.catch(fn, ...)
    assert.is_false(ok, "expected a timeout")
    assert.are.equal("timeout", err.code)
    return err
  end

  it("compile refuses unknown options and a deadline that is not a number", function()
    bad_schema({}, "unknown option \"dealine\"", { dealine = 1 })
    bad_schema({}, "deadline must be a number", { deadline = "soon" })
    local v = schema.compile({ type = "string" })
    local ok, err = errors.catch(v, "x", "soon")
    assert.is_false(ok)
    assert.are.equal("bad_argument", err.code)
  end)

  it("compiling past the deadline raises timeout, saying what took the time", function()
    local err = timeout_of(schema.compile, { type = "string" }, { deadline = core.now() - 1 })
    assert.are.equal("compiling the inputSchema took longer than the call's timeout", err.message)
    assert.is_function(schema.compile({ type = "string" }, { deadline = core.now() + 60 }))
  end)

  it("the clock is looked at while compiling, not only at the start", function()
    local props = {}
    for i = 1, 50000 do props["p" .. i] = { type = "string", minLength = i } end
    local err = timeout_of(schema.compile, { properties = props }, { deadline = core.now() + 0.001 })
    assert.matches("^compiling the inputSchema", err.message)
  end)

  it("a check past its deadline raises timeout, saying what took the time", function()
    for _, closures in ipairs { false, true } do
      local v = schema.compile({ type = "string" }, { closures = closures })
      local err = timeout_of(v, "x", core.now() - 1)
      assert.are.equal("validating the arguments against the inputSchema took longer than the call's timeout",
        err.message)
      assert.is_true(v("x", core.now() + 60))
      assert.is_false((v(1, core.now() + 60)))
    end
  end)

  it("the clock is looked at while validating, not only at the start", function()
    -- a recursive schema over a value whose tables are shared: 200^4
    -- strings to match in a few kilobytes, a minute of work on any machine
    local s = { type = A { "array", "string" }, pattern = "^x", items = { ["$ref"] = "#" } }
    local big = "x"
    for _ = 1, 4 do
      local level = {}
      for i = 1, 200 do level[i] = big end
      big = A(level)
    end
    for _, closures in ipairs { false, true } do
      local v = schema.compile(s, { closures = closures })
      assert.is_true(v(A { "x", A { "x" } }, core.now() + 60))
      local err = timeout_of(v, big, core.now() + 0.01)
      assert.matches("^validating the arguments", err.message)
      assert.is_true(v(A { "x", A { "x" } }))       -- usable again, no deadline left over
    end
  end)

  it("costly keywords of a plain schema look at the clock: uniqueItems, pattern, patternProperties, propertyNames", function()
    local rows = {}
    for i = 1, 3000 do rows[i] = { id = i } end             -- pairwise: 4.5 million comparisons
    local evil = ("a"):rep(26) .. "!"                          -- ^(a+)+$ backtracks on each
    local strs, keyed = {}, {}
    for i = 1, 200 do strs[i] = evil .. i; keyed[evil .. i] = 1 end
    local cases = {
      { { type = "array", uniqueItems = true }, A(rows), A { 1, 2 } },
      { { type = "array", items = { type = "string", pattern = "^(a+)+$" } }, A(strs), A { "aa" } },
      { { type = "object", patternProperties = { ["^(a+)+$"] = { type = "string" } } }, keyed, { aa = "s" } },
      { { type = "object", propertyNames = { pattern = "^(a+)+$" } }, keyed, { aa = 1 } },
    }
    for _, c in ipairs(cases) do
      for _, closures in ipairs { false, true } do
        local v = schema.compile(c[1], { closures = closures })
        local err = timeout_of(v, c[2], core.now() + 0.05)
        assert.matches("^validating the arguments", err.message)
        assert.is_true(v(c[3]))                        -- usable again, no deadline left over
      end
    end
  end)
end)

describe("one owner of what a table is (issue 11, item 13)", function()
  local object_mt = json.object_mt
  -- table, json.kind, what the encoder writes
  local cases = {
    { {}, "empty", "{}" },
    { A {}, "array", "[]" },
    { { 1, 2 }, "array", "[1,2]" },
    { { 1, x = 1 }, "object", nil },
    { { [2] = 1 }, "object", '{"2":1}' },
    { { a = 1 }, "object", '{"a":1}' },
    { setmetatable({}, { __jsontype = "array" }), "array", "[]" },
    { setmetatable({ 1 }, { __jsontype = "object" }), "object", '{"1":1}' },
    { setmetatable({}, { __jsontype = "object" }), "object", "{}" },
    { setmetatable({}, object_mt), "object", "{}" },
    { setmetatable({}, { __index = {} }), "empty", "{}" },
    { json.decode("{}"), "object", "{}" },
    { json.decode("[]"), "array", "[]" },
  }

  it("json.kind is the encoder's decision (__jsontype honoured, dkjson's convention)", function()
    for i, c in ipairs(cases) do
      assert.are.equal(c[2], json.kind(c[1]), "case " .. i)
      if c[3] then assert.are.equal(c[3], json.encode(c[1]), "case " .. i) end
    end
    assert.is_nil(json.kind("x"))
    assert.are.equal(object_mt, getmetatable(json.decode("{}")))
    assert.are.equal(object_mt, getmetatable(json.decode('{"a":{}}').a))
    assert.is_nil(getmetatable(json.decode('{"a":1}')))
  end)

  it("the validator agrees with json.kind on every one of them", function()
    for i, c in ipairs(cases) do
      local k = c[2]
      local as_array = k == "array" or k == "empty"
      local as_object = k == "object" or k == "empty"
      assert.are.equal(as_array, (check({ type = "array" }, c[1])), "case " .. i .. " as array")
      assert.are.equal(as_object, (check({ type = "object" }, c[1])), "case " .. i .. " as object")
      assert.are.equal(as_array, (check({ properties = { x = { type = "array" } } }, { x = c[1] })),
        "case " .. i .. " inlined")
    end
  end)

  it("decode -> validate is exact: a decoded {} is an object, a decoded [] an array", function()
    invalid({ type = "array" }, json.decode("{}"), { "", "type", "must be array" })
    valid({ type = "object" }, json.decode("{}"))
    invalid({ type = "object" }, json.decode("[]"), { "", "type", "must be object" })
    valid({ minItems = 1 }, json.decode("{}"))          -- not an array: minItems does not apply
    valid({ required = A { "a" } }, json.decode("[]"))  -- not an object
    valid({ uniqueItems = true }, json.decode("[{},[]]"))
    valid({ enum = A { A {} } }, json.decode("[]"))
    invalid({ enum = A { A {} } }, json.decode("{}"))
    valid({ const = {} }, json.decode("{}"))
  end)

  it("schema.shape marks empty plain tables where the schema says array, on a copy", function()
    local s = { type = "object", properties = {
      tags = { type = "array" }, meta = { type = "object" }, either = { type = A { "array", "object" } },
      nested = { type = "object", properties = { list = { type = A { "array", "null" } } } },
      rows = { type = "array", items = { type = "array" } } } }
    local args = { tags = {}, meta = {}, either = {}, nested = { list = {} }, rows = { {}, A { 1 } } }
    for _, closures in ipairs { false, true } do
      local c = schema.compile(s, { closures = closures })
      assert.is_true(c(args))
      local out = schema.shape(c, args)
      assert.are_not.equal(args, out)
      assert.are.equal("[]", json.encode(out.tags))
      assert.are.equal(args.meta, out.meta)            -- unchanged: not copied
      assert.are.equal(args.either, out.either)        -- either: left as it is
      assert.are.equal("[]", json.encode(out.nested.list))
      assert.are.equal("[[],[1]]", json.encode(out.rows))
      assert.are.equal(args.rows[2], out.rows[2])
      -- the caller's tables are never modified
      assert.is_nil(getmetatable(args.tags))
      assert.is_nil(getmetatable(args.nested.list))
      assert.is_nil(getmetatable(args.rows[1]))
      assert.are.equal("{}", json.encode(args.tags))
      -- nothing to mark: the value itself comes back
      local done = { tags = A {}, meta = {} }
      assert.are.equal(done, schema.shape(c, done))
    end
  end)

  it("schema.shape follows $ref, tuple items, anyOf and if/then/else", function()
    local s = { definitions = { list = { type = "array" } },
      items = A { { ["$ref"] = "#/definitions/list" }, { anyOf = A { { type = "string" }, { type = "array" } } },
                  { ["if"] = { type = "object" }, ["then"] = { type = "array" } } } }
    local c = schema.compile(s)
    local out = schema.shape(c, { {}, {}, {} })
    assert.are.equal("[[],[],[]]", json.encode(out))
    local late = select(2, errors.catch(schema.shape, c, { {} }, core.now() - 1))
    assert.are.equal("timeout", late.code)
    assert.are.equal("[[]]", json.encode(schema.shape(c, { {} }, core.now() + 60)))
    -- a schema that never says array: the value itself
    local c2 = schema.compile({ properties = { meta = { type = "object" }, any = {} } })
    local value = { meta = {}, any = {} }
    assert.are.equal(value, schema.shape(c2, value))
    assert.is_nil(getmetatable(value.any))
    local ok, err = errors.catch(schema.shape, function() end, {})
    assert.is_false(ok)
    assert.are.equal("bad_argument", err.code)
  end)
end)

describe("errors show the value received (issue 11, item 14)", function()
  it("received, and what was allowed for enum and const, as short renderings", function()
    local _, errs = check({ properties = { qty = { minimum = 1 } } }, { qty = 0 })
    assert.are.equal("0", errs[1].received)
    assert.is_nil(errs[1].allowed)
    _, errs = check({ enum = A { "a", "b" } }, "c")
    assert.are.equal('"c"', errs[1].received)
    assert.are.equal('["a","b"]', errs[1].allowed)
    assert.are.equal('(root): must be equal to one of the allowed values (got "c"; allowed: ["a","b"])',
      schema.format_errors(errs))
    _, errs = check({ const = { a = 1 } }, { a = 2 })
    assert.are.equal('{"a":2}', errs[1].received)
    assert.are.equal('{"a":1}', errs[1].allowed)
    _, errs = check({ type = "object" }, null)
    assert.are.equal("null", errs[1].received)
    _, errs = check({ type = "string" }, element())
    assert.matches("^Element%(", errs[1].received)
  end)

  it("a long, deep or cyclic value is cut short", function()
    local _, errs = check({ type = "integer" }, string.rep("x", 100000))
    assert.is_true(#errs[1].received <= 70, #errs[1].received)
    assert.matches("%.%.%.$", errs[1].received)
    local deep = {}
    local at = deep
    for _ = 1, 100 do at.a = {}; at = at.a end
    _, errs = check({ type = "string" }, deep)
    assert.is_true(#errs[1].received <= 70)
    local cyclic = {}
    cyclic.self = cyclic
    _, errs = check({ type = "string" }, cyclic)
    assert.is_true(#errs[1].received <= 70)
    -- never cut inside a UTF-8 sequence: the rendering stays valid text
    for n = 50, 70 do
      _, errs = check({ type = "integer" }, string.rep("x", n) .. string.rep("\u{e9}\u{1F432}", 20))
      assert.is_truthy(json.encode(errs[1].received))
    end
    local many = {}
    for i = 1, 10000 do many[i] = i end
    _, errs = check({ type = "string" }, A(many))
    assert.matches("^%[1,2,3,", errs[1].received)
    assert.is_true(#errs[1].received <= 70)
  end)

  it("format_errors shows at most 20 errors, each cut at 300 characters", function()
    local props, value = {}, {}
    for i = 1, 30 do props["p" .. i] = { type = "string" }; value["p" .. i] = i end
    local _, errs = check({ properties = props }, value)
    assert.are.equal(30, #errs)
    local lines = {}
    for line in schema.format_errors(errs):gmatch("[^\n]+") do lines[#lines + 1] = line end
    assert.are.equal(21, #lines)
    assert.are.equal("... and 10 more", lines[21])
    _, errs = check({ propertyNames = { maxLength = 1 } }, { [string.rep("k", 1000)] = 1 })
    assert.is_true(#schema.format_errors(errs) <= 303)
  end)
end)

describe("suite-like cases, decoded with plain dt.json.decode (issue 10, issue 11 item 13)", function()
  -- The official suite's format: groups of {description, schema, tests =
  -- [{description, data, valid}]}. Cases where {} and [] differ, decoded
  -- as the wire gives them; each one through both engines (verdicts and
  -- errors compared by check).
  local SUITE = [==[[
    {"description": "type array", "schema": {"type": "array"}, "tests": [
      {"description": "an empty array", "data": [], "valid": true},
      {"description": "an empty object is not an array", "data": {}, "valid": false},
      {"description": "an array in an object", "data": {"a": []}, "valid": false}]},
    {"description": "type object", "schema": {"type": "object"}, "tests": [
      {"description": "an empty object", "data": {}, "valid": true},
      {"description": "an empty array is not an object", "data": [], "valid": false}]},
    {"description": "array keywords ignore objects", "schema": {"minItems": 1, "items": false}, "tests": [
      {"description": "an empty object", "data": {}, "valid": true},
      {"description": "an empty array", "data": [], "valid": false},
      {"description": "an array with an item", "data": [1], "valid": false}]},
    {"description": "object keywords ignore arrays", "schema": {"required": ["a"], "minProperties": 1}, "tests": [
      {"description": "an empty array", "data": [], "valid": true},
      {"description": "an empty object", "data": {}, "valid": false}]},
    {"description": "enum of [] and {}", "schema": {"enum": [[], {"x": {}}]}, "tests": [
      {"description": "[]", "data": [], "valid": true},
      {"description": "{}", "data": {}, "valid": false},
      {"description": "{\"x\": {}}", "data": {"x": {}}, "valid": true},
      {"description": "{\"x\": []}", "data": {"x": []}, "valid": false}]},
    {"description": "const {}", "schema": {"const": {}}, "tests": [
      {"description": "{}", "data": {}, "valid": true},
      {"description": "[]", "data": [], "valid": false}]},
    {"description": "uniqueItems", "schema": {"uniqueItems": true}, "tests": [
      {"description": "[] and {} differ", "data": [[], {}], "valid": true},
      {"description": "{} twice", "data": [{}, {}], "valid": false},
      {"description": "[] twice", "data": [[], []], "valid": false}]},
    {"description": "nested applicators", "schema": {
        "definitions": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/definitions/node"}}},
                                 "additionalProperties": false}},
        "anyOf": [{"$ref": "#/definitions/node"}, {"type": "array", "maxItems": 0}]}, "tests": [
      {"description": "a tree", "data": {"kids": [{"kids": []}, {}]}, "valid": true},
      {"description": "an empty array", "data": [], "valid": true},
      {"description": "kids an object", "data": {"kids": {}}, "valid": false},
      {"description": "an extra key deep down", "data": {"kids": [{"kids": [{"x": 1}]}]}, "valid": false}]},
    {"description": "if/then/else on kinds", "schema": {"if": {"type": "array"}, "then": {"maxItems": 0}, "else": {"required": ["a"]}},
     "tests": [
      {"description": "[]", "data": [], "valid": true},
      {"description": "{}", "data": {}, "valid": false},
      {"description": "[1]", "data": [1], "valid": false}]},
    {"description": "dependencies and propertyNames", "schema": {"dependencies": {"a": ["b"], "c": {"required": ["d"]}},
        "propertyNames": {"maxLength": 1}}, "tests": [
      {"description": "all there", "data": {"a": 1, "b": 2, "c": 3, "d": 4}, "valid": true},
      {"description": "b missing", "data": {"a": 1}, "valid": false},
      {"description": "d missing, long name", "data": {"c": 1, "long": 2}, "valid": false},
      {"description": "an array", "data": ["a"], "valid": true}]}
  ]]==]

  for _, group in ipairs(json.decode(SUITE)) do
    describe(group.description, function()
      for _, case in ipairs(group.tests) do
        it(case.description, function()
          local ok, errs = check(group.schema, case.data)
          assert.are.equal(case.valid, ok)
          if not ok then assert.are_not.equal("is invalid", errs[1].message) end
        end)
      end
    end)
  end
end)
