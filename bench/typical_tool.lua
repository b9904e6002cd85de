-- typical_tool.lua: the "typical tool" of the schema measure (issue 3):
-- 5 properties, one $ref, one pattern, and valid arguments for it. Shared
-- by bench/bench.lua and bench/schema_bench.lua so both measure the same.
local A = require("devtools_tools.base.json").array

return {
  schema = {
    type = "object",
    definitions = { quantity = { type = "integer", minimum = 1, maximum = 1000 } },
    properties = {
      sku = { type = "string", pattern = "^[A-Z]{3}-\\d{4}$" },
      qty = { ["$ref"] = "#/definitions/quantity" },
      note = { type = "string", maxLength = 200 },
      gift = { type = "boolean" },
      tags = { type = "array", items = { type = "string" }, maxItems = 10 },
    },
    required = A { "sku", "qty" },
    additionalProperties = false,
  },
  args = { sku = "ABC-1234", qty = 3, note = "leave it at the door",
    gift = false, tags = A { "fragile", "gift-wrap" } },
}
