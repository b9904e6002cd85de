-- `devtools-tools repl`, driven in a real terminal (tmux, on a server of
-- the spec's own socket) and through pipes, against real headless Chromium
-- and spec/fixtures/trace.html: a call, Tab completing a tool name, an
-- argument key and an enum value, a multi-line chunk, Ctrl-C during a slow
-- call and during a loop of the chunk's own, the line that says the tools
-- changed, the REPL's commands, the history of the session before, Ctrl-D
-- leaving no process behind; the same through a pipe, in plain text, and
-- --record there (the session's trace replays without a difference). Every
-- wait is on what the screen or the output shows, with a deadline.

local core = require "devtools_tools.core"
local H = require "helper"

local function shq(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local ROOT = assert(io.popen("pwd")):read("*l")

describe("devtools-tools repl", function()
  local dir, server, sock

  local function env()
    return ("TMPDIR=%s XDG_STATE_HOME=%s/state DEVTOOLS_TOOLS_BUILD=%s"):format(shq(dir .. "/tmp"), shq(dir), H.build)
  end

  local function url(v) return server.url("/trace.html" .. (v and ("?v=" .. v) or "")) end

  local function left_behind() return H.live_with_arg(dir .. "/tmp") end

  setup(function()
    dir = assert(core.fs.mkdtemp("dt-repl-"))
    assert(core.fs.mkdirs(dir .. "/tmp", 448))
    server = H.start_server()
    sock = "dt-repl-spec-" .. tostring(core.now()):gsub("%.", "")
    -- the server started with a command that names none of our paths (its
    -- command line stays the first client's: left_behind would find it)
    assert(select(2, H.sh("tmux -L " .. sock .. " new-session -d -s base 'sleep 3600'")) == 0)
  end)

  teardown(function()
    H.sh("tmux -L " .. sock .. " kill-server")
    server.stop()
    core.fs.rmtree(dir)
  end)

  after_each(function()
    H.wait_for(function() return #left_behind() == 0 end, H.LONG)
    assert.same({}, left_behind())
  end)

  describe("in a terminal", function()
    local n = 0
    local name

    local function tmux(args)
      local out, rc = H.sh("tmux -L " .. sock .. " " .. args)
      assert(rc == 0, out)
      return out
    end

    local function screen()
      return tmux("capture-pane -p -J -t " .. name .. " -S -300")
    end

    -- wait_for(pattern) -> the screen once it holds pattern (plain text)
    local function wait_for(pattern, timeout)
      local s
      local ok = H.wait_for(function()
        s = screen()
        return s:find(pattern, 1, true) ~= nil
      end, timeout or 60)
      assert(ok, "the screen never showed " .. pattern .. ":\n" .. tostring(s))
      return s
    end

    -- the line of the cursor
    local function current_line()
      local y = tonumber((tmux("display -p -t " .. name .. " '#{cursor_y}'")):match("%d+"))
      local lines = {}
      for l in (tmux("capture-pane -p -t " .. name) .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = l end
      return lines[y + 1] or ""
    end

    -- wait_line(text): the cursor's line is text (tmux drops the spaces
    -- at the end of a line: compared without them)
    local function wait_line(text, timeout)
      local got
      text = text:gsub("%s+$", "")
      local ok = H.wait_for(function()
        got = current_line():gsub("%s+$", "")
        return got == text
      end, timeout or 30)
      assert(ok, "the line is " .. tostring(got) .. ", not " .. text)
    end

    local function keys(...) tmux("send-keys -t " .. name .. " " .. table.concat({ ... }, " ")) end
    local function type_text(s) tmux("send-keys -t " .. name .. " -l " .. shq(s)) end

    -- start(target): the REPL in a new window, from a script (whose
    -- command line, unlike the REPL's, does not name TMPDIR)
    local function start(target)
      n = n + 1
      name = "repl" .. n
      local script = dir .. "/run" .. n .. ".sh"
      local f = assert(io.open(script, "w"))
      f:write(("cd %s && %s %s bin/devtools-tools repl %s\necho EXITED rc=$?\nexec sleep 600\n")
        :format(shq(ROOT), env(), H.lua, target))
      f:close()
      tmux(("new-session -d -s %s -x 150 -y 60 %s"):format(name, shq("sh " .. script)))
      wait_line("> ", 60)
    end

    after_each(function()
      if name then H.sh("tmux -L " .. sock .. " kill-session -t " .. name) end
      name = nil
    end)

    it("calls, completes names, keys and enum values, takes multi-line chunks, and Ctrl-D leaves nothing", function()
      start(url())
      type_text("getCacheStats{}") keys("Enter")
      wait_for('"misses": 9')
      -- a tool's name
      type_text("getSt") keys("Tab")
      wait_line("> getState")
      -- an argument key, then the values of its enum
      type_text("{pa") keys("Tab")
      wait_line("> getState{path = ")
      type_text('"u') keys("Tab")
      wait_line('> getState{path = "user.name"')
      type_text("}") keys("Enter")
      wait_for('"value": "Ada"')
      -- page: methods
      type_text("page:wait_for_t") keys("Tab")
      wait_line("> page:wait_for_tool")
      keys("C-u")
      -- a chunk on several lines
      type_text("function twice(x)") keys("Enter")
      wait_line(">> ")
      type_text("return x * 21") keys("Enter")
      type_text("end") keys("Enter")
      wait_line("> ")
      type_text("twice(2)") keys("Enter")
      wait_for("\n42\n")
      -- an error as the command line shows it, and the REPL goes on
      type_text('getState{path = "nowhere"}') keys("Enter")
      wait_for("devtools-tools: invalid_params: Invalid parameters for tool getState")
      wait_line("> ")
      keys("C-d")
      wait_for("EXITED rc=0")
      H.wait_for(function() return #left_behind() == 0 end, H.LONG)
      assert.same({}, left_behind())
      -- the history of this session, in the next one
      start(url())
      keys("Up")
      wait_line('> getState{path = "nowhere"}')
      keys("Up")
      wait_line("> twice(2)")
      keys("C-u", "C-d")
      wait_for("EXITED rc=0")
    end)

    it("Ctrl-C stops a slow call and a loop of the chunk's own; the REPL goes on", function()
      start(url())
      local t0 = core.now()
      type_text("slow{ms = 60000}") keys("Enter", "C-c")
      wait_for("devtools-tools: interrupted")
      wait_line("> ")
      assert.is_true(core.now() - t0 < 30)
      type_text("while true do end") keys("Enter")
      -- (the loop runs: the prompt is gone until Ctrl-C)
      wait_line("")
      keys("C-c")
      wait_line("> ")
      type_text("counter{}") keys("Enter")
      wait_for('"count": 1')
      -- at the prompt, Ctrl-C clears what was typed
      type_text("half a li") keys("C-c")
      wait_line("> ")
      keys("C-d")
      wait_for("EXITED rc=0")
    end)

    it("Ctrl-C while the page's tools are still being discovered stops the chunk, which never ran without them", function()
      start(server.url("/trace.html?busy=5000"))       -- (the first discovery takes 5 s)
      type_text("slow{ms = 60000}") keys("Enter", "C-c")
      local s = wait_for("devtools-tools: interrupted")
      assert.is_nil(s:find("attempt to call", 1, true), s)
      wait_line("> ")
      type_text("counter{}") keys("Enter")
      wait_for('"count": 1')
      keys("C-d")
      wait_for("EXITED rc=0")
    end)

    it("says when the page's tools change; .describe, .tools, .record and .stop", function()
      start(url())
      type_text("addExtra{}") keys("Enter")
      wait_for("devtools-tools: tools changed: added extraTool")
      type_text("extraTool{}") keys("Enter")
      wait_for('"extra"')
      type_text(".describe getState") keys("Enter")
      wait_for('allowed: "cart.items", "user.name"')
      type_text(".record " .. dir .. "/repl.trace") keys("Enter")
      wait_for("recording to " .. dir .. "/repl.trace")
      type_text("counter{}") keys("Enter")
      wait_for('"count": 1')
      type_text(".stop") keys("Enter")
      wait_for("stopped recording: 1 calls")
      local text = H.read_file(dir .. "/repl.trace")
      assert.matches('"tool":"counter"', text, 1, true)
      type_text(".tools") keys("Enter")
      wait_for("extraTool")
      keys("C-d")
      wait_for("EXITED rc=0")
    end)
  end)

  describe("through a pipe", function()
    -- spawn() -> the REPL with its stdin and stdout on pipes of ours
    local function spawn(target, more)
      local argv = { "/usr/bin/env", H.lua, "bin/devtools-tools", "repl" }
      if target then argv[#argv + 1] = target end
      for _, a in ipairs(more or {}) do argv[#argv + 1] = a end
      local proc, io_ = assert(core.process.spawn(argv, { stdio = true, stderr_size = 1 << 20, env = {
        TMPDIR = dir .. "/tmp", XDG_STATE_HOME = dir .. "/state", DEVTOOLS_TOOLS_BUILD = H.build } }))
      local p = { proc = proc, stdin = io_.stdin, stdout = io_.stdout, out = "" }
      function p.send(s)
        local from = 1
        while from <= #s do
          from = from + assert(core.fd.write(p.stdin, s, from))
          if from <= #s then core.poll({ p.stdin }, { "w" }, 1) end
        end
      end
      function p.wait_out(pattern, timeout)
        local deadline = core.now() + (timeout or 60)
        while not p.out:find(pattern, 1, true) do
          assert(core.now() < deadline, "stdout never showed " .. pattern .. ":\n" .. p.out
            .. "\nstderr:\n" .. proc:stderr())
          core.poll({ p.stdout }, { "r" }, 0.2)
          local s = core.fd.read(p.stdout)
          if s then p.out = p.out .. s end
        end
      end
      function p.wait_err(pattern, timeout)
        assert(H.wait_for(function() return proc:stderr():find(pattern, 1, true) ~= nil end, timeout or 60),
          "stderr never showed " .. pattern .. ":\n" .. proc:stderr())
      end
      function p.close_stdin() core.fd.close(p.stdin) end
      function p.wait_exit(timeout)
        local how, code = proc:wait(core.now() + (timeout or 20))
        -- the rest of stdout
        while true do
          local s = core.fd.read(p.stdout)
          if not s or s == "" then break end
          p.out = p.out .. s
        end
        return how, code
      end
      return p
    end

    it("reads lines and prints plain text: calls, a multi-line chunk, errors, the tools-changed line", function()
      local p = spawn(url())
      local ok, err = pcall(function()
        p.send("getCacheStats{}\nfunction twice(x)\n  return x * 21\nend\ntwice(2)\nnope()\n")
        p.wait_out("\n42\n")
        p.wait_err("attempt to call a nil value (global 'nope')")
        p.send("addExtra{}\n")
        p.wait_err("devtools-tools: tools changed: added extraTool")
        p.send("extraTool{}\ngetState{path = 'x'}\n")
        p.wait_out('"extra"')
        p.wait_err("devtools-tools: invalid_params: Invalid parameters for tool getState")
        -- a navigation: one line once the new document's tools are there
        -- (registered after a request of 400 ms), not the page without
        -- tools between the two documents
        p.send("page:navigate(" .. ("%q"):format(url(2) .. "&late=400") .. ")\n")
        p.wait_err("devtools-tools: tools changed: removed extraTool, legacyStats")
        p.send("getCacheStats{}\n")
        p.wait_out('"misses": 17')
        p.close_stdin()
        local how, code = p.wait_exit(60)
        assert.same({ "exit", 0 }, { how, code })
      end)
      if not ok then p.proc:kill() end
      assert(ok, err)
      assert.matches('"misses": 9', p.out, 1, true)
      assert.not_matches("\27", p.out, 1, true)
      assert.not_matches("\27", p.proc:stderr(), 1, true)
      assert.not_matches("> ", p.out, 1, true)           -- no prompt without a terminal
      local changes = {}
      for l in p.proc:stderr():gmatch("[^\n]+") do
        if l:find("tools changed", 1, true) then changes[#changes + 1] = l end
      end
      assert.same({ "devtools-tools: tools changed: added extraTool",
        "devtools-tools: tools changed: removed extraTool, legacyStats" }, changes)
    end)

    it("--record: the session's calls and navigations become a trace that replays without a difference", function()
      local file = dir .. "/pipe.trace"
      local p = spawn(url(), { "--record", file })
      local ok, err = pcall(function()
        p.send("counter{}\npcall(explode, {})\npage:reload()\ncounter{}\ngetState{path = 'user.name'}\n")
        p.wait_out('"value": "Ada"')
        p.close_stdin()
        local how, code = p.wait_exit(60)
        assert.same({ "exit", 0 }, { how, code })
      end)
      if not ok then p.proc:kill() end
      assert(ok, err)
      local t = require("devtools_tools").trace.read(file)
      local got = {}
      for _, ev in ipairs(t.events) do
        got[#got + 1] = ev.type .. (ev.tool and (" " .. ev.tool) or "") .. (ev.error and (" " .. ev.error.code) or "")
      end
      assert.same({ "call counter", "call explode tool_error", "navigate", "call counter", "call getState", "end" }, got)
      assert.equal(1, t.calls[3].result.count)
      local out, rc = H.sh(("(cd %s && %s %s bin/devtools-tools replay %s 2>/dev/null)"):format(shq(ROOT), env(), H.lua, shq(file)))
      assert.equal(0, rc, out)
      assert.equal("replayed 4 calls and 1 navigation: no differences\n", out)
    end)

    it("SIGINT during a call ends it with status 130, closing the browser", function()
      local p = spawn(url())
      local ok, err = pcall(function()
        p.send("counter{}\n")
        p.wait_out('"count": 1')
        p.send("slow{ms = 60000}\n")
        assert(core.process.kill(p.proc:pid(), "INT"))
        local how, code = p.wait_exit(60)
        assert.same({ "exit", 130 }, { how, code })
      end)
      if not ok then p.proc:kill() end
      assert(ok, err)
      assert.matches("interrupted", p.proc:stderr(), 1, true)
    end)
  end)
end)
