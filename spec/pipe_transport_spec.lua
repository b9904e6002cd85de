-- The pipe transport and the process object, against small real children.

local core = require "devtools_tools.core"
local H = require "helper"

local function echo_child()
  local proc, t = core.spawn({ H.support("pipe_echo") }, { pipe = true })
  assert(proc, t)
  return proc, t
end

local function soon(s) return core.now() + (s or 5) end

-- Under ASan or valgrind a freed block is held back (quarantine, free
-- list), so resident memory says nothing about what we gave back.
local preload = os.getenv("LD_PRELOAD") or ""
local checked_malloc = preload:find("libasan", 1, true) or preload:find("vgpreload", 1, true)

-- Resident memory of this process in MiB (Linux).
local function rss_mib()
  local f = assert(io.open("/proc/self/status"))
  local kib = tonumber(f:read("a"):match("VmRSS:%s*(%d+)"))
  f:close()
  return kib / 1024
end

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

  it("times out reading, and stays usable", function()
    local proc, t = echo_child()
    local t0 = core.now()
    local m, err, code = t:recv(core.now() + 0.1)
    assert.is_nil(m)
    assert.equal("timeout", code)
    assert.is_true(core.now() - t0 >= 0.1)
    t:send("still", soon())
    assert.equal("still", t:recv(soon()))
    t:close(); proc:close()
  end)

  it("times out writing to a child that never reads", function()
    -- sleep holds fd 3 open and never reads it: the pipe fills up
    local proc, t = core.spawn({ "/bin/sleep", "30" }, { pipe = true })
    local t0 = core.now()
    local ok, err, code = t:send(string.rep("z", 8 * 1024 * 1024), core.now() + 0.3)
    assert.is_nil(ok)
    assert.equal("timeout", code)
    assert.matches("still queued", err)
    assert.is_true(core.now() - t0 < 3)
    t:close(); proc:close(0)
  end)

  it("reports closed when the child exits", function()
    local proc, t = echo_child()
    t:send("!exit", soon())
    local m, err, code = t:recv(soon())
    assert.is_nil(m)
    assert.equal("closed", code)
    assert.equal("exit", (proc:wait(soon())))
    t:close(); proc:close()
  end)

  it("recv_cdp decodes JSON straight from the buffer; recv gives the raw text", function()
    local proc, t = echo_child()
    t:send('{"id":7,"result":{"a":[1,2]}}', soon())
    local v = t:recv_cdp(soon())
    assert.equal(7, v.id)
    assert.same({ 1, 2 }, v.result.a)
    t:send("not json", soon())
    local m, err, code = t:recv_cdp(soon())
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
    { reply(5, core.json_encode('{"n":0,"v":{"a":[1,2],"s":"x\\"y"}}')), { [5] = true },
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
    t:send(reply(9, core.json_encode(text)), soon(30))
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
    t:send(reply(9, core.json_encode(text)), soon(30))
    assert.equal(text, t:recv_cdp(soon(30), {}).result.result.value)
    assert.has_error(function() t:recv_cdp(soon(), 5) end)
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
end)

describe("process", function()
  it("spawns, waits, reports status and leaves no zombie", function()
    local proc = assert(core.spawn({ "/bin/sh", "-c", "echo out; echo err >&2; exit 7" }))
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
    local proc = assert(core.spawn({ "/bin/sh", "-c", "trap '' TERM; sleep 30 & sleep 30; wait" }))
    local pid = proc:pid()
    assert.is_true(proc:running())
    assert.is_true(H.wait_for(function() return H.live_in_group(pid) >= 2 end, 5))
    local t0 = core.now()
    local how, sig = proc:kill(0.2)
    assert.equal("signal", how)
    assert.equal(9, sig)
    assert.is_true(core.now() - t0 >= 0.2)
    assert.is_true(H.wait_for(function() return H.live_in_group(pid) == 0 end, 5))
    proc:close()
  end)

  it("passes extra environment variables", function()
    local proc = assert(core.spawn({ "/bin/sh", "-c", 'echo "$DT_SPEC_VAR $HOME"' },
      { env = { DT_SPEC_VAR = "set", HOME = "/nowhere" } }))
    proc:wait(soon())
    assert.equal("set /nowhere\n", proc:stderr())
    proc:close()
    assert.has_error(function() core.spawn({ "/bin/true" }, { env = { X = 1 } }) end)
  end)

  it("times out waiting", function()
    local proc = assert(core.spawn({ "/bin/sleep", "30" }))
    local v, err, code = proc:wait(core.now() + 0.1)
    assert.is_nil(v)
    assert.equal("timeout", code)
    proc:close(0)
  end)

  it("keeps only the tail of a noisy child's output", function()
    local proc = assert(core.spawn({ "/bin/sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done" },
      { stderr_size = 100 }))
    proc:wait(soon())
    local tail = proc:stderr()
    assert.is_true(#tail <= 100)
    assert.matches("line1999\n$", tail)
    proc:close()
  end)

  it("removes its cleanup directory on close", function()
    local dir = core.mkdtemp("dt-spec-")
    local f = io.open(dir .. "/file", "w"); f:write("x"); f:close()
    os.execute("mkdir -p " .. dir .. "/a/b && touch " .. dir .. "/a/b/c")
    local proc = assert(core.spawn({ "/bin/true" }, { cleanup_dir = dir }))
    proc:close()
    assert.is_false(H.exists(dir))
  end)

  it("reports a missing program as spawn_failed", function()
    local p, err, code = core.spawn({ "/nonexistent/program" })
    assert.is_nil(p)
    assert.equal("spawn_failed", code)
    assert.matches("/nonexistent/program", err, 1, true)
    assert.has_error(function() core.spawn({}) end)
    assert.has_error(function() core.spawn({ 1 }) end)
  end)

  it("is cleaned up by the garbage collector", function()
    local pid
    do
      local proc = assert(core.spawn({ "/bin/sleep", "30" }))
      pid = proc:pid()
    end
    collectgarbage(); collectgarbage()
    assert.is_true(H.wait_for(function() return H.live_in_group(pid) == 0 end, 5))
  end)
end)
