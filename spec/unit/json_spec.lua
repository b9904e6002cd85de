-- json_spec: the JSON codec (core.json.encode/json_decode) and its Lua
-- wrapper devtools_tools.base.json. Scenario tables: input, then the expected
-- value/text or the error code.

local core = require("devtools_tools.core")
local json = require("devtools_tools.base.json")
local errors = require("devtools_tools.base.errors")

local null, A = json.null, json.array
local mtype = math.type or function(x)     -- 5.1/LuaJIT: every number is a float
  return type(x) == "number" and "float" or nil
end
local has_int = math.type ~= nil
local maxint, minint = math.maxinteger, math.mininteger
-- computed, not a literal: PUC 5.1 folds the constant -0.0 into 0
local negzero = -1 / math.huge

-- Deep comparison that also tells integers from floats, -0 from 0, arrays
-- from objects and null from everything else.
local function same(a, b, path)
  path = path or "value"
  if type(a) ~= type(b) then
    return false, path .. ": " .. type(a) .. " vs " .. type(b)
  end
  if type(a) == "number" then
    if mtype(a) ~= mtype(b) then return false, path .. ": " .. mtype(a) .. " vs " .. mtype(b) end
    if a ~= a and b ~= b then return true end
    if a ~= b then return false, path .. ": " .. string.format("%.17g vs %.17g", a, b) end
    if a == 0 and 1 / a ~= 1 / b then return false, path .. ": sign of zero" end
    return true
  end
  if type(a) ~= "table" then
    if a ~= b then return false, path .. ": " .. tostring(a) .. " vs " .. tostring(b) end
    return true
  end
  if json.is_array(a) ~= json.is_array(b) then
    return false, path .. ": array marker " .. tostring(json.is_array(a)) .. " vs " .. tostring(json.is_array(b))
  end
  for k, v in pairs(a) do
    local ok, why = same(v, rawget(b, k), path .. "[" .. tostring(k) .. "]")
    if not ok then return false, why end
  end
  for k in pairs(b) do
    if rawget(a, k) == nil then return false, path .. "[" .. tostring(k) .. "]: missing" end
  end
  return true
end

local function assert_same(got, want, label)
  local ok, why = same(got, want)
  assert(ok, (label or "") .. ": " .. tostring(why))
end

local function nest(depth, open, close, inner)
  return string.rep(open, depth) .. (inner or "") .. string.rep(close, depth)
end

local function nested_tables(depth)
  local top = {}
  local t = top
  for _ = 2, depth do
    t[1] = {}
    t = t[1]
  end
  return top
end

describe("core.json.decode", function()
  local ok_cases = {
    -- integers
    { "0", 0 },
    { "-1", -1 },
    { "123", 123 },
    { "9007199254740993", has_int and 9007199254740993 or 9007199254740992 },
    { "9223372036854775807", maxint or 2 ^ 63 },
    { "-9223372036854775808", minint or -2 ^ 63 },
    -- integer literals beyond int64 become floats (JSON.stringify(2**64))
    { "9223372036854775808", 2 ^ 63 },
    { "18446744073709552000", 2 ^ 64 },
    { "-18446744073709552000", -2 ^ 64 },
    { "123456789012345678901234567890", 1.2345678901234568e29 },
    -- floats
    { "-0", negzero },
    { "-0.0", negzero },
    { "0.1", 0.1 },
    { "0.3333333333333333", 1 / 3 },
    { "1e300", 1e300 },
    { "1E300", 1e300 },
    { "5e-324", 5e-324 },
    { "2.2250738585072014e-308", 2.2250738585072014e-308 },
    { "1e2", 100.0 },
    { "1.5e+3", 1500.0 },
    { "-2.5", -2.5 },
    { "12.5", 12.5 },
    { "0.000001", 0.000001 },
    { "123456789.12345678901234", 123456789.12345679 },
    { "0.30000000000000004", 0.30000000000000004 },
    -- literals
    { "true", true },
    { "false", false },
    { "null", null },
    -- strings
    { '""', "" },
    { '"a\\u0000b"', "a\0b" },
    { '"\\"\\\\\\/\\b\\f\\n\\r\\t"', '"\\/\b\f\n\r\t' },
    { '"\\u00e9\\u20AC"', "\195\169\226\130\172" },
    { '"\\ud83d\\ude00"', "\240\159\152\128" },                       -- surrogate pair
    { '"\\ud800"', "\237\160\128" },                                  -- lone high
    { '"\\udc00"', "\237\176\128" },                                  -- lone low
    { '"\\ud800x"', "\237\160\128x" },
    { '"\\ud800\\u0041"', "\237\160\128A" },
    { '"\\ude00\\ud83d"', "\237\184\128\237\160\189" },               -- reversed pair
    { '"\255\254 caf\195\169"', "\255\254 caf\195\169" },             -- raw bytes pass
    { '"' .. string.rep("x", 100) .. '\\n' .. string.rep("y", 100) .. '"',
      string.rep("x", 100) .. "\n" .. string.rep("y", 100) },
    -- containers
    { "[]", A {} },
    { "{}", {} },
    { "[[]]", A { A {} } },
    { "[{}]", A { {} } },
    { '{"a":[]}', { a = A {} } },
    { "[1,null,3]", A { 1, null, 3 } },
    { "[null,null]", A { null, null } },
    { '{"a":{"b":[1,{"c":null}]}}', { a = { b = A { 1, { c = null } } } } },
    { '{"a":1,"a":2}', { a = 2 } },
    { '{"":1,"1":"one"}', { [""] = 1, ["1"] = "one" } },
    { ' \n\t[ 1 , 2 ]\r\n ', A { 1, 2 } },
    { '{ "a" : [ true , false ] }', { a = A { true, false } } },
  }
  for _, c in ipairs(ok_cases) do
    it("decodes " .. c[1]:sub(1, 60), function()
      local v, msg, code = core.json.decode(c[1])
      assert(msg == nil, tostring(msg) .. " " .. tostring(code))
      assert_same(v, c[2], c[1])
    end)
  end

  it("keeps the length of arrays holding null", function()
    local t = core.json.decode("[1,null,3,null]")
    assert.are.equal(4, #t)
    assert.are.equal(null, t[2])
    assert.are.equal(null, t[4])
  end)

  it("does not truncate at \\u0000", function()
    local s = core.json.decode('"\\u0000\\u0000x"')
    assert.are.equal(3, #s)
    assert.are.equal("\0\0x", s)
  end)

  it("gives integers on Lua 5.3+ and floats on 5.1", function()
    local v = core.json.decode("[5, 5.0, 5e0]")
    if has_int then
      assert.are.equal("integer", math.type(v[1]))
      assert.are.equal("5", tostring(v[1]))
      assert.are.equal("9007199254740993", string.format("%d", core.json.decode("9007199254740993")))
    else
      assert.are.equal("number", type(v[1]))
    end
    assert.are.equal("float", mtype(v[2]))
    assert.are.equal("float", mtype(v[3]))
  end)

  local bad_cases = {
    { "", "syntax" }, { "   ", "syntax" }, { "[", "syntax" }, { "{", "syntax" },
    { "[1,]", "syntax" }, { '{"a":1,}', "syntax" }, { "[1 2]", "syntax" },
    { '{"a" 1}', "syntax" }, { "{a:1}", "syntax" }, { '{"a":}', "syntax" },
    { "{1:2}", "syntax" }, { "]", "syntax" },
    { "01", "syntax" }, { "-01", "syntax" }, { "1.", "syntax" }, { ".5", "syntax" },
    { "-", "syntax" }, { "+1", "syntax" }, { "1e", "syntax" }, { "1e+", "syntax" },
    { "0x10", "syntax" }, { "NaN", "syntax" }, { "Infinity", "syntax" }, { "-Infinity", "syntax" },
    { "tru", "syntax" }, { "nul", "syntax" }, { "True", "syntax" }, { "'a'", "syntax" },
    { '"abc', "syntax" }, { '"\\', "syntax" }, { '"\\x"', "syntax" }, { '"\\u12"', "syntax" },
    { '"\\u12G4"', "syntax" }, { '"\\U0041"', "syntax" },
    { '"a\nb"', "syntax" }, { '"a\tb"', "syntax" }, { '"\1"', "syntax" }, { '"\31"', "syntax" },
    { '"\0"', "syntax" }, { "\0", "syntax" },
    { "[1]x", "syntax" }, { "1 2", "syntax" }, { "{} {}", "syntax" }, { "nullx", "syntax" },
    { string.rep("[", 100000), "too_deep" },
    { string.rep('{"a":', 100000), "too_deep" },
    { nest(1001, "[", "]"), "too_deep" },
    { nest(1001, '{"k":', "}", "1"), "too_deep" },
  }
  for _, c in ipairs(bad_cases) do
    it("rejects " .. string.format("%q", c[1]:sub(1, 30)) .. " with " .. c[2], function()
      local v, msg, code = core.json.decode(c[1])
      assert.is_nil(v)
      assert.are.equal("string", type(msg))
      assert.are.equal(c[2], code)
    end)
  end

  it("names the byte offset of a syntax error", function()
    local _, msg = core.json.decode("[1,]")
    assert.truthy(msg:find("byte offset 3", 1, true), msg)
    _, msg = core.json.decode('{"a":"x\1"}')
    assert.truthy(msg:find("byte offset 7", 1, true), msg)
  end)

  it("accepts nesting up to max_depth and no deeper", function()
    assert.truthy(core.json.decode(nest(1000, "[", "]")))
    assert.truthy(core.json.decode(nest(1000, '{"k":', "}", "1")))
    assert_same(core.json.decode("[[1]]", { max_depth = 2 }), A { A { 1 } })
    local v, msg, code = core.json.decode("[[[1]]]", { max_depth = 2 })
    assert.is_nil(v)
    assert.are.equal("too_deep", code)
    assert.truthy(msg:find("2", 1, true))
    assert.are.equal(5, core.json.decode("5", { max_depth = 0 }))
    assert.are.equal("too_deep", select(3, core.json.decode("[]", { max_depth = 0 })))
    -- a huge limit still cannot overflow the C stack: the Lua stack ends it
    assert.are.equal("too_deep", select(3, core.json.decode(string.rep("[", 3000000), { max_depth = 1e9 })))
  end)

  it("rejects bad options", function()
    assert.has_error(function() core.json.decode("1", { max_depth = -1 }) end)
    assert.has_error(function() core.json.decode("1", { max_depth = "x" }) end)
    assert.has_error(function() core.json.decode("1", { max_depth = 1.5 }) end)
    assert.has_error(function() core.json.decode("1", 5) end)
    assert.has_error(function() core.json.decode({}) end)
  end)

  it("decodes large documents: long strings with escapes, long arrays", function()
    local piece = 'ab\\"c\\\\d\\n\\u00e9\\ud83d\\ude00'
    local want_piece = 'ab"c\\d\n\195\169\240\159\152\128'
    local s = core.json.decode('"' .. string.rep(piece, 50000) .. '"')
    assert.are.equal(#want_piece * 50000, #s)
    assert.are.equal(string.rep(want_piece, 50000), s)
    local parts = {}
    for i = 1, 100000 do parts[i] = '{"id":' .. i .. ',"v":[' .. i .. '.5]}' end
    local t = core.json.decode("[" .. table.concat(parts, ",") .. "]")
    assert.are.equal(100000, #t)
    assert.are.equal(77777, t[77777].id)
    assert.are.equal(77777.5, t[77777].v[1])
    assert.is_true(json.is_array(t[77777].v))
  end)
end)

  it("sizes containers after their neighbours without changing values", function()
    -- each container's size hint is the last one closed at its depth:
    -- shapes that change from one to the next must still decode exactly
    local text = '[[1,2,3],[4],[],[5,6,7,8,9],[10],{"a":1,"b":2,"c":3},{"d":4},{},' ..
      '{"e":[1,2],"f":{"g":[],"h":{}}},{"e":[3],"f":{"g":[4,5,6],"h":{"i":null}}},[[[]]],7]'
    assert_same(core.json.decode(text), A {
      A { 1, 2, 3 }, A { 4 }, A {}, A { 5, 6, 7, 8, 9 }, A { 10 },
      { a = 1, b = 2, c = 3 }, { d = 4 }, {},
      { e = A { 1, 2 }, f = { g = A {}, h = {} } },
      { e = A { 3 }, f = { g = A { 4, 5, 6 }, h = { i = null } } },
      A { A { A {} } }, 7 })
    local t = core.json.decode('[[1,2,3,4,5,6,7,8],[1],{"a":1,"b":2,"c":3,"d":4,"e":5},{"z":1}]')
    assert.are.equal(1, #t[2])
    local n = 0
    for _ in pairs(t[4]) do n = n + 1 end
    assert.are.equal(1, n)
    assert.are.equal('[[1],{"z":1}]', core.json.encode(A { t[2], t[4] }))
  end)

  it("unescapes a long string without leaving garbage behind", function()
    -- the scratch bytes are malloc'd and freed at once: the Lua heap grows
    -- by the decoded string only (a scratch that grew by doubling through
    -- Lua userdata left about twice its size as garbage)
    local piece = string.rep("x", 40) .. '\\"\\n'
    local text = '{"id":1,"s":"' .. string.rep(piece, 100000) .. '"}'
    collectgarbage(); collectgarbage(); collectgarbage("stop")
    local before = collectgarbage("count")
    local v = core.json.decode(text)
    local grown = collectgarbage("count") - before
    collectgarbage("restart")
    assert.are.equal(42 * 100000, #v.s)
    assert.is_true(grown < 1.25 * #v.s / 1024, ("heap grew by %.0f KiB"):format(grown))
    -- and a syntax error after such a string frees it too (valgrind checks)
    local m, _, code = core.json.decode(text:sub(1, -2) .. ",")
    assert.is_nil(m)
    assert.are.equal("syntax", code)
  end)

  it("lets one big container mislead the size of only the next one", function()
    -- a hint that stuck would give each of the 20000 small arrays room for
    -- 100000 values (gigabytes); taken once, it costs one such array
    local big = "[" .. string.rep("1,", 99999) .. "1]"
    local doc = "[" .. big .. string.rep(",[1]", 20000) .. "," ..
      "{" .. string.rep('"k":1,', 20000):gsub(",$", "") .. "}" .. string.rep(',{"k":2}', 20000) .. "]"
    collectgarbage(); collectgarbage()
    local before = collectgarbage("count")
    local t = core.json.decode(doc)
    local grown = (collectgarbage("count") - before) / 1024
    assert.are.equal(1 + 20000 + 1 + 20000, #t)
    assert.are.equal(100000, #t[1])
    assert.are.equal(1, #t[20001])
    assert.are.equal(2, t[40002].k)
    assert.is_true(grown < 24, ("the decoded document took %.1f MiB"):format(grown))
  end)

describe("core.json.encode", function()
  local ok_cases = {
    -- integers
    { 0, "0" }, { -1, "-1" }, { 123, "123" },
    { 2 ^ 53, "9007199254740992" },
    { 1e15, "1000000000000000" },
    -- floats
    { 0.1, "0.1" }, { -2.5, "-2.5" }, { 12.5, "12.5" }, { 1 / 3, "0.3333333333333333" },
    { 2 / 3, "0.6666666666666666" }, { 0.30000000000000004, "0.30000000000000004" },
    { 123456.789, "123456.789" }, { 1e300, "1e+300" }, { -1e300, "-1e+300" },
    { 1e21, "1e+21" }, { 3.0, "3" }, { negzero, "-0" }, { 0.0, "0" },
    { 0 / 0, "null" }, { math.huge, "null" }, { -math.huge, "null" },
    -- literals
    { nil, "null" }, { null, "null" }, { true, "true" }, { false, "false" },
    -- strings
    { "", '""' },
    { 'a"b\\c/d', '"a\\"b\\\\c/d"' },
    { "\b\f\n\r\t", '"\\b\\f\\n\\r\\t"' },
    { "\0\1\31\127", '"\\u0000\\u0001\\u001f\127"' },
    { "caf\195\169 \226\130\172 \240\159\152\128", '"caf\195\169 \226\130\172 \240\159\152\128"' },
    { "\237\160\128", '"\\ud800"' },                 -- a decoded lone surrogate
    { "x\237\191\191y", '"x\\udfffy"' },
    { "\239\191\191\244\143\191\191", '"\239\191\191\244\143\191\191"' },   -- U+FFFF, U+10FFFF
    -- tables
    { {}, "{}" }, { A(), "[]" }, { A {}, "[]" }, { { {} }, "[{}]" }, { { A {} }, "[[]]" },
    { { 1, 2, 3 }, "[1,2,3]" }, { A { 1, 2, 3 }, "[1,2,3]" },
    { { null, null }, "[null,null]" },
    { { a = 1 }, '{"a":1}' }, { { a = A {} }, '{"a":[]}' }, { { a = { b = {} } }, '{"a":{"b":{}}}' },
    { { [0] = 1 }, '{"0":1}' }, { { [-7] = "x" }, '{"-7":"x"}' }, { { [2] = 2 }, '{"2":2}' },
    -- other metatables are ignored: raw access only
    { setmetatable({}, { __index = function() return 1 end }), "{}" },
    { setmetatable({ 1, 2 }, { __len = function() return 5 end }), "[1,2]" },
    { setmetatable({ x = 1 }, { __pairs = function() error("not called") end }), '{"x":1}' },
    { setmetatable({ x = 1 }, { __tostring = function() return "no" end }), '{"x":1}' },
  }
  if has_int then
    local more = {
      { maxint, "9223372036854775807" }, { minint, "-9223372036854775808" },
      { 9007199254740993, "9007199254740993" }, { 3, "3" },
      { { [maxint] = 1 }, '{"9223372036854775807":1}' },
    }
    for _, c in ipairs(more) do ok_cases[#ok_cases + 1] = c end
  end
  for i, c in ipairs(ok_cases) do
    it("encodes #" .. i .. " as " .. c[2], function()
      local s, msg, code = core.json.encode(c[1])
      assert(msg == nil, tostring(msg) .. " " .. tostring(code))
      assert.are.equal(c[2], s)
    end)
  end

  it("writes floats that read back equal", function()
    for _, x in ipairs { 0.1, 1 / 3, 1e300, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
                          1e-7, 1.5e-7, 123.456e-20, 2 ^ 63, 2 ^ 70, -1 / 7, 4.35, 0.1 + 0.2 } do
      local s = core.json.encode(x)
      assert_same(core.json.decode(s) + 0.0, x, s)
      assert(#s <= 24, s)
    end
    assert.are.equal(5e-324, core.json.decode(core.json.encode(5e-324)))
    -- subnormals in their shortest form too, as JSON.stringify writes them
    assert.are.equal("[5e-324,2.5e-320,1e-310]", core.json.encode(A { 5e-324, 2.5e-320, 1e-310 }))
  end)

  it("refuses a table with both the key 1 and the key \"1\" (JSON would hold the name twice)", function()
    for _, t in ipairs({ { ["1"] = "a", [1] = 5 }, { ["-3"] = 1, [-3] = 2, x = 0 } }) do
      local ok, err, code = core.json.encode(t)
      assert.is_nil(ok)
      assert.are.equal("bad_value", code)
      assert.matches('table has both the key %-?%d+ and the key "%-?%d+"', err)
    end
    assert.is_string(core.json.encode({ [1] = 5, ["01"] = 1, a = "1" }))   -- other names: fine
  end)

  it("writes the table key -2^63 (the smallest integer) on LuaJIT as on Lua 5.4", function()
    assert.are.equal('{"-9223372036854775808":1}', core.json.encode({ [minint or -2 ^ 63] = 1 }))
    local ok, _, code = core.json.encode({ [2 ^ 63] = 1 })
    assert.is_nil(ok)
    assert.are.equal("bad_value", code)
  end)

  it("writes holes in a marked array as null, up to its raw length", function()
    local t = A { 1, nil, 3 }
    -- which border #t picks in a table with holes differs between Lua versions
    local want = ({ [1] = "[1]", [3] = "[1,null,3]" })[rawlen and rawlen(t) or #t]
    assert.are.equal(want, core.json.encode(t))
    t = A {}
    t[4] = 4
    assert.truthy(({ ["[]"] = true, ["[null,null,null,4]"] = true })[core.json.encode(t)])
  end)

  it("writes tables with mixed or sparse keys as objects", function()
    assert_same(core.json.decode(core.json.encode({ [1] = 1, [3] = 3 })), { ["1"] = 1, ["3"] = 3 })
    assert_same(core.json.decode(core.json.encode({ "a", x = "b" })), { ["1"] = "a", x = "b" })
    assert_same(core.json.decode(core.json.encode({ a = 1, b = { 1, 2 }, c = "s" })),
                { a = 1, b = A { 1, 2 }, c = "s" })
  end)

  local bad_cases = {
    { print, "bad_value", "function" },
    { coroutine.create(function() end), "bad_value", "thread" },
    { io.stdout, "bad_value", "userdata" },
    { { f = print }, "bad_value", "function" },
    { A { 1, print }, "bad_value", "function" },
    { { [true] = 1 }, "bad_value", "boolean" },
    { { [1.5] = 1 }, "bad_value", "1.5" },
    { { [{}] = 1 }, "bad_value", "table" },
    { "\255", "bad_value", "offset 0" },
    { "ab\128", "bad_value", "offset 2" },                       -- stray continuation
    { "a\192\128", "bad_value", "offset 1" },                    -- overlong NUL
    { "\224\128\128", "bad_value", "offset 0" },                 -- overlong 3-byte
    { "\240\128\128\128", "bad_value", "offset 0" },             -- overlong 4-byte
    { "\244\144\128\128", "bad_value", "offset 0" },             -- above U+10FFFF
    { "\248\136\128\128\128", "bad_value", "offset 0" },         -- 5-byte form
    { "x\226\130", "bad_value", "offset 1" },                    -- truncated
    { "\237\160", "bad_value", "offset 0" },                     -- truncated surrogate
    { "\226\40\161", "bad_value", "offset 0" },                  -- bad continuation
    { { ["\255"] = 1 }, "bad_value", "offset 0" },               -- in a key
    { nested_tables(1001), "too_deep", "1000" },
  }
  for i, c in ipairs(bad_cases) do
    it("refuses bad value #" .. i .. " with " .. c[2], function()
      local s, msg, code = core.json.encode(c[1])
      assert.is_nil(s)
      assert.are.equal(c[2], code)
      assert.truthy(msg:find(c[3], 1, true), msg)
    end)
  end

  it("reports a cycle as too_deep", function()
    local t = {}
    t.self = t
    local s, msg, code = core.json.encode(t)
    assert.is_nil(s)
    assert.are.equal("too_deep", code)
    assert.truthy(msg:find("nesting deeper than 1000 (a cycle?)", 1, true), msg)
    local a = A {}
    a[1] = a
    assert.are.equal("too_deep", select(3, core.json.encode(a)))
    assert.are.equal("too_deep", select(3, core.json.encode(a, { max_depth = 1e9 })))
  end)

  it("accepts nesting up to max_depth and no deeper", function()
    assert.truthy(core.json.encode(nested_tables(1000)))
    assert.are.equal("[[1]]", core.json.encode({ { 1 } }, { max_depth = 2 }))
    assert.are.equal("too_deep", select(3, core.json.encode({ { { 1 } } }, { max_depth = 2 })))
    assert.are.equal("1", core.json.encode(1, { max_depth = 0 }))
    assert.are.equal("too_deep", select(3, core.json.encode({}, { max_depth = 0 })))
    assert.has_error(function() core.json.encode(1, { max_depth = -1 }) end)
  end)

  it("encodes large values", function()
    local big = string.rep('a"\\\n\195\169', 200000)
    local s = core.json.encode(big)
    assert.are.equal(big, core.json.decode(s))
    local t = {}
    for i = 1, 100000 do t[i] = { id = i, x = i + 0.5 } end
    local back = core.json.decode(core.json.encode(t))
    assert.are.equal(100000, #back)
    assert.are.equal(99999.5, back[99999].x)
  end)
end)

describe("JSON round trips", function()
  local texts = {
    "[]", "{}", "[1,null,3]", '{"a":[]}', '"\\ud800"', '"\\udfff\\udbff"', '"a\\u0000b"',
    "[0.1,-0,1e+300,3,-2.5,true,false,null]", '{"x":{"y":[true,false,null,{}]}}',
    '[[[[[]]]]]', '"\\u001f\\b"',
  }
  if has_int then texts[#texts + 1] = "[9223372036854775807,-9223372036854775808,9007199254740993]" end
  for _, s in ipairs(texts) do
    it("text " .. s, function()
      assert.are.equal(s, core.json.encode(core.json.decode(s)))
    end)
  end

  local values = {
    A {}, {}, A { 1, null, 3 }, { a = A { {}, A {} }, b = null }, "\237\160\128",
    "\0x\0", 0.1, negzero, 1 / 3, 5e-324, 2 ^ 64, { n = { m = A { "deep" } } },
  }
  if has_int then
    values[#values + 1] = maxint
    values[#values + 1] = minint
    values[#values + 1] = A { 9007199254740993, 1.0 + 2 ^ 60 }
  end
  it("turns a surrogate pair into one 4-byte character", function()
    assert.are.equal('"\244\143\191\191"', core.json.encode(core.json.decode('"\\udbff\\udfff"')))
  end)

  for i, v in ipairs(values) do
    it("value #" .. i, function()
      local s = assert(core.json.encode(v))
      local back = core.json.decode(s)
      if type(v) == "number" and mtype(v) == "float" and v == math.floor(v) and v ~= 0 then
        back = back + 0.0                    -- integral floats come back as integers
      end
      if type(v) == "table" and v[1] == 9007199254740993 then
        back[2] = back[2] + 0.0
      end
      assert_same(back, v, s)
    end)
  end
end)

-- Numbers must be read and written with '.' whatever the C locale says.
-- The same checks run in-process (a comma-decimal locale installed) or in a
-- child interpreter pointed at one generated with localedef.
local LOCALE_CHECK = [[
local core, locale = ...
local got = os.setlocale(locale, "numeric")
if not got then return "os.setlocale failed for " .. locale end
local fail = {}
local function eq(a, b, what)
  if a ~= b then fail[#fail + 1] = what .. ": got " .. tostring(a) end
end
if not jit then eq(string.format("%.1f", 0.5), "0,5", "the locale's decimal point") end
eq(core.json.encode(0.5), "0.5", "encode 0.5")
eq(core.json.encode(1 / 3), "0.3333333333333333", "encode 1/3")
eq(core.json.encode(-1e300), "-1e+300", "encode -1e300")
eq(core.json.encode(2.5e-300), "2.5e-300", "encode 2.5e-300")
local v = core.json.decode("[0.5, 1.25e2, 123456789.12345678901234, 2.5e-300, 1e-400, 5e-324]")
eq(v and v[1], 0.5, "decode 0.5")
eq(v and v[2], 125, "decode 1.25e2")
eq(v and v[3], 123456789.12345679, "decode a 23-digit number")
eq(v and v[4], 2.5e-300, "decode 2.5e-300")
eq(v and v[5], 0, "decode 1e-400")
eq(v and v[6], 5e-324, "decode 5e-324")
os.setlocale("C", "numeric")
return #fail == 0 and "ok" or table.concat(fail, "; ")
]]

local function interpreter()
  local i, exe = -1, nil
  while arg and arg[i] do exe = arg[i]; i = i - 1 end
  return exe
end

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

describe("JSON numbers under a comma-decimal locale", function()
  it("are read and written with '.'", function()
    local load_ = loadstring or load
    local check = assert(load_(LOCALE_CHECK))
    -- a comma locale the machine already has
    for _, name in ipairs { "de_DE.UTF-8", "de_DE.utf8", "de_DE", "fr_FR.UTF-8", "fr_FR.utf8",
                            "ru_RU.UTF-8", "nl_NL.UTF-8" } do
      if os.setlocale(name, "numeric") then
        os.setlocale("C", "numeric")
        assert.are.equal("ok", check(core, name))
        return
      end
    end
    -- none installed: generate one and test in a child interpreter
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. shell_quote(dir)))
    local ok = os.execute("localedef -i de_DE -f UTF-8 " .. shell_quote(dir .. "/de_DE.UTF-8") ..
                          " >/dev/null 2>&1")
    local f = io.open(dir .. "/de_DE.UTF-8/LC_NUMERIC", "rb")
    if not f then
      os.execute("rm -rf " .. shell_quote(dir))
      error("no comma-decimal locale installed and localedef could not make one " ..
            "(install the Debian package 'locales'); localedef said " .. tostring(ok))
    end
    f:close()
    local script = dir .. "/check.lua"
    f = assert(io.open(script, "wb"))
    f:write("package.path = ", string.format("%q", package.path), "\n",
            "package.cpath = ", string.format("%q", package.cpath), "\n",
            "local check = assert((loadstring or load)(", string.format("%q", LOCALE_CHECK), "))\n",
            "io.write(check(require('devtools_tools.core'), 'de_DE.UTF-8'))\n")
    f:close()
    local p = io.popen("LOCPATH=" .. shell_quote(dir) .. " " .. shell_quote(interpreter()) .. " " ..
                       shell_quote(script) .. " 2>&1")
    local out = p:read("*a")
    p:close()
    os.execute("rm -rf " .. shell_quote(dir))
    assert.are.equal("ok", out)
  end)
end)

describe("devtools_tools.base.json", function()
  it("shares null with core and lua-cjson", function()
    local cjson = require("cjson")
    assert.are.equal(core.null, json.null)
    assert.are.equal(cjson.null, json.null)
    assert.is_true(json.null == cjson.null)
    assert.are.equal(cjson.null, json.decode("[null]")[1])
    assert.are.equal("[null]", json.encode({ cjson.null }))
    assert.are.equal(core.array_mt, json.array_mt)
  end)

  it("marks and recognises arrays", function()
    local t = { 1 }
    assert.are.equal(t, json.array(t))
    assert.is_true(json.is_array(t))
    assert.is_false(json.is_array({ 1 }))
    assert.is_false(json.is_array("x"))
    local e = json.array()
    assert.is_true(json.is_array(e))
    assert.are.equal("[]", json.encode(e))
    assert.is_true(json.is_array(json.decode("[]")))
    assert.is_false(json.is_array(json.decode("{}")))
    local ok, err = errors.catch(json.array, "x")
    assert.is_false(ok)
    assert.are.equal("bad_argument", err.code)
  end)

  it("encodes and decodes with options", function()
    assert.are.equal('{"a":[1,2]}', json.encode({ a = { 1, 2 } }))
    assert_same(json.decode('{"a":[1,2]}'), { a = A { 1, 2 } })
    assert.are.equal("[[1]]", json.encode({ { 1 } }, { max_depth = 2 }))
    assert_same(json.decode("[[1]]", { max_depth = 2 }), A { A { 1 } })
  end)

  local raise_cases = {
    { function() return json.encode(print) end, "bad_argument", "function" },
    { function() return json.encode("\255") end, "bad_argument", "offset 0" },
    { function() local t = {}; t[1] = t; return json.encode(t) end, "bad_argument", "a cycle?" },
    { function() return json.encode({ { 1 } }, { max_depth = 1 }) end, "bad_argument", "deeper than 1" },
    { function() return json.decode("[1,]") end, "protocol_error", "byte offset 3" },
    { function() return json.decode("") end, "protocol_error", "byte offset 0" },
    { function() return json.decode(string.rep("[", 5000)) end, "protocol_error", "deeper than 1000" },
    { function() return json.decode("[[1]]", { max_depth = 1 }) end, "protocol_error", "deeper than 1" },
    { function() return json.decode(42) end, "bad_argument", "string" },
    { function() return json.encode({ a = 0 / 0 }, { finite = true }) end, "bad_argument", "NaN is not" },
    { function() return json.encode({ math.huge }, { finite = true }) end, "bad_argument", "inf is not" },
    { function() return json.encode(-math.huge, { finite = true }) end, "bad_argument", "-inf is not" },
    { function() return json.encode(1, { max_depth = 0 / 0 }) end, "bad_argument", "got NaN" },
    { function() return json.encode(1, { max_depth = "2" }) end, "bad_argument", "max_depth must be" },
    { function() return json.encode(1, { finite = "yes" }) end, "bad_argument", "finite must be a boolean" },
    { function() return json.encode(1, { maxdepth = 2 }) end, "bad_argument", "unknown option 'maxdepth'" },
    { function() return json.encode(1, "opts") end, "bad_argument", "opts must be a table" },
    { function() return json.decode("1", { max_depth = -1 }) end, "bad_argument", "got -1" },
    { function() return json.decode("1", { finite = true }) end, "bad_argument", "unknown option 'finite'" },
    { function() return json.array(setmetatable({}, { __metatable = false })) end, "bad_argument", "protected" },
  }
  for i, c in ipairs(raise_cases) do
    it("raises " .. c[2] .. " (#" .. i .. ")", function()
      local ok, err = errors.catch(c[1])
      assert.is_false(ok)
      assert.is_true(errors.is_error(err))
      assert.are.equal(c[2], err.code)
      assert.truthy(err.message:find(c[3], 1, true), err.message)
    end)
  end

  it("writes NaN and infinities as null, as JSON.stringify does, unless finite = true", function()
    assert.are.equal('{"a":null}', json.encode({ a = 0 / 0 }))
    assert.are.equal("[null,null]", json.encode({ math.huge, -math.huge }))
    assert.are.equal("[1.5,-2]", json.encode({ 1.5, -2 }, { finite = true }))
    assert.are.equal("[null]", json.encode({ 0 / 0 }, { finite = false }))
  end)

  it("decodes null at the top level to json.null, not nil", function()
    assert.are.equal(json.null, json.decode("null"))
  end)

  -- utf8_error: nil for UTF-8 as RFC 3629 has it, else the first bad byte
  local utf8_cases = {
    { "", nil }, { "plain ascii, longer than eight bytes", nil },
    { "caf\195\169 \226\130\172 \240\159\152\128", nil },      -- 2, 3 and 4 bytes
    { "\244\143\191\191", nil },                                   -- U+10FFFF
    { "\239\191\189", nil },                                        -- U+FFFD
    { "abc\255", 4 }, { "\128", 1 }, { "ab\195", 3 },                 -- a stray byte; a cut one
    { "\192\128", 1 }, { "\224\128\128", 1 }, { "\240\128\128\128", 1 },   -- overlong forms
    { "x\237\160\128", 2 },                                           -- a surrogate's bytes (D800)
    { "\237\191\191", 1 },                                           -- DFFF
    { "\244\144\128\128", 1 },                                       -- past U+10FFFF
    { "\195\40", 1 },                                                -- a lead byte, then ASCII
    { string.rep("a", 17) .. "\255" .. string.rep("b", 9), 18 },      -- past the 8-byte steps
  }
  for i, c in ipairs(utf8_cases) do
    it("utf8_error finds the first byte that is not UTF-8 (#" .. i .. ")", function()
      local at = json.utf8_error(c[1])
      assert.is_true(at == c[2], tostring(at))
    end)
  end

  it("writes lone surrogates as U+FFFD with replace_surrogates, pairs and the rest as they are", function()
    local lone = json.decode('"a\\ud800b\\udfffc"')
    assert.are.equal('"a\\ud800b\\udfffc"', json.encode(lone))
    local fixed = json.encode(lone, { replace_surrogates = true })
    assert.are.equal('"a\239\191\189b\239\191\189c"', fixed)
    assert.is_nil(json.utf8_error(fixed))
    assert.are.equal('["\240\159\152\128"]', json.encode({ json.decode('"\\ud83d\\ude00"') },
      { replace_surrogates = true }))
    local ok, err = errors.catch(json.encode, "\255", { replace_surrogates = true })
    assert.is_false(ok)
    assert.are.equal("bad_argument", err.code)
    ok, err = errors.catch(json.encode, "x", { replace_surrogates = 1 })
    assert.are.equal("bad_argument", err.code)
    ok, err = errors.catch(json.utf8_error, 5)
    assert.are.equal("bad_argument", err.code)
  end)
end)

-- base64 (core.base64.decode, devtools_tools.base.base64): CDP's binary data
describe("base64 decoding", function()
  local base64 = require("devtools_tools.base.base64")
  local encode = require("support.base64_ref").encode

  it("gives back every byte, with each padding, and ignores line breaks", function()
    local all = {}
    for i = 0, 255 do all[#all + 1] = string.char(i) end
    all = table.concat(all)
    for cut = 0, 5 do                               -- lengths 251..256: "==", "=" and none
      local s = all:sub(1, #all - cut)
      assert.equal(s, base64.decode(encode(s)))
    end
    assert.equal("", base64.decode(""))
    assert.equal("A", base64.decode("QQ=="))
    assert.equal("AB", base64.decode("QUI="))
    assert.equal("ABC", base64.decode("QUJD"))
    assert.equal("ABCD", base64.decode("QUJD\r\nRA==\n"))
    assert.equal("", base64.decode("\r\n"))
    local big = {}
    for i = 1, 300000 do big[i] = string.char((i * 7919) % 256) end
    big = table.concat(big)
    assert.equal(big, base64.decode(encode(big)))
  end)

  it("refuses anything else as a protocol_error naming the byte", function()
    for _, c in ipairs({
      { "QUJ", 3 },                -- not a multiple of 4
      { "Q!JD", 1 }, { "!UJD", 1 }, -- one of a group's first two bytes
      { "QU!D", 3 }, { "QUJ!", 4 },
      { "QQ=A", 3 },               -- "=" then more
      { "QQ==QUJD", 4 },           -- padding before the end
      { "Q===", 1 }, { "QQ=#", 4 }, { "QUJD QUJ", 5 },
      { "QU\r\nJ!", 4 },           -- counted without the line break
    }) do
      local bytes, msg = core.base64.decode(c[1])
      assert.is_nil(bytes, c[1])
      assert.equal("not base64 text at byte " .. c[2], msg, c[1])
      local e = errors.catch(base64.decode, c[1]) and nil or select(2, errors.catch(base64.decode, c[1]))
      assert.equal("protocol_error", e.code)
      assert.equal("base64: not base64 text at byte " .. c[2], e.message)
    end
  end)
end)
