-- Unit: the CDP connection over a fake transport of our own (no browser).

local cdp = require "devtools_tools.wire.cdp"
local json = require "devtools_tools.base.json"
local errors = require "devtools_tools.base.errors"
local core = require "devtools_tools.core"
local H = require "helper"

-- A scripted transport: `replies` maps a method to a function(msg) that
-- returns the messages the "browser" sends back (queued for recv).
local function fake(replies)
  local t = { sent = {}, queue = {}, closed = false }
  function t:send(text)
    if self.closed then return nil, "gone", "closed" end
    local msg = json.decode(text)
    self.sent[#self.sent + 1] = msg
    local fn = replies[msg.method]
    if fn then
      for _, out in ipairs(fn(msg) or {}) do self.queue[#self.queue + 1] = out end
    end
    return true
  end
  function t:recv(deadline)
    local m = table.remove(self.queue, 1)
    if m == "CLOSE" then self.closed = true; return nil, "peer closed", "closed" end
    if type(m) == "table" and m.too_large then return nil, "too big", "too_large", m.head end
    if m then return m end
    if self.closed then return nil, "gone", "closed" end
    while core.now() < deadline do core.sleep(0.001) end
    return nil, "timed out", "timeout"
  end
  t.recv_cdp = t.recv     -- the queue holds decoded messages already
  function t:pending() return #self.queue > 0 end
  function t:close() self.closed = true end
  return t
end

describe("cdp.Connection", function()
  it("correlates replies by id, whatever their order", function()
    local held
    local t = fake({
      ["A"] = function(m) held = m; return {} end,
      ["B"] = function(m) return { { id = m.id, result = { b = true } }, { id = held.id, result = { a = true } } } end,
    })
    local c = cdp.new(t)
    local ida = c:send("A", nil, nil, core.now() + 1)
    local idb = c:send("B", { x = 1 }, "S1", core.now() + 1)
    assert.same({ a = true }, c:await(ida, core.now() + 1, "A"))
    assert.same({ b = true }, c:await(idb, core.now() + 1, "B"))
    assert.equal("S1", t.sent[2].sessionId)
    assert.same({ x = 1 }, t.sent[2].params)
    assert.is_nil(next(c.pending))
  end)

  it("forgets requests nobody awaited once their deadline is long past; their late replies are dropped", function()
    local held = {}
    local t = fake({
      ["Old"] = function(m) held[#held + 1] = m; return {} end,
      ["Q"] = function(m) return { { id = m.id, result = {} } } end,
    })
    local c = cdp.new(t)
    local old = {}
    for i = 1, 3 do old[i] = c:send("Old", nil, nil, core.now() - 20) end
    old[4] = c:send("Old", nil, nil, core.now() - 20, true)           -- a JSON-text reply too
    local recent = c:send("Old", nil, nil, core.now() + 30)
    for _ = 1, 63 do c:await(c:send("Q", nil, nil, core.now() + 5), core.now() + 5, "Q") end
    -- the 64th await sweeps; its own request is long past its deadline, and kept
    local own = c:send("Q", nil, nil, core.now() - 20)
    assert.same({}, c:await(own, core.now() + 5, "Q"))
    for _, id in ipairs(old) do
      assert.is_nil(c.pending[id])
      assert.is_nil(c.deadlines[id])
      assert.is_nil(c.json_ids[id])
      assert.is_nil(c.pending_session[id])
    end
    assert.is_false(c.pending[recent])                                 -- still awaited
    -- the replies come at last: the forgotten ones are dropped, the recent one is taken
    for _, m in ipairs(held) do t.queue[#t.queue + 1] = { id = m.id, result = { late = m.id } } end
    assert.same({ late = recent }, c:await(recent, core.now() + 1, "Old"))
    assert.is_nil(next(c.pending))
    assert.is_nil(next(c.deadlines))
  end)

  -- A discovery cut short leaves requests unawaited; its page closed, they
  -- failed with the session; a reply that came after that took their
  -- deadline, and the sweep could never forget them (1 in 3 pages under
  -- load kept one for good).
  it("forgets a request failed with its session and never awaited, whatever comes for it later", function()
    local held = {}
    local t = fake({
      ["Old"] = function(m) held[#held + 1] = m; return {} end,
      ["Q"] = function(m) return { { id = m.id, result = {} } } end,
    })
    local c = cdp.new(t)
    local old = c:send("Old", nil, "S1", core.now() - 20)
    local json_old = c:send("Old", nil, "S1", core.now() - 20, true)
    c:end_session("S1", errors.new("disconnected", "the page was closed"))
    for _, m in ipairs(held) do t.queue[#t.queue + 1] = { id = m.id, result = {} } end
    c:poll()
    for _ = 1, 64 do c:await(c:send("Q", nil, nil, core.now() + 5), core.now() + 5, "Q") end
    for _, id in ipairs({ old, json_old }) do
      assert.is_nil(c.pending[id])
      assert.is_nil(c.pending_session[id])
    end
    assert.is_nil(next(c.deadlines))
    assert.is_nil(next(c.json_ids))
  end)

  it("sends a request its caller wrote as text, numbered like the others", function()
    local t = fake({ ["T.x"] = function(m) return { { id = m.id, result = { got = m.params.v } } } end })
    local c = cdp.new(t)
    local first = c:send("T.x", { v = 0 }, nil, core.now() + 1)
    local id = c:send_text('{"method":"T.x","sessionId":"S2","params":{"v":"a\\"b"},"id":', "S2",
      core.now() + 1, false, "T.x")
    assert.equal(first + 1, id)
    assert.same({ method = "T.x", sessionId = "S2", params = { v = 'a"b' }, id = id }, t.sent[2])
    assert.same({ got = 'a"b' }, c:await(id, core.now() + 1, "T.x"))
    assert.equal(id + 1, c:send("T.x", { v = 1 }, nil, core.now() + 1))
    -- a write the transport refuses raises, and leaves nothing waiting
    t.closed = true
    local e = H.error_of(c.send_text, c, '{"method":"T.x","id":', nil, core.now() + 1, false, "T.x")
    assert.equal("disconnected", e.code)
    assert.is_nil(c.pending[id + 2])
  end)

  it("routes events to their session's listener", function()
    local seen = {}
    local t = fake({ ["X"] = function(m)
      return { { method = "Ev.one", params = { n = 1 } },
               { method = "Ev.two", params = { n = 2 }, sessionId = "S" },
               { method = "Ev.three", params = {}, sessionId = "nobody" },
               { id = m.id, result = {} } }
    end })
    local c = cdp.new(t)
    c:listen(nil, function(method, p) seen[#seen + 1] = "browser " .. method .. " " .. p.n end)
    c:listen("S", function(method, p, s) seen[#seen + 1] = s .. " " .. method .. " " .. p.n end)
    c:call("X")
    assert.same({ "browser Ev.one 1", "S Ev.two 2" }, seen)
  end)

  it("raises protocol_error with the CDP error in details", function()
    local c = cdp.new(fake({ ["Bad"] = function(m)
      return { { id = m.id, error = { code = -32601, message = "'Bad' wasn't found" } } }
    end }))
    local e = H.error_of(c.call, c, "Bad")
    assert.equal("protocol_error", e.code)
    assert.equal(-32601, e.details.code)
    assert.matches("wasn't found", e.message)
  end)

  it("times out, then drops the late reply and stays usable", function()
    local late
    local c = cdp.new(fake({
      ["Slow"] = function(m) late = m; return {} end,
      ["Fast"] = function(m) return { { id = late.id, result = { late = true } }, { id = m.id, result = { ok = 1 } } } end,
    }))
    local t0 = core.now()
    local e = H.error_of(c.call, c, "Slow", nil, { timeout = 0.05 })
    assert.equal("timeout", e.code)
    assert.is_true(core.now() - t0 >= 0.05)
    assert.same({ ok = 1 }, c:call("Fast"))
    assert.is_nil(next(c.pending))
  end)

  it("fails every waiting call with disconnected when the transport goes", function()
    local c = cdp.new(fake({ ["Hang"] = function() return { "CLOSE" } end }))
    local id1 = c:send("Other", nil, nil, core.now() + 1)
    local e = H.error_of(c.call, c, "Hang")
    assert.equal("disconnected", e.code)
    assert.equal("disconnected", H.error_of(c.await, c, id1, core.now() + 1).code)
    assert.equal("disconnected", H.error_of(c.call, c, "Later").code)
  end)

  it("fails the call whose reply was too large, and only that one", function()
    local first
    local c = cdp.new(fake({
      ["Big"] = function(m) first = m; return {} end,
      ["Small"] = function(m)
        return { { too_large = true, head = '{"id":' .. first.id .. ',"result":{"x":"' },
                 { id = m.id, result = { small = true } } }
      end,
    }))
    local idb = c:send("Big", nil, nil, core.now() + 1)
    assert.same({ small = true }, c:call("Small"))
    local e = H.error_of(c.await, c, idb, core.now() + 1, "Big")
    assert.equal("too_large", e.code)
  end)

  it("raises protocol_error for a message that is JSON but not an object", function()
    for _, bad in ipairs({ json.decode("[1, 2]"), "text", 42, true }) do
      local t = fake({ ["X.y"] = function() return { bad } end })
      local c = cdp.new(t, { timeout = 2 })
      local err = H.error_of(c.call, c, "X.y")
      assert.are.equal("protocol_error", err.code)
      assert.matches("not an object", err.message)
    end
  end)

  it("checks timeouts", function()
    local c = cdp.new(fake({}))
    assert.equal("bad_argument", H.error_of(c.call, c, "X", nil, { timeout = -1 }).code)
    assert.equal("bad_argument", H.error_of(c.call, c, "X", nil, { timeout = "1" }).code)
    assert.equal("bad_argument", H.error_of(c.call, c, "X", nil, { timeout = 0 / 0 }).code)
  end)
end)

describe("errors", function()
  it("are tables with code and message, and print well", function()
    local e = errors.new("timeout", "too slow", { tool = "t" })
    assert.is_true(errors.is_error(e))
    assert.equal("devtools_tools: timeout: too slow", tostring(e))
    assert.equal("t", e.tool)
    assert.is_false(errors.is_error("timeout"))
  end)

  it("catch returns ours and re-raises anything else untouched", function()
    local ok, e = errors.catch(errors.raise, "stale", "gone")
    assert.is_false(ok)
    assert.equal("stale", e.code)
    assert.same({ true, 1, nil, 3 }, { errors.catch(function() return 1, nil, 3 end) })
    local other = { "not ours" }
    local ok2, got = pcall(errors.catch, function() error(other) end)
    assert.is_false(ok2)
    assert.equal(other, got)
  end)
end)
