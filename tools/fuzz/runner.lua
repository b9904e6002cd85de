-- tools/fuzz/runner.lua: runs one batch of `make fuzz` cases in a child
-- process, so that a crash or a hang ends the batch and not the fuzzer.
--
--   runner.lua run  TARGET SEED FIRST COUNT UNTIL STATUS FAILURES
--   runner.lua show TARGET SEED CASE
-- run: cases FIRST .. FIRST+COUNT-1 (stopping early once core.now() passes
-- UNTIL); before each case it writes "at N" to the file STATUS, so the
-- parent knows which input a crash or hang belongs to, and at the end
-- "done N" (the next case to run), after STATUS.counts, the tallies a
-- target kept through ctx.count ("name N" lines). A case whose checks
-- fail is appended to FAILURES as "N<TAB>what failed" and the batch goes
-- on.
-- show: prints case CASE's input, for the report.
-- It must never catch more than a case's own errors: a crash stays a crash.

local dir = arg[0]:match("^(.*)/fuzz/runner%.lua$") or "tools"
local build = os.getenv("DEVTOOLS_TOOLS_BUILD") or "build/lua5.4"
package.path = dir .. "/?.lua;./lua/?.lua;./lua/?/init.lua;./spec/?.lua;" .. package.path
package.cpath = "./" .. build .. "/?.so;" .. package.cpath

local core = require "devtools_tools.core"
local rng = require "fuzz.rng"

local mode, target, seed = arg[1], arg[2], math.tointeger(tonumber(arg[3]))
local T = require("fuzz." .. target .. "_target")
local ctx = { build = build, dir = dir, lua = os.getenv("FUZZ_LUA") or "/usr/bin/lua5.4",
              seed = seed, target = target }

if mode == "show" then
  local i = math.tointeger(tonumber(arg[4]))
  io.write(T.show(T.gen(rng.new(seed, target, i))), "\n")
  os.exit(0)
end

local first, count = math.tointeger(tonumber(arg[4])), math.tointeger(tonumber(arg[5]))
local until_t, status_path, failures_path = tonumber(arg[6]), arg[7], arg[8]

local status = assert(io.open(status_path, "w"))
local function say(s)
  status:seek("set")
  status:write(("%-40s\n"):format(s))
  status:flush()
end

-- ctx.count(name, n): a target's own tallies (the MCP target's requests
-- checked), written beside the status at the end of the batch
local counts = {}
function ctx.count(name, n) counts[name] = (counts[name] or 0) + n end

local i = first
while i < first + count and (i == first or core.now() < until_t) do
  say("at " .. i)
  ctx.index = i
  local ok, failure = pcall(T.run, T.gen(rng.new(seed, target, i)), ctx)
  if not ok then failure = "the case itself raised: " .. tostring(failure) end
  if failure then
    local f = assert(io.open(failures_path, "a"))
    f:write(i, "\t", (tostring(failure):gsub("\n", "\\n")), "\n")
    f:close()
  end
  i = i + 1
end
local cf = assert(io.open(status_path .. ".counts", "w"))
for name, n in pairs(counts) do cf:write(name, " ", n, "\n") end
cf:close()
say("done " .. i)
status:close()
