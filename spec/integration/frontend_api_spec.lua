-- What the front ends need of the library (issue 34), on real headless
-- Chromium and the fixtures' static server: page:evaluate{elements = true},
-- screenshots in JPEG and WebP, a host name that does not resolve, the
-- detached browser's record (absolute profile, headless, webmcp),
-- dt.term_size, and page:on("tools_changed") on a page whose
-- out-of-process iframe attaches after the watch began.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local H = require "helper"

describe("the library for front ends", function()
  local server, browser

  setup(function()
    server = H.start_server()
    browser = dt.launch()
  end)
  teardown(function()
    browser:close()
    server.stop()
  end)

  it("evaluate{elements = true} gives DOM elements as Elements, described as a tool's result", function()
    local page = browser:new_page(server.url("/cli.html"))
    local v = page:evaluate("[document.body, {h: document.head, n: 1}, null]", { elements = true })
    assert.is_true(dt.is_element(v[1]))
    assert.equal("Element(body)", tostring(v[1]))
    assert.is_number(v[1].backend_node_id)
    assert.equal("head", v[2].h.description)
    assert.equal(1, v[2].n)
    assert.equal(dt.null, v[3])
    -- an Element that a tool can be handed back, and that goes stale with its document
    assert.equal(server.url("/cli.html"), v[1].frame.url)
    -- a primitive and a promise as before; a cycle is the page's error
    assert.equal(3, page:evaluate("1 + 2", { elements = true }))
    assert.equal("Element(body)", tostring(page:evaluate("Promise.resolve(document.body)", { elements = true })))
    local err = H.error_of(page.evaluate, page, "(() => { const a = {}; a.a = a; return a })()", { elements = true })
    assert.equal("js_error", err.code)
    err = H.error_of(page.evaluate, page, "throw new Error('boom')", { elements = true })
    assert.equal("js_error", err.code)
    -- without the option: by value, as ever
    assert.same({}, page:evaluate("document.body"))
    -- page data that looks like a marker stays data
    local forged = page:evaluate("({'\\u0000dt-element:x': 0, description: 'forged'})", { elements = true })
    assert.is_false(dt.is_element(forged))
    page:close()
  end)

  it("screenshot{format = ...} writes JPEG and WebP, and refuses another format", function()
    local page = browser:new_page(server.url("/cli.html"))
    assert.equal("\255\216\255", page:screenshot({ format = "jpeg", quality = 50 }):sub(1, 3))
    local webp = page:screenshot({ format = "webp" })
    assert.equal("RIFF", webp:sub(1, 4))
    assert.equal("WEBP", webp:sub(9, 12))
    assert.equal("\137PNG", page:screenshot():sub(1, 4))
    assert.equal("bad_argument", H.error_of(page.screenshot, page, { format = "gif" }).code)
    assert.equal("bad_argument", H.error_of(page.screenshot, page, { format = "png", quality = 5 }).code)
    assert.equal("bad_argument", H.error_of(page.screenshot, page, { format = "jpeg", quality = 101 }).code)
    page:close()
  end)

  it("a host name that does not resolve is connect_failed, saying so", function()
    local err = H.error_of(browser.new_page, browser, "http://nosuch-host.invalid/")
    assert.equal("connect_failed", err.code)
    assert.matches("the host name nosuch%-host%.invalid was not found %(DNS: net::ERR_NAME_", err.message)
    assert.matches("^net::ERR_NAME_", err.details.errorText)
    -- a refused connection stays what it was
    err = H.error_of(browser.new_page, browser, "http://127.0.0.1:9/")
    assert.equal("protocol_error", err.code)
  end)

  it("tools_changed: an out-of-process iframe that attaches after the watch began is watched too", function()
    local page = browser:new_page(server.url("/frames.html"))
    local reasons = {}
    page:on("tools_changed", function(e) reasons[#reasons + 1] = e.reason end)
    page:evaluate(([[new Promise((resolve) => {
      const f = document.createElement('iframe');
      f.src = %q;
      f.onload = () => resolve(true);
      document.body.append(f);
    })]]):format(server.url("/child.html", "localhost")))
    assert.is_true(page:wait_until(function() return #reasons > 0 end, { timeout = 10 }))
    local names = {}
    for _, g in ipairs(page:discover()) do names[#names + 1] = g.frame.url end
    assert.truthy(table.concat(names, " "):find("localhost", 1, true))
    page:close()
  end)

  it("a detached browser's record: its profile absolute (a relative TMPDIR), headless, webmcp", function()
    local dir = assert(core.fs.mkdtemp("dt-rel-"))
    local here = assert(io.popen("pwd")):read("*l")
    local lua = jit and "luajit" or "lua5.4"
    local out, rc = H.sh(("cd %s && mkdir rel && TMPDIR=rel %s -e 'package.cpath = %q .. package.cpath"
      .. " io.stdout:write(require(\"devtools_tools.core\").fs.mkdtemp(\"x-\"))'"):format(dir, lua,
      here .. "/" .. H.build .. "/?.so;"))
    assert.equal(0, rc, out)
    assert.equal(dir .. "/rel/x-", out:sub(1, #dir + 7))
    core.fs.rmtree(dir)
    local b = dt.launch({ detached = true, webmcp = true })
    local rec = b.detached
    b:close()
    dt.stop_detached(rec)
    assert.equal("/", rec.profile:sub(1, 1))
    assert.is_true(rec.headless)
    assert.is_true(rec.webmcp)
  end)

  it("term_size: nothing for a descriptor that is no terminal", function()
    assert.is_nil(dt.term_size(0 + (dt.isatty(1) and 3 or 1) % 3))
    assert.equal("bad_argument", H.error_of(dt.term_size, 7).code)
  end)
end)
