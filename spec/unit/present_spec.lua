-- devtools_tools.present.*: what every front end shows, as plain Lua -
-- text cleaning and bounds, the $ref walker and the walks' budget, schema
-- summaries, skeletons, argument typing, the pretty printer and error
-- rendering. Scenario tables: input, expected output.

local dt = require "devtools_tools"
local text = require "devtools_tools.present.text"
local pschema = require "devtools_tools.present.schema"
local skeleton = require "devtools_tools.present.skeleton"
local pargs = require "devtools_tools.present.args"
local pretty = require "devtools_tools.present.pretty"
local perrors = require "devtools_tools.present.errors"

local unpack = table.unpack or unpack
local json = dt.json
local null, array = dt.null, dt.array

-- what a page sends: decoded JSON (arrays marked, as discovery gives them)
local function page(v) return json.decode(json.encode(v)) end

-- A schema whose one required property $refs the root `n` times: a walk
-- without a budget expands n^16 nodes.
local function bomb(n)
  local refs = {}
  for i = 1, n do refs[i] = { ["$ref"] = "#" } end
  return page({ type = "object", properties = { a = { allOf = refs }, b = { ["$ref"] = "#" },
    c = { ["$ref"] = "#" }, d = { ["$ref"] = "#" } }, required = { "a", "b", "c", "d" } })
end

describe("present.text", function()
  local cases = {
    { "clean: C0, C1 and bidi overrides become ?, line breaks spaces",
      text.clean, { "a\27[2Jb\194\155c\226\128\174d\226\129\166e\r\nf\tg\0h" }, "a?[2Jb?c?d?e  f g?h" },
    { "clean: nil is empty", text.clean, { nil }, "" },
    { "clean_lines keeps line breaks", text.clean_lines, { "a\r\nb\nc\27d\re" }, "a\nb\nc?d?e" },
    { "rtrim", text.rtrim, { "ab \t\n " }, "ab" },
    { "cut keeps whole UTF-8 characters", text.cut, { "aé日", 4 }, "aé" },
    { "cut: short text unchanged", text.cut, { "abc", 5 }, "abc" },
    { "bounded: short", text.bounded, { "abc", 3 }, "abc" },
    { "bounded: long says how much was left", text.bounded, { "abcdefgh", 3 }, "abc... (5 more bytes)" },
    { "brief", text.brief, { ("x"):rep(70), 10 }, "xxxxxxx..." },
    { "width: wide and combining characters", text.width, { "日本e\204\129x" }, 6 },
    { "width: bytes that are no UTF-8 take one column each", text.width, { "\255\254a" }, 3 },
    { "pad to columns", text.pad, { "日", 4 }, "日  " },
    { "first sentence", text.first_sentence, { "Says hello. Then more.", 100 }, "Says hello." },
    { "first sentence, cut", text.first_sentence, { ("word "):rep(40), 20 }, "word word word wo..." },
    { "fit: a text that fits is itself", text.fit, { "abc", 3 }, "abc" },
    { "fit: cut to the columns, with ...", text.fit, { "abcdefgh", 6 }, "abc..." },
    { "fit: by columns, a wide character never split", text.fit, { "日本語日本語", 8 }, "日本..." },
    { "fit: no columns, no cut", text.fit, { ("x"):rep(300), nil }, ("x"):rep(300) },
  }
  for _, c in ipairs(cases) do
    it(c[1], function() assert.same(c[4], (c[2](unpack(c[3], 1, 2)))) end)
  end

  -- (The bounds below are on this process's CPU time, os.clock: they tell
  -- a walk that ends from one that would run for minutes or hours, and a
  -- loaded machine that deschedules us does not move them; the wall clock
  -- did, beside a second make test.)
  it("cleans and trims a long text in linear time", function()
    local s = (" "):rep(2000000) .. "\27x" .. (" "):rep(2000000)
    local c0 = os.clock()
    assert.equal(2000002, #text.rtrim(text.clean(s)))
    assert.is_true(os.clock() - c0 < 2)       -- (quadratic: hours)
  end)
end)

describe("present.schema", function()
  local root = page({
    definitions = { a = { type = "integer" }, ["a b"] = { type = "string" }, ["x/y"] = { type = "boolean" },
      ["t~"] = { type = "null" }, ["%"] = { type = "number" } },
    items = { { type = "array" }, { ["$ref"] = "#/definitions/a" } },
    loop = { ["$ref"] = "#/loop" },
  })
  local cases = {
    { "a plain local pointer", "#/definitions/a", "integer" },
    { "percent-decoded, as a URI fragment", "#/definitions/a%20b", "string" },
    { "~1 is /", "#/definitions/x~1y", "boolean" },
    { "~0 is ~", "#/definitions/t~0", "null" },
    { "%25 is %", "#/definitions/%25", "number" },
    { "an array index", "#/items/0", "array" },
    { "refs are followed in a row", "#/items/1", "integer" },
    { "a bad percent escape names nothing", "#/definitions/%zz", nil },
    { "a missing name", "#/definitions/nope", nil },
    { "a remote reference is not followed", "other.json#/definitions/a", nil },
    { "a loop ends", "#/loop", nil },
    { "an index on an object is a name", "#/definitions/0", nil },
    -- as the validator (ajv 6) reads a pointer: what is shown is what is checked
    { "an empty token is skipped", "#/definitions/a/", "integer" },
    { "an index is written without leading zeros", "#/items/00", nil },
    { "a $ref met before the last token is followed", "#/items/1/type", nil },
  }
  for _, c in ipairs(cases) do
    it("deref: " .. c[1], function()
      local s = pschema.deref(root, { ["$ref"] = c[2] })
      assert.equal(c[3], s and s.type)
    end)
  end

  it("deref reads every pointer as the validator does", function()
    local schema = require "devtools_tools.schema"
    for _, c in ipairs(cases) do
      local got = pschema.deref(root, { ["$ref"] = c[2] })
      local want = c[2]:sub(1, 1) == "#" and c[2] ~= "#/loop" and schema.local_target(root, c[2]) or nil
      if want and type(want) == "table" and want["$ref"] then want = schema.local_target(root, want["$ref"]) end
      assert.equal(want, got, c[2])
    end
  end)

  it("deref: # is the root; a node without $ref is itself", function()
    assert.equal(root, pschema.deref(root, { ["$ref"] = "#" }))
    local n = { type = "x" }
    assert.equal(n, pschema.deref(root, n))
  end)

  local summaries = {
    { "required first in order, optional sorted in brackets",
      { type = "object", properties = { b = { type = "string" }, a = { type = "integer" }, r = { type = "boolean" } },
        required = { "r" } }, "r: boolean, [a: integer], [b: string]" },
    { "anything goes", { type = "object" }, "{...}" },
    { "nothing else allowed", { type = "object", additionalProperties = false }, "" },
    { "enum values all when few and short, else a count and the first ones",
      { properties = { m = { enum = { "fast", "slow" } }, t = { enum = { "a", "b", "c", "d", "e", "f" } },
        u = { enum = { "a", "b", "c", "d", "e", "f", "g" } },
        w = { enum = { "feature_flags", "leads", "order_items", "orders", "products" } },
        x = { enum = { ("x"):rep(60), 2 } } } },
      '[m: "fast"|"slow"], [t: "a"|"b"|"c"|"d"|"e"|"f"], [u: one of 7: "a", "b", "c", "d", "e", "f", ...], '
      .. '[w: one of 5: "feature_flags", "leads", ...], [x: one of 2: "' .. ("x"):rep(60) .. '", ...]' },
    { "anyOf / oneOf branches, const, arrays, elements, $refs",
      { definitions = { n = { type = "integer" } }, properties = {
        a = { anyOf = { { type = "integer" }, { type = "null" } } }, c = { const = true },
        l = { type = "array", items = { type = "integer" } }, e = { ["x-mcp-type"] = "HTMLElement" },
        r = { ["$ref"] = "#/definitions/n" }, o = { oneOf = { { type = "number" }, { const = "auto" } } },
        u = { type = { "null", "string" } } } },
      '[a: integer|null], [c: true], [e: element], [l: integer[]], [o: number|"auto"], [r: integer], [u: null|string]' },
    { "names are cleaned", { properties = { ["a\27b"] = { type = "string" } } }, "[a?b: string]" },
    { "names are data", { properties = { __index = { type = "string" } }, required = { "__index" } },
      "__index: string" },
    { "not a table", "x", "" },
  }
  for _, c in ipairs(summaries) do
    it("summary: " .. c[1], function() assert.equal(c[3], pschema.summary(page(c[2]))) end)
  end

  it("types: type, enum and const values, and the branches of anyOf, oneOf and allOf", function()
    local s = page({ definitions = { n = { type = "null" } }, anyOf = { { type = "integer" }, { ["$ref"] = "#/definitions/n" } },
      oneOf = { { enum = { true, "x" } } }, allOf = { { const = 1.5 } } })
    local set = pschema.types(s, s, pschema.budget())
    assert.same({ integer = true, null = true, boolean = true, string = true, number = true }, set)
  end)

  it("params: every property, the required ones first", function()
    local p = pschema.params(page({ type = "object", properties = { b = {}, a = {}, r = {} }, required = { "r" } }))
    local names = {}
    for i, x in ipairs(p) do names[i] = x.name .. (x.required and "*" or "") end
    assert.same({ "r*", "a", "b" }, names)
  end)

  it("a budget stops a walk by nodes and by time, and says it was cut", function()
    local b = pschema.budget({ nodes = 3 })
    assert.is_true(b:take() and b:take() and b:take())
    assert.is_false(b:take())
    assert.is_true(b.cut)
    b = pschema.budget({ nodes = 1e9, deadline = dt.now() - 1 })
    local n = 0
    while b:take() do n = n + 1 end
    assert.is_true(n < 64)
    assert.is_true(b.cut)
  end)
end)

describe("present.skeleton", function()
  local cases = {
    { "required keys in order, enum's first value, defaults",
      { type = "object", properties = { tableName = { type = "string", enum = { "feature_flags", "orders" } },
        limit = { type = "integer", minimum = 1, default = 5 }, note = { type = "string" } },
        required = { "tableName" } },
      { tableName = "feature_flags", limit = 5 }, '{"tableName":"feature_flags","limit":5}' },
    { "type placeholders; minimum for numbers",
      { type = "object", properties = { s = { type = "string" }, n = { type = "number" },
        i = { type = "integer", minimum = 3 }, b = { type = "boolean" }, a = { type = "array" },
        o = { type = "object" }, z = { type = "null" }, u = { type = { "null", "boolean" } } },
        required = { "s", "n", "i", "b", "a", "o", "z", "u" } },
      { s = "", n = 0, i = 3, b = false, a = array{}, o = {}, z = null, u = false } },
    { "local $ref to definitions, percent-decoded",
      { type = "object", definitions = { ["lead id"] = { type = "integer", minimum = 1 } },
        properties = { leadId = { ["$ref"] = "#/definitions/lead%20id" } }, required = { "leadId" } },
      { leadId = 1 } },
    { "nested objects, const, anyOf's first branch, arrays with minItems",
      { type = "object", properties = { o = { type = "object", properties = { k = { const = "x" } }, required = { "k" } },
        v = { anyOf = { { type = "string" }, { type = "number" } } },
        l = { type = "array", minItems = 1, items = { type = "integer" } } }, required = { "o", "v", "l" } },
      { o = { k = "x" }, v = "", l = { 0 } } },
    { "a required key without a schema is null", { type = "object", required = { "x" } }, { x = null } },
    { "a hostile or empty schema gives {}", { ["$ref"] = "#/nowhere" }, {} },
    { "a ref loop ends", { ["$ref"] = "#" }, {} },
    { "a root that says a value that is no object gives {} (found by make fuzz)", { default = -407, const = "a" }, {} },
    { "names are data", { type = "object", properties = { __index = { type = "string" } }, required = { "__index" } },
      { __index = "" } },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local s, cut = skeleton.build(page(c[2]))
      assert.is_false(cut)
      assert.same(c[3], json.decode(s))
      if c[4] then assert.equal(c[4], s) end
    end)
  end

  it("text: indented, keys in the skeleton's order", function()
    local t = skeleton.text(page({ properties = { b = { default = 1 }, a = { type = "string" } }, required = { "a" } }))
    assert.equal('{\n  "a": "",\n  "b": 1\n}', t)
  end)

  it("a skeleton that was cut says so in a comment line, which strip_notes takes out", function()
    local c0 = os.clock()                     -- (CPU time: see present.text)
    local t, cut = skeleton.text(bomb(3))
    assert.is_true(os.clock() - c0 < 0.5)
    assert.is_true(cut)
    assert.equal(skeleton.CUT_NOTE, t:match("^[^\n]*"))
    assert.is_true(#t < 200000)
    local v = json.decode(skeleton.strip_notes(t))
    assert.is_table(v.a)
  end)
end)

describe("present.args", function()
  local schema = page({ type = "object", definitions = { c = { type = "integer" } }, properties = {
    n = { type = "number" }, i = { type = "integer" }, on = { type = "boolean" }, s = { type = "string" },
    maybe = { type = { "null", "string" } }, ref = { ["$ref"] = "#/definitions/c" },
    lim = { anyOf = { { type = "integer" }, { type = "null" } } }, lvl = { enum = { 1, 2 } },
    flag = { oneOf = { { const = true } } } } })
  local cases = {
    { "typed by type", { "n=1.5", "i=2", "on=true", "s=3", "maybe=null" },
      { n = 1.5, i = 2, on = true, s = "3", maybe = null } },
    { "typed through $ref, anyOf, enum and const", { "ref=9", "lim=null", "lvl=2", "flag=true" },
      { ref = 9, lim = null, lvl = 2, flag = true } },
    { "decimal only: hex, binary and spaces stay strings", { "n=0x10", "i=0b101", "on=maybe" },
      { n = "0x10", i = "0b101", on = "maybe" } },
    { "not in the schema: a string", { "x=4" }, { x = "4" } },
    { "key:=json is raw JSON", { "l:=[1,2]", "o:={\"a\":null}" }, { l = { 1, 2 }, o = { a = null } } },
    { "a JSON object first, then more", { '{"n": 7, "s": "a=b"}', "on=false" }, { n = 7, s = "a=b", on = false } },
    { "a number too large", { "n=1e999" }, nil, "n=1e999: too large for a JSON number" },
    { "not JSON after :=", { "n:=[1" }, nil, "not JSON after n:= (invalid JSON" },
    { "a key is needed", { ":=1" }, nil, "key:=json needs a key" },
    { "a word that is none of them", { "justaword" }, nil, "expected JSON, key=value or key:=json, got: justaword" },
    { "a JSON array is not the arguments", { "[1]" }, nil, "expected JSON, key=value or key:=json" },
    { "JSON arguments must be an object", { " {" }, nil, "the JSON arguments are not JSON" },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local got, err = pargs.from_words(schema, c[2])
      if c[3] then
        assert.is_nil(err)
        assert.same(c[3], got)
      else
        assert.is_nil(got)
        assert.truthy(err:find(c[4], 1, true), err)
      end
    end)
  end

  it("-0 stays -0; integers stay integers", function()
    local got = pargs.from_words(schema, { "n=-0", "i=12" })
    assert.equal(-math.huge, 1 / got.n)
    assert.equal("12", tostring(got.i))
  end)

  it("without a schema every key=value is a string", function()
    assert.same({ n = "1" }, pargs.from_words(nil, { "n=1" }))
  end)
end)

describe("present.pretty", function()
  local el = setmetatable({ description = "div#cart" }, {
    __name = "devtools_tools.Element", __tostring = function(e) return "Element(" .. e.description .. ")" end })
  local is_element = dt.is_element
  setup(function() dt.is_element = function(x) return x == el or is_element(x) end end)
  teardown(function() dt.is_element = is_element end)

  local cases = {
    { "keys sorted, indented", { b = 1, a = { 2, 3 } }, nil, '{\n  "a": [\n    2,\n    3\n  ],\n  "b": 1\n}' },
    { "one line", { b = 1, a = array{ 2 }, c = {} }, { indent = false }, '{"a":[2],"b":1,"c":{}}' },
    { "empty array, empty object, null", { a = array{}, b = json.decode("{}"), c = null }, { indent = false },
      '{"a":[],"b":{},"c":null}' },
    { "nil (a JS undefined) is null", nil, nil, "null" },
    { "scalars as the codec writes them", 2.5, nil, "2.5" },
    { "C1 controls and bidi overrides escaped, the value kept", { ["k\194\155"] = "r\194\155s\226\128\174t" },
      { indent = false }, '{"k\\u009b":"r\\u009bs\\u202et"}' },
  }
  for _, c in ipairs(cases) do
    it(c[1], function() assert.equal(c[4], pretty.encode(c[2], c[3])) end)
  end

  it("never changes a value", function()
    local v = { a = array{}, b = {}, c = { 1, 2.5, { x = 'a,b:"{[' } }, d = null, e = "\\", f = 2 ^ 53 + 2 }
    assert.same(json.decode(json.encode(v)), json.decode(pretty.encode(v)))
  end)

  it("shows Elements by name, as tostring does", function()
    assert.equal('{"found":"Element(div#cart)"}', pretty.encode({ found = el }, { indent = false }))
  end)

  it("a cycle is a bad_argument, not a crash", function()
    local t = {}
    t.t = t
    local ok, err = pcall(pretty.encode, t)
    assert.is_false(ok)
    assert.equal("bad_argument", err.code)
  end)

  it("reindents the codec's compact JSON, keeping its order", function()
    assert.equal('{\n  "b": [\n    1,\n    "x,y"\n  ],\n  "a": {}\n}', pretty.reindent('{"b":[1,"x,y"],"a":{}}'))
  end)
end)

describe("present.errors", function()
  local E = dt.new_error
  local cases = {
    { "code and message", E("tool_not_found", "Tool x not found"), nil, { "tool_not_found: Tool x not found" } },
    { "a schema error per line, with what was received and allowed, and the extra property",
      E("invalid_params", "Invalid parameters for tool t: whatever the wording", { tool = "t", details = {
        { path = "/by", keyword = "minimum", message = "must be >= 1", received = "0" },
        { path = "/m", keyword = "enum", message = "must be equal to one of the allowed values",
          received = '"x"', allowed = '["a","b"]' },
        { path = "", keyword = "additionalProperties", message = "must NOT have additional properties",
          property = "extra", received = "1" },
        { path = "", keyword = "required", message = "must have required property 'q'", property = "q",
          received = "{}" } } }), nil,
      { "invalid_params: Invalid parameters for tool t", "  /by: must be >= 1 (got 0)",
        '  /m: must be equal to one of the allowed values (got "x"; allowed: ["a","b"])',
        "  /: must NOT have additional properties ('extra')", "  /: must have required property 'q'" } },
    { "page text is cleaned", E("tool_error", "bad\27[2J\226\128\174news\n"), nil, { "tool_error: bad?[2J?news" } },
    { "a long message is bounded", E("tool_error", ("x"):rep(50)), { limit = 10 },
      { "tool_error: xxxxxxxxxx... (40 more bytes)" } },
    { "a refused remote host, with the front end's own rule",
      E("connect_failed", "connect: refusing non-loopback host h (...; pass allow_remote = true to allow it)",
        { details = { host = "h", loopback_only = true } }), { remote = "ours are loopback only" },
      { "connect_failed: connect: refusing non-loopback host h (the DevTools protocol gives full control of"
        .. " the browser; ours are loopback only)" } },
    { "not a dt.Error: a bug of ours", "boom", nil, { "internal error: boom" } },
  }
  for _, c in ipairs(cases) do
    it(c[1], function() assert.same(c[4], (perrors.render(c[2], c[3]))) end)
  end

  it("a 20 MB message costs little, and whole() keeps all of it", function()
    local e = E("tool_error", ("y"):rep(20 * 1024 * 1024) .. "z", { details = { stack = "Error: y\n    at f (x.js:1:2)" } })
    local c0 = os.clock()                     -- (CPU time: see present.text)
    local lines, cut = perrors.render(e)
    assert.is_true(os.clock() - c0 < 0.2)
    assert.is_true(cut)
    assert.equal(1, #lines)
    assert.is_true(#lines[1] < perrors.LIMIT + 100)
    assert.matches("%.%.%. %(%d+ more bytes%)$", lines[1])
    local whole = perrors.whole(e)
    assert.truthy(whole:find("yz\nstack:\nError: y\n    at f", 1, true))
  end)

  it("lists at most 20 schema errors, and says how many more", function()
    local d = {}
    for i = 1, 25 do d[i] = { path = "/" .. i, keyword = "type", message = "must be integer" } end
    local lines, cut = perrors.render(E("invalid_params", "m", { tool = "t", details = d }))
    assert.is_true(cut)
    assert.equal(22, #lines)
    assert.equal("  ... and 5 more", lines[22])
  end)
end)

describe("every front-end walk of a schema is bounded", function()
  for _, n in ipairs({ 2, 3, 8 }) do
    it(("a required property that $refs the root %d times: each walk ends at once, cut"):format(n), function()
      local s = bomb(n)
      for name, walk in pairs({
        skeleton = function(b) return skeleton.build(s, b) end,
        summary = function(b) return pschema.summary(s, b) end,
        types = function(b) return pschema.types(s.properties.a, s, b) end,
        args = function() return pargs.from_words(s, { "a=1", "b=2", "c=3" }) end,
      }) do
        local b = pschema.budget()
        local c0 = os.clock()                 -- (CPU time: see present.text)
        local out = walk(b)
        assert.is_true(os.clock() - c0 < 0.5, name)
        assert.truthy(out, name)
      end
    end)
  end
end)
