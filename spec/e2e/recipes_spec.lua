-- The recipes in examples/ run from any directory, under Lua 5.4 and
-- LuaJIT, finding the library in the checkout they sit in; when the C core
-- is not built for the interpreter, they say which build it needs.

local core = require "devtools_tools.core"
local app_server = require "support.app_server"
local H = require "helper"

local root = io.popen("pwd"):read("*l")

describe("recipes run from any directory", function()
  local server
  setup(function() server = assert(app_server.start()) end)
  teardown(function() server:stop() end)

  for _, lua in ipairs({ "lua5.4", "luajit" }) do
    it("under " .. lua, function()
      if lua == "luajit" then
        -- the LuaJIT build of the core, next to the 5.4 one
        local out, rc = H.sh("make -s LUA=luajit all")
        assert.equal(0, rc, out)
      end
      local env = "env -u DEVTOOLS_TOOLS_BUILD -u LUA_PATH -u LUA_CPATH"
      local out, rc = H.sh(("cd / && %s %s %s/examples/feature_flags.lua %s"):format(env, lua, root, server.url))
      assert.equal(0, rc, out)
      assert.matches("feature flags of user 1", out, 1, true)
      assert.matches("beta-search-v2", out, 1, true)
      out, rc = H.sh(("cd /tmp && %s %s %s/examples/db_query.lua %s orders 2"):format(env, lua, root, server.url))
      assert.equal(0, rc, out)
      assert.matches("orders: 2 rows", out, 1, true)
      -- a limit that is not a number is refused before anything starts (it was sent as none)
      out, rc = H.sh(("cd /tmp && %s %s %s/examples/db_query.lua %s orders abc"):format(env, lua, root, server.url))
      assert.equal(2, rc, out)
      assert.matches("limit must be a number, got abc", out, 1, true)
      -- money in cents, negative amounts too (an overcharge below the UI's showed -1.95 for -5)
      out, rc = H.sh(("cd / && %s %s -e 'package.path = \"%s/examples/?.lua;\" .. package.path; "
        .. "local m = require(\"report\").money; print(m(-5), m(-48), m(-12345), m(0), m(5939))'"):format(env, lua, root))
      assert.equal(0, rc, out)
      assert.equal("-0.05\t-0.48\t-123.45\t0.00\t59.39\n", out)
      out, rc = H.sh(("cd / && %s %s %s/examples/state_path.lua %s cart.nope"):format(env, lua, root, server.url))
      assert.equal(1, rc, out)
      assert.matches("^devtools_tools: tool_error: .*has no key \"nope\"", out)
    end)
  end
end)

describe("recipes run without their arguments", function()
  it("print their usage and exit 2, without a traceback", function()
    for _, name in ipairs({ "cache_stats", "db_query", "feature_flags", "page_health", "state_path", "workflow" }) do
      local out, rc = H.sh(("cd / && lua5.4 %s/examples/%s.lua </dev/null"):format(root, name))
      assert.equal(2, rc, name .. ": " .. out)
      assert.matches("^usage: lua5%.4 examples/" .. name .. "%.lua URL", out)
      assert.is_nil(out:find("traceback", 1, true), out)
      assert.is_nil(out:find("\n.", 1), name .. ": one line: " .. out)
    end
    local out, rc = H.sh(("cd / && lua5.4 %s/examples/fleet.lua --bogus </dev/null"):format(root))
    assert.equal(2, rc, out)
    assert.equal("unknown option --bogus\nusage: fleet.lua [--pages N] [--browsers M] [--connect URL]..."
      .. " [--webdriver URL] [APP_URL]\n", out)
  end)
end)

describe("the workflow under the command line", function()
  local server
  -- a fresh database: the workflow places an order
  setup(function() server = assert(app_server.start()) end)
  teardown(function() server:stop() end)

  it("runs with the page `devtools-tools run` gives it", function()
    local out, rc = H.sh(("cd / && env -u DEVTOOLS_TOOLS_BUILD XDG_STATE_HOME=/nonexistent lua5.4 %s/bin/devtools-tools run %s/examples/workflow.lua %s"):format(
      root, root, server.url))
    assert.equal(0, rc, out)
    assert.matches("== diagnosis", out, 1, true)
    assert.matches("the badge counts line items, not quantities", out, 1, true)
    assert.matches("order 1048: subtotal 61.49 + tax 4.92 + shipping 5.99 = 72.40", out, 1, true)
  end)
end)

describe("recipes without the C core built for their interpreter", function()
  -- a copy of the checkout with nothing built in it
  local dir
  setup(function()
    dir = assert(core.fs.mkdtemp("dt-nocore-"))
    local out, rc = H.sh(("cp -r %s/lua %s/examples %s/Makefile %s/"):format(root, root, root, dir))
    assert.equal(0, rc, out)
  end)
  teardown(function() core.fs.rmtree(dir) end)

  it("name the build each needs and where to run it", function()
    local env = "env -u DEVTOOLS_TOOLS_BUILD -u LUA_PATH -u LUA_CPATH"
    for _, c in ipairs({ { "luajit", "LuaJIT", "make LUA=luajit" }, { "lua5.4", "Lua 5.4", "make" } }) do
      local out, rc = H.sh(("cd / && %s %s %s/examples/feature_flags.lua http://127.0.0.1:1/"):format(env, c[1], dir))
      assert.equal(1, rc, out)
      assert.matches(c[1] .. ": devtools_tools: the C core is not built for " .. c[2] .. ": run `" .. c[3]
        .. "` in " .. dir .. "\nmodule 'devtools_tools.core' not found:", out, 1, true)
    end
    -- a core built for another Lua: said so
    local out, rc = H.sh(("cd / && DEVTOOLS_TOOLS_BUILD=%s/build/lua5.4 luajit %s/examples/state_path.lua "
      .. "http://127.0.0.1:1/"):format(root, dir))
    assert.equal(1, rc, out)
    assert.matches("luajit: devtools_tools: the C core was built for another Lua than LuaJIT: run "
      .. "`make LUA=luajit` in " .. dir .. "\n", out, 1, true)
  end)
end)
