-- The pipe transport and the process object, against small real children.

local core = require "devtools_tools.core"
local H = require "helper"

local function echo_child()
  local proc, t = core.process.spawn({ H.support("pipe_echo") }, { pipe = true })
  assert(proc, t)
  return proc, t
end

local function soon(s) return core.now() + (s or 5) end

local checked_malloc, rss_mib = H.checked_malloc, H.rss_mib

describe("pipe transport", function()
  it("frames NUL-terminated messages both ways", function()
    local proc, t = echo_child()
    for _, m in ipairs({ "hello", "", "x", '{"id":1}', "\xff\xfe bytes" }) do
      assert.is_true(t:send(m, soon()))
      assert.equal(m, t:recv(soon()))
    end
    assert.equal("pipe", t:kind())
    assert.matches("^Transport%(pipe, open, pid %d+%)$", tostring(t))
    assert.is_number(t:fd())
    t:close()
    t:close()
    assert.equal("Transport(closed)", tostring(t))
    assert.is_nil(t:fd())
    assert.equal("closed", select(3, t:recv(soon())))
    proc:close()
  end)

  it("reassembles a message written one byte at a time", function()
    local proc, t = echo_child()
    t:send("!split", soon())
    assert.equal("split-message", t:recv(soon()))
    t:send("!two", soon())
    assert.equal("one", t:recv(soon()))
    assert.is_true(t:pending())
    assert.equal("two", t:recv(soon()))
    assert.is_false(t:pending())
    t:close(); proc:close()
  end)

  it("carries 64 MiB each way", function()
    local proc, t = echo_child()
    local big = string.rep("abcdefgh", 8 * 1024 * 1024)
    assert.is_true(t:send(big, soon(30)))
    local back = t:recv(soon(30))
    assert.equal(#big, #back)
    assert.is_true(back == big)
    t:send("!big " .. 64 * 1024 * 1024, soon())
    assert.equal(64 * 1024 * 1024, #t:recv(soon(30)))
    t:close(); proc:close()
  end)

  it("gives back the buffer of a large message as soon as it is handed out", function()
    if checked_malloc then
      pending("resident memory is meaningless under ASan or valgrind")
      return
    end
    local proc, t = echo_child()
    local n = 48 * 1024 * 1024
    collectgarbage(); collectgarbage()
    local before = rss_mib()
    t:send("!big " .. n, soon())
    local m = t:recv(soon(30))
    assert.equal(n, #m)
    m = nil                                               -- luacheck: ignore
    collectgarbage(); collectgarbage()
    -- kept until the next recv, the buffer would hold 48 MiB more
    local grown = rss_mib() - before
    assert.is_true(grown < 24, ("RSS grew by %.1f MiB"):format(grown))
    -- decoded: the same once the value is built
    local big = '{"id":3,"s":"' .. string.rep("y", n) .. '"}'
    t:send(big, soon(30))
    big = nil                                             -- luacheck: ignore
    collectgarbage(); collectgarbage()
    before = rss_mib()
    local v = t:recv_cdp(soon(30))
    assert.equal(3, v.id)
    assert.equal(n, #v.s)
    v = nil                                               -- luacheck: ignore
    collectgarbage(); collectgarbage()
    grown = rss_mib() - before
    assert.is_true(grown < 24, ("RSS grew by %.1f MiB"):format(grown))
    t:close(); proc:close()
  end)

  it("keeps a small message right behind a big one when it trims the buffer", function()
    local proc, t = echo_child()
    t:send("!big " .. 20 * 1024 * 1024, soon())
    t:send("behind", soon())
    assert.equal(20 * 1024 * 1024, #t:recv(soon(30)))
    assert.equal("behind", t:recv(soon()))
    assert.is_false(t:pending())
    t:close(); proc:close()
  end)

  it("drops a message over the limit with too_large and keeps going", function()
    local proc, t = echo_child()
    assert.equal(256 * 1024 * 1024, t:limit())
    t:limit(1000)
    local ok, err, code = t:send(string.rep("y", 1001), soon())
    assert.is_nil(ok)
    assert.equal("too_large", code)
    assert.matches("over the limit", err)
    t:send("!big 5000", soon())
    local m, e2, c2, head = t:recv(soon())
    assert.is_nil(m)
    assert.equal("too_large", c2)
    assert.matches("5000 bytes", e2)
    assert.equal(string.rep("x", #head), head)
    t:send("after", soon())
    assert.equal("after", t:recv(soon()))
    t:close(); proc:close()
  end)

  it("names the head of a message over the limit that ends in a later recv", function()
    -- the child writes 200 bytes of a message, waits for a byte from us,
    -- then writes the rest
    local body = '{"id":7,"result":{"value":"' .. string.rep("x", 300) .. '"}}'
    local proc, t = core.process.spawn({ "/bin/sh", "-c", ("printf '%%s' '%s' >&4; dd bs=1 count=1 <&3 2>/dev/null; "
      .. "printf '%%s\\000' '%s' >&4; exec sleep 30"):format(body:sub(1, 200), body:sub(201)) }, { pipe = true })
    t:limit(100)
    local rfd = t:fds()
    assert.is_true(core.poll({ rfd }, { "r" }, 10)[1] ~= nil)    -- the first part is there
    local m, _, code = t:recv_cdp(core.now())                   -- read, over the limit: dropping
    assert.is_nil(m)
    assert.equal("timeout", code)
    t:send("go", soon())
    local m2, err, code2, head = t:recv_cdp(soon())
    assert.is_nil(m2)
    assert.equal("too_large", code2)
    assert.matches("330 bytes", err)
    assert.equal(body:sub(1, #head), head)
    assert.is_true(#head > 8)
    t:close(); proc:close(0)
  end)

  it("times out reading, and stays usable", function()
    local proc, t = echo_child()
    local t0 = core.now()
    local m, _, code = t:recv(core.now() + 0.1)
    assert.is_nil(m)
    assert.equal("timeout", code)
    assert.is_true(core.now() - t0 >= 0.1)
    t:send("still", soon())
    assert.equal("still", t:recv(soon()))
    t:close(); proc:close()
  end)

  it("refuses a NaN deadline (it waited for ever)", function()
    local proc, t = echo_child()
    for _, call in ipairs({
      function() return t:recv(0 / 0) end,
      function() return t:send("x", 0 / 0) end,
      function() return proc:wait(0 / 0) end,
      function() return core.poll({ 0 }, { "r" }, 0 / 0) end,
      function() return core.ws.connect("127.0.0.1", 1, "/", { deadline = 0 / 0 }) end,
      function() return core.http.request("127.0.0.1", 1, "/", { deadline = 0 / 0 }) end,
    }) do
      local ok, err = pcall(call)
      assert.is_false(ok)
      assert.matches("not NaN", err)
    end
    t:send("still", soon())
    assert.equal("still", t:recv(soon()))
    t:close(); proc:close()
  end)

  it("times out writing to a child that never reads", function()
    -- sleep holds fd 3 open and never reads it: the pipe fills up
    local proc, t = core.process.spawn({ "/bin/sleep", "30" }, { pipe = true })
    local t0 = core.now()
    local ok, err, code = t:send(string.rep("z", 8 * 1024 * 1024), core.now() + 0.3)
    assert.is_nil(ok)
    assert.equal("timeout", code)
    assert.matches("still queued", err)
    assert.is_true(core.now() - t0 < 3)
    t:close(); proc:close(0)
  end)

  it("keeps its deadlines while the child writes its output without end", function()
    -- dd writes zeros to its stdout (our output ring) faster than the ring
    -- takes them: the pipe is never empty
    local proc, t = core.process.spawn({ "/bin/dd", "if=/dev/zero", "bs=65536", "status=none" }, { pipe = true })
    for _, step in ipairs({
      function() return t:recv(core.now() + 0.3) end,
      function() return t:send(string.rep("z", 8 * 1024 * 1024), core.now() + 0.3) end,
      function() return proc:wait(core.now() + 0.3) end,
    }) do
      local t0 = core.now()
      local ok, _, code = step()
      assert.is_nil(ok)
      assert.equal("timeout", code)
      assert.is_true(core.now() - t0 < 3, "took " .. (core.now() - t0) .. " s")
    end
    local t0 = core.now()
    t:close()
    assert.is_true(core.now() - t0 < 3)
    proc:close(0)
  end)

  it("reports closed when the child exits", function()
    local proc, t = echo_child()
    t:send("!exit", soon())
    local m, _, code = t:recv(soon())
    assert.is_nil(m)
    assert.equal("closed", code)
    assert.equal("exit", (proc:wait(soon())))
    t:close(); proc:close()
  end)

  it("leaves the host's SIGPIPE alone: a write to a child gone is an error, not the end of the program", function()
    -- A fresh interpreter with SIGPIPE at its default action (whatever
    -- this one has). It prints whether SIGPIPE is ignored after each step
    -- (SigIgn bit 13: 0x1000), then writes to a child that has exited.
    local script = [[
      package.cpath = "]] .. H.build .. [[/?.so;" .. package.cpath
      local function ignored()
        local f = assert(io.open("/proc/self/status"))
        local mask = tonumber(f:read("a"):match("SigIgn:%s*(%x+)"), 16)
        f:close()
        return math.floor(mask / 0x1000) % 2 == 1 and "ignored" or "default"
      end
      local out = { ignored() }
      local core = require "devtools_tools.core"
      out[#out + 1] = ignored()
      core.ws.connect("127.0.0.1", 1, "/", { deadline = core.now() + 2 })   -- refused
      out[#out + 1] = ignored()
      local proc, t = core.process.spawn({ "/bin/true" }, { pipe = true })
      proc:wait(core.now() + 5)
      local ok, err, code = t:send(string.rep("x", 70000), core.now() + 5)
      out[#out + 1] = tostring(ok) .. " " .. tostring(code) .. " " .. tostring(err)
      out[#out + 1] = ignored()
      io.stdout:write(table.concat(out, "\n"), "\nalive\n")
    ]]
    local got = H.run_lua(script, "env --default-signal=PIPE ")
    assert.equal("default\ndefault\ndefault\nnil closed writing to the browser: Broken pipe\ndefault\nalive\nrc=0\n", got)
  end)

  it("fails spawn_failed, keeping no descriptor, when none is free at 10 or above", function()
    -- a fresh interpreter allowed 10 descriptors: the child's ends of the
    -- pipe cannot be moved above 4 (before, spawn succeeded with a child
    -- missing fd 4 and leaked two descriptors)
    local script = [[
      package.cpath = "]] .. H.build .. [[/?.so;" .. package.cpath
      local core = require "devtools_tools.core"
      local function fds()                   -- how many can still be opened
        local t = {}
        while true do
          local f = io.open("/dev/null")
          if not f then break end
          t[#t + 1] = f
        end
        for _, f in ipairs(t) do f:close() end
        return #t
      end
      local before = fds()
      local proc, err, code = core.process.spawn({ "/bin/true" }, { pipe = true })
      io.stdout:write(tostring(proc), "\n", tostring(code), "\n", tostring(err), "\n",
        tostring(fds() == before), "\n")
    ]]
    local got = H.run_lua(script, "ulimit -n 10 && ")
    assert.equal("nil\nspawn_failed\ncannot create pipes: no file descriptor free at 10 or above "
      .. "(Invalid argument)\ntrue\nrc=0\n", got)
  end)

  it("recv_cdp decodes JSON straight from the buffer; recv gives the raw text", function()
    local proc, t = echo_child()
    t:send('{"id":7,"result":{"a":[1,2]}}', soon())
    local v = t:recv_cdp(soon())
    assert.equal(7, v.id)
    assert.same({ 1, 2 }, v.result.a)
    t:send("not json", soon())
    local m, _, code = t:recv_cdp(soon())
    assert.is_nil(m)
    assert.equal("bad_message", code)
    t:close(); proc:close()
  end)

  -- recv_cdp(deadline, ids): the JSON text of a wanted reply's string
  -- result is decoded in place, into result.result.json
  local function reply(id, value_json, extra)
    return '{"id":' .. id .. ',"result":{"result":{"type":"string","value":' .. value_json .. '}}' ..
      (extra or "") .. '}'
  end
  local inner_cases = {
    -- message, ids, expected result.result (json = decoded, value = string)
    { reply(5, core.json.encode('{"n":0,"v":{"a":[1,2],"s":"x\\"y"}}')), { [5] = true },
      { type = "string", json = { n = 0, v = { a = { 1, 2 }, s = 'x"y' } } } },
    { reply(5, '"[1,2]"', ',"sessionId":"S1"'), { [5] = true }, { type = "string", json = { 1, 2 } },
      { sessionId = "S1" } },
    { reply(5, '"null"'), { [5] = true }, { type = "string", json = core.null } },
    { reply(5, '"\\"text\\""'), { [5] = true }, { type = "string", json = "text" } },
    { reply(5, '"[1,2]"'), { [6] = true }, { type = "string", value = "[1,2]" } },
    { reply(5, '"[1,2]"'), { [5] = false }, { type = "string", value = "[1,2]" } },
    { reply(5, '"[1,2]"'), {}, { type = "string", value = "[1,2]" } },
    -- "id" after "result": left as a string (CDP writes the id first)
    { '{"result":{"result":{"type":"string","value":"[1]"}},"id":5}', { [5] = true },
      { type = "string", value = "[1]" } },
    { '{"id":5,"result":{"result":{"type":"number","value":3}}}', { [5] = true },
      { type = "number", value = 3 } },
    { '{"id":5,"result":{"result":{"type":"object","value":{"value":"[1]"}}}}', { [5] = true },
      { type = "object", value = { value = "[1]" } } },
    { '{"id":5,"result":{"other":{"value":"[1]"},"result":{"type":"string","value":"[2]"}}}',
      { [5] = true }, { type = "string", json = { 2 } }, { other = { value = "[1]" } } },
    { '{"id":5,"result":{"result":{"type":"string","value":"{bad"}}}', { [5] = true },
      { type = "string", json_error = "syntax error at byte offset 1: string key expected (found 'b')" } },
    { '{"id":5,"result":{"result":{"type":"string","value":"' .. string.rep("[", 1001) .. '"}}}',
      { [5] = true }, { type = "string", json_error = "nesting deeper than 1000 at byte offset 1000" } },
  }
  for i, c in ipairs(inner_cases) do
    it("decodes the JSON text of a wanted reply in place (#" .. i .. ")", function()
      local proc, t = echo_child()
      t:send(c[1], soon())
      local m = t:recv_cdp(soon(), c[2])
      assert.equal(5, m.id)
      assert.same(c[3], m.result.result)
      for k, v in pairs(c[4] or {}) do
        if k == "sessionId" then assert.same(v, m[k]) else assert.same(v, m.result[k]) end
      end
      if type(c[3].json) == "table" and c[3].json[1] then
        assert.equal(core.array_mt, getmetatable(m.result.result.json))
      end
      t:close(); proc:close()
    end)
  end

  it("decodes a big wanted text right, page by page, and checks its arguments", function()
    -- over a MiB: the text gets a mapping of its own whose pages are given
    -- back as the decoder moves on; every value must still come out right
    local parts = {}
    for i = 1, 60000 do
      parts[i] = '{"id":' .. i .. ',"name":"item \\"' .. i .. '\\"","tags":["a","b\\n"],"p":' .. i / 4 .. '}'
    end
    local text = "[" .. table.concat(parts, ",") .. "]"
    assert.is_true(#text > 3 * 1024 * 1024)
    local proc, t = echo_child()
    t:send(reply(9, core.json.encode(text)), soon(30))
    local m = t:recv_cdp(soon(30), { [9] = true })
    local v = m.result.result.json
    assert.is_nil(m.result.result.value)
    assert.equal(60000, #v)
    for i = 1, 60000, 997 do
      local r = v[i]
      assert.equal(i, r.id)
      assert.equal('item "' .. i .. '"', r.name)
      assert.same({ "a", "b\n" }, r.tags)
      assert.equal(i / 4, r.p)
    end
    local sum = 0
    for i = 1, 60000 do sum = sum + v[i].id end
    assert.equal(60000 * 60001 / 2, sum)
    -- the same reply, not wanted: the string, unchanged
    t:send(reply(9, core.json.encode(text)), soon(30))
    assert.equal(text, t:recv_cdp(soon(30), {}).result.result.value)
    assert.has_error(function() t:recv_cdp(soon(), 5) end)
    assert.has_error(function() t:recv(soon(), true) end)      -- the old decode flag
    -- a wanted reply that is not JSON itself: bad_message, as without ids
    t:send('{"id":9,"result":{"result":{"type":"string","value":"[\\q]"}}}', soon())
    local m2, err, code = t:recv_cdp(soon(), { [9] = true })
    assert.is_nil(m2)
    assert.equal("bad_message", code)
    assert.matches("bad escape", err)
    t:send('{"id":9,"result":{"result":{"type":"string","value":"[1]"}},}', soon())
    assert.equal("bad_message", select(3, t:recv_cdp(soon(), { [9] = true })))
    t:close(); proc:close()
  end)

  -- ids[id] may be the deadline of the call that waits for the reply: a
  -- large reply stops decoding there, whoever reads it (the reader's own
  -- deadline is later here). The clock is read every 256 KiB, so a reply
  -- under that decodes whatever the time.
  it("stops decoding a wanted reply at its caller's deadline, in either pass, and reads on", function()
    local numbers = "[" .. string.rep("0,", 500000) .. "0]"        -- no escapes: copied at once
    local strings = core.json.encode(string.rep('["x"],', 100000) .. "[]")   -- escapes throughout
    local past = core.now() - 1
    local cases = {
      -- message, where the clock stops it: the text (its own pass) or the message
      { reply(9, core.json.encode(numbers)), #numbers },
      { reply(9, strings), nil },
      { '{"id":9,"result":{"big":' .. numbers .. ',"result":{"type":"string","value":"[1]"}}}', nil },
    }
    local proc, t = echo_child()
    for i, c in ipairs(cases) do
      assert.is_true(t:send(c[1], soon(30)))
      local m, err, code, id = t:recv_cdp(soon(30), { [9] = past })
      assert.is_true(m == nil, "case " .. i .. ": decoded whole")    -- (not is_nil: m may be huge)
      assert.equal("timeout", code)
      assert.equal(9, id)
      assert.equal("9", tostring(id))          -- an integer, as ids are
      local done, total = err:match("^the deadline passed while decoding %((%d+) of (%d+) bytes done%)$")
      assert.truthy(done, err)
      assert.equal(c[2] or #c[1], tonumber(total), "case " .. i)
      assert.is_true(tonumber(done) < tonumber(total))
      -- the transport reads on: the next message is whole
      t:send('{"id":10,"result":{}}', soon())
      assert.equal(10, t:recv_cdp(soon(), { [9] = past }).id)
    end
    -- a deadline still ahead, or a small reply past it: decoded
    t:send(cases[1][1], soon(30))
    assert.equal(500001, #t:recv_cdp(soon(30), { [9] = soon(60) }).result.result.json)
    t:send(reply(9, '"[1,2]"'), soon())
    assert.same({ 1, 2 }, t:recv_cdp(soon(), { [9] = past }).result.result.json)
    -- a reply nobody waits for as JSON: a string, not cut
    t:send(cases[2][1], soon(30))
    assert.is_string(t:recv_cdp(soon(30), { [8] = past }).result.result.value)
    -- any other reply, by the deadline in the third table: cut in the same way
    t:send(cases[3][1], soon(30))
    local m, err, code, id = t:recv_cdp(soon(30), {}, { [9] = past })
    assert.is_true(m == nil, "decoded whole")
    assert.same({ "timeout", 9 }, { code, id })
    assert.matches("^the deadline passed while decoding %(%d+ of " .. #cases[3][1] .. " bytes done%)$", err)
    t:send(cases[1][1], soon(30))
    assert.equal(500001, #t:recv_cdp(soon(30), { [9] = true }, { [9] = soon(60) }).result.result.json)
    t:send(cases[3][1], soon(30))
    assert.equal(500001, #t:recv_cdp(soon(30), { [8] = past }, { [8] = past }).result.big)
    t:close(); proc:close()
  end)

  -- A WebMCP tool's result is an event: Chromium writes the invocation id
  -- first in its params, before the output, so deadlines[invocation id]
  -- cuts it the same way (the id comes back as a string). The core knows no
  -- CDP method: the caller gives the text such an event starts with.
  local PREFIX = '{"method":"WebMCP.toolResponded","params":{"invocationId":"'
  it("stops decoding a WebMCP result at the deadline of the call waiting for it", function()
    local rows = "[" .. string.rep('{"invocationId":"I1"},', 50000) .. "0]"
    local function responded(id, output, head)
      return (head or '{"method":"WebMCP.toolResponded","params":{"invocationId":"') .. id
        .. '","status":"Completed","output":' .. output .. '},"sessionId":"S1"}'
    end
    local past = core.now() - 1
    local proc, t = echo_child()
    local big = responded("I1", rows)
    assert.is_true(t:send(big, soon(30)))
    local m, err, code, id = t:recv_cdp(soon(30), {}, { I1 = past, [1] = soon(30) }, PREFIX)
    assert.is_true(m == nil, "decoded whole")
    assert.same({ "timeout", "I1" }, { code, id })
    assert.matches("^the deadline passed while decoding %(%d+ of " .. #big .. " bytes done%)$", err)
    t:send('{"id":10,"result":{}}', soon())
    assert.equal(10, t:recv_cdp(soon(), {}, { I1 = past }, PREFIX).id)          -- reads on
    -- decoded whole: a deadline ahead, an id nobody waits for, a small one,
    -- no deadlines table, and anything not written as Chromium writes it
    -- (the id after the output, spaces, an escape in the id, one too long)
    local long = string.rep("A", 200)
    for i, c in ipairs({
      { big, { I1 = soon(60) } },
      { big, { I2 = past } },
      { responded("I1", "[1]"), { I1 = past } },
      { big, nil },
      { '{"method":"WebMCP.toolResponded","params":{"status":"Completed","output":' .. rows
        .. ',"invocationId":"I1"}}', { I1 = past } },
      { responded("I1", rows, '{"method": "WebMCP.toolResponded","params":{"invocationId":"'), { I1 = past } },
      { responded("I\\u0031", rows), { ["I\\u0031"] = past, I1 = past } },
      { responded(long, rows), { [long] = past } },
      -- no prefix given, or another one: nothing is read as a key
      { big, { I1 = past }, false },
      { big, { I1 = past }, '{"method":"Other.event","params":{"invocationId":"' },
    }) do
      assert.is_true(t:send(c[1], soon(30)))
      local got, e2 = t:recv_cdp(soon(30), {}, c[2], c[3] == nil and PREFIX or c[3] or nil)
      assert.is_true(got ~= nil, "case " .. i .. ": " .. tostring(e2))
      assert.equal("WebMCP.toolResponded", got.method, "case " .. i)
    end
    t:close(); proc:close()
  end)
end)

describe("process", function()
  it("spawns, waits, reports status and leaves no zombie", function()
    local proc = assert(core.process.spawn({ "/bin/sh", "-c", "echo out; echo err >&2; exit 7" }))
    local pid = proc:pid()
    assert.equal("exit", (proc:wait(soon())))
    assert.equal(7, select(2, proc:wait(soon())))
    assert.matches("out\nerr\n", proc:stderr())
    proc:close()
    assert.is_nil(proc:pid())
    assert.equal("Process(closed)", tostring(proc))
    -- reaped: no /proc entry (and so no zombie) is left
    assert.is_false(H.exists("/proc/" .. pid))
  end)

  it("kills with SIGTERM, then SIGKILL after the grace period, with the whole group", function()
    local proc = assert(core.process.spawn({ "/bin/sh", "-c", "trap '' TERM; sleep 30 & sleep 30; wait" }))
    local pid = proc:pid()
    assert.is_true(proc:running())
    assert.is_true(H.wait_for(function() return H.live_in_group(pid) >= 2 end, H.LONG))
    local t0 = core.now()
    local how, sig = proc:kill(0.2)
    assert.equal("signal", how)
    assert.equal(9, sig)
    assert.is_true(core.now() - t0 >= 0.2)
    assert.is_true(H.wait_for(function() return H.live_in_group(pid) == 0 end, H.LONG))
    proc:close()
  end)

  it("passes extra environment variables", function()
    local proc = assert(core.process.spawn({ "/bin/sh", "-c", 'echo "$DT_SPEC_VAR $HOME"' },
      { env = { DT_SPEC_VAR = "set", HOME = "/nowhere" } }))
    proc:wait(soon())
    assert.equal("set /nowhere\n", proc:stderr())
    proc:close()
    assert.has_error(function() core.process.spawn({ "/bin/true" }, { env = { X = 1 } }) end)
  end)

  it("times out waiting", function()
    local proc = assert(core.process.spawn({ "/bin/sleep", "30" }))
    local v, _, code = proc:wait(core.now() + 0.1)
    assert.is_nil(v)
    assert.equal("timeout", code)
    proc:close(0)
  end)

  it("keeps only the tail of a noisy child's output", function()
    local proc = assert(core.process.spawn({ "/bin/sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done" },
      { stderr_size = 100 }))
    proc:wait(soon())
    local tail = proc:stderr()
    assert.is_true(#tail <= 100)
    assert.matches("line1999\n$", tail)
    proc:close()
    for _, bad in ipairs({ 0, -1, 0.5, 1e300, 0 / 0, 2 ^ 31 }) do
      local ok, err = pcall(core.process.spawn, { "/bin/true" }, { stderr_size = bad })
      assert.is_false(ok)
      assert.matches("stderr_size must be a whole number of bytes", err)
    end
  end)

  it("removes its cleanup directory on close", function()
    local dir = core.fs.mkdtemp("dt-spec-")
    local f = io.open(dir .. "/file", "w"); f:write("x"); f:close()
    os.execute("mkdir -p " .. dir .. "/a/b && touch " .. dir .. "/a/b/c")
    local proc = assert(core.process.spawn({ "/bin/true" }, { cleanup_dir = dir }))
    proc:close()
    assert.is_false(H.exists(dir))
  end)

  it("reports a missing program as spawn_failed", function()
    local p, err, code = core.process.spawn({ "/nonexistent/program" })
    assert.is_nil(p)
    assert.equal("spawn_failed", code)
    assert.matches("/nonexistent/program", err, 1, true)
    assert.has_error(function() core.process.spawn({}) end)
    assert.has_error(function() core.process.spawn({ 1 }) end)
  end)

  it("is cleaned up by the garbage collector", function()
    local pid
    do
      local proc = assert(core.process.spawn({ "/bin/sleep", "30" }))
      pid = proc:pid()
    end
    collectgarbage(); collectgarbage()
    assert.is_true(H.wait_for(function() return H.live_in_group(pid) == 0 end, H.LONG))
  end)
end)

-- ---- what event loops need --------------------------------------------------

local socket = require "socket"
local lfs = require "lfs"

-- Waits (select, through LuaSocket's getfd protocol) until one of rfds is
-- readable or one of wfds writable, or the deadline; returns two sets of fds.
local function ready(rfds, wfds, deadline)
  local function objs(fds)
    local t = {}
    for _, fd in ipairs(fds) do t[#t + 1] = { fd = fd, getfd = function(o) return o.fd end } end
    return t
  end
  local r, w = socket.select(objs(rfds), objs(wfds), math.max(0, deadline - core.now()))
  local rs, ws = {}, {}
  for _, o in ipairs(r or {}) do rs[o.fd] = true end
  for _, o in ipairs(w or {}) do ws[o.fd] = true end
  return rs, ws
end

local function link(path)
  local a = lfs.symlinkattributes(path)
  return a and a.target
end

describe("pipe transport, driven by an event loop", function()
  it("fds() names our ends of the child's fds 4 and 3 and of its stderr", function()
    local proc, t = echo_child()
    local r, w, e = t:fds()
    assert.is_number(r); assert.is_number(w); assert.is_number(e)
    assert.equal(r, t:fd())
    local pid = proc:pid()
    -- the same pipes, seen from both sides
    assert.matches("^pipe:", link("/proc/self/fd/" .. r))
    assert.equal(link("/proc/" .. pid .. "/fd/4"), link("/proc/self/fd/" .. r))
    assert.equal(link("/proc/" .. pid .. "/fd/3"), link("/proc/self/fd/" .. w))
    assert.equal(link("/proc/" .. pid .. "/fd/2"), link("/proc/self/fd/" .. e))
    t:close()
    local r2, w2, e2 = t:fds()
    assert.is_nil(r2); assert.is_nil(w2); assert.is_nil(e2)
    proc:close()
  end)

  it("recv(0) returns timeout at once and writes what send(msg, 0) queued", function()
    local proc, t = echo_child()
    local t0 = core.now()
    local m, _, code = t:recv(0)
    assert.is_nil(m)
    assert.equal("timeout", code)
    assert.is_true(core.now() - t0 < 1, "recv(0) waited")
    -- the child stops reading for a while: send(…, 0) writes what fits and
    -- queues the rest
    assert.is_true(t:send("!stall 1500", soon()))
    local big = string.rep("q", 6 * 1024 * 1024)
    local ok, err, code2 = t:send(big, 0)
    assert.is_nil(ok)
    assert.equal("timeout", code2)
    assert.matches("still queued", err)
    assert.is_true(t:queued() > 0)
    -- only recv(0), woken by the fds: it must write the rest for the echo to come
    local r, w = t:fds()
    local deadline = soon(30)
    local got
    while not got and core.now() < deadline do
      ready({ r }, t:queued() > 0 and { w } or {}, deadline)
      got = t:recv(0)
    end
    assert.is_true(got == big)
    assert.equal(0, t:queued())
    t:close(); proc:close()
  end)

  it("recv(0) drains the child's stderr (a child blocked on it would never exit)", function()
    -- 1 MiB to stderr is far more than a pipe holds; then it exits
    local proc, t = core.process.spawn({ "/bin/sh", "-c",
      "head -c 1048576 /dev/zero | tr '\\0' x >&2; echo done >&2" }, { pipe = true })
    assert(proc, t)
    local xfd = proc:exit_fd()
    local deadline = soon(30)
    while not proc:wait(0) and core.now() < deadline do
      -- the transport closes stderr at its end of file: ask again each turn
      -- (a closed descriptor in select fails)
      local _, _, e = t:fds()
      local fds = {}
      if e then fds[#fds + 1] = e end
      if xfd then fds[#fds + 1] = xfd end
      ready(fds, {}, math.min(deadline, soon(#fds > 0 and 30 or 0.01)))
      local m, _, code = t:recv(0)
      assert.is_nil(m)
      assert.is_true(code == "timeout" or code == "closed")
    end
    assert.equal("exit", (proc:wait(0)))
    assert.matches("xdone\n$", proc:stderr())
    t:close(); proc:close()
  end)

  it("flush(deadline) writes the queue, or times out keeping it, or reports closed", function()
    -- an echo child reads: flush empties the queue (reading the echo meanwhile)
    local proc, t = echo_child()
    assert.is_true(t:send("!stall 1500", soon()))
    local big = string.rep("f", 6 * 1024 * 1024)
    t:send(big, 0)
    assert.is_true(t:queued() > 0)
    assert.is_true(t:flush(soon(30)))
    assert.equal(0, t:queued())
    assert.is_true(t:recv(soon(30)) == big)
    assert.is_true(t:flush(0))                      -- nothing queued
    t:close(); proc:close()
    -- sleep never reads: the bytes stay queued
    local proc2, t2 = core.process.spawn({ "/bin/sleep", "30" }, { pipe = true })
    t2:send(big, 0)
    local left = t2:queued()
    assert.is_true(left > 0)
    local ok, err, code = t2:flush(core.now() + 0.2)
    assert.is_nil(ok)
    assert.equal("timeout", code)
    assert.matches("still queued", err)
    assert.equal(left, t2:queued())
    proc2:kill(0)
    ok, err, code = t2:flush(soon())
    assert.is_nil(ok)
    assert.equal("closed", code)
    t2:close(); proc2:close()
    assert.equal(0, t2:queued())
    assert.equal("closed", select(3, t2:flush(0)))
  end)
end)

describe("process, for event loops", function()
  it("wait(0) never blocks, and exit_fd() becomes readable when the child exits", function()
    local proc, t = echo_child()
    local v, _, code = proc:wait(0)
    assert.is_nil(v)
    assert.equal("timeout", code)
    local xfd = proc:exit_fd()
    if xfd == nil then
      pending("no pidfd on this kernel: exit_fd() is nil, poll wait(0) instead")
      t:close(); proc:close()
      return
    end
    assert.is_number(xfd)
    assert.is_nil(next((ready({ xfd }, {}, 0))))     -- running: not readable
    t:send("!exit", soon())
    assert.is_true(ready({ xfd }, {}, soon(10))[xfd])
    assert.equal("exit", (proc:wait(0)))
    assert.equal(0, select(2, proc:wait(0)))
    t:close(); proc:close()
    assert.is_nil(proc:exit_fd())
  end)

  it("__gc kills at once and removes the cleanup directory", function()
    local dir = core.fs.mkdtemp("dt-spec-gc-")
    local pid
    do
      -- ignores SIGTERM: a finalizer that tried it first would wait
      local proc = assert(core.process.spawn({ "/bin/sh", "-c", "trap '' TERM; sleep 300 & wait" },
        { cleanup_dir = dir }))
      pid = proc:pid()
      assert.is_true(H.wait_for(function() return H.live_in_group(pid) >= 2 end, H.LONG))
    end
    collectgarbage(); collectgarbage()
    assert.is_false(H.exists(dir))
    -- (SIGKILL is sent in the finalizer; the processes end when the kernel
    -- next runs them, a moment later on a loaded machine: without the kill
    -- they would outlive the wait)
    assert.is_true(H.wait_for(function() return H.live_in_group(pid) == 0 end, H.LONG))
  end)
end)

-- ---- the reaper: a profile must not outlive its owner -------------------------

local interp = H.build:find("luajit", 1, true) and "/usr/bin/luajit" or "/usr/bin/lua5.4"

-- Starts a Lua child running code (the library on its paths); returns its
-- Process and the captures of pattern in what it prints.
local function lua_child(code, pattern, path)
  local pre = ("package.path = './lua/?.lua;./lua/?/init.lua;' .. package.path; "
    .. "package.cpath = './%s/?.so;' .. package.cpath; "):format(H.build)
  local argv = { interp, "-e", pre .. code }
  if path then table.insert(argv, 1, "/usr/bin/env") table.insert(argv, 2, "PATH=" .. path) end
  local proc = assert(core.process.spawn(argv))
  local caps
  local ok = H.wait_for(function()
    caps = { proc:stderr():match(pattern) }
    return caps[1] ~= nil or not proc:running()
  end, 30)
  assert(ok and caps[1], "the Lua child printed: " .. proc:stderr())
  return proc, (unpack or table.unpack)(caps)
end

local alive = H.alive

describe("the reaper", function()
  it("kills the child and removes its directory when the owner is SIGKILLed", function()
    local owner, pid, dir = lua_child([[
      local core = require "devtools_tools.core"
      local dir = core.fs.mkdtemp("dt-spec-reaper-")
      local f = io.open(dir .. "/file", "w"); f:write("x"); f:close()
      local p = core.process.spawn({ "/bin/sleep", "300" }, { cleanup_dir = dir })
      io.stderr:write("child ", p:pid(), " dir ", dir, "\n")
      core.sleep(300)
    ]], "child (%d+) dir (%S+)\n")
    assert.is_true(alive(tonumber(pid)))
    assert.is_true(H.exists(dir))
    assert.equal(1, #H.live_with_arg(dir))            -- the reaper, waiting
    owner:kill(0)                                     -- SIGKILL: no atexit, no __gc
    assert.is_true(H.wait_for(function()
      return not alive(tonumber(pid)) and not H.exists(dir)
    end, H.LONG), "the child or its directory outlived its owner")
    assert.is_true(H.wait_for(function() return #H.live_with_arg(dir) == 0 end, H.LONG))
    owner:close()
  end)

  -- (as Chromium's crash handlers do): with find(1), without a find that
  -- has -lname (the reaper then reads each /proc/N/fd/2 itself: a find
  -- that fails comes first on PATH), and with a PATH that lacks the
  -- system's directories
  local nofind = core.fs.mkdtemp("dt-spec-nofind-")
  local stub = assert(io.open(nofind .. "/find", "w"))
  stub:write("#!/bin/sh\nexit 1\n")
  stub:close()
  os.execute("chmod +x " .. nofind .. "/find")
  teardown(function() os.remove(nofind .. "/find") os.remove(nofind) end)
  for _, case in ipairs({ { "/usr/bin:/bin", "find(1)" }, { nofind .. ":/usr/bin:/bin", "no find with -lname" },
      { "/nonexistent", "a PATH without the system's directories" } }) do
    local path = case[1]
    it("kills a process that left the child's group but writes to its output (" .. case[2] .. ")", function()
      local owner, pid, dir = lua_child(([[
        local core = require "devtools_tools.core"
        local dir = core.fs.mkdtemp("dt-spec-reaper-")
        local p = core.process.spawn({ "/bin/sh", "-c",
          "/usr/bin/setsid /bin/sleep 300 & echo \"left $!\" >&2; /bin/sleep 300" },
          { cleanup_dir = dir })
        while not p:stderr():find("left %d+\n") do core.sleep(0.01) end
        io.stderr:write("gone ", p:stderr():match("left (%d+)"), " dir ", dir, "\n")
        core.sleep(300)
      ]]), "gone (%d+) dir (%S+)\n", path)
      pid = tonumber(pid)
      assert.is_true(H.wait_for(function() return alive(pid) end, H.LONG))
      owner:kill(0)
      assert.is_true(H.wait_for(function()
        return not alive(pid) and not H.exists(dir)
      end, H.LONG), "the process outside the group, or the directory, outlived the owner")
      owner:close()
    end)
  end

  it("is dismissed, doing nothing, when the owner closes the process itself", function()
    local dir = core.fs.mkdtemp("dt-spec-reaper-")
    local proc = assert(core.process.spawn({ "/bin/sleep", "300" }, { cleanup_dir = dir }))
    assert.equal(1, #H.live_with_arg(dir))
    proc:close(0)
    assert.is_false(H.exists(dir))
    assert.is_true(H.wait_for(function() return #H.live_with_arg(dir) == 0 end, H.LONG))
    -- a reaper on request, without a directory
    local p2 = assert(core.process.spawn({ "/bin/sleep", "300" }, { reaper = true }))
    local pid = p2:pid()
    p2:close(0)
    assert.is_false(alive(pid))
  end)

  -- The reaper scans /proc with find(1) before it removes the directory.
  -- Here, in a Lua child whose PATH has it first, a find that waits for a
  -- lock this case holds: the reaper cannot remove anything until the
  -- case lets it, so a directory gone when close returns was removed by
  -- close itself (a check right after close raced the reaper under load).
  it("close(grace, true) waits for nothing: the reaper reaps and removes the directory", function()
    local stubs = core.fs.mkdtemp("dt-spec-lockfind-")
    local lock = stubs .. "/lock"
    finally(function() os.remove(stubs .. "/find") os.remove(lock) os.remove(stubs) end)
    local lockfind = assert(io.open(stubs .. "/find", "w"))
    lockfind:write("#!/bin/sh\n/usr/bin/flock -s " .. lock .. " /bin/true\nexec /usr/bin/find \"$@\"\n")
    lockfind:close()
    os.execute("chmod +x " .. stubs .. "/find")
    for _, argv in ipairs({ "{ '/bin/sh', '-c', \"trap '' TERM; sleep 300\" }", "{ '/bin/true' }" }) do
      local holder = assert(core.process.spawn({ "/usr/bin/flock", lock, "/bin/sh", "-c",
        "echo locked >&2; exec /bin/sleep 300" }))
      assert.is_true(H.wait_for(function() return holder:stderr() == "locked\n" end, H.LONG), holder:stderr())
      local owner, pid, dir, kept, left = lua_child(([[
        local core = require "devtools_tools.core"
        local dir = core.fs.mkdtemp("dt-spec-reaper-")
        local f = io.open(dir .. "/file", "w"); f:write("x"); f:close()
        local argv = %s
        local proc = assert(core.process.spawn(argv, { cleanup_dir = dir }))
        local pid = proc:pid()
        if argv[1] == "/bin/true" then proc:wait(core.now() + 10) end    -- gone already
        proc:close(0, true)
        local kept = io.open(dir .. "/file") ~= nil
        io.stderr:write("child ", pid, " dir ", dir, " kept ", tostring(kept), " pid ", tostring(proc:pid()), "\n")
        core.sleep(300)
      ]]):format(argv), "child (%d+) dir (%S+) kept (%a+) pid (%a+)\n", stubs .. ":/usr/bin:/bin")
      pid = tonumber(pid)
      assert.equal("true", kept, "close removed the directory itself")
      assert.equal("nil", left)
      assert.is_true(H.exists(dir .. "/file"))    -- (the reaper waits for the lock)
      holder:close(0)                             -- the reaper's find may go on
      assert.is_true(H.wait_for(function() return not alive(pid) and not H.exists(dir) end, H.LONG),
        argv .. ": the child or its directory is still there")
      assert.is_true(H.wait_for(function() return #H.live_with_arg(dir) == 0 end, H.LONG))
      owner:kill(0)
      owner:close()
    end
  end)

  it("ends Chromium and removes its profile when the Lua process is SIGKILLed", function()
    if checked_malloc then
      pending("Chromium does not start under the ASan/valgrind preload the child inherits")
      return
    end
    local owner, pid, dir = lua_child([[
      local dt = require "devtools_tools"
      local b = dt.launch()
      assert(b:version())
      io.stderr:write("chromium ", b.process:pid(), " profile ", b.user_data_dir, "\n")
      require("devtools_tools.core").sleep(300)
    ]], "chromium (%d+) profile (%S+)\n")
    pid = tonumber(pid)
    assert.is_true(alive(pid))
    assert.is_true(H.exists(dir))
    owner:kill(0)
    local gone = H.wait_for(function()
      return H.live_in_group(pid) == 0 and not H.exists(dir)
    end, H.LONG)
    local left = {}
    if not gone then
      for _, p in ipairs(H.procs_in_group(pid)) do left[#left + 1] = p.pid .. " " .. p.state .. " " .. p.cmd end
      if H.exists(dir) then
        local ls = io.popen("find '" .. dir .. "' -maxdepth 3 2>&1 | head -20")
        left[#left + 1] = "profile left: " .. ls:read("*a")
        ls:close()
      end
    end
    assert(gone, "Chromium or its profile outlived the Lua process:\n" .. table.concat(left, "\n"))
    owner:close()
  end)
end)

describe("C failure codes", function()
  it("has one list, and errors.from_c maps each to a dt.Error code", function()
    local errors = require "devtools_tools.base.errors"
    local n = 0
    for name, v in pairs(core.codes) do
      n = n + 1
      assert.equal(name, v)
      assert.is_not_nil(errors.from_c_codes[name], "no dt.Error code for C code " .. name)
      assert.is_true(errors.codes[errors.from_c(name)], name)
    end
    for name in pairs(errors.from_c_codes) do
      assert.equal(name, core.codes[name], "errors.lua maps a code C never returns: " .. name)
    end
    assert.equal(12, n)
    assert.equal("protocol_error", errors.from_c("no_memory"))
    assert.equal("protocol_error", errors.from_c("bad_message"))
    assert.equal("disconnected", errors.from_c("closed"))
    -- what the core returns is in the list
    assert.equal(core.codes.syntax, select(3, core.json.decode("{")))
    assert.equal(core.codes.too_deep, select(3, core.json.decode("[[1]]", { max_depth = 1 })))
    assert.equal(core.codes.bad_value, select(3, core.json.encode(print)))
    assert.equal(core.codes.syntax, select(3, core.regex.compile("(")))
  end)
end)

describe("core.fs.write_file", function()
  local dir
  before_each(function() dir = assert(core.fs.mkdtemp("dt-write-")) end)
  after_each(function() core.fs.rmtree(dir) end)
  local function sh(cmd) return (H.sh(cmd):gsub("%s+$", "")) end
  local read = H.read_file
  local function entries() return sh("ls -A " .. dir) end

  it("replaces a regular file whole, keeping its mode, and leaves nothing beside it", function()
    local path = dir .. "/shot.png"
    assert.is_true(core.fs.write_file(path, "first\0bytes"))
    assert.equal("first\0bytes", read(path))
    -- 0666 less the umask, as the shell makes a new file
    assert.equal(sh("touch " .. dir .. "/ref && stat -c %a " .. dir .. "/ref"), sh("stat -c %a " .. path))
    os.remove(dir .. "/ref")
    os.execute("chmod 640 " .. path)
    local f = assert(io.open(path .. ".tmp", "wb")); f:write("mine"); f:close()
    assert.is_true(core.fs.write_file(path, "second"))
    assert.equal("second", read(path))
    assert.equal("640", sh("stat -c %a " .. path))
    assert.equal("mine", read(path .. ".tmp"))          -- a file of that name is not ours
    assert.equal("shot.png\nshot.png.tmp", entries())
  end)

  it("writes through a symlink and a FIFO instead of replacing them", function()
    local target, symlink = dir .. "/real.png", dir .. "/link.png"
    assert.is_true(core.fs.write_file(target, "old"))
    os.execute("ln -s real.png " .. symlink)
    assert.is_true(core.fs.write_file(symlink, "new"))
    assert.equal("real.png", sh("readlink " .. symlink))
    assert.equal("new", read(target))
    local fifo = dir .. "/fifo"
    os.execute("mkfifo " .. fifo)
    -- without a reader it fails at once (it waited for one for ever)
    local ok, err = core.fs.write_file(fifo, "nobody")
    assert.is_nil(ok)
    assert.equal("cannot write " .. fifo .. ": it is a FIFO that no process reads", err)
    -- a reader that holds the FIFO open before reading (an open for reading
    -- alone would wait for a writer), and reads the 7 bytes
    local reader = assert(core.process.spawn({ "/bin/sh", "-c",
      "exec 3<>" .. fifo .. "; exec head -c 7 <&3 > " .. dir .. "/got" }))
    assert(H.wait_for(function()                      -- it has the FIFO open
      local fd = H.sh("readlink /proc/" .. reader:pid() .. "/fd/* 2>/dev/null")
      return fd:find(fifo, 1, true) ~= nil
    end, H.LONG), "the reader did not open the FIFO")
    assert.is_true(core.fs.write_file(fifo, "through"))
    assert.equal("exit", (reader:wait(core.now() + 10)))
    reader:close()
    assert.equal("through", read(dir .. "/got"))
    assert.equal("yes", sh("test -p " .. fifo .. " && echo yes"))
  end)

  it("fails with a message naming the path, leaving nothing behind", function()
    assert.is_true(core.fs.exists(dir))
    assert.is_false(core.fs.exists(dir .. "/nope"))
    local ok, err = core.fs.write_file(dir, "x")
    assert.is_nil(ok)
    assert.matches("cannot write " .. dir, err, 1, true)
    ok, err = core.fs.write_file(dir .. "/no/such/dir/x.png", "x")
    assert.is_nil(ok)
    assert.matches("No such file or directory", err, 1, true)
    -- a name as long as the system allows (255 bytes): its temporary name is cut
    local long = dir .. "/" .. ("n"):rep(255)
    assert.is_true(core.fs.write_file(long, "long"))
    assert.equal("long", read(long))
    os.remove(long)
    -- a path too long for the temporary name, or with a NUL byte: messages, not raw errors
    ok, err = core.fs.write_file(dir .. "/" .. ("a"):rep(4100), "x")
    assert.is_nil(ok)
    assert.matches("File name too long$", err)
    ok, err = core.fs.write_file(dir .. "/x.png\0/../../y", "x")
    assert.is_nil(ok)
    assert.equal("cannot write a path that holds a NUL byte", err)
    assert.equal("", entries())
  end)
end)

describe("a signal while a read waits", function()
  it("returns to Lua (Ctrl-C's hook acts at once), not when the peer answers", function()
    local child, pid = lua_child([[
      local core = require "devtools_tools.core"
      -- a peer that never answers (its reaper ends it with us)
      local p, t = core.process.spawn({ "/bin/sleep", "60" }, { pipe = true, reaper = true })
      io.stderr:write("waiting ", p:pid(), "\n")
      local _, err, code = t:recv_cdp(core.now() + 60)
      io.stderr:write("returned ", tostring(code), "\n")
      p:close(0)
    ]], "waiting (%S+)\n")
    local cpid = child:pid()
    -- in poll(2): the signal must find the read waiting, not Lua code
    assert.is_true(H.wait_for(function()
      return (H.read_file("/proc/" .. cpid .. "/wchan") or ""):find("poll", 1, true) ~= nil
    end, H.LONG), "the child never waited")
    os.execute("kill -INT " .. cpid)
    assert.equal("exit", (child:wait(core.now() + 20)), "the read went on waiting")
    assert.matches("interrupted!", child:stderr(), 1, true)     -- lua.c's hook, right after the read
    child:close(0)
    assert.is_true(H.wait_for(function() return not alive(tonumber(pid)) end, H.LONG))
  end)
end)
