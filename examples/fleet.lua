-- fleet.lua: one workflow over many pages at once, spread over several
-- browsers, from one Lua process: one task per page (dt.async), all
-- awaited with dt.wait_all. Prints one line per page and a summary.
--
--   lua5.4 examples/fleet.lua [APP_URL] [--pages N] [--browsers M]
--   lua5.4 examples/fleet.lua APP_URL --connect http://127.0.0.1:9222 --connect wss://h/...
--   lua5.4 examples/fleet.lua APP_URL --webdriver http://127.0.0.1:4444 --browsers 3
--   devtools-tools run examples/fleet.lua APP_URL -- --pages 4 --browsers 1
--
-- Browsers are launched (default: 2 of them, 6 pages), attached with
-- dt.connect (--connect, repeatable; --header "Name: value", --ca-file PEM
-- for wss:// endpoints) or made as WebDriver sessions (--webdriver URL, M
-- of them). Through `devtools-tools run` the command's browser is the
-- first of the M (and stays open: the command closes it). Without APP_URL
-- the sample app's backend (build/app/server, `make app`) is started on a
-- free port and stopped at the end. Runs from any directory, in Lua 5.4
-- and LuaJIT. As a module it exports run(opts) and workflow(page).
--
-- The workflow is the sample app's (examples/workflow.lua), written again
-- as steps that never block the loop: every wait goes through the
-- connection or dt.sleep, so the pages really run side by side.
-- the checkout's lua/ and build dir when this file sits in one (see checkout.lua)
local _, root = dofile((debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or ".") .. "/checkout.lua")
local dt = require "devtools_tools"
local core = require "devtools_tools.core"

local tax_of = require("workflow").tax_of      -- what the checkout panel charges

local M = {}

-- workflow(page) -> findings (a list of bug names), calls made.
-- The three checks of examples/workflow.lua, each a few tool calls.
function M.workflow(page)
  local calls = 0
  local function call(name, args)
    calls = calls + 1
    return page:call(name, args)
  end
  local found = {}
  page:wait_for_tool("getPipeline", { timeout = 20 })

  -- the cache: reassigning one lead should refetch one key
  local pipeline = call("getPipeline")
  local lead, rep = pipeline.leads[1], nil
  for _, r in ipairs(pipeline.reps) do
    if r.id ~= lead.repId then rep = r break end
  end
  local before = call("getCacheStatistics")
  call("reassignLead", { leadId = lead.id, repId = rep.id })
  local after = call("getCacheStatistics")
  local misses = {}
  for _, k in ipairs(before.keys) do misses[k.key] = k.misses end
  local refetched = 0
  for _, k in ipairs(after.keys) do
    if k.misses > (misses[k.key] or 0) then refetched = refetched + 1 end
  end
  if refetched > 1 then found[#found + 1] = "cache-invalidate-all" end

  -- the cart: the badge should count units
  call("clearCart")
  call("addToCart", { productId = 3, qty = 2 })
  call("addToCart", { productId = 8, qty = 1 })
  local items = call("getGlobalState", { path = "cart.items" })
  local badge = call("getGlobalState", { path = "cart.badgeCount" })
  local units = 0
  for _, it in ipairs(items) do units = units + it.qty end
  if badge ~= units then found[#found + 1] = "badge-counts-lines" end

  -- the order: what the UI charged against what the backend stored
  local order = call("checkout")
  local rows = call("queryDatabaseTable", { tableName = "orders", afterId = order.orderId - 1, limit = 1 }).rows
  for _, o in ipairs(rows) do
    if o.id == order.orderId and o.total_cents ~= order.totalCents
       and o.tax_cents == tax_of(o.subtotal_cents + o.shipping_cents) then
      found[#found + 1] = "backend-taxes-shipping"
    end
  end
  return found, calls
end

-- run(opts) -> results, summary. opts: url, pages, browsers (a list of
-- Browsers to use; they are not closed here), log (a function of one line).
function M.run(opts)
  local errors = require "devtools_tools.base.errors"
  if type(opts) ~= "table" or type(opts.url) ~= "string" then
    errors.raise("bad_argument", "fleet.run: opts.url must be the app's URL")
  end
  if type(opts.pages) ~= "number" or opts.pages < 1 or opts.pages % 1 ~= 0 then
    errors.raise("bad_argument", "fleet.run: opts.pages must be a whole number of pages, 1 or more")
  end
  local function a_browser(b) return type(b) == "table" and type(b.new_page) == "function" end
  local bad = type(opts.browsers) ~= "table" or #opts.browsers == 0
  for _, b in ipairs(bad and {} or opts.browsers) do bad = bad or not a_browser(b) end
  if bad then
    errors.raise("bad_argument", "fleet.run: opts.browsers must be a list of Browsers (dt.launch(), "
      .. "dt.connect(...)), got " .. type(opts.browsers))
  end
  local log = opts.log or print
  local browsers, results, tasks = opts.browsers, {}, {}
  local t0 = core.now()
  for i = 1, opts.pages do
    local b = browsers[(i - 1) % #browsers + 1]
    local bi = (i - 1) % #browsers + 1
    tasks[i] = dt.async(function()
      local started = core.now()
      local page = b:new_page(opts.url)
      local ok, found, calls = pcall(M.workflow, page)
      pcall(page.close, page)
      local r = { page = i, browser = bi, ok = ok, started = started, finished = core.now(),
        ms = (core.now() - started) * 1000 }
      if ok then r.found, r.calls = found, calls else r.err = found end
      return r
    end, function(_, r)
      -- on the loop, as each page finishes: its line, in finishing order
      if type(r) == "table" and r.page then
        if r.ok then
          log(("page %2d  browser %d  %2d calls  %4.0f ms  %d bugs: %s"):format(r.page, r.browser,
            r.calls, r.ms, #r.found, table.concat(r.found, ", ")))
        else
          log(("page %2d  browser %d  failed after %.0f ms: %s"):format(r.page, r.browser, r.ms,
            tostring(r.err)))
        end
      end
    end)
  end
  local all = dt.wait_all(tasks, opts.timeout or 120)
  local wall = core.now() - t0
  local s = { pages = opts.pages, browsers = #browsers, ok = 0, failed = 0, calls = 0,
    all_bugs = 0, seconds = wall }
  for i, r in ipairs(all) do
    results[i] = r
    if r.ok then
      s.ok = s.ok + 1
      s.calls = s.calls + r.calls
      if #r.found == 3 then s.all_bugs = s.all_bugs + 1 end
    else
      s.failed = s.failed + 1
    end
  end
  log(("%d pages on %d browsers: %d found all 3 bugs, %d failed; %d calls in %.2f s (%.0f calls/s)")
    :format(s.pages, s.browsers, s.all_bugs, s.failed, s.calls, wall, s.calls / wall))
  return results, s
end

-- ---- as a script -----------------------------------------------------------

local function start_app()
  local bin = root .. "/build/app/server"
  local proc, e = core.process.spawn({ bin, "--port", "0" })
  if not proc then error("cannot start the sample app (" .. bin .. "; make app): " .. e, 0) end
  local deadline, url = core.now() + 10
  repeat
    url = proc:stderr():match("listening on (http://[%d.:]+/)")
    if not url then
      if not proc:running() then error("the app server exited: " .. proc:stderr(), 0) end
      core.sleep(0.02)
    end
  until url or core.now() > deadline
  if not url then proc:close(0); error("the app server did not start", 0) end
  return proc, url
end

local function main(argv)
  local o = { pages = 6, nbrowsers = 2, connect = {}, headers = nil }
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == "--pages" then o.pages = tonumber(argv[i + 1]); i = i + 2
    elseif a == "--browsers" then o.nbrowsers = tonumber(argv[i + 1]); i = i + 2
    elseif a == "--connect" then o.connect[#o.connect + 1] = argv[i + 1]; i = i + 2
    elseif a == "--webdriver" then o.webdriver = argv[i + 1]; i = i + 2
    elseif a == "--ca-file" then o.ca_file = argv[i + 1]; i = i + 2
    elseif a == "--header" then
      local k, v = (argv[i + 1] or ""):match("^([^:]+):%s*(.*)$")
      o.headers = o.headers or {}
      if k then o.headers[k] = v end
      i = i + 2
    elseif a:match("^%-") then o.bad = "unknown option " .. a; i = i + 1
    else o.url = a; i = i + 1 end
  end
  if o.bad or not o.pages or o.pages < 1 or not o.nbrowsers or o.nbrowsers < 1 then
    io.stderr:write(o.bad and (o.bad .. "\n") or "", "usage: fleet.lua [APP_URL] [--pages N] [--browsers M]"
      .. " [--connect URL]... [--webdriver URL]\n")
    os.exit(2)
  end
  local app, browsers = nil, {}
  -- devtools-tools run: its browser is the first (the command closes it)
  local given = #o.connect == 0 and not o.webdriver and rawget(_G, "browser") or nil
  local ok, err = pcall(function()
    if not o.url then app, o.url = start_app() end
    -- the browsers, made side by side too
    local makers = {}
    local n = #o.connect > 0 and #o.connect or o.nbrowsers
    for k = 1, n do
      makers[k] = dt.async(function()
        if k == 1 and given then
          return given
        elseif #o.connect > 0 then
          return dt.connect(o.connect[k], { headers = o.headers, ca_file = o.ca_file })
        elseif o.webdriver then
          return dt.webdriver(o.webdriver, nil, { headers = o.headers, ca_file = o.ca_file })
        end
        return dt.launch()
      end)
    end
    for k, t in ipairs(makers) do
      local made, b = pcall(t.wait, t, 90)
      if not made then error(b, 0) end
      browsers[k] = b
    end
    print(("%d browsers ready; running the workflow on %d pages at %s"):format(#browsers, o.pages, o.url))
    local _, s = M.run({ url = o.url, pages = o.pages, browsers = browsers })
    if s.failed > 0 or s.all_bugs < s.pages then error("not every page found the three bugs", 0) end
  end)
  for _, b in ipairs(browsers) do
    if b ~= given then pcall(b.close, b) end
  end
  if app then app:close(5) end
  if not ok then
    io.stderr:write("fleet: ", tostring(err), "\n")
    os.exit(1)
  end
end

-- A script when run as one; a module (require "fleet") otherwise.
if arg and arg[0] and arg[0]:match("fleet%.lua$") then
  main(arg)
end

return M
