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

-- A driver of the spec's own with ref (rt/loop.lua): it records watches,
-- whether each holds the loop, and timers; the spec fires them by hand.
local function ref_driver()
  local d = { watches = {}, timers = {} }
  function d:watch(fd, events, cb)
    local h = { fd = fd, events = events, cb = cb, held = true }
    self.watches[h] = true
    return h
  end
  function d:modify(h, events) h.events = events end
  function d:unwatch(h) self.watches[h] = nil end
  function d:ref(h, yes) h.held = yes end
  function d:timer(_, cb) local h = { cb = cb }; self.timers[h] = true; return h end
  function d:cancel(h) self.timers[h] = nil end
  function d:list()
    local out = {}
    for h in pairs(self.watches) do out[#out + 1] = h end
    return out
  end
  function d:fire_read() for _, h in ipairs(self:list()) do if self.watches[h] then h.cb("r") end end end
  function d:fire_timers()
    local l = {}
    for h in pairs(self.timers) do l[#l + 1] = h end
    for _, h in ipairs(l) do if self.timers[h] then self.timers[h] = nil; h.cb() end end
  end
  return d
end

describe("the standing watch (a connection served between calls)", function()
  local task = require "devtools_tools.rt.task"
  local host_mod = require "devtools_tools.rt.host"

  local function transport()
    local t = fake({})
    function t:fd() return 42 end
    return t
  end

  it("watches the connection while it is open, holding the loop only while a task waits on it", function()
    local d, t = ref_driver(), transport()
    local c = cdp.new(t)
    local events = {}
    c:listen("S1", function(method) events[#events + 1] = method end)
    c:reside(d)
    local w = d:list()
    assert.equal(1, #w)
    assert.equal(42, w[1].fd)
    assert.is_false(w[1].held)                 -- nothing waits: the loop may end
    -- an event while nobody calls: read through the watch, its listener told
    t.queue[#t.queue + 1] = { method = "Target.attachedToTarget", params = {}, sessionId = "S1" }
    d:fire_read()
    assert.same({ "Target.attachedToTarget" }, events)
    -- a task waiting on it: the same watch holds the loop, and lets go after
    local reply
    local tk = task.spawn(d, function() reply = c:call("X.y", nil, { timeout = 5 }) end)
    assert.is_false(tk.done)
    assert.same({ w[1] }, d:list())
    assert.is_true(w[1].held)
    t.queue[#t.queue + 1] = { id = t.sent[1].id, result = {} }
    d:fire_read()
    d:fire_timers()
    assert.is_true(tk.done, tostring(tk.error))
    assert.same({}, reply)
    assert.same({ w[1] }, d:list())
    assert.is_false(w[1].held)
    -- no standing watch any more, then closed: nothing watched
    c:reside(nil)
    assert.same({}, d:list())
    c:reside(d)
    assert.equal(1, #d:list())
    c:close()
    assert.same({}, d:list())
  end)

  it("the host moves the watches of the connections it serves to the loop in use", function()
    local a, b, t = ref_driver(), ref_driver(), transport()
    local h = host_mod.new()
    local c = cdp.new(t)
    h:use(a)
    h:serve(c)
    assert.equal(1, #a:list())
    h:use(b)
    assert.same({}, a:list())
    assert.equal(1, #b:list())
    local plain = { watch = a.watch, unwatch = a.unwatch, modify = a.modify, timer = a.timer,
      cancel = a.cancel, watches = {}, timers = {} }         -- a driver without ref: no standing watch
    h:use(plain)
    assert.same({}, b:list())
    assert.is_nil(next(plain.watches))
    c:close()
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

-- issue 33: DEVTOOLS_TOOLS_DEBUG=cdp wrote what pages send (C1 controls,
-- bidirectional overrides) raw to stderr. The log is cleaned on its own:
-- what could drive a terminal or disguise a line comes out escaped.
describe("the debug log", function()
  local log = cdp.log
  local saved

  before_each(function()
    saved = { on = log.on, out = log.out, width = log.width }
  end)
  after_each(function()
    log.on, log.out, log.width = saved.on, saved.out, saved.width
  end)

  -- Collects the lines the log writes.
  local function collect()
    local lines = {}
    log.out = { write = function(_, ...) lines[#lines + 1] = table.concat({ ... }) end }
    log.on = true
    return lines
  end

  -- Whatever a line holds that a terminal would act on or hide: raw C0 (but
  -- the line's own end), DEL, C1, the bidi overrides and isolates, and any
  -- byte that is not UTF-8.
  local function hidden(line)
    line = line:gsub("\n$", "")
    if line:find("[%z\1-\31\127]") then return "a C0 control or DEL" end
    if line:find("\194[\128-\159]") then return "a C1 control" end
    if line:find("\226\128[\170-\174]") or line:find("\226\129[\166-\169]") then return "a bidi override" end
    local i = 1
    while i <= #line do                 -- UTF-8, well formed
      local b = line:byte(i)
      local n = b < 0x80 and 1 or (b >= 0xC2 and b <= 0xDF) and 2 or (b >= 0xE0 and b <= 0xEF) and 3
        or (b >= 0xF0 and b <= 0xF4) and 4 or nil
      if not n then return ("a byte that is not UTF-8 at %d"):format(i) end
      for k = 1, n - 1 do
        local c = line:byte(i + k)
        if not c or c < 0x80 or c > 0xBF then return ("a byte that is not UTF-8 at %d"):format(i) end
      end
      i = i + n
    end
    return nil
  end

  local HOSTILE = "red \27[31m bell \7 tab \t del \127 csi \194\155 2J nel \194\133"
    .. " rlo \226\128\174 fsi \226\129\168 pdi \226\129\169 ok: é € 😀"

  it("escapes controls and bidi overrides, in what is sent and what comes back", function()
    local lines = collect()
    local t = fake({ ["Runtime.evaluate"] = function(m)
      return { { id = m.id, result = { result = { type = "string", value = HOSTILE } } },
               { method = "Runtime.consoleAPICalled", params = { text = HOSTILE } } }
    end })
    local c = cdp.new(t)
    local r = c:call("Runtime.evaluate", { expression = HOSTILE })
    assert.equal(HOSTILE, r.result.value)                  -- the value itself is untouched
    c:poll()
    assert.is_true(#lines >= 3, #lines .. " lines")
    for _, line in ipairs(lines) do
      assert.is_nil(hidden(line), line)
      assert.equal("\n", line:sub(-1))                      -- one line each
      assert.is_nil(line:sub(1, -2):find("\n", 1, true))
      -- visibly: each character escaped as \uXXXX, the rest as it was
      for _, esc in ipairs({ "\\u001b[31m", "\\u0007", "tab \\t", "\\u007f", "\\u009b 2J", "\\u0085",
                              "\\u202e", "\\u2068", "\\u2069", "ok: é € 😀" }) do
        assert.truthy(line:find(esc, 1, true), esc .. " in " .. line)
      end
    end
  end)

  it("escapes a session id's bytes too, and those that are not UTF-8 as \\xNN", function()
    local lines = collect()
    local t = fake({})
    local c = cdp.new(t)
    -- an event on a session whose id no browser would send (its JSON
    -- cannot even be written back: the line says so)
    t.queue[1] = { method = "Target.detachedFromTarget", sessionId = "\255\t\194\155x\226\128\174" }
    c:poll()
    assert.equal(1, #lines)
    assert.is_nil(hidden(lines[1]), lines[1])
    assert.truthy(lines[1]:find("<- [\\xff\\u0009\\u009bx\\u202e] (a message that cannot be shown)", 1, true),
      lines[1])
  end)

  it("cuts a long message before a character the width would split", function()
    local lines = collect()
    log.width = 40
    local t = fake({ ["E"] = function(m) return { { id = m.id, result = { s = ("é"):rep(100) } } } end })
    local c = cdp.new(t)
    c:call("E")
    assert.equal(2, #lines)
    for _, line in ipairs(lines) do
      assert.is_nil(hidden(line), line)
    end
    for _, line in ipairs({ lines[2] }) do                   -- the reply: 215 bytes
      assert.is_nil(line:find("\\x", 1, true), line)       -- no stray half of a character
      assert.matches("%.%.%. %(%d+ bytes%)\n$", line)
    end
  end)

  it("leaves plain text as it is, and writes nothing when off", function()
    local clean = cdp.clean_log
    assert.equal('{"a":"b c","n":1}', clean('{"a":"b c","n":1}'))
    assert.equal("é€😀", clean("é€😀"))
    assert.equal("a\\u0009b\\u000d\\u0000c", clean("a\tb\r\0c"))
    -- overlong forms, surrogates, past U+10FFFF, a stray continuation, cut short
    assert.equal("\\xc0\\xaf \\xed\\xa0\\x80 \\xf4\\x90\\x80\\x80 \\x80 \\xe2\\x82",
      clean("\192\175 \237\160\128 \244\144\128\128 \128 \226\130"))
    local lines = collect()
    log.on = false
    local c = cdp.new(fake({ ["X"] = function(m) return { { id = m.id, result = {} } } end }))
    c:call("X")
    assert.equal(0, #lines)
  end)
end)
