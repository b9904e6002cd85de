-- bench/child_fleet.lua PORT BROWSERS PAGES_EACH CALLS: a fleet in a process
-- of its own, so that its peak memory is the fleet's alone. Launches
-- BROWSERS browsers (side by side, one task each), opens PAGES_EACH pages
-- on each, then measures with tasks on the built-in loop:
--   one page: one task making CALLS sequential add calls (the rate alone);
--   the fleet: one task per page, each making CALLS sequential calls, all
--   at once (total calls/s);
-- one then the other, twice, alternating, and reports the better of each
-- with the peak RSS (VmHWM) of the whole run and the Lua process's own CPU
-- time during the last fleet run (per call, and as a share of the wall time). Prints one "RESULT {json}" line.

local build = os.getenv("DEVTOOLS_TOOLS_BUILD") or "build/lua5.4"
package.path = "./lua/?.lua;./lua/?/init.lua;./bench/?.lua;" .. package.path
package.cpath = "./" .. build .. "/?.so;" .. package.cpath

local dt = require "devtools_tools"
local C = require "common"
local now = C.now

local port, nb, each, calls = tonumber(arg[1]), tonumber(arg[2] or 4), tonumber(arg[3] or 4),
  tonumber(arg[4] or 200)
assert(port, "usage: child_fleet.lua PORT [BROWSERS] [PAGES_EACH] [CALLS]")
local url = "http://127.0.0.1:" .. port .. "/add.html"

local start = C.rss()
local browsers, pages = {}, {}
local ok, err = pcall(function()
  local makers = {}
  for i = 1, nb do makers[i] = dt.async(function() return dt.launch() end) end
  browsers = dt.wait_all(makers, 120)
  local openers = {}
  for i = 1, nb * each do
    local b = browsers[(i - 1) % nb + 1]
    openers[i] = dt.async(function()
      local p = b:new_page(url)
      p:call("add", { a = 1, b = 1 })         -- discovery done, warm
      return p
    end)
  end
  pages = dt.wait_all(openers, 120)
  local function sequential(p)
    for k = 1, calls do
      local v = p:call("add", { a = k, b = 1 })
      if v ~= k + 1 then error("add returned " .. tostring(v)) end
    end
  end
  local function one()
    local t = dt.async(function()
      local t0 = now()
      sequential(pages[1])
      return calls / (now() - t0)
    end)
    return t:wait(120)
  end
  local cpu_share, cpu_per_call = nil, nil
  local function fleet()
    local ts = {}
    local t0, c0 = now(), os.clock()
    for i, p in ipairs(pages) do ts[i] = dt.async(sequential, nil, p) end
    dt.wait_all(ts, 300)
    local wall, cpu = now() - t0, os.clock() - c0
    local rate = #pages * calls / wall
    -- this process's own CPU time over the run: how much of the fleet's
    -- time is the Lua side (the rest is Chromium and waiting)
    cpu_share, cpu_per_call = cpu / wall, cpu / (#pages * calls)
    return rate
  end
  one()                                       -- warm-up
  local single, total = 0, 0
  for round = 1, 2 do
    if round == 1 then
      single = math.max(single, one()); total = math.max(total, fleet())
    else
      total = math.max(total, fleet()); single = math.max(single, one())
    end
  end
  local f = io.popen("nproc 2>/dev/null")
  local cores = f and tonumber(f:read("*l"))
  if f then f:close() end
  local m = C.rss()
  C.result({ browsers = nb, pages = #pages, calls = calls, one_page_cps = single,
    fleet_cps = total, start_rss_kib = start.rss, rss_kib = m.rss, peak_kib = m.hwm,
    lua_cpu_share = cpu_share, lua_cpu_per_call_s = cpu_per_call, cores = cores })
end)
for _, b in ipairs(browsers) do pcall(b.close, b) end
if not ok then
  io.stderr:write("child_fleet: ", tostring(err), "\n")
  os.exit(1)
end
