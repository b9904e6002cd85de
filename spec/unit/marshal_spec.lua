-- Unit: tools/marshal's check of a call's arguments says "a list" exactly
-- where the encoder writes a JSON array (json.kind, the one judge).

local dt = require "devtools_tools"
local json = require "devtools_tools.base.json"
local marshal = require "devtools_tools.tools.marshal"

describe("marshal.check_args", function()
  local cases = {
    { "nil is no arguments", nil, "empty" },
    { "an empty table", {}, "empty" },
    { "named arguments", { a = 1 }, "object" },
    { "a list", { 1, 2 }, "array" },
    { "a marked array, even empty", dt.array({}), "array" },
    { "a table with a list part and names: an object, as the encoder writes it", { 1, b = 2 }, "object" },
    { "keys that are not 1..n: an object", { [2] = "x" }, "object" },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local kind = c[2] == nil and "empty" or json.kind(c[2])
      assert.equal(c[3], kind)
      local ok, err = pcall(marshal.check_args, c[2], "call")
      if kind == "array" then
        assert.is_false(ok)
        assert.equal("bad_argument", err.code)
      else
        assert.is_true(ok, tostring(err))
      end
    end)
  end
end)
