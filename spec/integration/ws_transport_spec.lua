-- The WebSocket transport and http_get against spec/support/ws_server (a
-- libwebsockets server on 127.0.0.1) and spec/support/raw_http.lua, plus
-- connection failures against a refused port and a listener that never
-- answers.
local core = require("devtools_tools.core")
local helper = require("support.ws_helper")
local H = require("helper")

-- spec/support/raw_http.lua: canned answers no well-behaved server gives
local function helper_raw_http()
  return H.start_port_program({ "/usr/bin/lua5.4", "spec/support/raw_http.lua" })
end

local MiB = 1024 * 1024

local checked_malloc, rss_mib = H.checked_malloc, H.rss_mib

describe("websocket transport", function()
  local proc, port, t

  before_each(function()
    proc, port = helper.start()
  end)

  after_each(function()
    if t then
      t:close()
      t = nil
    end
    local pid = helper.stop(proc)
    assert.is_false(helper.alive(pid), "ws_server is still running")
    assert.is_nil(proc:pid())
  end)

  local function connect(opts)
    opts = opts or {}
    opts.deadline = opts.deadline or core.now() + 10
    local tr, msg, code = core.ws.connect("127.0.0.1", port, "/devtools/browser/test", opts)
    assert(tr, tostring(msg) .. " " .. tostring(code))
    return tr
  end

  local function roundtrip(tr, msg, timeout)
    local deadline = core.now() + (timeout or 10)
    assert.is_true(tr:send(msg, deadline))
    local reply, err, code = tr:recv(deadline)
    assert(reply, tostring(err) .. " " .. tostring(code))
    return reply
  end

  it("echoes a message", function()
    t = connect()
    assert.are.equal("hello", roundtrip(t, "hello"))
    assert.are.equal('{"id":1,"method":"Browser.getVersion"}',
      roundtrip(t, '{"id":1,"method":"Browser.getVersion"}'))
  end)

  it("sends and receives 0-byte and 1-byte messages", function()
    t = connect()
    assert.are.equal("", roundtrip(t, ""))
    assert.are.equal("x", roundtrip(t, "x"))
    assert.are.equal("", roundtrip(t, ""))
  end)

  it("names itself", function()
    t = connect()
    assert.are.equal("websocket", t:kind())
    assert.are.equal("Transport(websocket, open, 127.0.0.1:" .. port .. ")", tostring(t))
  end)

  it("gives the socket's descriptor, and nil once closed", function()
    t = connect()
    local fd = t:fd()
    assert.is_number(fd)
    -- the socket is close-on-exec, so look at it through our own pid
    local stat = assert(io.open("/proc/self/stat")):read("*l")
    local f = io.popen("readlink /proc/" .. stat:match("^%d+") .. "/fd/" .. fd)
    local target = f:read("*l")
    f:close()
    assert.matches("^socket:", target)
    t:close()
    assert.is_nil(t:fd())
  end)

  it("sends a close frame on close", function()
    t = connect()
    assert.are.equal('{"count":0,"code":0}', roundtrip(t, '{"cmd":"closes"}'))
    t:close()
    t = connect()
    assert.are.equal('{"count":1,"code":1000}', roundtrip(t, '{"cmd":"closes"}'))
  end)

  it("sends a close frame from __gc too, without waiting for the answer", function()
    t = connect()
    assert.are.equal('{"count":0,"code":0}', roundtrip(t, '{"cmd":"closes"}'))
    t = nil
    collectgarbage(); collectgarbage()
    t = connect()
    assert.are.equal('{"count":1,"code":1000}', roundtrip(t, '{"cmd":"closes"}'))
  end)

  it("closes idempotently", function()
    t = connect()
    t:close()
    t:close()
    assert.are.equal("Transport(closed)", tostring(t))
    assert.are.equal("closed", t:kind())
    local ok, _, code = t:send("x", core.now() + 1)
    assert.is_nil(ok)
    assert.are.equal("closed", code)
    ok, _, code = t:recv(core.now() + 1)
    assert.is_nil(ok)
    assert.are.equal("closed", code)
    assert.is_false(t:pending())
  end)

  describe("reassembles fragmented replies", function()
    local cases = {
      { size = 5000, frag = 1 },
      { size = 5000, frag = 7 },
      { size = 100000, frag = 125 },
      { size = 100000, frag = 126 },
      { size = 300000, frag = 4096 },
      { size = 300000, frag = 65535 },
      { size = 300000, frag = 65536 },
      { size = 300000, frag = 65537 },
      { size = 3 * MiB, frag = MiB + 1 },
    }
    for _, c in ipairs(cases) do
      it(("of %d bytes in %d-byte fragments"):format(c.size, c.frag), function()
        t = connect()
        local reply = roundtrip(t, ('{"cmd":"fragmented","size":%d,"frag":%d}'):format(c.size, c.frag))
        assert.are.equal(c.size, #reply)
        assert.is_true(reply == helper.pattern(c.size))
        assert.are.equal("after", roundtrip(t, "after"))
      end)
    end
  end)

  it("queues several messages that arrive at once, in order", function()
    t = connect()
    assert.are.equal("1", roundtrip(t, '{"cmd":"burst","count":50}'))
    -- the rest came in the same read or soon after: drain them
    local got = { "1" }
    local deadline = core.now() + 10
    while #got < 50 do
      got[#got + 1] = assert(t:recv(deadline))
    end
    for i = 1, 50 do
      assert.are.equal(tostring(i), got[i])
    end
    assert.is_false(t:pending())
  end)

  it("reports pending() when a complete message is buffered", function()
    t = connect()
    assert.is_false(t:pending())
    assert.is_true(t:send('{"cmd":"burst","count":3}', core.now() + 5))
    -- Serve the socket (flush(0) reads what came, never waits) each time it
    -- is readable, until a complete message is buffered.
    local function until_pending()
      local deadline = core.now() + 5
      while not t:pending() and core.now() < deadline do
        core.poll({ t:fd() }, { "r" }, deadline - core.now())
        t:flush(0)
      end
      return t:pending()
    end
    assert.is_true(until_pending())
    assert.are.equal("1", t:recv(core.now() + 5))
    assert.is_true(until_pending())
    assert.are.equal("2", t:recv(core.now() + 5))
    assert.is_true(until_pending())
    assert.are.equal("3", t:recv(core.now() + 5))
    assert.is_false(t:pending())
  end)

  it("receives a 64 MiB reply whole", function()
    t = connect()
    local n = 64 * MiB
    local reply = roundtrip(t, ('{"cmd":"big","size":%d}'):format(n), 120)
    assert.are.equal(n, #reply)
    assert.is_true(reply == helper.pattern(n))
    assert.are.equal("next", roundtrip(t, "next"))
  end)

  it("sends a 64 MiB request in fragments, and it arrives whole", function()
    t = connect()
    local n = 64 * MiB
    local big = string.rep("0123456789abcdef", n / 16)
    local echo = roundtrip(t, big, 120)
    assert.are.equal(n, #echo)
    assert.is_true(echo == big)
    local stats = roundtrip(t, '{"cmd":"last"}')
    local len, frames, sum = stats:match('"len":(%d+),"frames":(%d+),"sum":(%d+)')
    assert.are.equal(n, tonumber(len))
    assert.is_true(tonumber(frames) > 1, "sent as " .. frames .. " frame(s)")
    -- the byte sum of "0123456789abcdef" is 1122 (48..57 and 97..102)
    assert.are.equal((1122 * (n / 16)) % 4294967296, tonumber(sum))
  end)

  it("gives back the buffer a large request grew once it is sent", function()
    if checked_malloc then
      pending("resident memory is meaningless under ASan or valgrind")
      return
    end
    t = connect()
    local n = 48 * MiB
    collectgarbage(); collectgarbage()
    local before = rss_mib()
    local big = string.rep("0123456789abcdef", n / 16)
    assert.are.equal(n, #roundtrip(t, big, 120))
    big = nil                                             -- luacheck: ignore
    assert.are.equal("next", roundtrip(t, "next"))        -- (the echo's buffer is given back too)
    collectgarbage(); collectgarbage()
    -- kept for the connection's life, the queue would hold 48 MiB more
    local grown = rss_mib() - before
    assert.is_true(grown < 24, ("RSS grew by %.1f MiB"):format(grown))
  end)

  describe("the size limit", function()
    it("drops an over-limit message, then the next one works", function()
      t = connect()
      t:limit(1000)
      assert.are.equal(1000, t:limit())
      assert.is_true(t:send('{"cmd":"big","size":5000}', core.now() + 5))
      local ok, msg, code, head = t:recv(core.now() + 5)
      assert.is_nil(ok)
      assert.are.equal("too_large", code)
      assert.matches("5000 bytes", msg)
      assert.are.equal(helper.pattern(64), head)
      assert.are.equal("still here", roundtrip(t, "still here"))
    end)

    it("drops an over-limit fragmented message, then the next one works", function()
      t = connect()
      t:limit(1000)
      assert.is_true(t:send('{"cmd":"fragmented","size":100000,"frag":33}', core.now() + 5))
      local ok, _, code, head = t:recv(core.now() + 5)
      assert.is_nil(ok)
      assert.are.equal("too_large", code)
      assert.are.equal(helper.pattern(64), head)
      assert.are.equal("x", roundtrip(t, "x"))
    end)

    it("drops a 64 MiB message under a 1 MiB limit and stays usable", function()
      t = connect({ limit = MiB })
      assert.are.equal(MiB, t:limit())
      assert.is_true(t:send(('{"cmd":"big","size":%d}'):format(64 * MiB), core.now() + 60))
      local ok, _, code = t:recv(core.now() + 60)
      assert.is_nil(ok)
      assert.are.equal("too_large", code)
      assert.are.equal("small", roundtrip(t, "small"))
    end)

    it("accepts a message of exactly the limit", function()
      t = connect()
      t:limit(1000)
      local reply = roundtrip(t, '{"cmd":"big","size":1000}')
      assert.are.equal(1000, #reply)
    end)

    it("refuses to send a message over the limit", function()
      t = connect()
      t:limit(10)
      local ok, _, code = t:send(string.rep("y", 11), core.now() + 5)
      assert.is_nil(ok)
      assert.are.equal("too_large", code)
      assert.are.equal("0123456789", roundtrip(t, "0123456789"))
    end)
  end)

  it("times out waiting for a message, and stays usable", function()
    t = connect()
    assert.is_true(t:send('{"cmd":"silent"}', core.now() + 5))
    local t0 = core.now()
    local ok, msg, code = t:recv(t0 + 0.2)
    assert.is_nil(ok)
    assert.are.equal("timeout", code)
    assert.matches("timed out", msg)
    assert.is_true(core.now() >= t0 + 0.2)
    assert.are.equal("again", roundtrip(t, "again"))
  end)

  it("returns what has arrived when the deadline is already past", function()
    t = connect()
    assert.is_true(t:send("late", core.now() + 5))
    local got, code
    local give_up = core.now() + 5
    repeat
      core.sleep(0.01)
      local _
      got, _, code = t:recv(core.now() - 1)
      if not got then
        assert.are.equal("timeout", code)
      end
    until got or core.now() > give_up
    assert.are.equal("late", got)
  end)

  it("fds() gives the socket twice and no third; nil once closed", function()
    t = connect()
    local r, w, e = t:fds()
    assert.is_number(r)
    assert.are.equal(r, w)
    assert.is_nil(e)
    assert.are.equal(t:fd(), r)
    t:close()
    r, w, e = t:fds()
    assert.is_nil(r); assert.is_nil(w); assert.is_nil(e)
  end)

  it("is driven by recv(0) and flush(0) when its socket is ready", function()
    t = connect()
    local socket = require("socket")
    local fd = t:fds()
    local sock = { getfd = function() return fd end }
    local t0 = core.now()
    local m, _, code = t:recv(0)
    assert.is_nil(m)
    assert.are.equal("timeout", code)
    assert.is_true(core.now() - t0 < 1, "recv(0) waited")
    -- the server stalls: 16 MiB cannot all go out now
    assert.is_true(t:send('{"cmd":"stall","ms":300}', core.now() + 5))
    local big = string.rep("w", 16 * MiB)
    local ok, err, code2 = t:send(big, 0)
    assert.is_nil(ok)
    assert.are.equal("timeout", code2)
    assert.matches("still queued", err)
    assert.is_true(t:queued() > 0)
    local deadline = core.now() + 60
    local got
    while not got and core.now() < deadline do
      local wset = t:queued() > 0 and { sock } or {}
      socket.select({ sock }, wset, math.max(0, deadline - core.now()))
      if t:queued() > 0 then
        ok, _, code2 = t:flush(0)
        assert.is_true(ok or code2 == "timeout")
      end
      got = t:recv(0)
    end
    assert.is_true(got == big)
    assert.are.equal(0, t:queued())
  end)

  it("flush(deadline) times out keeping the queue, then finishes it", function()
    t = connect()
    assert.is_true(t:send('{"cmd":"stall","ms":700}', core.now() + 5))
    local big = string.rep("v", 64 * MiB)
    t:send(big, 0)
    local ok, msg, code = t:flush(core.now() + 0.1)
    assert.is_nil(ok)
    assert.are.equal("timeout", code)
    assert.matches("still queued", msg)
    assert.is_true(t:queued() > 0)
    assert.is_true(t:flush(core.now() + 60))
    assert.are.equal(0, t:queued())
    assert.is_true(assert(t:recv(core.now() + 60)) == big)
    assert.is_true(t:flush(0))
  end)

  it("keeps a message queued after a send timeout and sends it later", function()
    t = connect()
    -- the server stops reading for a while, so 64 MiB cannot all go out
    assert.is_true(t:send('{"cmd":"stall","ms":700}', core.now() + 5))
    local big = string.rep("z", 64 * MiB)
    local ok, msg, code = t:send(big, core.now() + 0.2)
    assert.is_nil(ok)
    assert.are.equal("timeout", code)
    assert.matches("still queued", msg)
    -- the next send waits behind it; both arrive, in order
    assert.is_true(t:send('{"cmd":"last"}', core.now() + 60))
    local echo = assert(t:recv(core.now() + 60))
    assert.is_true(echo == big)
    local stats = assert(t:recv(core.now() + 10))
    assert.matches('"len":' .. 64 * MiB, stats)
  end)

  it("reports closed when the server closes", function()
    t = connect()
    assert.is_true(t:send('{"cmd":"close"}', core.now() + 5))
    local ok, msg, code = t:recv(core.now() + 5)
    assert.is_nil(ok)
    assert.are.equal("closed", code)
    assert.matches("1000", msg)
    assert.matches("peer gone", tostring(t))
    ok, msg, code = t:send("x", core.now() + 1)
    assert.is_nil(ok, msg)
    assert.are.equal("closed", code)
    ok, msg, code = t:recv(core.now() + 1)
    assert.is_nil(ok)
    assert.are.equal("closed", code)
  end)

  it("reports closed when the server drops the connection", function()
    t = connect()
    assert.is_true(t:send('{"cmd":"drop"}', core.now() + 5))
    local ok, _, code = t:recv(core.now() + 5)
    assert.is_nil(ok)
    assert.are.equal("closed", code)
  end)

  it("reports closed when the server process dies", function()
    t = connect()
    proc:kill(0)
    local ok, _, code = t:recv(core.now() + 5)
    assert.is_nil(ok)
    assert.are.equal("closed", code)
  end)

  it("still delivers messages that arrived before the close", function()
    t = connect()
    assert.is_true(t:send("first", core.now() + 5))
    assert.is_true(t:send('{"cmd":"close"}', core.now() + 5))
    -- serve the socket until the close has arrived, without taking "first"
    local deadline = core.now() + 5
    while t:state() == "open" and core.now() < deadline do
      core.poll({ t:fd() }, { "r" }, deadline - core.now())
      t:flush(0)
    end
    assert.are_not.equal("open", (t:state()))
    assert.are.equal("first", t:recv(core.now() + 5))
    local ok, _, code = t:recv(core.now() + 5)
    assert.is_nil(ok)
    assert.are.equal("closed", code)
  end)

  -- issue 33: a frame head declaring 2^62 bytes waited for the deadline
  -- (lws holds a frame's payload back until its buffer fills, so nothing
  -- came up); a length over 2^40 now ends the connection at once.
  describe("a frame head declaring an impossible length", function()
    local cases = {
      { len = "4611686018427387904", body = 0 },       -- 2^62, the head alone
      { len = "4611686018427387904", body = 3 },       -- 2^62, 3 bytes of it
      { len = "1099511627777", body = 0 },             -- 2^40 + 1
    }
    for _, c in ipairs(cases) do
      it(("fails at once with bad_message: %s bytes, %d sent"):format(c.len, c.body), function()
        t = connect()
        assert.is_true(t:send(('{"cmd":"header","len":%s,"body":%d}'):format(c.len, c.body),
          core.now() + 5))
        local t0 = core.now()
        local ok, msg, code = t:recv(core.now() + 10)
        local took = core.now() - t0
        assert.is_nil(ok)
        assert.are.equal("bad_message", code, msg)
        assert.is_true(took < 1, ("took %.2f s"):format(took))      -- was the 10 s deadline
        assert.matches("declared a frame of more than 2^40 bytes", msg, 1, true)
        if c.body == 0 then assert.matches("(" .. c.len .. " still to come)", msg, 1, true) end
        assert.are.equal("closed", (t:state()))
        -- and stays so: the stream cannot be framed any more
        local _, _, again = t:recv(core.now() + 1)
        assert.are.equal("bad_message", again)
      end)
    end

    it("leaves a length of 2^40 alone (it may be read through as too_large)", function()
      t = connect()
      assert.is_true(t:send('{"cmd":"header","len":1099511627776,"body":3}', core.now() + 5))
      local _, _, code = t:recv(core.now() + 0.3)
      assert.are.equal("timeout", code)
      assert.are.equal("open", (t:state()))
    end)

    it("is a protocol_error for the CDP call that reads it, then disconnected", function()
      local cdp = require("devtools_tools.wire.cdp")
      t = connect()
      assert.is_true(t:send('{"cmd":"header","len":4611686018427387904,"body":0}', core.now() + 5))
      local conn = cdp.new(t, { timeout = 10 })
      local t0 = core.now()
      local ok, e = pcall(conn.call, conn, "Browser.getVersion")
      local took = core.now() - t0
      assert.is_false(ok)
      assert.are.equal("protocol_error", e.code, tostring(e))
      assert.is_true(took < 1, ("took %.2f s"):format(took))
      assert.matches("declared a frame of more than 2^40 bytes", e.message, 1, true)
      ok, e = pcall(conn.call, conn, "Browser.getVersion")
      assert.is_false(ok)
      assert.are.equal("disconnected", e.code, tostring(e))
    end)
  end)

  it("sends Host as host:port by default, or opts.host_header, and no Origin", function()
    t = connect()
    assert.are.equal('{"host":"127.0.0.1:' .. port .. '","origin":0}', roundtrip(t, '{"cmd":"hello"}'))
    t:close()
    t = connect({ host_header = "localhost:" .. port })
    assert.are.equal('{"host":"localhost:' .. port .. '","origin":0}', roundtrip(t, '{"cmd":"hello"}'))
  end)

  it("is talking to a server that does reject an Origin header with 403", function()
    local key = "dGhlIHNhbXBsZSBub25jZQ=="
    local base = "GET /x HTTP/1.1\r\nHost: 127.0.0.1:" .. port .. "\r\nUpgrade: websocket\r\n"
      .. "Connection: Upgrade\r\nSec-WebSocket-Key: " .. key .. "\r\nSec-WebSocket-Version: 13\r\n"
    assert.matches("^HTTP/1%.1 101", helper.raw_status(port, base .. "\r\n"))
    assert.matches("^HTTP/1%.%d 403",
      helper.raw_status(port, base .. "Origin: http://127.0.0.1:" .. port .. "\r\n\r\n"))
  end)

  it("connects by localhost", function()
    local tr = assert(core.ws.connect("localhost", port, "/x", { deadline = core.now() + 10 }))
    assert.are.equal("hi", roundtrip(tr, "hi"))
    tr:close()
  end)

  it("fails with connect_failed and the status when the handshake is refused", function()
    for _, status in ipairs({ 403, 500 }) do
      local tr, msg, code = core.ws.connect("127.0.0.1", port, "/reject/" .. status,
        { deadline = core.now() + 10 })
      assert.is_nil(tr)
      assert.are.equal("connect_failed", code)
      assert.matches("127.0.0.1:" .. port, msg, 1, true)
      assert.matches(tostring(status), msg, 1, true)
    end
  end)

  it("lets an unreferenced transport be collected", function()
    local tr = connect()
    assert.are.equal("gc", roundtrip(tr, "gc"))
    tr = nil -- luacheck: ignore
    collectgarbage()
    collectgarbage()
    t = connect()
    assert.are.equal("ok", roundtrip(t, "ok"))
  end)

  describe("core.http.start", function()
    local socket = require("socket")

    -- An event loop's round: waits until the request's socket is ready.
    local function wait_ready(req, deadline)
      local r, w = req:fds()
      local function o(fd) return fd and { { getfd = function() return fd end } } or {} end
      socket.select(o(r), o(w), math.max(0, deadline - core.now()))
    end

    it("returns at once and finishes through step() when its socket is ready", function()
      local req = assert(core.http.start("127.0.0.1", port, "/json/version", core.now() + 10))
      assert.matches("^HttpRequest%(GET http://127.0.0.1:%d+/json/version, %a+%)$", tostring(req))
      local deadline = core.now() + 10
      local status, body = req:step()
      local r, w
      while status == false and core.now() < deadline do
        r, w = req:fds()
        assert.is_true(r ~= nil or w ~= nil, "going, with nothing to watch")
        wait_ready(req, deadline)
        status, body = req:step()
      end
      assert.are.equal(200, status)
      assert.matches('"webSocketDebuggerUrl"', body, 1, true)
      assert.are.same({ 200, body }, { req:step() })       -- the outcome, again
      r, w = req:fds()
      assert.is_nil(r); assert.is_nil(w)
      assert.matches("done%)$", tostring(req))
      req:close()
      assert.are.equal("closed", select(3, req:step()))
    end)

    it("gives the same answers as http_get (the same machine)", function()
      local req = assert(core.http.start("127.0.0.1", port, "/nothing-here", core.now() + 10))
      assert.are.equal(404, (req:step(core.now() + 10)))
      req:close()
    end)

    it("fails with timeout at its deadline, and connect_failed on a refused port", function()
      local server, sport = helper.silent_listener()
      local t0 = core.now()
      local req = assert(core.http.start("127.0.0.1", sport, "/json/version", t0 + 0.3))
      assert.is_false(req:step())
      local ok, msg, code = req:step(t0 + 30)       -- cut at the request's deadline
      assert.is_nil(ok)
      assert.are.equal("timeout", code)
      assert.matches("timed out reading the response", msg, 1, true)
      assert.is_true(core.now() - t0 < 15)
      req:close()
      server:close()
      local rport = helper.refused_port()
      local req2, m2, c2 = core.http.start("127.0.0.1", rport, "/x", core.now() + 10)
      if req2 then                                  -- refused later, while it is stepped
        local st
        st, m2, c2 = req2:step()
        while st == false do
          wait_ready(req2, core.now() + 10)
          st, m2, c2 = req2:step()
        end
        req2:close()
      end
      assert.are.equal("connect_failed", c2)
      assert.matches("127.0.0.1:" .. rport, m2, 1, true)
    end)
  end)

  describe("core.http.get", function()
    it("gets /json/version", function()
      local status, body = core.http.get("127.0.0.1", port, "/json/version", core.now() + 10)
      assert.are.equal(200, status)
      assert.matches('"webSocketDebuggerUrl":"ws://127.0.0.1:' .. port .. '/devtools/browser/test"', body, 1, true)
    end)

    it("returns other statuses as they are", function()
      local status = core.http.get("127.0.0.1", port, "/nothing-here", core.now() + 10)
      assert.are.equal(404, status)
    end)

    it("sends no Origin header (the server answers 403 to one)", function()
      assert.matches("^HTTP/1%.%d 403", helper.raw_status(port,
        "GET /json/version HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://x\r\n\r\n"))
      assert.are.equal(200, (core.http.get("127.0.0.1", port, "/json/version", core.now() + 10)))
    end)

    it("takes a body of 1 MiB and refuses a bigger one", function()
      local status, body = core.http.get("127.0.0.1", port, "/size/" .. MiB, core.now() + 10)
      assert.are.equal(200, status)
      assert.are.equal(MiB, #body)
      local ok, msg, code = core.http.get("127.0.0.1", port, "/size/" .. (MiB + 1), core.now() + 10)
      assert.is_nil(ok)
      assert.are.equal("too_large", code)
      assert.is_string(msg)
    end)

    it("reads a chunked body", function()
      for _, n in ipairs({ 0, 1, 999, 1000, 1001, 250000, MiB }) do
        local status, body = core.http.get("127.0.0.1", port, "/chunked/" .. n, core.now() + 10)
        assert.are.equal(200, status)
        assert.are.equal(n, #body)
        assert.is_true(body == string.rep("x", n))
      end
      local ok, _, code = core.http.get("127.0.0.1", port, "/chunked/" .. (MiB + 1), core.now() + 10)
      assert.is_nil(ok)
      assert.are.equal("too_large", code)
    end)

    it("connects by localhost", function()
      assert.are.equal(200, (core.http.get("localhost", port, "/json/version", core.now() + 10)))
    end)

    it("frames what a server may answer: HEAD, interim answers, a Content-Length it cannot read", function()
      local raw, rport = helper_raw_http()
      local t0 = core.now()
      -- an answer to HEAD has no body, whatever its Content-Length says
      local status, body = core.http.request("127.0.0.1", rport, "/head",
        { method = "HEAD", deadline = core.now() + 5 })
      assert.are.equal(200, status)
      assert.are.equal("", body)
      assert.is_true(core.now() - t0 < 3)                -- not when the server closes
      -- 100 and 103 come before the answer
      status, body = core.http.get("127.0.0.1", rport, "/continue", core.now() + 5)
      assert.are.equal(200, status)
      assert.are.equal("hello", body)
      -- a value cut to fit, or not a number: an error, not a body lost
      for _, path in ipairs({ "/zeros", "/minus" }) do
        local ok, msg, code = core.http.get("127.0.0.1", rport, path, core.now() + 5)
        assert.is_nil(ok)
        assert.are.equal("bad_message", code)
        assert.matches("Content%-Length is not a number", msg)
      end
      -- a chunked body that comes a byte at a time: the walk resumes where
      -- it stopped, whatever the read cut (a size line, an extension, the
      -- CR LF after a payload)
      status, body = core.http.get("127.0.0.1", rport, "/drip", core.now() + 10)
      assert.are.equal(200, status)
      assert.are.equal("abc" .. string.rep("d", 17) .. string.rep("e", 10), body)
      raw:close(0)
    end)

    it("rejects a bad path", function()
      assert.has_error(function() core.http.get("127.0.0.1", port, "json/version") end)
      assert.has_error(function() core.http.get("127.0.0.1", port, "/a b") end)
      assert.has_error(function() core.http.get("127.0.0.1", 0, "/") end)
    end)
  end)
end)

describe("connection failures", function()
  it("ws_connect to a refused port fails with connect_failed at once", function()
    local port = helper.refused_port()
    local t0 = core.now()
    local tr, msg, code = core.ws.connect("127.0.0.1", port, "/x", { deadline = t0 + 30 })
    assert.is_nil(tr)
    assert.are.equal("connect_failed", code)
    assert.matches("127.0.0.1:" .. port, msg, 1, true)
    -- not at the deadline
    assert.is_true(core.now() - t0 < 15)
  end)

  it("http_get to a refused port fails with connect_failed at once", function()
    local port = helper.refused_port()
    local t0 = core.now()
    local ok, msg, code = core.http.get("127.0.0.1", port, "/json/version", t0 + 30)
    assert.is_nil(ok)
    assert.are.equal("connect_failed", code)
    assert.matches("127.0.0.1:" .. port, msg, 1, true)
    assert.is_true(core.now() - t0 < 15)
  end)

  it("ws_connect to a listener that never answers times out at the deadline", function()
    local server, port = helper.silent_listener()
    local t0 = core.now()
    local tr, msg, code = core.ws.connect("127.0.0.1", port, "/x", { deadline = t0 + 0.5 })
    server:close()
    assert.is_nil(tr)
    assert.are.equal("timeout", code)
    assert.matches("127.0.0.1:" .. port, msg, 1, true)
    assert.is_true(core.now() >= t0 + 0.5)
  end)

  it("http_get from a listener that never answers times out at the deadline", function()
    local server, port = helper.silent_listener()
    local t0 = core.now()
    local ok, _, code = core.http.get("127.0.0.1", port, "/json/version", t0 + 0.5)
    server:close()
    assert.is_nil(ok)
    assert.are.equal("timeout", code)
    assert.is_true(core.now() >= t0 + 0.5)
  end)

  it("ws_connect rejects bad arguments", function()
    assert.has_error(function() core.ws.connect("127.0.0.1", 0, "/x") end)
    assert.has_error(function() core.ws.connect("127.0.0.1", 70000, "/x") end)
    assert.has_error(function() core.ws.connect("127.0.0.1", 80, "x") end)
    assert.has_error(function() core.ws.connect("", 80, "/x") end)
    assert.has_error(function() core.ws.connect("127.0.0.1", 80, "/x", { limit = 0 }) end)
  end)
end)

describe("ws_connect{async = true}", function()
  local socket = require("socket")

  -- One round of an event loop: waits until the transport's socket is
  -- readable (or writable while bytes are queued) or the deadline.
  local function wait_ready(t, deadline)
    local fd = t:fds()
    if fd == nil then return end
    local o = { getfd = function() return fd end }
    socket.select({ o }, t:queued() > 0 and { o } or {}, math.max(0, deadline - core.now()))
  end

  it("returns at once, connecting; recv(0)/flush(0) drive the handshake", function()
    local proc, port = helper.start()
    local t = assert(core.ws.connect("127.0.0.1", port, "/devtools/browser/test",
      { async = true, deadline = core.now() + 10 }))
    assert.are.equal("connecting", t:state())
    assert.is_number((t:fds()))                     -- something to watch already
    -- a message sent while connecting is queued, and goes once open
    local ok, _, code = t:send("early", 0)
    assert.is_nil(ok)
    assert.are.equal("timeout", code)
    assert.is_true(t:queued() > 0)
    local deadline = core.now() + 10
    local got
    while not got and core.now() < deadline do
      wait_ready(t, deadline)
      t:flush(0)
      got = t:recv(0)
    end
    assert.are.equal("early", got)
    assert.are.equal("open", t:state())
    assert.are.equal("after", (function()
      assert.is_true(t:send("after", core.now() + 5))
      return t:recv(core.now() + 5)
    end)())
    t:close()
    assert.are.equal("closed", t:state())
    helper.stop(proc)
  end)

  it("a blocking recv drives the handshake too", function()
    local proc, port = helper.start()
    local t = assert(core.ws.connect("127.0.0.1", port, "/devtools/browser/test",
      { async = true, deadline = core.now() + 10 }))
    assert.is_true(t:send("hi", core.now() + 10))
    assert.are.equal("hi", t:recv(core.now() + 10))
    t:close()
    helper.stop(proc)
  end)

  it("ends closed with timeout when the handshake misses its deadline", function()
    local server, port = helper.silent_listener()
    local t0 = core.now()
    local t = assert(core.ws.connect("127.0.0.1", port, "/x", { async = true, deadline = t0 + 0.3 }))
    assert.are.equal("connecting", t:state())
    local m, msg, code = t:recv(0)
    assert.is_nil(m)
    assert.are.equal("timeout", code)
    -- a long wait is cut at the handshake's deadline
    m, msg, code = t:recv(t0 + 30)
    assert.is_nil(m)
    assert.are.equal("timeout", code)
    assert.matches("timed out connecting to 127.0.0.1:" .. port, msg, 1, true)
    assert.is_true(core.now() - t0 < 15)
    local st, why = t:state()
    assert.are.equal("closed", st)
    assert.matches("timed out connecting", why)
    t:close()
    server:close()
  end)

  it("reports a refused connection as connect_failed", function()
    local port = helper.refused_port()
    local t, msg, code = core.ws.connect("127.0.0.1", port, "/x",
      { async = true, deadline = core.now() + 10 })
    if t then                       -- refused later, while it is driven
      local deadline = core.now() + 10
      while t:state() == "connecting" and core.now() < deadline do
        wait_ready(t, deadline)
        t:recv(0)
      end
      local st
      st, msg = t:state()
      assert.are.equal("closed", st)
      local _
      _, msg, code = t:recv(0)
      t:close()
    end
    assert.are.equal("connect_failed", code)
    assert.matches("127.0.0.1:" .. port, msg, 1, true)
  end)
end)
