-- Run by spec/unit/nojit_spec.lua under LuaJIT: a workload of the library's
-- own Lua code (schema compiling and validating through generated
-- validators, error formatting) with LuaJIT's trace events watched.
-- Prints "ours N others N" and returns {ours, others, failed}: the traces
-- compiled that start in the library (its modules and the validators it
-- generates) and elsewhere (this file), and how many values the workload
-- found invalid. nvim_spec runs it inside Neovim with dofile.
local jit = require "jit"
local util = require "jit.util"

local started, ours, others = {}, 0, 0
local function watch(what, tr, func, pc)
  if what == "start" then
    started[tr] = util.funcinfo(func, pc).source or "?"
  elseif what == "stop" then
    local src = started[tr] or "?"
    if src:find("devtools_tools/", 1, true) or src == "=schema" then
      ours = ours + 1
    else
      others = others + 1
    end
  end
end
jit.attach(watch, "trace")

local schema = require "devtools_tools.schema"
local check = schema.compile({
  type = "object",
  properties = { id = { type = "integer", minimum = 0 }, tags = { type = "array", items = { type = "string" } } },
  patternProperties = { ["^x_"] = { type = "number" } },
  additionalProperties = { type = "string", maxLength = 40 },
  required = { "id" },
})
local failed = 0
for i = 1, 4000 do
  local v = { id = i, tags = { "a", "b", "c" }, x_1 = i / 2, name = "n", kind = "k", note = "t" }
  if i % 4 == 0 then v.extra = i end                 -- invalid: not a string
  local ok, errs = check(v)
  if not ok then
    failed = failed + 1
    schema.format_errors(errs)
  end
end
jit.attach(watch)                                     -- detached
assert(failed == 1000, "the workload validated wrongly: " .. failed)
io.write(("ours %d others %d\n"):format(ours, others))
return { ours = ours, others = others, failed = failed }
