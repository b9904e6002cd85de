-- The LuaJIT guard (lua/devtools_tools/base/nojit.lua): on the LuaJIT x64
-- builds whose compiled pairs() can truncate a pointer (2021-09 to
-- 2022-04, among them Debian 12's and so its Neovim's), no trace is
-- compiled in the library's own functions; elsewhere it changes nothing.

local nojit = require "devtools_tools.base.nojit"
local H = require "helper"

local jit = rawget(_G, "jit")
local affected_build = type(jit) == "table" and jit.arch == "x64" and jit.version == "LuaJIT 2.1.0-beta3"

describe("the LuaJIT guard", function()
  it("is on exactly on the affected builds, unless DEVTOOLS_TOOLS_JIT says otherwise", function()
    local env = os.getenv("DEVTOOLS_TOOLS_JIT")
    local want = type(jit) == "table" and (env == "off" or (env ~= "on" and affected_build))
    assert.are.equal(want, nojit.affected)
  end)

  it("returns what it is given and leaves other values alone", function()
    local f = function() return 1 end
    assert.are.equal(f, nojit.fn(f))
    assert.are.equal(1, f())
    assert.are.equal("x", nojit.fn("x"))
    assert.is_nil(nojit.fn(nil))
  end)

  if type(jit) == "table" then
    -- The probe runs the library's pure-Lua work (generated schema
    -- validators, error formatting) in a fresh LuaJIT and counts the
    -- traces that start in the library's functions.
    local function probe(setting)
      local cmd = ("DEVTOOLS_TOOLS_JIT=%s LUA_PATH='./lua/?.lua;./lua/?/init.lua;;' "
        .. "LUA_CPATH='./%s/?.so;;' luajit spec/support/nojit_probe.lua"):format(setting, H.build)
      local out, rc = H.sh(cmd)
      assert.are.equal(0, rc, out)
      local ours, others = out:match("ours (%d+) others (%d+)")
      assert.is_not_nil(ours, out)
      return tonumber(ours), tonumber(others)
    end

    it("with the JIT kept on, the workload compiles traces in the library (so the next spec can fail)", function()
      assert.is_true(probe("on") > 0)
    end)

    if affected_build then
      it("on this affected build, no trace is compiled in the library's functions", function()
        assert.are.equal(0, (probe("")))
      end)
    else
      it("on a build with the fix, the library keeps the JIT", function()
        assert.is_true(probe("") > 0)
      end)
    end

    it("DEVTOOLS_TOOLS_JIT=off turns it off for the library on any LuaJIT", function()
      assert.are.equal(0, (probe("off")))
    end)
  end
end)
