-- The WebSocket transport and http_get against real headless Chromium
-- (--remote-debugging-port=0; the port and path come from DevToolsActivePort).
-- One browser serves the whole file; it is closed at the end and must leave
-- no process and no profile directory behind.
local core = require("devtools_tools.core")
local cjson = require("cjson")
local helper = require("support.ws_helper")

local CHROMIUM = os.getenv("DEVTOOLS_TOOLS_CHROME") or "/usr/lib/chromium/chromium"

local function launch()
  local dir = assert(core.fs.mkdtemp("dt-ws-chromium-"))
  local proc, msg = core.process.spawn({ CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
    "--no-first-run", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--disable-quic", "--remote-debugging-port=0",
    "--user-data-dir=" .. dir, "about:blank" }, { cleanup_dir = dir })
  assert(proc, msg)
  local deadline = core.now() + 30
  while core.now() < deadline do
    local f = io.open(dir .. "/DevToolsActivePort")
    if f then
      local port, path = f:read("*l"), f:read("*l")
      f:close()
      if port and path then
        return proc, dir, tonumber(port), path
      end
    end
    if not proc:running() then
      break
    end
    core.sleep(0.02)
  end
  local out = proc:stderr()
  proc:close(0)
  error("chromium did not write DevToolsActivePort: " .. out)
end

describe("websocket transport with Chromium", function()
  local proc, dir, port, path, t
  local next_id = 0

  setup(function()
    proc, dir, port, path = launch()
  end)

  teardown(function()
    if t then
      t:close()
    end
    local pid = proc:pid()
    proc:close()
    assert.is_false(helper.alive(pid), "chromium is still running")
    assert.is_nil(io.open(dir .. "/DevToolsActivePort"), "the profile was not removed")
  end)

  -- Sends a CDP command and returns its decoded reply, skipping events.
  local function call(tr, method, params, session, timeout)
    next_id = next_id + 1
    local deadline = core.now() + (timeout or 30)
    local msg = { id = next_id, method = method, params = params, sessionId = session }
    assert.is_true(tr:send(cjson.encode(msg), deadline))
    while true do
      local text, err, code = tr:recv(deadline)
      assert(text, tostring(err) .. " " .. tostring(code))
      local reply = cjson.decode(text)
      if reply.id == next_id then
        assert(reply.result, text:sub(1, 300))
        return reply.result, #text
      end
    end
  end

  it("serves /json/version over http_get", function()
    local status, body = core.http.get("127.0.0.1", port, "/json/version", core.now() + 10)
    assert.are.equal(200, status)
    local v = cjson.decode(body)
    assert.are.equal("ws://127.0.0.1:" .. port .. path, v.webSocketDebuggerUrl)
    assert.matches("^Chrome/", v.Browser)
  end)

  it("connects and answers Browser.getVersion", function()
    t = assert(core.ws.connect("127.0.0.1", port, path, { deadline = core.now() + 10 }))
    assert.are.equal("Transport(websocket, open, 127.0.0.1:" .. port .. ")", tostring(t))
    local v = call(t, "Browser.getVersion")
    assert.matches("^Chrome/", v.product)
    assert.are.equal("1.3", v.protocolVersion)
  end)

  it("receives an 8 MB reply whole", function()
    t = t or assert(core.ws.connect("127.0.0.1", port, path, { deadline = core.now() + 10 }))
    local target = call(t, "Target.createTarget", { url = "about:blank" })
    local attached = call(t, "Target.attachToTarget", { targetId = target.targetId, flatten = true })
    local r, size = call(t, "Runtime.evaluate",
      { expression = '"x".repeat(8e6)', returnByValue = true }, attached.sessionId, 60)
    assert.are.equal(8e6, #r.result.value)
    assert.is_true(r.result.value == string.rep("x", 8e6))
    assert.is_true(size > 8e6)
    -- and the connection goes on
    assert.are.equal(2, call(t, "Runtime.evaluate",
      { expression = "1 + 1", returnByValue = true }, attached.sessionId).result.value)
    call(t, "Target.closeTarget", { targetId = target.targetId })
  end)

  it("sends a 10 MB request in fragments that Chromium accepts", function()
    t = t or assert(core.ws.connect("127.0.0.1", port, path, { deadline = core.now() + 10 }))
    local target = call(t, "Target.createTarget", { url = "about:blank" })
    local attached = call(t, "Target.attachToTarget", { targetId = target.targetId, flatten = true })
    local s = string.rep("y", 10e6)
    local r = call(t, "Runtime.evaluate",
      { expression = '"' .. s .. '".length', returnByValue = true }, attached.sessionId, 60)
    assert.are.equal(10e6, r.result.value)
    call(t, "Target.closeTarget", { targetId = target.targetId })
  end)

  it("drops a reply over the limit and goes on", function()
    t = t or assert(core.ws.connect("127.0.0.1", port, path, { deadline = core.now() + 10 }))
    local target = call(t, "Target.createTarget", { url = "about:blank" })
    local attached = call(t, "Target.attachToTarget", { targetId = target.targetId, flatten = true })
    t:limit(1024 * 1024)
    next_id = next_id + 1
    local id = next_id
    assert.is_true(t:send(cjson.encode({ id = id, method = "Runtime.evaluate", sessionId = attached.sessionId,
      params = { expression = '"x".repeat(2e6)', returnByValue = true } }), core.now() + 10))
    local deadline = core.now() + 30
    local ok, code, head
    repeat
      local _
      ok, _, code, head = t:recv(deadline)
    until not ok
    assert.are.equal("too_large", code)
    assert.matches('"id":' .. id .. ",", head, 1, true)
    t:limit(256 * 1024 * 1024)
    assert.are.equal(3, call(t, "Runtime.evaluate",
      { expression = "1 + 2", returnByValue = true }, attached.sessionId).result.value)
    call(t, "Target.closeTarget", { targetId = target.targetId })
  end)

  it("times out on recv with nothing to read, and stays usable", function()
    t = t or assert(core.ws.connect("127.0.0.1", port, path, { deadline = core.now() + 10 }))
    -- events of the closed targets may still come: read until it is quiet
    local give_up = core.now() + 20
    local ok, code
    repeat
      local _
      ok, _, code = t:recv(core.now() + 0.3)
      if ok then
        assert.is_nil(cjson.decode(ok).id)
      end
    until not ok or core.now() > give_up
    assert.is_nil(ok)
    assert.are.equal("timeout", code)
    assert.matches("^Chrome/", call(t, "Browser.getVersion").product)
  end)

  it("fails with connect_failed and Chromium's status for a Host it refuses", function()
    local tr, msg, code = core.ws.connect("127.0.0.1", port, path,
      { deadline = core.now() + 10, host_header = "example.com" })
    assert.is_nil(tr)
    assert.are.equal("connect_failed", code)
    assert.matches("500", msg, 1, true)
  end)

  it("fails with connect_failed for an unknown path", function()
    local tr, msg, code = core.ws.connect("127.0.0.1", port, "/devtools/browser/none",
      { deadline = core.now() + 10 })
    assert.is_nil(tr)
    assert.are.equal("connect_failed", code)
    assert.matches("127.0.0.1:" .. port, msg, 1, true)
  end)

  it("closes idempotently, and Chromium keeps running for new connections", function()
    t = t or assert(core.ws.connect("127.0.0.1", port, path, { deadline = core.now() + 10 }))
    t:close()
    t:close()
    assert.are.equal("Transport(closed)", tostring(t))
    assert.is_true(proc:running())
    t = assert(core.ws.connect("127.0.0.1", port, path, { deadline = core.now() + 10 }))
    assert.matches("^Chrome/", call(t, "Browser.getVersion").product)
  end)

  it("reports closed when the browser goes away", function()
    t = t or assert(core.ws.connect("127.0.0.1", port, path, { deadline = core.now() + 10 }))
    proc:kill(0)
    local ok, _, code = t:recv(core.now() + 10)
    assert.is_nil(ok)
    assert.are.equal("closed", code)
  end)
end)
