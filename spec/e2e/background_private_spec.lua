-- The command line's background browser is private (issue 41): served on a
-- Unix socket to its owner only, with no port open, its state files 0600
-- in a 0700 directory and refused when another user's or open to others;
-- `browser start --port` keeps the shareable TCP endpoint. Its users go
-- on working: the commands (the background browser, --connect with its
-- endpoint), `mcp --connect` and `mcp` alone, and Neovim's :DevTools connect.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local H = require "helper"
local cli = require "support.cli_install"
local Client = require "support.mcp_client"

local shq = cli.shq
local NOBODY = core.process.euid() == 0 and tonumber((H.sh("id -u nobody 2>/dev/null"))) or nil
local ROOT = os.getenv("PWD") or "."

describe("devtools-tools: the private background browser", function()
  local inst, server, url
  local function run(args, opts) return inst:run(args, opts) end
  local function state(name) return inst.dir .. "/state/devtools-tools" .. (name and ("/" .. name) or "") end
  local function mode(path) return (H.sh("stat -c %a " .. shq(path))) end

  -- a command of this checkout's, run by uid nobody: stdout and stderr, status
  local function as_nobody(args)
    return H.sh(("su nobody -s /bin/sh -c %s"):format(shq(("cd / && HOME=/nonexistent TMPDIR=/tmp %s/bin/devtools-tools %s")
      :format(shq(ROOT), args))))
  end

  setup(function()
    inst = cli.install("dt-cli-private-")
    server = H.start_server()
    url = server.url("/cli.html")
  end)

  teardown(function()
    run("browser stop")
    server.stop()
    inst:remove()
  end)

  after_each(function()
    run("browser stop")
    H.wait_for(function() return #inst:left_behind() == 0 end, H.LONG)
    assert.same({}, inst:left_behind())
  end)

  it("is served to its owner only, opens no port, and keeps its state 0600 in a 0700 directory", function()
    local out, err, rc = run("browser start")
    assert.equal(0, rc, err)
    assert.equal("unix:" .. state("browser.sock") .. "\n", out)
    local endpoint = out:sub(1, -2)
    local rec = dt.json.decode(cli.slurp(state("browser.json")))
    assert.same({}, H.tcp_listeners_of(rec.profile))
    out, err, rc = run("call --compact " .. url .. " increment")
    assert.equal(0, rc, err)
    assert.equal('{"count":1}\n', out)
    out, err, rc = run("call --compact --connect " .. endpoint .. " --tab cli.html increment")
    assert.equal(0, rc, err)
    assert.equal('{"count":2}\n', out)
    assert.equal("700\n", mode(state()))
    for _, f in ipairs({ "browser.json", "browser.json.lock", "browser.sock", "tabs.json" }) do
      assert.equal("600\n", mode(state(f)), f)
    end
    if NOBODY then
      -- another user: its command cannot reach the socket
      out, rc = as_nobody("eval --connect " .. endpoint .. " about:blank 1+1")
      assert.equal(1, rc, out)
      assert.matches("^devtools%-tools: connect_failed: connect: cannot connect to .*Permission denied\n$", out)
    end
    out, err, rc = run("browser stop")
    assert.equal(0, rc, err)
    assert.is_false(H.exists(state("browser.sock")))
    assert.is_false(H.exists(rec.profile))
  end)

  it("--port PORT keeps a TCP endpoint for other tools (which every local user may drive)", function()
    local _, err, rc = run("browser start --port nope")
    assert.equal(2, rc)
    assert.matches("--port needs a TCP port number", err, 1, true)
    local out
    out, err, rc = run("browser start --port 0")
    assert.equal(0, rc, err)
    local port = tonumber(out:match("^ws://127%.0%.0%.1:(%d+)/devtools/browser/[%w-]+\n$"))
    assert.is_number(port, out)
    out, err, rc = run("browser status")
    assert.equal(0, rc, err)
    assert.matches("^running pid %d+ ws://127%.0%.0%.1:" .. port .. "/", out)
    out, err, rc = run("call --compact " .. url .. " increment")
    assert.equal(0, rc, err)
    assert.equal('{"count":1}\n', out)
    out, err, rc = run("eval --connect http://127.0.0.1:" .. port .. " --tab cli.html 'document.title'")
    assert.equal(0, rc, err)
    assert.equal('"cli page"\n', out)
    if NOBODY then
      out, rc = as_nobody("eval --connect http://127.0.0.1:" .. port .. " --tab cli.html 'document.title'")
      assert.equal(0, rc, out)
      assert.equal('"cli page"\n', out)
    end
    -- a second start says --port applies to the next one
    out, err, rc = run("browser start --port 0")
    assert.equal(0, rc, err)
    assert.matches("--port apply to the next one", err, 1, true)
  end)

  if NOBODY then
    it("refuses a record another user planted (nothing connects to its endpoint), and a directory open to others", function()
      -- a listener stands for the other user's: it notes a connection
      local note, portfile = inst.dir .. "/connected", inst.dir .. "/port"
      local listener = assert(core.process.spawn({ "/usr/bin/python3", "-c", ([[
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
open(%q, "w").write(str(s.getsockname()[1]))
c, _ = s.accept()
open(%q, "w").write("connected")
]]):format(portfile, note) }))
      finally(function() listener:close(0) end)
      assert.is_true(H.wait_for(function() return H.exists(portfile) and H.read_file(portfile) ~= "" end, H.LONG))
      local port = H.read_file(portfile)
      -- the record: a browser that seems to run (a process names its
      -- profile) at that endpoint, written by uid nobody
      local profile = inst.dir .. "/theirs"
      local decoy = assert(core.process.spawn({ "/bin/sh", "-c", "sleep 60", "sh", "--user-data-dir=" .. profile }))
      finally(function() decoy:close(0) end)
      assert(core.fs.mkdirs(state(), 448))
      finally(function()
        os.remove(state("browser.json"))
        os.execute("chmod 700 " .. shq(state()))
      end)
      assert(core.fs.write_file(state("browser.json"), dt.json.encode({ pid = decoy:pid(), profile = profile,
        executable = "/bin/sh", headless = true, port = tonumber(port),
        endpoint = "ws://127.0.0.1:" .. port .. "/devtools/browser/x" }), 384))
      assert(os.execute("chown nobody " .. shq(state("browser.json"))))
      local _, out, err, rc
      out, err, rc = run("eval 'document.title'")
      assert.equal(1, rc)
      assert.equal("", out)
      assert.equal(("devtools-tools: connect_failed: refusing the background browser's state %s: it belongs"
        .. " to uid %d, not to you (uid 0); remove it\n"):format(state("browser.json"), NOBODY), err)
      _, err, rc = run("browser status")
      assert.equal(1, rc)
      assert.matches("^devtools%-tools: connect_failed: refusing ", err)
      _, err, rc = run("browser start")
      assert.equal(1, rc)
      assert.matches("^devtools%-tools: launch_failed: refusing ", err)
      assert.is_false(H.exists(note))                    -- nothing connected to it
      assert.is_true(decoy:running())                    -- nor was it ended
      -- the directory open to others
      os.remove(state("browser.json"))
      assert(os.execute("chmod 755 " .. shq(state())))
      _, err, rc = run("browser status")
      assert.equal(1, rc)
      assert.equal(("devtools-tools: connect_failed: refusing the background browser's state %s: its mode"
        .. " is 0755, open to other users (chmod 700 %s)\n"):format(state(), state()), err)
      assert(os.execute("chmod 700 " .. shq(state())))
      out, err, rc = run("browser status")
      assert.equal(3, rc, err)
    end)
  end

  it("mcp --connect with its endpoint, and mcp alone, serve a page of it", function()
    local out, err, rc = run("browser start")
    assert.equal(0, rc, err)
    local endpoint = out:sub(1, -2)
    out, err, rc = run("call --compact " .. url .. " increment")
    assert.equal(0, rc, err)
    local env = { XDG_STATE_HOME = inst.dir .. "/state", TMPDIR = inst.dir .. "/tmp" }
    for i, args in ipairs({ { "mcp", "--connect", endpoint, "--tab", "cli.html" }, { "mcp", "--tab", "cli.html" } }) do
      local c = Client.spawn(args, { env = env })
      local ok, e = pcall(function()
        c:initialize()
        local names = {}
        for _, t in ipairs(c:request("tools/list").tools) do names[t.name] = true end
        assert.is_true(names.increment)
        local r = c:request("tools/call", { name = "increment", arguments = {} })
        assert.is_nil(r.isError)
        assert.matches('"count": ?' .. (i + 1), r.content[1].text)
        c:close_stdin()
        assert.same({ "exit", 0 }, { c:wait_exit(30) })
      end)
      c:kill()
      assert(ok, e)
    end
    out, err, rc = run("eval --tab cli.html 'document.title'")   -- the tab is still there
    assert.equal(0, rc, err)
  end)

  if H.sh("command -v nvim") ~= "" then
    it("Neovim's :DevTools connect ENDPOINT attaches to it", function()
      local out, rc = H.sh("make -s LUA=luajit all")
      assert.equal(0, rc, out)
      local err
      out, err, rc = run("browser start")
      assert.equal(0, rc, err)
      local endpoint = out:sub(1, -2)
      out, err, rc = run("eval " .. url .. " 'document.title = \"from the cli\"'")
      assert.equal(0, rc, err)
      local res = inst.dir .. "/nvim.json"
      local script = inst.dir .. "/nvim.lua"
      local f = assert(io.open(script, "w"))
      f:write(([[
        package.cpath = %q .. "/build/luajit/?.so;" .. package.cpath
        local nv = require "devtools_tools.nvim"
        local ok, e = pcall(function()
          vim.cmd("DevTools connect " .. %q)
          assert(vim.wait(60000, function() return not nv.status().busy end, 10), "still busy")
          local st = nv.status()
          local f = io.open(%q, "w")
          f:write(vim.json.encode({ browser = st.browser, url = st.url }))
          f:close()
        end)
        if not ok then io.stderr:write(tostring(e), "\n") vim.cmd("cquit 3") end
        vim.cmd("qa!")
      ]]):format(ROOT, endpoint, res))
      f:close()
      out, rc = H.sh(("cd %s && timeout 120 nvim --headless -u NONE -i NONE -n --cmd %s --cmd 'set loadplugins'"
        .. " -c %s </dev/null"):format(shq(inst.dir), shq("set rtp^=" .. ROOT), shq("luafile " .. script)))
      assert.equal(0, rc, out)
      local st = dt.json.decode(H.read_file(res))
      assert.equal("Browser(connected to " .. endpoint .. ")", st.browser)
      assert.equal(url, st.url)
    end)
  end
end)
