-- Integration: traces of tool calls in real headless Chromium, on a page
-- whose results change with its version (spec/fixtures/trace.html?v=N):
-- page:on("call") and browser:on("page") (what a recorder hears), then
-- dt.record -> dt.trace.read -> dt.trace.replay: the same version gives no
-- difference; another names the paths, a missing tool, refused arguments,
-- an error where a result was; --ignore, --update, navigations, values
-- over the limit, console and network summaries (never headers); and the
-- recipe dt.trace.lua writes makes the recorded calls again.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local H = require "helper"

local server, browser, dir

local start_suite, stop_suite = H.browser_suite(function(s, b) server, browser = s, b end)
setup(function()
  start_suite()
  dir = assert(core.fs.mkdtemp("dt-trace-"))
end)
teardown(function()
  stop_suite()
  core.fs.rmtree(dir)
end)

local function url(v, extra)
  return server.url("/trace.html" .. (v and ("?v=" .. v) or "") .. (extra or ""))
end

local n = 0
local function tmpfile()
  n = n + 1
  return dir .. "/t" .. n .. ".trace"
end

-- the session the replays check: every kind of call the fixture has
local function session(page)
  page:call("getCacheStats")
  pcall(page.call, page, "explode")
  page:call("getState", { path = "cart.items", depth = 5 })
  page:call("legacyStats")
  page:call("counter")
end

local function record(v, fn, opts)
  local page = browser:new_page(url(v))
  local file = tmpfile()
  local rec = dt.record(page, file, opts)
  fn(page)
  assert.is_true(rec:stop())
  page:close()
  return file
end

local function replay(file, v, opts)
  local page = browser:new_page("about:blank")
  opts = opts or {}
  opts.url = opts.url or (v and url(v))
  local report = dt.trace.replay(page, dt.trace.read(file), opts)
  page:close()
  return report
end

local function kinds(report)
  local out = {}
  for _, d in ipairs(report.differences) do
    out[#out + 1] = d.call .. " " .. d.tool .. " " .. d.kind .. (d.path and (" " .. d.path) or "")
  end
  return out
end

describe("page:on('call')", function()
  it("hears each call as it ends: page:call, tool:call, its tool, arguments, result or error, ms", function()
    local page = browser:new_page(url())
    local heard = {}
    local off = page:on("call", function(rec) heard[#heard + 1] = rec end)
    page:call("getState", { path = "user.name" })
    pcall(page.call, page, "explode")
    pcall(page.call, page, "noSuchTool")
    page:tool("counter"):call()
    assert.equal(4, #heard)
    local r = heard[1]
    assert.equal("getState", r.name)
    assert.equal("getState", r.tool.name)
    assert.equal("shop", r.tool.group.name)
    assert.same({ path = "user.name" }, r.args)
    assert.is_true(r.ok)
    assert.same({ value = "Ada", depth = 1 }, r.result)
    assert.is_number(r.ms)
    assert.is_true(r.ms >= 0)
    assert.is_false(heard[2].ok)
    assert.equal("tool_error", heard[2].error.code)
    assert.equal("explode", heard[2].tool.name)
    assert.equal("tool_not_found", heard[3].error.code)
    assert.is_nil(heard[3].tool)
    assert.equal("counter", heard[4].tool.name)
    assert.same({ count = 1 }, heard[4].result)
    off()
    page:call("counter")
    assert.equal(4, #heard)
    page:close()
  end)

  it("hears a call_many's entries in their order once it ends, with one batch number", function()
    local page = browser:new_page(url())
    local heard = {}
    page:on("call", function(rec) heard[#heard + 1] = rec end)
    local res = page:call_many({ { "counter" }, { "nope" }, { "getState", { path = "user.name" } } },
      { errors = "return" })
    assert.equal(3, res.n)
    assert.equal(3, #heard)
    for i, rec in ipairs(heard) do
      assert.equal(i, rec.index)
      assert.equal(heard[1].batch, rec.batch)
    end
    assert.equal("counter", heard[1].name)
    assert.equal("nope", heard[2].name)
    assert.equal("tool_not_found", heard[2].error.code)
    assert.same({ value = "Ada", depth = 1 }, heard[3].result)
    page:call_many({ { "counter" } })
    assert.is_true(heard[4].batch > heard[1].batch)
    page:close()
  end)

  it("a listener that fails does not fail the call", function()
    local page = browser:new_page(url())
    page:on("call", function() error("listener bug") end)
    assert.same({ count = 1 }, page:call("counter"))
    page:close()
  end)
end)

describe("browser:on('page')", function()
  it("tells the pages the browser holds, then each it opens; a browser's trace numbers them", function()
    local held = browser:new_page(url())
    local seen = {}
    local off = browser:on("page", function(p) seen[#seen + 1] = p end)
    local found = false
    for _, p in ipairs(seen) do found = found or p == held end
    assert.is_true(found)
    local before = #seen
    local p2 = browser:new_page(url())
    assert.equal(before + 1, #seen)
    assert.equal(p2, seen[#seen])
    off()
    local file = tmpfile()
    local rec = dt.record(browser, file)
    held:call("counter")
    local p3 = browser:new_page(url())
    p3:call("getCacheStats")
    rec:stop()
    local t = dt.trace.read(file)
    assert.equal(2, #t.calls)
    assert.is_number(t.calls[1].page)
    assert.is_number(t.calls[2].page)
    assert.is_true(t.calls[1].page ~= t.calls[2].page)
    held:close() p2:close() p3:close()
  end)
end)

describe("a trace", function()
  it("holds a header, each call with its tool, kind, group, origin, arguments, outcome and ms, and navigations", function()
    local file = record(1, function(page)
      session(page)
      page:reload()
      page:call("counter")
    end)
    local text = H.read_file(file)
    local first = text:match("^[^\n]*")
    assert.matches('^{"format":"devtools%-tools%-trace","version":1,"url":', first)
    local t = dt.trace.read(file)
    assert.equal(url(1), t.header.url)
    assert.matches("Chrome", t.header.browser)
    assert.matches("^%d%d%d%d%-%d%d%-%d%dT", t.header.time)
    assert.equal(6, #t.calls)
    local c = t.calls[1]
    assert.equal(1, c.call)
    assert.equal("getCacheStats", c.tool)
    assert.equal("devtools", c.kind)
    assert.equal("shop", c.group)
    assert.equal(server.url("/"):sub(1, -2), c.origin)
    assert.equal(9, c.result.misses)
    assert.is_number(c.ms)
    assert.same({ code = "tool_error", message = "boom" }, t.calls[2].error)
    assert.same({ path = "cart.items", depth = 5 }, t.calls[3].args)
    local kinds_seen = {}
    for _, ev in ipairs(t.events) do kinds_seen[#kinds_seen + 1] = ev.type end
    assert.same({ "call", "call", "call", "call", "call", "navigate", "call", "end" }, kinds_seen)
    assert.equal(url(1), t.events[6].url)
    -- each line whole: the file ends with a newline, and every line is JSON
    assert.equal("\n", text:sub(-1))
  end)

  it("replayed against the same version: no difference", function()
    local file = record(1, session)
    local r = replay(file, 1)
    assert.same({}, kinds(r))
    assert.equal(5, r.calls)
    assert.equal(0, r.differing_calls)
  end)

  it("replayed against another version: the paths that differ, a missing tool, an error where a result was", function()
    local file = record(1, session)
    local r = replay(file, 2)
    assert.same({
      "1 getCacheStats value /entries/0/ts", "1 getCacheStats value /entries/1/ts", "1 getCacheStats value /misses",
      "2 explode result_instead", "4 legacyStats missing_tool",
    }, kinds(r))
    local d = r.differences[3]
    assert.equal(9, d.recorded)
    assert.equal(17, d.new)
    assert.same({ code = "tool_error", message = "boom" }, r.differences[4].recorded)
    assert.same({ fixed = true }, r.differences[4].new)
    assert.equal(3, r.differing_calls)
  end)

  it("an argument the tool's schema refuses now is a difference of its own", function()
    local file = record(1, function(page) page:call("getState", { path = "cart.items", depth = 5 }) end)
    local r = replay(file, 3)
    assert.same({ "1 getState refused" }, kinds(r))
    assert.matches("/depth: must be <= 3", r.differences[1].message, 1, true)
    assert.equal("invalid_params", r.differences[1].error.code)
  end)

  it("a recorded error replayed as the same error is no difference; a result where it was is one", function()
    local file = record(1, function(page) pcall(page.call, page, "explode") end)
    assert.same({}, kinds(replay(file, 1)))
    assert.same({ "1 explode result_instead" }, kinds(replay(file, 2)))
  end)

  it("--ignore: pointers, * for one segment, cover what is beneath them", function()
    local file = record(1, function(page) page:call("getCacheStats") end)
    assert.same({ "1 getCacheStats value /misses" }, kinds(replay(file, 2, { ignore = { "/entries/*/ts" } })))
    assert.same({}, kinds(replay(file, 2, { ignore = { "/entries", "/misses" } })))
    assert.same({ "1 getCacheStats value /entries/0/ts", "1 getCacheStats value /entries/1/ts" },
      kinds(replay(file, 2, { ignore = { "/misses", "/entries/*/key" } })))
  end)

  it("--update: the new outcomes written, so the next replay against that version finds none", function()
    local file = record(1, session)
    local r = replay(file, 2)
    assert.equal(5, #r.differences)
    dt.trace.write(r.updated, file)
    local t = dt.trace.read(file)
    assert.equal(17, t.calls[1].result.misses)
    assert.equal("tool_not_found", t.calls[4].error.code)
    assert.is_string(t.header.updated)
    assert.same({}, kinds(replay(file, 2)))
    assert.same({ "1 getCacheStats value /entries/0/ts", "1 getCacheStats value /entries/1/ts",
      "1 getCacheStats value /misses", "2 explode error_instead", "4 legacyStats result_instead" },
      kinds(replay(file, 1)))
  end)

  it("replays the navigations recorded between calls (a reload resets the page's counter)", function()
    local file = record(1, function(page)
      page:call("counter")
      page:reload()
      page:call("counter")
    end)
    assert.same({}, kinds(replay(file, 1)))
    assert.equal(1, replay(file, 1).navigations)
    -- the same trace without its navigation: the second count is 2 (checks the check)
    local t = dt.trace.read(file)
    local kept = {}
    for _, ev in ipairs(t.events) do if ev.type ~= "navigate" then kept[#kept + 1] = ev end end
    t.events = kept
    local page = browser:new_page("about:blank")
    local r = dt.trace.replay(page, t, { url = url(1) })
    page:close()
    assert.same({ "2 counter value /count" }, kinds(r))
  end)

  it("moves a recorded navigation to the replay's origin", function()
    assert.equal("http://b:2/x?y", dt.trace.rebase("http://a:1/x?y", "http://a:1/start", "http://b:2/start2"))
    assert.equal("http://b:2/start2", dt.trace.rebase("http://a:1/start", "http://a:1/start", "http://b:2/start2"))
    assert.equal("http://c:3/x", dt.trace.rebase("http://c:3/x", "http://a:1/start", "http://b:2/"))
    assert.equal("http://a:10/x", dt.trace.rebase("http://a:10/x", "http://a:1/start", "http://b:2/"))
  end)

  it("keeps a value over the limit as its digest and size, and compares digests", function()
    local file = record(1, function(page) page:call("big", { n = 5000 }) end, { limit = 1000 })
    local t = dt.trace.read(file)
    assert.is_nil(t.calls[1].result)
    assert.equal(5002, t.calls[1].result_digest.bytes)              -- "xxx...x", quoted
    assert.matches("^%x+$", t.calls[1].result_digest.sha256)
    assert.equal(64, #t.calls[1].result_digest.sha256)
    assert.is_true(#H.read_file(file) < 2000)
    assert.same({}, kinds(replay(file, 1)))
    assert.same({ "1 big digest" }, kinds(replay(file, 2)))
  end)

  it("with observe: console and network summaries, never a header, a body only when asked", function()
    local function session2(page)
      page:evaluate([[console.error('bad thing'); fetch('/trace.html?secret', { method: 'POST',
        headers: { Authorization: 'Bearer SECRET-TOKEN' }, body: 'the-body' }).then(r => r.text())]])
      page:wait_until(function()
        for _, r in ipairs(page:network_requests()) do
          if r.url:find("secret", 1, true) and r.done then return true end
        end
        return false
      end, { timeout = 10 })
    end
    local file = record(1, session2, { observe = true })
    local text = H.read_file(file)
    assert.matches('"type":"console","level":"error","text":"bad thing"', text, 1, true)
    assert.matches('"type":"network","method":"POST"', text, 1, true)
    assert.not_matches("SECRET-TOKEN", text, 1, true)
    assert.not_matches("Authorization", text, 1, true)
    assert.not_matches("the-body", text, 1, true)
    file = record(1, session2, { observe = true, bodies = true })
    text = H.read_file(file)
    assert.matches('"body":"the-body"', text, 1, true)
    assert.not_matches("SECRET-TOKEN", text, 1, true)
  end)

  it("a recorder that is not asked to observe writes no console or network lines", function()
    local file = record(1, function(page) page:evaluate("console.error('x')") page:call("counter") end)
    assert.not_matches('"type":"console"', H.read_file(file), 1, true)
  end)

  it("replays a call_many as one again, its entries compared one by one", function()
    local file = record(1, function(page)
      page:call_many({ { "getCacheStats" }, { "counter" }, { "legacyStats" } }, { errors = "return" })
    end)
    local t = dt.trace.read(file)
    assert.equal(3, #t.calls)
    assert.equal(t.calls[1].batch, t.calls[3].batch)
    assert.same({}, kinds(replay(file, 1)))
    assert.same({ "1 getCacheStats value /entries/0/ts", "1 getCacheStats value /entries/1/ts",
      "1 getCacheStats value /misses", "3 legacyStats missing_tool" }, kinds(replay(file, 2, { tool_wait = 0 })))
  end)

  it("the recipe dt.trace.lua writes makes the recorded calls again, printing the recorded results", function()
    local file = record(1, function(page)
      session(page)
      page:call_many({ { "getState", { path = "user.name" } }, { "counter" } })
    end)
    local t = dt.trace.read(file)
    local src = dt.trace.lua(t)
    local page = browser:new_page("about:blank")
    local lines = {}
    local env = setmetatable({ page = page, dt = dt, browser = browser,
      io = { write = function(...) lines[#lines + 1] = table.concat({ ... }) end } }, { __index = _G })
    local f = assert(load(src, "=recipe", "t", env))
    f()
    page:close()
    local got = table.concat(lines)
    local want = {}
    for _, c in ipairs(t.calls) do
      if c.error then want[#want + 1] = "error: devtools_tools: " .. c.error.code .. ": " .. c.error.message
      else want[#want + 1] = dt.json.encode(c.result) end
    end
    local got_lines = {}
    for l in got:gmatch("[^\n]+") do got_lines[#got_lines + 1] = l end
    assert.equal(#want, #got_lines)
    for i = 1, #want do
      if t.calls[i].error then
        assert.equal(want[i], got_lines[i])
      else
        assert.same(dt.json.decode(want[i]), dt.json.decode(got_lines[i]))
      end
    end
  end)
end)
