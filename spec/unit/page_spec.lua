-- Unit: page, discovery and browser over a fake transport of our own
-- (spec/support/fake_browser.lua): no Chromium, scripted CDP replies.

local dt = require "devtools_tools"
local discovery = require "devtools_tools.tools.discovery"
local F = require "support.fake_browser"
local H = require "helper"

local function open(url)
  local fake = F.page_target(url or "http://127.0.0.1/app")
  local b = F.browser(fake)
  local page = b:new_page()
  return page, fake, b
end

-- An out-of-process iframe: session sid for frame tid (a child of F1), its
-- frame tree and its context (id ctx_id) served by the fake, attached to
-- the page. Returns the context's executionContextCreated params (a new
-- document in the iframe is that event again).
local function oopif(page, fake, sid, tid, ctx_id)
  local tree, enable = fake.on["Page.getFrameTree"], fake.on["Runtime.enable"]
  local context = { context = { id = ctx_id, uniqueId = "u" .. ctx_id, origin = "http://localhost",
    auxData = { isDefault = true, frameId = tid } } }
  fake.on["Page.getFrameTree"] = function(p, s, msg, f)
    if s ~= sid then return tree(p, s, msg, f) end
    return { frameTree = { frame = { id = tid, parentId = "F1", url = "http://localhost/frame",
      securityOrigin = "http://localhost", loaderId = "L" .. ctx_id } } }
  end
  fake.on["Runtime.enable"] = function(p, s, msg, f)
    if s ~= sid then return enable(p, s, msg, f) end
    f:event("Runtime.executionContextCreated", context, s)
    return {}
  end
  fake:event("Target.attachedToTarget", { sessionId = sid, waitingForDebugger = false,
    targetInfo = { type = "iframe", targetId = tid, url = "http://localhost/frame", parentFrameId = "F1" } }, "S1")
  page.conn:poll()
  return context
end

-- The ids of the frames the page knows, sorted.
local function frame_ids(page)
  local ids = {}
  for id in pairs(page.frames) do ids[#ids + 1] = id end
  table.sort(ids)
  return ids
end

local ADD = { index = 0, name = "g", tools = { { name = "add", description = "adds",
  inputSchema = { type = "object", properties = { a = { type = "number" } }, required = { "a" } } } } }

describe("page (fake transport)", function()
  it("attaches with every set-up command written before the first reply is read", function()
    local page, fake = open()
    assert.same({ "Network.enable", "Log.enable", "WebMCP.enable", "Page.enable",
      "Page.setLifecycleEventsEnabled", "Runtime.enable", "Target.setAutoAttach",
      "Page.getFrameTree" }, fake:methods("S1"))
    assert.equal("F1", page.docs.main_frame)
    assert.equal("http://127.0.0.1/app", page.url)
    assert.equal("Page(http://127.0.0.1/app)", tostring(page))
  end)

  it("refuses unknown option keys before sending anything", function()
    local page, fake = open()
    local n = #fake.sent
    for _, c in ipairs({
      { page.evaluate, page, "1", { timout = 1 } }, { page.call, page, "x", nil, { timout = 1 } },
      { page.discover, page, { wait = true } }, { page.reload, page, { timeout = "1" } },
      { page.call_many, page, {}, { error = "return" } }, { page.wait_for_tool, page, "x", { tiemout = 1 } },
    }) do
      assert.equal("bad_argument", H.error_of(table.unpack(c)).code)
    end
    assert.equal(n, #fake.sent)
  end)

  it("refuses option values of the wrong type, naming the option, before anything is sent", function()
    local page, fake = open()
    local n = #fake.sent
    for _, c in ipairs({
      { "context must be a number, got string", page.evaluate, page, "1", { context = "x" } },
      { "context must be a number, got NaN", page.evaluate, page, "1", { context = 0 / 0 } },
      { "session must be a string, got 5", page.evaluate, page, "1", { session = 5 } },
      { "session must be a string, got -2$", page.evaluate, page, "1", { session = -2.0 } },   -- not -2.0
      { "session must be a string, got 2147483648$", page.evaluate, page, "1", { session = 2 ^ 31 } },
      { "ignore_cache must be a boolean, got string", page.reload, page, { ignore_cache = "x" } },
      { "full_page must be a boolean, got string", page.screenshot, page, { full_page = "yes" } },
      { "path must be a string, got 5", page.screenshot, page, { path = 5 } },
      { "settle must be a non-negative number of seconds, got NaN", page.observe, page, function() end,
        { settle = 0 / 0 } },
      { "timeout must be a non-negative number of seconds, got NaN", page.call, page, "x", nil,
        { timeout = 0 / 0 } },
      { "allow_remote must be a boolean, got string", dt.connect, "ws://127.0.0.1:1/x",
        { allow_remote = "false" } },
      { "insecure must be a boolean, got 1", dt.connect, "ws://127.0.0.1:1/x", { insecure = 1 } },
      { "ca_file must be a string, got 5", dt.webdriver, "http://127.0.0.1:1", nil, { ca_file = 5 } },
      { "allow_remote must be a boolean, got 1", dt.webdriver, "http://127.0.0.1:1", nil,
        { allow_remote = 1 } },
      { "executable must be a string, got 5", dt.launch, { executable = 5 } },
      { "headless must be a boolean, got string", dt.launch, { headless = "no" } },
      { "user_data_dir must be a string, got table", dt.launch, { user_data_dir = {} } },
      { "webmcp must be a boolean, got string", dt.launch, { webmcp = "yes" } },
      { "launch: executable must not be empty", dt.launch, { executable = "" } },
      { "launch: user_data_dir must not be empty", dt.launch, { user_data_dir = "" } },
      { "history takes console = n, requests = n, bytes = n, bodies = n and body = n", dt.launch,
        { history = { bytes = -1 } } },
      { "history takes console = n, requests = n, bytes = n, bodies = n and body = n", dt.connect,
        "http://127.0.0.1:1", { history = { byte = 10 } } },
      { "history takes console = n", dt.launch, { history = { body = 1.5 } } },
      { "launch: history.body (one response's body) must not be over history.bodies", dt.launch,
        { history = { body = 2, bodies = 1 } } },
      { "since must be a number from page:mark() or a record, got NaN", page.console_messages, page,
        { since = 0 / 0 } },
    }) do
      local e = H.error_of(table.unpack(c, 2))
      assert.equal("bad_argument", e.code, c[1])
      if c[1]:sub(-1) == "$" then        -- (the whole end of the message)
        assert.equal(c[1]:sub(1, -2), e.message:sub(-(#c[1] - 1)))
      else
        assert.truthy(e.message:find(c[1], 1, true), e.message)
      end
    end
    assert.equal(n, #fake.sent)
  end)

  it("every public method called with a dot instead of a colon is a bad_argument naming the call", function()
    local page, fake = open()
    local n = #fake.sent
    local classes = {
      { "Page", require("devtools_tools.page").Page }, { "Browser", require("devtools_tools.browser").Browser },
      { "Tool", require("devtools_tools.tools").Tool }, { "ToolGroup", require("devtools_tools.tools").ToolGroup },
      { "Task", require("devtools_tools.rt.task").Task },
    }
    local count = 0
    for _, c in ipairs(classes) do
      local label, class = c[1], c[2]
      for name, f in pairs(class) do
        if type(f) == "function" and name:sub(1, 1) ~= "_" then
          local selves = { false, "x", {}, page.browser, page }
          for i = 1, 5 do
            local self = selves[i]
            if self ~= nil and getmetatable(self) ~= class then
              local e = H.error_of(f, self or nil, "arg")
              assert.equal("bad_argument", e.code, label .. "." .. name)
              assert.truthy(e.message:find(label .. ":" .. name .. ": called without a " .. label, 1, true),
                e.message)
            end
          end
          count = count + 1
        end
      end
    end
    assert.is_true(count > 25, count .. " methods")
    assert.equal(n, #fake.sent)
  end)

  it("maps evaluate's outcomes to values and codes", function()
    local page, fake = open()
    local scenarios = {
      { reply = { result = { type = "number", value = 42 } }, value = 42 },
      { reply = { result = { type = "number", unserializableValue = "Infinity" } }, value = math.huge },
      { reply = { result = { type = "object", subtype = "null" } }, value = dt.null },
      { reply = { result = { type = "undefined" } }, value = nil },
      { reply = { result = { type = "object" }, exceptionDetails = { text = "Uncaught",
          exception = { type = "object", description = "Error: boom\n    at <anonymous>:1:7" } } },
        code = "js_error", message = "Error: boom" },
      { reply = { error = { code = -32000, message = "Execution context was destroyed." } }, code = "navigated" },
      { reply = { error = { code = -32000, message = "Object reference chain is too long" } }, code = "js_error" },
      { reply = F.NO_REPLY, code = "timeout" },
    }
    for i, s in ipairs(scenarios) do
      fake.on["Runtime.evaluate"] = function() return s.reply end
      local ok, v = pcall(page.evaluate, page, "x", { timeout = 0.05 })
      if s.code then
        assert.is_false(ok, "scenario " .. i)
        assert.equal(s.code, v.code, "scenario " .. i)
        if s.message then assert.equal(s.message, v.message) end
      else
        assert.is_true(ok, tostring(v))
        assert.equal(s.value, v, "scenario " .. i)
      end
    end
    -- the timeout left a probe on the session; unanswered (a busy page),
    -- the next call first stops the script that kept it
    assert.equal(0, fake:count("Runtime.terminateExecution"))
    fake.on["Runtime.evaluate"] = function() return { result = { type = "number", value = 1 } } end
    assert.equal(1, page:evaluate("1"))
    assert.equal(1, fake:count("Runtime.terminateExecution"))
    -- an idle page is left alone: its probe answered, or its answer on its
    -- way when the next call starts (10 ms; 200 ms, as a busy machine
    -- answers, where 50 ms were once given and another task's tool stopped)
    local core = require "devtools_tools.core"
    local function answer_after(s)
      return function(msg, session, f)
        f.later[#f.later + 1] = { at = core.now() + s, msg = { id = msg.id, sessionId = session,
          result = { result = { type = "number", value = 0 } } } }
        return F.NO_REPLY
      end
    end
    local probe_answers = {
      function() return { result = { type = "number", value = 0 } } end,
      answer_after(0.01), answer_after(0.2),
    }
    for _, answer in ipairs(probe_answers) do
      fake.on["Runtime.evaluate"] = function(p, session, msg, f)
        if p.expression == "0" then return answer(msg, session, f) end
        return F.NO_REPLY
      end
      assert.equal("timeout", H.error_of(page.evaluate, page, "x", { timeout = 0.05 }).code)
      fake.on["Runtime.evaluate"] = function() return { result = { type = "number", value = 1 } } end
      assert.equal(1, page:evaluate("1"))
      assert.equal(1, fake:count("Runtime.terminateExecution"))
    end
    assert.equal(0, #fake.later)
  end)

  it("fails a waiting call at once with disconnected when the renderer crashes", function()
    local page, fake = open()
    fake.on["Runtime.evaluate"] = function(_, session, _, f)
      f:event("Inspector.targetCrashed", {}, session)
      return F.NO_REPLY
    end
    local e = H.error_of(page.evaluate, page, "1", { timeout = 30 })
    assert.equal("disconnected", e.code)
    assert.matches("the page crashed", e.message, 1, true)
    assert.equal("disconnected", H.error_of(page.evaluate, page, "1").code)
    assert.matches("crashed", tostring(page))
  end)

  it("tracks documents: a navigated frame makes its tools stale", function()
    local page, fake = open()
    F.with_tools(fake, { ADD })
    local add = page:tool("add")
    assert.equal("called", add{ a = 1 })
    assert.is_true(page.docs:is_current("F1", "L1"))
    fake:event("Page.frameNavigated", { frame = { id = "F1", url = "http://127.0.0.1/next",
      securityOrigin = "http://127.0.0.1", loaderId = "L2" } }, "S1")
    local e = H.error_of(add.call, add, { a = 1 })
    assert.equal("stale", e.code)
    assert.is_false(page.docs:is_current("F1", "L1"))
    assert.equal("http://127.0.0.1/next", page.url)
  end)

  it("caches discovery per document and looks again once on a miss", function()
    local page, fake = open()
    local counter = { n = 0 }
    local groups = { ADD }
    F.with_tools(fake, function() return groups end, counter)
    -- a fresh discovery that misses is not repeated within the same call
    assert.equal("tool_not_found", H.error_of(page.call, page, "late").code)
    assert.equal(1, counter.n)
    assert.equal("called", page:call("add", { a = 1 }))      -- cached
    assert.equal(1, counter.n)
    groups = { ADD, { index = 1, name = "h", tools = { { name = "late", description = "d",
      inputSchema = { type = "object" } } } } }
    assert.equal("called", page:call("late"))                -- a miss in the cache: one more look
    assert.equal(2, counter.n)
    local e = H.error_of(page.call, page, "ad")
    assert.equal(3, counter.n)
    -- one call_many missing two names looks again once, not once per name
    local res = page:call_many({ { "x" }, { "y" }, { "add", { a = 1 } } }, { errors = "return" })
    assert.equal(4, counter.n)
    assert.equal("tool_not_found", res[1].code)
    assert.equal("tool_not_found", res[2].code)
    assert.equal("called", res[3])
    assert.equal("add", e.details.nearest)
    assert.same({ "add", "late" }, e.details.available)
    -- a name too long to compare with the others: no nearest, still tool_not_found
    local long = string.rep("a", 65)
    e = H.error_of(page.call, page, long)
    assert.equal("tool_not_found", e.code)
    assert.is_nil(e.details.nearest)
    assert.equal("Tool " .. long .. " not found (the page has 2 tools)", e.message)
    res = page:call_many({ { long } }, { errors = "return" })
    assert.equal("tool_not_found", res[1].code)
    -- a cached tool the page says it has not (its list changed in place):
    -- one fresh look, and the call goes to what that finds
    local NOT_FOUND = { result = { type = "string", value = '{"error":{"kind":"not_found","message":"Tool add not found"}}' } }
    local answers = { NOT_FOUND }
    fake.on_call = function() return table.remove(answers, 1) or { result = { type = "string", value = '{"n":0,"v":"again"}' } } end
    local n = counter.n
    assert.equal("again", page:call("add", { a = 1 }))
    assert.equal(n + 1, counter.n)
    -- and only one: the page still says no
    answers = { NOT_FOUND, NOT_FOUND }
    e = H.error_of(page.call, page, "add", { a = 1 })
    assert.equal("tool_not_found", e.code)
    assert.equal(n + 2, counter.n)
    assert.equal(0, #answers)
    -- a request to a session that had just gone never ran either: one more look
    answers = { { error = { code = -32001, message = "Session with given id not found." } } }
    assert.equal("again", page:call("add", { a = 1 }))
    assert.equal(0, #answers)
    fake.on_call = nil
    -- calls without a deadline (timeout = math.huge) are told apart too
    page:discover({ timeout = math.huge })
    groups = { ADD, { index = 1, name = "h", tools = { { name = "later", description = "d",
      inputSchema = { type = "object" } } } } }
    n = counter.n
    assert.equal("called", page:call("later", nil, { timeout = math.huge }))
    assert.equal(n + 1, counter.n)
  end)

  it("validates before sending and sends one request per call", function()
    local page, fake = open()
    F.with_tools(fake, { ADD })
    page:discover()
    local n = fake:count_calls()
    assert.equal("invalid_params", H.error_of(page.call, page, "add", { a = "x" }).code)
    assert.equal("bad_argument", H.error_of(page.call, page, "add", { 1, 2 }).code)
    -- "a" only through __index: the encoder would send {}, so it is missing
    local e = H.error_of(page.call, page, "add", setmetatable({}, { __index = { a = 1 } }))
    assert.equal("invalid_params", e.code)
    -- a table dressed as an Element that discovery never made: a dt.Error, not a raw one
    local fake_el = setmetatable({}, require("devtools_tools.tools.element").Element)
    assert.equal("stale", H.error_of(page.call, page, "add", { a = 1, e = fake_el }).code)
    -- a number JSON cannot hold is refused, not sent as null
    for _, x in ipairs({ 0 / 0, math.huge, -math.huge }) do
      e = H.error_of(page.call, page, "add", { a = x })
      assert.equal("bad_argument", e.code)
      assert.matches("is not a number JSON can hold", e.message)
      e = H.error_of(page.call_many, page, { { "add", { a = x } } })
      assert.equal("bad_argument", e.code)
    end
    assert.equal(n, fake:count_calls())
    page:call("add", { a = 1 })
    assert.equal(n + 1, fake:count_calls())
  end)

  it("sends the arguments schema.shape gives (when the schema module has it), not changing the caller's table", function()
    local schema = require "devtools_tools.schema"
    local saved = schema.shape
    local page, fake = open()
    F.with_tools(fake, { { index = 0, name = "g", tools = { { name = "list", description = "d",
      inputSchema = { type = "object", properties = { items = { type = "array" } } } } } } })
    local seen
    schema.shape = function(...)          -- a stand-in: marks `items` as an array, in a copy
      seen = { n = select("#", ...), ... }
      local value = select(2, ...)
      local copy = {}
      for k, v in pairs(value) do copy[k] = v end
      copy.items = dt.array {}
      return copy
    end
    local args = { items = {} }
    local ok, err = pcall(page.call, page, "list", args)
    schema.shape = saved
    assert(ok, tostring(err))
    assert.equal(2, seen.n)
    assert.equal(page:tool("list")._validator, seen[1])
    assert.equal(args, seen[2])
    local sent = fake.sent[#fake.sent]
    assert.is_table(sent.call)                     -- a tool call, as an expression
    assert.equal("list", sent.call[3])
    assert.equal(dt.array_mt, getmetatable(sent.call[4].items))   -- written as []
    assert.is_nil(getmetatable(args.items))
  end)

  it("call_many: entries that settled keep their results, each failure names its tool", function()
    local page, fake = open()
    local two = { index = 0, name = "g", tools = { ADD.tools[1],
      { name = "never", description = "d", inputSchema = { type = "object" } } } }
    F.with_tools(fake, { two })
    fake.on_call = function()
      return { result = { type = "string",
        value = '[{"n":0,"v":3},{"error":{"kind":"pending","message":"did not settle"}}]' } }
    end
    local res = page:call_many({ { "add", { a = 1 } }, { "never" }, { "nope" } }, { errors = "return" })
    assert.equal(3, res[1])
    assert.equal("timeout", res[2].code)
    assert.equal("never", res[2].tool)
    assert.equal("tool_not_found", res[3].code)
    assert.equal(3, res.n)
  end)

  it("call_many leaves the page's answer time to come back: a quarter of a short deadline, at most 0.25 s, a tenth of a long one, at most 2 s", function()
    local core = require "devtools_tools.core"
    local page, fake = open()
    local two = { index = 0, name = "g", tools = { ADD.tools[1],
      { name = "never", description = "d", inputSchema = { type = "object" } } } }
    F.with_tools(fake, { two })
    local call = fake.on["Runtime.callFunctionOn"]
    local sent
    fake.on["Runtime.callFunctionOn"] = function(p, s, m, f)
      if p.functionDeclaration:find("discoverDevtoolsTools", 1, true) then
        return F.discovery_value({ two }, nil, 5000)   -- (the page's clock reads 5000 ms as it answers)
      end
      if p.functionDeclaration:find("batchDevtoolsTools", 1, true) then
        sent = { limit = p.arguments[2].value, ["until"] = p.arguments[3].value, at = core.now() }
        return { result = { type = "string",
          value = '[{"n":0,"v":3},{"error":{"kind":"pending","message":"did not settle"}}]' } }
      end
      return call(p, s, m, f)
    end
    page:discover()
    local answered = core.now()                    -- (about when the page's clock read 5000)
    -- { timeout, the margin }
    for _, c in ipairs({ { 0.4, 0.1 }, { 1, 0.25 }, { 3, 0.3 }, { 15, 1.5 }, { 30, 2 }, { 600, 2 } }) do
      local t0 = core.now()
      local res = page:call_many({ { "add", { a = 1 } }, { "never" } }, { errors = "return", timeout = c[1] })
      assert.equal(3, res[1])
      assert.equal("timeout", res[2].code)
      local left = t0 + c[1] - sent.at            -- (what was left as it was sent)
      assert.is_true(math.abs(sent.limit - (left - c[2]) * 1000) < 60,
        ("timeout %s: limit %s ms, expected about %s"):format(c[1], sent.limit, (left - c[2]) * 1000))
      -- the same end on the page's clock
      local expected = (t0 + c[1] - c[2] - answered) * 1000 + 5000
      assert.is_true(math.abs(sent["until"] - expected) < 60,
        ("timeout %s: until %s, expected about %s"):format(c[1], sent["until"], expected))
    end
  end)

  it("call_many with errors = \"return\": an entry that is no {name, args} keeps its bad_argument", function()
    local page, fake = open()
    F.with_tools(fake, { ADD })
    fake.on_call = function() return { result = { type = "string", value = '[{"n":0,"v":3}]' } } end
    for _, odd in ipairs({ 5, "add", true }) do
      local res = page:call_many({ { "add", { a = 1 } }, odd }, { errors = "return" })
      assert.equal(3, res[1])
      assert.equal("bad_argument", res[2].code)
      assert.equal("call_many: entry 2 must be {name, args}", res[2].message)
    end
    -- heard by a "call" listener as such too
    local heard = {}
    page:on("call", function(r) heard[#heard + 1] = { r.name, r.ok, r.error and r.error.code } end)
    page:call_many({ 7 }, { errors = "return" })
    assert.same({ { nil, false, "bad_argument" } }, heard)
  end)

  it("a reply whose decoding passes the call's deadline is a timeout naming the tool, and no probe", function()
    local page, fake = open()
    F.with_tools(fake, { { index = 0, name = "g", tools = { ADD.tools[1],
      { name = "more", description = "d", inputSchema = { type = "object" } } } } })
    page:discover()
    fake.on_call = function() return F.DECODE_LATE end
    local t0 = require("devtools_tools.core").now()
    local e = H.error_of(page.call, page, "add", { a = 1 }, { timeout = 7 })
    assert.equal("timeout", e.code)
    assert.equal("add", e.tool)
    assert.equal("tool add: the reply came, but " .. F.LATE_MESSAGE, e.message)
    assert.near(t0 + 7, fake.late_deadline, 1)     -- the call's own deadline went with the request
    local res = page:call_many({ { "add", { a = 1 } }, { "more" } }, { errors = "return", timeout = 9 })
    assert.near(t0 + 9, fake.late_deadline, 1)
    for i, name in ipairs({ "add", "more" }) do
      assert.equal("timeout", res[i].code)
      assert.equal(name, res[i].tool)
      assert.equal("tool " .. name .. ": the batch's reply came, but " .. F.LATE_MESSAGE, res[i].message)
    end
    -- any other reply too: the call's deadline went with it, and the error names the call
    fake.on["Runtime.evaluate"] = function() return F.DECODE_LATE end
    e = H.error_of(page.evaluate, page, "big", { timeout = 5 })
    assert.equal("timeout", e.code)
    assert.equal("Runtime.evaluate: the reply came, but " .. F.LATE_MESSAGE, e.message)
    assert.near(t0 + 5, fake.late_deadline, 1)
    assert.is_nil(next(page.conn.deadlines))       -- each entry goes with its reply
    assert.is_nil(next(page.conn.json_ids))
    -- the page answered: nothing asks whether a script of it is still busy
    local probes = 0
    for _, m in ipairs(fake.sent) do
      if m.method == "Runtime.evaluate" and m.params.expression == "0" then probes = probes + 1 end
    end
    assert.equal(0, probes)
  end)

  it("a probe still unanswered outlives the connection's sweep: the next call stops the page", function()
    local page, fake = open()
    F.with_tools(fake, { ADD })
    page:discover()
    local plain = fake.on["Runtime.evaluate"]
    fake.on["Runtime.evaluate"] = function(p, s, m, f)
      if p.expression == "0" then return F.NO_REPLY end            -- the page's thread is busy
      return plain(p, s, m, f)
    end
    fake.on_call = function() return F.NO_REPLY end
    assert.equal("timeout", H.error_of(page.call, page, "add", { a = 1 }, { timeout = 0.3 }).code)
    local probe = page.probes.sent[page.session]
    assert.is_number(probe)
    -- Time passes: every request awaiting a reply is now long past its
    -- deadline (what 10 s of awaits would see), then enough awaits on the
    -- connection (none through the page) for its sweep to run.
    local conn, long_ago = page.conn, require("devtools_tools.core").now() - 60
    for id in pairs(conn.deadlines) do conn.deadlines[id] = long_ago end
    for id, d in pairs(conn.json_ids) do
      if d ~= true then conn.json_ids[id] = long_ago end
    end
    fake.on["Browser.getVersion"] = function() return { product = "fake" } end
    for _ = 1, 70 do conn:call("Browser.getVersion") end
    assert.is_true(conn:waiting(probe))
    -- the next call finds the page still stuck, and stops it first
    fake.on_call = nil
    local before = fake:count("Runtime.terminateExecution")
    assert.equal("called", page:call("add", { a = 1 }))
    assert.equal(before + 1, fake:count("Runtime.terminateExecution"))
  end)

  it("releases the remote objects of a call that fails before it is sent, and of one that is answered", function()
    local page, fake = open()
    local TAG = { index = 0, name = "g", tools = { { name = "tag", description = "d",
      inputSchema = { type = "object", properties = { a = { ["x-mcp-type"] = "HTMLElement" },
        b = { ["x-mcp-type"] = "HTMLElement" } } } } } }
    F.with_tools(fake, { TAG })
    page:discover()
    local element = require("devtools_tools.tools.element")
    local function el(n)
      return element.new({ backend_node_id = n, description = "div", frame = { id = "F1" } },
        page.site:document("S1", nil, { id = "F1" }, "L1"))
    end
    local groups = {}
    fake.on["DOM.resolveNode"] = function(p)
      groups[p.objectGroup] = true
      if p.backendNodeId == 2 then return { error = { code = -32000, message = "No node with given id found" } } end
      return { object = { objectId = "O" .. p.backendNodeId } }
    end
    local released = {}
    fake.on["Runtime.releaseObjectGroup"] = function(p) released[p.objectGroup] = true; return {} end
    -- the second Element is gone: the call fails before it is sent
    assert.equal("stale", H.error_of(page.call, page, "tag", { a = el(1), b = el(2) }).code)
    -- call_many too
    assert.equal("stale", page:call_many({ { "tag", { a = el(1), b = el(2) } } }, { errors = "return" })[1].code)
    -- and one that is answered
    page:call("tag", { a = el(1) })
    page.conn:poll()
    -- every group in made was released; returns how many there were
    local function all_released(made, what)
      local n = 0
      for g in pairs(made) do
        n = n + 1
        assert.is_true(released[g] == true, what .. " " .. g .. " not released")
      end
      return n
    end
    assert.is_true(all_released(groups, "group") >= 3)
    -- a discovery cut short while it holds the page's window objects
    local window_groups = {}
    local plain = fake.on["Runtime.evaluate"]
    fake.on["Runtime.evaluate"] = function(p, ...)
      if p.expression == "window" then window_groups[p.objectGroup] = true end
      return plain(p, ...)
    end
    fake.on["DOMDebugger.getEventListeners"] = function() return F.NO_REPLY end
    assert.equal("timeout", H.error_of(page.discover, page, { timeout = 1 }).code)
    page.conn:poll()
    assert.equal(1, all_released(window_groups, "discovery's group"))
  end)

  it("a Tool kept from before a discovery that did not find it is stale, not sent", function()
    local page, fake = open()
    local answer = { ADD }
    F.with_tools(fake, function() return answer end)
    local add = page:tool("add")
    answer = {}                     -- (its frame skipped, or the group gone: the page's list is not known)
    assert.same({}, page:discover())
    local sent = fake:count_calls()
    local e = H.error_of(add, { a = 1 })
    assert.equal("stale", e.code)
    assert.matches("the latest discovery did not find it", e.message)
    assert.equal(sent, fake:count_calls())
  end)

  it("'Cannot find context' is stale only once Chromium started a navigation of the tool's own frame", function()
    local page, fake = open()
    F.with_tools(fake, { ADD })
    local main_tree = fake.on["Page.getFrameTree"]
    fake.on["Page.getFrameTree"] = function(...)
      local t = main_tree(...)
      t.frameTree.childFrames = { { frame = { id = "F2", parentId = "F1", url = "http://127.0.0.1/child",
        securityOrigin = "http://127.0.0.1", loaderId = "L2" } } }
      return t
    end
    fake:event("Page.frameNavigated", { frame = { id = "F2", parentId = "F1", url = "http://127.0.0.1/child",
      securityOrigin = "http://127.0.0.1", loaderId = "L2" } }, "S1")
    fake:event("Runtime.executionContextCreated", { context = { id = 9, uniqueId = "u9",
      origin = "http://127.0.0.1", auxData = { isDefault = true, frameId = "F2" } } }, "S1")
    local groups = page:discover()
    assert.equal(2, #groups)
    local in_iframe = groups[2].tools[1]
    assert.equal("F2", require("devtools_tools.tools.types").document_of(in_iframe).frame_id)
    fake.on_call = function() return { error = { code = -32000, message = "Cannot find context with specified id" } } end
    -- no navigation known: the tool may have run (its iframe removed under it)
    assert.equal("navigated", H.error_of(in_iframe, { a = 1 }).code)
    -- a navigation requested (not started: it may be cancelled in
    -- beforeunload, and the document runs on), or started in the parent
    -- (the iframe's document runs until the parent's new one commits): the
    -- tool may have run
    fake:event("Page.frameRequestedNavigation", { frameId = "F2", reason = "scriptInitiated",
      url = "http://127.0.0.1/next", disposition = "currentTab" }, "S1")
    fake:event("Page.frameStartedNavigating", { frameId = "F1", url = "http://127.0.0.1/next",
      loaderId = "L9", navigationType = "differentDocument" }, "S1")
    page.conn:poll()
    assert.equal("navigated", H.error_of(in_iframe, { a = 1 }).code)
    -- Chromium started the iframe's own navigation: it holds the call until
    -- the new document, which then finds the old one gone: it did not run
    fake:event("Page.frameStartedNavigating", { frameId = "F2", url = "http://127.0.0.1/next",
      loaderId = "L8", navigationType = "differentDocument" }, "S1")
    page.conn:poll()
    assert.equal("stale", H.error_of(in_iframe, { a = 1 }).code)
  end)

  it("discovery asks nothing of an iframe whose renderer crashed, WebMCP included", function()
    local page, fake = open()
    F.with_tools(fake, { ADD })
    -- an out-of-process iframe T2 (session S2, context 8) with the same
    -- tools, whose renderer crashes before the first discovery
    local context8 = oopif(page, fake, "S2", "T2", 8)
    fake:event("Inspector.targetCrashed", {}, "S2")
    page.conn:poll()
    local asked, answering = #fake:methods("S2"), {}
    for _, m in ipairs({ "WebMCP.enable", "Page.getFrameTree", "Runtime.evaluate" }) do
      local plain = fake.on[m]
      answering[m] = plain or false
      fake.on[m] = function(p, s, msg, f)
        if s == "S2" then return F.NO_REPLY end                -- it answers nothing
        return plain and plain(p, s, msg, f) or {}
      end
    end
    local groups = page:discover({ timeout = 2 })
    assert.equal(1, #groups)
    assert.equal("F1", groups[1].frame.id)
    assert.equal(asked, #fake:methods("S2"))
    -- a new document in the iframe: it answers again, and is asked again
    for m, plain in pairs(answering) do fake.on[m] = plain or nil end
    fake:event("Runtime.executionContextCreated", context8, "S2")
    groups = page:discover({ timeout = 2 })
    assert.equal(2, #groups)
    assert.equal("T2", groups[2].frame.id)
  end)

  it("a WebMCP result whose decoding passes the call's deadline is a timeout naming the tool", function()
    local page, fake = open()
    F.with_tools(fake, {})
    fake:event("WebMCP.toolsAdded", { tools = { { name = "big", description = "rows", frameId = "F1",
      inputSchema = { type = "object" } } } }, "S1")
    local big = page:tool("big")
    assert.equal("webmcp", big.kind)
    local n, output = 0, F.DECODE_LATE
    -- the reply, then the result (an event) that names the invocation
    fake.on["WebMCP.invokeTool"] = function(_, session, msg, f)
      n = n + 1
      f.queue[#f.queue + 1] = { id = msg.id, sessionId = session, result = { invocationId = "I" .. n } }
      f:event("WebMCP.toolResponded", { invocationId = "I" .. n, status = "Completed",
        output = output }, session)
      return F.NO_REPLY
    end
    local t0 = require("devtools_tools.core").now()
    local e = H.error_of(big.call, big, {}, { timeout = 7 })
    assert.equal("timeout", e.code)
    assert.equal("big", e.tool)
    assert.equal("tool big: the result came, but " .. F.LATE_MESSAGE, e.message)
    assert.same({ decoding = F.LATE_MESSAGE }, e.details)
    assert.near(t0 + 7, fake.late_deadline, 1)     -- the call's own deadline went with the invocation
    assert.is_nil(next(page.conn.deadlines))
    assert.is_nil(next(page.conn.cut))
    assert.equal(0, fake:count("WebMCP.cancelInvocation"))   -- it had answered
    -- a page:on_cdp listener gets the result whole, and so does the call
    local heard = {}
    local off = page:on_cdp("WebMCP.toolResponded", function(p) heard[#heard + 1] = p.output end)
    assert.equal("decoded", big:call({}, { timeout = 7 }))
    assert.same({ "decoded" }, heard)
    off()
    assert.equal("timeout", H.error_of(big.call, big, {}, { timeout = 7 }).code)
    assert.is_nil(next(page.conn.deadlines))
    assert.is_nil(next(page.conn.cut))
    output = "small"
    assert.equal("small", big:call({}, { timeout = 7 }))
    assert.is_nil(next(page.conn.deadlines))
    assert.is_nil(next(page.conn.cut))
    -- a result that comes after its call gave up is cut at once, and forgotten
    local conn, held = page.conn, nil
    fake.on["WebMCP.invokeTool"] = function(_, session, msg, f)
      n = n + 1
      held = "I" .. n
      f.queue[#f.queue + 1] = { id = msg.id, sessionId = session, result = { invocationId = held } }
      return F.NO_REPLY
    end
    e = H.error_of(big.call, big, {}, { timeout = 30 })
    local gave_up = require("devtools_tools.core").now()
    assert.equal("tool big did not settle in time", e.message)
    assert.is_true(conn.deadlines[held] <= gave_up)        -- its deadline is now, not 30 s on
    fake:event("WebMCP.toolResponded", { invocationId = held, status = "Completed", output = F.DECODE_LATE }, "S1")
    fake.late_deadline = nil
    page:evaluate("1")
    assert.is_true(fake.late_deadline <= gave_up)
    assert.is_nil(next(conn.deadlines))
    assert.is_nil(next(conn.cut))
    -- a small one that comes late is decoded, and its entry goes with it too
    assert.equal("timeout", H.error_of(big.call, big, {}, { timeout = 30 }).code)
    fake:event("WebMCP.toolResponded", { invocationId = held, status = "Completed", output = "small" }, "S1")
    page:evaluate("1")
    assert.is_nil(next(conn.deadlines))
    -- a listener added while a call waits (here: by another listener) gets
    -- the result whole, and so does the call
    fake.on["WebMCP.invokeTool"] = function(_, session, msg, f)
      n = n + 1
      f.queue[#f.queue + 1] = { id = msg.id, sessionId = session, result = { invocationId = "I" .. n } }
      f:event("WebMCP.toolInvoked", { invocationId = "I" .. n }, session)
      f:event("WebMCP.toolResponded", { invocationId = "I" .. n, status = "Completed", output = F.DECODE_LATE }, session)
      return F.NO_REPLY
    end
    local heard_late, off_late = {}, nil
    local off_invoked = page:on_cdp("WebMCP.toolInvoked", function()
      off_late = off_late or page:on_cdp("WebMCP.toolResponded", function(p) heard_late[#heard_late + 1] = p.output end)
    end)
    assert.equal("decoded", big:call({}, { timeout = 7 }))
    assert.same({ "decoded" }, heard_late)
    off_late()
    off_late = nil
    -- and after the call gave up, still whole for the listener
    fake.on["WebMCP.invokeTool"] = function(_, session, msg, f)
      n = n + 1
      held = "I" .. n
      f.queue[#f.queue + 1] = { id = msg.id, sessionId = session, result = { invocationId = held } }
      f:event("WebMCP.toolInvoked", { invocationId = held }, session)
      return F.NO_REPLY
    end
    assert.equal("timeout", H.error_of(big.call, big, {}, { timeout = 30 }).code)
    fake:event("WebMCP.toolResponded", { invocationId = held, status = "Completed", output = F.DECODE_LATE }, "S1")
    page:evaluate("1")
    assert.same({ "decoded", "decoded" }, heard_late)
    off_invoked()
    off_late()
    assert.is_nil(next(conn.deadlines))
    assert.is_nil(next(conn.cut))
  end)

  -- A page that answers no WebMCP.cancelInvocation (a renderer that hangs,
  -- or one that forgets): each call that timed out was remembered in the
  -- page until it closed.
  it("forgets WebMCP invocations given up on whose result can no longer come, and keeps few of the others", function()
    local page, fake = open()
    F.with_tools(fake, {})
    fake:event("WebMCP.toolsAdded", { tools = { { name = "never", description = "never answers",
      frameId = "F1", inputSchema = { type = "object" } } } }, "S1")
    local never = page:tool("never")
    local n = 0
    fake.on["WebMCP.invokeTool"] = function() n = n + 1; return { invocationId = "I" .. n } end
    local function given_up()
      local ids = {}
      for id in pairs(page.webmcp.given_up) do ids[#ids + 1] = id end
      return ids
    end
    for _ = 1, 300 do
      local e = H.error_of(never.call, never, {}, { timeout = 5 })   -- (the fake has no answer: at once)
      assert.equal("tool never did not settle in time", e.message)
    end
    assert.equal(300, fake:count("WebMCP.cancelInvocation"))
    local kept = given_up()
    assert.equal(128, #kept)
    for _, id in ipairs(kept) do assert.is_true(tonumber(id:sub(2)) > 172, id) end   -- the newest
    -- a result or cancellation that still comes for one is dropped, and forgets it
    fake:event("WebMCP.toolResponded", { invocationId = "I300", status = "Canceled" }, "S1")
    page:evaluate("1")
    assert.equal(127, #given_up())
    assert.is_nil(page.conn.deadlines.I300)
    -- a renderer that crashed answers nothing more: all forgotten, in the connection too
    fake:event("Inspector.targetCrashed", {}, "S1")
    assert.equal("disconnected", H.error_of(page.evaluate, page, "1").code)
    assert.equal(0, #given_up())
    assert.equal(0, page.webmcp.n_given_up)
    for id in pairs(page.conn.deadlines) do
      assert.is_true(tonumber(id:sub(2)) <= 172, id .. " is still in the connection")
    end
  end)

  -- The two ways an iframe's session ends a given-up invocation: after it
  -- was remembered (the detach forgets it), or before (never remembered).
  it("forgets a WebMCP invocation given up on in an iframe whose session ends, before or after", function()
    local page, fake = open()
    F.with_tools(fake, {})
    local function attach(sid, tid, ctx_id)
      oopif(page, fake, sid, tid, ctx_id)
      fake:event("WebMCP.toolsAdded", { tools = { { name = "slow_" .. sid, description = "never answers",
        frameId = tid, inputSchema = { type = "object" } } } }, sid)
      page.conn:poll()
    end
    local n = 0
    fake.on["WebMCP.invokeTool"] = function() n = n + 1; return { invocationId = "I" .. n } end
    local function given_up()
      local ids = {}
      for id, g in pairs(page.webmcp.given_up) do ids[#ids + 1] = id .. "@" .. g.session end
      return ids
    end
    -- after: the call gives up on a live session, which ends later
    attach("S2", "T2", 8)
    local e = H.error_of(page.call, page, "slow_S2", {}, { timeout = 5 })
    assert.equal("timeout", e.code)
    assert.same({ "I1@S2" }, given_up())
    fake:event("Target.detachedFromTarget", { sessionId = "S2" }, "S1")
    page.conn:poll()
    assert.same({}, given_up())
    assert.is_nil(page.conn.deadlines.I1)
    -- before: the session ends while the call waits for the result (the
    -- detach right after the invocation's reply)
    attach("S3", "T3", 9)
    fake.on["WebMCP.invokeTool"] = function(_, session, msg, f)
      n = n + 1
      f.queue[#f.queue + 1] = { id = msg.id, sessionId = session, result = { invocationId = "I" .. n } }
      f:event("Target.detachedFromTarget", { sessionId = "S3" }, "S1")
      return F.NO_REPLY
    end
    assert.equal("navigated", H.error_of(page.call, page, "slow_S3", {}, { timeout = 5 }).code)
    assert.equal(2, n)
    assert.same({}, given_up())
    assert.equal(0, page.webmcp.n_given_up)
    assert.is_nil(page.conn.deadlines.I2)
  end)

  it("a reply that comes after its caller gave up is cut at once, and its entries go", function()
    local page, fake = open()
    F.with_tools(fake, { ADD })
    page:discover()
    local conn, core, held = page.conn, require("devtools_tools.core"), nil
    fake.on_call = function(_, _, msg) held = msg.id; return F.NO_REPLY end
    assert.equal("timeout", H.error_of(page.call, page, "add", { a = 1 }, { timeout = 30 }).code)
    local gave_up = core.now()
    assert.is_true(conn.json_ids[held] <= gave_up)          -- its deadline is now, not 30 s on
    fake.on_call = nil
    fake.queue[#fake.queue + 1] = { id = held, sessionId = "S1", result = F.DECODE_LATE }
    assert.equal("called", page:call("add", { a = 1 }))
    assert.is_true(fake.late_deadline <= gave_up)
    assert.is_nil(next(conn.json_ids))
    assert.is_nil(next(conn.deadlines))
    -- any other reply (deadlines); a small one that is decoded clears its entry too
    local evaluate = fake.on["Runtime.evaluate"]
    fake.on["Runtime.evaluate"] = function(p, ...)
      if p.expression == "big" then held = select(2, ...).id; return F.NO_REPLY end
      return evaluate(p, ...)
    end
    for _, late in ipairs({ F.DECODE_LATE, { result = { type = "number", value = 2 } } }) do
      assert.equal("timeout", H.error_of(page.evaluate, page, "big", { timeout = 30 }).code)
      gave_up = core.now()
      assert.is_true(conn.deadlines[held] <= gave_up)
      fake.queue[#fake.queue + 1] = { id = held, sessionId = "S1", result = late }
      fake.late_deadline = nil
      assert.equal(1, page:evaluate("1"))
      if late == F.DECODE_LATE then assert.is_true(fake.late_deadline <= gave_up) end
      assert.is_nil(next(conn.json_ids))
      assert.is_nil(next(conn.deadlines))
    end
  end)

  it("closes once and is forgotten by its browser", function()
    local page, fake, b = open()
    assert.equal(page, b.pages_by_session.S1)
    page:close()
    page:close()
    assert.equal(1, fake:count("Target.closeTarget"))
    assert.is_nil(b.pages_by_session.S1)
    assert.equal("disconnected", H.error_of(page.evaluate, page, "1").code)
  end)
end)

describe("discovery (fake transport)", function()
  it("orders frames: main, same-process children depth-first, then out-of-process ones by attach order", function()
    local trees = {
      S1 = { frame = { id = "M", url = "m" }, childFrames = {
        { frame = { id = "A", url = "a", parentId = "M" }, childFrames = { { frame = { id = "A1", url = "a1", parentId = "A" } } } },
        { frame = { id = "B", url = "b", parentId = "M" } } } },
      X2 = { frame = { id = "X2", url = "x2" } },
      X1 = { frame = { id = "X1", url = "x1" } },
      Y = { frame = { id = "Y", url = "y" } },
    }
    local children = { X1 = { parent_frame = "M", order = 1 }, X2 = { parent_frame = "M", order = 2 },
      Y = { parent_frame = "A", order = 3 }, Z = { parent_frame = "M", order = 0 } }   -- Z: no tree (gone)
    local ids = {}
    for _, f in ipairs(discovery.ordered_frames("S1", children, trees)) do ids[#ids + 1] = f.id end
    assert.same({ "M", "A", "A1", "Y", "B", "X1", "X2" }, ids)
  end)

  it("builds groups and tools bound to their frame, and keeps page names as data", function()
    local page, fake = open()
    F.with_tools(fake, { { index = 0, name = "__index", description = "__gc", tools = {
      { name = "__call", description = "d", inputSchema = { type = "object" } } } } })
    local groups, warnings = page:discover()
    assert.same({}, warnings)
    assert.equal("__index", groups[1].name)
    assert.equal("__call", groups[1].tools[1].name)
    assert.equal("function", type(groups[1].tool))
    assert.equal(groups[1].tools[1], groups[1]:tool("__call"))
    assert.equal("F1", groups[1].frame.id)
  end)

  it("turns an unreadable answer from one frame into a warning", function()
    local page, fake = open()
    F.with_tools(fake, {})
    fake.on["Runtime.callFunctionOn"] = function()
      return { result = { type = "string", value = "{not json" } }
    end
    local groups, warnings = page:discover()
    assert.same({}, groups)
    assert.equal(1, #warnings)
    assert.matches("unreadable", warnings[1], 1, true)
  end)

  it("dispatches nothing in a frame without a listener", function()
    local page, fake = open()
    F.with_tools(fake, { ADD })
    fake.on["DOMDebugger.getEventListeners"] = function() return { listeners = {} } end
    assert.same({}, (page:discover()))
    assert.equal(0, fake:count("Runtime.callFunctionOn"))
  end)

  it("reports a listener that never finishes as a timeout naming discovery", function()
    local page, fake = open()
    F.with_tools(fake, { ADD })
    fake.on["Runtime.callFunctionOn"] = function() return F.NO_REPLY end
    local evaluate = fake.on["Runtime.evaluate"]
    fake.on["Runtime.evaluate"] = function(p, ...)   -- the listener keeps the page busy
      if p.expression == "0" then return F.NO_REPLY end
      return evaluate(p, ...)
    end
    local e = H.error_of(page.discover, page, { timeout = 0.05 })
    assert.equal("timeout", e.code)
    assert.matches("discovery did not finish", e.message, 1, true)
    assert.equal(0, fake:count("Runtime.terminateExecution"))
    assert.equal(1, page:evaluate("1"))                -- stops the listener first
    assert.equal(1, fake:count("Runtime.terminateExecution"))
  end)

  it("a call whose discovery runs out of its deadline is a timeout naming the tool called", function()
    local page, fake = open()
    F.with_tools(fake, { ADD })
    fake.on["Runtime.callFunctionOn"] = function() return F.NO_REPLY end
    local evaluate = fake.on["Runtime.evaluate"]
    fake.on["Runtime.evaluate"] = function(p, ...)
      if p.expression == "0" then return F.NO_REPLY end
      return evaluate(p, ...)
    end
    local e = H.error_of(page.call, page, "add", { a = 1 }, { timeout = 0.05 })
    assert.equal("timeout", e.code)
    assert.matches("discovery did not finish", e.message, 1, true)
    assert.equal("add", e.tool)
  end)
end)

describe("the Lua layer's modules", function()
  it("looks again when a document changed under a discovery that found nothing", function()
    local page, fake = open()
    local counter, first = { n = 0 }, true
    F.with_tools(fake, function()
      if first then                     -- the document is replaced while the discovery runs
        first = false
        fake:event("Runtime.executionContextDestroyed", { executionContextId = 7 }, "S1")
        fake:event("Runtime.executionContextCreated", { context = { id = 8, uniqueId = "u8",
          origin = "http://127.0.0.1", auxData = { isDefault = true, frameId = "F1" } } }, "S1")
        return {}
      end
      return { ADD }
    end, counter)
    assert.equal("called", page:call("add", { a = 1 }))
    assert.equal(2, counter.n)
    -- a miss with no change is still one discovery
    assert.equal("tool_not_found", H.error_of(page.call, page, "nope").code)
    assert.equal(3, counter.n)
  end)

end)

describe("browser (fake transport)", function()
  it("lists page targets only", function()
    local fake = F.new({ ["Target.getTargets"] = function()
      return { targetInfos = { { type = "page", targetId = "P", url = "u", title = "t", attached = false },
        { type = "service_worker", targetId = "W", url = "w" } } }
    end })
    local b = F.browser(fake)
    assert.same({ { id = "P", url = "u", title = "t", attached = false } }, b:pages())
  end)

  it("marks a page closed when its target detaches", function()
    local fake = F.page_target("about:blank")
    local b = F.browser(fake)
    local page = b:new_page()
    fake:event("Target.detachedFromTarget", { sessionId = "S1" })
    b.conn:poll()
    assert.is_true(page.closed)
    assert.is_nil(b.pages_by_session.S1)
  end)

  it("refuses bad options and bad URLs with dt.Errors, before any connection", function()
    assert.equal("bad_argument", H.error_of(dt.launch, { timout = 1 }).code)
    assert.equal("bad_argument", H.error_of(dt.connect, "http://127.0.0.1:99999").code)
    assert.equal("bad_argument", H.error_of(dt.connect, "ftp://127.0.0.1:1").code)
    assert.equal("connect_failed", H.error_of(dt.connect, "http://example.com:9222").code)
    -- loopback means an address written as one: anything else is a name the
    -- resolver would look up, refused before any lookup
    for _, host in ipairs({ "127.0.0.256", "127.0.0.08", "127.0.0.0999", "127.1.2.99999999999", "127.1",
        "localhost.", "127.0.0.1.example", "0x7f.0.0.1", "[::2]" }) do
      local e = H.error_of(dt.connect, "http://" .. host .. ":9222")
      assert.equal("connect_failed", e.code, host)
      assert.matches("refusing non-loopback host", e.message, 1, true)
      e = H.error_of(dt.webdriver, "http://" .. host .. ":4444")
      assert.matches("allow_remote", e.message, 1, true)
    end
    for _, host in ipairs({ "127.0.0.1", "127.255.0.10", "127.0.0.0", "localhost", "[::1]" }) do
      local e = H.error_of(dt.connect, "http://" .. host .. ":" .. require("support.ws_helper").refused_port(),
        { timeout = 5 })
      assert.equal("connect_failed", e.code, host)
      assert.no.matches("refusing", e.message, 1, true)
    end
    local fake = F.new()
    local b = F.browser(fake)
    local n = #fake.sent                         -- (what a new Browser sends: setDiscoverTargets)
    assert.equal("bad_argument", H.error_of(b.new_page, b, nil, { timout = 1 }).code)
    assert.equal("bad_argument", H.error_of(b.attach, b, 5).code)
    assert.equal(n, #fake.sent)
  end)

  it("names the request that timed out once", function()
    local silent, port = require("support.ws_helper").silent_listener()   -- accepts, never answers
    local e = H.error_of(dt.connect, "http://127.0.0.1:" .. port, { timeout = 0.2 })
    silent:close()
    assert.equal("timeout", e.code)
    assert.equal("connect: GET http://127.0.0.1:" .. port .. "/json/version: timed out reading the response",
      e.message)
    silent, port = require("support.ws_helper").silent_listener()
    e = H.error_of(dt.webdriver, "http://127.0.0.1:" .. port, nil, { timeout = 0.2 })
    silent:close()
    assert.equal("timeout", e.code)
    assert.equal("webdriver: POST http://127.0.0.1:" .. port .. "/session: timed out reading the response",
      e.message)
  end)

  it("a connected browser is only disconnected on close", function()
    local fake = F.new()
    local b = F.browser(fake)
    b:close()
    assert.equal(0, fake:count("Browser.close"))
    assert.is_true(fake.closed)
    assert.equal("disconnected", H.error_of(b.version, b).code)
  end)
end)

describe("frames a discovery saw go away (fake transport)", function()

  it("an iframe detached while discovery awaits another session's tree is not recorded again", function()
    local page, fake = open()
    oopif(page, fake, "S2", "T2", 8)
    local tree = fake.on["Page.getFrameTree"]
    fake.on["Page.getFrameTree"] = function(p, s, msg, f)
      if s == "S1" then           -- the page's tree still holds X, an iframe of its own process
        return { frameTree = { frame = { id = "F1", url = page.url, securityOrigin = "http://127.0.0.1",
          loaderId = "L1" }, childFrames = { { frame = { id = "X", parentId = "F1",
          url = "http://127.0.0.1/x", securityOrigin = "http://127.0.0.1", loaderId = "LX" } } } } }
      end
      -- X goes before the iframe's session answers: the event is read between the two trees
      f:event("Page.frameDetached", { frameId = "X", reason = "remove" }, "S1")
      return tree(p, s, msg, f)
    end
    page:discover()
    assert.same({ "F1", "T2" }, frame_ids(page))
  end)

  it("an out-of-process iframe's frame, seen in its parent's tree before the swap, goes with its session", function()
    local page, fake = open()
    local tree = fake.on["Page.getFrameTree"]
    fake.on["Page.getFrameTree"] = function(p, s, msg, f)
      if s == "S1" then           -- T2 as the parent saw it before it moved to a process of its own
        return { frameTree = { frame = { id = "F1", url = page.url, securityOrigin = "http://127.0.0.1",
          loaderId = "L1" }, childFrames = { { frame = { id = "T2", parentId = "F1", url = "",
          securityOrigin = "://", loaderId = "LT" } } } } }
      end
      return tree(p, s, msg, f)
    end
    oopif(page, fake, "S2", "T2", 8)
    page:discover()
    assert.same({ "F1", "T2" }, frame_ids(page))
    fake:event("Page.frameDetached", { frameId = "T2", reason = "swap" }, "S1")
    fake:event("Target.detachedFromTarget", { sessionId = "S2", targetId = "T2" }, "S1")
    page.conn:poll()
    assert.same({ "F1" }, frame_ids(page))
  end)
end)

describe("iframes their parent removed (fake transport)", function()
  local function sent(fake, method, session)
    local out = {}
    for _, m in ipairs(fake.sent) do
      if m.method == method and m.sessionId == session then out[#out + 1] = m.params end
    end
    return out
  end

  -- Under load Chromium kept the target of a removed out-of-process iframe
  -- attached for good (no Target.detachedFromTarget), and its session still
  -- answered Page.getFrameTree with the old frame: each discovery wrote the
  -- frame back into page.frames (7 to 19 left per page after 35 s).
  it("leaves an out-of-process iframe's session when the parent removes its frame, whatever the browser keeps", function()
    local page, fake = open()
    oopif(page, fake, "S2", "T2", 8)
    page:discover()
    assert.same({ "F1", "T2" }, frame_ids(page))
    fake:event("Page.frameDetached", { frameId = "T2", reason = "remove" }, "S1")
    page.conn:poll()
    assert.same({ "F1" }, frame_ids(page))
    assert.same({ { sessionId = "S2" } }, sent(fake, "Target.detachFromTarget", "S1"))
    assert.is_nil(page.child_sessions.S2)
    -- the fake still answers on S2, as the browser did: nobody asks it
    local before = #sent(fake, "Page.getFrameTree", "S2")
    page:discover()
    assert.same({ "F1" }, frame_ids(page))
    assert.equal(before, #sent(fake, "Page.getFrameTree", "S2"))
    -- the browser's own word, when it comes, finds nothing left to do
    fake:event("Target.detachedFromTarget", { sessionId = "S2", targetId = "T2" }, "S1")
    page.conn:poll()
    assert.same({ "F1" }, frame_ids(page))
  end)

  it("leaves the iframes attached through a session that ends, removed or told", function()
    for _, how in ipairs({ "removed", "told" }) do
      local page, fake = open()
      oopif(page, fake, "S2", "T2", 8)
      -- T3: an out-of-process iframe inside T2, attached through T2's session
      fake:event("Target.attachedToTarget", { sessionId = "S3", waitingForDebugger = false,
        targetInfo = { type = "iframe", targetId = "T3", url = "http://other/frame", parentFrameId = "T2" } }, "S2")
      fake:event("Page.frameNavigated", { frame = { id = "T3", parentId = "T2", url = "http://other/frame",
        securityOrigin = "http://other", loaderId = "L3" } }, "S3")
      page.conn:poll()
      assert.is_table(page.child_sessions.S3)
      assert.same({ "F1", "T3" }, frame_ids(page))
      if how == "removed" then
        fake:event("Page.frameDetached", { frameId = "T2", reason = "remove" }, "S1")
      else                -- (T3's end, told on S2, reaches nobody)
        fake:event("Target.detachedFromTarget", { sessionId = "S2", targetId = "T2" }, "S1")
      end
      page.conn:poll()
      assert.same({}, (function() local l = {} for sid in pairs(page.child_sessions) do l[#l + 1] = sid end return l end)(), how)
      assert.same({ "F1" }, frame_ids(page), how)
    end
  end)

  it("leaves at once a target the browser tells of after the parent removed its frame", function()
    local page, fake = open()
    fake:event("Page.frameDetached", { frameId = "T4", reason = "remove" }, "S1")
    fake:event("Target.attachedToTarget", { sessionId = "S4", waitingForDebugger = true,
      targetInfo = { type = "iframe", targetId = "T4", url = "http://localhost/frame", parentFrameId = "F1" } }, "S1")
    page.conn:poll()
    assert.is_nil(page.child_sessions.S4)
    assert.same({ { sessionId = "S4" } }, sent(fake, "Target.detachFromTarget", "S1"))
    assert.same({ "Runtime.runIfWaitingForDebugger" }, fake:methods("S4"))
    page:discover()
    assert.same({ "Runtime.runIfWaitingForDebugger" }, fake:methods("S4"))
    assert.same({ "F1" }, frame_ids(page))
  end)

  it("a frame swapped into a process of its own keeps its session", function()
    local page, fake = open()
    oopif(page, fake, "S2", "T2", 8)
    fake:event("Page.frameDetached", { frameId = "T2", reason = "swap" }, "S1")
    page.conn:poll()
    assert.is_table(page.child_sessions.S2)
    assert.same({}, sent(fake, "Target.detachFromTarget", "S1"))
    page:discover()
    assert.same({ "F1", "T2" }, frame_ids(page))
  end)
end)

describe("a frame moving into a process of its own (fake transport)", function()
  -- A cross-origin iframe has two documents for a moment: the parent's
  -- initial about:blank, and its own in its new process. Each has a
  -- context for the frame, in its own session, and the two processes'
  -- events come in either order: under load the parent's about:blank
  -- context came after the iframe's own, and its end at the swap took the
  -- iframe's along (the sample app's support widget was left out of 3
  -- discoveries in 60).
  it("keeps the iframe's own context whichever process tells first", function()
    for _, order in ipairs({ "parent's first", "iframe's first" }) do
      local page, fake = open()
      F.with_tools(fake, { ADD })
      local blank = { context = { id = 3, uniqueId = "u-blank", origin = "http://127.0.0.1",
        auxData = { isDefault = true, frameId = "T2" } } }
      if order == "parent's first" then fake:event("Runtime.executionContextCreated", blank, "S1") end
      oopif(page, fake, "S2", "T2", 1)
      -- (as Chromium does, a second Runtime.enable tells no context again)
      local enable = fake.on["Runtime.enable"]
      fake.on["Runtime.enable"] = function(p, s, msg, f)
        if s == "S2" then return {} end
        return enable(p, s, msg, f)
      end
      if order == "iframe's first" then fake:event("Runtime.executionContextCreated", blank, "S1") end
      fake:event("Page.frameDetached", { frameId = "T2", reason = "swap" }, "S1")
      fake:event("Runtime.executionContextDestroyed", { executionContextId = 3, executionContextUniqueId = "u-blank" },
        "S1")
      page.conn:poll()
      local groups, warnings = page:discover()
      assert.same({}, warnings, order)
      local frames = {}
      for _, g in ipairs(groups) do frames[#frames + 1] = g.frame.id end
      assert.same({ "F1", "T2" }, frames, order)
      assert.equal(1, page.docs:context("T2").id, order)
      assert.equal("S2", page.docs:context("T2").session, order)
    end
  end)

  it("a context's end in one session leaves the same id in another alone", function()
    local page, fake = open()
    oopif(page, fake, "S2", "T2", 1)
    -- (context ids are the renderer's own: the page's process has a 1 too)
    fake:event("Runtime.executionContextDestroyed", { executionContextId = 1 }, "S1")
    page.conn:poll()
    assert.equal(1, page.docs:context("T2", "S2").id)
    page:discover()                  -- (its tree tells that T2 is S2's)
    assert.equal(1, page.docs:context("T2").id)
    assert.equal("T2", page.docs:frame_of_context(1, "S2").id)
    assert.equal("F1", page.docs:frame_of_context(nil).id)
  end)
end)

describe("the one stale-retry rule (fake transport)", function()
  it("page:call(tool) calls a Tool whose document is gone as the page's tool of its name; tool:call says stale", function()
    local page, fake = open()
    local counter = { n = 0 }
    F.with_tools(fake, { ADD }, counter)
    local add = page:tool("add")
    fake:event("Page.frameNavigated", { frame = { id = "F1", url = "http://127.0.0.1/next",
      securityOrigin = "http://127.0.0.1", loaderId = "L2" } }, "S1")
    page.conn:poll()
    assert.equal("stale", H.error_of(add.call, add, { a = 1 }).code)
    local calls = fake:count_calls()
    assert.equal("called", page:call(add, { a = 1 }))
    assert.equal(calls + 1, fake:count_calls())          -- once: the new document's tool
    assert.equal(2, counter.n)                          -- (discovered again for it)
    local other = open()
    assert.equal("bad_argument", H.error_of(other.call, other, page:tool("add"), { a = 1 }).code)
  end)
end)

describe("frames the browser forgot to tell of (fake transport)", function()
  -- The parent's document tells of an iframe (frameNavigated on the page's
  -- session), moves it to a process of its own (frameDetached "swap"), and
  -- the page removes it before its target attached: no attach, no detach.
  local function swapped_away(fake, id)
    fake:event("Page.frameNavigated", { frame = { id = id, parentId = "F1", url = "about:blank",
      securityOrigin = "://", loaderId = "L" .. id } }, "S1")
    fake:event("Page.frameDetached", { frameId = id, reason = "swap" }, "S1")
  end

  it("an iframe removed before its target attached goes when the browser destroys the target", function()
    local page, fake = open()
    F.with_tools(fake, { ADD })
    swapped_away(fake, "T5")
    page.conn:poll()
    page:discover()
    assert.same({ "F1", "T5" }, frame_ids(page))       -- (what was kept for good)
    local epoch = page.docs.epoch
    -- the browser's word, on the browser's session (iframe targets: the
    -- browser asked to hear of them as it was made)
    assert.equal(1, fake:count("Target.setDiscoverTargets"))
    fake:event("Target.targetDestroyed", { targetId = "T5" })
    page.conn:poll()
    assert.same({ "F1" }, frame_ids(page))
    assert.is_true(page.docs.epoch > epoch)                -- (a cached discovery is out of date)
    -- the target the browser tells of later is left at once
    fake:event("Target.attachedToTarget", { sessionId = "S5", waitingForDebugger = true,
      targetInfo = { type = "iframe", targetId = "T5", url = "http://localhost/frame", parentFrameId = "F1" } }, "S1")
    page.conn:poll()
    assert.is_nil(page.child_sessions.S5)
    assert.same({ "Runtime.runIfWaitingForDebugger" }, fake:methods("S5"))
  end)

  it("a destroyed target's frame that has a document of ours again stays; an attached one goes with its session", function()
    local page, fake = open()
    swapped_away(fake, "T6")
    -- back in the parent's process: a new document there
    fake:event("Page.frameNavigated", { frame = { id = "T6", parentId = "F1", url = "http://127.0.0.1/same",
      securityOrigin = "http://127.0.0.1", loaderId = "L66" } }, "S1")
    oopif(page, fake, "S2", "T2", 8)
    page:discover()
    assert.same({ "F1", "T2", "T6" }, frame_ids(page))
    fake:event("Target.targetDestroyed", { targetId = "T6" })
    fake:event("Target.targetDestroyed", { targetId = "T2" })
    page.conn:poll()
    assert.same({ "F1", "T6" }, frame_ids(page))
    assert.is_nil(page.child_sessions.S2)
    -- (and the page's own target is the browser's to close, not a frame to forget)
    fake:event("Target.targetDestroyed", { targetId = "F1" })
    page.conn:poll()
    assert.same({ "F1", "T6" }, frame_ids(page))
  end)

  it("an attach that failed (its session answers as one that is gone) forgets the frames its target had", function()
    local page, fake = open()
    F.with_tools(fake, { ADD })
    swapped_away(fake, "T7")
    local enable = fake.on["Runtime.enable"]
    fake.on["Runtime.enable"] = function(p, sid, m, f)
      if sid == "S7" then return { error = { code = -32001, message = "Session with given id not found." } } end
      return enable(p, sid, m, f)
    end
    fake:event("Target.attachedToTarget", { sessionId = "S7", waitingForDebugger = true,
      targetInfo = { type = "iframe", targetId = "T7", url = "http://localhost/frame", parentFrameId = "F1" } }, "S1")
    page.conn:poll()
    assert.is_table(page.child_sessions.S7)
    assert.same({ "F1", "T7" }, frame_ids(page))
    local groups = page:discover()
    assert.equal(1, #groups)
    assert.is_nil(page.child_sessions.S7)
    assert.same({ "F1" }, frame_ids(page))
    assert.equal("called", page:call("add", { a = 1 }))
  end)
end)

describe("response bodies kept in every session (fake transport)", function()
  it("an out-of-process iframe's and a worker's Network.enable ask for the page's buffer sizes", function()
    local fake = F.page_target("http://127.0.0.1/app")
    local b = F.browser(fake)
    b.history = { body = 1234, bodies = 5678 }
    local page = b:new_page()
    oopif(page, fake, "S2", "T2", 8)
    fake:event("Target.attachedToTarget", { sessionId = "W1", waitingForDebugger = true,
      targetInfo = { type = "worker", targetId = "W1", url = "http://127.0.0.1/w.js" } }, "S1")
    page.conn:poll()
    local seen = {}
    for _, m in ipairs(fake.sent) do
      if m.method == "Network.enable" then
        seen[m.sessionId] = { m.params and m.params.maxResourceBufferSize, m.params and m.params.maxTotalBufferSize }
      end
    end
    assert.same({ 1234, 5678 }, seen.S1)
    assert.same({ 1234, 5678 }, seen.S2)
    assert.same({ 1234, 5678 }, seen.W1)
  end)
end)

describe("readiness (fake transport)", function()
  local core = require "devtools_tools.core"

  -- The probes settle sends (js/idle.js), in order, and each's answer.
  local function probing(fake, answer)
    local probes = {}
    local call = fake.on["Runtime.callFunctionOn"]
    fake.on["Runtime.callFunctionOn"] = function(p, s, m, f)
      if p.functionDeclaration:find("devtoolsIdle", 1, true) then
        probes[#probes + 1] = { ms = p.arguments[1].value, context = p.executionContextId, at = core.now() }
        return answer(#probes, f, p, s)
      end
      if call then return call(p, s, m, f) end
      return {}
    end
    return probes
  end
  local function yes() return { result = { type = "boolean", value = true } } end

  it("settles a quiet page once its main thread has caught up, watching its tools from then on", function()
    local page, fake = open()
    local probes = probing(fake, yes)
    assert.is_true(page:settle({ quiet = 0 }))
    assert.equal(1, #probes)
    assert.equal(7, probes[1].context)                   -- the main frame's document
    assert.is_true(probes[1].ms > 0)
    assert.equal(1, fake:count("Runtime.addBinding"))    -- a listener added or removed tells
  end)

  it("goes on when something happens before the page answers the probe", function()
    local page, fake = open()
    local probes = probing(fake, function(n, f)
      if n == 1 then
        f:event("Network.requestWillBeSent", { requestId = "R1", request = { url = "http://127.0.0.1/x",
          method = "GET" }, timestamp = 1 }, "S1")
        f:event("Network.loadingFinished", { requestId = "R1", timestamp = 2 }, "S1")
      end
      return yes()
    end)
    assert.is_true(page:settle({ quiet = 0 }))
    assert.equal(2, #probes)
  end)

  it("a frame loading holds the wait until it has loaded; one that never does ends it at max, unprobed", function()
    local page, fake = open()
    local stopped = false
    local probes = probing(fake, function() return { result = { type = "boolean", value = stopped } } end)
    fake:event("Page.frameStartedLoading", { frameId = "F1" }, "S1")
    page.conn:poll()
    assert.is_false(page:settle({ quiet = 0, max = 0.05 }))
    assert.equal(0, #probes)
    stopped = true
    fake.later[#fake.later + 1] = { at = core.now() + 0.05, msg = { method = "Page.frameStoppedLoading",
      params = { frameId = "F1" }, sessionId = "S1" } }
    assert.is_true(page:settle({ quiet = 0, max = 5 }))
    assert.equal(1, #probes)
    assert.same({}, page.readiness.frames)
  end)

  it("a request in flight holds the wait until it is `long` old (a long poll holds it no longer)", function()
    local page, fake = open()
    local probes = probing(fake, yes)
    local sent = core.now()
    fake:event("Network.requestWillBeSent", { requestId = "R9", request = { url = "http://127.0.0.1/poll",
      method = "GET" }, timestamp = 1 }, "S1")
    page.conn:poll()
    assert.is_true(page:settle({ quiet = 0, long = 0.05 }))
    assert.equal(1, #probes)
    assert.is_true(probes[1].at - sent >= 0.05)
  end)

  it("a page busy past the limit is looked at as it is: the probe's timeout stops none of its scripts", function()
    local page, fake = open()
    local probes = probing(fake, function() return F.NO_REPLY end)
    assert.is_false(page:settle({ quiet = 0, max = 0.05 }))
    assert.equal(1, #probes)
    fake.on["Runtime.evaluate"] = function() return { result = { type = "number", value = 1 } } end
    assert.equal(1, page:evaluate("1"))
    assert.equal(0, fake:count("Runtime.terminateExecution"))
  end)

  it("wait_for_selector: true when it matches, timeout when it does not, js_error for a bad selector", function()
    local page, fake = open()
    local answer
    fake.on["Runtime.callFunctionOn"] = function(p)
      assert.truthy(p.functionDeclaration:find("devtoolsWaitSelector", 1, true))
      assert.equal(7, p.executionContextId)
      return answer(p.arguments[1].value, p.arguments[2].value)
    end
    answer = function(sel, ms)
      assert.equal("#x", sel)
      assert.is_true(ms > 0)
      return { result = { type = "boolean", value = true } }
    end
    assert.is_true(page:wait_for_selector("#x"))
    answer = function() return { result = { type = "boolean", value = false } } end
    local e = H.error_of(page.wait_for_selector, page, "#none", { timeout = 1 })
    assert.equal("timeout", e.code)
    assert.equal("#none", e.details.selector)
    -- a page too slow to give its false before the call's deadline (a
    -- loaded machine): the same timeout, naming the selector
    answer = function() return F.NO_REPLY end
    e = H.error_of(page.wait_for_selector, page, "#late", { timeout = 0.2 })
    assert.equal("timeout", e.code)
    assert.equal("#late", e.details.selector)
    assert.matches("no element matches the selector #late", e.message, 1, true)
    answer = function()
      return { result = { type = "object" }, exceptionDetails = { text = "Uncaught",
        exception = { type = "object", className = "SyntaxError", description = "SyntaxError: '##' is not a valid selector" } } }
    end
    e = H.error_of(page.wait_for_selector, page, "##")
    assert.equal("js_error", e.code)
    assert.matches("^SyntaxError: '##' is not a valid selector", e.message)
    assert.equal("bad_argument", H.error_of(page.wait_for_selector, page, 5).code)
  end)

  it("set_viewport sizes the page's window so that its viewport is what was asked", function()
    local page, fake = open()
    local bounds
    fake.on["Runtime.evaluate"] = function() return { result = { type = "object", value = { 800, 600, 816, 680 } } } end
    fake.on["Browser.getWindowForTarget"] = function() return { windowId = 3 } end
    fake.on["Browser.setWindowBounds"] = function(p) bounds = p return {} end
    page:set_viewport(1280, 800)
    assert.same({ windowId = 3, bounds = { windowState = "normal", width = 1296, height = 880 } }, bounds)
    bounds = nil
    fake.on["Runtime.evaluate"] = function() return { result = { type = "object", value = { 1280, 800, 1296, 880 } } } end
    page:set_viewport(1280, 800)
    assert.is_nil(bounds)                                -- already that size
    assert.equal("bad_argument", H.error_of(page.set_viewport, page, 0, 10).code)
  end)
end)
