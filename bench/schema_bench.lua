-- schema_bench.lua - the cost of validating a typical tool call's arguments,
-- as a ratio to one JSON encode of the same arguments, measured in one run.
--
-- usage (from the repo root): lua5.4 bench/schema_bench.lua [BUILD_DIR]
-- The schema is what pages typically write: 5 properties, one $ref into
-- definitions, one pattern, required, additionalProperties false.

local build = arg and arg[1] or "build/lua5.4"
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = "./" .. build .. "/?.so;" .. package.cpath

local schema = require "devtools_tools.schema"

local json = require "devtools_tools.base.json"
local encode = json.encode

package.path = "./bench/?.lua;" .. package.path
local typical = require "typical_tool"
local tool_schema, args = typical.schema, typical.args

local validate = schema.compile(tool_schema)
assert(validate(args) == true, "the bench arguments must be valid")
assert(encode(args))

local clock = os.clock

local function time_per_call(fn, n)
  local t0 = clock()
  for _ = 1, n do fn(args) end
  return (clock() - t0) / n
end

-- Calibrate to about 0.1 s per round, then alternate the two in 11 rounds:
-- the ratio of each round compares them under the same load, and the
-- median ratio is what is reported (with the best time of each).
local n = 1000
while time_per_call(validate, n) * n < 0.1 do n = n * 2 end
local best_v, best_e, ratios = math.huge, math.huge, {}
for r = 1, 11 do
  local tv = time_per_call(validate, n)
  local te = time_per_call(encode, n)
  best_v, best_e = math.min(best_v, tv), math.min(best_e, te)
  ratios[r] = tv / te
end
table.sort(ratios)

print(("schema bench (%s, %d calls per round, 11 rounds)"):format(_VERSION, n))
print(("  validate: %.3f us/call (best round)"):format(best_v * 1e6))
print(("  encode:   %.3f us/call (best round, devtools_tools.base.json.encode)"):format(best_e * 1e6))
print(("  ratio validate/encode: %.2f (median of rounds; %.2f to %.2f)"):format(
  ratios[6], ratios[1], ratios[11]))
