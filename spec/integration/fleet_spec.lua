-- The fleet recipe (examples/fleet.lua): the sample app's workflow over
-- many pages at once, one task per page, on launched and attached browsers.
-- Real headless Chromium, the real app backend, everything on 127.0.0.1.
local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local app_server = require "support.app_server"
local R = require "support.remote_helper"
local sh = require("helper").sh

local build = os.getenv("DEVTOOLS_TOOLS_BUILD") or "build/lua5.4"

describe("the fleet recipe", function()
  local server

  before_each(function() server = assert(app_server.start()) end)
  after_each(function() server:stop() end)

  it("runs the workflow on 3 pages over 2 launched browsers, from another directory", function()
    local out, rc = sh(("cd /tmp && DEVTOOLS_TOOLS_BUILD=%s lua5.4 %s/examples/fleet.lua"
      .. " --pages 3 --browsers 2 %s"):format(build, os.getenv("PWD"), server.url))
    assert.are.equal(0, rc, out)
    local seen = {}
    for page, browser, bugs in out:gmatch("page +(%d+) +browser (%d) +%d+ calls +%d+ ms +(%d) bugs") do
      seen[tonumber(page)] = tonumber(browser)
      assert.are.equal("3", bugs, out)
    end
    -- one line per page, pages spread over both browsers
    assert.are.same({ 1, 2, 1 }, seen, out)
    assert.matches("3 pages on 2 browsers: 3 found all 3 bugs, 0 failed", out, 1, true)
  end)

  it("refuses options it cannot use with bad_argument", function()
    local fleet = require "examples.fleet"
    for _, o in ipairs({ { url = server.url, pages = 2, browsers = 2 }, { url = server.url, pages = 2, browsers = {} },
        { url = server.url, pages = 0, browsers = {} }, { pages = 2, browsers = {} },
        { url = server.url, pages = 1, browsers = { 2 } } }) do
      local ok, e = pcall(fleet.run, o)
      assert.is_false(ok)
      assert.are.equal("bad_argument", e.code, tostring(e))
    end
    local ok, e = pcall(fleet.run, { url = server.url, pages = 2, browsers = 2 })
    assert.is_false(ok)
    assert.matches("opts.browsers must be a list of Browsers", e.message, 1, true)
  end)

  it("finds the stored order on a server whose first 100 orders are older ones", function()
    server:stop()
    server = assert(app_server.start({ extra_seed = app_server.MANY_ORDERS }))
    local browser = dt.launch()
    finally(function() browser:close() end)
    local fleet = require "examples.fleet"
    local lines = {}
    local _, s = fleet.run({ url = server.url, pages = 2, browsers = { browser },
      log = function(l) lines[#lines + 1] = l end })
    -- each page's order (1198, 1199) is past the 100 lowest ids
    assert.are.equal(2, s.all_bugs, table.concat(lines, "\n"))
  end)

  it("runs side by side on a launched browser and one attached over wss://", function()
    local chrome, cport = R.chromium()
    local certs = R.certificates()
    local proxy, pport = R.proxy(certs, cport, "Authorization: Bearer fleet")
    local launched, attached
    finally(function()
      if launched then launched:close() end
      if attached then attached:close() end
      R.stop(proxy)
      R.stop(chrome, 2)
      core.fs.rmtree(certs.dir)
    end)
    launched = dt.launch()
    attached = dt.connect("https://localhost:" .. pport, { ca_file = certs.ca,
      headers = { Authorization = "Bearer fleet" } })
    local fleet = require "examples.fleet"
    local lines = {}
    local results, s = fleet.run({ url = server.url, pages = 4,
      browsers = { launched, attached }, log = function(l) lines[#lines + 1] = l end })
    assert.are.equal(4, s.ok, table.concat(lines, "\n"))
    assert.are.equal(4, s.all_bugs)
    assert.are.equal(5, #lines)                 -- a line per page and the summary
    -- every page had started before the first one finished: they overlapped
    local last_start, first_end = 0, math.huge
    for _, r in ipairs(results) do
      last_start = math.max(last_start, r.started)
      first_end = math.min(first_end, r.finished)
    end
    assert.is_true(last_start < first_end)
    assert.are.same({ 1, 2, 1, 2 }, { results[1].browser, results[2].browser,
      results[3].browser, results[4].browser })
  end)
end)
