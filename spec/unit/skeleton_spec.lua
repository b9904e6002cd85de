-- present.skeleton, what Neovim's argument buffer starts with (issue 34.9):
-- each enum's allowed values as comment lines above the JSON, bounded and
-- one line each whatever the page's values hold; values already typed in
-- place of the placeholders. (present_spec.lua has the skeleton's values.)
local json = require "devtools_tools.base.json"
local skeleton = require "devtools_tools.present.skeleton"
local pschema = require "devtools_tools.present.schema"

-- A budget of nodes, not of time: a loaded machine must not cut these.
local function roomy() return pschema.budget({ seconds = 60 }) end

local function schema(t) return json.decode(json.encode(t)) end    -- as a page's arrives

local function body(text)
  return json.decode(skeleton.strip_notes(text))
end

local function notes(text)
  local out = {}
  for l in text:gmatch("[^\n]+") do
    if l:match("^//") then out[#out + 1] = l end
  end
  return out
end

describe("present.skeleton's enum notes", function()
  it("lists every value of each enum, with its path, above the JSON", function()
    local s = schema({ type = "object", required = { "table", "filter" }, properties = {
      table = { type = "string", enum = { "orders", "leads", "feature_flags" } },
      filter = { type = "object", required = { "kind" }, properties = {
        kind = { enum = { 1, "two", json.null, true } } } },
      mode = { enum = { "a", "b" }, default = "b" },
      ["a/b~c"] = { enum = { "x", "y" }, default = "y" },
      one = { enum = { "only" }, default = "only" },
    } })
    local t = skeleton.text(s, roomy())
    assert.same({
      '// /table: one of "orders", "leads", "feature_flags"',
      '// /filter/kind: one of 1, "two", null, true',
      '// /a~1b~0c: one of "x", "y"',
      '// /mode: one of "a", "b"',
    }, notes(t))
    assert.same({ table = "orders", filter = { kind = 1 }, mode = "b", ["a/b~c"] = "y", one = "only" }, body(t))
  end)

  it("keeps a note one line of at most NOTE_WIDTH bytes, and at most MAX_NOTES of them", function()
    local many = {}
    for i = 1, 500 do many[i] = ("value-%03d"):format(i) end
    local props, req = {}, {}
    for i = 1, 30 do
      local k = ("k%02d"):format(i)
      props[k] = { enum = { "x", "y" } }
      req[#req + 1] = k
    end
    props.big = { enum = many }
    props.evil = { enum = { "line\nbreak", "\27[31mred", "\226\128\174rtl", ("z"):rep(400) } }
    table.insert(req, 1, "evil")
    table.insert(req, 1, "big")
    local t = skeleton.text(schema({ type = "object", required = req, properties = props }), roomy())
    local n = notes(t)
    assert.equal(skeleton.MAX_NOTES, #n)
    assert.truthy(n[1]:find('^// /big: one of "value%-001", "value%-002", .*, %.%.%. %(500 values%)$'), n[1])
    assert.truthy(n[2]:find('^// /evil: one of "line\\nbreak", "\\u001b%[31mred", "\\u202ertl", %.%.%. %(4 values%)$'), n[2])
    for _, l in ipairs(n) do
      assert.is_true(#l <= skeleton.NOTE_WIDTH, #l .. ": " .. l)
      assert.falsy(l:find("[%c\128-\255]"), l)          -- (escaped: ASCII, no controls)
    end
    assert.equal("value-001", body(t).big)
  end)

  it("shows what was given in place of the placeholders, its other keys after them, sorted", function()
    local s = schema({ type = "object", required = { "a", "b" }, properties = {
      a = { type = "integer" }, b = { enum = { "p", "q" } }, c = { type = "string" } } })
    local t = skeleton.text(s, roomy(), json.decode('{"b": "q", "z": [1], "c": "x"}'))
    assert.same({ '// /b: one of "p", "q"' }, notes(t))
    assert.same({ a = 0, b = "q", c = "x", z = { 1 } }, body(t))
    assert.truthy(t:find('"a": 0,\n  "b": "q",\n  "c": "x",\n  "z": %['), t)
    -- a given that is no object is left out
    assert.same({ a = 0, b = "p" }, body((skeleton.text(s, roomy(), json.decode("[1, 2]")))))
  end)

  it("puts the cut note first, then the enum notes", function()
    local s = schema({ definitions = { n = { type = "object", required = { "a", "b", "c", "e" },
      properties = { a = { ["$ref"] = "#/definitions/n" }, b = { ["$ref"] = "#/definitions/n" },
        c = { ["$ref"] = "#/definitions/n" }, e = { enum = { 1, 2 } } } } }, ["$ref"] = "#/definitions/n" })
    local t, cut = skeleton.text(s, pschema.budget({ nodes = 400, seconds = 60 }))
    assert.is_true(cut)
    local n = notes(t)
    assert.equal(skeleton.CUT_NOTE, n[1])
    assert.truthy(n[2]:find("^// /a/a/"), n[2])
    assert.is_true(#n <= skeleton.MAX_NOTES + 1)
    assert.equal("table", type(body(t)))
  end)
end)
