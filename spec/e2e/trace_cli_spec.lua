-- The command line's traces, against real headless Chromium and the
-- versioned page (spec/fixtures/trace.html?v=N): --record on call, run and
-- mcp; replay's lines, summary and exit status (0, 1, 2 for a trace it
-- cannot read), --ignore, --json, --update; export --lua, whose recipe run
-- prints the recorded results. Each command runs with TMPDIR and
-- XDG_STATE_HOME in a directory of its own, and leaves no process behind.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local H = require "helper"
local Client = require "support.mcp_client"
local cli = require "support.cli_install"

local function shq(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

describe("devtools-tools traces", function()
  local dir, server, shared

  -- run(args, stdin?) -> stdout, stderr, exit status; a command on a page
  -- in a tab of its own of the file's shared browser (support/cli_install)
  local function run(args, input)
    args = cli.shared_args(shared, args, dir .. "/state") or args
    local cmd = ("(TMPDIR=%s XDG_STATE_HOME=%s/state DEVTOOLS_TOOLS_BUILD=%s %s bin/devtools-tools %s <%s >%s/out 2>%s/err)")
      :format(shq(dir .. "/tmp"), shq(dir), H.build, H.lua, args, input or "/dev/null", dir, dir)
    local _, rc = H.sh(cmd)
    return H.read_file(dir .. "/out"), H.read_file(dir .. "/err"), rc
  end

  local function url(v) return server.url("/trace.html" .. (v and ("?v=" .. v) or "")) end
  local function file(name) return dir .. "/" .. name end
  local function write(name, text)
    local f = assert(io.open(file(name), "w"))
    f:write(text)
    f:close()
    return file(name)
  end

  setup(function()
    dir = assert(core.fs.mkdtemp("dt-trace-cli-"))
    assert(core.fs.mkdirs(dir .. "/tmp", 448))
    server = H.start_server()
    shared = H.shared_browser()
    -- the session the replays check, as a script
    write("session.lua", [[
page:call("getCacheStats")
pcall(page.call, page, "explode")
page:call("getState", { path = "cart.items", depth = 5 })
page:call("legacyStats")
page:reload()
page:call("counter")
]])
  end)

  teardown(function()
    shared.close()
    server.stop()
    core.fs.rmtree(dir)
  end)

  after_each(function()
    shared.close_tabs()
    H.wait_for(function() return #H.live_with_arg(dir .. "/tmp") == 0 end, H.LONG)
    assert.same({}, H.live_with_arg(dir .. "/tmp"))
  end)

  it("answers --help on repl, replay and export, and names them in the list of commands", function()
    for _, cmd in ipairs({ "repl", "replay", "export" }) do
      local out, err, rc = run(cmd .. " --help")
      assert.equal(0, rc, err)
      assert.matches("^Usage: devtools%-tools " .. cmd, out)
      assert.equal("", err)
    end
    local out = run("--help")
    assert.matches("repl [URL]", out, 1, true)
    assert.matches("replay FILE [URL]", out, 1, true)
    assert.matches("export FILE --lua", out, 1, true)
    local _, err, rc = run("replay")
    assert.equal(2, rc)
    assert.matches("which trace?", err, 1, true)
    _, err, rc = run("replay " .. shq(file("nonexistent.trace")))
    assert.equal(2, rc)
    assert.matches("cannot read", err, 1, true)
    _, err, rc = run("call --record-observe " .. url(1) .. " counter")
    assert.equal(2, rc)
    assert.matches("--record-observe and --record-bodies go with --record FILE", err, 1, true)
    _, err, rc = run("list --record " .. shq(file("list.trace")) .. " " .. url(1))
    assert.equal(2, rc)
    assert.matches("--record is an option of run, repl, call and mcp", err, 1, true)
    _, err, rc = run("call --ignore /ts " .. url(1) .. " counter")
    assert.equal(2, rc)
    assert.matches("--ignore and --update are options of replay", err, 1, true)
    assert.is_nil(io.open(file("list.trace")))
  end)

  it("call --record writes the call; replay of the same version: exit 0, the summary", function()
    local out, err, rc = run("call --record " .. shq(file("call.trace")) .. " " .. url() .. " getState path=user.name")
    assert.equal(0, rc, err)
    assert.matches('"value": "Ada"', out, 1, true)
    local t = dt.trace.read(file("call.trace"))
    assert.equal(1, #t.calls)
    assert.same({ path = "user.name" }, t.calls[1].args)
    out, err, rc = run("replay " .. shq(file("call.trace")))
    assert.equal(0, rc, err)
    assert.equal("replayed 1 call: no differences\n", out)
  end)

  it("run --record, then replay against another version: each difference on a line, the summary, exit 1", function()
    local _, err, rc = run("run " .. shq(file("session.lua")) .. " " .. url(1) .. " --record " .. shq(file("s.trace")))
    assert.equal(0, rc, err)
    local out
    out, err, rc = run("replay " .. shq(file("s.trace")) .. " " .. url(2))
    assert.equal(1, rc, err)
    assert.equal(table.concat({
      "call 1 getCacheStats: /entries/0/ts: 1000 -> 2000",
      "call 1 getCacheStats: /entries/1/ts: 1001 -> 2001",
      "call 1 getCacheStats: /misses: 9 -> 17",
      'call 2 explode: a result where there was an error (tool_error: boom): {"fixed":true}',
      "call 4 legacyStats: missing tool: the page has no legacyStats now",
      "replayed 5 calls and 1 navigation: 5 differences in 3 calls",
    }, "\n") .. "\n", out)
    -- refused arguments at v=3
    out, err, rc = run("replay " .. shq(file("s.trace")) .. " " .. url(3) .. " --ignore /entries --ignore /misses")
    assert.equal(1, rc, err)
    assert.matches("call 3 getState: arguments refused now: Invalid parameters for tool getState: /depth: must be <= 3",
      out, 1, true)
    assert.not_matches("/misses", out, 1, true)
    assert.not_matches("/entries", out, 1, true)
  end)

  it("--ignore with *, --json for a program", function()
    local _, err, rc = run("call --record " .. shq(file("c.trace")) .. " " .. url(1) .. " getCacheStats")
    assert.equal(0, rc, err)
    local out
    out, err, rc = run("replay " .. shq(file("c.trace")) .. " " .. url(2) .. " --ignore '/entries/*/ts' --json")
    assert.equal(1, rc, err)
    local j = dt.json.decode(out)
    assert.equal(1, j.calls)
    assert.equal(1, j.differing_calls)
    assert.equal(1, #j.differences)
    assert.same({ call = 1, tool = "getCacheStats", kind = "value", path = "/misses", recorded = 9, new = 17 },
      j.differences[1])
    out, err, rc = run("replay " .. shq(file("c.trace")) .. " " .. url(2) .. " --ignore '/entries/*/ts' --ignore /misses")
    assert.equal(0, rc, err)
    assert.equal("replayed 1 call: no differences\n", out)
  end)

  it("--update writes the new results: the next replay of that version has none", function()
    local _, err, rc = run("run " .. shq(file("session.lua")) .. " " .. url(1) .. " --record " .. shq(file("u.trace")))
    assert.equal(0, rc, err)
    _, err, rc = run("replay " .. shq(file("u.trace")) .. " " .. url(2) .. " --update")
    assert.equal(0, rc, err)
    assert.matches("updated", err, 1, true)
    local out
    out, err, rc = run("replay " .. shq(file("u.trace")) .. " " .. url(2))
    assert.equal(0, rc, err)
    assert.equal("replayed 5 calls and 1 navigation: no differences\n", out)
  end)

  it("a trace cut in the middle of a line, or of a newer format: a clear error, exit 2, before any browser", function()
    local _, err, rc = run("call --record " .. shq(file("x.trace")) .. " " .. url(1) .. " getCacheStats")
    assert.equal(0, rc, err)
    local text = H.read_file(file("x.trace"))
    local cut = text:match("^(.-\n.-\n)")          -- the header and the call
    write("cut.trace", cut:sub(1, #cut - 20))
    local out
    out, err, rc = run("replay " .. shq(file("cut.trace")))
    assert.equal(2, rc)
    assert.equal("", out)
    assert.matches("cut.trace:2: the line is cut short", err, 1, true)
    write("new.trace", (text:gsub('"version":1', '"version":7', 1)))
    out, err, rc = run("replay " .. shq(file("new.trace")))
    assert.equal(2, rc)
    assert.matches("new.trace was written by a newer devtools-tools (trace format version 7", err, 1, true)
    out, err, rc = run("replay " .. shq(file("x.trace")) .. " --ignore ts")
    assert.equal(2, rc)
    assert.matches("--ignore ts is no JSON pointer", err, 1, true)
    out, err, rc = run("export " .. shq(file("x.trace")))
    assert.equal(2, rc)
    assert.matches("--lua", err, 1, true)
    out, err, rc = run("list --record " .. shq(file("y.trace")) .. " " .. url(1))
    assert.equal(2, rc)
    assert.matches("--record is an option of run, repl, call and mcp", err, 1, true)
  end)

  it("export --lua: the recipe, run, prints the recorded results in order", function()
    local _, err, rc = run("run " .. shq(file("session.lua")) .. " " .. url(1) .. " --record " .. shq(file("e.trace")))
    assert.equal(0, rc, err)
    local recipe
    recipe, err, rc = run("export " .. shq(file("e.trace")) .. " --lua")
    assert.equal(0, rc, err)
    write("recipe.lua", recipe)
    local out
    out, err, rc = run("run " .. shq(file("recipe.lua")) .. " --record " .. shq(file("again.trace")))
    assert.equal(0, rc, err)
    local t = dt.trace.read(file("e.trace"))
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.equal(#t.calls, #lines)
    for i, c in ipairs(t.calls) do
      if c.error then
        assert.equal("error: devtools_tools: " .. c.error.code .. ": " .. c.error.message, lines[i])
      else
        assert.same(c.result, dt.json.decode(lines[i]))
      end
    end
    -- the recipe's own run recorded: the same calls, the same outcomes
    local again = dt.trace.read(file("again.trace"))
    assert.equal(#t.calls, #again.calls)
    for i, c in ipairs(t.calls) do
      assert.equal(c.tool, again.calls[i].tool)
      assert.same(c.result, again.calls[i].result)
      assert.same(c.error, again.calls[i].error)
    end
  end)

  it("mcp --record: an agent's calls become a trace", function()
    local tmp = dir .. "/tmp"
    local c = Client.spawn({ "mcp", url(1), "--record", file("mcp.trace") },
      { env = { TMPDIR = tmp, XDG_STATE_HOME = dir .. "/state" }, lua = H.lua })
    local ok, err = pcall(function()
      c:initialize()
      local names = c:tool_names()
      local name
      for _, n in ipairs(names) do if n:find("getCacheStats", 1, true) then name = n end end
      assert.is_string(name, table.concat(names, ", "))
      local r = c:request("tools/call", { name = name, arguments = {} }, 20)
      assert.is_table(r)
      c:close_stdin()
      c:wait_exit(30)
    end)
    c:kill()
    assert(ok, err)
    local t = dt.trace.read(file("mcp.trace"))
    assert.equal(1, #t.calls)
    assert.equal("getCacheStats", t.calls[1].tool)
    assert.equal(9, t.calls[1].result.misses)
    local out, e2, rc = run("replay " .. shq(file("mcp.trace")) .. " " .. url(2))
    assert.equal(1, rc, e2)
    assert.matches("call 1 getCacheStats: /misses: 9 -> 17", out, 1, true)
  end)
end)
