-- bench/child_memory.lua PORT CALLS: the memory of a Lua process that
-- launched a browser and made CALLS sequential tool calls, in a process of
-- its own so that nothing else the bench does counts.
--
-- Reads VmRSS after 1,000 calls and after all of them, the Lua heap
-- (collectgarbage "count") at both points, and the peak (VmHWM) of the
-- whole run. The collector runs as it would in any program: nothing forces
-- a collection before a reading, except for the separate "live heap"
-- figures taken after one. Prints one "RESULT {json}" line.

local build = os.getenv("DEVTOOLS_TOOLS_BUILD") or "build/lua5.4"
package.path = "./lua/?.lua;./lua/?/init.lua;./bench/?.lua;" .. package.path
package.cpath = "./" .. build .. "/?.so;" .. package.cpath

local dt = require "devtools_tools"
local C = require "common"
local now = C.now

local port, calls = tonumber(arg[1]), tonumber(arg[2] or 10000)
assert(port, "usage: child_memory.lua PORT [CALLS]")

local start = C.rss()
local browser = dt.launch()
local ok, err = pcall(function()
  local page = browser:new_page("http://127.0.0.1:" .. port .. "/add.html")
  local marks = {}
  local function mark(n)
    local m = C.rss()
    local heap = collectgarbage("count")
    collectgarbage("collect")
    marks[#marks + 1] = { calls = n, rss_kib = m.rss, hwm_kib = m.hwm, heap_kib = heap,
      live_heap_kib = collectgarbage("count"), rss_after_gc_kib = C.rss().rss }
  end
  mark(0)
  local t0 = now()
  for i = 1, calls do
    local v = page:call("add", { a = i, b = 2 })
    if v ~= i + 2 then error("add returned " .. tostring(v) .. " for call " .. i) end
    if i == 100 or i == 1000 or i % 2500 == 0 then mark(i) end
  end
  local elapsed = now() - t0
  C.result({ calls = calls, seconds = elapsed, start_kib = start.rss, marks = marks,
    peak_kib = C.rss().hwm })
end)
browser:close()
if not ok then
  io.stderr:write("child_memory: ", tostring(err), "\n")
  os.exit(1)
end
