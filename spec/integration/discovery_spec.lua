-- Integration: tool discovery and invocation in real headless Chromium,
-- pages served by a local server on 127.0.0.1.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local H = require "helper"

local server, browser

local function open(path)
  return browser:new_page(server.url(path))
end

local names = H.group_names

local start_suite, stop_suite = H.browser_suite(function(s, b) server, browser = s, b end)
setup(start_suite)
teardown(stop_suite)

describe("discovery", function()
  it("finds one group with its tools, schemas and frame", function()
    local page = open("/tools.html")
    local groups, warnings = page:discover()
    assert.same({}, warnings)
    assert.equal(1, #groups)
    local g = groups[1]
    assert.equal("main-tools", g.name)
    assert.equal("Tools of the test page", g.description)
    assert.equal(server.url("/tools.html"), g.frame.url)
    assert.equal("http://127.0.0.1:" .. server.port, g.frame.origin)
    assert.is_string(g.frame.id)
    local add = g:tool("add")
    assert.equal("add", add.name)
    assert.equal("Adds two numbers", add.description)
    assert.equal("object", add.input_schema.type)
    assert.same({ "a", "b" }, add.input_schema.required)
    assert.equal(g, add.group)
    assert.is_nil(g:tool("missing"))
    assert.equal("bad_argument", H.error_of(g.tool, g, 5).code)       -- a name is a string
    assert.equal("bad_argument", H.error_of(g.tool, g, nil).code)
    assert.equal(add, page:tool("add"))
    assert.matches("^ToolGroup%(main%-tools", tostring(g))
    assert.equal("Tool(add)", tostring(add))
    page:close()
  end)

  it("keeps several groups in listener order", function()
    local page = open("/cases.html?case=two")
    local groups = page:discover()
    assert.same({ "first", "second" }, names(groups))
    assert.is_nil(groups[1].description)
    assert.equal("the second", groups[2].description)
    -- the first tool of a name wins, as with window.__dtmcp.executeTool
    assert.equal("first", page:call("shared"))
    assert.equal("first", page:evaluate("window.__dtmcp.executeTool('shared', {})"))
    -- but a group's own tool runs that one
    assert.equal("second", groups[2]:tool("shared")())
    page:close()
  end)

  it("waits for microtask and setTimeout(0) responders but not later ones", function()
    local page = open("/cases.html?case=async")
    local groups = page:discover()
    assert.same({ "micro", "timeout0" }, names(groups))
    assert.equal("micro", page:call("m"))
    local e = H.error_of(page.call, page, "late", nil)
    -- the late responder pushed its group after we returned; a second
    -- discovery (done once on a miss) does not see it either
    assert.equal("tool_not_found", e.code)
    page:close()
    page = open("/cases.html?case=late-only")
    assert.same({}, page:discover())
    page:close()
  end)

  it("skips invalid groups whole and reports each as a warning and console.error", function()
    local page = open("/cases.html?case=invalid")
    local groups, warnings = page:discover()
    assert.same({ "good" }, names(groups))
    assert.equal(7, #warnings)
    local all = table.concat(warnings, "\n")
    for _, want in ipairs({ "name must be a string", "description must be a string",
        "tools must be an array", '"bad-tool-name"', "inputSchema must be an object",
        "execute must be a function" }) do
      assert.matches(want, all, 1, true)
    end
    assert.equal(7, page:evaluate("window.consoleErrors.length"))
    assert.matches("^Invalid tool", page:evaluate("window.consoleErrors[0]"))
    page:close()
  end)

  it("gives an empty list, not an error, for respondWith({}), a silent listener and no listener", function()
    for _, case in ipairs({ "empty", "silent", "none" }) do
      local page = open("/cases.html?case=" .. case)
      local groups = page:discover()
      assert.same({}, groups)
      page:close()
    end
    -- with no listener nothing is dispatched, so nothing is defined
    local page = open("/cases.html?case=none")
    page:discover()
    assert.equal("undefined", page:evaluate("typeof window.__dtmcp"))
    page:close()
  end)

  it("is not stopped by a listener that throws", function()
    local page = open("/cases.html?case=throws")
    assert.same({ "survivor" }, names(page:discover()))
    assert.is_true(page:call("alive"))
    page:close()
  end)

  it("defines window.__dtmcp.executeTool for page scripts", function()
    local page = open("/tools.html")
    page:discover()
    assert.equal(3, page:evaluate("window.__dtmcp.executeTool('add', {a: 1, b: 2})"))
    local e = H.error_of(page.evaluate, page, "window.__dtmcp.executeTool('nope', {})")
    assert.equal("js_error", e.code)
    assert.matches("Tool nope not found", e.message, 1, true)
    page:close()
  end)

  it("finds tools in same-origin and cross-origin iframes, main frame first", function()
    local page = open("/frames.html")
    local groups = page:discover()
    assert.same({ "top", "child-same", "child-cross" }, names(groups))
    assert.equal("http://localhost:" .. server.port, groups[3].frame.origin)
    assert.equal("main", page:call("whoami"))               -- precedence
    assert.equal("same", groups[2]:tool("whoami")())
    assert.equal("cross", groups[3]:tool("whoami")())
    assert.equal("http://localhost:" .. server.port, page:call("where-cross"))
    assert.equal("http://127.0.0.1:" .. server.port, page:call("where-same"))
    page:close()
  end)

  it("rediscovers after reload and navigation, and old Tools are stale", function()
    local page = open("/tools.html")
    local add = page:tool("add")
    assert.equal(3, add{ a = 1, b = 2 })
    page:reload()
    local e = H.error_of(add.call, add, { a = 1, b = 2 })
    assert.equal("stale", e.code)
    assert.equal("add", e.tool)
    assert.equal(5, page:call("add", { a = 2, b = 3 }))     -- discovers again
    assert.are_not.equal(add, page:tool("add"))
    page:navigate(server.url("/cases.html?case=two"))
    assert.same({ "first", "second" }, names(page:tool_groups()))
    assert.equal("tool_not_found", H.error_of(page.call, page, "add").code)
    page:close()
  end)

  it("a call into a cross-origin iframe fails navigated as soon as the iframe is removed", function()
    local page = open("/oopif.html")
    page:wait_for_tool("slow", { timeout = 10 })
    page:evaluate("setTimeout(() => document.getElementById('cross').remove(), 300); 1")
    local t0 = core.now()
    local e = H.error_of(page.call, page, "slow", { ms = 5000 }, { timeout = 10 })
    assert.equal("navigated", e.code)
    assert.is_true(core.now() - t0 < 3, "waited " .. (core.now() - t0) .. " s")   -- was: the whole 10 s
    assert.same({ "top" }, names(page:discover({ timeout = 20 })))
    page:close()
  end)

  it("leaves out an iframe whose renderer crashed; the others' tools answer", function()
    local page = open("/oopif.html")
    page:wait_for_tool("slow", { timeout = 10 })
    local sid = require("devtools_tools.tools.types").document_of(page:tool("slow")).session
    page.conn:send_nowait("Page.crash", nil, sid)
    -- (was: every discovery from then on timed out on the crashed frame)
    assert.is_true(H.wait_for(function()
      local ok, groups = pcall(page.discover, page, { timeout = 2 })
      return ok and #groups == 1 and groups[1].name == "top"
    end, H.LONG))
    assert.equal("main", page:call("whoami", nil, { timeout = 20 }))
    page:close()
  end)

  it("marks only the navigated frame's tools stale", function()
    local page = open("/frames.html")
    local groups = page:discover()
    local main_tool, cross_tool = groups[1]:tool("whoami"), groups[3]:tool("whoami")
    page:evaluate("document.getElementById('cross').src += '&again=1'; true")
    assert(H.wait_for(function()
      page.conn:poll()
      return not require("devtools_tools.tools.types").document_of(cross_tool):is_current()
    end, H.LONG))
    assert.equal("stale", H.error_of(cross_tool.call, cross_tool).code)
    assert.equal("main", main_tool())
    page:close()
  end)
end)

describe("calling tools", function()
  local page
  setup(function() page = open("/tools.html") end)
  teardown(function() page:close() end)

  it("calls by name, as a method and as a function", function()
    assert.equal(3, page:call("add", { a = 1, b = 2 }))
    local add = page:tool("add")
    assert.equal(7, add:call({ a = 3, b = 4 }))
    assert.equal(9, add{ a = 4, b = 5 })
    assert.same({ x = "y" }, page:call("echo", { x = "y" }))
    assert.same({}, page:call("echo"))
  end)

  it("checks args before sending anything", function()
    assert.equal("bad_argument", H.error_of(page.call, page, "echo", "str").code)
    assert.equal("bad_argument", H.error_of(page.call, page, "echo", 5).code)
    assert.equal("bad_argument", H.error_of(page.call, page, "echo", { 1, 2 }).code)
    assert.equal("bad_argument", H.error_of(page.call, page, 42).code)
    local e = H.error_of(page.call, page, "nope")
    assert.equal("tool_not_found", e.code)
    assert.matches("^Tool nope not found %(nearest: ", e.message)
    assert.equal("never", e.details.nearest)
    assert.equal(14, #e.details.available)
    assert.equal("add", e.details.available[1])
    e = H.error_of(page.call, page, "ad")
    assert.equal("add", e.details.nearest)
  end)

  it("validates args against inputSchema", function()
    local e = H.error_of(page.call, page, "add", { a = "x" })
    assert.equal("invalid_params", e.code)
    assert.equal("add", e.tool)
    assert.matches("^Invalid parameters for tool add: ", e.message)
    assert.matches("/a", e.message, 1, true)
    assert.matches("b", e.message, 1, true)
    assert.is_table(e.details)
    assert.is_true(#e.details >= 2)
    local ok, err = page:tool("add"):validate({ a = 1 })
    assert.is_false(ok)
    assert.equal("invalid_params", err.code)
    assert.is_true(page:tool("add"):validate({ a = 1, b = 2 }))
  end)

  -- The reference validates with ajv 6.15 (new Ajv()): a pattern is read
  -- without the u flag, formats are ajv 6's, a type beside a $ref is kept.
  -- What it accepts we send; what it refuses we refuse, before sending.
  it("validates as the reference does: ajv 6's patterns, formats and $ref", function()
    local p = open("/annexb.html")
    assert.equal("555-1234", p:call("phone", { n = "555-1234" }))
    assert.equal("invalid_params", H.error_of(p.call, p, "phone", { n = "5551234" }).code)
    assert.equal(2, p:call("units", { s = "\u{1F432}" }))          -- one emoji, two units
    assert.equal("invalid_params", H.error_of(p.call, p, "units", { s = "ab\u{1F432}" }).code)
    assert.equal(100000, p:call("note", { t = string.rep("a\n", 50000) }))
    assert.equal("invalid_params", H.error_of(p.call, p, "note", { t = string.rep("a", 100001) }).code)
    assert.equal("2021-02-29", p:call("day", { d = "2021-02-29" }))    -- ajv 6's date is a shape
    assert.equal("invalid_params", H.error_of(p.call, p, "day", { d = "2021-2-28" }).code)
    assert.is_true(p:call("flag", { f = true }))
    assert.equal("invalid_params", H.error_of(p.call, p, "flag", { f = 0 }).code)
    local e = H.error_of(p.call, p, "anchored", { s = "a" })
    assert.equal("tool_error", e.code)
    assert.matches("invalid inputSchema", e.message)
    -- the page's own RegExp agrees with each pattern's verdict above
    assert.same({ true, false, true, false }, p:evaluate([[
      [/^\d{3}\-\d{4}$/.test('555-1234'), /^\d{3}\-\d{4}$/.test('5551234'),
       /^..$/.test('\u{1F432}'), /^..$/.test('ab\u{1F432}')] ]]))
    p:close()
  end)

  it("post-processes results like the reference", function()
    local function special(w) return page:call("special", { which = w }) end
    local cyc = special("cycle")
    assert.equal("o", cyc.name)
    assert.equal("<Circular reference>", cyc.self)
    assert.equal("<Circular reference>", cyc.list[1])
    assert.same({ a = { v = 1 }, b = { v = 1 } }, special("shared"))   -- not a cycle
    assert.same({ when = "<Date instance>" }, special("date"))
    assert.same({ "<Point instance>", "<Map instance>" }, special("class"))
    assert.same({ f = "<Function object>", g = "<Function object>" }, special("function"))
    assert.is_nil(special("undefined"))
    local u = special("undef-member")
    assert.is_nil(u.a)
    assert.equal(1, u.b)
    assert.equal(dt.null, u.c[1])
    assert.same({ n = dt.null, i = dt.null, m = dt.null }, special("nan"))
    assert.same({ big = "12345678901234567890n" }, special("bigint"))
    assert.same({ s = "Symbol(tag)" }, special("symbol"))
    assert.equal(dt.null, special("null"))
    assert.equal("hello", special("string"))
    assert.equal(5, special("proto")["__proto__"])
    assert.same({ k = 1 }, special("nullproto"))
    local empty = special("empty")
    assert.equal(dt.array_mt, getmetatable(empty.list))
    assert.same({}, empty.obj)
    -- depth: "<Max depth>" at the limit, never a RangeError
    local d, n = special("deep"), 0
    while type(d) == "table" do d, n = d.c, n + 1 end
    assert.equal("<Max depth>", d)
    assert.is_true(n > 500)
    local a = special("deeparray")
    n = 0
    while type(a) == "table" do a, n = a[1], n + 1 end
    assert.equal("<Max depth>", a)
    assert.is_true(n > 500)
    -- a cycle through arrays is a cycle, as in the reference
    local ca = special("arraycycle")
    assert.equal("<Circular reference>", ca[1])
    assert.equal("<Circular reference>", ca[2][1][1])
    assert.equal("<Circular reference>", ca[3].inner[1])
    assert.same({ 1 }, ca[4])
  end)

  it("returns DOM elements as Element objects and takes them as arguments", function()
    local r = page:call("elements")
    assert.equal(2, r.n)
    local cart = r.cart
    assert.is_number(cart.backend_node_id)
    assert.equal("div#cart.big.box", cart.description)
    assert.equal("Element(div#cart.big.box)", tostring(cart))
    assert.equal(2, #r.items)
    assert.equal("li.item", r.items[2].description)
    assert.are_not.equal(r.items[1].backend_node_id, r.items[2].backend_node_id)
    local back = page:call("elementText", { el = cart, nested = { inner = r.items[2] } })
    assert.same({ tag = "DIV", text = "cart", nestedTag = "LI" }, back)
    -- x-mcp-type: HTMLElement wants an element
    local e = H.error_of(page.call, page, "elementText", { el = "div#cart" })
    assert.equal("invalid_params", e.code)
  end)

  it("refuses Elements from a document that is gone", function()
    local p2 = open("/tools.html")
    local cart = p2:call("elements").cart
    p2:reload()
    local e = H.error_of(p2.call, p2, "elementText", { el = cart })
    assert.equal("stale", e.code)
    assert.equal("elementText", e.tool)
    -- a fresh one works
    assert.equal("DIV", p2:call("elementText", { el = p2:call("elements").cart }).tag)
    p2:close()
  end)

  it("maps each failure to its code", function()
    local e = H.error_of(page.call, page, "fail", {})
    assert.equal("tool_error", e.code)
    assert.equal("kaboom", e.message)
    assert.matches("kaboom", e.details.stack)
    assert.equal("fail", e.tool)
    assert.equal("text", H.error_of(page.call, page, "fail", { kind = "string" }).message)
    assert.equal("42", H.error_of(page.call, page, "fail", { kind = "number" }).message)
    e = H.error_of(page.call, page, "fail", { kind = "reject" })
    assert.equal("rejected", e.message)
    assert.equal("TypeError", e.details.name)
    local t0 = core.now()
    e = H.error_of(page.call, page, "never", {}, { timeout = 0.2 })
    assert.equal("timeout", e.code)
    assert.is_true(core.now() - t0 < 2)
    assert.equal(3, page:call("add", { a = 1, b = 2 }))     -- still usable
  end)

  it("raises navigated when the frame navigates during a call", function()
    local p2 = open("/cases.html?case=navigating")
    for _ = 1, 3 do
      local e = H.error_of(p2.call, p2, "reloadMe", {}, { timeout = 10 })
      assert.equal("navigated", e.code)
      -- a call made after that finds the tool in the new document (its first
      -- try may still go to the old one, whose events were not read yet)
      assert.equal("here", p2:call("stay"))
    end
    -- a Tool of the old document is stale, however soon it is called
    local stay = p2:tool("stay")
    assert.equal("navigated", H.error_of(p2.call, p2, "reloadMe", {}, { timeout = 10 }).code)
    assert.equal("stale", H.error_of(stay.call, stay).code)
    p2:close()
  end)

  it("never runs a tool twice: one whose document went while it ran fails navigated", function()
    -- Chromium answers "Cannot find context" both for a call that came
    -- after the document went (it did not run: page:call looks again) and
    -- for one whose tool removed its own iframe (it ran)
    local p2 = open("/remount.html")
    for i = 1, 3 do
      p2:wait_for_tool("placeOrder", { timeout = 20 })    -- (the re-mounted widget's, once it is back)
      local ok, r = pcall(p2.call, p2, "placeOrder", {}, { timeout = 10 })
      if not ok then assert.equal("navigated", r.code, tostring(r)) end
      assert.equal(i, p2:evaluate("window.orders"))
    end
    p2:close()
  end)

  it("pipelines call_many: every request is written before the first reply is read", function()
    local log, restore, stats = H.spy_transport(page.conn, "return rt.batch(specs, els, limitMs")
    local ok, res = pcall(page.call_many, page, {
      { "add", { a = 1, b = 1 } }, { "slowEcho", { ms = 30 } }, { "add", { a = 2, b = 2 } },
      { "echo", { i = 4 } }, { "add", { a = 3, b = 3 } },
    })
    restore()
    assert(ok, tostring(res))
    assert.equal(2, res[1])
    assert.same({ ms = 30 }, res[2])
    assert.equal(4, res[3])
    assert.same({ i = 4 }, res[4])
    assert.equal(6, res[5])
    assert.equal(5, res.n)
    -- calls to one document travel as one request, its reply decoded in place
    assert.same({ "send", "reply" }, log)
    assert.equal(1, stats.decoded_in_place)
  end)

  it("call_many sends one request per document, all before reading any reply", function()
    local p2 = open("/frames.html")
    local groups = p2:discover()
    local log, restore, stats = H.spy_transport(p2.conn, "return rt.batch(specs, els, limitMs")
    local ok, res = pcall(p2.call_many, p2, {
      { groups[3]:tool("whoami") }, { "whoami" }, { groups[2]:tool("whoami") },
      { "where-cross" }, { groups[1]:tool("mainOnly") }, { "nope" },
    }, { errors = "return" })
    restore()
    assert(ok, tostring(res))
    assert.same({ "cross", "main", "same" }, { res[1], res[2], res[3] }, require("devtools_tools").json.encode(res))
    assert.equal("http://localhost:" .. server.port, res[4])
    assert.equal(server.url("/frames.html"), res[5])
    assert.equal("tool_not_found", res[6].code)
    assert.same({ "send", "send", "send", "reply", "reply", "reply" }, log)
    assert.equal(3, stats.decoded_in_place)
    p2:close()
  end)

  it("call_many without a deadline, or with one past what setTimeout takes, waits for every call", function()
    local p2 = open("/tools.html")
    for _, timeout in ipairs({ math.huge, 3e6 }) do         -- (3e6 s is past 2^31 ms: it fired at once)
      local res = p2:call_many({ { "slowEcho", { ms = 200 } }, { "slowEcho", { ms = 300 } } }, { timeout = timeout })
      assert.same({ 200, 300 }, { res[1].ms, res[2].ms })
    end
    p2:close()
  end)

  it("call_many can return errors in place", function()
    local res = page:call_many({ { "add", { a = 1, b = 1 } }, { "nope" }, { "fail", {} },
      { "add", { a = "x" } }, { "add", { a = 5, b = 5 } } }, { errors = "return" })
    assert.equal(2, res[1])
    assert.equal("tool_not_found", res[2].code)
    assert.equal("tool_error", res[3].code)
    assert.equal("invalid_params", res[4].code)
    assert.equal(10, res[5])
    assert.equal("tool_not_found", H.error_of(page.call_many, page, { { "add", { a = 1, b = 1 } }, { "nope" } }).code)
  end)

  it("returns a 10 MB result whole", function()
    local r = page:call("big", { mb = 10 })
    assert.equal(125000, #r.rows)
    assert.same({ id = 124999, name = "item 124999", price = 62499.5, tags = { "a", "b" } }, r.rows[125000])
  end)
end)

describe("hostile pages", function()
  it("treats tool and group names as data", function()
    local page = open("/cases.html?case=hostile")
    local groups = page:discover()
    local g = groups[1]
    assert.equal("__index", g.name)
    assert.equal("__gc", g.description)
    local odd = { "__index", "call", "__gc", "tool", "constructor", "__proto__", "__call", "__newindex", "name",
      'q"uo\\te', "it's", "line\226\128\168sep\nnl", "caf\195\169 \226\156\147", "</script>${x}`" }
    assert.equal(#odd, #g.tools)
    for _, n in ipairs(odd) do
      assert.equal("ran " .. n, page:call(n))
      local t = g:tool(n)
      assert.equal(n, t.name)
      assert.equal("ran " .. n, t())
      assert.equal("ran " .. n, t:call())
    end
    -- our objects still behave
    assert.is_function(g.tool)
    assert.equal(dt.Error, getmetatable(H.error_of(page.call, page, "missing")))
    assert.equal("function", type(getmetatable(g).__index.tool))
    page:close()
  end)
end)

describe("disconnection", function()
  it("raises disconnected when the browser goes away during a call", function()
    local b = dt.launch()
    local page = b:new_page(server.url("/tools.html"))
    page:discover()
    local pid = b.process:pid()
    -- killed once the tool has started, not before the call
    local killer
    H.on_console(page, "started", function()
      killer = core.process.spawn({ "/bin/kill", "-9", tostring(pid) })
    end)
    local e = H.error_of(page.call, page, "logThenNever", {}, { timeout = 20 })
    assert.equal("disconnected", e.code)
    assert.is_not_nil(killer, "the browser was not killed during the call")
    killer:close(0)
    b:close()
  end)
end)
