-- End to end: `devtools-tools mcp` driven over its stdin and stdout by a
-- JSON-RPC client of our own (spec/support/mcp_client.lua), each server a
-- child process on a real headless Chromium (a tab of the file's shared
-- one, or one it launches where its launch is tested) on pages served
-- from spec/fixtures on 127.0.0.1; and the Lua API, served in-process on a
-- transport of the spec's own.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local H = require "helper"
local Client = require "support.mcp_client"

local server
local clients = {}

setup(function() server = H.start_server() end)
teardown(function() server.stop() end)

-- One headless Chromium for the file, WebMCP on as mcp launches it,
-- shared by the servers of the cases that do not test the server's own
-- browser: each works in a tab of its own (--connect ENDPOINT --new-tab),
-- which it closes as it ends (and after_each, if it was killed). A launch
-- and its first page cost about 2 s of CPU, the scarcest resource in make
-- test.
local shared
local function shared_endpoint()
  shared = shared or H.shared_browser({ webmcp = true })
  return shared.endpoint
end
teardown(function() if shared then shared.close() end end)

-- a server on url with args; killed after the spec if it still runs.
-- TMPDIR is a directory of its own, so that its Chromium (whose profile
-- goes there) can be found and counted. It works in the shared browser
-- unless its args name one (--connect) or how is "launch": a server that
-- launches its own.
local function spawn(url, args, env, how)
  local tmp = assert(core.fs.mkdtemp("dt-mcp-spec-"))
  local argv = { "mcp" }
  if url then argv[2] = url end
  local named = false
  for _, a in ipairs(args or {}) do
    argv[#argv + 1] = a
    if a == "--connect" then named = true end
  end
  if how ~= "launch" and not named then
    for _, a in ipairs({ "--connect", shared_endpoint(), "--new-tab" }) do argv[#argv + 1] = a end
  end
  local e = { TMPDIR = tmp }
  for k, v in pairs(env or {}) do e[k] = v end
  local c = Client.spawn(argv, { env = e, stderr_size = 1 << 20 })
  c.tmp = tmp
  clients[#clients + 1] = c
  return c
end

after_each(function()
  for _, c in ipairs(clients) do
    c:kill()
    -- (its Chromium: the server ended it, or the reaper does)
    H.wait_for(function() return #H.live_with_arg(c.tmp) == 0 end, H.LONG)
    core.fs.rmtree(c.tmp)
  end
  clients = {}
  if shared then shared.close_tabs() end
end)

local function names_of(list)
  local out = {}
  for i, t in ipairs(list.tools) do out[i] = t.name end
  return out
end

local function by_name(list)
  local out = {}
  for _, t in ipairs(list.tools) do out[t.name] = t end
  return out
end

local function has(list, x)
  for _, v in ipairs(list) do if v == x then return true end end
  return false
end

local function result_text(r)
  return r.content and r.content[1] and r.content[1].text
end

local function call(c, name, args, timeout)
  return c:request("tools/call", { name = name, arguments = args }, timeout)
end

-- the value of an expression in the page, through devtools.evaluate
local function eval(c, expr)
  local r = call(c, "devtools.evaluate", { expression = expr })
  assert(not r.isError, result_text(r))
  return r.structuredContent.result
end

describe("devtools-tools mcp: the lifecycle", function()
  it("answers initialize with the version the client asked for, among 2025-11-25, 2025-06-18 and 2025-03-26", function()
    local c = spawn(server.url("/mcp.html"))
    local r = c:initialize("2025-11-25")
    assert.equal("2025-11-25", r.protocolVersion)
    assert.is_true(r.capabilities.tools.listChanged)
    assert.equal("devtools-tools", r.serverInfo.name)
    assert.matches("^%d+%.%d+", r.serverInfo.version)
    assert.matches("mcp.html", r.instructions, 1, true)
    assert.same({}, c:request("ping"))
    -- once: a second initialize is refused, the session keeps its version
    local again = c:call("initialize", { protocolVersion = "2025-06-18", capabilities = {},
      clientInfo = { name = "spec", version = "1" } })
    assert.equal(-32600, again.error.code)
    -- a session of each version (a version it does not know: its own latest)
    for v, want in pairs({ ["2025-06-18"] = "2025-06-18", ["2025-03-26"] = "2025-03-26", ["1999-01-01"] = "2025-11-25" }) do
      local one = spawn(server.url("/mcp.html"))
      assert.equal(want, one:initialize(v, { list = false }).protocolVersion)
      one:close_stdin()
    end
  end)

  it("gives what a version has: structuredContent and _meta from 2025-06-18 on, batches in 2025-03-26", function()
    local c = spawn(server.url("/mcp.html"))
    c:initialize("2025-03-26")
    local list = c:request("tools/list")
    local echo = by_name(list).echo
    assert.is_nil(echo._meta)
    local r = call(c, "echo", { text = "hi" })
    assert.is_nil(r.structuredContent)
    assert.same({ text = "hi" }, dt.json.decode(result_text(r)))
    -- a batch: one answer, an array, in any order; nothing for its notification
    c:send_raw('[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},'
      .. '{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"scalar"}}]\n')
    local m = c:wait_for(function(x) return dt.json.kind(x) == "array" end, 10)
    assert.equal(2, #m)
    local got = {}
    for _, x in ipairs(m) do got[x.id] = x.result end
    assert.same({}, got.a)
    assert.equal("42", result_text(got.b))
    local c2 = spawn(server.url("/mcp.html"))
    c2:initialize("2025-06-18")
    assert.same({ result = 42 }, call(c2, "scalar").structuredContent)
    assert.equal("main", by_name(c2:request("tools/list")).echo._meta["devtools-tools/page"].group)
  end)

  it("answers what is not a valid request with JSON-RPC's errors, and carries only messages on stdout", function()
    local c = spawn(server.url("/mcp.html"))
    c:initialize()
    c:send_raw("{not json\n")
    local m = c:next_message(10)
    assert.equal(-32700, m.error.code)
    assert.equal(dt.null, m.id)
    c:send_raw('{"jsonrpc":"1.0","id":7,"method":"ping"}\n')
    assert.equal(-32600, c:answer(7).error.code)
    assert.equal(-32601, c:call("resources/list").error.code)
    assert.equal(-32602, c:call("tools/call", { name = "nope" }).error.code)
    assert.matches("Unknown tool: nope", c:call("tools/call", { name = "nope" }).error.message, 1, true)
    assert.equal(-32602, c:call("tools/call", { name = "echo", arguments = { 1, 2 } }).error.code)
    -- every line read so far was JSON (the client checks), and the log is on stderr
    c:close_stdin()
    assert.equal("exit", (c:wait_exit(30)))
    assert.matches("warning: Invalid tool \"nodesc\" in group \"broken\"", c:stderr(), 1, true)
    for _, line in ipairs(c.raw) do
      assert.truthy(line:match("^[%[{]"), line)
    end
  end)

  it("logs every message on stderr with DEVTOOLS_TOOLS_DEBUG=mcp, cleaned and bounded", function()
    local c = spawn(server.url("/mcp.html"), nil, { DEVTOOLS_TOOLS_DEBUG = "mcp" })
    c:initialize()
    local long = string.rep("y", 200000)
    call(c, "echo", { text = "\27[31mred\226\128\174" .. long })
    c:close_stdin()
    assert.equal("exit", (c:wait_exit(30)))
    local err = c:stderr()
    assert.matches("<- {", err, 1, true)
    assert.matches("-> {", err, 1, true)
    assert.matches('"method":"initialize"', err, 1, true)
    assert.is_nil(err:find("\27", 1, true))                   -- the escape and the override cleaned
    assert.is_nil(err:find("\226\128\174", 1, true))
    assert.matches("more bytes)", err, 1, true)                -- and the 200 KB message bounded
    assert.is_true(#err < 20000, #err)
  end)

  it("exits 0 within 2 s of stdin's end, its Chromium ended and its profile removed", function()
    local c = spawn(server.url("/mcp.html"), nil, nil, "launch")
    c:initialize()
    assert.is_true(#H.live_with_arg(c.tmp) > 0)               -- its Chromium, in our TMPDIR
    local started = core.now()
    c:close_stdin()
    local how, code = c:wait_exit(2)
    local took = core.now() - started
    assert.equal("exit", how, "still running after 2 s")
    assert.equal(0, code)
    assert.is_true(took < 2, took)
    -- (the profile's reaper, told it is done, exits as it reads that)
    H.wait_for(function() return #H.live_with_arg(c.tmp) == 0 end, math.max(0, started + 2 - core.now()))
    assert.same({}, H.live_with_arg(c.tmp))
    local left = {}
    for name in require("lfs").dir(c.tmp) do
      if name ~= "." and name ~= ".." then left[#left + 1] = name end
    end
    assert.same({}, left)
  end)

  it("tells on stderr that the browser died, and answers calls with isError saying so", function()
    local c = spawn(server.url("/mcp.html"), nil, nil, "launch")
    c:initialize()
    assert.equal("42", result_text(call(c, "scalar")))
    for _, pid in ipairs(H.live_with_arg(c.tmp)) do core.process.kill(pid, "KILL") end
    assert.is_true(H.wait_for(function() return c:stderr():find("the browser is gone", 1, true) ~= nil end, H.LONG),
      c:stderr())
    local r = call(c, "scalar")
    assert.is_true(r.isError)
    assert.matches("disconnected", result_text(r), 1, true)
    assert.matches("gone", result_text(r), 1, true)
    c:close_stdin()
    assert.same({ "exit", 0 }, { c:wait_exit(30) })
  end)
end)

describe("devtools-tools mcp: 2026-07-28, stateless", function()
  local META = "io.modelcontextprotocol/protocolVersion"
  local function modern(extra)
    local p = { _meta = { [META] = "2026-07-28", ["io.modelcontextprotocol/clientCapabilities"] = {} } }
    for k, v in pairs(extra or {}) do p[k] = v end
    return p
  end

  it("answers server/discover and requests that carry their version, without a handshake", function()
    local c = spawn(server.url("/spa.html"), { "--allow-eval" })
    local d = c:request("server/discover", modern())
    assert.same({ "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" }, d.supportedVersions)
    assert.is_true(d.capabilities.tools.listChanged)
    assert.equal("complete", d.resultType)
    assert.equal("devtools-tools", d._meta["io.modelcontextprotocol/serverInfo"].name)
    local list = c:request("tools/list", modern())
    assert.equal("complete", list.resultType)
    assert.equal(0, list.ttlMs)
    assert.equal("private", list.cacheScope)
    assert.is_true(has(names_of(list), "whichView"))
    local r = c:request("tools/call", modern({ name = "whichView" }))
    assert.equal("complete", r.resultType)
    assert.same({ result = "home" }, r.structuredContent)
    -- a version it does not serve
    local e = c:call("tools/list", { _meta = { [META] = "2099-01-01" } }).error
    assert.equal(-32022, e.code)
    assert.equal("2099-01-01", e.data.requested)
    assert.is_true(has(e.data.supported, "2026-07-28"))
  end)

  it("sends list changes on a subscriptions/listen stream, tagged with its id, until it is cancelled", function()
    local c = spawn(server.url("/spa.html"), { "--allow-eval" })
    assert.is_true(has(names_of(c:request("tools/list", modern())), "featured"))   -- (the first list is made)
    local a = c:start("subscriptions/listen", modern({ notifications = { toolsListChanged = true } }), "sub-a")
    local b = c:start("subscriptions/listen", modern({ notifications = { toolsListChanged = true, promptsListChanged = true } }), "sub-b")
    local acks = {}
    for _ = 1, 2 do
      local ack = c:next_notification("notifications/subscriptions/acknowledged", 20)
      acks[ack._meta["io.modelcontextprotocol/subscriptionId"]] = ack.notifications
    end
    assert.same({ ["sub-a"] = { toolsListChanged = true }, ["sub-b"] = { toolsListChanged = true } }, acks)
    local function tagged(n)
      local seen = {}
      for _ = 1, n do
        local m = c:next_notification("notifications/tools/list_changed", 10)
        assert.truthy(m, "no list_changed")
        seen[#seen + 1] = m._meta["io.modelcontextprotocol/subscriptionId"]
      end
      table.sort(seen)
      return seen
    end
    c:request("tools/call", modern({ name = "devtools.evaluate", arguments = { expression = "go('cart')" } }))
    assert.same({ "sub-a", "sub-b" }, tagged(2))
    assert.is_true(has(names_of(c:request("tools/list", modern())), "cartTotal"))
    c:notify("notifications/cancelled", { requestId = "sub-a" })
    c:request("tools/call", modern({ name = "devtools.evaluate", arguments = { expression = "go('home')" } }))
    assert.same({ "sub-b" }, tagged(1))
    c:request("ping")            -- whatever sub-a would have got was written before this answer
    for _, m in ipairs(c.inbox) do
      assert.is_false(m.method == "notifications/tools/list_changed", "a notification for a cancelled stream")
    end
    -- no answer ever came for the streams
    for _, line in ipairs(c.raw) do assert.is_nil(line:find('"id":"sub-', 1, true), line) end
    assert.is_truthy(a and b)
  end)
end)

describe("devtools-tools mcp: the tools", function()
  it("serves every tool of every frame under its own name when MCP takes it, else a name that stays", function()
    local c = spawn(server.url("/mcp.html?frame=1"))
    c:initialize()
    local list = c:request("tools/list")
    local names = names_of(list)
    local seen = {}
    for _, n in ipairs(names) do
      assert.truthy(n:match("^[%w_.-]+$") and #n <= 64, n)
      assert.is_nil(seen[n], "twice: " .. n)
      seen[n] = true
    end
    for _, n in ipairs({ "echo", "pick", "dup", "childOnly", "untyped", "devtools.navigate", "devtools.screenshot",
        "devtools.console", "devtools.network" }) do
      assert.is_true(seen[n], n)
    end
    assert.is_nil(seen["devtools.evaluate"])            -- only with --allow-eval
    local t = by_name(list)
    -- renamed: the second dup, the iframe's echo, the invalid names, the page's devtools.navigate
    local renamed = {}
    for _, x in ipairs(list.tools) do
      local o = x._meta and x._meta["devtools-tools/page"]
      if o and o.name ~= x.name then renamed[o.name .. "/" .. tostring(o.group)] = x end
    end
    for _, k in ipairs({ "dup/second", "echo/child", "bad name!/main", string.rep("x", 70) .. "/main",
        "devtools.navigate/main" }) do
      local x = renamed[k]
      assert.truthy(x, "not renamed: " .. k)
      assert.matches("(On the page: tool ", x.description, 1, true)
      assert.matches(k:match("^(.*)/"), x.description, 1, true)
      assert.equal(k:match("^(.*)/"), x.title)
    end
    assert.equal("The first dup", t.dup.description:match("^[^\n]*"))
    assert.equal("The second dup", renamed["dup/second"].description:match("^[^\n]*"))
    assert.equal("child echo", result_text(call(c, renamed["echo/child"].name)):match('^"(.*)"$'))
    assert.equal('"mine"', result_text(call(c, renamed["devtools.navigate/main"].name)))
    local origin = t.childOnly._meta["devtools-tools/page"]
    assert.same({ name = "childOnly", group = "child", kind = "devtools" },
      { name = origin.name, group = origin.group, kind = origin.kind })
    assert.matches("mcp_child.html", origin.frame.url, 1, true)
    -- the same page, discovered again after a reload: the same names
    local reloaded = call(c, "devtools.navigate", {})
    assert.is_nil(reloaded.isError, result_text(reloaded))
    table.sort(names)
    local again
    assert.is_true(H.wait_for(function()
      again = names_of(c:request("tools/list"))
      table.sort(again)
      return table.concat(again, " ") == table.concat(names, " ")
    end, H.LONG), table.concat(again or {}, " "))
  end)

  it("gives descriptions and schemas as the page gave them, a root without type \"object\" served with it", function()
    local c = spawn(server.url("/mcp.html"))
    c:initialize()
    local t = by_name(c:request("tools/list"))
    assert.equal("Returns its arguments\n\n(Provided by the page at " .. server.url("") .. ".)", t.echo.description)
    assert.same({ type = "object", additionalProperties = false,
      properties = { text = { type = "string" }, n = { type = "integer", minimum = 0 } } }, t.echo.inputSchema)
    assert.same({ type = "object", properties = { a = { type = "string" } }, required = { "a" } }, t.untyped.inputSchema)
    assert.same({ type = "object", properties = { b = {} } }, t.either.inputSchema)
    assert.equal("object", t.stringy.inputSchema.type)
    assert.matches("every call fails", t.stringy.description, 1, true)
    -- the validator still reads the page's own schemas
    assert.equal('"x"', result_text(call(c, "untyped", { a = "x" })))
    local r = call(c, "untyped", {})
    assert.is_true(r.isError)
    assert.matches("must have required property 'a'", result_text(r), 1, true)
    assert.is_true(call(c, "stringy", {}).isError)
  end)

  it("maps WebMCP's annotations to MCP's, serves WebMCP tools with --webmcp, and follows them", function()
    local c = spawn(server.url("/webmcp.html"), { "--webmcp", "--allow-eval" })
    c:initialize()
    assert.equal("ok", eval(c, "window.registered"))
    local list = c:request("tools/list")
    local t = by_name(list)
    for _, n in ipairs({ "hello", "add", "echo", "kaboom", "slow", "temporary", "search_form" }) do
      assert.truthy(t[n], n)
    end
    assert.same({ readOnlyHint = true }, t.add.annotations)
    assert.equal("webmcp", t.add._meta["devtools-tools/page"].kind)
    assert.is_true(t.add._meta["devtools-tools/page"].annotations.readOnly)
    assert.same({ sum = 42 }, call(c, "add", { a = 40, b = 2 }).structuredContent)
    local r = call(c, "add", { a = "x" })
    assert.is_true(r.isError)
    assert.matches("/a: must be number", result_text(r), 1, true)
    local k = call(c, "kaboom")
    assert.is_true(k.isError)
    assert.matches("kaboom", result_text(k), 1, true)
    -- a WebMCP tool removed (its AbortSignal), then one added
    eval(c, "window.controller.abort(), 1")
    assert.truthy(c:next_notification("notifications/tools/list_changed", 10))
    assert.is_nil(by_name(c:request("tools/list")).temporary)
    eval(c, "document.modelContext.registerTool({ name: 'fresh', description: 'new', inputSchema: { type: 'object' },"
      .. " execute: async () => 'fresh' }).then(() => 1)")
    assert.truthy(c:next_notification("notifications/tools/list_changed", 10))
    assert.equal('"fresh"', result_text(call(c, "fresh")))
  end)

  it("runs the built-in tools: navigate, screenshot, console, network; evaluate only with --allow-eval", function()
    local c = spawn(server.url("/mcp.html"))
    c:initialize()
    assert.equal(-32602, c:call("tools/call", { name = "devtools.evaluate", arguments = { expression = "1" } }).error.code)
    local shot = call(c, "devtools.screenshot", {})
    assert.equal("image", shot.content[1].type)
    assert.equal("image/png", shot.content[1].mimeType)
    assert.equal("\137PNG", require("devtools_tools.base.base64").decode(shot.content[1].data):sub(1, 4))
    local el = call(c, "devtools.screenshot", { selector = "#cart" })
    assert.equal("image", el.content[1].type)
    assert.is_true(call(c, "devtools.screenshot", { selector = "#nothing-here" }).isError)
    call(c, "log", { text = "a warning from the page" })
    local con = call(c, "devtools.console", { level = "warning" }).structuredContent
    local texts = {}
    for _, m in ipairs(con.messages) do texts[#texts + 1] = m.text end
    assert.is_true(has(texts, "a warning from the page"), table.concat(texts, " | "))
    assert.is_true(con.last >= 1)
    -- since: only what came after (a discovery meanwhile may log the page's invalid tool again)
    for _, m in ipairs(call(c, "devtools.console", { since = con.last, level = "warning" }).structuredContent.messages) do
      assert.is_true(m.seq > con.last, m.text)
      assert.are_not.equal("a warning from the page", m.text)
    end
    local net = call(c, "devtools.network", { url = "mcp.html" }).structuredContent
    assert.is_true(#net.requests >= 1)
    assert.equal("GET", net.requests[1].method)
    assert.equal(200, net.requests[1].status)
    local bad = call(c, "devtools.console", { level = "loud" })
    assert.is_true(bad.isError)
    assert.matches('/level: must be equal to one of the allowed values (got "loud"; allowed:', result_text(bad), 1, true)
    -- navigate: another document, its tools; a scheme it does not allow
    local nav = call(c, "devtools.navigate", { url = server.url("/spa.html") })
    assert.matches("spa.html", nav.structuredContent.url, 1, true)
    assert.truthy(c:next_notification("notifications/tools/list_changed", 10))
    assert.is_true(has(names_of(c:request("tools/list")), "whichView"))
    local f = call(c, "devtools.navigate", { url = "file:///etc/passwd" })
    assert.is_true(f.isError)
    assert.matches("not an http(s) URL", result_text(f), 1, true)
  end)
end)

describe("devtools-tools mcp: calls", function()
  it("answers with JSON text and structuredContent, Elements described, failures as isError bounded", function()
    local c = spawn(server.url("/mcp.html"))
    c:initialize()
    local r = call(c, "echo", { text = "hi", n = 2 })
    assert.same({ text = "hi", n = 2 }, r.structuredContent)
    assert.same({ text = "hi", n = 2 }, dt.json.decode(result_text(r)))
    assert.is_nil(r.isError)
    assert.same({ result = 42 }, call(c, "scalar").structuredContent)
    assert.same({ result = { 1, "two", dt.null } }, call(c, "list").structuredContent)
    assert.same({ result = dt.null }, call(c, "nothing").structuredContent)
    assert.same({ result = "plain text" }, call(c, "text").structuredContent)
    local el = call(c, "cart")
    assert.equal('Element div#cart.box.big: "Cart (2 items)"', result_text(el))
    local e = el.structuredContent.element
    assert.same({ "div", "cart", { "box", "big" }, "Cart (2 items)" }, { e.tag, e.id, e.classes, e.text })
    assert.equal("number", type(e.backendNodeId))
    assert.equal("div#cart.box.big", call(c, "cartIn").structuredContent.el.element.description)
    -- invalid arguments: each error with its path, the value received and the allowed values
    local bad = call(c, "pick", { colour = "pink" })
    assert.is_true(bad.isError)
    assert.equal('invalid_params: Invalid parameters for tool pick\n'
      .. '  /colour: must be equal to one of the allowed values (got "pink"; allowed: ["red","green","blue"])',
      result_text(bad))
    local two = result_text(call(c, "echo", { text = 5, n = -1, extra = 1 }))
    assert.matches("/text: must be string (got 5)", two, 1, true)
    assert.matches("/n: must be >= 0 (got -1)", two, 1, true)
    assert.matches("('extra')", two, 1, true)
    local boom = call(c, "boom")
    assert.is_true(boom.isError)
    assert.equal("tool_error: boom: it broke", result_text(boom))
    local huge = call(c, "huge", nil, 30)
    assert.is_true(huge.isError)
    assert.is_true(#result_text(huge) < 4096, #result_text(huge))
    assert.matches("%.%.%. %(%d+ more bytes%)", result_text(huge))
  end)

  it("runs requests at once: a tool that never settles delays neither tools/list, ping nor another call", function()
    local c = spawn(server.url("/mcp.html"))
    c:initialize()
    local slow = c:start("tools/call", { name = "never" })
    local started = core.now()
    assert.truthy(c:request("tools/list").tools)
    assert.same({}, c:request("ping"))
    assert.equal("42", result_text(call(c, "scalar")))
    assert.is_true(core.now() - started < 2, core.now() - started)
    -- cancelled: no answer ever, and the page goes on answering
    c:notify("notifications/cancelled", { requestId = slow, reason = "spec" })
    assert.same({}, c:request("ping"))
    assert.equal('"plain text"', result_text(call(c, "text")))
    for _, line in ipairs(c.raw) do
      local m = dt.json.decode(line)
      assert.is_false(m.id == slow, "an answer to the cancelled request")
    end
  end)

  it("cancels a WebMCP tool's invocation (WebMCP.cancelInvocation), and answers nothing for it", function()
    local c = spawn(server.url("/webmcp.html"), { "--webmcp", "--allow-eval" })
    c:initialize()
    assert.equal("ok", eval(c, "window.registered"))
    eval(c, "window.cancels = 0; document.modelContext.addEventListener('toolcancel', () => { window.cancels++; }); 1")
    -- (the list made: the call's invocation is sent as the request is read, before the cancellation)
    assert.truthy(by_name(c:request("tools/list")).slow)
    local id = c:start("tools/call", { name = "slow", arguments = {} })
    assert.same({}, c:request("ping"))
    c:notify("notifications/cancelled", { requestId = id })
    -- the page hears of the cancellation
    assert.is_true(H.wait_for(function() return eval(c, "window.cancels") == 1 end, H.LONG))
    for _, line in ipairs(c.raw) do
      assert.is_false(dt.json.decode(line).id == id, "an answer to the cancelled request")
    end
  end)

  it("sends notifications/progress at least once a second while a request with a progressToken runs", function()
    local c = spawn(server.url("/mcp.html"))
    c:initialize()
    local id = c:start("tools/call", { name = "slow", arguments = { ms = 2600 }, _meta = { progressToken = "tok" } })
    local last, progress, times = core.now(), {}, {}
    local answer
    while true do
      local m = c:next_message(5)
      assert.truthy(m, "nothing for 5 s")
      local t = core.now()
      if m.id == id then
        answer = m
        break
      end
      assert.equal("notifications/progress", m.method)
      assert.equal("tok", m.params.progressToken)
      progress[#progress + 1] = m.params.progress
      times[#times + 1] = t - last
      last = t
    end
    assert.same({ waited = 2600 }, answer.result.structuredContent)
    assert.is_true(#progress >= 2, #progress)
    for i = 2, #progress do assert.is_true(progress[i] > progress[i - 1]) end
    for _, gap in ipairs(times) do assert.is_true(gap <= 1.0, gap) end
    assert.same({}, c:request("ping"))         -- and none after the answer
    for _, m in ipairs(c.inbox) do assert.is_false(m.method == "notifications/progress") end
  end)
end)

describe("devtools-tools mcp: notifications/tools/list_changed", function()
  it("is sent when listeners come or go, and tools/list then shows the change", function()
    local c = spawn(server.url("/mcp.html"), nil, { DEVTOOLS_TOOLS_DEBUG = "mcp" })
    c:initialize()
    assert.is_false(has(names_of(c:request("tools/list")), "added"))
    call(c, "addGroup")
    assert.truthy(c:next_notification("notifications/tools/list_changed", 10))
    assert.is_true(has(names_of(c:request("tools/list")), "added"))
    assert.equal('"added"', result_text(call(c, "added")))
    call(c, "removeGroup")
    assert.truthy(c:next_notification("notifications/tools/list_changed", 10))
    assert.is_false(has(names_of(c:request("tools/list")), "added"))
    -- a change of listeners that leaves the list as it was: looked at, not sent
    local before = select(2, c:stderr():gsub("the same list", ""))
    call(c, "sameGroup")
    assert.is_true(H.wait_for(function() return select(2, c:stderr():gsub("the same list", "")) > before end, H.LONG))
    assert.same({}, c:request("ping"))
    for _, m in ipairs(c.inbox) do
      assert.is_false(m.method == "notifications/tools/list_changed", "sent for a list that did not change")
    end
    -- frames: an iframe with a group of its own
    call(c, "addFrame")
    assert.truthy(c:next_notification("notifications/tools/list_changed", 10))
    assert.is_true(has(names_of(c:request("tools/list")), "childOnly"))
  end)

  it("is sent on navigation within a single-page app's document, as its router swaps listeners", function()
    local c = spawn(server.url("/spa.html?effects=later"), { "--allow-eval" })
    c:initialize()
    -- (the home view mounts a moment after the load: its tools come with a list_changed)
    assert.is_true(H.wait_for(function() return has(names_of(c:request("tools/list")), "featured") end, H.LONG))
    c.inbox = {}
    eval(c, "go('cart')")
    assert.truthy(c:next_notification("notifications/tools/list_changed", 10))
    local names = names_of(c:request("tools/list"))
    assert.is_true(has(names, "cartTotal"))
    assert.is_false(has(names, "featured"))
    assert.same({ result = "cart" }, call(c, "whichView").structuredContent)
    -- the hash
    eval(c, "location.hash = 'home'")
    assert.truthy(c:next_notification("notifications/tools/list_changed", 10))
    assert.is_true(has(names_of(c:request("tools/list")), "featured"))
  end)

  it("follows a React app's screens (its tools registered in effects, removed on unmount)", function()
    local c = spawn(server.url("/apps/shop/index.html"), { "--webmcp" })
    c:initialize()
    local t
    assert.is_true(H.wait_for(function()
      t = by_name(c:request("tools/list"))
      return t.goTo ~= nil and t.add_to_cart ~= nil
    end, H.LONG))
    assert.truthy(t.searchProducts)
    assert.is_nil(t.setQuantities)
    local r = call(c, "goTo", { screen = "cart" })
    assert.is_nil(r.isError, result_text(r))
    assert.truthy(c:next_notification("notifications/tools/list_changed", 10))
    assert.is_true(H.wait_for(function()
      t = by_name(c:request("tools/list"))
      return t.setQuantities ~= nil
    end, H.LONG))
    assert.is_nil(t.searchProducts)
    local q = call(c, "setQuantities", { lines = { { productId = "P-1", quantity = 1 } }, currency = "JPY" })
    assert.is_true(q.isError)
    assert.matches("/lines/0/productId", result_text(q), 1, true)
  end)
end)

describe("devtools-tools mcp: which page", function()
  it("serves a page of a running browser (--connect), picked by --tab, and leaves both open", function()
    local b = dt.launch({ detached = true })
    local ok, err = pcall(function()
      local p = b:new_page(server.url("/spa.html"))
      local endpoint = b.detached.endpoint
      local c = spawn(nil, { "--connect", endpoint, "--tab", "spa.html" })
      c:initialize()
      assert.is_true(has(names_of(c:request("tools/list")), "whichView"))
      c:close_stdin()
      assert.same({ "exit", 0 }, { c:wait_exit(30) })
      assert.equal("home", p:call("whichView"))             -- the tab is still there
      -- with a URL an open tab shows: that tab, left open (as every command does)
      local n = #b:pages()
      local c1 = spawn(server.url("/spa.html"), { "--connect", endpoint })
      c1:initialize()
      assert.is_true(has(names_of(c1:request("tools/list")), "whichView"))
      assert.equal(n, #b:pages())
      c1:close_stdin()
      assert.same({ "exit", 0 }, { c1:wait_exit(30) })
      assert.equal("home", p:call("whichView"))
      assert.equal(n, #b:pages())
      -- with --new-tab: a page of its own, closed at the end
      local c2 = spawn(server.url("/mcp.html"), { "--connect", endpoint, "--new-tab" })
      c2:initialize()
      assert.is_true(has(names_of(c2:request("tools/list")), "echo"))
      assert.equal(n + 1, #b:pages())
      c2:close_stdin()
      assert.same({ "exit", 0 }, { c2:wait_exit(30) })
      -- (the target goes a moment after the server that closed it has exited)
      require("devtools_tools.rt.wait").condition(function() return #b:pages() == n end, dt.now() + 5)
      assert.equal(n, #b:pages())
    end)
    local rec = b.detached
    b:close()
    dt.stop_detached(rec)
    assert(ok, err)
  end)
end)

-- A port nothing listens on yet (a static server started on a free one,
-- then stopped): the app an agent's host starts after its MCP servers.
local function free_port()
  local s = H.start_server()
  local port = s.port
  s.stop()
  return port
end

local function start_app_on(port)
  local proc = H.start_port_program({ H.support("static_server"), "--port", tostring(port), "--root", "spec/fixtures" })
  return { stop = function() proc:close(0) end }
end

describe("devtools-tools mcp: started before the app", function()
  it("answers at once, serves the built-ins, says what it tried, and lists the page's tools once it is up", function()
    local port = free_port()
    local url = "http://127.0.0.1:" .. port .. "/mcp.html"
    local c = spawn(url)
    local r = c:initialize()
    assert.matches(url, r.instructions, 1, true)
    -- the first attempt found nothing listening: the built-ins only
    local names = c:tool_names()
    assert.same({ "devtools.navigate", "devtools.screenshot", "devtools.console", "devtools.network" }, names)
    local e = call(c, "echo", { text = "x" })
    assert.is_true(e.isError)
    assert.matches("The page is not up yet: " .. url, result_text(e), 1, true)
    assert.matches("ERR_CONNECTION_REFUSED", result_text(e), 1, true)
    assert.is_nil(c:wait_exit(0))                                   -- still serving
    -- the app comes up: the server finds it, says so, and serves its tools
    local app = start_app_on(port)
    local ok, err = pcall(function()
      assert.truthy(c:next_notification("notifications/tools/list_changed", 20), c:stderr())
      assert.is_true(has(c:tool_names(), "echo"))
      assert.same({ text = "up" }, call(c, "echo", { text = "up" }).structuredContent)
    end)
    c:close_stdin()
    assert.same({ "exit", 0 }, { c:wait_exit(30) })
    app.stop()
    assert(ok, err)
    -- what was tried is said on stderr, a line at first and when it is up (not one per attempt)
    local err_text = c:stderr()
    local _, lines = err_text:gsub("not up yet", "")
    assert.is_true(lines >= 1 and lines <= 3, err_text)
    assert.matches("the page is up", err_text, 1, true)
  end)

  it("tries the same tab again in a running browser, and takes no error page for the app", function()
    local port = free_port()
    local url = "http://127.0.0.1:" .. port .. "/mcp.html"
    local b = dt.launch({ detached = true })
    local ok, err = pcall(function()
      local n = #b:pages()                                  -- its blank tab, which the server takes
      local c = spawn(url, { "--connect", b.detached.endpoint })
      c:initialize()
      assert.is_true(H.wait_for(function() return select(2, c:stderr():gsub("not up yet", "")) >= 1 end, 20))
      -- retried a few times (pauses of 0.25, 0.5, 1 s...): still the one tab, still not up
      assert.is_false(H.wait_for(function() return #b:pages() ~= n end, 3), "another tab was opened")
      assert.is_true(call(c, "echo", { text = "x" }).isError)
      local app = start_app_on(port)
      local ok2, err2 = pcall(function()
        assert.truthy(c:next_notification("notifications/tools/list_changed", 20), c:stderr())
        assert.same({ text = "up" }, call(c, "echo", { text = "up" }).structuredContent)
      end)
      app.stop()
      assert(ok2, err2)
      assert.equal(n, #b:pages())
    end)
    local rec = b.detached
    b:close()
    dt.stop_detached(rec)
    assert(ok, err)
  end)

  it("refuses a URL that can never work at the start", function()
    for _, bad in ipairs({ "javascript:alert(1)", "http://[::1/", "http://a:99999/", "chrome://settings" }) do
      local c = spawn(bad)
      assert.same({ "exit", 2 }, { c:wait_exit(30) })
      assert.matches("mcp: ", c:stderr(), 1, true)
    end
  end)

  it("exits within 2 s when stdin ends during the start, against a slow site", function()
    local c = spawn(server.url("/mcp.html?delay=20000"), { "--timeout", "20" }, { DEVTOOLS_TOOLS_DEBUG = "cdp" },
      "launch")
    c:initialize(nil, { list = false })
    -- the navigation is under way (the site answers in 20 s)
    assert.is_true(H.wait_for(function() return c:stderr():find("Page.navigate", 1, true) ~= nil end, 20))
    local started = core.now()
    c:close_stdin()
    local how, code = c:wait_exit(2)
    assert.same({ "exit", 0 }, { how, code }, "still running 2 s after the end of stdin")
    assert.is_true(core.now() - started < 2)
    -- (its Chromium ended: the last of its processes may take a while on a loaded machine)
    H.wait_for(function() return #H.live_with_arg(c.tmp) == 0 end, H.LONG)
    assert.same({}, H.live_with_arg(c.tmp))
  end)
end)

describe("devtools-tools mcp: any bytes", function()
  it("answers what is not UTF-8 and goes on; writes ids back as they were sent", function()
    local c = spawn(server.url("/mcp.html"))
    c:initialize()
    c:send_raw('{"jsonrpc":"2.0","id":"x\255","method":"ping"}\n')
    local m = c:next_message(10)
    assert.same({ -32700, dt.null }, { m.error.code, m.id })
    c:send_raw('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ad\255d"}}\n')
    assert.equal(-32700, c:answer(7).error.code)
    c:send_raw('{"jsonrpc":"2.0","id":1e999,"method":"ping"}\n{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}\n')
    assert.truthy(c:wait_for(function(x) return x.result and x.id ~= 7 end, 10))
    assert.truthy(c:wait_for(function(x) return x.result and x.id ~= 7 end, 10))
    local seen = table.concat(c.raw, "\n")
    assert.truthy(seen:find('{"jsonrpc":"2.0","id":1e999,"result":{}}', 1, true), seen)
    assert.truthy(seen:find('{"jsonrpc":"2.0","id":12345678901234567890,"result":{}}', 1, true), seen)
    -- a page's lone surrogates go out as U+FFFD
    call(c, "lone")
    local line = c.raw[#c.raw]
    assert.is_nil(line:find("\\ud8", 1, true), line)
    assert.is_nil(dt.json.utf8_error(line))
    assert.same({ result = "a\239\191\189b\239\191\189c" }, dt.json.decode(line).result.structuredContent)
    assert.same({}, c:request("ping"))
    c:close_stdin()
    assert.same({ "exit", 0 }, { c:wait_exit(30) })
  end)

  it("stops reading requests while its answers are not read, so its memory stays bounded", function()
    local c = spawn(server.url("/mcp.html"), nil, { DEVTOOLS_TOOLS_DEBUG = "mcp" })
    c:initialize()
    assert.truthy(call(c, "blob", { bytes = 16 }).structuredContent)
    -- 120 requests for answers of 2 MiB (a 1 MiB string twice: text and structuredContent), none read
    local n = 120
    for i = 1, n do
      c:send_raw(('{"jsonrpc":"2.0","id":"b%d","method":"tools/call","params":{"name":"blob",'
        .. '"arguments":{"bytes":1048576}}}\n'):format(i))
    end
    local function read_so_far()
      return select(2, c:stderr():gsub('<%- {"jsonrpc":"2.0","id":"b', ""))
    end
    local function peak()
      local f = io.open("/proc/" .. c.proc:pid() .. "/status")
      local st = f and f:read("a") or ""
      if f then f:close() end
      return tonumber(st:match("VmHWM:%s*(%d+)")) or 0
    end
    -- it reads until 64 MiB wait to be written, and no further while nobody reads them
    assert.is_true(H.wait_for(function() return read_so_far() >= 16 end, 30), c:stderr():sub(-2000))
    assert.is_false(H.wait_for(function() return read_so_far() >= n end, 5),
      "read every request while no answer was read")
    local high = peak()
    -- now read: every request gets its answer
    for got = 1, n do
      assert.truthy(c:wait_for(function(x) return type(x.id) == "string" and x.id:sub(1, 1) == "b" end, 60),
        ("answers stopped after %d (read %d requests; the server %s); its stderr ends:\n%s"):format(got - 1,
          read_so_far(), c.proc:running() and "runs" or "has ended", c:stderr():sub(-3000)))
    end
    -- (64 MiB of answers waiting and 32 requests under way; unbounded, 240 MiB waited)
    assert.is_true(high < 400 * 1024, ("a peak of %d KiB"):format(high))
    c:close_stdin()
    assert.same({ "exit", 0 }, { c:wait_exit(30) })
  end)
end)

describe("devtools-tools mcp: what the page wrote, and where navigate goes", function()
  it("ends page tools' descriptions with their provenance, and marks results; --trust-page drops the line", function()
    local c = spawn(server.url("/mcp.html"))
    c:initialize()
    local t = by_name(c:request("tools/list"))
    local line = "(Provided by the page at " .. server.url("") .. ".)"
    assert.equal(line, t.pick.description:match("[^\n]*$"))
    assert.same({ source = "page", page = server.url(""), trusted = false }, t.pick._meta["devtools-tools/provenance"])
    assert.is_nil(t["devtools.navigate"].description:find("Provided by the page", 1, true))
    local r = call(c, "pick", { colour = "red" })
    assert.equal("page", r._meta["devtools-tools/provenance"].source)
    local own = spawn(server.url("/mcp.html"), { "--trust-page" })
    own:initialize()
    local t2 = by_name(own:request("tools/list"))
    assert.equal("Picks a colour", t2.pick.description)
    assert.is_true(t2.pick._meta["devtools-tools/provenance"].trusted)
  end)

  it("refuses to navigate to link-local, metadata and private addresses unless allowed", function()
    local c = spawn(server.url("/mcp.html"), { "--allow-navigate", "10.255.255.1" })
    c:initialize()
    for _, url in ipairs({ "http://169.254.169.254/latest/meta-data/", "http://2852039166/", "http://[fe80::1]/",
        "http://metadata.google.internal/", "http://192.168.0.1/" }) do
      local r = call(c, "devtools.navigate", { url = url })
      assert.is_true(r.isError, url)
      assert.matches("is refused", result_text(r), 1, true)
    end
    -- allowed: the page's own host, loopback, and what --allow-navigate names (10.255.255.1
    -- is then tried: the browser fails to load it, which is not a refusal)
    local ok = call(c, "devtools.navigate", { url = server.url("/spa.html") })
    assert.is_nil(ok.isError, result_text(ok))
    local tried = call(c, "devtools.navigate", { url = "http://10.255.255.1:9/" }, 60)
    assert.is_nil(result_text(tried):find("is refused", 1, true), result_text(tried))
  end)
end)

describe("devtools-tools mcp: a page whose tools come after its load event", function()
  it("lists them in a tools/list right after devtools.navigate", function()
    local c = spawn(server.url("/mcp.html"))
    c:initialize()
    assert.is_true(has(names_of(c:request("tools/list", nil, 60)), "pick"))
    -- settle.html: one group at once, a second once a request made after the load answers (400 ms)
    local nav = call(c, "devtools.navigate", { url = server.url("/settle.html") })
    assert.is_nil(nav.isError, result_text(nav))
    local names = names_of(c:request("tools/list"))
    assert.is_true(has(names, "one"), table.concat(names, " "))
    assert.is_true(has(names, "two"), table.concat(names, " "))
  end)
end)

describe("the Lua API: require \"devtools_tools.mcp\"", function()
  it("serves a page in-process on a transport passed in", function()
    local mcp = require "devtools_tools.mcp"
    local browser = dt.launch()
    local page = browser:new_page(server.url("/mcp.html"))
    -- a transport of our own: messages in through a function, out into a list
    local out, handlers, closed = {}, nil, nil
    local transport = {
      start = function(_, h) handlers = h end,
      send = function(_, text) out[#out + 1] = dt.json.decode(text) end,
      close = function() end,
    }
    local srv = mcp.serve(transport, { page = page, log = false, on_close = function(why) closed = why end })
    local function ask(id, method, params)
      handlers.message(dt.json.encode({ jsonrpc = "2.0", id = id, method = method, params = params }))
    end
    -- the server's tasks run on the library's loop: turn it until the answer is out
    local loop = dt.loop()
    local function answer(id)
      local deadline = dt.now() + 10
      while dt.now() < deadline do
        for _, m in ipairs(out) do if m.id == id then return m end end
        loop:step(0.05)
      end
      error("no answer to " .. id)
    end
    ask(1, "initialize", { protocolVersion = "2025-06-18", capabilities = {}, clientInfo = { name = "lua", version = "1" } })
    assert.equal("2025-06-18", answer(1).result.protocolVersion)
    ask(2, "tools/list")
    assert.is_true(has(names_of(answer(2).result), "echo"))
    ask(3, "tools/call", { name = "echo", arguments = { text = "in-process" } })
    assert.same({ text = "in-process" }, answer(3).result.structuredContent)
    assert.same({ "echo", "pick" }, { srv:tools()[1], srv:tools()[2] })
    handlers.close("the editor closed it")
    assert.equal("the editor closed it", closed)
    browser:close()
  end)
end)
