-- Hostile and awkward pages (issue 11) and one deadline per call (issue 9),
-- in real headless Chromium; pages served by a local server on 127.0.0.1.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local pagejs = require "devtools_tools.tools.pagejs"
local H = require "helper"

local server, browser

local function open(path, opts)
  return browser:new_page(server.url(path), opts)
end

-- Pages whose load is heavy for Chromium itself (160 nested frames: 7-9 s
-- of CPU alone) get a longer deadline than new_page's default: beside a
-- second make test their load event came after 30 s.
local HEAVY = { timeout = 120 }

local names = H.group_names

local start_suite, stop_suite = H.browser_suite(function(s, b) server, browser = s, b end)
setup(start_suite)
teardown(stop_suite)

describe("page-side JavaScript", function()
  it("every js/ file compiles in a real page", function()
    local page = open("/tools.html")
    for name, text in pairs(pagejs.source) do
      -- each file is one function expression, but call_expr (a template)
      if name ~= "call_expr" then
        assert.equal("function", page:evaluate("typeof (" .. text .. "\n)"), name)
      end
    end
    assert.equal("function", page:evaluate("typeof (" .. pagejs.DISCOVER .. "\n)"))
    -- a one-call expression: undefined before the runtime is installed
    -- (a stale call to Lua), then a call
    local expr = pagejs.CALL_EXPR_HEAD .. '0,0,"add",{"a":1,"b":2}' .. pagejs.CALL_EXPR_TAIL
    assert.equal("undefined", page:evaluate("typeof window.__devtools_tools"))
    assert.equal("undefined", page:evaluate("typeof " .. expr))
    page:discover()
    assert.same({ n = 0, v = 3 }, dt.json.decode(page:evaluate(expr)))
    page:close()
  end)

  it("a page that removes the runtime gets stale calls until the next discovery", function()
    local page = open("/tools.html")
    assert.equal(3, page:call("add", { a = 1, b = 2 }))
    page:evaluate("delete window.__devtools_tools")
    local e = H.error_of(page.call, page, "add", { a = 1, b = 2 })
    assert.equal("stale", e.code)
    assert.equal("tool add: the tools of this document are gone", e.message)
    page:discover()
    assert.equal(3, page:call("add", { a = 1, b = 2 }))
    page:close()
  end)
end)

describe("one deadline per call", function()
  it("discovery and the call share the call's timeout", function()
    local page = open("/cases.html?case=slowdisc")
    -- discovery alone takes 0.8 s; the tool then needs 0.5 s more
    local e = H.error_of(page.call, page, "half", nil, { timeout = 1 })
    assert.equal("timeout", e.code)
    assert.equal("half", e.tool)
    page:close()
  end)

  it("frames nested deeper than Chromium can send the tree of: the tools are found all the same", function()
    local page = open("/deepnest.html", HEAVY)
    assert.same({ "main" }, names(page:discover(HEAVY)))
    assert.equal(3, page:call("add", { a = 1, b = 2 }))
    page:close()
  end)

  it("an iframe of another site whose frames nest too deep for Chromium's tree: its tools are found", function()
    local page = open("/xdeep.html", HEAVY)
    local groups
    assert.is_true(H.wait_for(function() groups = page:discover(HEAVY); return #groups == 1 end, 60))
    assert.matches("^http://localhost:", groups[1].frame.url)
    assert.equal(3, page:call("add", { a = 1, b = 2 }))
    page:close()
  end)

  it("a missing name on a fresh page runs one discovery, not two", function()
    local page = open("/cases.html?case=slowdisc")
    local e = H.error_of(page.call, page, "missing", nil, { timeout = 10 })
    assert.equal("tool_not_found", e.code)
    assert.equal(1, page:evaluate("window.discoveries"))
    page:close()
  end)
end)

describe("a kept Tool and another task's discovery", function()
  it("runs its own tool while a discovery that put a same-named group first is still under way", function()
    local page = open("/twoapps.html")
    assert.is_true(H.wait_for(function() return #page:discover() == 2 end, H.LONG))   -- (the widget's too)
    local cart = page:tool("deleteAll")
    assert.equal("empties the cart", cart.description)
    page:evaluate("window.admin = true; 0")
    local r = dt.wait_all({
      dt.async(function() return #page:discover() end),
      dt.async(function()
        -- the main frame's list replaced; the discovery waits for the widget
        page:evaluate("new Promise((r) => { const again = () => window.__dtmcp.toolGroups.length === 2 ? r(1)"
          .. " : setTimeout(again, 1); again(); })")
        local ok, v = pcall(cart.call, cart, {})
        return ok and v or v.code
      end),
    }, 30)
    assert.is_true(r[2] == "cart" or r[2] == "stale", tostring(r[2]))
    assert.equal("cart", page:evaluate("window.log.join()"):match("[^,]*$"))
    assert.is_nil(page:evaluate("window.log.join()"):find("admin"))
    page:close()
  end)
end)

describe("tasks sharing one page", function()
  -- a page whose tools are installed by script (about:blank)
  local function page_with(js)
    local page = browser:new_page()
    page:evaluate(js .. "; 1")
    return page
  end
  local TOOLS = [[window.addEventListener('devtoolstooldiscovery', (e) => e.respondWith({ name: 'g', description: 'g', tools: [
    { name: 'add', description: 'a+b', inputSchema: { type: 'object' }, execute: ({ a, b }) => a + b },
    { name: 'never', description: 'never settles', inputSchema: { type: 'object' }, execute: () => new Promise(() => {}) },
    { name: 'spin', description: 'busy for ms', inputSchema: { type: 'object' },
      execute: ({ ms }) => { const end = performance.now() + ms; while (performance.now() < end); return 'spun'; } },
  ] }))]]

  it("a call that timed out on an idle page does not stop the next one", function()
    local page = page_with(TOOLS)
    for _ = 1, 5 do
      assert.equal("timeout", H.error_of(page.call, page, "never", nil, { timeout = 0.2 }).code)
      assert.equal(3, page:call("add", { a = 1, b = 2 }))
      assert.equal("spun", page:call("spin", { ms = 20 }))
    end
    page:close()
  end)

  it("one task's call that timed out does not stop another task's tool", function()
    local page = page_with(TOOLS)
    page:call("add", { a = 1, b = 1 })
    local a = dt.async(function()
      assert.equal("timeout", H.error_of(page.call, page, "never", nil, { timeout = 0.2 }).code)
      return page:call("add", { a = 1, b = 2 })
    end)
    -- (b starts once a has sent its call and waits: tasks run until they wait)
    local b = dt.async(function()
      return page:call("spin", { ms = 300 }, { timeout = 10 })   -- busy when a's call times out
    end)
    local r = dt.wait_all({ a, b }, 20)
    assert.equal(3, r[1])
    assert.equal("spun", r[2])
    page:close()
  end)

  it("a page stuck in a tool's loop is stopped, though two tasks take turns calling it", function()
    local page = page_with(TOOLS .. [[;
      window.addEventListener('devtoolstooldiscovery', (e) => e.respondWith({ name: 'h', description: 'h', tools: [
        { name: 'stuck', description: 'loops for ever', inputSchema: { type: 'object' }, execute: () => { for (;;) {} } }] }))]])
    page:discover()
    local a = dt.async(function()
      assert.equal("timeout", H.error_of(page.call, page, "stuck", nil, { timeout = 0.3 }).code)
      local got = {}
      for i = 1, 4 do
        -- (short turns, then one with time enough for a loaded machine:
        -- beside a second make test a call to the freed page once took
        -- more than 0.5 s)
        local ok, v = pcall(page.call, page, "add", { a = 1, b = 2 }, { timeout = i < 4 and 0.5 or 20 })
        got[i] = ok and v or v.code
      end
      return got
    end)
    local b = dt.async(function()            -- (once a's call is in the page's loop)
      assert.equal("timeout", H.error_of(page.call, page, "add", { a = 1, b = 1 }, { timeout = 1 }).code)
      return page:call("add", { a = 2, b = 2 }, { timeout = 20 })
    end)
    local r = dt.wait_all({ a, b }, 60)
    assert.equal(4, r[2])                           -- the loop was stopped for b's second call
    assert.equal(3, r[1][4])                        -- and a's calls go through again
    page:close()
  end)

  -- Two groups with a tool deleteAll each: the admin's (group `admin_group`,
  -- answering once window.admin is set, first; it sets window.deleted) and
  -- the cart's (group `cart_group`, answering `cart_says`, by default its
  -- group's name).
  local function two_delete_alls(admin_group, cart_group, cart_says)
    return ([[window.admin = false;
      addEventListener('devtoolstooldiscovery', (e) => { if (window.admin) e.respondWith({ name: '%s', tools: [
        { name: 'deleteAll', description: 'every user record', inputSchema: { type: 'object' },
          execute: () => { window.deleted = true; return 'admin'; } }] }); });
      addEventListener('devtoolstooldiscovery', (e) => e.respondWith({ name: '%s', tools: [
        { name: 'deleteAll', description: 'the cart', inputSchema: { type: 'object' }, execute: () => '%s' }] }))]])
      :format(admin_group, cart_group, cart_says or cart_group)
  end

  it("a kept Tool runs its own group's tool after a discovery puts another group of that name first", function()
    local page = page_with(two_delete_alls("admin", "shop"))
    local clear = page:tool("deleteAll")
    assert.equal("shop", clear())
    page:evaluate("window.admin = true; 1")
    local groups = page:discover()                -- another task's, say
    assert.same({ "admin", "shop" }, names(groups))
    assert.equal("shop", clear())
    assert.equal("shop", page:call_many({ { clear } })[1])
    assert.is_nil(page:evaluate("window.deleted"))
    page:close()
  end)

  it("numbers past 2^53 are the page's numbers, as evaluate gives them, in results and schemas", function()
    -- JSON.stringify writes 2**62 as 4611686018427388000, which Lua 5.3+
    -- would read as another integer (the page's own const then refused
    -- the page's own number)
    local page = page_with([[addEventListener('devtoolstooldiscovery', (e) => e.respondWith({ name: 'n', tools: [
      { name: 'big', description: '2**62', inputSchema: { type: 'object' }, execute: () => ({ v: 2 ** 62, w: -(2 ** 60) }) },
      { name: 'mask', description: 'takes 2**62', inputSchema: { type: 'object',
        properties: { m: { const: 2 ** 62 } }, required: ['m'] }, execute: ({ m }) => m === 2 ** 62 },
    ] }))]])
    local r = page:call("big")
    assert.is_true(r.v == 2 ^ 62, string.format("%.17g", r.v))
    assert.is_true(r.w == -2 ^ 60)
    assert.is_true(page:evaluate("2 ** 62") == r.v)
    assert.is_true(page:call("mask", { m = 2 ^ 62 }))
    if math.tointeger then assert.is_true(page:call("mask", { m = math.tointeger(2 ^ 62) })) end
    page:close()
  end)

  it("a kept Tool never runs another tool of its name in another group of its group's name", function()
    -- two libraries both name their group "app"; the admin's answers later, first
    local page = page_with(two_delete_alls("app", "app", "cart"))
    local clear = page:tool("deleteAll")
    assert.equal("cart", clear())
    page:evaluate("window.admin = true; 1")
    assert.same({ "app", "app" }, names(page:discover()))
    local e = H.error_of(clear)
    assert.equal("stale", e.code)
    assert.matches("the page's groups changed since it was found", e.message)
    assert.equal("stale", page:call_many({ { clear } }, { errors = "return" })[1].code)
    assert.is_nil(page:evaluate("window.deleted"))
    -- looked up again, by name: the first group's, as the page runs it
    assert.equal("admin", page:call("deleteAll"))
    page:close()
  end)

  it("a discovery cut short leaves the page's tools as they were", function()
    local page = page_with([[window.addEventListener('devtoolstooldiscovery', (e) => {
      const end = performance.now() + 150; while (performance.now() < end);
      e.respondWith({ name: 'g', description: 'g', tools: [
        { name: 'add', description: 'a+b', inputSchema: { type: 'object' }, execute: ({ a, b }) => a + b }] }); })]])
    local add = page:tool("add")                  -- a Tool kept: called without a second look
    assert.equal("timeout", H.error_of(page.discover, page, { timeout = 0.05 }).code)
    for _ = 1, 3 do assert.equal(3, add({ a = 1, b = 2 })) end
    assert.equal(1, page:evaluate("window.__dtmcp.toolGroups.length"))
    assert.equal(3, page:call("add", { a = 1, b = 2 }))
    page:close()
  end)

  it("one task's discoveries never hide cached tools from another task's calls", function()
    -- the listener answers after a setTimeout(0), as the contract allows
    local page = page_with([[window.addEventListener('devtoolstooldiscovery', (e) => setTimeout(() =>
      e.respondWith({ name: 'g', description: 'g', tools: [
        { name: 'add', description: 'a+b', inputSchema: { type: 'object' }, execute: ({ a, b }) => a + b }] }), 0))]])
    local add = page:tool("add")                  -- a Tool kept: called without a second look
    local discovering = dt.async(function() for _ = 1, 20 do page:discover() end end)
    local calling = dt.async(function()
      local failed = {}
      for _ = 1, 200 do
        local ok, e = pcall(add.call, add, { a = 1, b = 2 })
        if not ok then failed[#failed + 1] = tostring(e) end
        dt.sleep(0)
      end
      return failed
    end)
    local r = dt.wait_all({ discovering, calling }, 60)
    assert.same({}, r[2])
    page:close()
  end)
end)

describe("an iframe that breaks what discovery uses", function()
  -- badframes.html: the page's tool "add", and an iframe (badframe.html?a=NAME)
  -- whose listener answers but whose window was made hostile to our script.
  -- Each once cross-site (its own process) and once same-origin.
  local function each_host(fn)
    for _, host in ipairs({ "cross", "same" }) do fn(host, host == "same" and "&host=same" or "") end
  end

  it("a window.__dtmcp that cannot hold the tools skips that frame's groups, with a warning", function()
    each_host(function(host, q)
      for _, a in ipairs({ "five", "freeze", "getter" }) do
        local case = a .. " (" .. host .. ")"
        local page = open("/badframes.html?a=" .. a .. q)
        local t0 = core.now()
        local groups, warnings = page:discover({ timeout = 20 })
        -- (at once, not when a frame that never answers is skipped, at half
        -- the deadline, 10 s: under a second make test the
        -- answer took more than 1 s)
        assert.is_true(core.now() - t0 < 8, case .. ": " .. (core.now() - t0) .. " s")
        assert.same({ "main" }, names(groups), case)
        assert.equal(1, #warnings, case)
        assert.matches('Invalid toolGroup "child": window.__dtmcp cannot hold the page\'s tools (', warnings[1], 1, true)
        assert.matches("(frame http://", warnings[1], 1, true)
        assert.equal(3, page:call("add", { a = 1, b = 2 }, { timeout = 20 }), case)
        page:close()
      end
    end)
  end)

  it("a frame that replaced queueMicrotask, or whose listener replaces setTimeout and JSON, is discovered", function()
    each_host(function(host, q)
      for _, a in ipairs({ "microtask", "settimeout", "inlistener" }) do
        local case = a .. " (" .. host .. ")"
        local page = open("/badframes.html?a=" .. a .. q)
        local groups, warnings = page:discover({ timeout = 20 })
        assert.same({ "main", "child" }, names(groups), case)
        assert.same({}, warnings, case)
        if a ~= "inlistener" then   -- (its JSON.stringify, which calls use, returns 5)
          assert.equal("child", page:call("childTool", nil, { timeout = 20 }), case)
        end
        page:close()
      end
    end)
  end)

  it("an iframe that never answers is skipped with a warning, within the deadline; the page's tools work", function()
    each_host(function(host, q)
      for _, a in ipairs({ "promise", "timerless" }) do
        local case = a .. " (" .. host .. ")"
        local page = open("/badframes.html?a=" .. a .. q)
        local t0 = core.now()
        -- the call's discovery gives the iframe half of its 4 s
        assert.equal(3, page:call("add", { a = 1, b = 2 }, { timeout = 4 }), case)
        local took = core.now() - t0
        assert.is_true(took > 1.9 and took < 3, case .. ": " .. took)
        local groups, warnings = page:tool_groups()
        assert.same({ "main" }, names(groups), case)
        assert.equal(1, #warnings, case)
        assert.matches("^discovery did not answer in time in frame http://[^ ]*/badframe%.html%?a=" .. a
          .. " %(after [%d.]+ s: .*; its tools are skipped$", warnings[1])
        page:close()
      end
    end)
  end)

  it("a main frame that never answers is a timeout naming discovery; one whose window.__dtmcp is 5 answers", function()
    local page = open("/badframes.html?main=promise")
    local e = H.error_of(page.discover, page, { timeout = 1 })
    assert.equal("timeout", e.code)
    assert.matches("discovery did not finish in time in the main frame http://", e.message, 1, true)
    page:close()
    page = open("/badframes.html?main=five")
    local groups, warnings = page:discover({ timeout = 20 })
    assert.same({}, groups)
    assert.equal(1, #warnings)
    assert.matches('Invalid toolGroup "main": window.__dtmcp cannot hold', warnings[1], 1, true)
    page:close()
  end)
end)

describe("issue 11", function()
  it("finds a tool registered after an earlier miss", function()
    local page = open("/cases.html?case=counting")
    assert.equal("tool_not_found", H.error_of(page.call, page, "fresh").code)
    local before = page:evaluate("window.discoveries")
    assert.equal(1, before)                         -- the fresh discovery is not repeated
    page:evaluate("window.register('fresh')")
    assert.equal("fresh", page:call("fresh"))
    assert.equal(before + 1, page:evaluate("window.discoveries"))   -- one more look, bounded
    -- a known tool needs no discovery
    assert.equal("base", page:call("base"))
    assert.equal(before + 1, page:evaluate("window.discoveries"))
    page:close()
  end)

  it("wait_for_tool waits for a tool a page registers later", function()
    local page = open("/cases.html?case=registers-later")
    local t = page:wait_for_tool("later", { timeout = 10 })
    assert.equal("later", t.name)
    assert.equal("later", t())
    local e = H.error_of(page.wait_for_tool, page, "absent", { timeout = 0.5 })
    assert.equal("timeout", e.code)
    assert.equal("absent", e.tool)
    assert.same({ "later" }, e.details.available)
    assert.equal("bad_argument", H.error_of(page.wait_for_tool, page, 5).code)
    page:close()
  end)

  it("wait_for_tool finds a tool whose listener came while a discovery ran", function()
    -- the change came before that discovery's answer: waiting for the
    -- next one would wait for nothing (seen as a remounted widget's tool
    -- not found within 5 s, under load)
    -- (twice: a request of the page's that ends after the first discovery,
    -- a fresh browser's first page's, hid the fault)
    for _ = 1, 2 do
      local p = open("/cases.html?case=registers-during-discovery")
      local t = p:wait_for_tool("mounted", { timeout = 20 })
      assert.equal("mounted", t())
      assert.equal(2, p:evaluate("window.discoveries"))
      p:close()
    end
    local page = open("/cases.html?case=registers-during-discovery")
    page:wait_for_tool("mounted", { timeout = 20 })
    -- and a tool that never comes costs one discovery per change, not a loop
    local e = H.error_of(page.wait_for_tool, page, "absent", { timeout = 1 })
    assert.equal("timeout", e.code)
    assert.equal(2, page:evaluate("window.discoveries"))
    page:close()
  end)

  it("call_many keeps finished entries and names each failure's tool", function()
    local page = open("/tools.html")
    page:discover()   -- (the 10 s below is the calls', not a first discovery's: under load it took more)
    -- (10 s: the page must run the batch before the deadline; beside a
    -- second make test a starved renderer left "add" unsettled in 1 s)
    local res = page:call_many({ { "add", { a = 1, b = 2 } }, { "never" }, { "echo", { x = 1 } } },
      { errors = "return", timeout = 10 })
    assert.equal(3, res[1])
    assert.equal("timeout", res[2].code)
    assert.equal("never", res[2].tool)
    assert.matches("tool never ", res[2].message, 1, true)
    assert.same({ x = 1 }, res[3])
    local e = H.error_of(page.call_many, page, { { "add", { a = 1, b = 2 } }, { "never" } }, { timeout = 10 })
    assert.equal("never", e.tool)
    page:close()
  end)

  it("a crashed page fails calls at once with disconnected; reload recovers", function()
    local page = open("/tools.html")
    page:discover()
    H.on_console(page, "started", function()
      page.conn:send_nowait("Page.crash", nil, page.session)
    end)
    local e = H.error_of(page.call, page, "logThenNever", nil, { timeout = 30 })
    assert.equal("disconnected", e.code)
    assert.matches("the page crashed", e.message, 1, true)
    e = H.error_of(page.call, page, "add", { a = 1, b = 2 })
    assert.equal("disconnected", e.code)
    page:reload()
    assert.equal(3, page:call("add", { a = 1, b = 2 }))
    page:close()
  end)

  it("evaluate in a context that does not exist says so", function()
    local page = open("/tools.html")
    local e = H.error_of(page.evaluate, page, "1", { context = 987654 })
    assert.equal("navigated", e.code)
    assert.matches("no execution context 987654", e.message, 1, true)
    assert.equal(2, page:evaluate("1 + 1"))
    page:close()
  end)

  it("refuses unknown option keys everywhere", function()
    local page = open("/tools.html")
    local add = page:tool("add")
    local cases = {
      { page.call, page, "add", { a = 1, b = 2 }, { timout = 1 } },
      { add.call, add, { a = 1, b = 2 }, { timout = 1 } },
      { page.call_many, page, { { "add", { a = 1, b = 2 } } }, { timout = 1 } },
      { page.evaluate, page, "1", { timout = 1 } },
      { page.navigate, page, server.url("/tools.html"), { timout = 1 } },
      { page.reload, page, { timout = 1 } },
      { page.discover, page, { timout = 1 } },
      { page.tool_groups, page, { timout = 1 } },
      { page.tool, page, "add", { timout = 1 } },
      { page.wait_for_tool, page, "add", { timout = 1 } },
      { browser.new_page, browser, nil, { timout = 1 } },
      { browser.version, browser, { timout = 1 } },
      { browser.pages, browser, { timout = 1 } },
      { page.call, page, "add", { a = 1, b = 2 }, { timeout = -1 } },
      { page.call_many, page, {}, { errors = "sometimes" } },
    }
    for i, c in ipairs(cases) do
      local e = H.error_of(table.unpack(c))
      assert.equal("bad_argument", e.code, "case " .. i .. ": " .. tostring(e))
    end
    assert.matches("timout", H.error_of(page.call, page, "add", {}, { timout = 1 }).message, 1, true)
    page:close()
  end)

  it("connect raises dt.Errors for a bad port and a garbage webSocketDebuggerUrl", function()
    local e = H.error_of(dt.connect, "http://127.0.0.1:99999")
    assert.equal("bad_argument", e.code)
    local dir = assert(core.fs.mkdtemp("dt-fakejson-"))
    os.execute("mkdir -p " .. dir .. "/json")
    for _, body in ipairs({ '{"webSocketDebuggerUrl": "garbage"}', '{"webSocketDebuggerUrl": "http://127.0.0.1/x"}',
        '[1, 2]', '"just a string"' }) do
      local f = assert(io.open(dir .. "/json/version", "w"))
      f:write(body)
      f:close()
      local fake = H.start_server(dir)
      e = H.error_of(dt.connect, fake.url("/"), { timeout = 5 })
      fake.stop()
      assert.equal("connect_failed", e.code, body)
    end
    core.fs.rmtree(dir)
  end)

  it("skips a group whose schema nests 600 levels, in any frame, and keeps the rest", function()
    local page = open("/deepframes.html")
    local groups, warnings = page:discover()
    assert.same({ "fine-main", "fine" }, names(groups))
    assert.equal(2, #warnings)
    assert.matches('"deepTool" nests deeper than 512 levels', warnings[1], 1, true)
    assert.matches("(frame http://localhost:", warnings[2], 1, true)
    -- reported in the page's console too, as an invalid group is (README)
    local reported = 0
    for _, m in ipairs(page:console_messages({ level = "error" })) do
      if m.text:find("Invalid toolGroup:", 1, true) then reported = reported + 1 end
    end
    assert.equal(2, reported)
    assert.equal("main fine", page:call("mainFine"))
    assert.equal("fine", page:call("fineTool"))
    page:close()
  end)

  it("page data cannot forge an Element", function()
    local page = open("/tools.html")
    local r = page:call("forge")
    assert.is_true(dt.is_error(r) == false)
    assert.equal("Element(div#cart.big.box)", tostring(r.real))
    assert.equal("table", type(r.fake))
    assert.is_nil(getmetatable(r.fake))
    assert.equal(1, r.fake.keep)
    assert.equal("forged", r.fake.description)
    assert.equal(0, r.fake["\0dt-element"])
    page:close()
  end)

  -- a data: URL of a page with the given script
  local function script_page(js) return H.data_url("<script>" .. js .. "</script>") end
  local TOOL_X = "addEventListener('devtoolstooldiscovery', e => e.respondWith({ name: 'g', tools: ["
    .. "{ name: 'x', description: 'd', inputSchema: { type: 'object' }, execute: () => 1 }] }));"

  it("skips a group whose schema nests 1200 levels through a getter, keeps the rest, and never calls toJSON", function()
    -- the object is shallow; what its getter gives is not (before: the
    -- frame's whole answer was too deep for Lua, and every group of it
    -- was lost). A toJSON is not called at all: a group is read by value,
    -- as CDP's returnByValue reads it for the reference, so a schema is
    -- what the object holds, a function member an empty object.
    local deep = "const deep = () => { let s = { type: 'object' }; for (let i = 0; i < 1200; i++) "
      .. "s = { type: 'object', properties: { x: s } }; return s; };"
    local schemas = {
      toJSON = "{ type: 'object', toJSON: deep }",
      getter = "{ type: 'object', get properties() { return deep().properties; } }",
    }
    for what, schema in pairs(schemas) do
      local page = browser:new_page(script_page(deep .. TOOL_X
        .. "addEventListener('devtoolstooldiscovery', e => e.respondWith({ name: 'widget', tools: ["
        .. "{ name: 'w', description: 'd', inputSchema: " .. schema .. ", execute: () => 2 }] }));"
        .. "addEventListener('devtoolstooldiscovery', e => e.respondWith({ name: 'after', tools: ["
        .. "{ name: 'y', description: 'd', inputSchema: { type: 'object', toJSON: () => ({ type: 'object', "
        .. "properties: { n: { type: 'number' } } }) }, execute: () => 3 }] }));"))
      local groups, warnings = page:discover()
      if what == "getter" then
        assert.same({ "g", "after" }, names(groups), what)
        assert.same({ 'Invalid toolGroup "widget": the inputSchema of tool "w" nests deeper than 512 levels; '
          .. "group skipped" }, warnings, what)
      else
        assert.same({ "g", "widget", "after" }, names(groups), what)
        assert.same({}, warnings, what)
        assert.same({ type = "object", toJSON = {} }, groups[2].tools[1].input_schema)
        assert.equal(2, page:call("w"))
      end
      assert.same({ type = "object", toJSON = {} }, groups[#groups].tools[1].input_schema)
      assert.equal(1, page:call("x"))
      assert.equal(3, page:call("y", { n = "not a number: the toJSON's schema is not the tool's" }))
      page:close()
    end
  end)

  it("call_many of more than 64 Element results gives back every Element", function()
    -- the page keeps the elements of a result until Lua takes them, 64
    -- calls' worth; a batch is one of them, however many entries it has
    local page = browser:new_page(script_page("addEventListener('devtoolstooldiscovery', e => e.respondWith({ name: 'g', tools: ["
      .. "{ name: 'el', description: 'd', inputSchema: { type: 'object' }, execute: ({ i }) => {"
      .. " const d = document.createElement('div'); d.id = 'e' + i; document.body.append(d); return d; } },"
      .. "{ name: 'later', description: 'd', inputSchema: { type: 'object' },"
      .. " execute: async () => { await null; return document.body; } },"
      .. "{ name: 'idOf', description: 'd', inputSchema: { type: 'object', properties: { el: { 'x-mcp-type': 'HTMLElement' } } },"
      .. " execute: ({ el }) => el.id }] }));"))
    local first
    for _, n in ipairs({ 100, 300 }) do
      local list = {}
      for i = 1, n do list[i] = i % 3 == 0 and { "later" } or { "el", { i = i } } end
      local r = page:call_many(list, { timeout = 20 })
      for i = 1, n do
        assert.is_true(dt.is_element(r[i]), n .. ": entry " .. i .. " " .. tostring(r[i]))
        assert.equal(i % 3 == 0 and "Element(body)" or ("Element(div#e" .. i .. ")"), tostring(r[i]))
      end
      first = first or r[1]
    end
    -- and they are the page's elements
    assert.equal("e1", page:call("idOf", { el = first }))
    -- what Lua never takes is still dropped, 64 calls' worth kept
    assert.same({ 0, 1, 1 }, page:evaluate([[(() => {
      const rt = window.__devtools_tools, keys = [];
      for (let i = 0; i < 70; i++) keys.push(JSON.parse(rt.call(0, 0, 'el', { i: 1000 + i }, [], 'g')).k);
      return [rt.take(keys[5]).length, rt.take(keys[6]).length, rt.take(keys[69]).length];
    })()]]))
    page:close()
  end)

  it("call_many under fake timers answers with the entries that settled", function()
    local TOOLS = "const T = (n, f) => ({ name: n, description: 'd', inputSchema: { type: 'object' }, execute: f });"
      .. "addEventListener('devtoolstooldiscovery', e => e.respondWith({ name: 'g', tools: ["
      .. "T('add', ({ a, b }) => a + b), T('addLater', async ({ a, b }) => a + b), T('never', () => new Promise(() => {}))] }));"
    local list = { { "add", { a = 1, b = 2 } }, { "addLater", { a = 2, b = 2 } }, { "never" } }
    local function check(page, what)
      local t0 = core.now()
      local r = page:call_many(list, { timeout = 5, errors = "return" })
      -- at its deadline, not when a fake timer fires ('never' never
      -- settles); the margin is for a loaded machine (5 s: the page must
      -- run the batch before the deadline, and beside a second make test
      -- a starved renderer did not within 1 s)
      assert.is_true(core.now() - t0 < 15, what)
      assert.equal(3, r[1], what)
      assert.equal(4, r[2], what)
      assert.equal("timeout", r[3].code, what)
      assert.equal("never", r[3].tool, what)
      assert.equal(4, page:call("addLater", { a = 2, b = 2 }), what)
    end
    -- fake timers installed by the page before anything of ours ran (as
    -- @sinonjs/fake-timers or jest.useFakeTimers do: callbacks wait for tick)
    -- (discovered first, without the calls' 5 s: under load a discovery
    -- alone once took more)
    local page = browser:new_page(script_page("const queue = [];"
      .. "window.setTimeout = (f) => { queue.push(f); return queue.length; };" .. TOOLS))
    assert.same({ "g" }, names(page:discover()))
    check(page, "fake timers first")
    page:close()
    -- setTimeout, AbortSignal.timeout and Promise's statics replaced after the runtime was installed
    page = browser:new_page(script_page(TOOLS))
    page:discover()
    page:evaluate("window.setTimeout = () => 0; AbortSignal.timeout = () => new AbortController().signal;"
      .. "Promise.all = Promise.race = () => new Promise(() => {}); Promise.resolve = () => new Promise(() => {}); 1")
    check(page, "replaced after")
    page:close()
  end)

  it("a page that forges the runtime's reply gets data back, never a hang or a fake Element", function()
    -- its own window.__devtools_tools answers an envelope claiming elements
    for _, n in ipairs({ "1e400", "300000000", "2" }) do
      local page = browser:new_page(script_page("window.__devtools_tools = { call() { return '{\"n\":"
        .. n .. ",\"k\":1,\"e\":\"m\",\"v\":{\"m\":0,\"description\":{\"x\":1}}}' },"
        .. " take() { return [] } };" .. TOOL_X))
      local v = page:call("x", nil, { timeout = 20 })
      assert.is_false(dt.is_element(v), n)
      assert.same({ m = 0, description = { x = 1 } }, v)
      page:close()
    end
  end)

  it("a page that replaces JSON, Array or Promise methods gets dt.Errors and warnings, not Lua errors", function()
    local cases = {
      -- discovery's answer is not text
      "JSON.stringify = () => ({});",
      "window.Promise = function (f) { f(() => {}); return {}; };",
    }
    for _, js in ipairs(cases) do
      local page = browser:new_page(script_page(js .. TOOL_X))
      local ok, groups, warnings = pcall(page.discover, page, { timeout = 5 })
      assert.is_true(ok, js .. ": " .. tostring(groups))
      assert.same({}, groups, js)
      assert.is_true(#warnings > 0, js)
      local e = H.error_of(page.call, page, "x", nil, { timeout = 5 })
      assert.is_true(dt.is_error(e), js .. ": " .. tostring(e))
      assert.equal("", page:evaluate("document.title"), js)
      page:close()
    end
    -- Array methods discovery no longer uses: the group is read all the same
    for _, js in ipairs({ "Array.prototype.indexOf = function () {};",
        "Array.prototype.map = function () { return [5]; };",
        "Array.prototype.push = function () { return 0; };",
        "Array.prototype.indexOf = function () { return '0,document.title=\"injected\"'; };" }) do
      local page = browser:new_page(script_page(js .. TOOL_X))
      local groups, warnings = page:discover({ timeout = 20 })
      assert.same({ "g" }, names(groups), js)
      assert.same({}, warnings, js)
      assert.equal(1, page:call("x", nil, { timeout = 20 }), js)
      assert.equal("", page:evaluate("document.title"), js)
      page:close()
    end
  end)

  it("a group whose reading throws (a getter) is a warning, and the others stay", function()
    local page = browser:new_page(script_page(
      "addEventListener('devtoolstooldiscovery', e => e.respondWith({ name: 'bad', get tools() { throw new Error('nope'); } }));"
      .. TOOL_X))
    local groups, warnings = page:discover()
    assert.same({ "g" }, names(groups))
    assert.same({ 'Invalid toolGroup "bad": reading it threw: nope; group skipped' }, warnings)
    assert.equal(1, #page:console_messages({ level = "error" }))
    -- a console.error that throws loses the report, not the discovery
    page:evaluate("console.error = () => { throw new Error('no console') }; 1")
    groups, warnings = page:discover()
    assert.same({ "g" }, names(groups))
    assert.same({ 'Invalid toolGroup "bad": reading it threw: nope; group skipped' }, warnings)
    -- nor the reason an invalid group or tool gives
    page:evaluate([[addEventListener('devtoolstooldiscovery', e => { e.respondWith({ name: 'notools' });
      e.respondWith({ name: 'badtool', tools: [{ name: 'y' }] }); }); 1]])
    groups, warnings = page:discover()
    assert.same({ "g" }, names(groups))
    assert.same({ 'Invalid toolGroup "bad": reading it threw: nope; group skipped',
      'Invalid toolGroup "notools": tools must be an array',
      'Invalid tool "y" in group "badtool": description must be a string; group skipped' }, warnings)
    page:close()
  end)

  it("a listener answering in a microtask beside one answering at once is seen", function()
    local page = browser:new_page(script_page(
      "const T = (n, v) => ({ name: n, description: 'd', inputSchema: { type: 'object' }, execute: () => v });"
      .. "addEventListener('devtoolstooldiscovery', e => e.respondWith({ name: 'sync', tools: [T('a', 'A')] }));"
      .. "addEventListener('devtoolstooldiscovery', e => queueMicrotask(() => e.respondWith({ name: 'micro', tools: [T('b', 'B')] })));"
      .. "addEventListener('devtoolstooldiscovery', e => setTimeout(() => e.respondWith({ name: 'late', tools: [T('c', 'C')] }), 0));"))
    local groups, warnings = page:discover()
    assert.same({ "sync", "micro" }, names(groups))
    assert.same({}, warnings)
    assert.equal("B", page:call("b"))
    page:close()
  end)

  it("stops a busy loop that timed out, in a tool or a discovery listener", function()
    local page = open("/tools.html")
    local e = H.error_of(page.call, page, "busy", nil, { timeout = 0.5 })
    assert.equal("timeout", e.code)
    assert.equal(3, page:call("add", { a = 1, b = 2 }, { timeout = 10 }))
    page:close()
    page = open("/cases.html?case=busylistener")
    e = H.error_of(page.discover, page, { timeout = 0.5 })
    assert.equal("timeout", e.code)
    assert.matches("discovery did not finish", e.message, 1, true)
    assert.equal(2, page:evaluate("1 + 1", { timeout = 10 }))
    page:close()
  end)

  it("sends an empty table as [] where the schema says array (lua-cjson's [] too)", function()
    local page = open("/tools.html")
    local r = page:call("list", { items = {} })
    assert.is_true(r.isArray)
    local ok, cjson = pcall(require, "cjson")
    if ok then
      r = page:call("list", cjson.decode('{"items": []}'))
      assert.is_true(r.isArray)
    end
    r = page:call("list", dt.json.decode('{"items": []}'))
    assert.is_true(r.isArray)
    page:close()
  end)

  it("accepts an Element where the schema says only type object; the page gets the element", function()
    local page = open("/tools.html")
    local el = page:call("elements").cart
    local r = page:call("objectArg", { target = el })
    assert.is_true(r.isElement)
    assert.equal("DIV", r.tag)
    page:close()
  end)

  it("passes a key named __proto__ as data, however the call is sent", function()
    local page = open("/tools.html")
    local r = page:call("echo", { ["__proto__"] = { x = 1 }, plain = 2 })
    assert.equal(1, r["__proto__"].x)
    assert.equal(2, r.plain)
    local el = page:call("elements").cart                 -- with an element: callFunctionOn
    r = page:call("echo", { el = el, deep = { ["__proto__"] = { y = 2 } } })
    assert.equal(2, r.deep["__proto__"].y)
    assert.equal("div#cart.big.box", r.el.description)
    r = page:call_many({ { "echo", { ["__proto__"] = { z = 3 } } }, { "echo", { plain = 4 } } })
    assert.equal(3, r[1]["__proto__"].z)
    assert.equal(4, r[2].plain)
    page:close()
  end)

  it("says when schema work, not the tool, took the time", function()
    local page = open("/tools.html")
    local add = page:tool("add")
    -- a timeout of 0: the deadline has passed once any work is done
    local e = H.error_of(add.call, add, { a = 1, b = 2 }, { timeout = 0 })
    assert.equal("timeout", e.code)
    assert.matches("compiling its inputSchema", e.message, 1, true)
    assert.is_true(add:validate({ a = 1, b = 2 }))   -- compiled now, without a deadline
    e = H.error_of(add.call, add, { a = 1, b = 2 }, { timeout = 0 })
    assert.matches("validating its arguments", e.message, 1, true)
    assert.equal(3, add{ a = 1, b = 2 })
    page:close()
  end)
end)
