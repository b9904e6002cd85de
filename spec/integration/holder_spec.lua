-- The private background browser's holder (browser/holder.lua), against
-- real headless Chromium: launch{detached = true, socket = path} runs
-- Chromium on its pipe behind a holder that serves it on a Unix socket.
-- Several clients share it, each in a browser session of its own (ids,
-- sessions and the events each enabled kept apart); a client that dies
-- in the middle of a call takes only its own sessions with it; a
-- connection of another user is refused at both ends.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local json = require "devtools_tools.base.json"
local holder = require "devtools_tools.browser.holder"
local H = require "helper"

local function soon(s) return core.now() + (s or 10) end
local function shq(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- A raw client: CDP messages in and out as tables.
local function raw(path)
  local t = holder.connect(path, soon())
  local c = { t = t }
  function c.send(m) assert(t:send(json.encode(m), soon())) end
  function c.recv(s)
    local text, err, code = t:recv(soon(s))
    if not text then return nil, err, code end
    return json.decode(text)
  end
  -- the reply to id (events before it kept in c.events)
  function c.reply(id)
    c.events = {}
    while true do
      local m = assert(c.recv())
      if m.id == id then return m end
      c.events[#c.events + 1] = m
    end
  end
  function c.call(id, method, params, sid)
    c.send({ id = id, method = method, params = params, sessionId = sid })
    return c.reply(id)
  end
  return c
end

local NOBODY = core.process.euid() == 0 and tonumber((H.sh("id -u nobody 2>/dev/null"))) or nil

describe("the holder of a private detached browser", function()
  local dir, sock, b
  setup(function()
    dir = assert(core.fs.mkdtemp("dt-holder-spec-"))
    sock = dir .. "/browser.sock"
    b = dt.launch({ detached = true, socket = sock })
  end)
  teardown(function()
    if b then
      b:close()
      dt.stop_detached(b.detached)
    end
    core.fs.rmtree(dir)
  end)

  it("runs Chromium on its pipe, with no port, and is recorded by the holder's pid", function()
    local rec = b.detached
    assert.equal("unix:" .. sock, rec.endpoint)
    assert.equal(sock, rec.socket)
    assert.is_nil(rec.port)
    assert.equal(384, core.fs.lstat(sock).mode)
    local procs = H.live_with_arg("--user-data-dir=" .. rec.profile .. "\0")
    local chromium
    for _, pid in ipairs(procs) do
      local cmd = H.read_file("/proc/" .. pid .. "/cmdline")
      if pid ~= rec.pid and not cmd:find("--type=", 1, true) then chromium = cmd end
      assert.falsy(cmd:find("--remote-debugging-port", 1, true))
    end
    assert.truthy(chromium:find("\0--remote-debugging-pipe\0", 1, true))
    assert.truthy(H.read_file("/proc/" .. rec.pid .. "/cmdline"):find("\0--serve\0", 1, true))
    assert.is_true(require("devtools_tools.browser").detached_running(rec))
  end)

  it("keeps each client's ids, sessions and events its own", function()
    local a, c = raw(sock), raw(sock)
    -- the same id on both, at once
    a.send({ id = 1, method = "Target.setDiscoverTargets", params = { discover = true } })
    c.send({ id = 1, method = "Browser.getVersion" })
    local ra, rc = a.reply(1), c.reply(1)
    assert.is_nil(ra.error)
    assert.is_nil(ra.sessionId)                      -- (the holder's session of it, taken off)
    assert.matches("Chrome/", rc.result.product)
    -- a target created elsewhere: told to the client that asked, not to the other
    local p = b:new_page("about:blank")
    local created
    assert.is_true(H.wait_for(function()
      local m = a.recv(0.05)
      if m and m.method == "Target.targetCreated" and m.params.targetInfo.targetId == p.target_id then
        created = m
      end
      return created ~= nil
    end, H.LONG))
    assert.is_nil(created.sessionId)
    c.call(2, "Browser.getVersion")
    assert.same({}, c.events)
    -- a session the client did not attach is refused; one it attached is its own
    local r = c.call(3, "Runtime.evaluate", { expression = "1" }, p.session)
    assert.equal(-32001, r.error.code)
    assert.equal(p.session, r.sessionId)
    local att = c.call(4, "Target.attachToTarget", { targetId = p.target_id, flatten = true })
    local s = att.result.sessionId
    assert.is_string(s)
    assert.equal("Target.attachedToTarget", c.events[1] and c.events[1].method)
    r = c.call(5, "Runtime.evaluate", { expression = "20 + 22", returnByValue = true }, s)
    assert.equal(42, r.result.result.value)
    assert.equal(s, r.sessionId)
    r = a.call(6, "Runtime.evaluate", { expression = "1" }, s)
    assert.equal(-32001, r.error.code)
    -- what is not a request is answered, not passed on
    assert(a.t:send("not json", soon()))
    r = a.recv()
    assert.equal(-32700, r.error.code)
    assert(a.t:send('{"method":"Browser.getVersion"}', soon()))
    assert.equal(-32600, a.recv().error.code)
    a.t:close()
    c.t:close()
    p:close()
  end)

  it("a client that dies in the middle of a call takes only its own sessions with it", function()
    -- a child process opens a page of its own, attaches it, starts a call
    -- that never ends, and is killed there
    local note = dir .. "/child"
    local script = dir .. "/child.lua"
    local f = assert(io.open(script, "w"))
    f:write(([[
      local holder = require "devtools_tools.browser.holder"
      local json = require "devtools_tools.base.json"
      local core = require "devtools_tools.core"
      local t = holder.connect(%q, core.now() + 10)
      local function call(id, method, params, sid)
        t:send(json.encode({ id = id, method = method, params = params, sessionId = sid }), core.now() + 10)
        while true do
          local m = json.decode(assert(t:recv(core.now() + 10)))
          if m.id == id then return m end
        end
      end
      local target = call(1, "Target.createTarget", { url = "about:blank" }).result.targetId
      local s = call(2, "Target.attachToTarget", { targetId = target, flatten = true }).result.sessionId
      t:send(json.encode({ id = 3, method = "Runtime.evaluate", sessionId = s,
        params = { expression = "new Promise(() => {})", awaitPromise = true } }), core.now() + 10)
      core.fs.write_file(%q, target)
      core.sleep(60)
    ]]):format(sock, note))
    f:close()
    local child = assert(core.process.spawn({ core.process.exe(), "-e",
      ("package.path=%q package.cpath=%q"):format(package.path, package.cpath), script }))
    assert.is_true(H.wait_for(function() return H.exists(note) end, 20), child:stderr())
    local target = H.read_file(note)
    local function attached()
      for _, t in ipairs(b:cdp("Target.getTargets").targetInfos) do
        if t.targetId == target then return t.attached end
      end
    end
    assert.is_true(attached())
    child:kill(0)                                    -- SIGKILL: nothing of it cleans up
    child:close(0)
    -- its session goes; the page stays; the others go on
    assert.is_true(H.wait_for(function() return attached() == false end, H.LONG))
    local p = b:attach(target)
    assert.equal(3, p:evaluate("1 + 2"))
    local other = raw(sock)
    assert.matches("Chrome/", other.call(1, "Browser.getVersion").result.product)
    other.t:close()
    p:close()
  end)

  it("a unix: endpoint must name an absolute path where this user's holder listens", function()
    local err = H.error_of(dt.connect, "unix:relative.sock")
    assert.equal("bad_argument", err.code)
    err = H.error_of(dt.connect, "unix:" .. dir .. "/none.sock", { timeout = 2 })
    assert.equal("connect_failed", err.code)
    assert.matches("No such file", err.message)
    err = H.error_of(dt.connect, "unix:" .. sock, { headers = { X = "y" } })
    assert.equal("bad_argument", err.code)
    local b2 = dt.connect("unix://" .. sock)               -- (unix:///path too)
    assert.equal(b:version().product, b2:version().product)
    b2:close()
  end)

  if NOBODY then
    it("refuses a connection of another user, and will not talk to another user's socket", function()
      -- the holder: the socket and its directory opened to all, for the test
      assert(os.execute("chmod 755 " .. shq(dir) .. " && chmod 666 " .. shq(sock)))
      local out = H.sh(("su nobody -s /bin/sh -c %s"):format(shq(("python3 -c %s"):format(shq(
        ("import socket\ns = socket.socket(socket.AF_UNIX); s.connect(%q); s.settimeout(10)\n"
          .. "try:\n  s.sendall(b'{\"id\":1,\"method\":\"Browser.getVersion\"}\\0'); data = s.recv(100)\n"
          .. "except (BrokenPipeError, ConnectionResetError):\n  data = b''\n"
          .. "print('got', repr(data))"):format(sock))))))
      assert(os.execute("chmod 700 " .. shq(dir) .. " && chmod 600 " .. shq(sock)))
      assert.equal("got b''\n", out)                     -- closed, nothing said
      -- a client: a socket where another user listens
      local theirs = dir .. "/theirs"
      assert(os.execute(("mkdir %s && chown nobody %s && chmod 755 %s"):format(shq(theirs), shq(theirs), shq(dir))))
      -- (listening under another name first, then renamed: the path is
      -- there only once it listens, or the connect might be refused)
      local listener = assert(core.process.spawn({ "/bin/su", "nobody", "-s", "/bin/sh", "-c",
        ("exec python3 -c %s"):format(shq(("import os, socket, time; s = socket.socket(socket.AF_UNIX);"
          .. " s.bind(%q); s.listen(); os.rename(%q, %q); c, _ = s.accept(); time.sleep(10)")
          :format(theirs .. "/b.tmp", theirs .. "/b.tmp", theirs .. "/b.sock"))) }))
      assert.is_true(H.wait_for(function() return H.exists(theirs .. "/b.sock") end, H.LONG))
      local err = H.error_of(dt.connect, "unix:" .. theirs .. "/b.sock", { timeout = 5 })
      listener:close(0)
      assert(os.execute("chmod 700 " .. shq(dir)))
      assert.equal("connect_failed", err.code)
      assert.matches(("the process listening there is of uid %d, not of this user"):format(NOBODY),
        err.message, 1, true)
      assert.equal(NOBODY, err.details.uid)
    end)
  end

  it("ends with its browser: Browser.close from a client ends both, and the socket goes", function()
    local rec = b.detached
    local c = raw(sock)
    c.send({ id = 1, method = "Browser.close" })
    assert.is_true(H.wait_for(function()
      return not require("devtools_tools.browser").detached_running(rec)
    end, H.LONG))
    assert.is_true(H.wait_for(function() return not H.exists(sock) end, H.LONG))
    local m, _, code = true, nil, nil
    while m do m, _, code = c.recv() end                  -- (its reply may come first)
    assert.equal("closed", code)
    assert.is_true(H.wait_for(function()
      for _, pid in ipairs(H.live_with_arg(rec.profile)) do
        if not H.read_file("/proc/" .. pid .. "/cmdline"):find("--type=", 1, true) then return false end
      end
      return true
    end, H.LONG))
    b:close()
    dt.stop_detached(rec)
    b = nil
    assert.same({}, H.live_with_arg(rec.profile))
  end)
end)
