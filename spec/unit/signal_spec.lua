-- dt.catch_signals (core.signal): what a program that owns its process
-- (the command line, the MCP server) does on TERM, HUP and INT - each run
-- in a fresh interpreter, which signals itself: the pipe a loop watches,
-- the "interrupted!" raised in code that waits without one, a second
-- signal of a kind left to its default action, and release.

local H = require "helper"

local HEAD = ([[
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = "./%s/?.so;" .. package.cpath
local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local pid = io.open("/proc/self/stat"):read("n")
local function kill(sig) os.execute("kill -" .. sig .. " " .. pid) end
]]):format(H.build)

local function run(body)
  return H.run_lua(HEAD .. body)
end

describe("dt.catch_signals", function()
  it("catches a signal into a descriptor a loop watches, and leaves the next one to its default", function()
    local out = run([[
      local s = dt.catch_signals({ "TERM", "HUP" })
      kill("TERM")
      local ready = core.poll({ s:fd() }, { "r" }, 5)
      print("ready", ready[1])
      local a, b = s:take(), s:take()
      print("took", a, b)
      kill("HUP")
      print("took", s:take())
      io.stdout:flush()
      kill("TERM")                      -- the second TERM: the default action
      print("still here")
    ]])
    assert.matches("ready\tr\n", out, 1, true)
    assert.matches("took\tTERM\tnil\n", out, 1, true)
    assert.matches("took\tHUP\n", out, 1, true)
    assert.is_nil(out:find("still here", 1, true), out)
    assert.matches("rc=143\n$", out)
  end)

  it("raises \"interrupted!\" in code that waits without a loop, with raise", function()
    local out = run([[
      dt.catch_signals({ "HUP" }, { raise = true })
      local p = core.process.spawn({ "/bin/sh", "-c", "sleep 0.2; kill -HUP " .. pid })
      local t0 = core.now()
      local ok, err = pcall(function()
        while core.now() - t0 < 20 do core.sleep(0.01) end     -- a wait of the library's, in C
      end)
      print(ok, err, core.now() - t0 < 10)
      p:wait(core.now() + 5)
    ]])
    assert.matches("false\t.*interrupted!\ttrue\n", out)
    assert.matches("rc=0\n$", out)
  end)

  it("gives the dispositions back on release", function()
    local out = run([[
      local s = dt.catch_signals({ "TERM" })
      s:release()
      io.stdout:write("released\n")
      io.stdout:flush()
      kill("TERM")
      print("still here")
    ]])
    assert.matches("released\n", out, 1, true)
    assert.is_nil(out:find("still here", 1, true), out)
    assert.matches("rc=143\n$", out)
  end)

  it("refuses what it does not catch", function()
    local dt = require "devtools_tools"
    for _, bad in ipairs({ { "KILL" }, {}, "TERM", { 15 } }) do
      local ok, err = pcall(dt.catch_signals, bad)
      assert.is_false(ok)
      assert.equal("bad_argument", err.code)
    end
  end)
end)
