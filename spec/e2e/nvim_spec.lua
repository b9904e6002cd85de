-- The Neovim plugin, end to end: a clean clone of this repository built
-- with `make nvim` and put on the runtimepath of Debian's headless Neovim
-- (`nvim --headless -u NONE`), driving real headless Chromium against the
-- sample app and the spec fixtures. Runs under lua5.4 busted: it only
-- spawns nvim. Each test writes a Lua script that nvim runs; the script
-- records what the plugin showed (notifications, command-line messages,
-- buffers) into a JSON file read back here, and ends with cquit on failure.
-- What the plugin shows is made by present/ (spec/unit/present_spec.lua).
-- The clone holds what is committed: uncommitted edits are not tested here.

local core = require "devtools_tools.core"
local json = require "devtools_tools.base.json"
local H = require "helper"
local app_server = require "support.app_server"

local q = app_server.quote

local function read(path)
  local f = io.open(path, "r")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

local function write(path, s)
  local f = assert(io.open(path, "w"))
  f:write(s)
  f:close()
end

-- A pid that still runs (not a zombie).
-- Runs fn(proc, port) with a Chromium of our own on a debugging port
-- (support.remote_helper), stopped afterwards whatever fn did.
local function with_remote_chromium(fn)
  local remote = require "support.remote_helper"
  local proc, port = remote.chromium()
  local ok, err = pcall(fn, proc, port)
  remote.stop(proc, 2)
  assert(ok, err)
end

local alive = H.alive

-- ---- Neovim, end to end ------------------------------------------------------------------------

-- What every driver script starts with. ARGS comes from the spec; R is
-- written to RESULT at the end.
local PRELUDE = [==[
local CORE_BEFORE = package.loaded["devtools_tools.core"] ~= nil
local dt = require "devtools_tools"
local nv = require "devtools_tools.nvim"
local ARGS = dt.json.decode(%q)
local RESULT = %q
local R = { notes = {}, echoes = {} }
local real_notify = vim.notify
vim.notify = function(msg, level, o)
  R.notes[#R.notes + 1] = { msg = msg, level = level }
  return real_notify(msg, level, o)
end
local real_echo = vim.api.nvim_echo
vim.api.nvim_echo = function(chunks, history, o)
  local t = {}
  for _, c in ipairs(chunks) do t[#t + 1] = c[1] end
  R.echoes[#R.echoes + 1] = table.concat(t)
  return real_echo(chunks, history, o)
end
local function idle(sec)
  local ok = vim.wait((sec or 60) * 1000, function() return not nv.status().busy end, 10)
  assert(ok, "still busy: " .. tostring(nv.status().doing))
end
local function run(cmd, sec) vim.cmd(cmd); idle(sec) end
-- the page at url in a tab of the file's shared browser (where the case is
-- not about launching: a launch and its first page cost 2 s of CPU)
local function use_page(url) run("DevTools connect " .. ARGS.shared); run("DevTools open " .. url) end
local function bufnr(name)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b) == name then return b end
  end
end
local function lines(buf) return vim.api.nvim_buf_get_lines(buf or 0, 0, -1, false) end
local function text(buf) return table.concat(lines(buf), "\n") end
local function result() return dt.json.decode(text(assert(bufnr("devtools://result"), "no result buffer"))) end
local function pid() return tonumber((nv.status().browser or ""):match("pid (%%d+)")) end
local function finish(ok, err)
  if not ok then R.error = tostring(err) end
  local f = assert(io.open(RESULT, "w"))
  f:write(dt.json.encode(R))
  f:close()
  vim.cmd(ok and "qa!" or "cquit 3")
end
]==]

-- A prelude that loads nothing of the plugin (a script that moves the
-- core away first), and watches what Neovim's own vim.notify writes to
-- the command line: R.errs (nvim_err_writeln), R.width (their columns).
local BARE_PRELUDE = [==[
local ARGS = vim.json.decode(%q)
local RESULT = %q
local R = { errs = {}, widths = {} }
local real_err = vim.api.nvim_err_writeln
vim.api.nvim_err_writeln = function(s)
  R.errs[#R.errs + 1] = s
  R.widths[#R.widths + 1] = vim.fn.strdisplaywidth(s)
  return real_err(s)
end
local function finish(ok, err)
  if not ok then R.error = tostring(err) end
  local f = assert(io.open(RESULT, "w"))
  f:write(vim.json.encode(R))
  f:close()
  vim.cmd(ok and "qa!" or "cquit 3")
end
]==]

-- The lazy.nvim spec a text shows: the Lua table after a "-- lazy.nvim" line
-- (README) or "lazy.nvim ...: >" (the help file), loaded as Lua.
local function lazy_spec(doc)
  local at = doc:find("%-%- lazy%.nvim") or doc:find("\nlazy%.nvim[^\n]*>\n")
  assert(at, "no lazy.nvim spec")
  local open = doc:find("{", at, true)
  local depth, i = 0, open
  repeat
    local c = doc:sub(i, i)
    if c == "{" then depth = depth + 1 elseif c == "}" then depth = depth - 1 end
    i = i + 1
  until depth == 0
  local src = doc:sub(open, i - 1)
  return assert(load("return " .. src))(), src
end

describe("the Neovim plugin", function()
  local root, tmp, plug, app, fixtures, shared, seq = nil, nil, nil, nil, nil, nil, 0

  setup(function()
    root = H.sh("pwd"):gsub("%s+$", "")
    tmp = assert(core.fs.mkdtemp("dt-nvim-spec-"))
    plug = tmp .. "/devtools_tools"
    -- A clean clone of what is committed, built the way plugin managers do.
    local out, rc = H.sh(("git clone -q %s %s && make -s -C %s nvim"):format(q(root), q(plug), q(plug)))
    assert(rc == 0, "clone and make nvim failed: " .. out)
    app = assert(app_server.start())
    fixtures = H.start_server()
    shared = H.shared_browser()
  end)

  teardown(function()
    if shared then shared.close() end
    if app then app:stop() end
    if fixtures then fixtures.stop() end
    if tmp then core.fs.rmtree(tmp) end
  end)

  -- Runs body (Lua) in headless nvim with the plugin on the runtimepath;
  -- returns R as the script left it, and nvim's stderr. finish() quits;
  -- a script that dies before it reaches the `cquit 9` after it.
  local function nvim(body, args, timeout, prelude)
    seq = seq + 1
    args = args or {}
    args.shared = shared.endpoint
    local script, res, err = ("%s/script%d.lua"):format(tmp, seq), ("%s/result%d.json"):format(tmp, seq),
      ("%s/stderr%d.txt"):format(tmp, seq)
    write(script, (prelude or PRELUDE):format(json.encode(args or {}), res)
      .. "\nfinish(xpcall(function()\n" .. body .. "\nend, debug.traceback))\n")
    -- What fails before finish() (the prelude, a module that does not load)
    -- is written to the result file too.
    local boot = script .. ".boot.lua"
    write(boot, ("local ok, e = xpcall(dofile, debug.traceback, %q)\n"
      .. "if not ok then local f = io.open(%q, 'w'); f:write(e); f:close(); vim.cmd('cquit 3') end\n")
      :format(script, res .. ".err"))
    local _, rc = H.sh(("cd %s && timeout %d nvim --headless -u NONE -i NONE -n --cmd %s --cmd 'set loadplugins' -c %s -c 'cquit 9' </dev/null 2>%s")
      :format(q(tmp), timeout or 120, q("set rtp^=" .. plug), q("luafile " .. boot), q(err)))
    local raw = read(res)
    local stderr = read(err) or ""
    assert(raw, "the script wrote no result (exit " .. tostring(rc) .. "): " .. (read(res .. ".err") or "") .. stderr)
    shared.close_tabs()
    local R = json.decode(raw)
    assert(R.error == nil, "the script failed: " .. tostring(R.error) .. "\nstderr: " .. stderr)
    assert.equal(0, rc, stderr)
    return R, stderr
  end

  local function notes_text(R)
    local t = {}
    for _, n in ipairs(R.notes) do t[#t + 1] = n.msg end
    return table.concat(t, "\n")
  end

  local function echoed(R, s)
    for _, e in ipairs(R.echoes) do
      if e:find(s, 1, true) then return true end
    end
    return false
  end

  it("installs from a clean clone: make nvim puts the core where Neovim's loader finds it, ignored by git", function()
    assert.truthy(H.exists(plug .. "/lua/devtools_tools/core.so"))
    local out, rc = H.sh(("git -C %s status --porcelain"):format(q(plug)))
    assert.equal(0, rc)
    assert.equal("", out)
    -- make install is the Lua 5.4 library, without the Neovim files
    out, rc = H.sh(("make -s -n -C %s install DESTDIR=/nonexistent"):format(q(plug)))
    assert.equal(0, rc, out)
    assert.truthy(out:find("install -m 755 build/lua5.4/devtools_tools/core.so", 1, true), out)
    assert.truthy(out:find("lua/devtools_tools/init.lua", 1, true), out)
    assert.falsy(out:find("nvim", 1, true), out)
    assert.falsy(out:find("health", 1, true), out)
    local R = nvim([[
      R.command = vim.fn.exists(":DevTools")
      R.cpath_has_plugin = package.cpath:find(ARGS.plug, 1, true) ~= nil
      R.core_loaded_before = CORE_BEFORE
      local core = require "devtools_tools.core"
      R.json = core.json.encode({ a = 1 })
      R.so = vim.api.nvim_get_runtime_file("lua/devtools_tools/core.so", true)
      R.jit = jit and jit.version
    ]], { plug = plug })
    assert.equal(2, R.command)                    -- :DevTools is defined by plugin/
    assert.is_false(R.core_loaded_before)         -- and nothing loads before first use
    assert.is_false(R.cpath_has_plugin)           -- found through the runtimepath alone
    assert.equal('{"a":1}', R.json)
    assert.equal(plug .. "/lua/devtools_tools/core.so", R.so[1])
    assert.truthy(R.jit:find("LuaJIT", 1, true))
  end)

  it("launch, tools, call, eval, open and close against the sample app", function()
    local R = nvim([[
      run("DevTools launch " .. ARGS.url)
      R.status = nv.status()
      R.pid = pid()
      -- The app mounts its support widget (a cross-origin iframe with tools
      -- of its own) once its session has loaded: list again until it is there.
      for _ = 1, 50 do
        run("DevTools list")
        if lines()[1]:find("4 groups", 1, true) then break end
        vim.wait(100)
      end
      R.tools_name = vim.api.nvim_buf_get_name(0)
      R.tools = lines()
      -- colours: syntax/devtools_tools.vim
      vim.cmd("syntax on")
      vim.bo.filetype = "devtools_tools"
      R.syn = {}
      for i, l in ipairs(R.tools) do
        local col = (l:find("%S") or 1)
        if l:match("^  queryDatabaseTable") or l:match("^app%-debug") or i == 1 then
          R.syn[#R.syn + 1] = vim.fn.synIDattr(vim.fn.synID(i, col, 1), "name")
        end
      end
      run('DevTools call queryDatabaseTable {"tableName": "orders", "limit": 2}')
      R.rows = result().rows
      R.result_ft = vim.bo[bufnr("devtools://result")].filetype
      R.result_bufs = 0
      for _, b in ipairs(vim.api.nvim_list_bufs()) do
        if vim.api.nvim_buf_get_name(b) == "devtools://result" then R.result_bufs = R.result_bufs + 1 end
      end
      run("DevTools eval document.title + '|' + (1 || 2)")
      R.title = result()
      run("DevTools open " .. ARGS.fixture)
      R.opened = nv.status().url
      run("DevTools call add {\"a\": 2, \"b\": 40}")
      R.sum = result()
      local buf = bufnr("devtools://result")
      R.same_result_buf = buf ~= nil and #vim.tbl_filter(function(b)
        return vim.api.nvim_buf_get_name(b) == "devtools://result" end, vim.api.nvim_list_bufs()) == 1
      run("DevTools close")
      R.closed = nv.status()
    ]], { url = app.url, fixture = fixtures.url("/tools.html") })
    -- progress in the command line for the long steps
    assert.truthy(echoed(R, "launching Chromium"), table.concat(R.echoes, "\n"))
    assert.truthy(echoed(R, "opening " .. app.url))
    assert.truthy(echoed(R, "discovering tools"))
    assert.truthy(echoed(R, "opening " .. fixtures.url("/tools.html")))
    assert.equal(app.url, R.status.url)
    assert.truthy(R.pid)
    -- the tool list: groups, their frames (the widget is a cross-origin iframe), tools, descriptions
    assert.equal("devtools://tools", R.tools_name)
    local all = table.concat(R.tools, "\n")
    local port = app.url:match(":(%d+)/")
    for _, s in ipairs({ "app-debug  [frame " .. app.url .. "]", "sales-dashboard", "shop  [frame",
      "support-widget  [frame http://localhost:" .. port .. "/widget.html",
      "  queryDatabaseTable(tableName*, afterId, limit)", "  reassignLead(leadId*, repId*)", "  getSupportTickets(status)",
      "Reads rows from the app's database", "4 groups, 13 tools" }) do
      assert.truthy(all:find(s, 1, true), "tool list lacks " .. s .. ":\n" .. all)
    end
    -- the call's rows are the database's
    local out = app_server.sqlite(app.db, "select id, total_cents from orders order by id limit 2")
    local want = {}
    for id, total in out:gmatch("(%d+)|(%d+)") do want[#want + 1] = { id = tonumber(id), total = tonumber(total) } end
    assert.equal(2, #want)
    assert.equal(2, #R.rows)
    for i, w in ipairs(want) do
      assert.equal(w.id, R.rows[i].id)
      assert.equal(w.total, R.rows[i].total_cents)
    end
    assert.same({ "devtoolsToolsHeader", "devtoolsToolsGroup", "devtoolsToolsTool" }, R.syn)
    assert.equal("json", R.result_ft)
    assert.equal(1, R.result_bufs)
    assert.truthy(R.title:find("|1$"), R.title)   -- `|` belongs to the expression
    assert.equal(fixtures.url("/tools.html"), R.opened)
    assert.equal(42, R.sum)
    assert.is_true(R.same_result_buf)
    assert.is_nil(R.closed.browser)
    assert.is_nil(R.closed.url)
    assert.equal("", notes_text(R))               -- no error on the way
    assert.is_false(alive(R.pid))                 -- close ended Chromium
  end)

  it("an idle editor lets a page go on: a frame mounted after load is in the first :DevTools list", function()
    -- The page mounts a cross-origin iframe with tools 2 s after load; the
    -- editor runs no command for 4 s at least (vim.wait: its loop turns),
    -- longer only while the frame's script has not told the beacon it ran.
    local file = os.tmpname()
    local proc, port = H.start_port_program({ "/usr/bin/lua5.4", "spec/support/beacon.lua", file })
    local ok, R = pcall(nvim, [[
      run("DevTools launch " .. ARGS.url)
      local t0 = vim.loop.hrtime()
      local function ran()
        local f = io.open(ARGS.beacon)
        local s = f and f:read("*a") or ""
        if f then f:close() end
        return s:find("/ran", 1, true) ~= nil
      end
      R.ran = vim.wait(20000, function() return (vim.loop.hrtime() - t0) / 1e9 >= 4 and ran() end, 50)
      run("DevTools list")
      R.tools = lines()
      run("DevTools close")
    ]], { url = fixtures.url("/live_frame.html?beacon=" .. port), beacon = file })
    proc:close(0)
    os.remove(file)
    assert(ok, R)
    assert.is_true(R.ran, "the frame's script did not run while the editor was idle: its target was left paused")
    local all = table.concat(R.tools, "\n")
    assert.truthy(all:find("2 groups", 1, true), all)
    assert.truthy(all:find("inner  [frame", 1, true), all)
  end)

  it("the argument buffer: <CR> on a tool, a JSON skeleton, :w calls it; a schema error lists each path", function()
    local R = nvim([[
      nv.setup({ keymaps = { open_tool = "<CR>" }, timeout = 20 })
      R.bad_setup = select(2, pcall(nv.setup, { bogus = 1 }))
      R.bad_values = {}
      for _, o in ipairs({ { timeout = math.huge }, { timeout = 0 }, { executable = "" }, { connect = "" } }) do
        local ok, e = pcall(nv.setup, o)
        R.bad_values[#R.bad_values + 1] = ok and "accepted" or (e.code .. ": " .. e.message)
      end
      nv.setup({ keymaps = { open_tool = "<CR>" }, timeout = 20 })
      local copy = nv.options()                     -- a copy: changing it changes nothing
      copy.keymaps.open_tool, copy.timeout = "X", 1
      R.options_after = { nv.options().keymaps.open_tool, nv.options().timeout }
      use_page(ARGS.url)
      run("DevTools list")
      local tools = vim.api.nvim_get_current_buf()
      local function open(name)
        vim.api.nvim_set_current_buf(tools)
        for i, l in ipairs(lines(tools)) do
          if l:match("^  " .. name .. "%(") then
            vim.api.nvim_win_set_cursor(0, { i, 0 })
            vim.cmd("execute \"normal \\<CR>\"")
            return vim.api.nvim_get_current_buf()
          end
        end
        error("no line for " .. name)
      end
      local b = open("queryDatabaseTable")
      R.name = vim.api.nvim_buf_get_name(b)
      R.ft, R.bt = vim.bo[b].filetype, vim.bo[b].buftype
      R.skeleton = text(b)
      R.skeleton_modified = vim.bo[b].modified
      R.reassign = text(open("reassignLead"))
      R.cart = text(open("addToCart"))
      -- edit and write: the tool is called with the buffer's JSON; a new
      -- discovery gives new Tool objects, and the same buffer
      run("DevTools list")
      tools = vim.api.nvim_get_current_buf()
      b = open("queryDatabaseTable")
      R.reopened_same = b == bufnr(R.name)
      vim.api.nvim_buf_set_lines(b, 0, -1, false, { '{"tableName": "orders",', '"limit": 3}' })
      vim.cmd("write")
      idle()
      R.rows = #result().rows
      R.after_write_modified = vim.bo[b].modified
      -- a schema error: nothing is sent, every path is listed, the buffer stays modified
      vim.api.nvim_set_current_buf(b)
      vim.api.nvim_buf_set_lines(b, 0, -1, false, { '{"tableName": "nope", "limit": 0, "extra": 1}' })
      local before = #R.notes
      vim.cmd("write")
      idle()
      R.schema_notes = { unpack(R.notes, before + 1) }
      R.after_error_modified = vim.bo[b].modified
      -- not JSON at all
      vim.api.nvim_buf_set_lines(b, 0, -1, false, { '{"tableName": ' })
      before = #R.notes
      pcall(vim.cmd, "write")           -- reported at once: the error aborts :write
      idle()
      R.json_notes = { unpack(R.notes, before + 1) }
      -- :w other.json writes that file and calls nothing; so does :saveas,
      -- after which the buffer is that file's
      local file, file2 = vim.fn.tempname() .. ".json", vim.fn.tempname() .. ".json"
      vim.api.nvim_buf_set_lines(b, 0, -1, false, { '{"tableName": "orders", "limit": 1}' })
      vim.cmd("write " .. file)
      idle()
      R.file = vim.fn.readfile(file)
      R.rows_after_file = #result().rows
      R.still_args = vim.bo[b].buftype
      vim.api.nvim_set_current_buf(b)
      vim.cmd("saveas " .. file2)
      idle()
      vim.api.nvim_buf_set_lines(b, 0, -1, false, { '{"limit": 2}' })
      vim.cmd("write")
      idle()
      R.file2 = vim.fn.readfile(file2)
      R.rows_after_saveas = #result().rows
      R.saveas_bt, R.saveas_name = vim.bo[b].buftype, vim.api.nvim_buf_get_name(b)
      R.file2_name = file2
    ]], { url = app.url })
    assert.same({ '{"tableName": "orders", "limit": 1}' }, R.file)
    assert.equal(3, R.rows_after_file)
    assert.equal("acwrite", R.still_args)
    assert.same({ '{"limit": 2}' }, R.file2)
    assert.equal(3, R.rows_after_saveas)
    assert.equal("", R.saveas_bt)
    assert.equal(R.file2_name, R.saveas_name)
    assert.same({ "<CR>", 20 }, R.options_after)
    assert.equal("bad_argument", R.bad_setup.code)
    assert.same({
      "bad_argument: setup: option timeout must be a positive, finite number of seconds",
      "bad_argument: setup: option timeout must be a positive, finite number of seconds",
      "bad_argument: setup: option executable must not be empty",
      "bad_argument: setup: option connect must not be empty" }, R.bad_values)
    assert.equal("devtools://call/app-debug/queryDatabaseTable", R.name)
    assert.equal("json", R.ft)
    assert.equal("acwrite", R.bt)
    assert.same({ tableName = "feature_flags", limit = 5 }, json.decode((R.skeleton:gsub("//[^\n]*\n", ""))))
    assert.truthy(R.skeleton:find('\n  "tableName": "feature_flags",\n  "limit": 5\n', 1, true), R.skeleton)
    assert.is_false(R.skeleton_modified)
    assert.same({ leadId = 1, repId = 1 }, json.decode(R.reassign))
    assert.same({ productId = 1 }, json.decode(R.cart))
    assert.is_true(R.reopened_same)
    assert.equal(3, R.rows)
    assert.is_false(R.after_write_modified)
    assert.equal(1, #R.schema_notes)
    local msg = R.schema_notes[1].msg
    assert.equal(4, R.schema_notes[1].level)      -- vim.log.levels.ERROR
    assert.truthy(msg:find("^devtools_tools: invalid_params: Invalid parameters for tool queryDatabaseTable\n"), msg)
    -- each path with the value received, what was allowed, the extra property's name
    for _, line in ipairs({ '\n  /tableName: must be equal to one of the allowed values (got "nope"; allowed: ["',
      "\n  /limit: must be >= 1 (got 0)", "\n  /: must NOT have additional properties ('extra')" }) do
      assert.truthy(msg:find(line, 1, true), "missing " .. line .. " in:\n" .. msg)
    end
    assert.is_true(R.after_error_modified)
    assert.equal(1, #R.json_notes)
    assert.truthy(R.json_notes[1].msg:find("^devtools_tools: bad_argument: the argument buffer is not valid JSON"),
      R.json_notes[1].msg)
  end)

  it("a schema that $refs its root from three required properties opens its argument buffer at once, cut", function()
    local R = nvim([[
      use_page(ARGS.url)
      run("DevTools list")
      local tools = vim.api.nvim_get_current_buf()
      for i, l in ipairs(lines(tools)) do
        if l:match("^  skeleton_bomb%(") then R.listed = l vim.api.nvim_win_set_cursor(0, { i, 0 }) break end
      end
      local t0 = vim.loop.hrtime()
      vim.cmd("execute \"normal \\<CR>\"")
      R.ms = (vim.loop.hrtime() - t0) / 1e6
      R.name = vim.api.nvim_buf_get_name(0)
      R.first = lines()[1]
      R.size = #text()
      -- the comment line is no argument: :w sends the rest (the page's schema refuses it)
      vim.cmd("write")
      idle()
    ]], { url = fixtures.url("/frontends.html") }, 60)
    assert.equal("  skeleton_bomb(a*, b*, c*)", R.listed)
    assert.matches("/skeleton_bomb$", R.name)
    assert.is_true(R.ms < 2000, R.ms .. " ms")
    assert.matches("^// cut: ", R.first)
    assert.is_true(R.size < 200000, R.size .. " bytes")
    local notes = notes_text(R)
    assert.falsy(notes:find("not valid JSON", 1, true), notes)
  end)

  it("a tool that throws a 20 MB message: a short notification, the whole error in devtools://error", function()
    local R = nvim([[
      use_page(ARGS.url)
      -- (20 MB through the protocol and JSON: a loaded machine, a second
      -- make test beside this one, took more than the default 30 s)
      nv.setup({ timeout = 150 })
      run("DevTools call boom", 160)
      -- the notification is the only cost: the buffer is written when shown
      local b = bufnr("devtools://error")
      R.before_shown = b and #text(b)
      vim.cmd("buffer devtools://error")
      R.whole = b and #text(b) or 0
      R.has_end = b and text(b):find(("y"):rep(100) .. "END", 1, true) ~= nil
    ]], { url = fixtures.url("/frontends.html") }, 200)
    assert.equal(1, #R.notes)
    local msg = R.notes[1].msg
    assert.is_true(#msg < 4096, #msg .. " bytes")
    assert.matches("^devtools_tools: tool_error: y+%.%.%. %(%d+ more bytes%)\n%(the whole error: :buffer devtools://error%)$", msg)
    assert.equal(0, R.before_shown)
    assert.is_true(R.whole > 20 * 1024 * 1024)
    assert.is_true(R.has_end)
  end)

  it("reports errors with their code, completes subcommands and tool names", function()
    local R = nvim([[
      R.no_page = pcall(vim.cmd, "DevTools tools")
      R.complete_sub = vim.fn.getcompletion("DevTools c", "cmdline")
      R.complete_all = nv.complete("", "DevTools ")
      -- a url that does not load: the browser and its blank page stay
      run("DevTools launch http://127.0.0.1:9/nothing")
      R.failed_launch = nv.status()
      run("DevTools launch " .. ARGS.fixture)
      R.complete_tool = vim.fn.getcompletion("DevTools call sl", "cmdline")
      R.complete_after = nv.complete("", "DevTools call add ")
      run("DevTools call nope")
      run("DevTools call fail {\"kind\": \"error\"}")
      run("DevTools eval (() => { throw new Error('boom') })()")
      pcall(vim.cmd, "DevTools call add {\"a\": 1")
      pcall(vim.cmd, "DevTools frobnicate")
      -- the timeout option is the deadline of a whole command
      nv.setup({ timeout = 1 })
      run("DevTools call slowEcho {\"ms\": 5000}")
      nv.setup({})
      -- groups the page got wrong are listed as warnings
      run("DevTools open " .. ARGS.invalid)
      run("DevTools list")
      R.invalid_list = lines()
      R.not_busy = pcall(vim.cmd, "DevTools cancel")
    ]], { fixture = fixtures.url("/tools.html"), invalid = fixtures.url("/cases.html?case=invalid") })
    assert.same({ "connect", "close", "call", "cancel" }, R.complete_sub)
    local list = table.concat(R.invalid_list, "\n")
    assert.truthy(list:find("\nwarning: Invalid toolGroup", 1, true), list)
    assert.same({ "launch", "connect", "open", "close", "tools", "list", "call", "eval", "record", "replay",
      "cancel" }, R.complete_all)
    assert.same({ "slowEcho" }, R.complete_tool)
    assert.equal("about:blank", R.failed_launch.url)
    assert.truthy(R.failed_launch.browser)
    assert.same({}, R.complete_after)
    local notes = notes_text(R)
    for _, s in ipairs({
      "devtools_tools: no page: :DevTools launch [url] or :DevTools connect [endpoint] first",
      "devtools_tools: tool_not_found: Tool nope not found",
      "devtools_tools: tool_error: ",
      "devtools_tools: js_error: Error: boom",
      "devtools_tools: bad_argument: call add: the arguments are not valid JSON",
      "devtools_tools: unknown subcommand 'frobnicate'\n  :DevTools launch [url]",
      "devtools_tools: nothing is running",
      "devtools_tools: timeout: ",
      "devtools_tools: protocol_error: navigate: http://127.0.0.1:9/nothing: net::ERR_",
    }) do
      assert.truthy(notes:find(s, 1, true), "missing " .. s .. " in:\n" .. notes)
    end
  end)

  it("calls and completes tool names that hold a space (written with a backslash) or are not ASCII", function()
    local R = nvim([==[
      use_page(ARGS.url)
      R.complete_wi = vim.fn.getcompletion("DevTools call wi", "cmdline")
      R.complete_escaped = vim.fn.getcompletion("DevTools call with\\ s", "cmdline")
      R.complete_wide = vim.fn.getcompletion("DevTools call 日", "cmdline")
      R.complete_after = nv.complete("", "DevTools call with\\ space ")
      run([[DevTools call with\ space {"x": 1}]])
      R.spaced = result()
      run("DevTools call with {}")
      R.first_word = result()
      run([[DevTools call 日本語 {"数": 2}]])
      R.wide = result()
    ]==], { url = fixtures.url("/unicode.html") })
    assert.equal("", notes_text(R))
    assert.same({ "with\\ space", "with" }, R.complete_wi)
    assert.same({ "with\\ space" }, R.complete_escaped)
    assert.same({ "日本語" }, R.complete_wide)
    assert.same({}, R.complete_after)
    assert.same({ called = "with space", args = { x = 1 } }, R.spaced)
    assert.same({ called = "with" }, R.first_word)
    assert.same({ ["数"] = 2 }, R.wide)
  end)

  it("connects to a running browser and leaves it running on close", function()
    with_remote_chromium(function(proc, port)
      local R = nvim([[
        run("DevTools connect http://127.0.0.1:" .. ARGS.port)
        R.status = nv.status()
        run("DevTools open " .. ARGS.fixture)
        run("DevTools call add {\"a\": 20, \"b\": 22}")
        R.sum = result()
        run("DevTools close")
        R.closed = nv.status()
      ]], { port = port, fixture = fixtures.url("/tools.html") })
      assert.equal("", notes_text(R))
      assert.truthy(echoed(R, "connecting to http://127.0.0.1:" .. port))
      assert.truthy(R.status.browser:find("connected to http://127.0.0.1:" .. port, 1, true), R.status.browser)
      assert.equal(42, R.sum)
      assert.is_nil(R.closed.browser)
      assert.is_true(proc:running())            -- someone else's browser keeps running
    end)
  end)

  it(":DevTools record writes the calls; :DevTools replay shows the differences in a buffer and the quickfix list", function()
    local file = tmp .. "/nvim.trace"
    local R = nvim([[
      run("DevTools record stop")                   -- not recording: a warning
      use_page(ARGS.v1)
      run("DevTools record " .. ARGS.file)
      R.recording = nv.status()
      run("DevTools call getCacheStats")
      run("DevTools call explode")                  -- fails at v=1: recorded as its error
      run('DevTools call getState {"path": "cart.items", "depth": 5}')
      run("DevTools call legacyStats")
      run("DevTools record stop")
      run("DevTools call counter")                  -- after the stop: not in the trace
      -- against another version: the differences, one quickfix entry per call that differs
      run("DevTools replay " .. ARGS.file .. " " .. ARGS.v2)
      R.replay_name = vim.api.nvim_buf_get_name(0)
      R.replay = lines()
      R.qf = {}
      for _, e in ipairs(vim.fn.getqflist()) do
        R.qf[#R.qf + 1] = { file = vim.api.nvim_buf_get_name(e.bufnr), lnum = e.lnum, text = e.text }
      end
      R.qf_title = vim.fn.getqflist({ title = 1 }).title
      vim.cmd("cfirst")
      R.jumped = { vim.api.nvim_buf_get_name(0), vim.api.nvim_win_get_cursor(0)[1] }
      -- against the recorded version: none, and an empty list
      run("DevTools replay " .. ARGS.file)
      R.same = lines()
      R.qf_same = #vim.fn.getqflist()
      run("DevTools close")
    ]], { v1 = fixtures.url("/trace.html"), v2 = fixtures.url("/trace.html?v=2"), file = file })
    local notes = notes_text(R)
    assert.truthy(notes:find("not recording", 1, true), notes)
    assert.truthy(notes:find("boom", 1, true), notes)                  -- explode's own failure, told as always
    assert.truthy(echoed(R, "recording to " .. file), table.concat(R.echoes, "\n"))
    assert.truthy(echoed(R, "stopped recording: 4 calls in " .. file), table.concat(R.echoes, "\n"))
    local t = require("devtools_tools").trace.read(file)
    local tools = {}
    for _, c in ipairs(t.calls) do tools[#tools + 1] = c.tool end
    assert.same({ "getCacheStats", "explode", "getState", "legacyStats" }, tools)
    assert.equal("devtools://replay", R.replay_name)
    local all = table.concat(R.replay, "\n")
    for _, l in ipairs({ "call 1 getCacheStats: /misses: 9 -> 17", "call 1 getCacheStats: /entries/0/ts: 1000 -> 2000",
      'call 2 explode: a result where there was an error (tool_error: boom): {"fixed":true}',
      "call 4 legacyStats: missing tool", "replayed 4 calls: 5 differences in 3 calls" }) do
      assert.truthy(all:find(l, 1, true), "the replay buffer lacks " .. l .. ":\n" .. all)
    end
    -- one entry per differing call, at its line of the trace (the header is line 1)
    assert.equal(3, #R.qf)
    assert.same({ file, file, file }, { R.qf[1].file, R.qf[2].file, R.qf[3].file })
    assert.same({ t.calls[1].line, t.calls[2].line, t.calls[4].line }, { R.qf[1].lnum, R.qf[2].lnum, R.qf[3].lnum })
    assert.truthy(R.qf[1].text:find("/misses: 9 -> 17", 1, true), R.qf[1].text)
    assert.truthy(R.qf[1].text:find("/entries/1/ts", 1, true), R.qf[1].text)
    assert.truthy(R.qf[3].text:find("call 4 legacyStats: missing tool", 1, true), R.qf[3].text)
    assert.truthy(R.qf_title:find("nvim.trace", 1, true), R.qf_title)
    assert.same({ file, t.calls[1].line }, R.jumped)
    assert.truthy(table.concat(R.same, "\n"):find("replayed 4 calls: no differences", 1, true))
    assert.equal(0, R.qf_same)
  end)

  it(":DevTools connect without an endpoint uses the background browser, unless setup{} names one", function()
    local state = tmp .. "/state"
    local function cli(args)
      return H.sh(("cd %s && XDG_STATE_HOME=%s TMPDIR=%s DEVTOOLS_TOOLS_BUILD=%s %s bin/devtools-tools %s")
        :format(q(root), q(state), q(tmp), H.build, H.lua, args))
    end
    local out, rc = cli("browser start")
    assert.equal(0, rc, out)
    -- (the background browser is private: its endpoint is its holder's socket)
    local endpoint = out:match("^(unix:/%S+)\n")
    assert.truthy(endpoint, out)
    local ok, err = pcall(function()
      with_remote_chromium(function(_, port)
        local R = nvim([[
          vim.env.XDG_STATE_HOME = ARGS.state
          run("DevTools connect")
          R.background = nv.status().browser
          run("DevTools close")
          nv.setup({ connect = "http://127.0.0.1:" .. ARGS.port })
          run("DevTools connect")
          R.named = nv.status().browser
          run("DevTools close")
        ]], { state = state, port = port })
        assert.equal("", notes_text(R))
        assert.truthy(R.background and R.background:find(endpoint, 1, true), R.background)
        assert.truthy(R.named and R.named:find("connected to http://127.0.0.1:" .. port, 1, true), R.named)
      end)
    end)
    out, rc = cli("browser stop")
    assert(ok, err)
    assert.equal(0, rc, out)
  end)

  it("argument buffers reuse one window: a second tool's replaces the first's there", function()
    local R = nvim([[
      use_page(ARGS.url)
      run("DevTools list")
      local tools = vim.api.nvim_get_current_buf()
      local function open(name)
        vim.api.nvim_set_current_win(vim.fn.bufwinid(tools))
        for i, l in ipairs(lines(tools)) do
          if l:match("^  " .. name .. "%(") then
            vim.api.nvim_win_set_cursor(0, { i, 0 })
            nv.open_tool_under_cursor()
            return vim.api.nvim_get_current_buf(), vim.api.nvim_get_current_win()
          end
        end
        error("no line for " .. name)
      end
      R.wins0 = #vim.api.nvim_list_wins()
      local b1, w1 = open("add")
      R.wins1 = #vim.api.nvim_list_wins()
      vim.api.nvim_buf_set_lines(b1, 0, -1, false, { '{"a": 1, "b": 2}' })
      local b2, w2 = open("echo")
      R.wins2 = #vim.api.nvim_list_wins()
      R.same_win = w1 == w2
      R.differ = b1 ~= b2
      local b3, w3 = open("add")                    -- back: the same buffer, what was typed kept, same window
      R.wins3 = #vim.api.nvim_list_wins()
      R.back = b3 == b1 and w3 == w1
      R.kept = text(b3)
      run("DevTools close")
    ]], { url = fixtures.url("/tools.html") })
    assert.equal("", notes_text(R))
    assert.equal(R.wins0 + 1, R.wins1)
    assert.equal(R.wins1, R.wins2)
    assert.equal(R.wins1, R.wins3)
    assert.is_true(R.same_win)
    assert.is_true(R.differ)
    assert.is_true(R.back)
    assert.equal('{"a": 1, "b": 2}', R.kept)
  end)

  it("a connect that fails leaves the browser in use as it was", function()
    local R = nvim([[
      run("DevTools launch " .. ARGS.fixture)
      R.before = nv.status()
      run("DevTools connect http://127.0.0.1:9")      -- nothing listens there
      run("DevTools connect not-an-endpoint")
      run("DevTools connect http://192.0.2.1:9222")   -- not loopback: refused
      R.after = nv.status()
      run("DevTools call add {\"a\": 20, \"b\": 22}")
      R.sum = result()
      R.alive = vim.loop.kill(pid(), 0) == 0
      run("DevTools close")
    ]], { fixture = fixtures.url("/tools.html") })
    local notes = notes_text(R)
    assert.truthy(notes:find("devtools_tools: connect_failed: ", 1, true), notes)
    assert.truthy(notes:find("devtools_tools: bad_argument: connect: ", 1, true), notes)
    -- (without a hint at allow_remote, an option of the Lua API that :DevTools has not)
    assert.truthy(notes:find("devtools_tools: connect_failed: connect: refusing non-loopback host 192.0.2.1 ("
      .. "the DevTools protocol gives full control of the browser; :DevTools connect accepts loopback"
      .. " hosts only: 127.0.0.1, ::1, localhost)", 1, true), notes)
    assert.equal(R.before.browser, R.after.browser)
    assert.equal(R.before.url, R.after.url)
    assert.equal(42, R.sum)
    assert.is_true(R.alive)
  end)

  -- A browser killed while no command runs: nothing reads its connection,
  -- so status() showed it in use until :DevTools close.
  it("forgets a browser that died while idle, says so, and launches anew", function()
    with_remote_chromium(function(proc, port)
      local R = nvim([[
        run("DevTools launch " .. ARGS.fixture)
        R.pid = pid()
        local f = assert(io.open("/proc/" .. R.pid .. "/cmdline"))
        R.profile = f:read("*a"):match("%-%-user%-data%-dir=([^%z]+)")
        f:close()
        vim.loop.kill(R.pid, "sigkill")
        -- status() notices once Chromium has gone (all its threads: it is
        -- a zombie a little before); before the fix, never
        R.noticed = vim.wait(60000, function() return nv.status().browser == nil end, 10)
        R.after_kill = nv.status()
        vim.wait(1000, function() return #R.notes > 0 end, 10)   -- (the notice is scheduled)
        R.notes_after_kill = #R.notes
        -- and closed: reaped, its profile removed (in the background)
        R.profile_removed = vim.wait(60000, function() return vim.loop.fs_stat(R.profile) == nil end, 10)
        run("DevTools open " .. ARGS.fixture)       -- no browser: launches one
        R.relaunched = pid()
        run("DevTools call add {\"a\": 20, \"b\": 22}")
        R.sum = select(2, pcall(result))
        run("DevTools close")
        -- a connected browser that goes away
        run("DevTools connect http://127.0.0.1:" .. ARGS.port)
        R.connected = nv.status()
        vim.loop.kill(ARGS.remote_pid, "sigkill")
        R.remote_noticed = vim.wait(60000, function() return nv.status().browser == nil end, 10)
        vim.wait(1000, function() return #R.notes > R.notes_after_kill end, 10)
      ]], { fixture = fixtures.url("/tools.html"), port = port, remote_pid = proc:pid() })
      assert.truthy(R.pid)
      assert.is_true(R.noticed)
      assert.is_nil(R.after_kill.browser)
      assert.is_nil(R.after_kill.url)
      assert.is_false(R.after_kill.busy)
      assert.equal(1, R.notes_after_kill)
      assert.equal(3, R.notes[1].level)            -- vim.log.levels.WARN
      assert.truthy(R.notes[1].msg:find("^devtools_tools: the browser is gone %(.+%); :DevTools launch or "
        .. ":DevTools connect starts another$"), R.notes[1].msg)
      assert.truthy(R.relaunched)
      assert.are_not.equal(R.pid, R.relaunched)
      assert.equal(42, R.sum)
      assert.truthy(R.connected.browser:find("connected to http://127.0.0.1:" .. port, 1, true), R.connected.browser)
      assert.is_true(R.remote_noticed)
      assert.equal(2, #R.notes, notes_text(R))
      assert.truthy(R.notes[2].msg:find("^devtools_tools: the browser is gone %("), R.notes[2].msg)
      assert.is_true(R.profile_removed, R.profile)
    end)
  end)

  it("quitting the editor ends the browser it launched and removes its profile", function()
    local R = nvim([[
      run("DevTools launch " .. ARGS.fixture)
      R.pid = pid()
      vim.cmd("DevTools call never")        -- quit while a call is running
      R.busy = nv.status().busy
      local f = assert(io.open("/proc/" .. R.pid .. "/cmdline"))
      R.profile = f:read("*a"):match("%-%-user%-data%-dir=([^%z]+)")
      f:close()
      R.profile_existed = vim.loop.fs_stat(R.profile) ~= nil
    ]], { fixture = fixtures.url("/tools.html") })
    assert.is_true(R.busy)
    assert.truthy(R.pid)
    assert.is_true(R.profile_existed)
    assert.truthy(H.wait_for(function() return not alive(R.pid) end, H.LONG))
    assert.falsy(H.exists(R.profile), "the temporary profile is left behind: " .. R.profile)
  end);

  it("keeps the editor's timer ticking during a 2 s call, and cancels", function()
    local R = nvim([[
      run("DevTools launch " .. ARGS.fixture)
      local ticks = 0
      local timer = vim.loop.new_timer()
      timer:start(50, 50, function() ticks = ticks + 1 end)
      vim.cmd('DevTools call slowEcho {"ms": 2000}')
      R.busy = nv.status().busy
      idle()
      timer:stop()
      timer:close()
      R.ticks, R.result = ticks, result()
      vim.cmd("DevTools call never")
      R.busy2 = nv.status().busy
      R.refused = pcall(vim.cmd, "DevTools eval 1")
      vim.cmd("DevTools cancel")
      idle(10)
      run("DevTools eval 6 * 7")
      R.after_cancel = result()
      -- close while a call is running: the call is cancelled, then the browser closed
      R.pid = pid()
      vim.cmd("DevTools call never")
      vim.cmd("DevTools close")
      idle(20)
      R.closed = nv.status()
    ]], { fixture = fixtures.url("/tools.html") })
    assert.is_true(R.busy)                        -- :DevTools call returned at once
    assert.truthy(R.ticks >= 25, "the timer ticked " .. R.ticks .. " times")
    assert.same({ ms = 2000 }, R.result)
    assert.is_true(R.busy2)
    local notes = notes_text(R)
    assert.truthy(notes:find("devtools_tools: busy (calling eval", 1, true) or notes:find("devtools_tools: busy (", 1, true), notes)
    assert.truthy(notes:find("devtools_tools: cancelled: ", 1, true), notes)
    assert.equal(42, R.after_cancel)
    assert.is_nil(R.closed.browser)
    assert.is_false(R.closed.busy)
    assert.truthy(H.wait_for(function() return not alive(R.pid) end, H.LONG))
    local cancels = select(2, notes:gsub("devtools_tools: cancelled: ", ""))
    assert.equal(2, cancels)
  end)

  -- vim.wait inside a loop callback aborts Neovim 0.7 (SIGABRT): the
  -- editor went with a task:wait in another task's on_done.
  it("task:wait in a loop callback (on_done) is refused; the editor stays up", function()
    local R = nvim([[
      dt.use_loop(vim.loop)
      local inner = dt.async(function() dt.sleep(0.05); return 7 end)
      local seen
      dt.async(function() return 1 end, function()
        local ok, e = pcall(inner.wait, inner, 5)
        seen = { ok = ok, code = dt.is_error(e) and e.code or tostring(e) }
      end)
      assert(vim.wait(5000, function() return seen ~= nil end, 10), "on_done never ran")
      R.seen = seen
      R.inner = inner:wait(5)                      -- from the main loop, as before
    ]])
    assert.same({ ok = false, code = "bad_argument" }, R.seen)
    assert.equal(7, R.inner)
  end)

  it("cancelling a launch reports cancelled and leaves no browser", function()
    local R = nvim([[
      vim.cmd("DevTools launch")
      vim.cmd("DevTools cancel")
      idle()
      R.status = nv.status()
    ]])
    local notes = notes_text(R)
    assert.truthy(notes:find("^devtools_tools: cancelled: "), notes)
    assert.falsy(notes:find("launch_failed", 1, true), notes)
    assert.is_nil(R.status.browser)
  end)

  -- issue 34.8: without the core, :DevTools launch printed require's
  -- 20-line traceback
  it("without the built core: one line that says make nvim, as :checkhealth does; the next command after the build works", function()
    local so = plug .. "/lua/devtools_tools/core.so"
    local ok, err = pcall(function()
      local R = nvim([[
        assert(os.rename(ARGS.so, ARGS.so .. ".away"))
        local ok, e = pcall(function()
          local nv = require "devtools_tools.nvim"
          -- lazy.nvim calls setup when Neovim starts: it works without the core
          R.setup = nv.setup({ timeout = 7 }) == nv
          R.echospace = vim.v.echospace
          pcall(vim.cmd, "DevTools launch")     -- (an error message inside :command raises there)
          R.launch = R.errs
          R.launch_widths = R.widths
          R.errs, R.widths = {}, {}
          R.complete = vim.fn.getcompletion("DevTools ", "cmdline")
          R.statusline = nv.statusline()
          vim.cmd("checkhealth devtools_tools")
          R.health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
        end)
        assert(os.rename(ARGS.so .. ".away", ARGS.so))
        assert(ok, e)
        -- built now: the next command loads the library, with the options given
        local nv = require "devtools_tools.nvim"
        vim.cmd("DevTools launch")
        assert(vim.wait(60000, function() return not nv.status().busy end, 10))
        R.after = nv.status()
        R.timeout = nv.options().timeout
        vim.cmd("DevTools close")
        assert(vim.wait(20000, function() return not nv.status().busy end, 10))
      ]], { so = so }, nil, BARE_PRELUDE)
      assert.is_true(R.setup)
      assert.equal(1, #R.launch, table.concat(R.launch, "\n"))
      local line = R.launch[1]
      assert.falsy(line:find("\n", 1, true), line)
      assert.falsy(line:find("traceback", 1, true), line)
      assert.truthy(line:find("^devtools_tools: .*run `make nvim`"), line)
      assert.is_true(R.launch_widths[1] <= R.echospace, line)   -- no "Press ENTER"
      assert.same({}, R.complete)
      assert.equal("", R.statusline)
      -- :checkhealth: the same advice, the packages :help names
      assert.truthy(R.health:find("ERROR: the C core does not load", 1, true), R.health)
      assert.truthy(R.health:find("run `make nvim` in " .. plug, 1, true), R.health)
      local listed = R.health:match("it needs ([^\n]-)\n") or R.health:match("it needs (.-)$")
      assert.truthy(listed, R.health)
      local help = read(plug .. "/doc/devtools_tools.txt")
      local needs = help:match("It needs%s+the Debian packages%s+(.-);"):gsub("%s+", " ")
      local function set(s)
        local t = {}
        for p in s:gsub(" and ", ", "):gmatch("[^,%s]+") do t[#t + 1] = p end
        table.sort(t)
        return t
      end
      assert.same(set(needs), set(listed))
      assert.truthy(listed:find("libssl-dev", 1, true), listed)
      -- and once built
      assert.truthy(R.after.browser, "no browser after the build")
      assert.equal(7, R.timeout)
    end)
    if not H.exists(so) then os.rename(so .. ".away", so) end   -- (the clone serves the other specs)
    assert(ok, err)
  end)

  -- issue 34.9: a call without its required arguments failed; the
  -- skeleton showed an enum's first value only
  it(":DevTools call with required arguments missing opens the argument buffer; its skeleton lists each enum's values", function()
    local R = nvim([[
      use_page(ARGS.url)
      run("DevTools eval JSON.stringify(window.__dtmcp.toolGroups.flatMap(g => g.tools)"
        .. ".find(t => t.name === 'queryDatabaseTable').inputSchema.properties.tableName.enum)")
      R.enum = dt.json.decode(result())
      local before = #R.notes
      run("DevTools call queryDatabaseTable")
      R.notes_missing = { unpack(R.notes, before + 1) }
      R.name = vim.api.nvim_buf_get_name(0)
      R.bt = vim.bo.buftype
      R.buf = lines()
      R.echoed_needs = false
      for _, e in ipairs(R.echoes) do
        if e:find("queryDatabaseTable needs arguments", 1, true) then R.echoed_needs = true end
      end
      -- :w calls it with what the buffer holds
      local b = vim.api.nvim_get_current_buf()
      local l = lines(b)
      for i, s in ipairs(l) do l[i] = s:gsub('"tableName": "[^"]*"', '"tableName": "orders"') end
      vim.api.nvim_buf_set_lines(b, 0, -1, false, l)
      vim.cmd("write")
      idle()
      R.rows = #result().rows
      -- what was given is kept; the rest is the skeleton's
      run('DevTools call reassignLead {"leadId": 3}')
      R.partial_name = vim.api.nvim_buf_get_name(0)
      R.partial = text()
      -- a wrong value is no missing argument: it fails as before
      before = #R.notes
      run('DevTools call queryDatabaseTable {"tableName": "nope"}')
      R.notes_wrong = { unpack(R.notes, before + 1) }
      R.wrong_buf = vim.api.nvim_buf_get_name(0)
    ]], { url = app.url })
    assert.same({}, R.notes_missing)
    assert.equal("devtools://call/app-debug/queryDatabaseTable", R.name)
    assert.equal("acwrite", R.bt)
    assert.is_true(R.echoed_needs)
    assert.is_true(#R.enum > 2, #R.enum)
    local values = {}
    for i, v in ipairs(R.enum) do values[i] = json.encode(v) end
    assert.equal("// /tableName: one of " .. table.concat(values, ", "), R.buf[1])
    local body = {}
    for _, l in ipairs(R.buf) do
      if not l:match("^%s*//") then body[#body + 1] = l end
    end
    assert.same({ tableName = R.enum[1], limit = 5 }, json.decode(table.concat(body, "\n")))
    assert.equal(5, R.rows)
    assert.equal("devtools://call/sales-dashboard/reassignLead", R.partial_name)
    assert.same({ leadId = 3, repId = 1 }, json.decode((R.partial:gsub("//[^\n]*\n", ""))))
    assert.equal(1, #R.notes_wrong)
    assert.truthy(R.notes_wrong[1].msg:find("invalid_params", 1, true), R.notes_wrong[1].msg)
    assert.equal(R.partial_name, R.wrong_buf)         -- (no buffer opened)
  end)

  -- issue 34.10
  it("shows result keys sorted, words a timeout for the user, and a multi-line error as one line (no Press ENTER)", function()
    local R = nvim([[
      use_page(ARGS.fixture)
      run('DevTools call echo {"b": 1, "a": 2, "c": {"z": 1, "y": [3, {"q": 1, "p": 2}]}}')
      R.result = lines(bufnr("devtools://result"))
      nv.setup({ timeout = 1 })
      local before = #R.notes
      run('DevTools call slowEcho {"ms": 5000}')
      run("DevTools eval new Promise(() => {})")
      R.timeouts = { unpack(R.notes, before + 1) }
      nv.setup({})
      -- Neovim's own vim.notify, which writes to the command line
      vim.notify = real_notify
      local errs, widths = {}, {}
      local real_err = vim.api.nvim_err_writeln
      vim.api.nvim_err_writeln = function(s)
        errs[#errs + 1] = s
        widths[#widths + 1] = vim.fn.strdisplaywidth(s)
        return real_err(s)
      end
      R.echospace = vim.v.echospace
      run('DevTools call add {"a": "x", "b": "y", "c": 1}')
      pcall(vim.cmd, "DevTools frobnicate")   -- (an error message inside :command raises there)
      R.errs, R.widths = errs, widths
      vim.cmd("buffer devtools://error")
      R.whole = text()
    ]], { fixture = fixtures.url("/tools.html") })
    assert.same({ "{", '  "a": 2,', '  "b": 1,', '  "c": {', '    "y": [', "      3,", "      {",
      '        "p": 2,', '        "q": 1', "      }", "    ],", '    "z": 1', "  }", "}" }, R.result)
    assert.equal(2, #R.timeouts)
    assert.equal("devtools_tools: timeout: the tool slowEcho did not answer within 1 s", R.timeouts[1].msg)
    assert.equal("devtools_tools: timeout: the page did not answer within 1 s", R.timeouts[2].msg)
    assert.equal(2, #R.errs, table.concat(R.errs, "\n---\n"))
    for i, e in ipairs(R.errs) do
      assert.falsy(e:find("\n", 1, true), e)
      assert.is_true(R.widths[i] <= R.echospace, e)
    end
    assert.truthy(R.errs[1]:find("^devtools_tools: invalid_params: .*%(:b devtools://error%)$"), R.errs[1])
    assert.truthy(R.errs[2]:find("^devtools_tools: unknown subcommand 'frobnicate'"), R.errs[2])
    for _, s in ipairs({ "invalid_params: Invalid parameters for tool add", '\n  /a: must be number (got "x")',
      '\n  /b: must be number (got "y")' }) do
      assert.truthy(R.whole:find(s, 1, true), "devtools://error lacks " .. s .. ":\n" .. R.whole)
    end
  end)

  -- issue 34.11
  it("follows Neovim's conventions: vim.ui.select, <Plug> mappings, a statusline, lazy.nvim's opts", function()
    local readme = read(root .. "/README.md")
    local help = read(root .. "/doc/devtools_tools.txt")
    local spec, src = lazy_spec(readme)
    local spec_help = lazy_spec(help:match("%*devtools_tools%-lazy%*(.*)$"))
    assert.same(spec, spec_help)
    assert.equal("devtools_tools.nvim", spec.main, src)
    assert.equal("make nvim", spec.build, src)
    assert.same({}, spec.opts, src)
    local R = nvim([[
      -- what lazy.nvim does with the spec: require(main).setup(opts)
      R.setup_returns = require(ARGS.main).setup(ARGS.opts) == nv
      R.default_timeout = nv.options().timeout
      require(ARGS.main).setup({ timeout = 12 })
      R.opts_timeout = nv.options().timeout
      require(ARGS.main).setup(ARGS.opts)
      R.plugs = {}
      for _, m in ipairs({ "devtools-tools", "devtools-list", "devtools-cancel", "devtools-open-tool" }) do
        R.plugs[#R.plugs + 1] = vim.fn.maparg("<Plug>(" .. m .. ")", "n") ~= ""
      end
      R.sl_none = nv.statusline()
      use_page(ARGS.fixture)
      R.sl_page = nv.statusline()
      vim.cmd('DevTools call slowEcho {"ms": 1000}')
      R.sl_busy = nv.statusline()
      idle()
      -- :DevTools tools offers the tools to vim.ui.select (Telescope's or
      -- fzf-lua's when they replace it)
      local seen
      vim.ui.select = function(items, opts, on_choice)
        seen = { prompt = opts.prompt, kind = opts.kind, items = {} }
        local pick
        for i, it in ipairs(items) do
          seen.items[i] = opts.format_item(it)
          if seen.items[i]:match("^add%(") then pick = it end
        end
        on_choice(pick)
      end
      run("DevTools tools")
      R.select = seen
      R.picked = vim.api.nvim_buf_get_name(0)
      R.picked_text = text()
      -- a key mapped to a <Plug> mapping
      vim.keymap.set("n", "<F5>", "<Plug>(devtools-list)", { remap = true })
      vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<F5>", true, false, true), "x", false)
      idle()
      R.after_plug = vim.api.nvim_buf_get_name(0)
      run("DevTools close")
      R.sl_closed = nv.statusline()
    ]], { main = spec.main, opts = spec.opts, fixture = fixtures.url("/tools.html") })
    assert.is_true(R.setup_returns)
    assert.equal(30, R.default_timeout)
    assert.equal(12, R.opts_timeout)
    assert.same({ true, true, true, true }, R.plugs)
    assert.equal("", R.sl_none)
    assert.equal("DevTools: " .. fixtures.url("/"):match("//([^/]+)"), R.sl_page)
    assert.equal("DevTools: calling slowEcho...", R.sl_busy)
    assert.equal("", R.sl_closed)
    assert.truthy(R.select, "vim.ui.select was not called")
    assert.equal("devtools_tools.tool", R.select.kind)
    assert.equal("devtools_tools: a tool of " .. fixtures.url("/tools.html"), R.select.prompt)
    assert.equal("add(a*, b*)  [main-tools]  Adds two numbers", R.select.items[1])
    assert.truthy(#R.select.items > 5)
    assert.equal("devtools://call/main-tools/add", R.picked)
    assert.same({ a = 0, b = 0 }, json.decode(R.picked_text))
    assert.equal("devtools://tools", R.after_plug)
  end)

  it(":checkhealth devtools_tools reports OK", function()
    local R = nvim([[
      vim.cmd("checkhealth devtools_tools")
      R.report = lines()
    ]])
    local report = table.concat(R.report, "\n")
    assert.truthy(report:find("OK: core built for this Neovim: " .. plug .. "/lua/devtools_tools/core.so", 1, true), report)
    assert.truthy(report:find("INFO: Lua engine: LuaJIT", 1, true), report)
    assert.truthy(report:find("INFO: LuaJIT's trace compiler is kept out", 1, true), report)   -- Debian's LuaJIT
    assert.truthy(report:find("OK: found /[^\n]*chrom[^\n]*: [^\n]*Chrom[^\n]*/%d+"), report)
    assert.truthy(report:find("OK: smoke test: launch, a data: page, discovery and a tool call", 1, true), report)
    assert.falsy(report:find("ERROR", 1, true), report)
    assert.truthy(report:find("OK: commands run as tasks on vim.loop", 1, true), report)
    assert.falsy(report:find("WARNING", 1, true), report)
  end)

  it("keeps LuaJIT's trace compiler out of the library's functions on this LuaJIT (it miscompiles pairs())", function()
    local R = nvim([[
      local r = dofile(ARGS.probe)                  -- spec/support/nojit_probe.lua
      R.bad, R.ours, R.others = r.failed, r.ours, r.others
      R.version, R.arch = jit.version, jit.arch
      R.affected = require("devtools_tools.base.nojit").affected
    ]], { probe = root .. "/spec/support/nojit_probe.lua" })
    assert.equal(1000, R.bad)                       -- the workload ran, and validated right
    local affected = R.arch == "x64" and R.version == "LuaJIT 2.1.0-beta3"
    assert.equal(affected, R.affected)
    if affected then assert.equal(0, R.ours) else assert.is_true(R.ours > 0) end
  end)

  it("has help: helptags builds without warnings and every command, option and API function has a tag", function()
    -- make nvim ran it (an install by hand has :help at once)
    assert.truthy(H.exists(plug .. "/doc/tags"), "make nvim wrote no doc/tags")
    os.remove(plug .. "/doc/tags")
    local out, rc = H.sh(("cd %s && nvim --headless -u NONE -i NONE -n -c %s -c 'qa!' </dev/null"):format(
      q(tmp), q("helptags " .. plug .. "/doc")))
    assert.equal(0, rc, out)
    assert.equal("", out)
    local tags = read(plug .. "/doc/tags")
    assert.equal("", (H.sh(("git -C %s status --porcelain"):format(q(plug)))))   -- doc/tags is ignored
    for _, t in ipairs({ "devtools_tools", ":DevTools", ":DevTools-launch", ":DevTools-connect", ":DevTools-open",
      ":DevTools-close", ":DevTools-tools", ":DevTools-call", ":DevTools-eval", ":DevTools-cancel",
      ":DevTools-record", ":DevTools-replay",
      "devtools_tools.setup()", "devtools_tools-executable", "devtools_tools-headless", "devtools_tools-timeout",
      "devtools_tools-connect", "devtools_tools-keymaps", "devtools_tools.launch()", "devtools_tools.connect()",
      "devtools_tools.async()", "devtools_tools.use_loop()", "devtools_tools.wait_all()",
      "devtools_tools.sleep()", "devtools_tools.current_task()", "devtools_tools.debug()", "devtools_tools-Page", "devtools_tools-Tool",
      "devtools_tools-health", "devtools_tools-install",
      -- issue 34
      ":DevTools-list", "devtools_tools-lazy", "devtools_tools-mappings", "devtools_tools.statusline()",
      "devtools_tools.pick()" }) do
      assert.truthy(tags:find("\n" .. t:gsub("%p", "%%%0") .. "\t") or tags:find("^" .. t:gsub("%p", "%%%0") .. "\t"),
        "no tag " .. t)
    end
    local R = nvim([[
      vim.cmd("help :DevTools-call")
      R.file = vim.fn.expand("%:t")
      R.line = vim.api.nvim_get_current_line()
    ]])
    assert.equal("devtools_tools.txt", R.file)
    assert.truthy(R.line:find("*:DevTools-call*", 1, true))
  end)

  it("has LuaLS annotations for the public API in a ---@meta file that nothing loads", function()
    local path = plug .. "/types/devtools_tools.lua"
    local src = assert(read(path))
    assert.truthy(src:match("^%-%-%-@meta"))
    assert(loadfile(path))                        -- it parses
    for _, f in ipairs({ "dt.launch", "dt.connect", "dt.is_error", "dt.array", "dt.use_loop", "dt.async",
      "dt.wait_all", "dt.sleep", "dt.current_task", "dt.debug",
      "Browser:version", "Browser:pages", "Browser:new_page", "Browser:attach", "Browser:close",
      "Page:navigate", "Page:reload", "Page:evaluate", "Page:discover", "Page:tool_groups", "Page:tool",
      "Page:call", "Page:call_many", "Page:close", "ToolGroup:tool", "Tool:call", "Tool:validate",
      "Task:wait", "Task:cancel", "json.encode", "json.decode", "schema.compile", "nvim.setup",
      -- issue 14
      "Browser:cdp", "Page:console_messages", "Page:network_requests", "Page:response_body", "Page:mark",
      "Page:observe", "Page:on", "Page:on_cdp", "Page:cdp", "Page:screenshot",
      "Page:wait_for_tool", "schema.validate", "schema.shape", "json.kind",
      -- issue 32: what front ends need, the background browser
      "dt.now", "dt.left", "dt.new_error", "dt.isatty", "dt.nojit", "dt.stop_detached", "dt.background",
      "Background:status", "Background:start", "Background:stop", "Browser:alive",
      -- issue 35: the MCP server, and what it asked of the API
      "mcp.serve", "mcp.stdio", "McpServer:close", "McpServer:run", "McpServer:tools", "Page:wait_until",
      "dt.loop", "dt.fd_read", "dt.fd_write",
      -- issue 34: the plugin's picker and statusline component
      "nvim.statusline", "nvim.pick" }) do
      local at = src:find("\nfunction " .. f .. "(", 1, true)
      assert.truthy(at, "no function " .. f)
      local before = src:sub(1, at - 1):match("([^\n]*)$")
      assert.truthy(before:match("^%-%-%-"), "no annotation above " .. f)
    end
    assert.falsy(H.exists(plug .. "/lua/devtools_tools/_meta.lua"))
  end)
end)
