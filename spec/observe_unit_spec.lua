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
    for _ in pairs(page._obs.inflight) do inflight = inflight + 1 end
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
    assert.is_nil(page._obs.inflight["S1\0R1"])
    assert.equal(reqs[1], page._obs.inflight["S1\0R2"])
  end)
end)

describe("console records (fake transport)", function()
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
end)
