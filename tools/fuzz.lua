-- tools/fuzz.lua: `make fuzz`, seeded and bounded fuzzing of the C core
-- through its Lua API: the JSON codec, the framing of both transports
-- and the HTTP GET that finds a browser's websocket, against fake peers,
-- the schema validator and the base64 decoder; and the front ends' walks
-- of a page's schema (present/: skeleton, summary, parameters, typing),
-- each within a time limit per schema; and the MCP server fed JSON-RPC
-- frames (tools/fuzz/mcp_target.lua: framing, ids, methods, params,
-- invalid UTF-8, batches, cancel races), which counts the requests it
-- checked and those left unanswered.
--
--   lua5.4 tools/fuzz.lua            (make fuzz runs it on the ASan/UBSan build)
-- Environment:
--   DEVTOOLS_TOOLS_BUILD  build directory of core.so (make fuzz: build/asan)
--   FUZZ_SEED             seed (default: from the clock; always printed)
--   FUZZ_ITERATIONS       cases per target
--   FUZZ_SECONDS          time for all targets together (default 60 when
--                         FUZZ_ITERATIONS is not set either)
--   FUZZ_TARGETS          comma list of json, pipe, ws, http, schema, base64, present, mcp (default all)
--   FUZZ_CASE             run only this case (with FUZZ_SEED and one target)
--   FUZZ_CASE_TIMEOUT     seconds one case may take before it is a hang (20)
-- Cases run in batches in child processes (tools/fuzz/runner.lua); a child
-- that dies is a crash, one whose current case makes no progress for
-- FUZZ_CASE_TIMEOUT seconds is a hang (it is killed), and a case whose
-- checks fail is a failed check. Each is printed with the seed, the case
-- number, the command that runs it again and the input. Ends with
-- "N inputs tried, N crashes, N hangs, N failed checks" and exits non-zero
-- on any. It must never leave a child behind.

local dir = arg[0]:match("^(.*)/fuzz%.lua$") or "tools"
local build = os.getenv("DEVTOOLS_TOOLS_BUILD") or "build/lua5.4"
package.path = dir .. "/?.lua;./lua/?.lua;./lua/?/init.lua;./spec/?.lua;" .. package.path
package.cpath = "./" .. build .. "/?.so;" .. package.cpath

local core = require "devtools_tools.core"

local ALL = { "json", "pipe", "ws", "http", "schema", "base64", "present", "mcp" }

local function env_int(name)
  local v = os.getenv(name)
  if v == nil or v == "" then return nil end
  local n = math.tointeger(tonumber(v))
  if not n or n < 0 then
    io.stderr:write(("fuzz: %s must be a non-negative integer, got %q\n"):format(name, v))
    os.exit(2)
  end
  return n
end

-- The interpreter running us, as a path core.process.spawn can execute.
local function interpreter()
  local i = -1
  while arg[i - 1] do i = i - 1 end
  local name = arg[i]
  if name:find("/") then return name end
  local p = assert(io.popen("command -v " .. name))
  local path = p:read("*l")
  p:close()
  return path or ("/usr/bin/" .. name)
end

local seed = env_int("FUZZ_SEED") or (os.time() * 1000 + math.floor(core.now() * 1000) % 1000)
local iterations = env_int("FUZZ_ITERATIONS")
local seconds = env_int("FUZZ_SECONDS")
local single = env_int("FUZZ_CASE")
local case_timeout = env_int("FUZZ_CASE_TIMEOUT") or 20
if not iterations and not seconds then seconds = 60 end

local targets = {}
for name in (os.getenv("FUZZ_TARGETS") or table.concat(ALL, ",")):gmatch("[^,%s]+") do
  local known = false
  for _, t in ipairs(ALL) do known = known or t == name end
  if not known then
    io.stderr:write("fuzz: unknown target " .. name .. " (known: " .. table.concat(ALL, ", ") .. ")\n")
    os.exit(2)
  end
  targets[#targets + 1] = name
end
if single and #targets ~= 1 then
  io.stderr:write("fuzz: FUZZ_CASE needs FUZZ_TARGETS set to one target\n")
  os.exit(2)
end

local lua = interpreter()
local runner = dir .. "/fuzz/runner.lua"
local scratch = assert(core.fs.mkdtemp("devtools_tools-fuzz-"))
local status_path, failures_path = scratch .. "/status", scratch .. "/failures"
local child_env = { FUZZ_LUA = lua, DEVTOOLS_TOOLS_BUILD = build }

local MAX_PROBLEMS = 5      -- per target: one bug tends to show up many times
local totals = { tried = 0, crashes = 0, hangs = 0, failed = 0 }
local reports = {}

local function read_file(path)
  local f = io.open(path)
  if not f then return "" end
  local s = f:read("a")
  f:close()
  return s
end

local function show_case(target, i)
  local proc = core.process.spawn({ lua, runner, "show", target, tostring(seed), tostring(i) },
    { env = child_env, stderr_size = 8192 })
  if not proc then return "(could not generate it again)" end
  local how = proc:wait(core.now() + 30)
  local out = proc:stderr()
  proc:close(0)
  if how == nil then return "(generating it again timed out)" end
  return (out:gsub("%s+$", ""))
end

local function report(kind, target, i, detail)
  local again = ("FUZZ_SEED=%d FUZZ_TARGETS=%s FUZZ_CASE=%d make fuzz"):format(seed, target, i)
  local text = ("== %s: target %s, seed %d, case %d\n   again: %s\n   input: %s\n%s"):format(
    kind, target, seed, i, again, show_case(target, i), detail)
  reports[#reports + 1] = text
  io.write(text, "\n")
  io.flush()
end

local function tail(s, n)
  if #s <= n then return s end
  return "..." .. s:sub(-n)
end

-- Runs cases first.. of target until the count or the time is used up;
-- returns the next case number.
local tallies = {}            -- target -> name -> n (what ctx.count told)

local function run_batch(target, first, count, until_t)
  os.remove(status_path)
  os.remove(status_path .. ".counts")
  os.remove(failures_path)
  local proc, err = core.process.spawn({ lua, runner, "run", target, tostring(seed), tostring(first),
    tostring(count), ("%.3f"):format(math.min(until_t, 1e12)), status_path, failures_path },
    { env = child_env, stderr_size = 32768 })
  if not proc then error("fuzz: cannot start " .. runner .. ": " .. tostring(err)) end
  local current, since = first, core.now()
  local how, code
  while true do
    how, code = proc:wait(core.now() + 0.2)
    local st = read_file(status_path)
    local at = tonumber(st:match("^at (%d+)"))
    if at and at ~= current then current, since = at, core.now() end
    if how then break end
    if core.now() - since > case_timeout then
      proc:close(0)
      totals.hangs = totals.hangs + 1
      totals.tried = totals.tried + (current - first + 1)
      report("hang", target, current, ("   case %d made no progress in %d s; killed\n"):format(current, case_timeout))
      return current + 1
    end
  end
  local out = proc:stderr()
  proc:close(0)
  local st = read_file(status_path)
  local done = tonumber(st:match("^done (%d+)"))
  local t = tallies[target] or {}
  tallies[target] = t
  for name, n in read_file(status_path .. ".counts"):gmatch("(%S+) (%d+)") do t[name] = (t[name] or 0) + tonumber(n) end
  for line in read_file(failures_path):gmatch("[^\n]+") do
    local i, what = line:match("^(%d+)\t(.*)$")
    totals.failed = totals.failed + 1
    report("failed check", target, tonumber(i), "   " .. what .. "\n")
  end
  if how == "exit" and code == 0 and done then
    totals.tried = totals.tried + (done - first)
    return done
  end
  local at = tonumber(st:match("^at (%d+)")) or first
  totals.crashes = totals.crashes + 1
  totals.tried = totals.tried + (at - first + 1)
  report("crash", target, at, ("   the runner ended with %s %s; its last output:\n%s\n"):format(
    tostring(how), tostring(code), tail(out, 6000)))
  return at + 1
end

io.write(("fuzz: seed %d, targets %s, %s%s, core from %s\n"):format(seed, table.concat(targets, ","),
  iterations and (iterations .. " cases per target") or "",
  seconds and ((iterations and ", " or "") .. seconds .. " s in all") or "", build))
io.flush()

local t_start = core.now()
for n, target in ipairs(targets) do
  local T = require("fuzz." .. target .. "_target")
  local first, limit = 0, iterations or math.huge
  if single then first, limit = single, 1 end
  -- each target gets an equal share of what time is left
  local until_t = seconds and (core.now() + (t_start + seconds - core.now()) / (#targets - n + 1)) or math.huge
  local tried_before, t0 = totals.tried, core.now()
  local problems_before = totals.crashes + totals.hangs + totals.failed
  local next_case = first
  repeat
    local count = math.min(T.batch, first + limit - next_case)
    next_case = run_batch(target, next_case, count, until_t)
    local problems = totals.crashes + totals.hangs + totals.failed - problems_before
  until next_case >= first + limit or core.now() >= until_t or problems >= MAX_PROBLEMS
  if totals.crashes + totals.hangs + totals.failed - problems_before >= MAX_PROBLEMS then
    io.write(("fuzz: %s stopped after %d problems\n"):format(target, MAX_PROBLEMS))
  end
  local t = tallies[target]
  local extra = ""
  if t and t.requests then
    extra = (" (%d requests, %d unanswered)"):format(t.requests, t.unanswered or 0)
  end
  io.write(("fuzz: %-6s %6d inputs in %.1f s%s\n"):format(target, totals.tried - tried_before, core.now() - t0, extra))
  io.flush()
end

core.fs.rmtree(scratch)
local bad = totals.crashes + totals.hangs + totals.failed
if bad > 0 then
  io.write(("fuzz: seed %d; %d problem(s), reported above\n"):format(seed, bad))
end
io.write(("%d inputs tried, %d crashes, %d hangs, %d failed checks\n"):format(
  totals.tried, totals.crashes, totals.hangs, totals.failed))
os.exit(bad == 0 and 0 or 1)
