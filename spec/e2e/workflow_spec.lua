-- The sample app end to end: each recipe and the multi-step workflow run
-- against the real backend in real headless Chromium and find what they
-- should; the demo script prints the diagnosis and exits 0.

local dt = require "devtools_tools"
local app_server = require "support.app_server"

local sh = require("helper").sh

local build = os.getenv("DEVTOOLS_TOOLS_BUILD") or "build/lua5.4"
local lua = "lua5.4"

describe("sample app workflows", function()
  local server

  before_each(function()
    -- a fresh database per spec: the workflow places orders
    server = assert(app_server.start())
  end)
  after_each(function() server:stop() end)

  local function recipe(name, ...)
    local args = table.concat({ ... }, " ")
    return sh(("DEVTOOLS_TOOLS_BUILD=%s %s examples/%s.lua %s %s"):format(build, lua, name, server.url, args))
  end

  it("feature_flags lists every flag with its source", function()
    local out, rc = recipe("feature_flags")
    assert.equal(0, rc, out)
    for _, flag in ipairs({ "new-ui-enabled", "beta-search-v2", "experiment-group", "log-level" }) do
      assert.matches(flag, out, 1, true)
    end
    assert.matches("server", out, 1, true)
    assert.matches("feature flags of user 1", out, 1, true)
  end)

  it("state_path reads a path and reports a bad one clearly", function()
    local out, rc = recipe("state_path", "auth.user")
    assert.equal(0, rc, out)
    assert.matches('auth.user = {', out, 1, true)
    assert.matches('"name":"Dana Whitfield"', out, 1, true)
    out, rc = recipe("state_path", "cart.nope")
    assert.equal(1, rc)
    assert.matches("tool_error", out, 1, true)
    assert.matches('has no key "nope"', out, 1, true)
  end)

  it("db_query prints rows, and refuses a table off the allow-list before sending", function()
    local out, rc = recipe("db_query", "orders", "3")
    assert.equal(0, rc, out)
    assert.matches("orders: 3 rows", out, 1, true)
    assert.matches("1040", out, 1, true)
    assert.matches("total_cents", out, 1, true)
    out, rc = recipe("db_query", "sqlite_master", "3")
    assert.equal(1, rc)
    assert.matches("invalid_params", out, 1, true)
    assert.matches("/tableName", out, 1, true)
  end)

  it("cache_stats shows what reassigning a lead costs", function()
    local out, rc = recipe("cache_stats")
    assert.equal(0, rc, out)
    assert.matches("reassigned lead 101", out, 1, true)
    -- the change row: 8 more misses where one refetch would do
    assert.matches("change%s+%-?%d+%s+8%s+%-1", out)
  end)

  -- run_workflow() -> its findings by bug, and the lines it logged
  local function run_workflow()
    local browser = dt.launch()
    local page = browser:new_page(server.url)
    package.path = "examples/?.lua;" .. package.path
    local workflow = require "workflow"
    local lines = {}
    local ok, findings = pcall(workflow.run, page, { log = function(s) lines[#lines + 1] = s end })
    browser:close()
    assert(ok, tostring(findings))
    local by = {}
    for _, f in ipairs(findings) do by[f.bug] = f.line end
    return by, table.concat(lines, "\n")
  end

  it("the multi-step workflow finds every planted bug with its numbers", function()
    local by = run_workflow()
    assert.matches("refetched 8 cache keys %(misses 9 %-> 17", by["cache-invalidate-all"])
    assert.matches("throws the whole cache away", by["cache-invalidate-all"], 1, true)
    -- counted from page:observe around the reassignment
    assert.matches("9 requests went out (POST /api/leads/101/assign, then 8 GETs: /api/reps, /api/leads?stage=new,",
      by["cache-invalidate-all"], 1, true)
    assert.equal("cart: 2 lines holding 3 units, badge shows 2: the badge counts line items, not quantities",
      by["badge-counts-lines"])
    assert.matches("subtotal 61.49 + tax 4.92 + shipping 5.99 = 72.40 as the UI showed it, stored total 72.88",
      by["backend-taxes-shipping"], 1, true)
    assert.matches("the backend taxes shipping", by["backend-taxes-shipping"], 1, true)
    assert.matches("orders 1040, 1042, 1044, 1045", by["backend-taxes-shipping-history"], 1, true)
  end)

  it("finds the stored order on a server whose first 100 orders are older ones", function()
    server:stop()
    server = assert(app_server.start({ extra_seed = app_server.MANY_ORDERS }))
    local by, text = run_workflow()
    -- 8 seed orders and 150 more: the new one is 1198, past the 100 rows listed
    assert.matches("order 1198 (not among the 100 lowest ids above): subtotal 61.49, shipping 5.99, tax 5.40, "
      .. "total 72.88", text, 1, true)
    assert.matches("order 1198: subtotal 61.49 + tax 4.92 + shipping 5.99 = 72.40 as the UI showed it, stored total 72.88",
      by["backend-taxes-shipping"], 1, true)
  end)
end)

describe("the demo", function()
  it("runs the workflow, prints the diagnosis and cleans up", function()
    local out, rc = sh(("DEVTOOLS_TOOLS_BUILD=%s %s examples/demo.lua build/app/server"):format(build, lua))
    assert.equal(0, rc, out)
    assert.matches("[1/4] discovering", out, 1, true)
    assert.matches("support-widget", out, 1, true)
    -- both kinds of tools listed: the app's WebMCP tool beside its groups
    assert.matches("devtools%s+app%-debug", out)
    assert.matches("webmcp%s+webmcp%s+http://127%.0%.0%.1:%d+%s+searchProducts", out)
    assert.matches("POST    /api/leads/101/assign", out, 1, true)
    assert.matches("== diagnosis", out, 1, true)
    assert.matches("throws the whole cache away", out, 1, true)
    assert.matches("the badge counts line items, not quantities", out, 1, true)
    assert.matches("the backend taxes shipping", out, 1, true)
    assert.matches("demo finished", out, 1, true)
  end)
end)
