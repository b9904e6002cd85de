-- Unit: the page's console and network records and the WebMCP registry
-- over a fake transport of our own (spec/support/fake_browser.lua):
-- scripted CDP events for what a real page rarely shows on demand
-- (redirects, a full ring, a vanished object, an iframe's session).

local dt = require "devtools_tools"
local F = require "support.fake_browser"
local H = require "helper"

local function open(history)
  local fake = F.page_target("http://127.0.0.1/app")
  local b = F.browser(fake)
  b.history = history
  local page = b:new_page()
  return page, fake
end

local function sent(fake, i, method, params)
  fake:event(method, params, "S1")
  return i
end

describe("network records (fake transport)", function()
  it("a redirect ends one record and starts the next, under the same request id", function()
    local page, fake = open()
    sent(fake, 1, "Network.requestWillBeSent", { requestId = "R1", timestamp = 10,
      request = { method = "GET", url = "http://127.0.0.1/old" }, type = "Document",
      initiator = { type = "other" } })
    sent(fake, 2, "Network.requestWillBeSent", { requestId = "R1", timestamp = 10.5,
      request = { method = "GET", url = "http://127.0.0.1/new" }, type = "Document",
      initiator = { type = "other" },
      redirectResponse = { status = 302, statusText = "Found", mimeType = "text/html", headers = {} } })
    sent(fake, 3, "Network.responseReceived", { requestId = "R1", timestamp = 10.7, type = "Document",
      response = { status = 200, mimeType = "text/html", headers = {} } })
    sent(fake, 4, "Network.dataReceived", { requestId = "R1", dataLength = 100, encodedDataLength = 50 })
    sent(fake, 5, "Network.dataReceived", { requestId = "R1", dataLength = 20, encodedDataLength = 10 })
    sent(fake, 6, "Network.loadingFinished", { requestId = "R1", timestamp = 11, encodedDataLength = 300 })
    local reqs = page:network_requests()
    assert.equal(2, #reqs)
    assert.equal("http://127.0.0.1/old", reqs[1].url)
    assert.equal(302, reqs[1].status)
    assert.equal("http://127.0.0.1/new", reqs[1].redirected_to)
    assert.is_true(reqs[1].done)
    assert.equal(0.5, reqs[1].timing.duration)
    assert.equal(200, reqs[2].status)
    assert.equal(120, reqs[2].sizes.body)
    assert.equal(300, reqs[2].sizes.transferred)
    assert.equal(0.5, reqs[2].timing.duration)          -- from the redirect on
    assert.same({ reqs[2] }, page:network_requests({ url = "/new" }))
    assert.same({ reqs[1] }, page:network_requests({ url = function(u) return u:find("old") end }))
  end)

  it("the ring drops the oldest records, in flight or not, and forgets them", function()
    local page, fake = open({ requests = 3, console = 2 })
    for i = 1, 10 do
      sent(fake, i, "Network.requestWillBeSent", { requestId = "R" .. i, timestamp = i,
        request = { method = "GET", url = "http://127.0.0.1/" .. i }, initiator = { type = "script" } })
      fake:event("Runtime.consoleAPICalled", { type = "log", args = { { type = "number", value = i } } }, "S1")
    end
    -- a late event for a dropped request changes nothing
    sent(fake, 11, "Network.loadingFinished", { requestId = "R1", timestamp = 20 })
    local reqs = page:network_requests()
    assert.same({ "http://127.0.0.1/8", "http://127.0.0.1/9", "http://127.0.0.1/10" },
      { reqs[1].url, reqs[2].url, reqs[3].url })
    local inflight = 0
    for _ in pairs(page.observation.inflight) do inflight = inflight + 1 end
    assert.equal(3, inflight)              -- only what the ring still holds
    local msgs = page:console_messages()
    assert.same({ { 9 }, { 10 } }, { msgs[1].args, msgs[2].args })
  end)

  it("a ring holds at most history.bytes of page text, the newest record whatever its size", function()
    local page, fake = open({ bytes = 100 })
    local function log(...)
      local args = {}
      for i, v in ipairs({ ... }) do args[i] = { type = "string", value = v } end
      fake:event("Runtime.consoleAPICalled", { type = "log", args = args }, "S1")
    end
    local function texts()
      local out = {}
      for i, m in ipairs(page:console_messages()) do out[i] = m.text end
      return out
    end
    local a, b, c = ("a"):rep(45), ("b"):rep(45), ("c"):rep(45)
    log(a)
    log(b)                                   -- one argument: its text is counted once (90 bytes)
    assert.same({ a, b }, texts())
    log(c)
    assert.same({ b, c }, texts())
    log("x", "y")                            -- "x y" and the two arguments: 5 bytes (95 in all)
    assert.same({ b, c, "x y" }, texts())
    log("0123456789")                        -- 105: b goes
    assert.same({ c, "x y", "0123456789" }, texts())
    local big = ("z"):rep(300)
    log(big)
    assert.same({ big }, texts())            -- over the budget alone: kept, the rest dropped
    log("small")
    assert.same({ "small" }, texts())
    -- requests: their URLs and bodies count; one that falls out is forgotten
    for i = 1, 3 do
      sent(fake, i, "Network.requestWillBeSent", { requestId = "R" .. i, timestamp = i,
        request = { method = "POST", url = "http://127.0.0.1/" .. i, postData = ("p"):rep(30) },
        initiator = { type = "script" } })
    end
    local reqs = page:network_requests()       -- 49 bytes each: two fit in 100
    assert.same({ "http://127.0.0.1/2", "http://127.0.0.1/3" }, { reqs[1].url, reqs[2].url })
    assert.is_nil(reqs[3])
    assert.is_nil(page.observation.inflight["S1\0R1"])
    assert.equal(reqs[1], page.observation.inflight["S1\0R2"])
  end)
end)

describe("every page string a record holds counts (fake transport)", function()
  local KB = ("k"):rep(1000)
  it("console: where it came from, an exception's message and stack, a dialog's default", function()
    local page, fake = open({ bytes = 2500 })
    local function sizes()
      local r, out = page.observation.console, {}
      for i = r.first, r.last do out[#out + 1] = r.sizes[i] end
      return out
    end
    fake:event("Runtime.consoleAPICalled", { type = "log", args = { { type = "string", value = "hi" } },
      stackTrace = { callFrames = { { url = KB, functionName = "f", lineNumber = 1, columnNumber = 2 } } } }, "S1")
    page.conn:poll()
    assert.same({ 2 + 1000 + 1 }, sizes())
    fake:event("Runtime.exceptionThrown", { exceptionDetails = { text = "Uncaught", lineNumber = 1,
      exception = { type = "object", subtype = "error", description = "Error: " .. KB } } }, "S1")
    page.conn:poll()
    -- "Uncaught Error: k..." (1016), the message (1007) and the stack (1007): 3030, the first goes
    assert.same({ 3030 }, sizes())
    fake:event("Page.javascriptDialogOpening", { type = "prompt", message = "m", defaultPrompt = KB,
      url = "u" }, "S1")
    page.conn:poll()
    assert.same({ 1 + 1000 + 1 }, sizes())
  end)

  it("requests: headers, document, initiator, and the response's headers when they come", function()
    local page, fake = open({ bytes = 5000 })
    local function sent_req(id)
      fake:event("Network.requestWillBeSent", { requestId = id, timestamp = 1, documentURL = KB,
        request = { method = "GET", url = "u", headers = { ["X-Big"] = KB } },
        initiator = { type = "script", url = KB } }, "S1")
    end
    sent_req("R1")
    page.conn:poll()
    local r = page.observation.requests
    assert.equal(1 + 5 + 1000 + 1000 + 1000, r.bytes)
    fake:event("Network.responseReceived", { requestId = "R1", timestamp = 2,
      response = { status = 200, statusText = "OK", mimeType = "text/plain", headers = { ["Y"] = KB } } }, "S1")
    page.conn:poll()
    assert.equal(3006 + 2 + 10 + 1001, r.bytes)
    sent_req("R2")                          -- 4019 + 3006 > 5000: R1 goes, though its record grew later
    page.conn:poll()
    local reqs = page:network_requests()
    assert.equal(1, #reqs)
    assert.equal(3006, r.bytes)
  end)

  it("an object argument read by value holds what it read", function()
    local page, fake = open({ bytes = 2000 })
    fake.on["Runtime.callFunctionOn"] = function()
      return { result = { type = "object", value = { s = KB } } }
    end
    for _ = 1, 3 do
      fake:event("Runtime.consoleAPICalled", { type = "log", args = {
        { type = "object", objectId = "O", description = "Object" } } }, "S1")
    end
    assert.equal(3, #page:console_messages())      -- "Object" each: 6 bytes, all kept until read
    local r = page.observation.console
    assert.equal(1, r.last - r.first + 1)          -- read: 1000 bytes and more each, one fits
    assert.is_true(r.bytes > 1000)
  end)
end)

describe("network records: the rest (fake transport)", function()
  it("an iframe's document, sent on the parent's session, finishes on its own session", function()
    local page, fake = open()
    fake:event("Target.attachedToTarget", { sessionId = "S2", waitingForDebugger = false,
      targetInfo = { type = "iframe", targetId = "T2", url = "http://localhost/frame", parentFrameId = "F1" } }, "S1")
    fake:event("Network.requestWillBeSent", { requestId = "L9", timestamp = 1, type = "Document",
      request = { method = "GET", url = "http://localhost/frame" }, initiator = { type = "parser" } }, "S1")
    fake:event("Network.responseReceived", { requestId = "L9", timestamp = 2, type = "Document",
      response = { status = 200, mimeType = "text/html", headers = {} } }, "S2")
    fake:event("Network.loadingFinished", { requestId = "L9", timestamp = 3, encodedDataLength = 10 }, "S2")
    local rec = page:network_requests()[1]
    assert.equal(200, rec.status)
    assert.is_true(rec.done)
    assert.is_nil(next(page.observation.inflight))
    assert.is_nil(next(page.observation.by_id))
  end)

  it("a dedicated worker stays attached for its requests: its script's answer comes on its session", function()
    local page, fake = open()
    fake:event("Network.requestWillBeSent", { requestId = "W1", timestamp = 1, type = "Script",
      request = { method = "GET", url = "http://127.0.0.1/w.js" }, initiator = { type = "script" } }, "S1")
    fake:event("Target.attachedToTarget", { sessionId = "SW", waitingForDebugger = false,
      targetInfo = { type = "worker", targetId = "TW", url = "http://127.0.0.1/w.js" } }, "S1")
    page.conn:poll()
    assert.same({ "Network.enable", "Target.setAutoAttach", "Runtime.runIfWaitingForDebugger" },
      fake:methods("SW"))                                 -- its own workers come too
    assert.equal(0, fake:count("Target.detachFromTarget"))
    fake:event("Network.loadingFinished", { requestId = "W1", timestamp = 2 }, "SW")
    fake:event("Network.requestWillBeSent", { requestId = "W2", timestamp = 3, type = "Fetch",
      request = { method = "GET", url = "http://127.0.0.1/from-worker" }, initiator = { type = "script" } }, "SW")
    -- a worker it starts, attached through its session, with a request in flight
    fake:event("Target.attachedToTarget", { sessionId = "SW2", waitingForDebugger = false,
      targetInfo = { type = "worker", targetId = "TW2", url = "http://127.0.0.1/inner.js" } }, "SW")
    fake:event("Network.requestWillBeSent", { requestId = "W4", timestamp = 3, type = "Fetch",
      request = { method = "GET", url = "http://127.0.0.1/from-inner" }, initiator = { type = "script" } }, "SW2")
    local reqs = page:network_requests()
    assert.is_true(reqs[1].done)                          -- it stayed loading for ever
    assert.equal("http://127.0.0.1/from-worker", reqs[2].url)
    assert.equal("SW", reqs[2].session)
    assert.equal("SW2", reqs[3].session)
    -- once it is gone, its session and its own worker's are forgotten, and
    -- what they had in flight is cancelled (Chromium says nothing more)
    fake:event("Target.detachedFromTarget", { sessionId = "SW" }, "S1")
    page.conn:poll()
    for i = 2, 3 do
      assert.is_true(reqs[i].done)
      assert.equal("net::ERR_ABORTED (its document went away)", reqs[i].failed)
    end
    assert.is_nil(next(page.worker_sessions))
    assert.is_nil(page.conn.listeners.SW)
    assert.is_nil(page.conn.listeners.SW2)
    fake:event("Network.requestWillBeSent", { requestId = "W3", timestamp = 4,
      request = { method = "GET", url = "http://127.0.0.1/after" }, initiator = { type = "script" } }, "SW")
    assert.equal(3, #page:network_requests())
    -- anything else is still let go
    fake:event("Target.attachedToTarget", { sessionId = "SX", waitingForDebugger = false,
      targetInfo = { type = "shared_worker", targetId = "TX", url = "http://127.0.0.1/s.js" } }, "S1")
    page.conn:poll()
    assert.equal(1, fake:count("Target.detachFromTarget"))
  end)

  it("a redirect has no body; a record dropped in flight says so and is asked for at once", function()
    local page, fake = open({ requests = 2 })
    fake:event("Network.requestWillBeSent", { requestId = "R1", timestamp = 1,
      request = { method = "GET", url = "http://127.0.0.1/old" }, initiator = { type = "other" } }, "S1")
    fake:event("Network.requestWillBeSent", { requestId = "R1", timestamp = 2,
      request = { method = "GET", url = "http://127.0.0.1/new" }, initiator = { type = "other" },
      redirectResponse = { status = 302, headers = {} } }, "S1")
    fake:event("Network.loadingFinished", { requestId = "R1", timestamp = 3 }, "S1")
    local hop = page:network_requests()[1]
    local e = H.error_of(page.response_body, page, hop)
    assert.equal("protocol_error", e.code)
    assert.equal("response_body: http://127.0.0.1/old is a redirect (to http://127.0.0.1/new): it has no body",
      e.message)
    assert.equal(0, fake:count("Network.getResponseBody"))
    -- in flight when it fell out: nothing will finish it
    fake:event("Network.requestWillBeSent", { requestId = "R2", timestamp = 4,
      request = { method = "GET", url = "http://127.0.0.1/slow" }, initiator = { type = "other" } }, "S1")
    local slow = page:network_requests()[2]
    for i = 3, 4 do
      fake:event("Network.requestWillBeSent", { requestId = "R" .. i, timestamp = 5,
        request = { method = "GET", url = "http://127.0.0.1/" .. i }, initiator = { type = "other" } }, "S1")
    end
    page.conn:poll()
    assert.is_true(slow.dropped)
    assert.is_false(slow.done)
    fake.on["Network.getResponseBody"] = function() return { body = "late" } end
    assert.equal("late", page:response_body(slow, { timeout = 30 }))
  end)

  it("a document that goes away cancels what it had in flight; the next one's requests go on", function()
    local page, fake = open()
    local function req(id, url, loader, frame)
      fake:event("Network.requestWillBeSent", { requestId = id, timestamp = 1, loaderId = loader,
        frameId = frame or "F1", request = { method = "GET", url = url }, initiator = { type = "script" } }, "S1")
    end
    req("A", "http://127.0.0.1/hang", "L1")
    req("B", "http://127.0.0.1/next", "L2")              -- the new document's own request
    req("C", "http://127.0.0.1/in-frame", "L7", "F2")
    fake:event("Page.frameNavigated", { frame = { id = "F1", loaderId = "L2", url = "http://127.0.0.1/next",
      securityOrigin = "http://127.0.0.1" } }, "S1")
    local reqs = page:network_requests()
    assert.is_true(reqs[1].done)
    assert.equal("net::ERR_ABORTED (its document went away)", reqs[1].failed)
    assert.is_true(reqs[1].canceled)
    assert.is_false(reqs[2].done)
    assert.is_nil(reqs[2].failed)
    assert.is_false(reqs[3].done)
    fake:event("Page.frameDetached", { frameId = "F2", reason = "remove" }, "S1")
    assert.equal("net::ERR_ABORTED (its document went away)", page:network_requests()[3].failed)
    assert.equal("protocol_error", H.error_of(page.response_body, page, reqs[1]).code)
  end)

  it("a mark comes after what already happened", function()
    local page, fake = open()
    fake:event("Runtime.consoleAPICalled", { type = "log", args = { { type = "string", value = "before" } } }, "S1")
    local mark = page:mark()
    fake:event("Runtime.consoleAPICalled", { type = "log", args = { { type = "string", value = "after" } } }, "S1")
    local msgs = page:console_messages({ since = mark })
    assert.equal(1, #msgs)
    assert.equal("after", msgs[1].text)
  end)
end)

describe("console records (fake transport)", function()
  it("null and numbers read as JavaScript writes them; a throw of null too", function()
    local page, fake = open()
    fake:event("Runtime.consoleAPICalled", { type = "log", args = {
      { type = "object", subtype = "null", value = dt.null },
      { type = "number", value = 0.30000000000000004, description = "0.30000000000000004" },
      { type = "number", value = 1 / 3, description = "0.3333333333333333" },
      { type = "boolean", value = true, description = "true" } } }, "S1")
    fake:event("Runtime.exceptionThrown", { exceptionDetails = { text = "Uncaught",
      exception = { type = "object", subtype = "null", value = dt.null } } }, "S1")
    fake:event("Runtime.exceptionThrown", { exceptionDetails = { text = "Uncaught",
      exception = { type = "number", value = 0.30000000000000004, description = "0.30000000000000004" } } }, "S1")
    local msgs = page:console_messages()
    assert.equal("null 0.30000000000000004 0.3333333333333333 true", msgs[1].text)
    assert.equal("Uncaught null", msgs[2].text)
    assert.equal("null", msgs[2].exception.message)
    assert.equal("0.30000000000000004", msgs[3].exception.message)
  end)

  it("an object not read by the deadline (a busy page) keeps its description, and is asked for again", function()
    local page, fake = open()
    local busy = true
    fake.on["Runtime.callFunctionOn"] = function()
      if busy then return F.NO_REPLY end
      return { result = { type = "object", value = { step = 1 } } }
    end
    fake:event("Runtime.consoleAPICalled", { type = "log", args = {
      { type = "string", value = "starting" }, { type = "object", objectId = "O1", description = "Object" } } }, "S1")
    local m = page:console_messages({ timeout = 5 })[1]      -- the fake answers nothing: a timeout at once
    assert.equal("Object", m.args[2])
    busy = false
    assert.same({ step = 1 }, page:console_messages({ timeout = 5 })[1].args[2])
    assert.equal(2, fake:count("Runtime.callFunctionOn"))
  end)

  it("a listener's error that cannot be shown is still a listener_error record", function()
    local page, fake = open()
    page:on("console", function()
      error(setmetatable({}, { __tostring = function() error("no message yet") end }))
    end)
    fake:event("Runtime.consoleAPICalled", { type = "log", args = { { type = "string", value = "x" } } }, "S1")
    local msgs = page:console_messages()
    assert.equal("x", msgs[1].text)
    assert.equal("listener_error", msgs[2].type)
    assert.equal("a page:on(console) listener failed: (a table that cannot be shown)", msgs[2].text)
  end)

end)

describe("console records, more (fake transport)", function()
  it("objects are read by value when asked for; one that is gone keeps its description", function()
    local page, fake = open()
    fake.on["Runtime.callFunctionOn"] = function(p)
      if p.objectId == "O1" then return { result = { type = "object", value = { a = 1 } } } end
      return { error = { code = -32000, message = "Could not find object with given id" } }
    end
    fake:event("Runtime.consoleAPICalled", { type = "warning", executionContextId = 7, args = {
      { type = "string", value = "x" }, { type = "object", objectId = "O1", description = "Object" },
      { type = "object", objectId = "O2", className = "Map", description = "Map(1)" },
      { type = "undefined" }, { type = "number", unserializableValue = "NaN", description = "NaN" },
    } }, "S1")
    local m = page:console_messages()[1]
    assert.equal("warning", m.level)
    assert.equal("F1", m.frame)
    assert.equal("x Object Map(1) undefined NaN", m.text)
    assert.equal("x", m.args[1])
    assert.same({ a = 1 }, m.args[2])
    assert.equal("Map(1)", m.args[3])
    assert.equal(dt.null, m.args[4])
    assert.is_true(m.args[5] ~= m.args[5])
    assert.equal(2, fake:count("Runtime.callFunctionOn"))
    page:console_messages()                 -- read once: not asked again
    assert.equal(2, fake:count("Runtime.callFunctionOn"))
  end)

  it("an out-of-process iframe gets the same domains enabled on its session", function()
    local page, fake = open()
    fake:event("Target.attachedToTarget", { sessionId = "S2", waitingForDebugger = false,
      targetInfo = { type = "iframe", targetId = "T2", url = "http://localhost/w", parentFrameId = "F1" } }, "S1")
    page.conn:poll()
    local on_s2 = fake:methods("S2")
    for _, m in ipairs({ "Network.enable", "Log.enable", "WebMCP.enable" }) do
      local found = false
      for _, x in ipairs(on_s2) do if x == m then found = true end end
      assert.is_true(found, m .. " on the iframe's session")
    end
    assert.equal("bad_argument", H.error_of(page.on_cdp, page, "not an event", print).code)
  end)
end)

describe("WebMCP registry (fake transport)", function()
  it("follows toolsAdded, toolsRemoved and navigation, with names as data", function()
    local page, fake = open()
    F.with_tools(fake, {})
    fake:event("WebMCP.toolsAdded", { tools = {
      { name = "__index", description = "odd name", frameId = "F1", inputSchema = { type = "object" } },
      { name = "b", description = "no schema", frameId = "F1" },
      { name = 42, frameId = "F1" },                           -- not a tool: skipped
    } }, "S1")
    local groups = page:discover()
    assert.equal(1, #groups)
    assert.equal("webmcp", groups[1].kind)
    assert.equal("__index", groups[1].tools[1].name)
    assert.same({ type = "object" }, groups[1]:tool("b").input_schema)
    fake:event("WebMCP.toolsRemoved", { tools = { { name = "b", frameId = "F1" } } }, "S1")
    assert.is_nil(page:tool("b"))
    assert.equal("__index", page:tool("__index").name)
    fake:event("Page.frameNavigated", { frame = { id = "F1", url = "http://127.0.0.1/next",
      loaderId = "L2", securityOrigin = "http://127.0.0.1" } }, "S1")
    assert.same({}, page:discover())
  end)

  it("keeps thousands of tools registered one at a time, replaced and removed, in order", function()
    -- one event per tool, as registerTool sends them (looking through the
    -- list for each made 10,000 take 16 s, past any deadline)
    local page, fake = open()
    F.with_tools(fake, {})
    local n = 20000
    for i = 1, n do
      fake:event("WebMCP.toolsAdded", { tools = { { name = "t" .. i, description = "first", frameId = "F1" } } }, "S1")
    end
    for i = 1, n, 2 do                                  -- every odd one removed
      fake:event("WebMCP.toolsRemoved", { tools = { { name = "t" .. i, frameId = "F1" } } }, "S1")
    end
    fake:event("WebMCP.toolsAdded", { tools = { { name = "t2", description = "again", frameId = "F1" } } }, "S1")
    -- (bounded by this process's CPU time: a loaded machine that deschedules
    -- us moves the wall clock, not it; quadratic bookkeeping took minutes)
    local c0 = os.clock()
    local groups = page:discover({ timeout = 60 })
    assert.is_true(os.clock() - c0 < 5)
    local list = groups[1].tools
    assert.equal(n / 2, #list)
    assert.equal("t4", list[1].name)
    assert.equal("t" .. n, list[#list - 1].name)
    assert.equal("t2", list[#list].name)                -- registered again: last, as Chromium lists it
    assert.equal("again", list[#list].description)
  end)
end)
