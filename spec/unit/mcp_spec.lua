-- devtools_tools.mcp.*, without a browser: tool names and schemas as MCP
-- wants them (scenario tables), results and failures as content, the
-- stdio transport over real pipes (a child /bin/cat echoing what it is
-- sent), and the server's JSON-RPC - versions, errors, batches,
-- cancellation, progress, list changes - on a transport of the spec's own
-- and a stand-in page whose tools are Lua functions. Runs under Lua 5.4
-- and LuaJIT (the server runs in Neovim's too).

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local tools = require "devtools_tools.mcp.tools"
local content = require "devtools_tools.mcp.content"
local stdio = require "devtools_tools.mcp.stdio"
local mcp = require "devtools_tools.mcp"
local element = require "devtools_tools.tools.element"

local json, null, array = dt.json, dt.null, dt.array

local function page_json(v) return json.decode(json.encode(v)) end

-- a Tool-like table, as discovery gives them
local function tool(name, group, extra)
  local t = { name = name, description = "d " .. tostring(name), input_schema = page_json({ type = "object" }),
    group = group or { name = "g", kind = "devtools", frame = { url = "http://a.test/x", origin = "http://a.test" } },
    kind = "devtools" }
  for k, v in pairs(extra or {}) do t[k] = v end
  return t
end

describe("mcp.tools: names", function()
  it("keeps a name MCP takes, and makes one that stays for the others", function()
    local g2 = { name = "other", kind = "devtools", frame = { url = "http://b.test/", origin = "http://b.test" } }
    local list = { tool("ok"), tool("with space"), tool(("x"):rep(65)), tool("devtools.screenshot"), tool("ok", g2),
      tool("ok.2_-Z"), tool(""), tool("日本") }
    local names = tools.names(list)
    assert.equal("ok", names[1])
    assert.equal("ok.2_-Z", names[6])
    for i, n in ipairs(names) do
      assert.truthy(n:match("^[%w_.-]+$") and #n <= 64, n)
      for j = i + 1, #names do assert.are_not.equal(n, names[j]) end
    end
    assert.matches("^with_space_%x%x%x%x%x%x%x%x$", names[2])
    assert.matches("^" .. ("x"):rep(40) .. "_%x+$", names[3])
    assert.matches("^tool_screenshot_%x+$", names[4])   -- never a built-in's name, nor its prefix
    assert.matches("^ok_%x+$", names[5])
    assert.matches("^tool_%x+$", names[7])
    assert.matches("^_+_%x+$", names[8])
    -- the same tools give the same names; another tool before them changes none of them
    assert.same(names, tools.names(list))
    table.insert(list, 1, tool("first"))
    local again = tools.names(list)
    for i = 1, #names do assert.equal(names[i], again[i + 1]) end
  end)

  it("tells apart tools that are the same but for their place: _2, _3", function()
    local names = tools.names({ tool("a b"), tool("a b"), tool("a b") })
    assert.equal(names[1] .. "_2", names[2])
    assert.equal(names[1] .. "_3", names[3])
  end)
end)

describe("mcp.tools: schemas and annotations", function()
  local cases = {
    { "an object schema is served as it is", { type = "object", properties = { a = { type = "string" } } }, nil, true },
    { "no type: type object added", { properties = { a = { type = "string" } }, required = { "a" } },
      { type = "object", properties = { a = { type = "string" } }, required = { "a" } } },
    { "a list of types with object: object", { type = { "object", "null" } }, { type = "object" } },
    { "another type: object, and a note", { type = "string" }, { type = "object" }, false, "every call fails" },
    { "property schemas true and false", { type = "object", properties = { a = true, b = false } },
      { type = "object", properties = { a = {}, b = { ["not"] = {} } } } },
    { "properties that is a list: left out, malformed", { type = "object", properties = { 1 } }, { type = "object" },
      false, "malformed" },
    { "required that is no list of names: left out", { type = "object", required = { 1 } }, { type = "object" },
      false, "malformed" },
    { "a $ref at the root keeps it, beside type object", { ["$ref"] = "#/definitions/a", definitions = { a = { type = "object" } } },
      { type = "object", ["$ref"] = "#/definitions/a", definitions = { a = { type = "object" } } } },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local given = page_json(c[2])
      local before = json.encode(given)
      local served, note = tools.fit_schema(given)
      if c[4] == true then assert.equal(given, served) else assert.same(page_json(c[3]), page_json(served)) end
      if c[5] then assert.matches(c[5], note, 1, true) else assert.is_nil(note) end
      assert.equal(before, json.encode(given))                 -- the page's own never changes
    end)
  end

  it("maps WebMCP's annotations: readOnly, untrustedContent, consequential; Chromium's false defaults say nothing", function()
    assert.same({ readOnlyHint = true }, tools.annotations({ readOnly = true, untrustedContent = false,
      consequential = false, debugging = false, autosubmit = false }))
    assert.same({ readOnlyHint = false, openWorldHint = true, destructiveHint = true },
      tools.annotations({ readOnly = false, untrustedContent = true, consequential = true }))
    assert.is_nil(tools.annotations({}))
    assert.is_nil(tools.annotations(nil))
  end)

  it("builds descriptors: the page's description, renamed tools say where they come from", function()
    local g = { name = "g", kind = "devtools", frame = { url = "http://a.test/p?q", origin = "http://a.test" } }
    g.tools = { tool("a b", g), tool("fine", g) }
    local list = tools.build({ g })
    local renamed, fine = list[1].descriptor, list[2].descriptor
    assert.equal("d fine\n\n(Provided by the page at http://a.test.)", fine.description)
    assert.is_nil(fine.title)
    assert.matches('^d a b\n\n%(On the page: tool "a b" of group "g" in a frame of http://a.test%.%)\n\n'
      .. '%(Provided by the page at http://a%.test%.%)$', renamed.description)
    assert.equal("a b", renamed.title)
    assert.same({ name = "a b", kind = "devtools", group = "g", frame = { url = "http://a.test/p?q", origin = "http://a.test" } },
      renamed._meta["devtools-tools/page"])
    assert.equal(list[1], list.by_name[renamed.name])
    assert.same({ source = "page", page = "http://a.test", trusted = false }, fine._meta["devtools-tools/provenance"])
    -- the page is the user's own (--trust-page): no line, and _meta says so
    local own = tools.build({ g }, { trusted = true })[2].descriptor
    assert.equal("d fine", own.description)
    assert.is_true(own._meta["devtools-tools/provenance"].trusted)
    -- a page of no origin (file:) is named by its URL, query and fragment left out
    assert.equal("file:///srv/app.html", tools.where({ origin = "null", url = "file:///srv/app.html?k=secret#x" }))
    -- a description of 20 MB is served bounded
    local big = tools.build({ { name = "g", tools = { tool("big", nil, { description = ("z"):rep(20 * 1024 * 1024) }) } } })
    assert.is_true(#big[1].descriptor.description < 70000)
    assert.matches("more bytes%)\n\n%(Provided by the page at http://a%.test%.%)$", big[1].descriptor.description)
  end)
end)

describe("mcp.content", function()
  local cases = {
    { "an object as it is", { a = 1 }, { a = 1 }, '{"a":1}' },
    { "a number", 42, { result = 42 }, "42" },
    { "a string", "s", { result = "s" }, '"s"' },
    { "an array", array{ 1, 2 }, { result = { 1, 2 } }, "[1,2]" },
    { "null", null, { result = null }, "null" },
    { "nothing (undefined)", nil, { result = null }, "null" },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local r = content.result(c[2], true)
      assert.same(c[3], r.structuredContent)
      assert.equal(c[4], r.content[1].text)
      assert.is_nil(r.isError)
      assert.is_nil(content.result(c[2], false).structuredContent)
    end)
  end

  it("describes an Element, alone and inside a value", function()
    local el = element.new({ backend_node_id = 7, description = "li#x.a.b", text = "Hello", frame = { url = "u" } })
    local r = content.result(el, true)
    assert.equal('Element li#x.a.b: "Hello"', r.content[1].text)
    assert.same({ element = { description = "li#x.a.b", tag = "li", id = "x", classes = { "a", "b" }, text = "Hello",
      backendNodeId = 7, frame = "u" } }, r.structuredContent)
    local inside = { list = array{ el }, n = 1 }
    local r2 = content.result(inside, true)
    assert.equal("li", r2.structuredContent.list[1].element.tag)
    assert.is_true(dt.is_element(inside.list[1]))             -- the tool's value is left as it was
  end)

  it("gives a failure as isError text, bounded", function()
    local r = content.failure(dt.new_error("tool_error", ("m"):rep(20 * 1024 * 1024)))
    assert.is_true(r.isError)
    assert.is_true(#r.content[1].text < 4096)
    assert.matches("^tool_error: m+%.%.%. %(%d+ more bytes%)$", r.content[1].text)
    local nested = {}
    local cur = nested
    for _ = 1, 1100 do cur.x = {} cur = cur.x end
    assert.is_true(content.result(nested, true).isError)
  end)
end)

-- Turns the loop until pred() or the timeout: what a program with the
-- library's loop does (server:run).
local function turn_until(pred, timeout)
  local loop = dt.loop()
  local deadline = dt.now() + (timeout or 5)
  while not pred() do
    if dt.now() > deadline then return false end
    loop:step(0.05)
  end
  return true
end

describe("mcp.stdio", function()
  it("frames lines both ways over pipes, queues what does not fit, and tells of the end", function()
    local cat, fds = assert(core.process.spawn({ "/bin/cat" }, { stdio = true }))
    -- our output is cat's stdin, our input its stdout: what we send comes back
    local t = stdio.new({ input = fds.stdout, output = fds.stdin })
    local got, ended = {}, nil
    t:start({ message = function(s) got[#got + 1] = s end, close = function(why) ended = why end })
    local big = ("b"):rep(3 * 1024 * 1024)                 -- far more than a pipe holds
    t:send('{"a":1}')
    t:send(big)
    t:send("last")
    assert.is_true(t:pending() > 0)                        -- (the rest waits for the loop)
    assert.is_true(turn_until(function() return #got == 3 end, 10))
    assert.same({ '{"a":1}', big, "last" }, { got[1], got[2], got[3] })
    assert.equal(0, t:pending())
    core.fd.close(fds.stdin)                               -- cat ends: the end of our input
    assert.is_true(turn_until(function() return ended ~= nil end, 5))
    assert.equal("end of input", ended)
    cat:close()
    core.fd.close(fds.stdout)
  end)
end)

-- ---- the server, on a stand-in page ---------------------------------------------------------

-- A page of Lua tools: discover() gives its groups; on("tools_changed")
-- listeners are kept; wait_until waits as a task does (dt.sleep).
local function fake_page(spec)
  local p = { url = "http://fake.test/", listeners = {} }
  local function group(g)
    local out = { name = g.name, kind = "devtools", frame = { url = p.url, origin = "http://fake.test" }, tools = {} }
    for _, t in ipairs(g.tools) do
      out.tools[#out.tools + 1] = { name = t[1], description = t[2], input_schema = page_json(t[3] or { type = "object" }),
        group = out, kind = "devtools",
        call = function(_, args, opts)
          local v = t[4](args, opts)
          return v
        end }
    end
    return out
  end
  function p.discover()
    local gs = {}
    for i, g in ipairs(spec.groups) do gs[i] = group(g) end
    return gs, {}
  end
  function p.on(_, event, fn)
    p.listeners[#p.listeners + 1] = { event, fn }
    return function() end
  end
  function p.wait_until(_, pred, opts)
    local deadline = dt.now() + (opts and opts.timeout or 30)
    while not pred() and dt.now() < deadline do dt.sleep(0.05) end
    return pred()
  end
  function p.changed()
    for _, l in ipairs(p.listeners) do if l[1] == "tools_changed" then l[2]({ reason = "listener" }) end end
  end
  return p
end

-- serve(page | nil, opts) -> a client of a server on a transport of the
-- spec's own: c.out the messages decoded, c.texts as written, c.held the
-- transport's holds (hold/release); opts.open instead of a page.
local function serve(page, opts)
  local out, texts, held, handlers = {}, {}, {}, nil
  local transport = {
    start = function(_, h) handlers = h end,
    send = function(_, text)
      texts[#texts + 1] = text
      out[#out + 1] = json.decode(text)
    end,
    close = function() end,
    hold = function(_, why) held[why] = (held[why] or 0) + 1 end,
    release = function(_, why) held[why] = held[why] - 1 end,
  }
  opts = opts or {}
  opts.page = page
  if opts.log == nil then opts.log = false end
  local srv = mcp.serve(transport, opts)
  local c = { srv = srv, out = out, texts = texts, held = held }
  function c.raw(text) handlers.message(text) end
  function c.send(msg) handlers.message(json.encode(msg)) end
  function c.answer(id)
    local found
    assert(turn_until(function()
      for _, m in ipairs(out) do if m.id == id and m.method == nil then found = m return true end end
      return false
    end, 10), "no answer to " .. tostring(id))
    return found
  end
  function c.request(id, method, params)
    c.send({ jsonrpc = "2.0", id = id, method = method, params = params })
    return c.answer(id)
  end
  function c.close() handlers.close("the spec") end
  return c
end

local GROUPS = { { name = "g", tools = {
  { "add", "adds", { type = "object", properties = { a = { type = "number" }, b = { type = "number" } }, required = { "a", "b" } },
    function(a) return a.a + a.b end },
  { "wait", "waits", { type = "object", properties = { s = { type = "number" } } },
    function(a) dt.sleep(a.s or 0) return "waited" end },
  { "boom", "throws", nil, function() error(dt.new_error("tool_error", "it broke"), 0) end },
} } }

describe("mcp.server (a stand-in page)", function()
  it("speaks JSON-RPC: parse errors, invalid requests, unknown methods, batches, notifications", function()
    local c = serve(fake_page({ groups = GROUPS }))
    c.request(0, "initialize", { protocolVersion = "2025-03-26" })
    for i = #c.out, 1, -1 do c.out[i] = nil end
    c.raw("{oops")
    assert.same({ -32700, null }, { c.out[1].error.code, c.out[1].id })
    c.raw('{"jsonrpc":"2.0","id":null,"method":"ping"}')
    assert.equal(-32600, c.out[2].error.code)
    c.raw('{"jsonrpc":"2.0","id":{},"method":"ping"}')
    assert.equal(-32600, c.out[3].error.code)
    c.raw("[]")
    assert.equal(-32600, c.out[4].error.code)
    assert.equal(-32601, c.request(5, "prompts/list").error.code)
    assert.equal(-32602, c.request(6, "ping", array{ 1 }).error.code)
    c.raw('{"jsonrpc":"2.0","method":"notifications/whatever"}')
    c.raw('{"jsonrpc":"2.0","id":99,"result":{}}')             -- an answer to us: no answer
    local n = #c.out
    assert.same({}, c.request(7, "ping").result)
    assert.equal(n + 1, #c.out)
    c.raw('[{"jsonrpc":"2.0","id":"x","method":"ping"},{"jsonrpc":"2.0","id":"y","method":"tools/call",'
      .. '"params":{"name":"add","arguments":{"a":1,"b":2}}},{"jsonrpc":"2.0","method":"notifications/initialized"}]')
    assert.is_true(turn_until(function() return json.kind(c.out[#c.out]) == "array" end))
    local batch = c.out[#c.out]
    assert.equal(2, #batch)
    c.close()
  end)

  it("agrees on versions, and serves 2026-07-28 requests on their own", function()
    for _, v in ipairs({ "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" }) do
      local one = serve(fake_page({ groups = GROUPS }))
      assert.equal(v, one.request(v, "initialize", { protocolVersion = v, capabilities = {},
        clientInfo = { name = "x", version = "1" } }).result.protocolVersion)
      one.close()
    end
    local c = serve(fake_page({ groups = GROUPS }))
    assert.equal("2025-11-25", c.request("new", "initialize", { protocolVersion = "2030-01-01" }).result.protocolVersion)
    local m = { _meta = { ["io.modelcontextprotocol/protocolVersion"] = "2026-07-28" } }
    local r = c.request("m1", "tools/list", m).result
    assert.equal("complete", r.resultType)
    assert.same({ 0, "private" }, { r.ttlMs, r.cacheScope })
    assert.equal(-32022, c.request("m2", "tools/list", { _meta = { ["io.modelcontextprotocol/protocolVersion"] = "1.0" } }).error.code)
    c.close()
  end)

  it("answers calls: results, isError for bad arguments and failures, -32602 for an unknown tool", function()
    local c = serve(fake_page({ groups = GROUPS }))
    c.request(1, "initialize", { protocolVersion = "2025-11-25" })
    assert.same({ result = 5 }, c.request(2, "tools/call", { name = "add", arguments = { a = 2, b = 3 } }).result.structuredContent)
    local bad = c.request(3, "tools/call", { name = "devtools.console", arguments = { level = "nope" } }).result
    assert.is_true(bad.isError)
    assert.matches('/level: must be equal to one of the allowed values (got "nope"; allowed: ', bad.content[1].text, 1, true)
    local boom = c.request(4, "tools/call", { name = "boom" }).result
    assert.same({ true, "tool_error: it broke" }, { boom.isError, boom.content[1].text })
    assert.equal(-32602, c.request(5, "tools/call", { name = "none" }).error.code)
    assert.equal(-32602, c.request(6, "tools/call", { name = "add", arguments = "x" }).error.code)
    c.close()
  end)

  it("runs requests as tasks: cancelled ones answer nothing, progress comes while one runs", function()
    local c = serve(fake_page({ groups = GROUPS }))
    c.request(1, "initialize", { protocolVersion = "2025-11-25" })
    c.send({ jsonrpc = "2.0", id = "slow", method = "tools/call", params = { name = "wait", arguments = { s = 30 } } })
    assert.same({}, c.request(2, "ping").result)               -- not behind the slow one
    c.send({ jsonrpc = "2.0", method = "notifications/cancelled", params = { requestId = "slow" } })
    assert.same({}, c.request(3, "ping").result)
    for _, m in ipairs(c.out) do assert.is_false(m.id == "slow") end
    c.send({ jsonrpc = "2.0", id = "p", method = "tools/call",
      params = { name = "wait", arguments = { s = 1.2 }, _meta = { progressToken = 9 } } })
    local r = c.answer("p")
    assert.same({ result = "waited" }, r.result.structuredContent)
    local ticks = {}
    for _, m in ipairs(c.out) do
      if m.method == "notifications/progress" then ticks[#ticks + 1] = m.params.progress end
    end
    assert.is_true(#ticks >= 2, #ticks)
    assert.equal(9, c.out[#c.out - 1].params.progressToken)
    c.close()
  end)

  it("sends list_changed once the list changed, after the handshake, and not for the same list", function()
    local spec = { groups = { { name = "g", tools = { { "one", "1", nil, function() return 1 end } } } } }
    local page = fake_page(spec)
    local c = serve(page)
    c.request(1, "initialize", { protocolVersion = "2025-11-25" })
    assert.equal(1, #c.request(2, "tools/list").result.tools - 4)
    page.changed()                                             -- nothing changed in fact
    assert.is_true(turn_until(function() return not c.srv.watch.refreshing end))
    assert.same({}, c.request(3, "ping").result)
    for _, m in ipairs(c.out) do assert.is_false(m.method == "notifications/tools/list_changed") end
    spec.groups[1].tools[2] = { "two", "2", nil, function() return 2 end }
    page.changed()
    assert.is_true(turn_until(function()
      for _, m in ipairs(c.out) do if m.method == "notifications/tools/list_changed" then return true end end
      return false
    end))
    assert.equal(2, #c.request(4, "tools/list").result.tools - 4)
    c.close()
  end)
end)

-- ---- any bytes, any client ----------------------------------------------------------------

local inits = 0
local function init(c, v)
  inits = inits + 1
  return c.request("init" .. inits, "initialize", { protocolVersion = v or "2025-11-25", capabilities = {},
    clientInfo = { name = "spec", version = "1" } })
end

-- the text written for request id (raw: the id as it appears in the text)
local function text_for(c, raw)
  local pat = '"id":' .. raw .. ','
  local found
  assert(turn_until(function()
    for _, t in ipairs(c.texts) do
      if t:find(pat, 1, true) then found = t return true end
    end
    return false
  end, 10), "no answer with id " .. raw)
  return found
end

describe("mcp.server: any bytes, any client", function()
  it("answers a message that is not UTF-8 with -32700 (its id when readable) and goes on", function()
    local c = serve(fake_page({ groups = GROUPS }))
    init(c)
    local cases = {
      -- the message, the id the answer carries (raw), what it must say
      { '{"jsonrpc":"2.0","id":"x\255","method":"ping"}', "null" },
      { '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ad\255d"}}', "7" },
      { '{"jsonrpc":"2.0","id":8,"method":"pi\255ng"}', "8" },
      { '{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026\255"}}}', "9" },
      { '{"jsonrpc":"2.0","id":"s\192\128","method":"subscriptions/listen","params":{}}', "null" },
      { '{"jsonrpc":"2.0","id":10,"method":"ping","params":{"x":"\237\160\128"}}', "10" },   -- a surrogate's bytes
      { '{"jsonrpc":"2.0","id":11,"method":"ping"}\255', "null" },
    }
    for _, k in ipairs(cases) do
      local before = #c.texts
      c.raw(k[1])
      assert.equal(before + 1, #c.texts, k[1])
      local t = c.texts[#c.texts]
      assert.is_nil(json.utf8_error(t), t)
      local m = json.decode(t)
      assert.equal(-32700, m.error.code, t)
      assert.matches("not UTF-8", m.error.message, 1, true)
      assert.truthy(t:find('"id":' .. k[2] .. ',', 1, true), t)
    end
    -- a notification that is not UTF-8: nothing answered; and the server goes on
    local before = #c.texts
    c.raw('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"\255"}}')
    assert.equal(before, #c.texts)
    assert.same({}, c.request(12, "ping").result)
    assert.same({ result = 3 }, c.request(13, "tools/call", { name = "add", arguments = { a = 1, b = 2 } })
      .result.structuredContent)
    c.close()
  end)

  it("writes ids back byte for byte as the client wrote them", function()
    local c = serve(fake_page({ groups = GROUPS }))
    init(c)
    for _, raw in ipairs({ "1e999", "12345678901234567890", "-0", "1.0", "1E2", '"\\u0041"', '"caf\\u00e9"',
        '"\\ud800"', "9007199254740993", '"a\\/b"' }) do
      c.raw('{"jsonrpc":"2.0","id":' .. raw .. ',"method":"ping"}')
      local t = text_for(c, raw)
      assert.equal('{"jsonrpc":"2.0","id":' .. raw .. ',"result":{}}', t)
    end
    -- through a task (tools/call), an error, and an id after the params
    c.raw('{"jsonrpc":"2.0","method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2},"id":5},'
      .. '"id":12345678901234567891}')
    assert.truthy(text_for(c, "12345678901234567891"):find('"result":', 1, true))
    c.raw('{"jsonrpc":"2.0","id":1e400,"method":"nope/nope"}')
    assert.truthy(text_for(c, "1e400"):find('"code":-32601', 1, true))
    c.close()
  end)

  it("refuses requests other than ping before initialize, and a second initialize", function()
    local c = serve(fake_page({ groups = GROUPS }))
    assert.same({}, c.request(1, "ping").result)
    local e = c.request(2, "tools/list").error
    assert.equal(-32600, e.code)
    assert.matches("before initialize", e.message, 1, true)
    assert.equal(-32600, c.request(3, "tools/call", { name = "add", arguments = { a = 1, b = 2 } }).error.code)
    -- a request that carries its version (2026-07-28) needs no handshake
    assert.truthy(c.request(4, "tools/list", { _meta = { ["io.modelcontextprotocol/protocolVersion"] = "2026-07-28" } })
      .result.tools)
    assert.equal("2025-06-18", init(c, "2025-06-18").result.protocolVersion)
    local again = init(c, "2025-11-25")
    assert.equal(-32600, again.error.code)
    assert.matches("2025-06-18", again.error.message, 1, true)
    -- the session kept its version: no structuredContent before 2025-06-18, so it is there
    assert.same({ result = 3 }, c.request(5, "tools/call", { name = "add", arguments = { a = 1, b = 2 } })
      .result.structuredContent)
    c.close()
  end)

  it("takes batches under 2025-03-26 only; under another version each request gets its error", function()
    local batch = '[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},'
      .. '{"jsonrpc":"2.0","id":1e999,"method":"ping"}]'
    local c = serve(fake_page({ groups = GROUPS }))
    init(c, "2025-06-18")
    local before = #c.texts
    c.raw(batch)
    assert.equal(before + 2, #c.texts)
    for i = before + 1, before + 2 do
      local m = json.decode(c.texts[i])
      assert.equal(-32600, m.error.code)
      assert.matches("batch", m.error.message, 1, true)
    end
    assert.truthy(c.texts[before + 1]:find('"id":"a"', 1, true))
    assert.truthy(c.texts[before + 2]:find('"id":1e999', 1, true))
    c.close()
    local old = serve(fake_page({ groups = GROUPS }))
    init(old, "2025-03-26")
    old.raw(batch)
    local t = old.texts[#old.texts]
    assert.equal("[", t:sub(1, 1))
    assert.truthy(t:find('"id":1e999', 1, true))
    assert.equal(2, #json.decode(t))
    old.close()
  end)

  it("writes a page's lone surrogates as U+FFFD", function()
    local page = fake_page({ groups = { { name = "g", tools = {
      { "lone", "a string with a lone surrogate", nil, function() return json.decode('"a\\ud800b\\udc00"') end },
    } } } })
    local c = serve(page)
    init(c)
    local r = c.request(2, "tools/call", { name = "lone" })
    local t = c.texts[#c.texts]
    assert.is_nil(t:find("\\ud8", 1, true), t)
    assert.is_nil(t:find("\\udc", 1, true), t)
    assert.is_nil(json.utf8_error(t))
    assert.same({ result = "a\239\191\189b\239\191\189" }, r.result.structuredContent)
    c.close()
  end)

  it("stops reading while MAX_INFLIGHT requests run, and reads again when one ends", function()
    local c = serve(fake_page({ groups = GROUPS }))
    init(c)
    local server = require "devtools_tools.mcp.server"
    for i = 1, server.MAX_INFLIGHT do
      c.send({ jsonrpc = "2.0", id = "w" .. i, method = "tools/call", params = { name = "wait", arguments = { s = 30 } } })
      assert.equal(i < server.MAX_INFLIGHT and 0 or 1, c.held.busy or 0, i)
    end
    c.send({ jsonrpc = "2.0", method = "notifications/cancelled", params = { requestId = "w1" } })
    assert.is_true(turn_until(function() return c.held.busy == 0 end))
    c.close()
  end)
end)

describe("mcp.server: provenance and navigation", function()
  it("says in each page tool result's _meta that the page wrote it, and in built-ins' page data", function()
    local c = serve(fake_page({ groups = GROUPS }))
    init(c)
    local r = c.request(2, "tools/call", { name = "add", arguments = { a = 1, b = 2 } }).result
    assert.same({ source = "page", page = "http://fake.test", trusted = false }, r._meta["devtools-tools/provenance"])
    local boom = c.request(3, "tools/call", { name = "boom" }).result
    assert.is_true(boom.isError)
    assert.equal("page", boom._meta["devtools-tools/provenance"].source)
    local list = c.request(4, "tools/list").result.tools
    assert.matches("%(Provided by the page at http://fake%.test%.%)$", list[1].description)
    assert.matches("Provided by the page", c.out[1].result.instructions, 1, true)
    c.close()
    local own = serve(fake_page({ groups = GROUPS }), { trust_page = true })
    init(own)
    assert.equal("adds", own.request(2, "tools/list").result.tools[1].description)
    assert.is_true(own.request(3, "tools/call", { name = "add", arguments = { a = 1, b = 2 } })
      .result._meta["devtools-tools/provenance"].trusted)
    own.close()
  end)

  local refusals = {
    -- url, allowed?, allow_navigate, the page's own URL
    { "http://169.254.169.254/latest/meta-data/", false },
    { "http://2852039166/", false },                     -- the same, as a number
    { "http://0xA9FEA9FE/", false },
    { "http://[::ffff:169.254.169.254]/", false },
    { "http://metadata.google.internal/computeMetadata/v1/", false },
    { "http://10.0.0.8/", false },
    { "http://192.168.1.1/admin", false },
    { "http://172.20.0.1:8080/", false },
    { "http://[fd00:ec2::254]/", false },
    { "http://[fe80::1]/", false },
    { "http://0.0.0.0:8080/", false },
    { "http://10.0.0.8/", true, { "10.0.0.8" } },
    { "http://10.0.0.8:9000/", true, nil, "http://10.0.0.8:3000/" },  -- the page's own host
    { "http://127.0.0.1:9/x", true },
    { "http://localhost:3000/", true },
    { "https://example.com/", true },
  }
  for _, k in ipairs(refusals) do
    it("devtools.navigate " .. (k[2] and "loads " or "refuses ") .. k[1]
        .. (k[3] and " (allowed)" or k[4] and " (the page's own host)" or ""), function()
      local page = fake_page({ groups = GROUPS })
      if k[4] then page.url = k[4] end
      local went
      function page.navigate(_, url) went = url end
      local c = serve(page, { allow_navigate = k[3] })
      init(c)
      local r = c.request(2, "tools/call", { name = "devtools.navigate", arguments = { url = k[1] } }).result
      if k[2] then
        assert.is_nil(r.isError, r.content[1].text)
        assert.equal(k[1], went)
      else
        assert.is_true(r.isError)
        assert.matches("is refused", r.content[1].text, 1, true)
        assert.matches("--allow-navigate", r.content[1].text, 1, true)
        assert.is_nil(went)
      end
      c.close()
    end)
  end
end)

describe("mcp.server: the page comes up after the server", function()
  local start = require "devtools_tools.mcp.start"
  local pause
  before_each(function() pause = start.FIRST_PAUSE start.FIRST_PAUSE = 0.01 end)
  after_each(function() start.FIRST_PAUSE = pause end)

  it("answers at once, serves the built-ins, says what was tried, and sends list_changed when the page is up", function()
    local page = fake_page({ groups = GROUPS })
    local tried, app_up, logged = 0, false, {}
    local function open(n)
      tried = n
      dt.sleep(0.01)
      if not app_up then error(dt.new_error("protocol_error", "navigate: net::ERR_CONNECTION_REFUSED"), 0) end
      return page
    end
    local c = serve(nil, { open = open, url = "http://127.0.0.1:3000/",
      log = function(line) logged[#logged + 1] = line end })
    -- initialize is answered before any attempt ended
    c.raw(json.encode({ jsonrpc = "2.0", id = 1, method = "initialize", params = { protocolVersion = "2025-11-25" } }))
    assert.equal(1, #c.out)
    assert.equal("2025-11-25", c.out[1].result.protocolVersion)
    c.send({ jsonrpc = "2.0", method = "notifications/initialized" })
    -- the built-ins only, once the first attempt failed
    local list = c.request(2, "tools/list").result.tools
    assert.equal(4, #list)
    assert.equal("devtools.navigate", list[1].name)
    local r = c.request(3, "tools/call", { name = "add", arguments = { a = 1, b = 2 } }).result
    assert.is_true(r.isError)
    assert.matches("The page is not up yet: http://127.0.0.1:3000/", r.content[1].text, 1, true)
    assert.matches("ERR_CONNECTION_REFUSED", r.content[1].text, 1, true)
    assert.is_true(c.request(4, "tools/call", { name = "devtools.screenshot" }).result.isError)
    -- retried, said once (not at every attempt)
    assert.is_true(turn_until(function() return tried >= 4 end))
    assert.equal(1, #logged)
    assert.matches("not up yet", logged[1], 1, true)
    app_up = true
    assert.is_true(turn_until(function()
      for _, m in ipairs(c.out) do if m.method == "notifications/tools/list_changed" then return true end end
      return false
    end))
    assert.equal(7, #c.request(5, "tools/list").result.tools)
    assert.same({ result = 3 }, c.request(6, "tools/call", { name = "add", arguments = { a = 1, b = 2 } })
      .result.structuredContent)
    assert.matches("the page is up", logged[#logged], 1, true)
    c.close()
  end)

  it("lets a first tools/list wait for the first attempt, and sends no list_changed then", function()
    local page = fake_page({ groups = GROUPS })
    local c = serve(nil, { open = function() dt.sleep(0.3) return page end, url = "http://127.0.0.1:3000/" })
    init(c)
    assert.equal(7, #c.request(2, "tools/list").result.tools)
    assert.same({}, c.request(3, "ping").result)
    for _, m in ipairs(c.out) do assert.is_false(m.method == "notifications/tools/list_changed") end
    c.close()
  end)

  it("stops trying after a failure no retry changes, and says so", function()
    local n = 0
    local c = serve(nil, { open = function() n = n + 1 error(dt.new_error("bad_argument", "no such tab"), 0) end,
      url = "x" })
    init(c)
    local r = c.request(2, "tools/call", { name = "add" }).result
    assert.matches("cannot be opened: bad_argument: no such tab", r.content[1].text, 1, true)
    dt.sleep(0.1)
    assert.equal(1, n)
    c.close()
  end)

  it("cancels the attempt under way when it closes", function()
    local cancelled
    local c = serve(nil, { open = function()
      local ok, err = pcall(dt.sleep, 30)
      cancelled = not ok and err.code
      error(err, 0)
    end, url = "x" })
    init(c)
    c.close()
    assert.is_true(turn_until(function() return cancelled ~= nil end))
    assert.equal("cancelled", cancelled)
  end)
end)

describe("mcp.stdio: bounded output", function()
  it("stops reading while more than max_pending bytes wait to be written, and reads again as they go", function()
    -- our output: a pipe nobody reads until the file go is there; our input: a pipe the spec writes
    local dir = assert(core.fs.mkdtemp("dt-mcp-stdio-"))
    local sink, sfds = assert(core.process.spawn({ "/bin/sh", "-c",
      "while [ ! -e '" .. dir .. "/go' ]; do sleep 0.02; done; cat >/dev/null" }, { stdio = true }))
    local src, ifds = assert(core.process.spawn({ "/bin/cat" }, { stdio = true }))
    local t = stdio.new({ input = ifds.stdout, output = sfds.stdin, max_pending = 256 * 1024 })
    local got = 0
    local reply = ("r"):rep(100 * 1024)
    t:start({ message = function() got = got + 1 t:send(reply) end, close = function() end })
    local lines = {}
    for i = 1, 50 do lines[i] = '{"n":' .. i .. "}" end
    assert(core.fd.write(ifds.stdin, table.concat(lines, "\n") .. "\n"))
    assert.is_true(turn_until(function() return got >= 2 end, 10))
    turn_until(function() return got > 6 end, 0.5)
    -- the pipe took its 64 KiB, the queue the rest up to the bound: a few, not 50
    assert.is_true(got <= 6, got)
    assert.is_true(t:pending() <= 256 * 1024 + #reply, t:pending())
    io.open(dir .. "/go", "w"):close()                       -- the reader reads now
    assert.is_true(turn_until(function() return got == 50 end, 10), got)
    assert.is_true(turn_until(function() return t:pending() == 0 end, 10))
    t:close()
    core.fd.close(ifds.stdin)
    src:close()
    sink:close()
    core.fd.close(ifds.stdout)
    core.fd.close(sfds.stdin)
    core.fs.rmtree(dir)
  end)
end)
