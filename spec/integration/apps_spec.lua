-- Integration: pages as applications write them, in real headless Chromium
-- on 127.0.0.1: spec/fixtures/apps/ holds apps bundled from npm packages by
-- tools/fixtures/build.mjs (make fixtures; the bundles are committed, so no
-- npm here). The shop is React 19 with zod 4 schemas and the usewebmcp
-- hook; the board is Vue 3 with reactive() schemas. Each screen registers
-- its tool group in an effect and removes it on unmount, screens change
-- without a new document (history.pushState, a hash), and schema constants
-- are shared as objects, as applications share them.

local dt = require "devtools_tools"
local H = require "helper"

local server, browser

local start_suite, stop_suite = H.browser_suite(function(s, b) server, browser = s, b end, { webmcp = true })
setup(start_suite)
teardown(stop_suite)

-- the page at path, once the app has registered the named tool
local function open(path, tool)
  local page = browser:new_page(server.url(path))
  page:wait_for_tool(tool, { timeout = 10 })
  return page
end

-- Waits (on the page's own events, no polling) until the JavaScript
-- condition holds: the apps announce each change of their registered
-- groups with a 'fixture:groups' event.
local function until_groups(page, cond)
  return page:evaluate(([[new Promise((resolve) => {
    const ok = () => %s;
    if (ok()) return resolve(true);
    const on = () => { if (ok()) { window.removeEventListener('fixture:groups', on); resolve(true); } };
    window.addEventListener('fixture:groups', on);
  })]]):format(cond), { timeout = 10 })
end

-- the groups now registered by the app, sorted
local function registered(page)
  return page:evaluate("[...window.fixtureGroups].sort()")
end

local function tool_names(g)
  local out = {}
  for _, t in ipairs(g.tools) do out[#out + 1] = t.name end
  return out
end

-- {group name = {tool names}} of a discovery, and its warnings
local function listing(page)
  local groups, warnings = page:discover()
  local out = {}
  for _, g in ipairs(groups) do out[g.name] = tool_names(g) end
  return out, warnings, groups
end

-- the paths an invalid_params error names, sorted
local function paths(err)
  assert.equal("invalid_params", err.code)
  local out = {}
  for _, e in ipairs(err.details) do out[#out + 1] = e.path end
  table.sort(out)
  return out
end

-- the result of fn, or the code of the dt.Error it raised
local function result_or_code(fn, ...)
  local ok, r = pcall(fn, ...)
  if ok then return r end
  assert(dt.is_error(r), tostring(r))
  return r.code
end

-- the calls that reached a screen after it was unmounted
local function unmounted_calls(page, log)
  return page:evaluate(("window.%s.filter((c) => !c.mounted).map((c) => c.tool)"):format(log))
end

describe("a React 19 shop (zod 4, usewebmcp)", function()
  it("lists the catalog's group, the app's and the hook's WebMCP tool", function()
    local page = open("/apps/shop/index.html", "add_to_cart")
    local list, warnings = listing(page)
    assert.same({}, warnings)
    assert.same({
      ["shop-catalog"] = { "whichScreen", "searchProducts", "findProductCard" },
      shop = { "currentScreen", "goTo" },
      webmcp = { "add_to_cart" },
    }, list)
    assert.same({ "shop", "shop-catalog" }, registered(page))
    page:close()
  end)

  it("lists the cart's group, whose schemas share constants as objects", function()
    local page = open("/apps/shop/index.html?screen=cart", "currentScreen")
    until_groups(page, "window.fixtureGroups.includes('shop-cart')")
    local list, warnings, groups = listing(page)
    -- one ProductId object in two properties and inside the line schema,
    -- one enum array twice, one line schema as items and as
    -- additionalProperties: shared, not cyclic
    assert.same({}, warnings)
    assert.same({ "whichScreen", "cartLines", "setQuantities", "replaceProduct" }, list["shop-cart"])
    local cart
    for _, g in ipairs(groups) do if g.name == "shop-cart" then cart = g end end
    local s = cart:tool("setQuantities").input_schema
    local line = s.properties.lines.items
    assert.same(line, s.properties.gifts.additionalProperties)
    assert.same({ "productId", "quantity" }, line.required)
    assert.equal("^P-\\d{4}$", line.properties.productId.pattern)
    assert.same({ "EUR", "USD", "GBP" }, s.properties.currency.enum)
    assert.same(s.properties.currency.enum, s.properties.displayCurrency.enum)
    local r = cart:tool("replaceProduct").input_schema
    assert.same(r.properties.from, r.properties.to)
    assert.same(line.properties.productId, r.properties.from)
    page:close()
  end)

  it("calls the cart's tools and refuses bad input by its path", function()
    local page = open("/apps/shop/index.html?screen=cart", "currentScreen")
    until_groups(page, "window.fixtureGroups.includes('shop-cart')")
    local r = page:call("setQuantities", {
      lines = { { productId = "P-0001", quantity = 2 }, { productId = "P-0004", quantity = 0 } },
      gifts = { ann = { productId = "P-0003", quantity = 1 } },
      currency = "EUR", displayCurrency = "USD",
    })
    -- 2 x 49.00 + 29.00 EUR = 127.00 EUR = 139.70 USD
    assert.same({ lines = 1, gifts = 1, total = 13970, currency = "USD" }, r)
    assert.same({ { productId = "P-0003", quantity = 2 } }, page:call("replaceProduct", { from = "P-0001", to = "P-0003" }))
    -- the same shared schemas refuse at every place they are used
    local e = H.error_of(page.call, page, "setQuantities", {
      lines = { { productId = "P-1", quantity = 1 } },
      gifts = { bob = { productId = "P-0002", quantity = 100 } },
      currency = "JPY",
    })
    assert.same({ "/currency", "/gifts/bob/quantity", "/lines/0/productId" }, paths(e))
    assert.matches("Invalid parameters for tool setQuantities", e.message, 1, true)
    assert.same({ "/to" }, paths(H.error_of(page.call, page, "replaceProduct", { from = "P-0003", to = "P-3" })))
    -- nothing refused reached the page
    local cart = page:call("cartLines")
    assert.same({ { productId = "P-0003", quantity = 2 } }, cart.lines)
    assert.same({}, unmounted_calls(page, "shopCalls"))
    page:close()
  end)

  it("takes zod's draft 2020-12 schema, and refuses bad input by path", function()
    local page = open("/apps/shop/index.html", "searchProducts")
    local search = page:tool("searchProducts")
    assert.equal("https://json-schema.org/draft/2020-12/schema", search.input_schema["$schema"])
    assert.same({ "query" }, search.input_schema.required)
    local r = search{ query = "walnut", currency = "USD", maxPrice = 6000 }
    assert.same({ { id = "P-0001", name = "Walnut desk lamp", price = 5390, currency = "USD" } }, r)
    assert.same({ "/currency", "/maxPrice", "/query" },
      paths(H.error_of(search.call, search, { query = "", currency = "JPY", maxPrice = -1 })))
    -- the page's own zod names the same places for the same input
    local zod = page:evaluate([[window.__dtmcp.executeTool('searchProducts', { query: '', currency: 'JPY', maxPrice: -1 })
      .then(() => 'ran', (e) => e.message)]])
    assert.matches("→ at query", zod, 1, true)
    assert.matches("→ at currency", zod, 1, true)
    assert.matches("→ at maxPrice", zod, 1, true)
    page:close()
  end)

  it("takes zod's draft-07 schema; what JSON Schema cannot say, zod refuses by path", function()
    local page = open("/apps/shop/index.html?screen=checkout", "currentScreen")
    until_groups(page, "window.fixtureGroups.includes('shop-checkout')")
    local place = page:tool("placeOrder")
    assert.equal("http://json-schema.org/draft-07/schema#", place.input_schema["$schema"])
    local address = { name = "Ann", street = "Main St 1", zip = "10115", country = "DE" }
    local order = { email = "ann@example.com", shipping = address, currency = "GBP",
      lines = { { productId = "P-0002", quantity = 2 } } }
    -- 2 x 15.00 EUR = 25.50 GBP
    assert.same({ orderId = "O-1001", total = 2550, currency = "GBP" }, place(order))
    -- refused here, by path, before the page sees it...
    local bad = { email = "ann@example.com", currency = "EUR",
      shipping = { name = "Ann", street = "Main St 1", zip = "1011", country = "DE" },
      lines = { { productId = "P-0002", quantity = 0 } } }
    assert.same({ "/lines/0/quantity", "/shipping/zip" }, paths(H.error_of(place.call, place, bad)))
    -- ...at the places the page's own zod names for the same input
    local zod = page:evaluate(([[window.__dtmcp.executeTool('placeOrder', %s).then(() => 'ran', (e) => e.message)]])
      :format(dt.json.encode(bad)))
    assert.matches("→ at shipping.zip", zod, 1, true)
    assert.matches("→ at lines[0].quantity", zod, 1, true)
    -- a rule across fields, which the JSON Schema cannot hold: zod's path
    local other = { name = "Ann", street = "Rue 2", zip = "75001", country = "FR" }
    local e = H.error_of(place.call, place, { email = "ann@example.com", shipping = address, billing = other,
      currency = "EUR", lines = { { productId = "P-0002", quantity = 1 } } })
    assert.equal("tool_error", e.code)
    assert.matches("Billing country must be the shipping country", e.message, 1, true)
    assert.matches("→ at billing.country", e.message, 1, true)
    page:close()
  end)

  it("returns a DOM element as an Element", function()
    local page = open("/apps/shop/index.html", "findProductCard")
    local el = page:call("findProductCard", { productId = "P-0003" })
    assert.is_true(dt.is_element(el))
    assert.equal("article#card-P-0003.product", el.description)
    -- it is the card itself
    local node = page:cdp("DOM.describeNode", { backendNodeId = el.backend_node_id }).node
    assert.equal("ARTICLE", node.nodeName)
    local attrs = {}
    for i = 1, #node.attributes, 2 do attrs[node.attributes[i]] = node.attributes[i + 1] end
    assert.equal("P-0003", attrs["data-product-id"])
    -- a product with no card gives null
    assert.equal(dt.null, page:call("findProductCard", { productId = "P-0999" }))
    page:close()
  end)

  it("lists and calls the WebMCP tool the usewebmcp hook registered", function()
    local page = open("/apps/shop/index.html", "add_to_cart")
    local add = page:tool("add_to_cart")
    assert.equal("webmcp", add.kind)
    assert.equal("webmcp", add.group.kind)
    assert.equal("Adds a product to the cart", add.description)
    -- the hook wrote the zod schema out as JSON Schema
    assert.same({ "productId", "quantity" }, add.input_schema.required)
    assert.equal("^P-\\d{4}$", add.input_schema.properties.productId.pattern)
    local r = page:call("add_to_cart", { productId = "P-0005", quantity = 2 })
    -- the hook answers in MCP's shape
    assert.is_false(r.isError)
    assert.same({ lines = 1, total = 25800, currency = "EUR" }, r.structuredContent)
    assert.equal("text", r.content[1].type)
    assert.same(r.structuredContent, dt.json.decode(r.content[1].text))
    -- Chromium does not check WebMCP input: we do, by path, and nothing is sent
    assert.same({ "/productId", "/quantity" },
      paths(H.error_of(page.call, page, "add_to_cart", { productId = "P-5", quantity = 100 })))
    assert.equal("cart (1)", page:evaluate("document.querySelector('a[data-screen=cart]').textContent"))
    page:close()
  end)

  it("after a pushState screen change, calls reach the new screen's tools, never the unmounted one's", function()
    local page = open("/apps/shop/index.html", "add_to_cart")
    assert.same({ screen = "catalog", mounted = true }, page:call("whichScreen"))
    local kept = page:tool("whichScreen")
    local card = page:tool("findProductCard")
    -- a click on the navigation bar's link: history.pushState, same document
    page:evaluate("document.querySelector('a[data-screen=checkout]').click()")
    until_groups(page, "window.fixtureGroups.includes('shop-checkout') && !window.fixtureGroups.includes('shop-catalog')")
    assert.equal(server.url("/apps/shop/index.html?screen=checkout"), page:evaluate("location.href"))
    -- Tools kept from the catalog are gone with it
    local k = result_or_code(kept.call, kept)
    assert.is_true(k == "stale" or k == "tool_not_found", "kept whichScreen gave " .. dt.json.encode(k))
    local c = result_or_code(card.call, card, { productId = "P-0001" })
    assert.is_true(c == "stale" or c == "tool_not_found", "kept findProductCard gave " .. dt.json.encode(c))
    -- by name: the checkout's tool, or not found, never the catalog's
    local w = result_or_code(page.call, page, "whichScreen")
    assert.is_true(w == "stale" or w == "tool_not_found" or (w.screen == "checkout" and w.mounted),
      "whichScreen gave " .. dt.json.encode(w))
    assert.equal("tool_not_found", result_or_code(page.call, page, "findProductCard", { productId = "P-0001" }))
    -- the hook's WebMCP tool went with the catalog (its registration aborted)
    assert.equal("tool_not_found", result_or_code(page.call, page, "add_to_cart", { productId = "P-0001", quantity = 1 }))
    assert.same({ screen = "checkout", mounted = true }, page:wait_for_tool("whichScreen")())
    local list, warnings = listing(page)
    assert.same({}, warnings)
    assert.same({ ["shop-checkout"] = { "whichScreen", "placeOrder" }, shop = { "currentScreen", "goTo" } }, list)
    -- a tool that navigates (pushState from inside the call), then the
    -- browser's back button (popstate)
    assert.same({ screen = "cart" }, page:call("goTo", { screen = "cart" }))
    until_groups(page, "window.fixtureGroups.includes('shop-cart')")
    w = result_or_code(page.call, page, "whichScreen")
    assert.is_true(w == "stale" or w == "tool_not_found" or (w.screen == "cart" and w.mounted),
      "whichScreen gave " .. dt.json.encode(w))
    page:evaluate("history.back()")
    until_groups(page, "window.fixtureGroups.includes('shop-checkout')")
    w = result_or_code(page.call, page, "whichScreen")
    assert.is_true(w == "stale" or w == "tool_not_found" or (w.screen == "checkout" and w.mounted),
      "whichScreen gave " .. dt.json.encode(w))
    assert.same({ screen = "checkout", url = "/apps/shop/index.html?screen=checkout" }, page:call("currentScreen"))
    -- no call ever ran a screen's tool after its unmount
    assert.same({}, unmounted_calls(page, "shopCalls"))
    page:close()
  end)
end)

describe("a Vue 3 board (reactive schemas, hash routes)", function()
  it("lists the board's group, whose schemas are reactive proxies shared between properties", function()
    local page = open("/apps/board/index.html", "whichView")
    local list, warnings, groups = listing(page)
    assert.same({}, warnings)
    assert.same({ board = { "whichView", "listCards", "addCard", "moveCard", "findCard" } }, list)
    local s = groups[1]:tool("moveCard").input_schema
    -- one CardId proxy for id and before, one Column proxy shared by three tools
    assert.same({ type = "integer", minimum = 1, description = "A card id" }, s.properties.id)
    assert.same(s.properties.id, s.properties.before)
    assert.same({ "todo", "doing", "done" }, s.properties.to.enum)
    assert.same(s.properties.to, groups[1]:tool("addCard").input_schema.properties.column)
    page:close()
  end)

  it("calls the board's tools, refuses bad input by path, returns a card as an Element", function()
    local page = open("/apps/board/index.html", "whichView")
    assert.same({ id = 4, title = "Ship it", column = "todo" }, page:call("addCard", { title = "Ship it", column = "todo" }))
    assert.same({ id = 4, title = "Ship it", column = "done" }, page:call("moveCard", { id = 4, to = "done", before = 3 }))
    local done = page:call("listCards", { column = "done" })
    assert.same({ 4, 3 }, { done[1].id, done[2].id })
    assert.same({ "/before", "/id", "/to" },
      paths(H.error_of(page.call, page, "moveCard", { id = 0, to = "later", before = 1.5 })))
    assert.same({ "/column", "/title" }, paths(H.error_of(page.call, page, "addCard", { title = "", column = "x" })))
    local el = page:call("findCard", { id = 4 })
    assert.is_true(dt.is_element(el))
    assert.equal("li#card-4.card", el.description)
    page:close()
  end)

  it("after a hash route change, calls reach the new view's tools; the enum follows the reactive columns", function()
    local page = open("/apps/board/index.html", "whichView")
    assert.same({ view = "board", mounted = true }, page:call("whichView"))
    local kept = page:tool("whichView")
    page:evaluate("document.querySelector('a[data-route=\"#/settings\"]').click()")
    until_groups(page, "window.fixtureGroups.includes('board-settings') && !window.fixtureGroups.includes('board')")
    assert.equal(server.url("/apps/board/index.html#/settings"), page:evaluate("location.href"))
    local k = result_or_code(kept.call, kept)
    assert.is_true(k == "stale" or k == "tool_not_found", "kept whichView gave " .. dt.json.encode(k))
    local w = result_or_code(page.call, page, "whichView")
    assert.is_true(w == "stale" or w == "tool_not_found" or (w.view == "settings" and w.mounted),
      "whichView gave " .. dt.json.encode(w))
    assert.equal("tool_not_found", result_or_code(page.call, page, "listCards"))
    assert.same({ "todo", "doing", "done", "blocked" }, page:call("addColumn", { name = "blocked" }))
    -- back to the board by the browser's back button: the Column schema
    -- now has the new column
    page:evaluate("history.back()")
    until_groups(page, "window.fixtureGroups.includes('board')")
    assert.same({ view = "board", mounted = true }, page:wait_for_tool("moveCard").group:tool("whichView")())
    local move = page:tool("moveCard")
    assert.same({ "todo", "doing", "done", "blocked" }, move.input_schema.properties.to.enum)
    assert.same({ id = 2, title = "Lock the versions", column = "blocked" }, move{ id = 2, to = "blocked" })
    assert.same({}, unmounted_calls(page, "boardCalls"))
    page:close()
  end)
end)
