-- Lifetime: everything works with the collector at its most aggressive, and
-- what is dropped without close() is still cleaned up by the collector (by
-- the C Process object's finalizer: a Browser table has no __gc, so this
-- holds on Lua 5.4 and LuaJIT alike). Runs under both.

local dt = require "devtools_tools"
local H = require "helper"

-- The most aggressive collector settings, and back (5.4 and 5.1/LuaJIT spell them differently).
local function gc_aggressive()
  if _VERSION == "Lua 5.1" then
    local pause, mul = collectgarbage("setpause", 0), collectgarbage("setstepmul", 1000)
    return function() collectgarbage("setpause", pause); collectgarbage("setstepmul", mul) end
  end
  collectgarbage("incremental", 0, 1000)       -- pause 0: a cycle never stops
  return function() collectgarbage("incremental", 200, 100) end
end

-- How many entries a table holds (none for nil).
local function count(t)
  local n = 0
  for _ in pairs(t or {}) do n = n + 1 end
  return n
end

describe("lifetime", function()
  local server
  setup(function() server = H.start_server() end)
  teardown(function() server.stop() end)

  it("works with the garbage collector running all the time", function()
    local restore_gc = gc_aggressive()
    local ok, err = pcall(function()
      local b = dt.launch()
      local page = b:new_page(server.url("/tools.html"))
      for i = 1, 20 do
        assert.equal(i + 1, page:call("add", { a = i, b = 1 }))
        local r = page:call("elements")
        assert.equal("div#cart.big.box", r.cart.description)
        collectgarbage("step")
      end
      local res = page:call_many({ { "add", { a = 1, b = 1 } }, { "echo", { x = dt.array{} } } })
      assert.equal(2, res[1])
      assert.equal(dt.array_mt, getmetatable(res[2].x))
      b:close()
    end)
    restore_gc()
    assert(ok, tostring(err))
  end)

  it("ends Chromium and removes its profile when a Browser is only collected", function()
    -- in a function of its own, so that no stack slot (LuaJIT keeps dead
    -- ones) still holds the Browser
    local function use_and_drop()
      local b = dt.launch()
      -- the Process userdata does the work: a finalizer on the table would
      -- wait for Chromium to exit, and finalizers must never wait
      assert.is_nil(getmetatable(b).__gc)
      b:new_page(server.url("/tools.html")):call("add", { a = 1, b = 2 })
      return b.process:pid(), b.user_data_dir
    end
    local pid, profile = use_and_drop()
    -- LuaJIT's compiled traces hold the closures they called (the page's
    -- event listener, and through it the Browser) until they are flushed
    if jit then jit.flush() end
    collectgarbage(); collectgarbage()
    assert.is_true(H.wait_for(function() return H.live_in_group(pid) == 0 end, H.LONG))
    assert.is_true(H.wait_for(function() return not H.exists(profile) end, H.LONG))
  end)

  it("ends Chromium and removes its profile when the program calls os.exit", function()
    local script = [[
      package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
      package.cpath = "]] .. H.build .. [[/?.so;" .. package.cpath
      local b = require("devtools_tools").launch()
      io.stdout:write(b.user_data_dir, " ", b.process:pid(), "\n")
      io.stdout:flush()
      os.exit(3)
    ]]
    local out = H.run_lua(script)
    local profile, pid, rc = out:match("^(%S+) (%d+)\nrc=(%d+)")
    assert(profile, out)
    assert.equal("3", rc)
    assert.is_false(H.exists(profile))
    assert.is_true(H.wait_for(function() return H.live_in_group(tonumber(pid)) == 0 end, H.LONG))
  end)

  -- A page kept for hours (a Neovim session, a monitor) navigates and its
  -- iframes reload: what it keeps of documents that are gone must not grow.
  it("keeps no record of documents that are gone over a long session", function()
    local b = dt.launch()
    local ok, err = pcall(function()
      local page = b:new_page(server.url("/frames.html"))
      for i = 1, 10 do page:navigate(server.url("/frames.html?" .. i)) end
      -- the same iframe given a new document 15 times (each brings its own load)
      page:evaluate([[new Promise((done) => {
        const f = document.getElementById('same');
        let n = 0;
        const next = () => { if (n++ === 15) return done(n); f.onload = next; f.src = 'child.html?name=same&n=' + n; };
        next();
      })]], { timeout = 30 })
      page:navigate(server.url("/frames.html?last"))      -- still waits for its own load
      local frames = count(page.frames)
      assert.is_true(frames <= 3, "frames kept: " .. frames)
      assert.is_true(count(page.loaded) <= 16, "loads kept: " .. count(page.loaded))
      -- and what is there is the page as it is now: the tools of all three frames
      local n = 0
      for _, g in ipairs(page:tool_groups()) do
        for _, t in ipairs(g.tools) do if t.name == "whoami" then n = n + 1 end end
      end
      assert.equal(3, n)
      assert.equal(3, count(page.frames))
    end)
    b:close()
    assert(ok, tostring(err))
  end)

  -- Each new document of a cross-site iframe comes with a session of its
  -- own: what the page knew of the old ones goes with them.
  it("forgets the sessions of iframes that are gone over a long session", function()
    local b = dt.launch{ webmcp = true }
    local ok, err = pcall(function()
      local page = b:new_page(server.url("/frames.html"))
      for i = 1, 10 do
        page:navigate(server.url("/frames.html?" .. i))
        page:wait_for_tool("where-cross", { timeout = 10 })     -- (discovers in every session)
      end
      local kept = count(page.webmcp.enabled)
      assert.is_true(kept <= count(page.child_sessions), "sessions kept: " .. kept)
      -- and the iframe there now is served as before
      assert.equal(server.url("", "localhost"), page:call("where-cross"))
    end)
    b:close()
    assert(ok, tostring(err))
  end)

  -- A server opens and closes pages in one browser for days: the
  -- connection keeps nothing of the pages it closed.
  it("keeps nothing of pages closed over a long session", function()
    local b = dt.launch()
    local ok, err = pcall(function()
      local function open_and_close(path)
        local page = b:new_page(server.url(path))
        page:call("whoami")
        page:close()
      end
      for _ = 1, 8 do open_and_close("/frames.html") end     -- (2 sessions each: its own, its cross-site iframe's)
      -- pages closed while their script was stuck (a call timed out: its
      -- probe, which would have stopped the script at the next call, waits)
      for _ = 1, 4 do
        local page = b:new_page(server.url("/tools.html"))
        assert.equal("timeout", H.error_of(page.call, page, "busy", nil, { timeout = 0.1 }).code)
        page:close()
      end
      -- (a request left unawaited, as when a discovery is cut short by the
      -- call's time running out, waits for the connection's sweep, 10 s
      -- past its deadline: none may stay with no deadline, for good)
      local conn, kept = b.conn, {}
      for id in pairs(conn.pending) do
        if conn.deadlines[id] == nil and conn.json_ids[id] == nil then kept[#kept + 1] = id end
      end
      assert.equal(0, #kept)
      if jit then jit.flush() end                              -- (see the collected Browser above)
      collectgarbage(); collectgarbage()
      local ended = count(b.conn.ended_sessions)
      assert.is_true(ended <= 4, "sessions kept: " .. ended)
      -- a page kept is still refused at once
      local page = b:new_page(server.url("/tools.html"))
      page:close()
      collectgarbage(); collectgarbage()
      local e = H.error_of(b.conn.send, b.conn, "Runtime.evaluate", { expression = "1" }, page.session)
      assert.equal("disconnected", e.code)
    end)
    b:close()
    assert(ok, tostring(err))
  end)

  -- A page that logs objects and throws for hours: what it logged stays
  -- alive in the page only while the page's records hold it (and Chromium's
  -- own console, whose last 1000 messages are its own bound). Counted with
  -- WeakRefs, after a full collection.
  it("keeps alive in the page no more of what it logged than its records hold", function()
    local b = dt.launch{ history = { console = 10 } }
    local ok, err = pcall(function()
      local page = b:new_page(server.url("/tools.html"))
      page:evaluate("window.__refs = []; 1")
      local function spam()
        -- (the last timer is queued after the throws: they have all run when it settles)
        page:evaluate([[new Promise((done) => {
          for (let i = 0; i < 500; i++) {
            const logged = { i, list: [i] }, thrown = new Error('soak ' + i);
            window.__refs.push(new WeakRef(logged), new WeakRef(thrown));
            console.log('soak', logged);
            setTimeout(() => { throw thrown; }, 0);
          }
          setTimeout(() => done(1), 0);
        })]], { timeout = 30 })
        page:mark()                        -- every record routed (and dropped from the ring)
        page:cdp("HeapProfiler.collectGarbage")
        return page:evaluate("window.__refs.filter((r) => r.deref() !== undefined).length")
      end
      local first = spam()
      local second = spam()
      -- 1000 more logged and thrown: none of them kept beyond the ring's 10
      assert.is_true(second <= first + 10, ("alive: %d, then %d"):format(first, second))
      -- what the ring holds still reads by value
      page:evaluate("console.log('last', { k: 7 }), 1")
      local msgs = page:console_messages()
      assert.equal("exception", msgs[#msgs - 1].type)
      assert.equal(7, msgs[#msgs].args[2].k)
    end)
    b:close()
    assert(ok, tostring(err))
  end)

  -- An expression a monitor evaluates again and again, which throws or
  -- rejects now and then (or a page that breaks our own scripts): what was
  -- thrown is not kept alive in the page.
  it("keeps alive in the page nothing that an evaluate, a call or a discovery threw", function()
    local b = dt.launch()
    local ok, err = pcall(function()
      local page = b:new_page(server.url("/tools.html"))
      local add = page:tool("add")
      page:evaluate("window.__refs = []; 1")
      local track = "(window.__refs.push(new WeakRef(e)), e)"
      for i = 1, 50 do
        local e1 = H.error_of(page.evaluate, page, "{ const e = new Error('thrown " .. i .. "'); throw " .. track .. " }")
        local e2 = H.error_of(page.evaluate, page, "{ const e = { why: " .. i .. " }; Promise.reject(" .. track .. ") }")
        assert.equal("js_error", e1.code)
        assert.equal("js_error", e2.code)
      end
      -- our call wrapper and our discovery, made to throw by the page
      page:evaluate("Object.defineProperty(window.__dtmcp, 'toolGroups', { get() { const e = new Error('no tools');"
        .. " throw " .. track .. "; } }); window.CustomEvent = function () { const e = new Error('no events');"
        .. " throw " .. track .. "; }; 1")
      for _ = 1, 20 do
        assert.equal("tool_error", H.error_of(add.call, add, { a = 1, b = 2 }).code)
      end
      for _ = 1, 20 do
        local _, warnings = page:discover()
        assert.matches("no events", warnings[1], 1, true)
      end
      page:cdp("HeapProfiler.collectGarbage")
      assert.equal(140, page:evaluate("window.__refs.length"))
      assert.equal(0, page:evaluate("window.__refs.filter((r) => r.deref() !== undefined).length"))
    end)
    b:close()
    assert(ok, tostring(err))
  end)

  -- A selector the page cannot parse: querySelector throws a SyntaxError
  -- (a DOMException) made by Chromium, where a page script cannot put a
  -- WeakRef on it; counted instead as the DOMExceptions alive in the
  -- page, which Runtime.queryObjects finds after a full collection.
  it("keeps alive in the page nothing that a screenshot's malformed selector threw", function()
    local b = dt.launch()
    local ok, err = pcall(function()
      local page = b:new_page(server.url("/tools.html"))
      local function dom_exceptions()
        local proto = page:cdp("Runtime.evaluate", { expression = "DOMException.prototype", objectGroup = "spec" })
        local found = page:cdp("Runtime.queryObjects", { prototypeObjectId = proto.result.objectId,
          objectGroup = "spec" })
        local n = page:cdp("Runtime.callFunctionOn", { objectId = found.objects.objectId,
          functionDeclaration = "function () { return this.length; }", returnByValue = true })
        page:cdp("Runtime.releaseObjectGroup", { objectGroup = "spec" })
        return n.result.value
      end
      local before = dom_exceptions()
      for _, selector in ipairs({ "[[bad", "((", "", "a[", "#" }) do
        for _ = 1, 4 do
          local e = H.error_of(page.screenshot, page, { element = selector })
          assert.equal("bad_argument", e.code)
          assert.matches("is not a valid CSS selector", e.message, 1, true)
        end
      end
      assert.equal(before, dom_exceptions())
    end)
    b:close()
    assert(ok, tostring(err))
  end)

  -- `<close>` is Lua 5.4 syntax: there is nothing to test under LuaJIT.
  local it_54 = _VERSION == "Lua 5.4" and it or function() end
  it_54("closes with <close>", function()
    local pid
    local f = assert(load([[
      local dt, server = ...
      local b <close> = dt.launch()
      b:new_page(server.url("/tools.html"))
      return b.process:pid()
    ]]))
    pid = f(dt, server)
    assert.is_true(H.wait_for(function() return H.live_in_group(pid) == 0 end, H.LONG))
  end)
end)
