-- Integration: the live page model. A page keeps itself current whether
-- or not the program calls the library: a frame the page mounts after its
-- load (a target the browser pauses for our set-up) runs while a script
-- sleeps through dt.sleep, while a luv loop turns with no call of ours,
-- and while the script waits on another browser. The frame's script tells
-- a beacon (spec/support/beacon.lua) that it ran, so the spec learns it
-- without reading the browser's connection itself.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local H = require "helper"

local server, browser

local start_suite, stop_suite = H.browser_suite(function(s, b) server, browser = s, b end)
setup(start_suite)
teardown(stop_suite)

-- A beacon: beacon.ran() -> true once the frame's script told it so.
local function start_beacon()
  local file = os.tmpname()
  local proc, port = H.start_port_program({ "/usr/bin/lua5.4", "spec/support/beacon.lua", file })
  return {
    port = port,
    ran = function()
      local s = H.read_file(file) or ""
      return s:find("/ran", 1, true) ~= nil
    end,
    stop = function() proc:close(0); os.remove(file) end,
  }
end

-- The first look at the page after the wait: both groups, the frame's
-- among them (the frame mounts 2 s after load; the wait is 4 s at least,
-- longer only while the frame's script has not run yet, up to 20 s).
local MIN_WAIT, MAX_WAIT = 4, 20

local function wait_until_ran(beacon, sleep)
  local t0 = core.now()
  while core.now() - t0 < MAX_WAIT do
    if core.now() - t0 >= MIN_WAIT and beacon.ran() then return true end
    sleep(0.2)
  end
  return false
end

describe("the live page model", function()
  local beacon
  before_each(function() beacon = start_beacon() end)
  after_each(function() beacon.stop() end)

  it("a frame mounted after load runs while the script sleeps in dt.sleep; the first tool_groups has it", function()
    local page = browser:new_page(server.url("/live_frame.html?beacon=" .. beacon.port))
    local ran = wait_until_ran(beacon, dt.sleep)
    assert.is_true(ran, "the frame's script did not run while the script slept: its target was left paused")
    assert.same({ "outer", "inner" }, H.group_names(page:tool_groups()))
    page:close()
  end)

  it("a luv loop that turns with no call of ours serves the page, and still ends when it has nothing else", function()
    local ok, luv = pcall(require, "luv")
    if not ok then pending("no luv") return end
    dt.use_loop(luv)
    local page
    local good, err = pcall(function()
      page = browser:new_page(server.url("/live_frame.html?beacon=" .. beacon.port))
      local t0, ran = core.now(), false
      local timer = luv.new_timer()
      timer:start(200, 200, function()
        local t = core.now() - t0
        if (t >= MIN_WAIT and beacon.ran()) or t >= MAX_WAIT then
          ran = beacon.ran()
          timer:stop()
          timer:close()
        end
      end)
      luv.run()                  -- ends once the timer is gone: the connection's watch holds nothing
      assert.is_true(ran, "the frame's script did not run while the loop turned")
      assert.is_false(luv.loop_alive())
      assert.same({ "outer", "inner" }, H.group_names(page:tool_groups()))
    end)
    if page then page:close() end
    dt.use_loop(nil)
    assert(good, err)
  end)

  it("a browser only collected is ended, its connection's standing watch on a luv loop notwithstanding", function()
    local ok, luv = pcall(require, "luv")
    if not ok then pending("no luv") return end
    dt.use_loop(luv)
    local function use_and_drop()
      local b = dt.launch()
      b:new_page(server.url("/tools.html")):call("add", { a = 1, b = 2 })
      return b.process:pid(), b.user_data_dir
    end
    local pid, profile = use_and_drop()
    if jit then jit.flush() end
    collectgarbage(); collectgarbage()
    luv.run("nowait")                      -- (the watch's handle closes on the loop)
    dt.use_loop(nil)
    assert.is_true(H.wait_for(function() return H.live_in_group(pid) == 0 end, H.LONG))
    -- (the reaper removes it when Chromium took longer than the finalizer's
    -- 0.2 s to exit: a while, under load)
    assert.is_true(H.wait_for(function() return not H.exists(profile) end, H.LONG), "the profile is still there")
    local alive = {}
    luv.walk(function(h) alive[#alive + 1] = tostring(h) .. (h:is_active() and " active" or "") .. (h:is_closing() and " closing" or "") end)
    assert.is_false(luv.loop_alive(), table.concat(alive, ", "))
  end)

  it("a blocking wait on another browser serves this one too", function()
    local other = dt.launch()
    local good, err = pcall(function()
      local page = browser:new_page(server.url("/live_frame.html?beacon=" .. beacon.port))
      local busy = other:new_page()
      local ran = wait_until_ran(beacon, function(s)
        busy:evaluate(("new Promise((r) => setTimeout(r, %d))"):format(s * 1000))
      end)
      assert.is_true(ran, "the frame's script did not run while the script waited on the other browser")
      assert.same({ "outer", "inner" }, H.group_names(page:tool_groups()))
      page:close()
    end)
    other:close()
    assert(good, err)
  end)
end)
