-- The recipes in examples/ run from any directory, under Lua 5.4 and
-- LuaJIT, finding the library in the checkout they sit in, and each
-- through `devtools-tools run NAME.lua URL [ARGS]` as well as alone; when
-- the C core is not built for the interpreter, they say which build it
-- needs.

local core = require "devtools_tools.core"
local app_server = require "support.app_server"
local H = require "helper"

local function shq(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

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
    assert.equal("unknown option --bogus\nusage: fleet.lua [APP_URL] [--pages N] [--browsers M] [--connect URL]..."
      .. " [--webdriver URL]\n", out)
  end)
end)

describe("every recipe through devtools-tools run NAME.lua URL [ARGS]", function()
  -- each against a fresh app (some change its data), in a tab of its own
  -- of one browser the file shares (WebMCP on: --webmcp recipes use it),
  -- with TMPDIR of its own: what it leaves is found there
  local server, tmp, shared
  setup(function() shared = H.shared_browser({ webmcp = true }) end)
  teardown(function() shared.close() end)
  before_each(function()
    server = assert(app_server.start())
    tmp = assert(core.fs.mkdtemp("dt-recipes-"))
  end)
  after_each(function()
    server:stop()
    shared.close_tabs()
    H.wait_for(function() return #H.live_with_arg(tmp) == 0 end, H.LONG)
    assert.same({}, H.live_with_arg(tmp))
    core.fs.rmtree(tmp)
  end)

  -- run(args) -> output (stdout and stderr), exit status
  local function run(args)
    return H.sh(("cd / && env -u DEVTOOLS_TOOLS_BUILD TMPDIR=%s XDG_STATE_HOME=/nonexistent timeout 120 lua5.4 "
      .. "%s/bin/devtools-tools run --connect %s --new-tab %s"):format(shq(tmp), root, shq(shared.endpoint),
      args:gsub("URL", server.url)))
  end

  -- the recipe's page is the command's: no second browser, and its own
  -- arguments come after the URL (or after --), defaults without them
  local cases = {
    { "feature_flags.lua URL", "feature flags of user 1", "beta%-search%-v2 +true +server" },
    { "db_query.lua URL", "^orders: 5 rows\n" },
    { "db_query.lua URL leads 2", "^leads: 2 rows\n" },
    { "state_path.lua URL", '^auth%.user = {.*"name":"Dana Whitfield"' },
    { "state_path.lua URL -- cart.items", "^cart%.items = %[%]\n$" },
    { "cache_stats.lua URL", "^reassigned lead 101 %(Northwind Traders%) from Ava Chen to ", "\n  change +0 +8 " },
    { "cache_stats.lua URL 103", "^reassigned lead 103 " },
    { "--webmcp page_health.lua URL getFeatureFlags", "\n  webmcp +webmcp ", "\ngetFeatureFlags %-> {",
      "== console: 0 warning", "== failed requests: 0\n$" },
    { "--webmcp workflow.lua URL", "== diagnosis", "the badge counts line items, not quantities" },
    { "--webmcp demo.lua URL", "the backend taxes shipping", "demo finished" },
    { "fleet.lua URL -- --pages 2 --browsers 1", "^1 browsers ready; running the workflow on 2 pages at ",
      "2 pages on 1 browsers: 2 found all 3 bugs, 0 failed" },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local out, rc = run(c[1]:gsub("(%S+%.lua)", root .. "/examples/%1", 1))
      assert.equal(0, rc, out)
      for i = 2, #c do assert.matches(c[i], out) end
    end)
  end
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
