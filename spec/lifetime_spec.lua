-- Lifetime: everything works with the collector at its most aggressive, and
-- what is dropped without close() is still cleaned up by the collector.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local H = require "helper"

describe("lifetime", function()
  local server
  setup(function() server = H.start_server() end)
  teardown(function() server.stop() end)

  it("works with the garbage collector running all the time", function()
    collectgarbage("incremental", 0, 1000)       -- pause 0: a cycle never stops
    local ok, err = pcall(function()
      local b = dt.launch()
      local page = b:new_page(server.url("/tools.html"))
      for i = 1, 50 do
        assert.equal(i + 1, page:call("add", { a = i, b = 1 }))
        local r = page:call("elements")
        assert.equal("div#cart.big.box", r.cart.description)
        collectgarbage("step")
      end
      local res = page:call_many({ { "add", { a = 1, b = 1 } }, { "echo", { x = dt.array{} } } })
      assert.equal(2, res[1])
      assert.equal(dt.array_mt, getmetatable(res[2].x))
      b:close()
    end)
    collectgarbage("incremental", 200, 100)
    assert(ok, tostring(err))
  end)

  it("ends Chromium and removes its profile when a Browser is only collected", function()
    local pid, profile
    do
      local b = dt.launch()
      pid, profile = b.process:pid(), b.user_data_dir
      b:new_page(server.url("/tools.html")):call("add", { a = 1, b = 2 })
    end
    collectgarbage(); collectgarbage()
    assert.is_true(H.wait_for(function() return H.live_in_group(pid) == 0 end, 10))
    assert.is_true(H.wait_for(function() return not H.exists(profile) end, 5))
  end)

  it("ends Chromium and removes its profile when the program calls os.exit", function()
    local script = [[
      package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
      package.cpath = "]] .. H.build .. [[/?.so;" .. package.cpath
      local b = require("devtools_tools").launch()
      io.stdout:write(b.user_data_dir, " ", b.process:pid(), "\n")
      io.stdout:flush()
      os.exit(3)
    ]]
    local file = os.tmpname()
    local f = assert(io.open(file, "w"))
    f:write(script)
    f:close()
    local p = assert(io.popen("lua5.4 " .. file .. "; echo rc=$?"))
    local out = p:read("*a")
    p:close()
    os.remove(file)
    local profile, pid, rc = out:match("^(%S+) (%d+)\nrc=(%d+)")
    assert(profile, out)
    assert.equal("3", rc)
    assert.is_false(H.exists(profile))
    assert.is_true(H.wait_for(function() return H.live_in_group(tonumber(pid)) == 0 end, 5))
  end)

  it("closes with <close>", function()
    local pid
    local f = assert(load([[
      local dt, server = ...
      local b <close> = dt.launch()
      b:new_page(server.url("/tools.html"))
      return b.process:pid()
    ]]))
    pid = f(dt, server)
    assert.is_true(H.wait_for(function() return H.live_in_group(pid) == 0 end, 10))
  end)
end)
