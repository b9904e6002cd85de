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
    assert.is_true(H.wait_for(function() return bg:status() == "gone" end, 10))
    local rec2, started = bg:start()
    assert.is_true(started)
    assert.are_not.equal(rec.pid, rec2.pid)
    assert.is_false(H.exists(rec.profile))
    bg:stop()
    assert(core.fs.write_file(path, "not json"))
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
