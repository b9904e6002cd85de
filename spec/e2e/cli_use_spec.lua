-- The command line as people use it (issue 34's points, issue 33's 3, 4
-- and 6), installed by `make install DESTDIR=...`, against real headless
-- Chromium, the fixtures' static server and the sample app: URLs as typed,
-- tabs of the background browser, pages that settle after their load,
-- viewports and image formats, WebMCP, what errors show, the terminal's
-- width, the background browser's lock and paths, the debug log.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local H = require "helper"
local app_server = require "support.app_server"
local cli = require "support.cli_install"

local shq = cli.shq

describe("devtools-tools as people use it", function()
  local inst, server, url, app

  local function run(args, opts) return inst:run(args, opts) end

  setup(function()
    inst = cli.install("dt-cli-use-"):share()
    server = H.start_server()
    url = server.url("/cli.html")
    app = assert(app_server.start())
  end)

  teardown(function()
    run("browser stop")
    app:stop()
    server.stop()
    inst:remove()
  end)

  after_each(function()
    H.wait_for(function() return #inst:left_behind() == 0 end, H.LONG)
    assert.same({}, inst:left_behind())
  end)

  local function lines_of(s)
    local t = {}
    for l in s:gmatch("[^\n]+") do t[#t + 1] = l end
    return t
  end

  describe("what a person types", function()
    it("takes a URL without a scheme as http://, as curl does", function()
      local hostpath = "127.0.0.1:" .. server.port .. "/cli.html"
      local out, err, rc = run("list " .. hostpath)
      assert.equal(0, rc, err)
      assert.matches("^cli%-tools %- Tools of the command line spec\n  frame " .. url:gsub("%p", "%%%0") .. "\n", out)
      out, err, rc = run("call " .. hostpath .. " hello")
      assert.equal(0, rc, err)
      assert.equal('"hello"\n', out)
      out, err, rc = run("eval " .. hostpath .. " 'location.href'")
      assert.equal(0, rc, err)
      assert.equal('"' .. url .. '"\n', out)
      -- a host alone, no tool after it: which tool?
      out, err, rc = run("call " .. hostpath)
      assert.equal(2, rc, err)
      assert.matches("which tool? " .. hostpath .. " reads as a URL", err, 1, true)
      -- a tool whose name has a dot, followed by its arguments, stays a tool
      out, err, rc = run("call " .. url .. " a.b x=1")
      assert.equal(1, rc)
      assert.matches("^devtools%-tools: tool_not_found: Tool a%.b not found", err)
    end)

    it("says a host name that does not resolve is one (not a protocol error)", function()
      local out, err, rc = run("list http://nosuch-host.invalid:8080/x")
      assert.equal(1, rc)
      assert.equal("", out)
      assert.matches("^devtools%-tools: connect_failed: navigate: http://nosuch%-host%.invalid:8080/x: the host "
        .. "name nosuch%-host%.invalid was not found %(DNS: net::ERR_NAME_[%u_]+%)\n$", err)
    end)

    it("eval describes DOM elements as a tool's result does", function()
      local out, err, rc = run("eval " .. url .. " document.body")
      assert.equal(0, rc, err)
      assert.equal('"Element(body)"\n', out)
      out, err, rc = run("eval --compact " .. url .. " '[document.body, {t: document.title, h: document.head}, 1]'")
      assert.equal(0, rc, err)
      assert.equal('["Element(body)",{"h":"Element(head)","t":"cli page"},1]\n', out)
      -- values that are no elements are as before
      out, err, rc = run("eval --compact " .. url .. " '({a: undefined, n: [1, 2.5, null]})'")
      assert.equal(0, rc, err)
      assert.equal('{"n":[1,2.5,null]}\n', out)
    end)

    it("eval takes await at the top level, as the DevTools console does", function()
      local out, err, rc = run("eval " .. app.url .. " 'await fetch(\"/api/products\").then(r => r.status)'")
      assert.equal(0, rc, err)
      assert.equal("200\n", out)
      -- statements: the value of the last one
      out, err, rc = run("eval --compact " .. app.url
        .. " 'const r = await fetch(\"/api/products\"); const j = await r.json(); [r.ok, typeof j]'")
      assert.equal(0, rc, err)
      assert.equal('[true,"object"]\n', out)
      -- without await, a promise is awaited as before
      out, err, rc = run("eval " .. app.url .. " 'fetch(\"/api/products\").then(r => r.status)'")
      assert.equal(0, rc, err)
      assert.equal("200\n", out)
      -- a real syntax error is still one, and so is what the awaited promise rejects with
      out, err, rc = run("eval " .. app.url .. " 'await fetch(('")
      assert.equal(1, rc)
      assert.matches("^devtools%-tools: js_error: SyntaxError", err)
      out, err, rc = run("eval " .. app.url .. " 'await Promise.reject(new Error(\"nope\"))'")
      assert.equal(1, rc)
      assert.matches("^devtools%-tools: js_error: Error: nope", err)
    end)

    it("a dt.Error a run script raises shows the script's line, and its schema errors", function()
      local script = inst.dir .. "/raises.lua"
      local f = assert(io.open(script, "w"))
      f:write('local n = 1\npage:call("increment", { by = -n })\n')
      f:close()
      local out, err, rc = run("run " .. shq(script) .. " " .. url)
      assert.equal(1, rc)
      assert.equal("", out)
      assert.equal("devtools-tools: invalid_params: Invalid parameters for tool increment\n"
        .. "  /by: must be >= 1 (got -1)\ndevtools-tools: (raised at " .. script .. ":2)\n", err)
    end)
  end)

  describe("errors with what the library knows", function()
    it("names the value received, the allowed values and the extra property, for every kind of tool", function()
      local out, err, rc = run("call " .. app.url .. " queryDatabaseTable tableName=passwords")
      assert.equal(1, rc)
      assert.equal("", out)
      assert.matches('^devtools%-tools: invalid_params: Invalid parameters for tool queryDatabaseTable\n'
        .. '  /tableName: must be equal to one of the allowed values %(got "passwords"; allowed: %["feature_flags",', err)
      out, err, rc = run("call " .. url .. " hello extra=1")
      assert.equal(1, rc)
      assert.equal("devtools-tools: invalid_params: Invalid parameters for tool hello\n"
        .. "  /: must NOT have additional properties ('extra')\n", err)
      -- a WebMCP tool's arguments are checked here too, and shown so
      out, err, rc = run("call --webmcp " .. server.url("/webmcp.html") .. " add a=x b=1")
      assert.equal(1, rc)
      assert.equal("devtools-tools: invalid_params: Invalid parameters for tool add\n"
        .. '  /a: must be number (got "x")\n', err)
    end)
  end)

  describe("WebMCP", function()
    it("list --json gives each group's kind; --webmcp adds the WebMCP tools", function()
      local page = server.url("/webmcp.html")
      local out, err, rc = run("list --json " .. page)
      assert.equal(0, rc, err)
      local groups = dt.json.decode(out)
      assert.equal(1, #groups)
      assert.equal("devtools", groups[1].kind)
      out, err, rc = run("list --json --webmcp " .. page)
      assert.equal(0, rc, err)
      groups = dt.json.decode(out)
      assert.same({ "devtools", "webmcp" }, { groups[1].kind, groups[2].kind })
      -- (in the order the browser told of them: the form's declarative
      -- tool came first once, under three make tests at once)
      local add
      for _, t in ipairs(groups[2].tools) do
        if t.name == "add" then add = t end
      end
      assert.is_table(add, out)
      assert.is_true(add.annotations.readOnly)
      out, err, rc = run("call --compact --webmcp " .. page .. " add a=2 b=40")
      assert.equal(0, rc, err)
      assert.equal('{"sum":42}\n', out)
    end)

    it("--wait-for a WebMCP tool while WebMCP is off says so when it times out", function()
      -- (each limit covers Chromium's start: 4-6 s ran out in Page.enable under a load of 18, and 10 s once in the navigation at 15)
      -- its name in an inline script that registers through document.modelContext
      local out, err, rc = run("list --wait-for add --timeout 15 " .. server.url("/webmcp.html"))
      assert.equal(1, rc)
      assert.equal("", out)
      assert.matches("^devtools%-tools: timeout: the command did not finish within 15 s %(%-%-timeout%): "
        .. "wait_for_tool: Tool add not found %(.-the page has 1 tool%) before the timeout; it looks like a WebMCP "
        .. "tool %(the page's scripts register it through document%.modelContext%), and WebMCP is off: %-%-webmcp\n$", err)
      -- the sample app registers searchProducts from a script file of its own
      out, err, rc = run("list --wait-for searchProducts --timeout 10 " .. app.url)
      assert.equal(1, rc)
      assert.matches("it looks like a WebMCP tool .* WebMCP is off: %-%-webmcp\n$", err)
      -- a name no script holds, on a page without WebMCP: the names the page has
      out, err, rc = run("list --wait-for nothing --timeout 10 " .. url)
      assert.equal(1, rc)
      assert.matches("wait_for_tool: Tool nothing not found %(nearest: [%a]+; the page has 3 tools%) before the timeout\n$", err)
      -- with WebMCP on, the tool is there
      out, err, rc = run("list --json --webmcp --wait-for add " .. server.url("/webmcp.html"))
      assert.equal(0, rc, err)
    end)
  end)

  describe("a page that is not ready at its load event", function()
    it("the sample app: list shows every group, its support widget's too, without --wait-for", function()
      local out, err, rc = run("list --json --webmcp " .. app.url)
      assert.equal(0, rc, err)
      local names = {}
      for _, g in ipairs(dt.json.decode(out)) do names[#names + 1] = g.name .. ":" .. g.kind end
      assert.same({ "app-debug:devtools", "sales-dashboard:devtools", "shop:devtools", "support-widget:devtools",
        "webmcp:webmcp" }, names, err)
      out, err, rc = run("list " .. app.url)
      assert.equal(0, rc, err)
      assert.matches("\nsupport%-widget %- The embedded support widget", out)
    end)

    it("waits until the tools and the network settle; --no-settle looks at once; --wait-for-selector", function()
      local page = server.url("/settle.html")
      local out, err, rc = run("list --json " .. page)
      assert.equal(0, rc, err)
      local groups = dt.json.decode(out)
      assert.same({ "first", "second" }, { groups[1].name, groups[2] and groups[2].name })
      out, err, rc = run("call --compact " .. page .. " two")       -- the table is filled
      assert.equal(0, rc, err)
      assert.equal("1\n", out)
      out, err, rc = run("list --json --no-settle " .. page)
      assert.equal(0, rc, err)
      assert.equal(1, #dt.json.decode(out))
      -- an element that comes with no request: only --wait-for-selector waits for it
      out, err, rc = run("eval --wait-for-selector '#late' " .. page .. " 'document.querySelector(\"#late\").textContent'")
      assert.equal(0, rc, err)
      assert.equal('"late"\n', out)
      out, err, rc = run("eval --wait-for-selector '#never' --timeout 10 " .. page .. " 1")
      assert.equal(1, rc)
      assert.matches("^devtools%-tools: timeout: .*no element matches the selector #never %(%-%-wait%-for%-selector%)\n$", err)
      out, err, rc = run("eval --wait-for-selector '##' " .. page .. " 1")
      assert.equal(1, rc)
      assert.matches("^devtools%-tools: js_error: SyntaxError: .*'##' is not a valid selector", err)
    end)

    it("waits for a page busy with an answer longer than the quiet time (a loaded machine)", function()
      local out, err, rc = run("list --json " .. server.url("/settle_busy.html"))
      assert.equal(0, rc, err)
      local groups = dt.json.decode(out)
      assert.equal(1, #groups, out)
      assert.equal("child-widget", groups[1].name)
    end)

    it("a page busy past the settling time is waited for, never stopped as a stuck one", function()
      local out, err, rc = run("call --compact " .. server.url("/settle_stuck.html") .. " late")
      assert.equal(0, rc, err)
      assert.equal('"ran"\n', out)
    end)

    it("waits for a frame that is still loading, though it sends nothing for longer than the quiet time", function()
      local out, err, rc = run("list --json " .. server.url("/settle_frame.html"))
      assert.equal(0, rc, err)
      local names = {}
      for _, g in ipairs(dt.json.decode(out)) do names[#names + 1] = g.name end
      table.sort(names)
      assert.same({ "inner", "outer" }, names)
    end)
  end)

  describe("viewport and screenshots", function()
    local function head(path, n)
      local f = assert(io.open(path, "rb"))
      local s = f:read(n)
      f:close()
      return s
    end

    it("a page opened in a headless browser is 1280x800; --viewport WxH sets another", function()
      local out, err, rc = run("eval --compact " .. url .. " '[innerWidth, innerHeight]'")
      assert.equal(0, rc, err)
      assert.equal("[1280,800]\n", out)
      out, err, rc = run("eval --compact --viewport 1024x700 " .. url .. " '[innerWidth, innerHeight]'")
      assert.equal(0, rc, err)
      assert.equal("[1024,700]\n", out)
      out, err, rc = run("eval --viewport 10x10 " .. url .. " 1")
      assert.equal(2, rc)
      assert.matches("--viewport needs WIDTHxHEIGHT", err, 1, true)
    end)

    it("writes the format the file's extension names, and refuses another", function()
      local png = inst.dir .. "/shot.png"
      local _, err, rc = run("screenshot " .. url .. " " .. shq(png))
      assert.equal(0, rc, err)
      local h = head(png, 24)
      assert.equal("\137PNG\r\n\26\n", h:sub(1, 8))
      local function u32(i) local a, b, c, d = h:byte(i, i + 3) return ((a * 256 + b) * 256 + c) * 256 + d end
      assert.same({ 1280, 800 }, { u32(17), u32(21) })
      for _, ext in ipairs({ "jpg", "JPEG" }) do
        local out = inst.dir .. "/shot." .. ext
        _, err, rc = run("screenshot " .. url .. " " .. shq(out))
        assert.equal(0, rc, err)
        assert.equal("\255\216\255", head(out, 3))
      end
      local webp = inst.dir .. "/shot.webp"
      _, err, rc = run("screenshot " .. url .. " " .. shq(webp))
      assert.equal(0, rc, err)
      local w = head(webp, 12)
      assert.equal("RIFF", w:sub(1, 4))
      assert.equal("WEBP", w:sub(9, 12))
      for _, name in ipairs({ "shot.gif", "shot" }) do
        local out
        out, err, rc = run("screenshot " .. url .. " " .. shq(inst.dir .. "/" .. name))
        assert.equal(2, rc, err)
        assert.equal("", out)
        assert.matches("screenshot writes .png, .jpg (.jpeg) or .webp files", err, 1, true)
        assert.is_false(H.exists(inst.dir .. "/" .. name))
      end
    end)
  end)

  describe("list and describe", function()
    it("shows an enum's values when they are few, else a count and the first ones", function()
      local out, err, rc = run("list " .. app.url)
      assert.equal(0, rc, err)
      assert.matches('\n  queryDatabaseTable +tableName: one of 8: "feature_flags", "leads", %.%.%., %[afterId: integer%]', out)
      assert.matches('\n  getSupportTickets +%[status: "open"|"pending"|"closed"|"all"%] ', out)
    end)

    it("fits each line to the terminal's width (COLUMNS, or the terminal's own)", function()
      local out, err, rc = run("list " .. app.url, { env = "COLUMNS=72" })
      assert.equal(0, rc, err)
      local cut = 0
      for _, l in ipairs(lines_of(out)) do
        assert.is_true(#l <= 72, l)
        if l:sub(-3) == "..." then cut = cut + 1 end
      end
      assert.is_true(cut >= 5, out)
      -- on a terminal 70 columns wide (script(1) gives it one)
      local tty = H.sh(("cd / && TMPDIR=%s XDG_STATE_HOME=%s/state script -qec %s /dev/null"):format(
        shq(inst.dir .. "/tmp"), shq(inst.dir), shq("stty cols 70; " .. shq(inst.bin) .. " list -q " .. app.url)))
      local n = 0
      for l in tty:gmatch("[^\r\n]+") do
        n = n + 1
        assert.is_true(#l <= 70, l)
      end
      assert.is_true(n > 10, tty)
      -- not a terminal and no COLUMNS: lines as long as they are
      out, err, rc = run("list " .. app.url, { env = "env -u COLUMNS" })
      assert.equal(0, rc, err)
      local longest = 0
      for _, l in ipairs(lines_of(out)) do longest = math.max(longest, #l) end
      assert.is_true(longest > 150, out)
    end)

    it("in a pipe, prints each line whole: every first sentence uncut, as the docs say", function()
      local out, err, rc = run("list " .. app.url, { env = "env -u COLUMNS" })
      assert.equal(0, rc, err)
      local js
      js, err, rc = run("list --json " .. app.url)
      assert.equal(0, rc, err)
      local first = require("devtools_tools.present.text").first_sentence
      local n, long = 0, 0
      for _, g in ipairs(dt.json.decode(js)) do
        local texts = { type(g.description) == "string" and g.description or nil }
        for _, t in ipairs(g.tools) do texts[#texts + 1] = t.description end
        for _, d in ipairs(texts) do
          local s = first(d, math.huge)
          n = n + 1
          if #s > 100 then long = long + 1 end
          assert.truthy(out:find(s .. "\n", 1, true), s)      -- each ends its line, whole
        end
      end
      assert.is_true(n > 10 and long >= 3, n .. " sentences, " .. long .. " over 100 bytes")
      assert.is_nil(out:find("...\n", 1, true), out)
    end)

    it("call TOOL --help and describe print one tool's description and whole schema", function()
      local out, err, rc = run("call " .. url .. " types --help")
      assert.equal(0, rc, err)
      local l = lines_of(out)
      assert.equal("types  (devtools tool of group cli-tools, frame " .. url .. ")", l[1])
      assert.equal("Returns each argument with its JavaScript type", l[2])
      assert.equal("Arguments:", l[3])
      assert.equal("  n      number, required", l[4])
      assert.matches('\n  mode   enum\n         allowed: "fast", "slow"\n', out, 1, true)
      local schema = out:match("\nInput schema:\n(.*)$")
      assert.same({ "n" }, dt.json.decode(schema).required)
      out, err, rc = run("describe --json " .. url .. " increment")
      assert.equal(0, rc, err)
      local d = dt.json.decode(out)
      assert.equal("increment", d.name)
      assert.equal("devtools", d.kind)
      assert.same({ type = "integer", minimum = 1 }, d.inputSchema.properties.by)
      assert.equal("cli-tools", d.group.name)
      out, err, rc = run("describe " .. url .. " nothere")
      assert.equal(1, rc)
      assert.matches("^devtools%-tools: tool_not_found: Tool nothere not found", err)
      out, err, rc = run("call --help")                      -- no tool: the command's help
      assert.equal(0, rc, err)
      assert.matches("^Usage: devtools%-tools call", out)
    end)
  end)

  describe("the debug log", function()
    it("--debug writes a page's C1 controls and bidi overrides as escapes", function()
      local out, err, rc = run("list --debug " .. server.url("/settle.html"))
      assert.equal(0, rc, err)
      assert.truthy(err:find("evil \\u009b2J and \\u202e rtl", 1, true), err:sub(1, 2000))
      assert.is_nil(err:find("\194\155", 1, true))
      assert.is_nil(err:find("\226\128\174", 1, true))
      assert.is_nil(err:find("\27", 1, true))
      assert.matches("^first", out)
    end)
  end)

  describe("tabs of the background browser", function()
    -- the pages of the background browser, and its processes' resident memory
    local function pages()
      local out, err, rc = run("tabs --json")
      assert.equal(0, rc, err)
      return dt.json.decode(out)
    end
    local function chromium_rss_mib(profile)
      local kib = 0
      for _, pid in ipairs(H.live_with_arg(profile)) do
        local f = io.open("/proc/" .. pid .. "/status")
        if f then
          kib = kib + (tonumber(f:read("*a"):match("VmRSS:%s*(%d+)")) or 0)
          f:close()
        end
      end
      return kib / 1024
    end

    it("a URL uses the tab that shows it: ten calls leave one page", function()
      local out, err, rc = run("tabs")
      assert.equal(2, rc)
      assert.matches("tabs needs a running browser", err, 1, true)
      out, err, rc = run("browser start")
      assert.equal(0, rc, err)
      finally(function() run("browser stop") end)
      local st = dt.json.decode(cli.slurp(inst.dir .. "/state/devtools-tools/browser.json"))
      out, err, rc = run("call --compact " .. url .. " increment")
      assert.equal(0, rc, err)
      assert.equal('{"count":1}\n', out)
      local before = chromium_rss_mib(st.profile)
      for i = 2, 10 do
        out, err, rc = run("call --compact " .. url .. " increment")
        assert.equal(0, rc, err)
        assert.equal(('{"count":%d}\n'):format(i), out)      -- the same page each time
      end
      local after = chromium_rss_mib(st.profile)
      local p = pages()
      assert.equal(1, #p)
      assert.equal(url, p[1].url)
      print(("\n  Chromium's resident memory: %.0f MiB after 1 call, %.0f MiB after 10"):format(before, after))
      assert.is_true(after < before + 150, before .. " -> " .. after)
      -- the same URL written otherwise is the same page
      out, err, rc = run("call --compact " .. url:gsub("^http://127%.0%.0%.1", "HTTP://127.0.0.1")
        .. " increment")
      assert.equal(0, rc, err)
      assert.equal('{"count":11}\n', out)
      -- --new-tab opens one all the same
      out, err, rc = run("call --compact --new-tab " .. url .. " increment")
      assert.equal(0, rc, err)
      assert.equal('{"count":1}\n', out)
      p = pages()
      assert.equal(2, #p)
      -- tabs: the most recently used first
      out, err, rc = run("tabs")
      assert.equal(0, rc, err)
      local l = lines_of(out)
      assert.matches("^ID +URL +TITLE$", l[1])
      assert.equal(3, #l)
      assert.matches("^" .. p[1].id:sub(1, 8) .. " +" .. url:gsub("%p", "%%%0") .. " +cli page$", l[2])
      -- several match: an error, then by its ID
      out, err, rc = run("tabs close cli.html")
      assert.equal(1, rc)
      assert.matches("^devtools%-tools: bad_argument: 2 open pages match \"cli.html\": ", err)
      out, err, rc = run("tabs close " .. p[1].id:sub(1, 8))
      assert.equal(0, rc, err)
      assert.equal("", out)
      assert.equal("devtools-tools: closed " .. p[1].id:sub(1, 8) .. " " .. url .. "\n", err)
      p = pages()
      assert.equal(1, #p)
      out, err, rc = run("call --compact " .. url .. " increment")
      assert.equal(0, rc, err)
      assert.equal('{"count":12}\n', out)
      out, err, rc = run("browser stop")
      assert.equal(0, rc, err)
    end)

    it("--tab TEXT takes the most recently used match and says when several match", function()
      local out, err, rc = run("browser start")
      assert.equal(0, rc, err)
      finally(function() run("browser stop") end)
      -- the README's sequence, after an earlier call
      out, err, rc = run("call --compact " .. app.url .. " getFeatureFlags")
      assert.equal(0, rc, err)
      out, err, rc = run("call --compact " .. app.url .. " addToCart productId=3 qty=2")
      assert.equal(0, rc, err)
      out, err, rc = run("call --tab 127.0.0.1:" .. app.port .. " getGlobalState path=cart.badgeCount")
      assert.equal(0, rc, err)
      assert.equal("1\n", out)
      assert.equal("", err)                                  -- one page matched
      -- two pages match: the one used last, and a note on stderr
      out, err, rc = run("eval --new-tab " .. app.url .. " 'window.mark = \"second\"'")
      assert.equal(0, rc, err)
      out, err, rc = run("eval --tab 127.0.0.1:" .. app.port .. " 'window.mark'")
      assert.equal(0, rc, err)
      assert.equal('"second"\n', out)
      assert.matches("^devtools%-tools: %-%-tab 127%.0%.0%.1:%d+: 2 open pages match; using the most recently used, %x+ ", err)
      out, err, rc = run("eval --tab 127.0.0.1:" .. app.port .. " -q 'window.mark'")
      assert.equal(0, rc, err)
      assert.equal('"second"\n', out)
      assert.equal("", err)                                  -- (--quiet)
      -- the first page, used again by its ID, is the most recent one then
      local p = pages()
      local first = p[#p].id
      out, err, rc = run("eval -q --tab " .. first:sub(1, 8) .. " 'window.mark || \"first\"'")
      assert.equal(0, rc, err)
      assert.equal('"first"\n', out)
      out, err, rc = run("eval 'window.mark || \"first\"'")   -- no URL, no --tab: the page used last
      assert.equal(0, rc, err)
      assert.equal('"first"\n', out)
      out, err, rc = run("browser stop")
      assert.equal(0, rc, err)
    end)
  end)

  describe("the background browser's start", function()
    it("20 rounds of 6 starts at once after a killed start: one browser each time, none left after stop", function()
      local fake = inst.dir .. "/silent-chromium"
      local f = assert(io.open(fake, "w"))
      f:write("#!/bin/sh\nsleep 60\n")
      f:close()
      os.execute("chmod +x " .. shq(fake))
      local state_file = inst.dir .. "/state/devtools-tools/browser.json"
      local function record()
        local ok, st = pcall(dt.json.decode, cli.slurp(state_file))
        return ok and type(st) == "table" and st or nil
      end
      -- The Chromiums of this tmp/: browser processes (not its helpers,
      -- --type=...), counted by profile: one launch, one profile. (Counting
      -- processes counted a helper just forked by the browser, before its
      -- exec, with the browser's command line: 2 in round 13 under three
      -- make tests at once. A helper's title is rewritten, spaces for NULs.)
      local function browsers()
        local n, seen = 0, {}
        for _, pid in ipairs(inst:left_behind()) do
          local cf = io.open("/proc/" .. pid .. "/cmdline")
          local cmd = cf and cf:read("*a") or ""
          if cf then cf:close() end
          local profile = cmd:match("%-%-user%-data%-dir=([^%z ]+)")
          if profile and cmd:find("--remote-debugging-pipe", 1, true) and not cmd:find("--type=", 1, true)
              and not cmd:find("sleep", 1, true) and not cmd:find("silent-chromium", 1, true)
              and not cmd:find("\0--serve\0", 1, true)                -- (its holder)
              and not seen[profile] then
            seen[profile] = true
            n = n + 1
          end
        end
        return n
      end
      for round = 1, 20 do
        -- a start killed (SIGKILL) once its Chromium runs: a stale record
        local starter = assert(core.process.spawn({ "/bin/sh", "-c", ("cd / && TMPDIR=%s XDG_STATE_HOME=%s/state exec %s"
          .. " browser start --chromium %s --timeout 60"):format(shq(inst.dir .. "/tmp"), shq(inst.dir), shq(inst.bin),
          shq(fake)) }))
        local st
        assert.is_true(H.wait_for(function()
          st = record()
          return st ~= nil and st.starting and st.pid ~= nil and #H.live_with_arg(st.profile) > 0
        end, 20), "round " .. round)
        os.execute("kill -KILL " .. starter:pid())
        starter:wait(core.now() + 10)
        starter:close()
        -- six starts at once
        H.sh(("cd / && for i in 1 2 3 4 5 6; do TMPDIR=%s XDG_STATE_HOME=%s/state %s browser start"
          .. " >%s/start$i 2>&1 & done; wait"):format(shq(inst.dir .. "/tmp"), shq(inst.dir), shq(inst.bin), inst.dir))
        local first
        for i = 1, 6 do
          local text = cli.slurp(inst.dir .. "/start" .. i)
          local ep = text:match("^(unix:/%S+/browser%.sock)\n$")
          assert.truthy(ep, "round " .. round .. ", start " .. i .. ": " .. text)
          first = first or ep
          assert.equal(first, ep, "round " .. round)
        end
        assert.equal(1, browsers(), "round " .. round)
        assert.same({}, H.live_with_arg(st.profile))        -- the killed start's are gone
        local _, err, rc = run("browser stop")
        assert.equal(0, rc, err)
        assert.is_true(H.wait_for(function() return #inst:left_behind() == 0 end, H.LONG), "round " .. round)
      end
    end)

    it("records its profile by an absolute path: a relative TMPDIR is taken from where it started", function()
      local a = inst.dir .. "/a"
      assert(os.execute("mkdir -p " .. shq(a .. "/rel")))
      local _, err, rc = run("browser start", { cwd = a, tmpdir = "rel" })
      assert.equal(0, rc, err)
      local st = dt.json.decode(cli.slurp(inst.dir .. "/state/devtools-tools/browser.json"))
      assert.equal(a .. "/rel/", st.profile:sub(1, #a + 5))
      assert.is_true(H.exists(st.profile))
      _, err, rc = run("browser stop", { cwd = "/tmp" })     -- elsewhere
      assert.equal(0, rc, err)
      assert.is_true(H.wait_for(function() return #H.live_with_arg(st.profile) == 0 end, H.LONG))
      assert.is_false(H.exists(st.profile))
      assert.equal("", (H.sh("ls -A " .. shq(a .. "/rel"))))
    end)
  end)
end)
