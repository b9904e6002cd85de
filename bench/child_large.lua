-- bench/child_large.lua PORT MB ROUNDS: large tool results, in a Lua
-- process of their own so that its peak RSS belongs to this scenario only.
--
-- Launches its own headless Chromium (pipe), opens big.html, has the page
-- build about MB megabytes of JSON-shaped data (untimed), then alternates:
--   floor: Runtime.evaluate("JSON.stringify(data)", returnByValue) through
--          our connection: Chromium handing over the same JSON as a string
--   call:  page:call("big", {mb = MB}): the same data as a decoded Lua table
-- Peak RSS is read from /proc/self/status (VmHWM), reset before each step.
-- Prints one "RESULT {json}" line.

local build = os.getenv("DEVTOOLS_TOOLS_BUILD") or "build/lua5.4"
package.path = "./lua/?.lua;./lua/?/init.lua;./bench/?.lua;" .. package.path
package.cpath = "./" .. build .. "/?.so;" .. package.cpath

local dt = require "devtools_tools"
local C = require "common"
local now = C.now

local port, mb, rounds = tonumber(arg[1]), tonumber(arg[2]), tonumber(arg[3] or 3)
assert(port and mb, "usage: child_large.lua PORT MB [ROUNDS]")

local start = C.rss()
local can_reset = C.reset_peak()
local browser = dt.launch({ timeout = 120 })
local ok, err = pcall(function()
  local page = browser:new_page("http://127.0.0.1:" .. port .. "/big.html")
  local size = page:call("prepare", { mb = mb })
  local conn, session = browser.conn, page.session
  local expr = "JSON.stringify(window.benchData[" .. mb .. "])"

  local function floor()
    local r = conn:call("Runtime.evaluate", { expression = expr, returnByValue = true },
      { session = session, timeout = 120 })
    local s = r.result.value
    assert(type(s) == "string" and #s == size, "floor: unexpected value")
    return s
  end
  local function call()
    local v = page:call("big", { mb = mb }, { timeout = 120 })
    assert(type(v) == "table" and #v.records == v.count, "call: unexpected value")
    return v
  end

  -- One step: collect first (so the previous result does not count), reset
  -- the peak, time fn, read the peak while the result is still alive.
  local function step(fn)
    collectgarbage("collect")
    collectgarbage("collect")
    local before = C.rss()
    C.reset_peak()
    local t0 = now()
    local v = fn()
    local dt_s = now() - t0
    local after = C.rss()
    v = nil                                             -- luacheck: ignore
    return dt_s, after.hwm, before.rss
  end

  local base = C.rss()
  -- The first call of a fresh process: its peak is the cleanest figure.
  local first_t, first_peak, first_before = step(call)
  local floor_t, call_t, floor_peak, call_peak = {}, {}, {}, {}
  step(floor)                                           -- warm-up of the floor path
  for i = 1, rounds do
    floor_t[i], floor_peak[i] = step(floor)
    call_t[i], call_peak[i] = step(call)
  end
  C.result({
    mb = mb, payload = size, rounds = rounds,
    floor_s = floor_t, call_s = call_t, first_call_s = first_t,
    floor_peak_kib = floor_peak, call_peak_kib = call_peak,
    first_call_peak_kib = first_peak, first_call_before_kib = first_before,
    start_kib = start.rss, base_kib = base.rss, peak_reset = can_reset,
  })
end)
browser:close()
if not ok then
  io.stderr:write("child_large: ", tostring(err), "\n")
  os.exit(1)
end
