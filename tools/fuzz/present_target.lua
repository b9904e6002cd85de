-- tools/fuzz/present_target.lua: `make fuzz` cases for the front ends'
-- walks of a page's schema (devtools_tools.present.*): the skeleton, the
-- one-line summary, the parameter list, the types of a property and the
-- typing of key=value words - every walk a front end makes of a schema a
-- page sent, before the library's validator has seen it.
--
-- A case is a random draft-07 schema (the validator target's generator,
-- so with $refs that dangle, loop or reach the root), sometimes made
-- hostile: required properties that $ref the root several times, chains
-- of definitions each anyOf several $refs to the next, a $ref loop,
-- thousands of properties, nesting far deeper than the walks go, refs
-- with percent escapes and ~ tokens. Checks: no walk raises; each ends
-- within TIME_LIMIT seconds (a budget, not luck); the skeleton, once its
-- comment lines are taken out, is JSON that decodes; a skeleton that says
-- it was cut starts with the cut note; the summary is one clean line;
-- typing gives a table or a message; nothing changes the schema.

local json = require "devtools_tools.base.json"
local core = require "devtools_tools.core"
local S = require "fuzz.schema_target"
local J = require "fuzz.json_target"
local pschema = require "devtools_tools.present.schema"
local skeleton = require "devtools_tools.present.skeleton"
local pargs = require "devtools_tools.present.args"

local T = { name = "present", batch = 200 }

T.TIME_LIMIT = 1.0          -- seconds one walk of one schema may take (its budget is 0.05 s)

local array_mt = json.array_mt
local function arr(t) return setmetatable(t, array_mt) end

local NAMES = { "a", "b", "c", "x", "__index", "a b", "é", "~", "/" }

-- hostile shapes, each a function of the generator
local HOSTILE = {
  -- n required properties, each a $ref to the root
  function(r)
    local props, req = {}, {}
    for i = 1, r:int(2, 6) do
      local k = "p" .. i
      props[k] = { ["$ref"] = "#" }
      req[i] = k
    end
    return { type = "object", properties = props, required = arr(req) }
  end,
  -- a chain of definitions, each anyOf k $refs to the next
  function(r)
    local defs, n, k = {}, r:int(8, 40), r:int(2, 4)
    for i = 0, n - 1 do
      local br = {}
      for j = 1, k do br[j] = { ["$ref"] = "#/definitions/d" .. (i + 1) } end
      defs["d" .. i] = { [r:pick({ "anyOf", "oneOf", "allOf" })] = arr(br) }
    end
    defs["d" .. n] = { type = r:pick({ "integer", "string", "boolean" }) }
    return { type = "object", properties = { a = { ["$ref"] = "#/definitions/d0" } }, required = arr({ "a" }),
      definitions = defs }
  end,
  -- a $ref loop, and a ref to itself
  function(r)
    return { type = "object", properties = { a = { ["$ref"] = "#/definitions/x" }, b = { ["$ref"] = "#/properties/b" } },
      required = arr({ "a", "b" }), definitions = { x = { ["$ref"] = "#/definitions/y" }, y = { ["$ref"] = "#/definitions/x" } } }
  end,
  -- thousands of properties, all required, with defaults and enums
  function(r)
    local props, req = {}, {}
    for i = 1, r:int(1000, 20000) do
      local k = "k" .. i
      props[k] = r:chance(0.5) and { type = "string", enum = arr({ "x", "y" }) } or { default = i }
      req[#req + 1] = k
    end
    return { type = "object", properties = props, required = arr(req) }
  end,
  -- nesting far deeper than the walks go
  function(r)
    local s = { type = "integer" }
    for _ = 1, r:int(50, 400) do s = { type = "object", properties = { n = s }, required = arr({ "n" }) } end
    return s
  end,
  -- pointers with escapes, good and bad
  function(r)
    return { type = "object", definitions = { ["a b"] = { type = "integer" }, ["x/y"] = { type = "boolean" },
      ["t~"] = { enum = arr({ 1, 2 }) } }, properties = {
        a = { ["$ref"] = "#/definitions/a%20b" }, b = { ["$ref"] = "#/definitions/x~1y" },
        c = { ["$ref"] = "#/definitions/t~0" }, d = { ["$ref"] = r:pick({ "#/definitions/%zz", "#/definitions/%",
          "#/definitions/a%2", "#/items/0", "#/required/0", "#/", "other.json#/x" }) } },
      required = arr({ "a", "b", "c", "d" }) }
  end,
  -- every branch keyword at once, each pointing back at the root
  function(r)
    local back = arr({ { ["$ref"] = "#" }, { ["$ref"] = "#" }, { ["$ref"] = "#" } })
    return { anyOf = back, oneOf = back, allOf = back, properties = { a = { ["$ref"] = "#" } },
      required = arr({ "a" }) }
  end,
}

function T.gen(r)
  local c
  if r:chance(0.5) then
    c = { schema = S.gen(r).schema }
  else
    c = { schema = HOSTILE[r:int(1, #HOSTILE)](r) }
    if r:chance(0.3) then                         -- hidden under a random schema
      local outer = S.gen(r).schema
      if type(outer) == "table" then
        outer.properties = outer.properties or {}
        if type(outer.properties) == "table" then outer.properties.h = c.schema end
        outer.definitions = type(outer.definitions) == "table" and outer.definitions or {}
        outer.definitions.h = c.schema
        c.schema = outer
      end
    end
  end
  -- words a person might type for it
  c.words = {}
  for i = 1, r:int(0, 4) do
    c.words[i] = r:pick(NAMES) .. r:pick({ "=", ":=", "=" }) .. r:pick({ "1", "-0", "x", "null", "true", "[1]", "1e999", "{" })
  end
  return c
end

local function show(v)
  local ok, s = pcall(json.encode, v)
  if not ok then return "(not JSON: " .. tostring(s) .. ")" end
  if #s > 4000 then s = s:sub(1, 4000) .. "... (" .. #s .. " bytes)" end
  return s
end

function T.show(c)
  return ("schema %s\n   words %s"):format(show(c.schema), table.concat(c.words, " "))
end

local function copy(v, seen)
  if type(v) ~= "table" then return v end
  seen = seen or {}
  if seen[v] then return seen[v] end
  local t = {}
  seen[v] = t
  for k, x in pairs(v) do t[k] = copy(x, seen) end
  return setmetatable(t, getmetatable(v))
end

-- timed(name, fn) -> nil | failure: fn raised, or took longer than TIME_LIMIT
local function timed(name, fn)
  local t0 = core.now()
  local ok, err = pcall(fn)
  local t = core.now() - t0
  if not ok then return name .. " raised: " .. tostring(err) end
  if t > T.TIME_LIMIT then return ("%s took %.2f s (limit %.2f)"):format(name, t, T.TIME_LIMIT) end
  return nil, err
end

function T.run(c)
  local s = c.schema
  local before = copy(s)
  local props = type(s) == "table" and type(s.properties) == "table" and s.properties or {}
  local bad = timed("skeleton", function()
    local text, cut = skeleton.text(s)
    local body = skeleton.strip_notes(text)
    local ok, v = pcall(json.decode, body)
    if not ok then error("the skeleton is not JSON: " .. tostring(v) .. ": " .. text:sub(1, 300), 0) end
    if cut ~= (text:sub(1, #skeleton.CUT_NOTE) == skeleton.CUT_NOTE) then
      error("the skeleton's cut note and its cut flag disagree", 0)
    end
    if type(v) ~= "table" and v ~= json.null then error("the skeleton is not an object: " .. body:sub(1, 100), 0) end
  end)
  bad = bad or timed("summary", function()
    local line = pschema.summary(s)
    if type(line) ~= "string" or line:find("[%z\1-\31\127]") then error("the summary is not one clean line", 0) end
  end)
  bad = bad or timed("params", function()
    for _, p in ipairs(pschema.params(s, nil, "all")) do
      if type(p.name) ~= "string" or type(p.required) ~= "boolean" then error("a parameter without name or required", 0) end
    end
  end)
  bad = bad or timed("types", function()
    local b = pschema.budget()
    for k, p in pairs(props) do
      if type(k) == "string" then
        for t in pairs(pschema.types(pschema.deref(s, p), s, b)) do
          if type(t) ~= "string" then error("a type that is not a string", 0) end
        end
      end
    end
  end)
  bad = bad or timed("args", function()
    local args, err = pargs.from_words(s, c.words)
    if (args == nil) == (err == nil) then error("from_words gave both or neither of args and a message", 0) end
    if err ~= nil and type(err) ~= "string" then error("from_words' message is not a string", 0) end
  end)
  if bad then return bad end
  if not J.deep_equal(before, s) then return "a walk changed the schema" end
  return nil
end

return T
