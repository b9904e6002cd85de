-- Integration: real headless Chromium through dt.launch and dt.connect.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local H = require "helper"
local R = require "support.remote_helper"

describe("dt.launch", function()
  local server
  setup(function() server = H.start_server() end)
  teardown(function() server.stop() end)

  it("launches, evaluates, navigates, reloads and cleans up after itself", function()
    local b = dt.launch()
    local pid = b.process:pid()
    local profile = b.user_data_dir
    assert.is_true(H.exists(profile))
    assert.matches("Chrome/", b:version().product)
    assert.matches("^Browser%(pid %d+%)$", tostring(b))

    local page = b:new_page(server.url("/tools.html"))
    assert.equal(server.url("/tools.html"), page.url)
    assert.equal(3, page:evaluate("1 + 2"))
    assert.equal(math.type(page:evaluate("1 + 2")), "integer")
    assert.equal("tools", page:evaluate("document.title"))
    assert.equal(42, page:evaluate("new Promise(r => setTimeout(() => r(42), 10))"))
    assert.is_nil(page:evaluate("undefined"))
    assert.equal(dt.null, page:evaluate("null"))
    assert.same({ a = 1 }, page:evaluate("({a: 1})"))

    local found = false
    for _, p in ipairs(b:pages()) do
      if p.id == page.target_id then found = true end
      assert.is_string(p.url)
    end
    assert.is_true(found)

    page:navigate(server.url("/child.html?name=x"))
    assert.equal("child", page:evaluate("document.title"))
    assert.equal(server.url("/child.html?name=x"), page.url)
    page:evaluate("window.marker = 1")
    page:reload()
    assert.is_nil(page:evaluate("window.marker"))
    page:close()
    -- Chromium's crash handlers leave the process group; they are ours
    -- all the same, and their database lives in the temporary profile
    local helpers = H.live_with_arg(profile)
    assert.is_true(#helpers > 0)
    b:close()
    b:close()   -- idempotent
    assert.is_true(H.wait_for(function() return #H.live_with_arg(profile) == 0 end, H.LONG),
      "processes of this browser left behind")

    assert.is_false(H.exists(profile), "temporary profile left behind")
    assert.is_true(H.wait_for(function() return H.live_in_group(pid) == 0 end, H.LONG),
      "Chromium processes left behind")
  end)

  it("turns JS exceptions into js_error with the message and stack", function()
    local b = dt.launch()
    local page = b:new_page()
    local e = H.error_of(page.evaluate, page, "throw new Error('boom')")
    assert.equal("js_error", e.code)
    assert.equal("Error: boom", e.message)
    assert.matches("at <anonymous>", e.details.stack)
    e = H.error_of(page.evaluate, page, "Promise.reject(new TypeError('nope'))")
    assert.equal("js_error", e.code)
    assert.matches("TypeError: nope", e.message)
    e = H.error_of(page.evaluate, page, "throw 'text'")
    assert.equal("text", e.message)
    b:close()
  end)

  it("times out a promise that never settles and stays usable", function()
    local b = dt.launch()
    local page = b:new_page()
    local t0 = core.now()
    local e = H.error_of(page.evaluate, page, "new Promise(() => {})", { timeout = 0.2 })
    local took = core.now() - t0
    assert.equal("timeout", e.code)
    assert.is_true(took >= 0.2 and took < 2, "took " .. took)
    assert.equal(7, page:evaluate("7"))
    b:close()
  end)

  it("raises disconnected promptly when the browser dies during a call", function()
    local b = dt.launch()
    local page = b:new_page()
    local pid = b.process:pid()
    -- A call that would wait 20 s; the browser is killed once it started.
    local killer
    H.on_console(page, "started", function()
      killer = core.process.spawn({ "/bin/kill", "-9", tostring(pid) })
    end)
    local e = H.error_of(page.evaluate, page, "console.log('started'); new Promise(() => {})", { timeout = 20 })
    assert.equal("disconnected", e.code)
    assert.is_not_nil(killer, "the browser was not killed during the call")
    killer:close(0)
    e = H.error_of(page.evaluate, page, "1")
    assert.equal("disconnected", e.code)
    b:close()
    assert.is_true(H.wait_for(function() return H.live_in_group(pid) == 0 end, H.LONG),
      "Chromium processes left behind")
  end)

  it("fails fast with launch_failed naming what it tried", function()
    local t0 = core.now()
    local e = H.error_of(dt.launch, { executable = "/nonexistent/chromium" })
    assert.equal("launch_failed", e.code)
    assert.matches("/nonexistent/chromium", e.message, 1, true)
    assert.is_true(core.now() - t0 < 1)
    e = H.error_of(dt.launch, { executable = "no-such-browser-xyz" })
    assert.matches("no-such-browser-xyz", e.message, 1, true)
  end)

  it("a browser that does not answer within launch's timeout: timeout, and it is ended", function()
    local dir = core.fs.mkdtemp("dt-fake-")
    local script = dir .. "/silent-chrome"
    local f = assert(io.open(script, "w"))
    -- (its arguments kept: the profile launch made for it, told from those
    -- of other launches in the same TMPDIR, make tests beside this one's)
    f:write("#!/bin/sh\necho $$ > " .. dir .. "/pid\nprintf '%s\\n' \"$@\" > " .. dir
      .. "/args\necho 'starting' >&2\nexec sleep 60\n")
    f:close()
    os.execute("chmod +x " .. script)
    local e = H.error_of(dt.launch, { executable = script, timeout = 0.5 })
    assert.equal("timeout", e.code)
    assert.matches("did not answer within its timeout (0.5 s)", e.message, 1, true)
    assert.matches("starting", e.details.stderr, 1, true)
    local pf = assert(io.open(dir .. "/pid"))
    local pid = tonumber(pf:read("*l"))
    pf:close()
    local af = assert(io.open(dir .. "/args"))
    local profile = af:read("*a"):match("%-%-user%-data%-dir=([^\n]+)")
    af:close()
    core.fs.rmtree(dir)
    assert.truthy(profile, "launch gave no --user-data-dir")
    assert.is_true(H.wait_for(function() return H.live_in_group(pid) == 0 end, H.LONG), "the browser is still running")
    assert.is_true(H.wait_for(function()
      local d = io.open(profile .. "/.")
      if d then d:close() end
      return d == nil
    end, H.LONG), "its profile " .. profile .. " is still there")
  end)

  it("a close whose timeout is used up kills Chromium and leaves the rest to the reaper", function()
    local b = dt.launch()
    local pid, dir = b.process:pid(), b.user_data_dir
    local calls = H.spy_process(b)
    b:close({ timeout = 0 })
    assert.same({ "close", 0, true }, calls[#calls])
    assert.is_true(H.wait_for(function() return H.live_in_group(pid) == 0 end, H.LONG), "Chromium is still running")
    assert.is_true(H.wait_for(function() return not H.exists(dir) end, H.LONG), "the profile is still there")
  end)

  it("a browser ended while it starts leaves nothing in TMPDIR (its singleton directory)", function()
    local tmp, scripts = assert(core.fs.mkdtemp("dt-tmpdir-")), assert(core.fs.mkdtemp("dt-script-"))
    local script = scripts .. "/starts.lua"
    local f = assert(io.open(script, "w"))
    f:write([[
      local dt = require "devtools_tools"
      local wait = require "devtools_tools.rt.wait"
      local tmp = os.getenv("TMPDIR")
      -- what TMPDIR shows of a start-up so far: its profile, and what
      -- Chromium has put in it
      local function seen(what)
        local p = io.popen("find " .. tmp .. " -mindepth " .. (what == "profile" and 1 or 2)
          .. " -maxdepth 2 2>/dev/null | head -1")
        local got = p:read("*a") ~= ""
        p:close()
        return got
      end
      -- cancelled at different points of its start-up: before it waits
      -- for anything, once its profile exists, once Chromium writes into it
      for _, point in ipairs({ "now", "profile", "chromium", "now", "profile", "chromium" }) do
        local t = dt.async(function() return dt.launch() end)
        if point ~= "now" then
          dt.async(function() wait.condition(function() return seen(point) or t.done end, dt.now() + 10) end):wait()
        end
        t:cancel()
        pcall(t.wait, t)
      end
      local b = dt.launch()
      print(b:new_page("about:blank"):evaluate("1 + 1"))
      b:close()
    ]])
    f:close()
    local out, rc = H.sh(("TMPDIR=%s LUA_PATH='./lua/?.lua;./lua/?/init.lua;;' LUA_CPATH='./%s/?.so;;' %s %s"):format(
      tmp, H.build, H.lua, script))
    core.fs.rmtree(scripts)
    assert.equal(0, rc, out)
    assert.equal("2\n", out)
    local function left() local p = io.popen("ls -A " .. tmp); local l = p:read("*a"); p:close(); return l end
    H.wait_for(function() return left() == "" end, H.LONG)
    local l = left()
    core.fs.rmtree(tmp)
    assert.equal("", l)
  end)

  it("reports the output of a browser that dies during start-up", function()
    local dir = core.fs.mkdtemp("dt-fake-")
    local script = dir .. "/fake-chrome"
    local f = assert(io.open(script, "w"))
    f:write("#!/bin/sh\necho 'something broke at start-up' >&2\nexit 3\n")
    f:close()
    os.execute("chmod +x " .. script)
    local e = H.error_of(dt.launch, { executable = script })
    core.fs.rmtree(dir)
    assert.equal("launch_failed", e.code)
    assert.matches("something broke at start-up", e.message, 1, true)
    assert.matches("something broke at start-up", e.details.stderr, 1, true)
  end)

  it("checks its arguments before it makes a profile", function()
    -- (a spy on the call that makes directories, not a listing of TMPDIR,
    -- where a make test beside this one makes profiles of its own)
    local made, mkdtemp = {}, core.fs.mkdtemp
    core.fs.mkdtemp = function(...)
      made[#made + 1] = { ... }
      return mkdtemp(...)
    end
    local ok, err = pcall(function()
      assert.equal("bad_argument", H.error_of(dt.launch, 5).code)
      assert.equal("bad_argument", H.error_of(dt.launch, { nope = 1 }).code)
      assert.equal("bad_argument", H.error_of(dt.launch, { timeout = -1 }).code)
      assert.equal("bad_argument", H.error_of(dt.launch, { args = { "--mute-audio", 5 } }).code)
      assert.equal("bad_argument", H.error_of(dt.launch, { history = { console = -1 } }).code)
    end)
    core.fs.mkdtemp = mkdtemp
    assert(ok, err)
    assert.same({}, made)
  end)

  it("passes one --disable-features, the caller's merged into its own, and opens no window nor omnibox popup of its own", function()
    -- Chromium reads only the last --disable-features: two would lose one
    local b = dt.launch({ args = { "--disable-features=Translate" } })
    local f = assert(io.open("/proc/" .. b.process:pid() .. "/cmdline", "rb"))
    local cmdline = f:read("*a")
    f:close()
    local flags = {}
    for a in cmdline:gmatch("%z?(%-%-disable%-features=[^%z]*)") do flags[#flags + 1] = a end
    local want = "--disable-features=" .. table.concat(require("devtools_tools.browser").disabled_features, ",")
      .. ",Translate"
    assert.same({ want }, flags)
    -- no start-up window: no blank tab nobody asked for
    assert.same({}, b:pages())
    -- Without those features every new tab gets a chrome://omnibox-popup
    -- renderer of its own (a browser_ui target).
    b:new_page(server.url("/tools.html"))
    assert.equal(1, #b:pages())
    local urls = {}
    for _, t in ipairs(b.conn:call("Target.getTargets", { filter = { {} } }).targetInfos) do
      urls[#urls + 1] = t.type .. " " .. t.url
    end
    b:close()
    assert.is_nil(table.concat(urls, "\n"):find("omnibox", 1, true), table.concat(urls, "\n"))
  end)

  it("keeps every page of a headless browser visible, not only the last one opened", function()
    local b = dt.launch()
    local pages = {}
    for i = 1, 3 do pages[i] = b:new_page(server.url("/tools.html")) end
    local RAF = "new Promise((r) => requestAnimationFrame(() => r(document.visibilityState)))"
    for i, page in ipairs(pages) do
      local ok, state = pcall(page.evaluate, page, RAF, { timeout = 20 })
      assert.is_true(ok, "page " .. i .. ": " .. tostring(state))
      assert.equal("visible", state, "page " .. i)
    end
    b:close()
    -- also when its user agent does not say so
    b = dt.launch({ args = { "--user-agent=Custom/1.0" } })
    local p1, p2 = b:new_page(), b:new_page()
    assert.equal("Custom/1.0", p1:evaluate("navigator.userAgent"))
    assert.equal("visible", p1:evaluate("document.visibilityState"))
    assert.equal("visible", p2:evaluate("document.visibilityState"))
    b:close()
  end)
end)

describe("ECMA-262 patterns against Chromium's own RegExp", function()
  -- Each pattern compiled with flags by us and by Chromium's new RegExp,
  -- and tested on each subject (JSON texts): what differs, one line each,
  -- and how many patterns compiled.
  local function differences(pats, subjects, flags)
    local b = dt.launch()
    finally(function() b:close() end)
    local js = b:new_page():evaluate(("(function (pats, subjects, flags) {"
      .. " return pats.map(p => { let re; try { re = new RegExp(p, flags); } catch (e) { return 'error'; }"
      .. " return subjects.map(s => re.test(JSON.parse(s))); }); })(%s, %s, %q)")
      :format(dt.json.encode(dt.array(pats)), dt.json.encode(dt.array(subjects)), flags))
    local differ, compiled = {}, 0
    for i, p in ipairs(pats) do
      local rx, err = core.regex.compile(p, flags)
      if (rx == nil) ~= (js[i] == "error") then
        differ[#differ + 1] = ("/%s/: ours %s, JavaScript %s"):format(p, tostring(err or "compiles"),
          js[i] == "error" and "refuses it" or "compiles it")
      elseif rx then
        compiled = compiled + 1
        for j, sj in ipairs(subjects) do
          local ours = rx:test(dt.json.decode(sj))
          if ours ~= js[i][j] then
            differ[#differ + 1] = ("/%s/ on %s: %s, JavaScript %s"):format(p, sj, tostring(ours), tostring(js[i][j]))
          end
        end
      end
    end
    return differ, compiled
  end

  -- Strings with lone surrogates, which JavaScript holds and our JSON
  -- decoder keeps: Regex:test answers as new RegExp(p, "u").test does.
  it("agrees on strings with lone surrogates", function()
    local pats = { "^a", "^.*$", "^[^<>]*$", "b$", "^a.b$", "^\\S+$", "^a\\Sb$", "^a[\\uD800-\\uDFFF]b$",
      "^a\\uD800b$", "^a\\uDC00b$", "^a[\\uD800]b$", "^a[^\\uD800]b$", "^a[\\u0000-\\uFFFF]b$",
      "^a[\\uE000-\\uFFFF]b$", "^a[\\u0000-\\uD7FF]b$", "^a[\\uDBFF-\\uDC00]b$", "^a\\Wb$", "^a\\Db$",
      "^a[^a]b$", "^a\\p{Cs}b$", "^a\\P{Cs}b$", "^a\\p{Co}b$", "^a\\P{Co}b$", "^a[\\p{Co}]b$",
      "^a[^\\p{Cs}]b$", "^a\\p{gc=Surrogate}b$", "^a\\P{L}b$", "^a\\p{C}b$", "^a\\p{Any}b$",
      "^.{3}$", "^\\uD83D\\uDC32$", "^\\uD83D$", "^[\\uD83D\\uDC32]$", "^a.$", "^a[\\s\\S]b$",
      "^a\\p{Cn}b$", "^a\\P{Cn}b$", "^a\\p{Assigned}b$", "^a\\p{Noncharacter_Code_Point}b$",
      "^a[^\\p{Co}]b$", "^a[\\P{Cs}]b$",
      -- lone surrogates in the pattern's own text, as decoded from JSON, and a CESU-8 pair
      dt.json.decode('"^a[\\ud800-\\udfff]b$"'), dt.json.decode('"^a\\ud800b$"'), dt.json.decode('"^a[^\\udc00]b$"'),
      "^\xED\xA0\xBD\xED\xB0\xB2$" }
    local subjects = { '"a\\ud800b"', '"a\\udc00b"', '"a\\udbffb"', '"a\\ud83d"', '"\\ud83d"',
      '"\\ud83d\\udc32"', '"\\udc32\\ud83d"', '"a\\ud800\\ud800b"', '"\\udbff\\udfff"', '"abb"', '"a\\ue000b"',
      '"a\\udfffb"', '"a\\udffeb"' }
    local differ, compiled = differences(pats, subjects, "u")
    assert.are.same({}, differ)
    assert.equal(#pats, compiled)
  end)

  -- Without flags (Annex B, as ajv 6 compiles a schema's `pattern`): the
  -- pattern and the subject are UTF-16 units, and what is not an escape
  -- stands for itself. Each pattern compiles here iff Chromium's does.
  it("agrees without flags, on UTF-16 units and Annex B's syntax", function()
    local pats = { "^.$", "^..$", "^\\u{1F432}$", "^[\\uD83D\\uDC32]$", "^[\\uD83D\\uDC32]{2}$",
      "\\uD83D", "\\uDC32$", "^\\S+$", "^[^a]+$", "^.{3}$", "^\\W\\W$", "^[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]$",
      "^\\d{3}\\-\\d{4}$", "^[\\w\\-\\.]+$", "^\\a\\e$", "^\\p{L}$", "a]", "}", "^{", "a{,3}", "x{a}", "^\\u{3}$",
      "^\\x4", "\\c1", "[\\c1]", "[\\c*]", "^\\12", "\\400", "\\08", "\\8", "(a)\\2", "\\k", "[\\d-z]", "[a-\\d]",
      "[\\d-a-z]", "[\\B]", "(?=a)*b", "(?!a){2}", "^a(?=b)?$", "[^\\uD800]", "^\\ud83d$", "a.b",
      "(?<x>a)\\k", "(?<x>a)[\\k]", "a{2}{3}", "[z-a]", "^*", "\\b+", "(?<=a)*", "{1}", "\\",
      -- in the pattern's own text: an emoji, and as decoded from JSON a lone
      -- surrogate and a pair (CESU-8)
      "^\u{1F432}+$", "^[\u{1F432}]$", dt.json.decode('"^\\ud800$"'), dt.json.decode('"^[\\ud83d\\udc32]$"'),
      "^\xED\xA0\xBD\xED\xB0\xB2$" }
    local subjects = { '"\\ud83d\\udc32"', '"\\ud83d"', '"\\udc32"', '"a\\ud83d\\udc32"', '"\\ud83d\\udc32\\udc32"',
      '"555-1234"', '"a.b-c"', '"ae"', '"p{L}"', '"x"', '"a]"', '"}"', '"{"', '"a{,3}"', '"x{a}"', '"uuu"',
      '"x4"', '"\\\\c1"', '"\\u0011"', '"*"', '"\\\\"', '"\\n"', '" 0"', '"\\u00008"', '"8"', '"a\\u0002"', '"k"',
      '"-"', '"m"', '"B"', '"b"', '"a"', '"ab"', '"\\ud800"', '"a\\ud800b"', '"aa"' }
    local differ, compiled = differences(pats, subjects, "")
    assert.are.same({}, differ)
    assert.is_true(compiled >= #pats - 10)
  end)
end)

describe("dt.connect", function()
  local proc, port, profile

  setup(function() proc, port, profile = R.chromium() end)

  teardown(function() R.stop(proc) end)

  it("attaches over http://127.0.0.1:port and leaves the browser running", function()
    local b = dt.connect("http://127.0.0.1:" .. port)
    assert.matches("Chrome/", b:version().product)
    local page = b:new_page("data:text/html,<title>hi</title>")
    assert.equal("hi", page:evaluate("document.title"))
    page:close()
    b:close()
    assert.is_true(proc:running())
    -- and again, by ws:// URL
    local f = io.open(profile .. "/DevToolsActivePort")
    f:read("*l")
    local path = f:read("*l")
    f:close()
    local b2 = dt.connect("ws://127.0.0.1:" .. port .. path)
    assert.equal(2, b2:new_page():evaluate("1 + 1"))
    b2:close()
    local b3 = dt.connect("http://localhost:" .. port)
    assert.is_table(b3:pages())
    -- a headless browser it connected to: its pages stay visible too
    local p1, p2 = b3:new_page(), b3:new_page()
    assert.equal("visible", p1:evaluate("document.visibilityState"))
    assert.equal("visible", p2:evaluate("document.visibilityState"))
    p1:close()
    p2:close()
    b3:close()
  end)

  it("opens a page in a browser that has no window", function()
    -- headless, started without a window, and its user agent hides it: a
    -- tab is asked for, and Chromium opens a window for it
    local p, port2 = R.chromium({ "--no-startup-window", "--user-agent=Custom/1.0" })
    local b = dt.connect("http://127.0.0.1:" .. port2)
    local ok, err = pcall(function()
      assert.same({}, b:pages())
      assert.equal(2, b:new_page():evaluate("1 + 1"))
    end)
    b:close()
    R.stop(p)
    assert(ok, tostring(err))
  end)

  it("refuses a closed port at once with connect_failed", function()
    local s = require("socket").bind("127.0.0.1", 0)
    local _, free = s:getsockname()
    s:close()
    local t0 = core.now()
    local e = H.error_of(dt.connect, "http://127.0.0.1:" .. free)
    assert.equal("connect_failed", e.code)
    assert.is_true(core.now() - t0 < 1)
  end)

  it("refuses non-loopback hosts unless allow_remote is set", function()
    local e = H.error_of(dt.connect, "http://192.0.2.1:9222")
    assert.equal("connect_failed", e.code)
    assert.matches("allow_remote", e.message)
    e = H.error_of(dt.connect, "http://192.0.2.1:9222", { allow_remote = true, timeout = 0.3 })
    assert.is_true(e.code == "connect_failed" or e.code == "timeout")
    assert.equal("bad_argument", H.error_of(dt.connect, "ftp://127.0.0.1:1").code)
    assert.equal("bad_argument", H.error_of(dt.connect, 42).code)
  end)
end)
