-- workflow.lua: a multi-step debugging workflow over the tools a page
-- exposes. Cache statistics and the requests around one action -> state at
-- cart.items -> rows of orders -> a diagnosis that names each bug with the
-- numbers that prove it.
--
--   devtools-tools run --webmcp examples/workflow.lua http://127.0.0.1:8080/
--   lua5.4 examples/workflow.lua http://127.0.0.1:8080/
--
-- Written against the sample app (examples/app); copy the steps for your
-- own pages. Used as a module (`require "workflow"`) it exports run(page),
-- which `make demo` calls.
--
-- It changes the app's data: it reassigns a lead, fills the cart and places
-- an order. The database is rebuilt from seed.sql when the server starts, so
-- run it against a freshly started server (as `make demo` does) to get the
-- same diagnosis every time.
-- Through `devtools-tools run` it works on the page the command opened
-- (--webmcp lets it see the app's WebMCP tool); alone it launches headless
-- Chromium, WebMCP on. Runs from any directory, under Lua 5.4 or LuaJIT,
-- against the installed module or, when this file sits in a checkout, the
-- checkout's lua/ and build/<interpreter>/ (make, or make LUA=luajit;
-- DEVTOOLS_TOOLS_BUILD overrides the build directory).
dofile((debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or ".") .. "/checkout.lua")
local dt = require "devtools_tools"
local report = require "report"

local M = {}

local TAX_PERCENT = 8                           -- what the checkout panel charges

local function tax_of(cents)                    -- 8 %, rounded to the cent
  return math.floor((cents * TAX_PERCENT + 50) / 100)
end
M.tax_of = tax_of

local function step(log, n, total, what)
  log(("[%d/%d] %s"):format(n, total, what))
end

-- run(page, opts?) -> findings: a list of {bug = "...", line = "..."}.
-- opts.log prints progress (default: print).
function M.run(page, opts)
  local log = opts and opts.log or print
  local findings = {}
  local total = 4

  -- 0. What does the page expose, in which frames?
  step(log, 1, total, "discovering the page's tools in every frame")
  -- The app mounts its support widget (a cross-origin iframe) once the
  -- session has loaded: wait for the app, then give the widget a moment.
  page:call("getFeatureFlags")
  local groups
  local function devtools_groups()
    local n = 0
    for _, g in ipairs(groups) do if g.kind == "devtools" then n = n + 1 end end
    return n
  end
  for _ = 1, 50 do
    groups = page:discover()
    if devtools_groups() > 3 then break end
    dt.sleep(0.1)                               -- (inside a task it yields)
  end
  -- Both kinds: devtoolstooldiscovery groups, and WebMCP tools (listed when
  -- the browser runs with WebMCP on: dt.launch{webmcp = true})
  local rows = {}
  for _, g in ipairs(groups) do
    local names = {}
    for _, t in ipairs(g.tools) do names[#names + 1] = t.name end
    rows[#rows + 1] = { g.kind, g.name, g.frame.origin, table.concat(names, ", ") }
  end
  log(report.format({ "kind", "group", "frame origin", "tools" }, rows))

  -- 1. Cache statistics around one action: reassigning a lead.
  step(log, 2, total, "cache statistics around reassigning a lead")
  local pipeline = page:call("getPipeline")
  local lead = pipeline.leads[1]
  local rep
  for _, r in ipairs(pipeline.reps) do
    if r.id ~= lead.repId then rep = r break end
  end
  local before = page:call("getCacheStatistics")
  -- page:observe brackets the action: the requests that went out during it
  local seen = page:observe(function()
    page:call("reassignLead", { leadId = lead.id, repId = rep.id })
  end)
  local after = page:call("getCacheStatistics")
  local req_rows, gets, writes = {}, {}, {}
  for _, r in ipairs(seen.requests) do
    local path = r.url:match("^https?://[^/]+(/.*)$") or r.url
    req_rows[#req_rows + 1] = { r.method, path, r.status or r.failed or "?", r.sizes.body,
      r.timing.duration and ("%.1f ms"):format(r.timing.duration * 1000) or "" }
    if r.method == "GET" then gets[#gets + 1] = path else writes[#writes + 1] = r.method .. " " .. path end
  end
  log(report.format({ "method", "request during the reassignment", "status", "bytes", "time" }, req_rows))
  local per_key = {}
  for _, k in ipairs(before.keys) do per_key[k.key] = k end
  local key_rows, refetched = {}, 0
  for _, k in ipairs(after.keys) do
    local b = per_key[k.key] or { misses = 0, hits = 0 }
    local d = k.misses - b.misses
    if d > 0 then refetched = refetched + 1 end
    key_rows[#key_rows + 1] = { k.key, b.misses, k.misses, d, k.cached and "yes" or "no" }
  end
  log(report.format({ "cache key", "misses before", "after", "refetched", "cached now" }, key_rows))
  local inv = after.lastInvalidation
  if refetched > 1 then
    findings[#findings + 1] = { bug = "cache-invalidate-all", line = ((
      "reassigning lead %d to %s refetched %d cache keys (misses %d -> %d, entries %d -> %d, "
      .. "last invalidation scope %q dropped %d entries) where 1 was needed: "
      .. "%d requests went out (%s, then %d GETs: %s): "
      .. "reassignLead throws the whole cache away instead of updating one entry"):format(
      lead.id, rep.name, refetched, before.misses, after.misses, before.entries, after.entries,
      tostring(inv and inv.scope), inv and inv.entriesDropped or 0,
      #seen.requests, table.concat(writes, ", "), #gets, table.concat(gets, ", "))),
      requests = seen.requests }
  end

  -- 2. State at cart.items: what the cart holds and what the badge says.
  step(log, 3, total, "state at cart.items after adding products")
  page:call("clearCart")
  page:call("addToCart", { productId = 3, qty = 2 })
  page:call("addToCart", { productId = 8, qty = 1 })
  local items = page:call("getGlobalState", { path = "cart.items" })
  local badge = page:call("getGlobalState", { path = "cart.badgeCount" })
  local units, item_rows = 0, {}
  for _, it in ipairs(items) do
    units = units + it.qty
    item_rows[#item_rows + 1] = { it.productId, it.name, it.qty, it.price }
  end
  log(report.format({ "product", "name", "qty", "price" }, item_rows))
  log(("  %d lines, %d units; the cart badge shows %d"):format(#items, units, badge))
  if badge ~= units then
    findings[#findings + 1] = { bug = "badge-counts-lines", line = (
      "cart: %d lines holding %d units, badge shows %d: the badge counts line items, not quantities"):format(
      #items, units, badge) }
  end

  -- 3. Rows of orders: what the UI charged against what the backend stored.
  step(log, 4, total, "checkout, then the orders table behind the debug endpoint")
  local order = page:call("checkout")
  local result = page:call("queryDatabaseTable", { tableName = "orders", limit = 100 })
  local order_rows, wrong = {}, {}
  for _, o in ipairs(result.rows) do
    local want_tax = tax_of(o.subtotal_cents)
    local diff = o.tax_cents - want_tax
    order_rows[#order_rows + 1] = { o.id, report.money(o.subtotal_cents), report.money(o.shipping_cents),
      report.money(o.tax_cents), report.money(want_tax), report.money(o.total_cents),
      diff == 0 and "" or ("+" .. report.money(diff)) }
    if diff ~= 0 then wrong[#wrong + 1] = o end
  end
  log(report.format({ "order", "subtotal", "shipping", "tax", "8% of goods", "total", "overcharge" }, order_rows))
  local stored
  for _, o in ipairs(result.rows) do
    if o.id == order.orderId then stored = o end
  end
  if not stored then
    -- a server that took many orders since it started: the first 100 rows
    -- are older ones; ask for the row by its id
    local own = page:call("queryDatabaseTable", { tableName = "orders", afterId = order.orderId - 1, limit = 1 })
    stored = own.rows[1]
    if stored and stored.id == order.orderId then
      log(("  order %d (not among the %d lowest ids above): subtotal %s, shipping %s, tax %s, total %s"):format(
        order.orderId, #result.rows, report.money(stored.subtotal_cents), report.money(stored.shipping_cents),
        report.money(stored.tax_cents), report.money(stored.total_cents)))
    else
      stored = nil
      log(("  order %d is not in the orders table"):format(order.orderId))
    end
  end
  if stored and stored.total_cents ~= order.totalCents then
    local taxed = stored.subtotal_cents + stored.shipping_cents
    local why = (stored.tax_cents == tax_of(taxed)) and "the backend taxes shipping"
      or "the backend computes tax differently from the UI"
    findings[#findings + 1] = { bug = "backend-taxes-shipping", line = (
      "order %d: subtotal %s + tax %s + shipping %s = %s as the UI showed it, stored total %s "
      .. "(stored tax %s = %d%% of %s): %s"):format(
      order.orderId, report.money(order.subtotalCents), report.money(order.taxCents),
      report.money(order.shippingCents), report.money(order.totalCents), report.money(stored.total_cents),
      report.money(stored.tax_cents), TAX_PERCENT, report.money(taxed), why) }
    local ids, free = {}, {}
    for _, o in ipairs(wrong) do
      if o.id ~= order.orderId then ids[#ids + 1] = tostring(o.id) end
    end
    for _, o in ipairs(result.rows) do
      if o.shipping_cents == 0 then free[#free + 1] = tostring(o.id) end
    end
    if #ids > 0 then
      findings[#findings + 1] = { bug = "backend-taxes-shipping-history", line = (
        "orders %s were overcharged the same way (each pays shipping); "
        .. "orders with free shipping (%s) are right"):format(table.concat(ids, ", "), table.concat(free, ", ")) }
    end
  end

  -- The support widget is a cross-origin iframe with tools of its own.
  local ok, tickets = pcall(page.call, page, "getSupportTickets", { status = "all" })
  if ok and type(tickets) == "table" and tickets.tickets then
    log(("  the support widget (%s) holds %d tickets"):format(
      (page:tool("getSupportTickets").group.frame.origin), #tickets.tickets))
  end

  log("")
  log("== diagnosis")
  if #findings == 0 then log("  no bug found") end
  for i, f in ipairs(findings) do log(("  %d. %s"):format(i, f.line)) end
  return findings
end

-- Run by `devtools-tools run examples/workflow.lua URL`: the page is given.
-- Run as a script: launch Chromium, open the URL, run the workflow.
if ... ~= "workflow" and rawget(_G, "page") and rawget(_G, "browser") then
  M.run(rawget(_G, "page"))
elseif ... ~= "workflow" then
  local url = arg and arg[1]
  if not url then io.stderr:write("usage: lua5.4 examples/workflow.lua URL\n") os.exit(2) end
  local browser = dt.launch({ webmcp = true })  -- Lua 5.4: local browser <close> = ...
  local ok, err = pcall(function() M.run(browser:new_page(url)) end)
  browser:close()
  if not ok then io.stderr:write(tostring(err), "\n") os.exit(1) end
end

return M
