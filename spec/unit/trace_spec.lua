-- Unit: the pieces of a trace that need no browser - reading a trace (and
-- the clear errors of one cut short, of another format or of a newer
-- version), the comparison of two values by JSON pointer with ignored
-- pointers, values over the limit kept as a digest of their canonical
-- text, the Lua literals of the exported recipe, and the lines a person
-- reads (present/diff).

local dt = require "devtools_tools"
local H = require "helper"
local format = require "devtools_tools.trace.format"
local values = require "devtools_tools.trace.values"
local compare = require "devtools_tools.trace.compare"
local export = require "devtools_tools.trace.export"
local pdiff = require "devtools_tools.present.diff"

local HEAD = '{"format":"devtools-tools-trace","version":1,"url":"http://127.0.0.1:1/"}'
local CALL = '{"type":"call","call":1,"tool":"t","args":{},"result":{"a":1},"ms":1}'

describe("reading a trace", function()
  it("gives its header, its events and its calls", function()
    local t = dt.trace.parse(HEAD .. "\n" .. CALL .. "\n" .. '{"type":"navigate","url":"x"}\n')
    assert.equal("http://127.0.0.1:1/", t.header.url)
    assert.equal(2, #t.events)
    assert.equal(1, #t.calls)
    assert.equal("t", t.calls[1].tool)
    assert.equal(2, t.calls[1].line)
  end)

  local cases = {
    { "a line cut short", HEAD .. "\n" .. CALL:sub(1, 30), "f.trace:2: the line is cut short" },
    { "a newer version", HEAD:gsub('"version":1', '"version":2') .. "\n",
      "f.trace was written by a newer devtools-tools (trace format version 2; this one reads version 1" },
    { "another format", '{"hello":1}\n', "f.trace is not a devtools-tools trace" },
    { "nothing", "", "f.trace is empty" },
    { "blank lines only", "\n\n", "f.trace is empty" },
    { "no version", '{"format":"devtools-tools-trace"}\n', "f.trace:1: the header has no version" },
    { "a bad line inside", HEAD .. "\nnot json\n" .. CALL .. "\n", "f.trace:2: the line is not a JSON object" },
    { "a call without a tool", HEAD .. '\n{"type":"call","call":1}\n', "f.trace:2: a call without a tool name" },
  }
  for _, c in ipairs(cases) do
    it("refuses " .. c[1] .. " with a clear error", function()
      local err = H.error_of(dt.trace.parse, c[2], "f.trace")
      assert.equal("bad_argument", err.code)
      assert.matches(c[3], err.message, 1, true)
    end)
  end

  it("takes an older or equal version, CRLF lines, and events of types it does not know", function()
    local t = dt.trace.parse(HEAD .. "\r\n" .. '{"type":"later-kind"}\r\n' .. CALL .. "\r\n")
    assert.equal(2, #t.events)
    assert.equal(1, #t.calls)
  end)

  it("a file that cannot be read is an error naming it", function()
    local err = H.error_of(dt.trace.read, "/nonexistent/x.trace")
    assert.matches("cannot read /nonexistent/x.trace", err.message, 1, true)
  end)
end)

describe("comparing values", function()
  local A = compare.ABSENT
  local cases = {
    { "equal values", { a = 1, b = { 1, 2 } }, { a = 1, b = { 1, 2 } }, {} },
    { "an integer and a float of one value", { n = 1 }, { n = 1.0 }, {} },
    { "a changed number", { misses = 9 }, { misses = 17 }, { { "/misses", 9, 17 } } },
    { "a key gone and one new", { a = 1 }, { b = 2 }, { { "/a", 1, A }, { "/b", A, 2 } } },
    { "a longer array", dt.array{ 1 }, dt.array{ 1, 2 }, { { "/1", A, 2 } } },
    { "a scalar root", 1, 2, { { "", 1, 2 } } },
    { "null and nothing", dt.null, nil, {} },
    { "an array and an object", dt.array{ 1 }, { a = 1 }, { { "", dt.array{ 1 }, { a = 1 } } } },
    { "an empty Lua table and an empty array", {}, dt.array{}, {} },
    { "a name with ~ and /", { ["a/b~c"] = 1 }, { ["a/b~c"] = 2 }, { { "/a~1b~0c", 1, 2 } } },
    { "false and nothing", { f = false }, {}, { { "/f", false, A } } },
    { "nested", { x = { y = { z = "a" } } }, { x = { y = { z = "b" } } }, { { "/x/y/z", "a", "b" } } },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local got = {}
      for _, d in ipairs(compare.diff(c[2], c[3])) do got[#got + 1] = { d.path, d.recorded, d.new } end
      assert.same(c[4], got)
    end)
  end

  it("leaves out what an ignored pointer covers; * is one segment", function()
    local a = { ts = 1, items = dt.array{ { id = 1, n = 1 }, { id = 2, n = 1 } }, deep = { x = { y = 1 } } }
    local b = { ts = 2, items = dt.array{ { id = 3, n = 1 }, { id = 4, n = 2 } }, deep = { x = { y = 2 } } }
    local function paths(ignore)
      local out = {}
      for _, d in ipairs(compare.diff(a, b, compare.ignorer(ignore))) do out[#out + 1] = d.path end
      return out
    end
    assert.same({ "/deep/x/y", "/items/0/id", "/items/1/id", "/items/1/n", "/ts" }, paths(nil))
    assert.same({ "/deep/x/y", "/items/1/n" }, paths({ "/ts", "/items/*/id" }))
    assert.same({ "/items/0/id", "/items/1/id", "/items/1/n", "/ts" }, paths({ "/deep" }))
    assert.same({}, paths({ "" }))
    assert.same({ "/deep/x/y", "/items/0/id", "/items/1/id", "/ts" }, paths({ "/items/1/n" }))
    assert.same({ "/deep/x/y", "/ts" }, paths({ "/items/*" }))
  end)

  it("refuses a pointer that is none", function()
    for _, bad in ipairs({ "ts", "/a~2", "/a~" }) do
      local err = H.error_of(compare.ignorer, { bad })
      assert.equal("bad_argument", err.code)
    end
  end)
end)

describe("values in a trace", function()
  it("are JSON text; over the limit, a SHA-256 of the canonical text and its size", function()
    assert.equal('{"a":1}', values.text({ a = 1 }))
    assert.equal("null", values.text(nil))
    local s, d = values.text({ b = string.rep("x", 100), a = 1 }, 50)
    assert.is_nil(s)
    assert.equal(#dt.json.encode({ b = string.rep("x", 100), a = 1 }), d.bytes)
    assert.equal(64, #d.sha256)
    -- the same value built in another order hashes alike
    local t2 = {}
    t2.a = 1
    t2.b = string.rep("x", 100)
    for i = 1, 50 do t2["k" .. i] = i end
    for i = 1, 50 do t2["k" .. i] = nil end
    local _, d2 = values.text(t2, 50)
    assert.equal(d.sha256, d2.sha256)
    assert.equal(values.digest({ a = 1, b = string.rep("x", 100) }).sha256, d.sha256)
  end)

  it("canonical text sorts keys at every depth and keeps arrays in order", function()
    assert.equal('{"a":[3,1,{"c":1,"d":2}],"b":null}', values.canonical({ b = dt.null, a = dt.array{ 3, 1, { d = 2, c = 1 } } }))
    assert.equal("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
      require("devtools_tools.core").digest.sha256("abc"))
  end)
end)

describe("the exported recipe's literals", function()
  local cases = {
    { "a string with controls, quotes and UTF-8", "a\"b\\c\n\t\0\1é" },
    { "integers and floats", { 1, -2, 0.1, 1e300, 2 ^ 53 } },
    { "an empty array and an empty object", { a = dt.array{}, b = {} } },
    { "odd keys", { ["odd key"] = 1, ["end"] = 2, _ok = 3, ["1x"] = 4 } },
    { "null inside an array", dt.array{ 1, dt.null, 3 } },
    { "deep", { a = { b = { c = { d = dt.array{ "x" } } } } } },
  }
  for _, c in ipairs(cases) do
    it("make the same JSON value again: " .. c[1], function()
      local text = export.literal(c[2])
      local f = assert(load("return " .. text, "=literal", "t", { dt = dt }))
      assert.equal(values.canonical(c[2]), values.canonical(f()))
    end)
  end

  it("quote every byte outside printable ASCII, so a page's text cannot become code", function()
    local s = export.quote("]] .. os.exit() .. [[\"\n")
    assert.equal('"]] .. os.exit() .. [[\\"\\n"', s)
    assert.not_matches("[\128-\255]", export.quote("é"))
  end)
end)

describe("a difference as a line", function()
  local cases = {
    { { call = 3, tool = "getCacheStats", kind = "value", path = "/misses", recorded = 9, new = 17 },
      "call 3 getCacheStats: /misses: 9 -> 17" },
    { { call = 1, tool = "t", kind = "value", path = "", recorded = "a", new = dt.trace.ABSENT },
      'call 1 t: "a" -> (absent)' },
    { { call = 4, tool = "legacyStats", kind = "missing_tool", message = "Tool legacyStats not found" },
      "call 4 legacyStats: missing tool: the page has no legacyStats now" },
    { { call = 2, tool = "x", kind = "refused", message = "Invalid parameters for tool x: /depth: must be <= 3" },
      "call 2 x: arguments refused now: Invalid parameters for tool x: /depth: must be <= 3" },
    { { call = 2, tool = "x", kind = "error_instead", error = dt.new_error("tool_error", "boom") },
      "call 2 x: an error where there was a result: tool_error: boom" },
    { { call = 2, tool = "x", kind = "result_instead", recorded = { code = "tool_error", message = "boom" },
      new = { fixed = true } }, 'call 2 x: a result where there was an error (tool_error: boom): {"fixed":true}' },
    { { call = 5, tool = "x\27[31m", kind = "value", path = "/a\n", recorded = "\27", new = 1 },
      'call 5 x?[31m: /a : "\\u001b" -> 1' },
  }
  for _, c in ipairs(cases) do
    it(c[2], function() assert.equal(c[2], pdiff.line(c[1])) end)
  end

  it("the summary counts calls, navigations, differences and the calls they are in", function()
    assert.equal("replayed 1 call: no differences",
      pdiff.summary({ calls = 1, navigations = 0, differences = {}, differing_calls = 0 }))
    assert.equal("replayed 12 calls and 1 navigation: 3 differences in 2 calls",
      pdiff.summary({ calls = 12, navigations = 1, differences = { 1, 2, 3 }, differing_calls = 2 }))
  end)

  it("as JSON: an absent side has no member", function()
    local j = pdiff.json({ calls = 1, navigations = 0, differing_calls = 1, differences = {
      { call = 1, tool = "t", kind = "value", path = "/a", recorded = 1, new = dt.trace.ABSENT } } })
    assert.equal(1, j.differences[1].recorded)
    assert.is_nil(j.differences[1].new)
    assert.equal("/a", j.differences[1].path)
  end)
end)

describe("writing a trace", function()
  it("line by line, each flushed; a handle stays the caller's; a write that fails stops it", function()
    local lines = {}
    local handle = { write = function(_, ...) lines[#lines + 1] = table.concat({ ... }) return true end }
    local w = format.writer(handle)
    assert.is_true(w:event(format.members("type", "navigate", "url", "u", "page", nil), true))
    assert.equal('{"type":"navigate","url":"u"}\n', lines[1])
    w:close()
    local bad = format.writer({ write = function() return nil, "No space left on device" end })
    assert.is_false(bad:line("x"))
    assert.matches("No space left", bad.failed, 1, true)
    assert.is_false(bad:line("y"))
    local err = H.error_of(format.writer, 42)
    assert.equal("bad_argument", err.code)
  end)
end)
