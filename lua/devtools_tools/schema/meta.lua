-- devtools_tools.schema.meta: the draft-07 meta-schema, built in so that a
-- $ref to http://json-schema.org/draft-07/schema# resolves offline.
--
-- meta.documents[uri]() returns a fresh copy each time: the compiler may
-- keep references into it.
--
-- What it must never do: hand out a table it keeps (nothing shared is ever
-- modified), or fetch a schema from anywhere but this file.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local setmetatable = setmetatable
local array_mt = require("devtools_tools.core").array_mt

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

return {
  documents = { ["http://json-schema.org/draft-07/schema"] = draft07 },
}
