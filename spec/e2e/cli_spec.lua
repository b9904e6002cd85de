-- The command line, as installed by `make install DESTDIR=...`: every
-- subcommand against real headless Chromium and a local page, exit codes
-- with their stderr, the background browser shared by several commands, and
-- --connect to a Chromium the spec starts itself. Each command runs with
-- TMPDIR and XDG_STATE_HOME in a directory of its own, so the processes it
-- leaves (none, it must be) are found by that path.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local H = require "helper"

local cli = require "support.cli_install"
local shq = cli.shq

describe("devtools-tools", function()
  local inst, dir, bin, server, url

  -- run(args, opts?) -> stdout, stderr, exit status (support/cli_install:
  -- a command on a page runs in a tab of its own of the file's shared
  -- browser unless it names a browser or opts.launch is set)
  local function run(args, opts) return inst:run(args, opts) end

  local function left_behind() return inst:left_behind() end

  setup(function()
    inst = cli.install("dt-cli-"):share()
    dir, bin = inst.dir, inst.bin
    server = H.start_server()
    url = server.url("/cli.html")
  end)

  teardown(function()
    run("browser stop")
    server.stop()
    inst:remove()
  end)

  after_each(function()
    -- Chromium's helper processes may still be on their way out when the
    -- command has exited: wait (a bounded while) for them to be gone.
    H.wait_for(function() return #left_behind() == 0 end, H.LONG)
    assert.same({}, left_behind())
  end)

  describe("help and usage", function()
    it("answers --help on every subcommand, with status 0", function()
      for _, cmd in ipairs({ "list", "call", "describe", "eval", "screenshot", "run", "tabs", "browser" }) do
        local out, err, rc = run(cmd .. " --help")
        assert.equal(0, rc, err)
        assert.matches("^Usage: devtools%-tools " .. cmd, out)
        assert.matches("--connect ENDPOINT", out, 1, true)
        assert.equal("", err)
      end
      local out, _, rc = run("--help")
      assert.equal(0, rc)
      assert.matches("Commands:", out, 1, true)
      out, _, rc = run("help call")
      assert.equal(0, rc)
      assert.matches("key:=json", out, 1, true)
      out, _, rc = run("--help list")                -- as `help list`
      assert.equal(0, rc)
      assert.matches("^Usage: devtools%-tools list", out)
      -- --version may come after the command too, as every option may:
      -- it answers instead of the command (no browser starts)
      for _, args in ipairs({ "--version", "list --version " .. url, "call -q " .. url .. " types --version" }) do
        local err
        out, err, rc = run(args)
        assert.equal(0, rc, args .. ": " .. err)
        assert.matches("^devtools%-tools %(devtools_tools [%d.]+, Lua 5%.4%)\n$", out)
        assert.equal("", err)
      end
      -- no command at all is a usage error: the help goes to stderr
      local err
      out, err, rc = run("")
      assert.equal(2, rc)
      assert.equal("", out)
      assert.matches("Commands:", err, 1, true)
    end)

    it("exits 2 on a usage error, saying what is wrong, before starting any browser", function()
      local cases = {
        { "frobnicate", "unknown command frobnicate" },
        { "list --frob " .. url, "unknown option --frob" },
        { "help nosuch", "no help on nosuch" },
        { "call " .. url, "which tool?" },
        { "call " .. url .. " types 'n:=[1'", "not JSON after n:=" },
        { "call " .. url .. " types justaword", "expected JSON, key=value or key:=json" },
        { "call " .. url .. " types '[1]'", "expected JSON, key=value or key:=json" },
        { "eval", "eval takes [URL] EXPR" },
        { "eval " .. url, "eval takes [URL] EXPR" },         -- a URL alone is no expression
        { "list --json --timeout x " .. url, "--timeout needs a positive number" },
        { "eval --compact --tab", "--tab needs a value" },
        { "--tab= list", "--tab needs a value, not an empty one" },
        { "list --chromium '' " .. url, "--chromium needs a value, not an empty one" },
        { "--connect= list", "--connect needs a value, not an empty one" },
        -- an endpoint that does not parse (a malformed option value, as --timeout x)
        { "list --connect foo " .. url, "--connect foo: expected http(s)://host:port or ws(s)://host:port/" },
        { "call --connect http://127.0.0.1:70000 " .. url .. " increment",
          "--connect http://127.0.0.1:70000: port must be between 1 and 65535" },
        { "eval --connect 127.0.0.1:9222 " .. url .. " 1", "--connect 127.0.0.1:9222: expected http(s)://" },
        { "screenshot --element= " .. url .. " /tmp/x.png", "--element needs a value, not an empty one" },
        { "browser restart", "unknown browser command restart" },
        -- a mistyped command: the one it most likely meant
        { "lst " .. url, "unknown command lst; did you mean list?" },
        { "-q dscribe " .. url .. " types", "unknown command dscribe; did you mean describe?" },
        { "scr " .. url .. " /tmp/x.png", "unknown command scr; did you mean screenshot?" },
        { "browser strat", "unknown browser command strat; did you mean start?" },
        { "list", "a URL is needed" },
        { "--timeout 5", "options but no command" },
        { "-q --timeout 7 frobnicate", "unknown command frobnicate" },
        { "call " .. url .. " types ':=1'", "key:=json needs a key" },
        { "help --bogus", "unknown option --bogus" },
        { "help list call", "help takes one command name" },
        -- arguments are shown by their start, with the decoder's reason
        { "call " .. url .. " types " .. shq(("{\"a\":"):rep(3000) .. "1" .. ("}"):rep(3000)),
          "the JSON arguments are not JSON (invalid JSON: nesting deeper than" },
      }
      for _, c in ipairs(cases) do
        local out, err, rc = run(c[1], { launch = true })       -- (as typed: no --connect added)
        assert.equal(2, rc, c[1] .. ": " .. err)
        assert.equal("", out)
        assert.matches("^devtools%-tools: ", err)
        assert.matches(c[2], err, 1, true)
        assert.matches("--help`", err, 1, true)
        assert.is_true(#err < 400, c[1] .. ": " .. #err .. " bytes")
      end
      -- nothing near: no guess
      local _, err = run("frobnicate")
      assert.equal("devtools-tools: unknown command frobnicate\nTry `devtools-tools --help`.\n", err)
    end)
  end)

  describe("list", function()
    it("prints groups, frames and tools with an argument summary, aligned", function()
      local out, err, rc = run("list " .. url)
      assert.equal(0, rc, err)
      assert.equal("", err)       -- stderr is not a terminal: no progress
      local lines = {}
      for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
      assert.equal("cli-tools - Tools of the command line spec", lines[1])
      assert.equal("  frame " .. url, lines[2])
      assert.matches("^  types +n: number, %[i: integer%], %[list: integer%[%]%], "
        .. '%[maybe: null|string%], %[mode: "fast"|"slow"%], %[obj: object%], %[on: boolean%], '
        .. "%[ref: integer%], %[s: string%]  Returns each argument with its JavaScript type$", lines[3])
      assert.matches("^  increment +%[by: integer%] +Adds to a counter kept in the page$", lines[4])
      assert.matches("^  hello +Says hello%.$", lines[5])     -- the first sentence
      assert.is_nil(lines[6])
      -- the descriptions start in one column, but for a summary too long to
      -- align on (types': it is followed by two spaces)
      assert.equal(lines[4]:find("Adds", 1, true), lines[5]:find("Says", 1, true))
      assert.equal(lines[4]:find("%[by"), lines[3]:find("n: number"))
    end)

    it("aligns its columns on names and arguments that are not ASCII (by the columns a terminal gives them)", function()
      local out, err, rc = run("list " .. server.url("/unicode.html"))
      assert.equal(0, rc, err)
      -- (日本語 and 数: two columns a character)
      assert.equal(table.concat({
        "unicode-tools - Names that are not plain ASCII",
        "  frame " .. server.url("/unicode.html"),
        "  größe       [wört: string]  Umlauts in the name and the argument",
        "  日本語      [数: integer]   Wide characters",
        "  with space  [x: integer]    A space in the name",
        "  with        {...}           The first word of the one above",
        "  plain       [x: integer]    ASCII only",
      }, "\n") .. "\n", out)
    end)

    it("summarizes a property typed through anyOf or oneOf by its branches, a const by its value", function()
      local out, err, rc = run("list " .. server.url("/typing.html"))
      assert.equal(0, rc, err)
      assert.matches('\n  echo  %[flag: boolean|null%], %[level: 1|2|3%], %[limit: integer|null%], %[on: true%], '
        .. '%[size: number|"auto"%]  Returns', out)
    end)

    it("--json prints the groups as JSON that parses back", function()
      local out, err, rc = run("list --json " .. url)
      assert.equal(0, rc, err)
      local groups = dt.json.decode(out)
      assert.equal(1, #groups)
      local g = groups[1]
      assert.equal("cli-tools", g.name)
      assert.equal("Tools of the command line spec", g.description)
      assert.same({ url = url }, g.frame)
      assert.equal(3, #g.tools)
      assert.equal("types", g.tools[1].name)
      assert.equal("Returns each argument with its JavaScript type", g.tools[1].description)
      assert.same({ "n" }, g.tools[1].inputSchema.required)
      assert.same({ type = "integer", minimum = 1 }, g.tools[2].inputSchema.properties.by)
      assert.equal(false, g.tools[2].inputSchema.additionalProperties)
    end)

    it("names the groups the page got wrong on stderr (not with --quiet)", function()
      local page = shq(server.url("/cases.html?case=invalid"))
      local out, err, rc = run("list " .. page)
      assert.equal(0, rc, err)
      assert.matches("^good\n", out)
      assert.matches('devtools-tools: warning: Invalid toolGroup "bad-desc": description must be a string\n', err, 1, true)
      assert.matches('devtools-tools: warning: Invalid tool "x" in group "bad-exec": execute must be a function; group skipped\n', err, 1, true)
      out, err, rc = run("list -q " .. page)
      assert.equal(0, rc, err)
      assert.equal("", err)
    end)

    it("--wait-for TOOL waits until the page offers it (it may register after load)", function()
      local late = server.url("/late.html")
      local out, err, rc = run("list --json --wait-for lateTool " .. late)
      assert.equal(0, rc, err)
      local groups = dt.json.decode(out)
      assert.equal(1, #groups)
      assert.equal("lateTool", groups[1].tools[1].name)
      out, err, rc = run("call --compact --wait-for lateTool " .. late .. " lateTool")
      assert.equal(0, rc, err)
      assert.equal('"late"\n', out)
      -- the limit covers Chromium's start too: 4 s ran out before lateTool came under CI's load, 9 s under a load of 25
      out, err, rc = run("list --wait-for nope --timeout 15 " .. late)
      assert.equal(1, rc)
      assert.matches("^devtools%-tools: timeout: the command did not finish within 15 s %(%-%-timeout%): "
        .. "wait_for_tool: Tool nope not found %(nearest: lateTool; the page has 1 tool%)", err)
      assert.equal("", out)
    end)

    it("--json gives [] for a page without tools", function()
      local out, err, rc = run("list --json about:blank")
      assert.equal(0, rc, err)
      assert.equal("[]\n", out)
      out, err, rc = run("list --json -- about:blank")     -- after --, the URL is still the URL
      assert.equal(0, rc, err)
      assert.equal("[]\n", out)
    end)
  end)

  describe("call", function()
    it("a number too large for JSON is a usage error (status 2), once the schema says number", function()
      local out, err, rc = run("call " .. url .. " types n=1e999")
      assert.equal(2, rc, err)
      assert.equal("", out)
      assert.matches("^devtools%-tools: n=1e999: too large for a JSON number", err)
    end)

    it("types key=value by the schema and takes key:=json raw", function()
      local out, err, rc = run("call " .. url .. " types n=1.5 i=2 on=true s=3 maybe=null mode=fast ref=9"
        .. " untyped=4 'list:=[1,2]' 'obj:={\"a\":null}'")
      assert.equal(0, rc, err)
      local r = dt.json.decode(out)
      assert.same({ value = 1.5, type = "number" }, r.n)
      assert.same({ value = 2, type = "integer" }, r.i)
      assert.same({ value = true, type = "boolean" }, r.on)
      assert.same({ value = "3", type = "string" }, r.s)          -- the schema says string
      assert.same({ value = dt.null, type = "null" }, r.maybe)
      assert.same({ value = "fast", type = "string" }, r.mode)
      assert.same({ value = "4", type = "string" }, r.untyped)    -- not in the schema
      assert.same({ value = 9, type = "integer" }, r.ref)          -- through a local $ref
      assert.same({ value = { 1, 2 }, type = "array" }, r.list)
      assert.same({ value = { a = dt.null }, type = "object" }, r.obj)
      -- indented, keys sorted
      assert.matches('^{\n  "i": {\n    "type": "integer",\n    "value": 2\n  },\n', out)
    end)

    it("types key=value by anyOf, oneOf, enum and const too (a nullable number, a choice)", function()
      local page = server.url("/typing.html")
      local out, err, rc = run("call --compact " .. page .. " echo limit=5 size=2.5 level=2 on=true flag=false")
      assert.equal(0, rc, err)
      assert.equal('{"flag":[false,"boolean"],"level":[2,"number"],"limit":[5,"number"],"on":[true,"boolean"],'
        .. '"size":[2.5,"number"]}\n', out)
      out, err, rc = run("call --compact " .. page .. " echo limit=null size=auto flag=null")
      assert.equal(0, rc, err)
      assert.equal('{"flag":[null,"null"],"limit":[null,"null"],"size":["auto","string"]}\n', out)
    end)

    it("takes options before the command as after it", function()
      local out, err, rc = run("--compact -q --timeout 20 call " .. url .. " types n=2")
      assert.equal(0, rc, err)
      assert.equal('{"n":{"type":"integer","value":2}}\n', out)
      out, err, rc = run("-q help call")
      assert.equal(0, rc, err)
      assert.matches("^Usage: devtools%-tools call", out)
    end)

    it("takes a JSON object, and prints one line with --compact", function()
      local out, err, rc = run("call --compact " .. url .. [[ types '{"n": 7, "s": "x"}' on=false]])
      assert.equal(0, rc, err)
      assert.equal('{"n":{"type":"integer","value":7},"on":{"type":"boolean","value":false},'
        .. '"s":{"type":"string","value":"x"}}\n', out)
      -- a JSON object whose text holds = or := is still the JSON object
      out, err, rc = run("call --compact " .. url .. [[ types '{"n": 1, "s": "a=b", "t": "c:=d"}']])
      assert.equal(0, rc, err)
      assert.matches('"s":{"type":"string","value":"a=b"}', out, 1, true)
      assert.matches('"t":{"type":"string","value":"c:=d"}', out, 1, true)
    end)

    it("a key=value of -0 is -0, under Lua 5.4 as under LuaJIT", function()
      local out, err, rc = run("call --compact " .. url .. " types n=-0 i=-0")
      assert.equal(0, rc, err)
      assert.equal('{"i":{"type":"-0","value":0},"n":{"type":"-0","value":0}}\n', out)
    end)

    it("a key=value that does not fit the schema stays a string, and the schema says so", function()
      local out, err, rc = run("call " .. url .. " types n=abc on=maybe i=0x10")
      assert.equal(1, rc)
      assert.equal("", out)
      -- each path with the value received (the error's details, not its message)
      assert.equal("devtools-tools: invalid_params: Invalid parameters for tool types\n"
        .. '  /i: must be integer (got "0x10")\n  /n: must be number (got "abc")\n'
        .. '  /on: must be boolean (got "maybe")\n', err)
    end)

    it("exits 1 with the error's code on stderr", function()
      local cases = {
        { "call " .. url .. " nothere", "devtools-tools: tool_not_found: Tool nothere not found (nearest: types; the page has 3 tools)\n" },
        { "call " .. url .. " increment by=0",
          "devtools-tools: invalid_params: Invalid parameters for tool increment\n  /by: must be >= 1 (got 0)\n" },
        { "call " .. url .. " increment extra=1",
          "devtools-tools: invalid_params: Invalid parameters for tool increment\n"
          .. "  /: must NOT have additional properties ('extra')\n" },
        { "eval " .. url .. " 'null.x'", "^devtools%-tools: js_error: TypeError: Cannot read properties of null" },
        { "call " .. shq(server.url("/tools.html")) .. " fail kind=reject", "^devtools%-tools: tool_error: .*rejected" },
        -- the deadline covers the whole command, launch included
        { "call --timeout 3 " .. shq(server.url("/tools.html")) .. " never", "^devtools%-tools: timeout: " },
        { "call --timeout 0.05 " .. shq(server.url("/tools.html")) .. " never",
          "^devtools%-tools: timeout: the command did not finish within 0.05 s %(%-%-timeout%)" },
        { "list --chromium /nonexistent/chromium " .. url, "^devtools%-tools: launch_failed: Chromium not found" },
        { "browser start --chromium /nonexistent/chromium",
          "^devtools%-tools: launch_failed: no Chromium found: tried /nonexistent/chromium %(" },
        { "list --connect http://127.0.0.1:1 " .. url, "^devtools%-tools: connect_failed: " },
        -- (the library's allow_remote is no option of the command line's)
        { "list --connect http://10.1.2.3:9222 " .. url, "^devtools%-tools: connect_failed: connect: refusing"
          .. " non%-loopback host 10%.1%.2%.3 %(the DevTools protocol gives full control of the browser; the"
          .. " command line connects to loopback hosts only: 127%.0%.0%.1, ::1, localhost%)\n$" },
      }
      for _, c in ipairs(cases) do
        local out, err, rc = run(c[1])
        assert.equal(1, rc, c[1] .. ": " .. err)
        assert.equal("", out)
        if c[2]:sub(1, 1) == "^" then assert.matches(c[2], err) else assert.equal(c[2], err) end
      end
    end)
  end)

  describe("progress", function()
    -- script(1) gives the command a terminal: progress goes there, on one
    -- line redrawn in place, and is wiped before the result
    local function on_tty(args, env)
      local out, rc = H.sh(("cd / && %s TMPDIR=%s XDG_STATE_HOME=%s/state script -qec %s /dev/null"):format(
        env or "", shq(dir .. "/tmp"), shq(dir), shq(shq(bin) .. " " .. args)))
      return out, rc
    end

    it("is shown on a terminal, plain with NO_COLOR, not at all with --quiet", function()
      local out, rc = on_tty("call " .. url .. " hello")
      assert.equal(0, rc, out)
      assert.matches("\27%[2mlaunching Chromium%.%.%.\27%[0m", out)
      assert.matches("\27%[2mcalling hello%.%.%.\27%[0m\r\27%[K\"hello\"\r\n$", out)
      out, rc = on_tty("call " .. url .. " hello", "NO_COLOR=1")
      assert.equal(0, rc, out)
      assert.equal("launching Chromium...\r\nopening " .. url .. "...\r\nwaiting for the page to settle...\r\n"
        .. "discovering tools...\r\ncalling hello...\r\n\"hello\"\r\n", out)
      out, rc = on_tty("call --quiet " .. url .. " hello")
      assert.equal(0, rc, out)
      assert.equal('"hello"\r\n', out)
      out, rc = on_tty("call -q " .. url .. " nothere")
      assert.equal(1, rc, out)
      assert.equal("\27[31mdevtools-tools: tool_not_found: Tool nothere not found (nearest: types; the page has 3 tools)\27[0m\r\n", out)
    end)
  end)

  describe("Ctrl-C", function()
    it("closes the browser the command launched and exits 130", function()
      local proc = assert(core.process.spawn({ "/usr/bin/env", "TMPDIR=" .. dir .. "/tmp",
        "XDG_STATE_HOME=" .. dir .. "/state", "lua5.4", bin, "call", "--timeout", "60",
        server.url("/tools.html"), "never" }))
      -- the call is under way once its browser has a renderer for the page
      assert.is_true(H.wait_for(function()
        for _, pid in ipairs(left_behind()) do
          local f = io.open("/proc/" .. pid .. "/cmdline")
          local cmd = f and f:read("*a") or ""
          if f then f:close() end
          if cmd:find("--type=renderer", 1, true) then return true end
        end
      end, 30))
      os.execute("kill -INT " .. proc:pid())
      local how, code = proc:wait(core.now() + 30)
      local err = proc:stderr()
      proc:close(0)
      assert.equal("exit", how, err)
      assert.equal(130, code, err)
      assert.equal("devtools-tools: interrupted\n", err)
    end)

    it("in a run script waiting on the page, is an interrupt too: 130, not a script error", function()
      local script, ready = dir .. "/waits.lua", dir .. "/ready"
      local f = assert(io.open(script, "w"))
      f:write(("io.open(%q, 'w'):close()\npage:evaluate('new Promise(() => {})', { timeout = 60 })\n")
        :format(ready))
      f:close()
      local proc = assert(core.process.spawn({ "/usr/bin/env", "TMPDIR=" .. dir .. "/tmp",
        "XDG_STATE_HOME=" .. dir .. "/state", "lua5.4", bin, "run", script, url }))
      assert.is_true(H.wait_for(function() return H.exists(ready) end, 30), proc:stderr())
      os.execute("kill -INT " .. proc:pid())
      local how, code = proc:wait(core.now() + 30)
      local err = proc:stderr()
      proc:close(0)
      os.remove(ready)
      assert.equal("exit", how, err)
      assert.equal(130, code, err)
      assert.equal("devtools-tools: interrupted\n", err)
    end)
  end)

  describe("screenshot", function()
    -- width and height from a PNG's IHDR chunk
    local function png_size(path)
      local f = assert(io.open(path, "rb"))
      local head = f:read(24)
      f:close()
      assert.equal("\137PNG\r\n\26\n", head:sub(1, 8))
      local function u32(i) local a, b, c, d = head:byte(i, i + 3) return ((a * 256 + b) * 256 + c) * 256 + d end
      return u32(17), u32(21)
    end

    it("writes a PNG of the viewport, of the whole page, of one element", function()
      local out = dir .. "/shot.png"
      local _, err, rc = run("screenshot " .. url .. " " .. shq(out))
      assert.equal(0, rc, err)
      local w, h = png_size(out)
      local vw, vh = run("eval --compact " .. url .. " '[innerWidth, innerHeight]'")
      local size = dt.json.decode(vw)
      assert.same({ size[1], size[2] }, { w, h }, vh)
      _, err, rc = run("screenshot --element html " .. url .. " " .. shq(out))
      assert.equal(0, rc, err)
      local bw, bh = png_size(out)
      local bsize = dt.json.decode((run("eval --compact " .. url
        .. " '(r => [Math.ceil(r.width), Math.ceil(r.height)])(document.documentElement.getBoundingClientRect())'")))
      assert.same(bsize, { bw, bh })
      assert.are_not.equal(h, bh)                    -- the element, not the viewport
      local _, err2, rc2 = run("screenshot --full-page --element body " .. url .. " x.png")
      assert.equal(2, rc2)
      assert.matches("exclude each other", err2, 1, true)
    end)
  end)

  describe("eval and run", function()
    it("eval prints the value as JSON", function()
      local out, err, rc = run("eval " .. url .. " '({title: document.title, n: [1, 2.5, null]})'")
      assert.equal(0, rc, err)
      assert.same({ title = "cli page", n = { 1, 2.5, dt.null } }, dt.json.decode(out))
      out, err, rc = run("eval --compact " .. url .. " 'Promise.resolve(\"later\")'")
      assert.equal(0, rc, err)
      assert.equal('"later"\n', out)
    end)

    it("works without HOME or XDG_STATE_HOME (cron, env -i): no background browser then", function()
      local env = "env -u HOME -u XDG_STATE_HOME"
      local out, err, rc = run("eval --compact " .. url .. " '1 + 1'", { env = env })
      assert.equal(0, rc, err)
      assert.equal("2\n", out)
      out, err, rc = run("browser status", { env = env })
      assert.equal(3, rc)
      assert.equal("not running: no background browser\n", out)
      assert.equal("", err)
      out, err, rc = run("browser start", { env = env })
      assert.equal(1, rc)
      assert.matches("neither XDG_STATE_HOME nor HOME is set", err, 1, true)
    end)

    it("run gives the script dt, browser, page and its arguments: the page's URL, then its own", function()
      local script = dir .. "/script.lua"
      local f = assert(io.open(script, "w"))
      local m = assert(io.open(dir .. "/helper_mod.lua", "w"))
      m:write('return { twice = function(x) return 2 * x end }\n')
      m:close()
      f:write([[
local r = page:call("increment", { by = require("helper_mod").twice(tonumber(arg[2])) })
io.write(arg[0]:match("[^/]*$"), " ", #arg, " ", tostring(arg[1] == page.url), " ", r.count, " ",
  tostring(dt.is_error), " ", browser:version().product:match("^%a+"), " ", tostring(select("#", ...)), " ",
  table.concat({ ... }, ",", 2), "\n")
]])
      f:close()
      -- as `lua script.lua URL 5 extra` would have them: the same after URL or after --
      for _, args in ipairs({ " -- 5 extra", " 5 extra", " 5 -- extra" }) do
        local out, err, rc = run("run " .. shq(script) .. " " .. url .. args)
        assert.equal(0, rc, err)
        assert.matches("^script.lua 3 true %d+ function: 0?x?%x+ %a+ 3 5,extra\n$", out)
      end
      -- no URL: the page chosen (a blank one here) gives its own
      local where = dir .. "/where.lua"
      f = assert(io.open(where, "w"))
      f:write('io.write(arg[1], " ", #arg, "\\n")\n')
      f:close()
      local out, err, rc = run("run " .. shq(where))
      assert.equal(0, rc, err)
      assert.equal("about:blank 1\n", out)
    end)

    it("run exits 1 when the script raises, with the code or the script's traceback", function()
      local script = dir .. "/bad.lua"
      local f = assert(io.open(script, "w"))
      f:write('if arg[2] == "dt" then page:call("increment", { by = -1 }) end\nerror("own failure")\n')
      f:close()
      local out, err, rc = run("run " .. shq(script) .. " " .. url .. " -- dt")
      assert.equal(1, rc)
      assert.equal("", out)
      assert.matches("^devtools%-tools: invalid_params: ", err)
      out, err, rc = run("run " .. shq(script) .. " " .. url)
      assert.equal(1, rc)
      assert.matches("^devtools%-tools: error in script: .*bad.lua:2: own failure\nstack traceback", err)
    end)

    it("a script that calls os.exit still ends the browser it ran in", function()
      local script = dir .. "/exit.lua"
      local f = assert(io.open(script, "w"))
      f:write('io.write(page:evaluate("1 + 1"), "\\n") os.exit(3)\n')
      f:close()
      local out, err, rc = run("run " .. shq(script) .. " " .. url)
      assert.equal(3, rc, err)
      assert.equal("2\n", out)
      -- after_each checks that no process is left
    end)
  end)

  describe("hostile text and output that cannot be written", function()
    local data_url = H.data_url
    local page = data_url([[<script>addEventListener('devtoolstooldiscovery', (e) => e.respondWith({
      name: 'g', description: 'd', tools: [
        { name: 'L'.repeat(300000), description: 'long', inputSchema: { type: 'object' }, execute: () => 1 },
        { name: 'b', description: 'evil \u009b2J and \u202e rtl', inputSchema: { type: 'object' },
          execute: () => 'r\u009bs\u202et' }] }))</script>]])

    it("cleans C1 controls and bidi overrides, and trims long lines in linear time", function()
      local out, err, rc = run("list " .. shq(page), { env = "timeout 60" })
      assert.equal(0, rc, err)
      assert.matches("evil ?2J and ? rtl", out, 1, true)
      assert.is_nil(out:find("\194\155", 1, true))
      assert.is_nil(out:find("\226\128\174", 1, true))
      out, err, rc = run("call --compact " .. shq(page) .. " b", { env = "timeout 60" })
      assert.equal(0, rc, err)
      assert.equal('"r\\u009bs\\u202et"\n', out)           -- the same JSON value, escaped
      -- a long message: its start, how much more there is, and --verbose
      -- for all of it (trimmed in linear time either way)
      out, err, rc = run("eval " .. shq(page) .. " "
        .. shq("(() => { throw new Error(' '.repeat(300000) + 'x') })()"), { env = "timeout 60" })
      assert.equal(1, rc, err)
      assert.matches("^devtools%-tools: js_error: Error: +%.%.%. %(%d+ more bytes%)\n"
        .. "devtools%-tools: %(%-%-verbose shows the whole error%)\n$", err)
      out, err, rc = run("eval --verbose " .. shq(page) .. " "
        .. shq("(() => { throw new Error(' '.repeat(300000) + 'x') })()"), { env = "timeout 60" })
      assert.equal(1, rc, err)
      assert.matches(" x\n", err)
    end)

    it("fails when stdout cannot be written, and refuses an infinite --timeout", function()
      local _, rc = H.sh(("(cd / && TMPDIR=%s XDG_STATE_HOME=%s/state %s call %s b >/dev/full 2>%s/err)"):format(
        shq(dir .. "/tmp"), shq(dir), shq(bin), shq(page), dir))
      local f = io.open(dir .. "/err"); local err = f:read("*a"); f:close()
      assert.equal(1, rc)
      assert.matches("cannot write the output", err, 1, true)
      local _, err2, rc2 = run("call " .. shq(page) .. " b --timeout 1e400")
      assert.equal(2, rc2)
      assert.matches("finite", err2, 1, true)
      for _, t in ipairs({ "0x10", "0b101", "' 5'" }) do      -- decimal only (LuaJIT read 0b101 as 5)
        _, err2, rc2 = run("call " .. shq(page) .. " b --timeout " .. t)
        assert.equal(2, rc2)
        assert.matches("--timeout needs a positive number", err2, 1, true)
      end
    end)
  end)

  describe("a page that would make it walk or print without end", function()
    local hostile
    setup(function() hostile = server.url("/frontends.html") end)

    it("types an argument through a schema of 3^20 paths at once (a bounded walk)", function()
      local t0 = core.now()
      local out, err, rc = run("call --compact " .. hostile .. " typing_bomb a=5", { env = "timeout 60" })
      assert.equal(0, rc, err)
      assert.equal('{"a":5,"type":"number"}\n', out)
      assert.is_true(core.now() - t0 < 20)
      out, err, rc = run("list " .. hostile, { env = "timeout 60" })
      assert.equal(0, rc, err)
      assert.matches("\n  skeleton_bomb  a: object, b: object, c: object  Three", out)
    end)

    it("a tool that throws a 20 MB message: its start on stderr, all of it with --verbose", function()
      local out, err, rc = run("call --timeout 60 " .. hostile .. " boom", { env = "timeout 90" })
      assert.equal(1, rc)
      assert.equal("", out)
      assert.is_true(#err < 4096, #err .. " bytes on stderr")
      local more = tonumber(err:match("^devtools%-tools: tool_error: y+%.%.%. %((%d+) more bytes%)\n"))
      assert.truthy(more, err:sub(1, 300))
      assert.is_true(more > 20 * 1024 * 1024 - 4096)
      assert.matches("\ndevtools%-tools: %(%-%-verbose shows the whole error%)\n$", err)
      out, err, rc = run("call --verbose --timeout 60 " .. hostile .. " boom", { env = "timeout 90" })
      assert.equal(1, rc)
      assert.truthy(err:find(("y"):rep(1000) .. "END", 1, true))
      assert.is_true(#err > 20 * 1024 * 1024)
    end)
  end)

  describe("the background browser", function()
    it("a start killed before its browser answered: status says so, and the next start ends what it left", function()
      -- a Chromium that never opens its debugging port
      local fake = dir .. "/silent-chromium"
      local f = assert(io.open(fake, "w"))
      f:write("#!/bin/sh\nsleep 60\n")               -- (not exec: its command line keeps the profile)
      f:close()
      os.execute("chmod +x " .. shq(fake))
      local starter = assert(core.process.spawn({ "/bin/sh", "-c", ("cd / && TMPDIR=%s XDG_STATE_HOME=%s/state exec %s"
        .. " browser start --chromium %s --timeout 60"):format(shq(dir .. "/tmp"), shq(dir), shq(bin), shq(fake)) }))
      finally(function()                              -- whatever failed, nothing waits for a lock after us
        starter:close(0)
        run("browser stop")
      end)
      local state_file = dir .. "/state/devtools-tools/browser.json"
      local function state()
        local sf = io.open(state_file)
        if not sf then return nil end
        local text = sf:read("*a")
        sf:close()
        local ok, st = pcall(dt.json.decode, text)
        return ok and st or nil
      end
      local st
      assert.is_true(H.wait_for(function() st = state(); return st ~= nil and st.starting end, 20))
      assert.is_true(H.wait_for(function() return #H.live_with_arg(st.profile) > 0 end, 20))
      -- SIGKILL: no handler can clean up after it (SIGTERM is caught now, and
      -- the start ends what it began: status then says no browser at all)
      os.execute("kill -KILL " .. starter:pid())
      starter:wait(core.now() + 10)
      starter:close()
      local out, err, rc = run("browser status")
      assert.equal(3, rc)
      assert.matches("^not running: the background browser is starting, or its start was killed", out)
      out, err, rc = run("browser start --timeout 30")   -- the lock's holder is gone: no waiting for it
      assert.equal(0, rc, err)
      assert.equal("unix:" .. dir .. "/state/devtools-tools/browser.sock\n", out)
      assert.same({}, H.live_with_arg(st.profile))
      assert.is_false(H.exists(st.profile))
      out, err, rc = run("browser stop")
      assert.equal(0, rc, err)
    end)

    it("a TMPDIR it cannot use is its one message, with status 1", function()
      local out, err, rc = run("browser start", { env = "TMPDIR=/nonexistent" })
      assert.equal(1, rc)
      assert.equal("", out)
      assert.equal("devtools-tools: launch_failed: cannot create a profile under /nonexistent\n", err)
    end)

    it("started three times at once is one browser, which stop ends", function()
      local cmd = ("cd / && for i in 1 2 3; do TMPDIR=%s XDG_STATE_HOME=%s/state %s browser start"
        .. " >%s/start$i 2>&1 & done; wait"):format(shq(dir .. "/tmp"), shq(dir), shq(bin), dir)
      H.sh(cmd)
      local eps = {}
      for i = 1, 3 do
        local f = io.open(dir .. "/start" .. i); local text = f:read("*a"); f:close()
        eps[i] = text:match("^(unix:/%S+/browser%.sock)\n$")
        assert.truthy(eps[i], text)
      end
      assert.equal(eps[1], eps[2])
      assert.equal(eps[1], eps[3])
      local _, err, rc = run("browser stop")
      assert.equal(0, rc, err)
    end)

    it("is shared by later commands until stopped, which leaves nothing behind", function()
      local out, err, rc = run("browser status")
      assert.equal(3, rc)
      assert.equal("not running: no background browser\n", out)
      assert.equal("", err)

      local tmp_before = H.sh("ls -A " .. shq(dir .. "/tmp"))
      out, err, rc = run("browser start")
      assert.equal(0, rc, err)
      local endpoint = out:match("^(unix:/%S+/browser%.sock)\n$")
      assert.is_string(endpoint, out)
      local state = dir .. "/state/devtools-tools/browser.json"
      local mode = H.sh("stat -c %a " .. shq(state))
      assert.equal("600\n", mode)
      local st = dt.json.decode(io.open(state):read("*a"))
      assert.equal(endpoint, st.endpoint)
      assert.matches("^" .. (dir .. "/tmp/"):gsub("%p", "%%%0"), st.profile)
      -- the flags dt.launch uses for a headless browser (of the Chromium
      -- the holder, st.pid, runs)
      local function procs_of(profile)         -- (its helpers, --type=..., left out)
        local l = {}
        for _, pid in ipairs(H.live_with_arg("--user-data-dir=" .. profile .. "\0")) do
          local cf = io.open("/proc/" .. pid .. "/cmdline", "rb")
          local cmd = cf and cf:read("*a") or ""
          if cf then cf:close() end
          if not cmd:find("--type=", 1, true) then l[#l + 1] = pid end
        end
        table.sort(l)
        return l
      end
      -- (a helper Chromium has forked but not yet exec'd has its command
      -- line for a moment: wait for the two that stay)
      local procs
      H.wait_for(function() procs = procs_of(st.profile); return #procs == 2 end, H.LONG)
      assert.equal(2, #procs)
      local chromium = procs[1] == st.pid and procs[2] or procs[1]
      local f = assert(io.open("/proc/" .. chromium .. "/cmdline", "rb"))
      local cmdline = f:read("*a")
      f:close()
      assert.truthy(cmdline:find("\0--remote-debugging-pipe\0", 1, true))
      assert.falsy(cmdline:find("--remote-debugging-port", 1, true))
      for _, a in ipairs(require("devtools_tools.browser").chromium_args(true)) do
        assert.truthy(cmdline:find("\0" .. a .. "\0", 1, true), a)
      end

      out, err, rc = run("browser status")
      assert.equal(0, rc, err)
      assert.equal(("running pid %d %s\n"):format(st.pid, endpoint), out)
      -- start again: the same browser
      out, err, rc = run("browser start")
      assert.equal(0, rc, err)
      assert.equal(endpoint .. "\n", out)

      -- one command opens the page and changes its state; the next finds the
      -- page again by --tab and sees that state
      out, err, rc = run("call " .. url .. " increment by=2 --compact")
      assert.equal(0, rc, err)
      assert.equal('{"count":2}\n', out)
      out, err, rc = run("call --tab cli.html increment by=3 --compact")
      assert.equal(0, rc, err)
      assert.equal('{"count":5}\n', out)
      out, err, rc = run("eval --tab 'cli page' 'document.title'")      -- by title
      assert.equal(0, rc, err)
      assert.equal('"cli page"\n', out)
      -- without URL or --tab: the page opened last
      out, err, rc = run("eval " .. shq(server.url("/tools.html")) .. " 'window.mark = 7'")
      assert.equal(0, rc, err)
      out, err, rc = run("eval 'location.pathname + window.mark'")
      assert.equal(0, rc, err)
      assert.equal('"/tools.html7"\n', out)
      out, err, rc = run("list --tab nowhere-such")
      assert.equal(1, rc)
      assert.equal('devtools-tools: bad_argument: no open page whose URL or title contains "nowhere-such"\n', err)
      -- the browser is still the same process (and its holder)
      assert.same(procs, procs_of(st.profile))

      out, err, rc = run("browser stop")
      assert.equal(0, rc, err)
      assert.equal("", out)
      assert.is_false(H.exists(state))
      assert.is_false(H.exists(st.profile))
      assert.same({}, left_behind())
      -- nor files: Chromium's own temporary files were in the profile
      assert.equal(tmp_before, (H.sh("ls -A " .. shq(dir .. "/tmp"))))
      out, err, rc = run("browser status")
      assert.equal(3, rc)
    end)
  end)

  describe("--connect", function()
    it("uses a Chromium started elsewhere and leaves it running", function()
      local profile = assert(core.fs.mkdtemp("dt-cli-chromium-"))
      local chromium = os.getenv("DEVTOOLS_TOOLS_CHROME") or "/usr/lib/chromium/chromium"
      local proc = assert(core.process.spawn({ chromium, "--headless", "--no-sandbox",
        "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-quic",
        "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
        "--user-data-dir=" .. profile, "about:blank" },
        -- its temporary files go in the profile, removed with it
        { cleanup_dir = profile, env = { TMPDIR = profile, XDG_CONFIG_HOME = profile .. "/.config",
          XDG_CACHE_HOME = profile .. "/.cache" } }))
      local port
      local ok, why = pcall(function()
        -- Chromium writes the port it bound into the profile; the spec waits for it
        assert(H.wait_for(function()
          local f = io.open(profile .. "/DevToolsActivePort")
          port = f and f:read("*n")
          if f then f:close() end
          return port ~= nil
        end, 20), "no DevToolsActivePort")
        local endpoint = "http://127.0.0.1:" .. port
        local out, err, rc = run("call --connect " .. endpoint .. " " .. url .. " increment --compact")
        assert.equal(0, rc, err)
        assert.equal('{"count":1}\n', out)
        out, err, rc = run("call --connect " .. endpoint .. " --tab cli.html increment --compact")
        assert.equal(0, rc, err)
        assert.equal('{"count":2}\n', out)
        assert.is_true(proc:running())
        -- --connect and a launch option together are a usage error
        out, err, rc = run("list --connect " .. endpoint .. " --headful " .. url)
        assert.equal(2, rc, err)
      end)
      proc:close(2)
      if not ok then error(why, 0) end
    end)
  end)
end)
