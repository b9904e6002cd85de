-- Integration: tool schemas as applications write them (issue 31), in real
-- headless Chromium: objects shared between properties, reactive proxies,
-- dereferenced $refs, builders with toJSON, a page library that gives
-- arrays a toJSON, and the failures one group's schema may bring, which
-- must stay in that group. The page: spec/fixtures/shapes.html.

local dt = require "devtools_tools"
local H = require "helper"

local server, browser

local start_suite, stop_suite = H.browser_suite(function(s, b) server, browser = s, b end)
setup(start_suite)
teardown(stop_suite)

local names = H.group_names

local function open(case, extra)
  return browser:new_page(server.url("/shapes.html?case=" .. case .. (extra or "")))
end

local ProductId = { type = "string", pattern = "^p-[0-9]+$", description = "a product id" }
local Line = { type = "object", properties = { productId = ProductId,
  quantity = { type = "integer", minimum = 0, maximum = 99 }, size = { enum = { "S", "M", "L" } } },
  required = { "productId", "quantity" }, additionalProperties = false }

describe("schemas as apps write them", function()
  it("an object shared by several properties is written for each, not taken for a cycle", function()
    local page = open("shared")
    local groups, warnings = page:discover()
    assert.same({}, warnings)
    assert.same({ "shop-cart", "shop-search" }, names(groups))
    local set = groups[1]:tool("setQuantities")
    -- the shared Line (and the ProductId and enum inside it) in both places
    assert.same(Line, set.input_schema.properties.lines.items)
    assert.same(Line, set.input_schema.properties.giftLine)
    assert.same({ "S", "M", "L" }, set.input_schema.properties.preferred.enum)
    assert.same({ "S", "M", "L" }, set.input_schema.properties.sizes.items.enum)
    -- TypeBox's symbol key is not a JSON key; a reactive proxy reads as its target
    local tag = groups[1]:tool("tagLines").input_schema
    assert.same({ type = "string" }, tag.properties.tags.additionalProperties)
    assert.same({ type = "string" }, tag.properties.labels.items)
    assert.equal(0, #tag.required)
    local ship = groups[1]:tool("shipTo").input_schema
    assert.same(ship.properties.home, ship.properties.work)
    -- a builder's toJSON is not what is read: its fields are, factory included
    local build = groups[1]:tool("build").input_schema
    assert.equal("builder", build.properties.a.factory.name)
    assert.same(build.properties.a.factory, build.properties.b.factory)
    assert.same({}, build.properties.a.toJSON)
    -- and the tools work and validate through the shared parts
    assert.equal(5, page:call("setQuantities", { lines = { { productId = "p-1", quantity = 2 },
      { productId = "p-2", quantity = 3, size = "M" } } }))
    local e = H.error_of(page.call, page, "setQuantities", { lines = { { productId = "p-1", quantity = 2 } },
      giftLine = { productId = "x", quantity = 1 } })
    assert.equal("invalid_params", e.code)
    assert.matches("/giftLine/productId", e.message, 1, true)
    e = H.error_of(page.call, page, "setQuantities", { lines = {}, preferred = "XL" })
    assert.equal("invalid_params", e.code)
    assert.equal("Berlin/Paris", page:call("shipTo", { home = { city = "Berlin" }, work = { city = "Paris" } }))
    assert.equal(9.5, page:call("price", { price = 10, discount = 0.5 }))
    assert.equal("invalid_params", H.error_of(page.call, page, "price", { price = 10, discount = -1 }).code)
    assert.same({ "string", "number" }, page:call("build", { a = "x", b = 2 }))
    page:close()
  end)

  it("a real cycle is refused with a warning naming the tool; the other groups stay", function()
    local page = open("cycle")
    local groups, warnings = page:discover()
    assert.same({ "shop-search" }, names(groups))
    assert.same({ 'Invalid toolGroup "shop-tree": the inputSchema of tool "categories" contains itself '
      .. "(a cycle); group skipped" }, warnings)
    assert.same({ "mug" }, page:call("searchProducts", { q = "m" }))
    page:close()
  end)

  it("a schema that doubles at each level is refused within the call's timeout, not written out", function()
    local page = open("doubling")
    local groups, warnings = page:discover({ timeout = 20 })
    assert.same({ "shop-search" }, names(groups))
    assert.equal(1, #warnings)
    assert.matches('"shop-filters": the inputSchema of tool "filter" is too large: more than 100000 values',
      warnings[1], 1, true)
    page:close()
  end)

  it("a schema that throws when read loses its own group only, in this frame and none other", function()
    for _, how in ipairs({ "getter", "revoked", "ownkeys" }) do
      local page = open("throwing", "&how=" .. how .. "&frame=1")
      page:wait_for_tool("setQuantities")        -- (the iframe's: it loads after the page)
      local groups, warnings = page:discover()
      assert.same({ "shop-search", "shop-cart", "shop-search" }, names(groups), how)
      assert.equal(1, #warnings, how)
      assert.matches('^Invalid toolGroup "shop%-admin": the inputSchema of tool "resetCart" threw while it was '
        .. "read: .+; group skipped$", warnings[1])
      assert.equal(2, page:call("setQuantities", { lines = { { productId = "p-1", quantity = 2 } } }), how)
      page:close()
    end
  end)

  it("a page's toJSON overrides (Prototype.js) decide neither what is read nor what a call returns", function()
    local page = open("prototypejs")
    local groups, warnings = page:discover()
    assert.same({}, warnings)
    assert.same({ "shop-cart", "shop-orders" }, names(groups))
    assert.same({ "productId", "quantity" }, groups[1]:tool("setQuantities").input_schema
      .properties.lines.items.required)
    -- results: arrays stay arrays, at the top and inside objects
    local r = page:call("recentOrders", { ids = { 4, 7 } })
    assert.same({ { id = 4, lines = { 4, 5 }, tags = {} }, { id = 7, lines = { 7, 8 }, tags = {} } }, r)
    assert.equal(dt.array_mt, getmetatable(r[1].lines))
    -- a date is "<Date instance>", as the reference makes it, not its toJSON
    assert.same({ at = "<Date instance>", ids = { 1 } }, page:call("lastOrder"))
    -- the envelopes of a failure and of a tool that is gone are read too
    local e = H.error_of(page.call, page, "failing")
    assert.equal("tool_error", e.code)
    assert.matches("out of stock", e.message, 1, true)
    page:close()
  end)

  it("an inputSchema of null is refused at discovery, saying so", function()
    local page = open("nullschema")
    local groups, warnings = page:discover()
    assert.same({ "shop-search" }, names(groups))
    assert.same({ 'Invalid tool "legacy" in group "shop-legacy": inputSchema must be an object, got null; '
      .. "group skipped" }, warnings)
    page:close()
  end)
end)

describe("what discovery skipped", function()
  it("is in page:discover()'s warnings and skipped fields, and tool_not_found names it", function()
    local page = open("cycle")
    local groups, warnings = page:discover()
    assert.equal(warnings, groups.warnings)
    assert.same({ { group = "shop-tree", frame = server.url("/shapes.html?case=cycle"),
      reason = 'the inputSchema of tool "categories" contains itself (a cycle)' } }, groups.skipped)
    -- the list holds groups only
    local n = 0
    for _ in pairs(groups) do n = n + 1 end
    assert.equal(1, n)
    local e = H.error_of(page.call, page, "categories")
    assert.equal("tool_not_found", e.code)
    assert.equal("Tool categories not found (nearest: searchProducts; the page has 1 tool; 1 group skipped: "
      .. 'shop-tree: the inputSchema of tool "categories" contains itself (a cycle))', e.message)
    assert.same(groups.skipped, e.details.skipped)
    assert.same(groups.skipped, select(1, page:tool_groups()).skipped)
    page:close()
  end)
end)
