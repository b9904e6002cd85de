-- A detached launch (launch{detached = true}, stop_detached) and the
-- background browser recorded in a file (dt.background), against real
-- headless Chromium: it outlives the process that started it, is ended
-- with its profile, and a start that fails or is killed leaves nothing
-- that the next start or stop does not end.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local H = require "helper"

local function shq(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

describe("a detached browser", function()
  local dir
  before_each(function() dir = assert(core.fs.mkdtemp("dt-bg-spec-")) end)
  after_each(function() core.fs.rmtree(dir) end)

  it("outlives the process that launched it; stop_detached ends it and removes its profile", function()
    -- a child Lua process launches it, records each step, and exits
    local script = dir .. "/launch.lua"
    local f = assert(io.open(script, "w"))
    f:write(([[
      local dt = require "devtools_tools"
      local steps = {}
      local b = dt.launch({ detached = true, on_record = function(r) steps[#steps + 1] = r end })
      local out = io.open(%q, "w")
      out:write(dt.json.encode({ steps = steps, final = b.detached, pages = #b:pages() }))
      out:close()
      b:close()
    ]]):format(dir .. "/record.json"))
    f:close()
    local out, rc = H.sh(("LUA_PATH='./lua/?.lua;./lua/?/init.lua;;' LUA_CPATH='./%s/?.so;;' TMPDIR=%s lua5.4 %s")
      :format(H.build, shq(dir), shq(script)))
    assert.equal(0, rc, out)
    local rec = dt.json.decode(io.open(dir .. "/record.json"):read("*a"))
    local final = rec.final
    -- whatever fails below, the browser the child left goes (a failed
    -- assertion here once left a Chromium running after make test)
    finally(function() if final and final.pid then pcall(dt.stop_detached, final) end end)
    -- recorded before Chromium started, then with its pid, then whole
    assert.equal(3, #rec.steps)
    assert.same({ starting = true, profile = final.profile, executable = final.executable,
      headless = true, webmcp = false }, rec.steps[1])
    assert.is_true(final.headless)
    assert.is_false(final.webmcp)
    assert.equal(final.pid, rec.steps[2].pid)
    assert.is_true(rec.steps[2].starting)
    assert.same(final, rec.steps[3])
    assert.matches("^ws://127%.0%.0%.1:%d+/devtools/browser/", final.endpoint)
    assert.equal(1, rec.pages)
    assert.matches("^" .. dir:gsub("%p", "%%%0") .. "/devtools_tools%-detached%-", final.profile)
    -- the child is gone, its browser is not
    assert.is_true(dt.stop_detached ~= nil)
    assert.is_true(require("devtools_tools.browser").detached_running(final))
    local b = dt.connect(final.endpoint)
    assert.equal(1, #b:pages())
    b:close()
    dt.stop_detached(final)
    assert.is_false(require("devtools_tools.browser").detached_running(final))
    assert.is_false(H.exists(final.profile))
    assert.same({}, H.live_with_arg(final.profile))
  end)

  it("a launch that fails ends what it started and removes its profile", function()
    local fake = dir .. "/silent-chromium"
    local f = assert(io.open(fake, "w"))
    f:write("#!/bin/sh\nsleep 60\n")                -- (never opens a port)
    f:close()
    os.execute("chmod +x " .. shq(fake))
    local seen
    local old = os.getenv("TMPDIR")
    local ok, err = pcall(dt.launch, { detached = true, executable = fake, timeout = 1,
      on_record = function(r) seen = r end })
    assert.is_false(ok)
    assert.equal("timeout", err.code)
    assert.matches("did not open its debugging port", err.message)
    assert.truthy(seen.pid)
    assert.same({}, H.live_with_arg(seen.profile))
    assert.is_false(H.exists(seen.profile))
    assert.equal(old, os.getenv("TMPDIR"))
  end)

  it("stop_detached never ends a pid that is not the record's Chromium, nor removes a profile not ours", function()
    local proc = assert(core.process.spawn({ "/bin/sleep", "30" }))
    local mine = dir .. "/profile"
    assert(core.fs.mkdirs(mine))
    dt.stop_detached({ pid = proc:pid(), profile = mine })
    assert.is_true(proc:running())
    assert.is_true(H.exists(mine))
    proc:close(0)
    local ok, err = pcall(dt.stop_detached, { pid = "x", profile = mine })
    assert.is_false(ok)
    assert.equal("bad_argument", err.code)
  end)
end)

describe("dt.background", function()
  local dir
  before_each(function() dir = assert(core.fs.mkdtemp("dt-bg-spec-")) end)
  after_each(function() core.fs.rmtree(dir) end)

  it("starts one browser, finds it running, stops it; the record is 0600 in a 0700 directory", function()
    local bg = dt.background(dir .. "/state/dt/browser.json")
    assert.equal("none", bg:status())
    local rec, started = bg:start()
    assert.is_true(started)
    local state, again = bg:status()
    assert.equal("running", state)
    assert.same(rec, again)
    assert.equal("600\n", (H.sh("stat -c %a " .. shq(dir .. "/state/dt/browser.json"))))
    assert.equal("700\n", (H.sh("stat -c %a " .. shq(dir .. "/state/dt"))))
    local rec2, started2 = bg:start()
    assert.is_false(started2)
    assert.equal(rec.pid, rec2.pid)
    assert.equal(rec.pid, bg:stop().pid)
    assert.equal("none", bg:status())
    assert.is_false(H.exists(rec.profile))
    assert.same({}, H.live_with_arg(rec.profile))
    assert.is_nil(bg:stop())
  end)

  it("a record whose browser is gone, or one that is no record, is ended and replaced by the next start", function()
    local path = dir .. "/browser.json"
    local bg = dt.background(path)
    local rec = bg:start()
    core.process.kill(rec.pid, "KILL", true)
    assert.is_true(H.wait_for(function() return bg:status() == "gone" end, H.LONG))
    local rec2, started = bg:start()
    assert.is_true(started)
    assert.are_not.equal(rec.pid, rec2.pid)
    assert.is_false(H.exists(rec.profile))
    bg:stop()
    assert(core.fs.write_file(path, "not json", 384))        -- (ours, 0600: one that is loose is refused)
    local state, none, why = bg:status()
    assert.equal("unreadable", state)
    assert.is_nil(none)
    assert.matches("unreadable", why)
    assert.is_nil(bg:stop())
    assert.is_false(H.exists(path))
  end)

  it("refuses options it does not know, and a path that names no file", function()
    local ok, err = pcall(dt.background, "")
    assert.is_false(ok)
    assert.equal("bad_argument", err.code)
    ok, err = pcall(dt.background(dir .. "/b.json").start, dt.background(dir .. "/b.json"), { bogus = 1 })
    assert.is_false(ok)
    assert.equal("bad_argument", err.code)
  end)
end)

-- Issue 41: the background browser is private, and what its state
-- directory holds is used only when it is ours and closed to others.
local NOBODY = core.process.euid() == 0 and tonumber((H.sh("id -u nobody 2>/dev/null"))) or nil

-- What a process of uid nobody gets from dt.connect(endpoint) and one
-- call: "ok PRODUCT" or "error CODE MESSAGE".
local function as_nobody(endpoint)
  local out = H.sh(("su nobody -s /bin/sh -c %s"):format(shq((
    "cd %s && LUA_PATH='./lua/?.lua;./lua/?/init.lua;;' LUA_CPATH='./%s/?.so;;' %s -e %s"):format(
    shq(os.getenv("PWD") or "."), H.build, H.lua, shq(([[
      local dt = require "devtools_tools"
      local ok, res = pcall(function() return dt.connect(%q, { timeout = 5 }):version().product end)
      print(ok and ("ok " .. res) or ("error " .. tostring(res.code) .. " " .. tostring(res.message)))
    ]]):format(endpoint))))))
  return out
end

describe("the background browser is private", function()
  local dir
  before_each(function() dir = assert(core.fs.mkdtemp("dt-bg-spec-")) end)
  after_each(function() core.fs.rmtree(dir) end)

  it("listens on no TCP port, and another user cannot drive it", function()
    local bg = dt.background(dir .. "/state/dt/browser.json")
    local rec = bg:start()
    finally(function() bg:stop() end)
    assert.equal("unix:" .. dir .. "/state/dt/browser.sock", rec.endpoint)
    assert.same({}, H.tcp_listeners_of(rec.profile))
    assert.equal("600\n", (H.sh("stat -c %a " .. shq(dir .. "/state/dt/browser.sock"))))
    -- this user: through dt.connect or the handle
    local b = bg:connect({ timeout = 10 })
    assert.matches("Chrome/", b:version().product)
    b:close()
    if NOBODY then
      local out = as_nobody(rec.endpoint)
      assert.matches("^error connect_failed .*Permission denied", out)
      -- its directories opened to all, and the socket too: the holder
      -- still lets only its own user in
      assert(os.execute(("chmod 755 %s %s %s && chmod 666 %s"):format(shq(dir), shq(dir .. "/state"),
        shq(dir .. "/state/dt"), shq(dir .. "/state/dt/browser.sock"))))
      out = as_nobody(rec.endpoint)
      assert(os.execute(("chmod 700 %s && chmod 600 %s"):format(shq(dir .. "/state/dt"),
        shq(dir .. "/state/dt/browser.sock"))))
      assert.matches("^error connect_failed ", out)
      assert.falsy(out:find("ok ", 1, true))
    end
  end)

  it("start{port = n} opens the shareable TCP endpoint instead", function()
    local bg = dt.background(dir .. "/browser.json")
    local rec = bg:start({ port = 0 })
    finally(function() bg:stop() end)
    assert.matches("^ws://127%.0%.0%.1:%d+/devtools/browser/", rec.endpoint)
    assert.is_number(rec.port)
    assert.is_nil(rec.socket)
    assert.same({ rec.port }, H.tcp_listeners_of(rec.profile))
    local b = bg:connect()
    assert.matches("Chrome/", b:version().product)
    b:close()
    if NOBODY then
      -- what the README says --port exposes: any local user drives it
      assert.matches("^ok Chrome/", as_nobody("http://127.0.0.1:" .. rec.port))
    end
    assert.equal(rec.pid, bg:stop().pid)
    assert.same({}, H.live_with_arg(rec.profile))
    local err = H.error_of(bg.start, bg, { port = 70000 })
    assert.equal("bad_argument", err.code)
  end)

  it("connect() says why there is no browser to connect to", function()
    local bg = dt.background(dir .. "/browser.json")
    local err = H.error_of(bg.connect, bg)
    assert.equal("connect_failed", err.code)
    assert.equal("none", err.details.state)
    assert.matches("no background browser runs", err.message)
  end)

  if NOBODY then
    it("refuses a state directory, record or file of another user's, or open to others", function()
      local state = dir .. "/state"
      local bg = dt.background(state .. "/browser.json")
      assert(core.fs.mkdirs(state, 448))
      -- a record another user wrote, of a listener of theirs (here ours, to
      -- see that nothing connects to it), with a process that names its profile
      local listener = assert(core.unix.listen(dir .. "/theirs.sock"))
      local profile = dir .. "/profile"
      local decoy = assert(core.process.spawn({ "/bin/sh", "-c", "sleep 30", "sh", "--user-data-dir=" .. profile }))
      finally(function() decoy:close(0); listener:close() end)
      local rec = dt.json.encode({ pid = decoy:pid(), profile = profile, executable = "/bin/sh",
        endpoint = "unix:" .. dir .. "/theirs.sock", headless = true })
      assert(core.fs.write_file(state .. "/browser.json", rec, 384))
      assert(os.execute("chown nobody " .. shq(state .. "/browser.json")))
      local function refused(fn, code, what)
        local err = H.error_of(fn, bg)
        assert.equal(code, err.code)
        assert.matches("refusing the background browser's state ", err.message, 1, true)
        assert.matches(what, err.message, 1, true)
        return err
      end
      local err = refused(bg.status, "connect_failed", ("belongs to uid %d, not to you"):format(NOBODY))
      assert.equal(NOBODY, err.details.uid)
      refused(bg.connect, "connect_failed", "belongs to uid")
      refused(bg.start, "launch_failed", "belongs to uid")
      refused(bg.stop, "connect_failed", "belongs to uid")
      assert.is_false(listener:accept())                   -- nothing connected to it
      assert.is_true(decoy:running())                     -- nor was it ended
      -- ours, but open to others
      assert(os.execute("chown 0 " .. shq(state .. "/browser.json") .. " && chmod 644 " .. shq(state .. "/browser.json")))
      refused(bg.status, "connect_failed", "its mode is 0644, open to other users")
      assert(os.execute("chmod 600 " .. shq(state .. "/browser.json")))
      assert.equal("running", (bg:status()))               -- (as it stands, the record is ours)
      -- the directory: another user's, open to others, a link, in a parent others may write to
      assert(os.execute("chmod 755 " .. shq(state)))
      refused(bg.status, "connect_failed", "its mode is 0755")
      refused(bg.start, "launch_failed", "chmod 700")
      assert(os.execute("chmod 700 " .. shq(state) .. " && chown nobody " .. shq(state)))
      refused(bg.status, "connect_failed", "belongs to uid")
      assert(os.execute("chown 0 " .. shq(state) .. " && chmod 777 " .. shq(dir)))
      refused(bg.status, "connect_failed", "may be written to by another user")
      assert(os.execute("chmod 1777 " .. shq(dir)))                   -- sticky, as /tmp: fine
      assert.equal("running", (bg:status()))
      assert(os.execute("chmod 700 " .. shq(dir)))
      local elsewhere = dt.background(dir .. "/link/browser.json")
      assert(os.execute("ln -s state " .. shq(dir .. "/link")))
      err = H.error_of(elsewhere.status, elsewhere)
      assert.equal("connect_failed", err.code)
      assert.matches("it is a link, not a directory", err.message, 1, true)
      -- a front end's file (the command line's tabs.json)
      assert.is_nil(bg:read("tabs.json"))
      assert.is_true(bg:write("tabs.json", "{}"))
      assert.equal("600\n", (H.sh("stat -c %a " .. shq(state .. "/tabs.json"))))
      assert(os.execute("chmod 644 " .. shq(state .. "/tabs.json")))     -- as written before 0600
      assert.equal("{}", bg:read("tabs.json"))
      assert.equal("600\n", (H.sh("stat -c %a " .. shq(state .. "/tabs.json"))))
      assert(os.execute("chmod 666 " .. shq(state .. "/tabs.json")))
      refused(function() return bg:read("tabs.json") end, "connect_failed", "its mode is 0666")
      assert(os.execute("chmod 600 " .. shq(state .. "/tabs.json") .. " && chown nobody " .. shq(state .. "/tabs.json")))
      refused(function() return bg:write("tabs.json", "{}") end, "connect_failed", "belongs to uid")
      err = H.error_of(bg.read, bg, "browser.json")
      assert.equal("bad_argument", err.code)
      err = H.error_of(bg.read, bg, "../x")
      assert.equal("bad_argument", err.code)
    end)
  end
end)
