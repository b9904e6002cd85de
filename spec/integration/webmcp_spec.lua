-- Integration: the page's WebMCP tools (document.modelContext) in real
-- headless Chromium with --enable-features=WebMCP, pages served on
-- 127.0.0.1: registration, listing in every frame, calling through the
-- Tool API, errors, removal.

local dt = require "devtools_tools"
local H = require "helper"
local app_server = require "support.app_server"

local server, browser

local start_suite, stop_suite = H.browser_suite(function(s, b) server, browser = s, b end, { webmcp = true })
setup(start_suite)
teardown(stop_suite)

local function open(path)
  local page = browser:new_page(server.url(path))
  return page
end

local function by_kind(groups, kind)
  local out = {}
  for _, g in ipairs(groups) do if g.kind == kind then out[#out + 1] = g end end
  return out
end

-- The WebMCP group of the cross-origin iframe (localhost), once discovery
-- finds it (within 10 s).
local function cross_group(page)
  local cross
  assert.is_true(H.wait_for(function()
    for _, g in ipairs(by_kind(page:discover(), "webmcp")) do
      if g.frame.origin == "http://localhost:" .. server.port then cross = g end
    end
    return cross ~= nil
  end, H.LONG))
  return cross
end

local function tool_names(g)
  local out = {}
  for _, t in ipairs(g.tools) do out[#out + 1] = t.name end
  return out
end

describe("WebMCP tools", function()
  it("launch{webmcp = true} turns the page API on", function()
    local page = open("/webmcp.html")
    assert.equal("ok", page:evaluate("window.registered"))
    page:close()
  end)

  it("are listed beside the devtools groups, as kind webmcp, with schema and annotations", function()
    local page = open("/webmcp.html")
    page:evaluate("window.registered")
    local groups = page:discover()
    local dev, mcp = by_kind(groups, "devtools"), by_kind(groups, "webmcp")
    assert.equal(1, #dev)
    assert.equal("classic", dev[1].name)
    assert.equal("devtools", dev[1]:tool("hello").kind)
    assert.equal(1, #mcp)
    local g = mcp[1]
    assert.equal(server.url("/webmcp.html"), g.frame.url)
    -- in the order Chromium announced them: the script's in registration
    -- order; the form's comes before or after them, as the parser met it
    local names, scripted = tool_names(g), {}
    for _, n in ipairs(names) do if n ~= "search_form" then scripted[#scripted + 1] = n end end
    assert.same({ "add", "echo", "kaboom", "slow", "temporary" }, scripted)
    assert.equal(6, #names)
    local add = g:tool("add")
    assert.equal("Adds two numbers", add.description)
    assert.same({ "a", "b" }, add.input_schema.required)
    assert.is_true(add.annotations.readOnly)
    assert.equal("webmcp", add.kind)
    -- the declarative form: a generated schema and the form's node
    local form = g:tool("search_form")
    assert.same({ "q" }, form.input_schema.required)
    assert.equal("search text", form.input_schema.properties.q.description)
    assert.is_number(form.backend_node_id)
    page:close()
  end)

  it("are called through the same Tool API, results as Lua values", function()
    local page = open("/webmcp.html")
    page:evaluate("window.registered")
    -- a JSON text returned by execute comes back decoded
    assert.same({ sum = 42 }, page:call("add", { a = 2, b = 40 }))
    local echo = page:tool("echo")
    assert.same({ got = "hi", n = 3 }, echo({ text = "hi" }))
    assert.same({ got = "x", n = 3 }, echo:call({ text = "x" }, { timeout = 20 }))
    -- the devtools tool on the same page, the same way
    assert.equal("hello", page:call("hello"))
    local r = page:call_many({ { "add", { a = 1, b = 2 } }, { "hello" }, { echo, { text = "y" } } })
    assert.same({ sum = 3 }, r[1])
    assert.equal("hello", r[2])
    assert.same({ got = "y", n = 3 }, r[3])
    -- every entry is sent before any answer is awaited: one that never
    -- settles times out under its own name, and holds up none of the others
    local t0 = require("devtools_tools.core").now()
    r = page:call_many({ { "slow" }, { "hello" }, { echo, { text = "z" } }, { "add", { a = 2, b = 2 } } },
      { errors = "return", timeout = 1 })
    assert.equal("timeout", r[1].code)
    assert.equal("tool slow did not settle in time", r[1].message)
    assert.equal("hello", r[2])
    assert.same({ got = "z", n = 3 }, r[3])
    assert.same({ sum = 4 }, r[4])
    assert.is_true(require("devtools_tools.core").now() - t0 < 3)
    -- every entry is checked before anything is sent: a bad one later in
    -- the list invokes nothing
    local invoked = 0
    local off = page:on_cdp("WebMCP.toolInvoked", function() invoked = invoked + 1 end)
    local e = H.error_of(page.call_many, page, { { echo, { text = "a" } }, { "add", { a = "x", b = 1 } } })
    assert.equal("invalid_params", e.code)
    page:evaluate("1")
    assert.equal(0, invoked)
    off()
    -- more answers in flight than the page keeps unread (128): none is lost
    local list = {}
    for i = 1, 140 do list[i] = { echo, { text = tostring(i) } } end
    r = page:call_many(list, { errors = "return", timeout = 20 })
    for i = 1, 140 do assert.same({ got = tostring(i), n = 3 }, r[i]) end
    page:close()
  end)

  it("checks arguments against the schema on our side, before anything is sent", function()
    local page = open("/webmcp.html")
    page:evaluate("window.registered")
    local add = page:tool("add")
    local log, restore = H.spy_transport(page.conn, "WebMCP.invokeTool")
    local err = H.error_of(add.call, add, { a = "x", b = 1 })
    local err2 = H.error_of(add.call, add, { a = 1 })
    restore()
    assert.equal("invalid_params", err.code)
    assert.matches("Invalid parameters for tool add: /a: must be number", err.message, 1, true)
    assert.equal("invalid_params", err2.code)
    assert.same({}, log)                -- Chromium would have run it with a = "x"
    assert.same({ sum = 3 }, add({ a = 1, b = 2 }))
    page:close()
  end)

  it("map a throwing tool to tool_error, a vanished one to tool_not_found", function()
    local page = open("/webmcp.html")
    page:evaluate("window.registered")
    local err = H.error_of(page.call, page, "kaboom")
    assert.equal("tool_error", err.code)
    assert.equal("kaboom", err.message)
    assert.equal("kaboom", err.tool)
    assert.matches("Error: kaboom", err.details.stack, 1, true)
    -- registered with a signal, then aborted: gone from the list, and a
    -- Tool kept from before is refused by Chromium
    local tmp = page:tool("temporary")
    assert.equal("here", tmp())
    page:evaluate("window.controller.abort()")
    local e2 = H.error_of(tmp.call, tmp)
    assert.equal("tool_not_found", e2.code)
    assert.equal("Tool temporary not found", e2.message)
    assert.is_nil(page:tool("temporary"))
    page:close()
  end)

  it("map a cancelled invocation to cancelled, and a slow one to timeout", function()
    local page = open("/webmcp.html")
    page:evaluate("window.registered")
    local slow = page:tool("slow")
    local err = H.error_of(slow.call, slow, nil, { timeout = 0.5 })
    assert.equal("timeout", err.code)
    assert.equal("slow", err.tool)
    -- someone else cancels the invocation while we wait for it
    local cancel_task
    local off = page:on_cdp("WebMCP.toolInvoked", function(p)
      cancel_task = dt.async(function()
        return page:cdp("WebMCP.cancelInvocation", { invocationId = p.invocationId })
      end)
    end)
    local e2 = H.error_of(slow.call, slow, nil, { timeout = 10 })
    off()
    assert.equal("cancelled", e2.code)
    assert.same({}, cancel_task:wait(5))
    page:close()
  end)

  -- A result is an event; Chromium writes its invocation id before the
  -- output the page wrote, so decoding a large one stops at the deadline of
  -- the call waiting for it, as a reply's does (specs in pipe_transport
  -- and page_unit; here: that Chromium writes it so).
  it("a large result is named before its output, and comes whole within the deadline", function()
    local page = open("/webmcp.html")
    page:evaluate("window.registered")
    page:evaluate([[(document.modelContext || navigator.modelContext).registerTool({
      name: 'rows', description: 'n rows', inputSchema: { type: 'object', properties: { n: { type: 'number' } } },
      execute: async ({ n }) => Array.from({ length: n }, (_, i) => ({ id: i, invocationId: 'forged' })),
    })]])
    local rows = page:tool("rows")
    local got = rows({ n = 40000 })
    assert.equal(40000, #got)
    assert.same({ id = 39999, invocationId = "forged" }, got[40000])
    assert.is_nil(next(page.conn.deadlines))
    -- read the result the way the connection does, its caller's deadline past
    local conn, now = page.conn, require("devtools_tools.core").now
    local r = conn:await(conn:send("WebMCP.invokeTool", { frameId = require("devtools_tools.tools.types").document_of(rows).frame_id, toolName = "rows",
      input = { n = 40000 } }, require("devtools_tools.tools.types").document_of(rows).session, now() + 10), now() + 10)
    local m, err, code, id
    repeat
      m, err, code, id = conn.transport:recv_cdp(now() + 10, {}, { [r.invocationId] = now() - 1 },
        require("devtools_tools.tools.webmcp").RESPONDED)
    until m == nil or m.method == "WebMCP.toolResponded"
    assert.is_true(m == nil, "decoded whole")
    assert.equal("timeout", code, err)
    assert.equal(r.invocationId, id)
    assert.matches("^the deadline passed while decoding", err)
    page:close()
  end)

  it("are found in every frame, cross-origin iframes included", function()
    local page = open("/webmcp_frames.html")
    local mcp
    -- the cross-origin iframe attaches and loads on its own time
    assert.is_true(H.wait_for(function()
      mcp = by_kind(page:discover(), "webmcp")
      return #mcp == 3
    end, H.LONG))
    assert.equal(server.url("/webmcp_frames.html"), mcp[1].frame.url)
    assert.equal("main", mcp[1]:tool("topTool")())
    local seen = {}
    for i = 2, 3 do
      local r = mcp[i]:tool("frameName")()
      seen[r.frame] = r.origin
      assert.equal(mcp[i].frame.origin, r.origin)
    end
    assert.equal("http://127.0.0.1:" .. server.port, seen.same)
    assert.equal("http://localhost:" .. server.port, seen.cross)
    page:close()
  end)

  it("a call into a cross-origin iframe whose renderer crashes fails at once with disconnected", function()
    local page = open("/webmcp_frames.html")
    local never = cross_group(page):tool("frameNever")
    local t0 = require("devtools_tools.core").now()
    local task = dt.async(function() return never() end)
    page:evaluate("1")                             -- the invocation is under way
    page.conn:send_nowait("Page.crash", nil, require("devtools_tools.tools.types").document_of(never).session)
    local ok, e = pcall(task.wait, task, 20)
    assert.is_false(ok)
    assert.equal("disconnected", e.code)
    assert.is_true(require("devtools_tools.core").now() - t0 < 5)   -- was: the whole timeout
    -- and later: a call into it fails at once, discovery leaves it out
    t0 = require("devtools_tools.core").now()
    assert.equal("disconnected", H.error_of(never.call, never, nil, { timeout = 10 }).code)
    for _, g in ipairs(by_kind(page:discover({ timeout = 20 }), "webmcp")) do
      assert.are_not.equal("http://localhost:" .. server.port, g.frame.origin)
    end
    assert.is_true(require("devtools_tools.core").now() - t0 < 5)
    page:close()
  end)

  -- The iframe goes during the call: its session ends, so the cancellation
  -- the call sends is never answered. Each such call was remembered in the
  -- page (and in the connection's deadlines) until the page closed.
  it("a call into a cross-origin iframe removed meanwhile leaves nothing behind", function()
    local page = open("/webmcp_frames.html")
    local cross_url = "http://localhost:" .. server.port .. "/webmcp_child.html?name=cross"
    local now = require("devtools_tools.core").now
    for round = 1, 3 do
      local never = cross_group(page):tool("frameNever")
      local sid = require("devtools_tools.tools.types").document_of(never).session
      assert.is_table(page.child_sessions[sid])
      local invoked
      local off = page:on_cdp("WebMCP.toolInvoked", function(p) invoked = p.invocationId end)
      local task = dt.async(function() return never() end)
      assert.is_true(page.conn:wait_for(function() return invoked ~= nil end, now() + 10))
      off()
      page:evaluate("document.getElementById('cross').remove(), 1")
      local ok, e = pcall(task.wait, task, 20)
      assert.is_false(ok)
      assert.equal("navigated", e.code)
      -- once its session has ended, nothing of the invocation is kept
      assert.is_true(page.conn:wait_for(function() return page.child_sessions[sid] == nil end, now() + 10))
      assert.is_nil(next(page.webmcp.given_up), "round " .. round)
      assert.is_nil(page.conn.deadlines[invoked])
      -- the iframe again, for the next round
      page:evaluate("{ const f = document.createElement('iframe'); f.id = 'cross'; f.allow = 'tools';"
        .. " f.src = " .. dt.json.encode(cross_url) .. "; document.body.append(f); 1 }")
    end
    page:close()
  end)

  it("are removed by a navigation; a Tool from before is stale", function()
    local page = open("/webmcp.html")
    page:evaluate("window.registered")
    local add = page:tool("add")
    assert.equal(1, #by_kind(page:tool_groups(), "webmcp"))
    page:navigate(server.url("/child.html"))
    assert.equal(0, #by_kind(page:tool_groups(), "webmcp"))
    assert.is_nil(page:tool("add"))
    assert.equal("stale", H.error_of(add.call, add, { a = 1, b = 2 }).code)
    -- and back: registered again by the new document
    page:navigate(server.url("/webmcp.html"))
    page:evaluate("window.registered")
    assert.same({ sum = 5 }, page:call("add", { a = 2, b = 3 }))
    page:close()
  end)
end)

describe("the sample app's WebMCP tool", function()
  it("is listed beside the app's groups and called with checked arguments", function()
    local app = assert(app_server.start())
    local ok, err = pcall(function()
      local page = browser:new_page(app.url)
      local t = page:tool("searchProducts")
      assert.is_table(t)
      assert.equal("webmcp", t.group.kind)
      assert.is_true(t.annotations.readOnly)
      local kinds = {}
      for _, g in ipairs(page:tool_groups()) do kinds[g.name] = g.kind end
      assert.equal("devtools", kinds["app-debug"])
      assert.equal("webmcp", kinds["webmcp"])
      local r = page:call("searchProducts", { query = "MOUSE" })
      assert.equal(1, r.total)
      assert.equal("Wireless Mouse", r.products[1].name)
      assert.equal(2450, r.products[1].priceCents)
      assert.equal(2, #page:call("searchProducts", { query = "e", limit = 2 }).products)
      assert.equal("invalid_params", H.error_of(page.call, page, "searchProducts", { query = "" }).code)
      assert.equal("invalid_params", H.error_of(page.call, page, "searchProducts", { query = "a", limit = 0 }).code)
      page:close()
    end)
    app:stop()
    assert(ok, tostring(err))
  end)
end)

describe("WebMCP flag", function()
  it("is merged into an --enable-features the caller passed", function()
    -- Chromium reads only the last --enable-features: two would lose one
    local b = dt.launch({ webmcp = true, args = { "--enable-features=OverlayScrollbar" } })
    local f = assert(io.open("/proc/" .. b.process:pid() .. "/cmdline", "rb"))
    local cmdline = f:read("*a")
    f:close()
    local flags = {}
    for a in cmdline:gmatch("%z?(%-%-enable%-features=[^%z]*)") do flags[#flags + 1] = a end
    assert.same({ "--enable-features=OverlayScrollbar,WebMCP" }, flags)
    local page = b:new_page(server.url("/webmcp.html"))
    assert.equal("ok", page:evaluate("window.registered"))
    b:close()
  end)
end)

describe("WebMCP off", function()
  it("a browser without the flag lists only devtools groups", function()
    local b = dt.launch()
    local page = b:new_page(server.url("/webmcp.html"))
    assert.equal("no modelContext", page:evaluate("window.registered"))
    local groups = page:discover()
    assert.equal(1, #groups)
    assert.equal("devtools", groups[1].kind)
    b:close()
  end)
end)
