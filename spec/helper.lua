-- Shared helpers for the specs: build paths, local servers, process checks.
-- Everything here starts real processes on 127.0.0.1 and cleans them up.

require("devtools_tools.base.nojit")()   -- the specs' helpers too: see lua/devtools_tools/base/nojit.lua

local core = require "devtools_tools.core"
local lfs = require "lfs"

local H = {}

H.build = os.getenv("DEVTOOLS_TOOLS_BUILD") or "build/lua5.4"

function H.support(name)
  return H.build .. "/support/" .. name
end

-- wait_for(pred, timeout) -> true once pred() is true, false after timeout.
-- Asks again after 10 ms, then less and less often (at most every 0.1 s):
-- a pred may scan /proc (2-4 ms of CPU each time), and a long wait at 10 ms
-- took a third of a core from the other spec files.
function H.wait_for(pred, timeout)
  local deadline = core.now() + (timeout or 5)
  local pause = 0.01
  repeat
    if pred() then return true end
    core.sleep(math.min(pause, math.max(0, deadline - core.now())))
    pause = math.min(pause * 1.5, 0.1)
  until core.now() > deadline
  return pred() and true or false
end

-- How long a spec waits for what must come to pass when a process ends:
-- its processes gone, its directories removed (the reaper's work). Long:
-- beside a second make test, ending a Chromium and removing its profile
-- took more than 10 s; a wait ends as soon as it holds.
H.LONG = 60

-- Starts a support program that prints "port N"; returns proc, port.
function H.start_port_program(argv)
  local proc = assert(core.process.spawn(argv))
  local port
  assert(H.wait_for(function()
    port = tonumber(proc:stderr():match("port (%d+)"))
    return port ~= nil
  end, H.LONG), "no port from " .. argv[1] .. ": " .. proc:stderr())
  return proc, port
end

-- A static file server over spec/fixtures: server.url(path, host?)
function H.start_server(root)
  local proc, port = H.start_port_program({ H.support("static_server"), "--port", "0",
    "--root", root or "spec/fixtures" })
  return {
    proc = proc, port = port,
    url = function(path, host)
      return "http://" .. (host or "127.0.0.1") .. ":" .. port .. (path or "/")
    end,
    stop = function() proc:close(0) end,
  }
end

-- procs_in_group(pgid) -> {pid =, state =, cmd =} for each process (not a
-- zombie) whose process group is pgid, read from /proc
function H.procs_in_group(pgid)
  local out = {}
  for name in lfs.dir("/proc") do
    if name:match("^%d+$") then
      local f = io.open("/proc/" .. name .. "/stat")
      if f then
        local stat = f:read("*l") or ""
        f:close()
        -- pid (comm) state ppid pgrp ...; comm may hold spaces and parens
        local state, pgrp = stat:match("%) (%a) %-?%d+ (%d+)")
        if pgrp and tonumber(pgrp) == pgid and state ~= "Z" and state ~= "X" then
          local c = io.open("/proc/" .. name .. "/cmdline")
          local cmd = c and (c:read("*a") or ""):gsub("%z", " "):sub(1, 120) or "?"
          if c then c:close() end
          out[#out + 1] = { pid = tonumber(name), state = state, cmd = cmd }
        end
      end
    end
  end
  return out
end

function H.live_in_group(pgid)
  return #H.procs_in_group(pgid)
end

-- alive(pid) -> true while the process runs (not a zombie)
function H.alive(pid)
  local f = io.open("/proc/" .. pid .. "/stat")
  if not f then return false end
  local state = (f:read("*l") or ""):match("%) (%a)")
  f:close()
  return state ~= nil and state ~= "Z" and state ~= "X"
end

-- Live (not zombie) processes whose command line contains s.
function H.live_with_arg(s)
  local out = {}
  for name in lfs.dir("/proc") do
    if name:match("^%d+$") then
      local f = io.open("/proc/" .. name .. "/cmdline")
      local cmd = f and f:read("*a") or ""
      if f then f:close() end
      if cmd:find(s, 1, true) and H.alive(name) then out[#out + 1] = tonumber(name) end
    end
  end
  return out
end

-- tcp_listeners_of(text) -> the TCP ports (IPv4 and IPv6) that the live
-- processes naming text (live_with_arg) listen on
function H.tcp_listeners_of(text)
  local inodes = {}
  for _, pid in ipairs(H.live_with_arg(text)) do
    local p = io.popen("ls -l /proc/" .. pid .. "/fd 2>/dev/null")
    for ino in p:read("*a"):gmatch("socket:%[(%d+)%]") do inodes[ino] = true end
    p:close()
  end
  local ports = {}
  for _, file in ipairs({ "/proc/net/tcp", "/proc/net/tcp6" }) do
    for line in H.read_file(file):gmatch("[^\n]+") do
      -- sl local rem st tx:rx tr:when retrnsmt uid timeout inode; 0A: LISTEN
      local port, st, ino = line:match("^%s*%d+:%s+%x+:(%x+)%s+%x+:%x+%s+(%x%x)%s+%S+%s+%S+%s+%S+%s+%S+%s+%S+%s+(%d+)")
      if port and st == "0A" and inodes[ino] then ports[#ports + 1] = tonumber(port, 16) end
    end
  end
  return ports
end

function H.exists(path)
  return lfs.attributes(path) ~= nil
end

-- sh(cmd) -> output (stdout and stderr), exit status
-- read_file(path) -> its bytes (raises when it cannot be read)
function H.read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

function H.sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1; echo \"rc=$?\"", "r"))
  local out = p:read("*a")
  p:close()
  local body, rc = out:match("^(.-)rc=(%d+)\n?$")
  return body, tonumber(rc)
end

-- Wraps a connection's transport to record, in order, "send" for each
-- request matching pattern and "reply" for each reply to one of them.
-- Every argument is forwarded as given (the path users run, e.g. recv's
-- in-place decoding of tool replies). Returns the log, a function that puts
-- the real transport back, and stats: stats.decoded_in_place counts replies
-- to matching requests the transport decoded in place (result.json).
function H.spy_transport(conn, pattern)
  local real = conn.transport
  local log, ids, stats = {}, {}, { decoded_in_place = 0 }
  conn.transport = setmetatable({
    send = function(_, msg, ...)
      if msg:find(pattern, 1, true) then
        ids[tonumber(msg:match('"id":(%d+)'))] = true
        log[#log + 1] = "send"
      end
      return real:send(msg, ...)
    end,
    recv_cdp = function(_, ...)
      local m, err, code, head = real:recv_cdp(...)
      if type(m) == "table" and ids[m.id] then
        log[#log + 1] = "reply"
        local r = m.result and m.result.result
        if r and r.json ~= nil then stats.decoded_in_place = stats.decoded_in_place + 1 end
      end
      return m, err, code, head
    end,
  }, { __index = function(_, k) return function(_, ...) return real[k](real, ...) end end })
  return log, function() conn.transport = real end, stats
end

-- data_url(html) -> a data: URL of the page (every byte but the unreserved
-- ones percent-encoded, so any script survives)
function H.data_url(html)
  return "data:text/html," .. html:gsub("[^%w%-%._~]", function(c) return ("%%%02X"):format(c:byte()) end)
end

-- spy_process(browser) -> calls: puts a spy in front of browser.process
-- that records each method call as {name, args...} and forwards every
-- argument to the real object
function H.spy_process(browser)
  local real, calls = browser.process, {}
  browser.process = setmetatable({}, { __index = function(_, k)
    return function(_, ...)
      calls[#calls + 1] = { k, ... }
      return real[k](real, ...)
    end
  end })
  return calls
end

-- on_console(page, text, fn): runs fn() (once) when the page's main frame
-- logs `text` with console.log, from inside the connection's event loop:
-- a spec can act at the moment a tool has started. Returns a function that
-- removes the hook. fn must not wait.
function H.on_console(page, text, fn)
  local conn, session = page.conn, page.session
  local orig = conn.listeners[session]          -- (the page's listener: it gets every event still)
  local done = false
  conn:listen(session, function(method, params, s)
    if not done and method == "Runtime.consoleAPICalled" and params.args and params.args[1]
        and params.args[1].value == text then
      done = true
      fn()
    end
    if orig then return orig(method, params, s) end
  end)
  return function() conn:listen(session, orig) end
end

-- The interpreter the specs run under: LuaJIT for the 5.1-ABI builds,
-- else lua5.4 (build/lua5.4, and build/asan, which make asan runs with it).
H.lua = H.build:find("luajit", 1, true) and "luajit" or "lua5.4"

-- run_lua(script, prefix?) -> what a fresh interpreter running script
-- wrote, then "rc=N\n"; prefix goes before it on the shell's line (env
-- settings, a ulimit).
function H.run_lua(script, prefix)
  local file = os.tmpname()
  local f = assert(io.open(file, "w"))
  f:write(script)
  f:close()
  local p = assert(io.popen((prefix or "") .. H.lua .. " " .. file .. "; echo rc=$?"))
  local out = p:read("*a")
  p:close()
  os.remove(file)
  return out
end

-- browser_suite(set, launch_opts?) -> setup_fn, teardown_fn: what a file of
-- browser specs hands to busted's setup and teardown. The first starts the
-- fixture server and a launched browser and gives both to set(server,
-- browser); the second closes both and asserts that no process of the
-- browser's group is left.
function H.browser_suite(set, launch_opts)
  local server, browser
  local function start()
    server = H.start_server()
    browser = require("devtools_tools").launch(launch_opts)
    set(server, browser)
  end
  local function stop()
    local pid = browser.process:pid()
    browser:close()
    server.stop()
    require("luassert").is_true(H.wait_for(function() return H.live_in_group(pid) == 0 end, H.LONG))
  end
  return start, stop
end

-- group_names(groups) -> the names of the groups, in order
function H.group_names(groups)
  local out = {}
  for _, g in ipairs(groups) do out[#out + 1] = g.name end
  return out
end

-- Runs fn and returns the dt.Error it raised (fails if it raised none or
-- raised something else).
function H.error_of(fn, ...)
  local dt = require "devtools_tools"
  local ok, err = pcall(fn, ...)
  assert(not ok, "expected an error, got success")
  assert(dt.is_error(err), "expected a dt.Error, got: " .. tostring(err))
  return err
end

-- Under ASan or valgrind a freed block is held back (quarantine, free
-- list), so resident memory says nothing about what we gave back.
local preload = os.getenv("LD_PRELOAD") or ""
H.checked_malloc = preload:find("libasan", 1, true) or preload:find("vgpreload", 1, true)

-- rss_mib() -> resident memory of this process in MiB (Linux)
function H.rss_mib()
  local f = assert(io.open("/proc/self/status"))
  local kib = tonumber(f:read("*a"):match("VmRSS:%s*(%d+)"))
  f:close()
  return kib / 1024
end

-- shared_browser(opts?) -> {browser, endpoint, close_tabs(), close()}: a
-- headless Chromium launched detached (dt.launch opts, detached = true)
-- for the commands, servers or editors a spec file starts to share, each
-- in a tab of its own (--connect ENDPOINT --new-tab): a launch and its
-- first page cost about 2 s of CPU, the scarcest resource in make test.
-- close_tabs() closes every tab but the blank one it started with (after
-- a case: as a browser of its own, the next one sees no other page).
function H.shared_browser(opts)
  local dt = require "devtools_tools"
  local lo = { detached = true }
  for k, v in pairs(opts or {}) do lo[k] = v end
  local b = dt.launch(lo)
  local blank = b:pages()[1]
  local S = { browser = b, endpoint = b.detached.endpoint }
  function S.close_tabs()
    for _, p in ipairs(b:pages()) do
      -- (one may be closing itself meanwhile: no such target then)
      if not (blank and p.id == blank.id) then pcall(b.cdp, b, "Target.closeTarget", { targetId = p.id }) end
    end
  end
  -- (close only lets a detached browser go: it outlives us until stopped)
  function S.close()
    local record = b.detached
    b:close()
    dt.stop_detached(record)
    assert(H.wait_for(function() return #H.live_with_arg(record.profile) == 0 end, H.LONG),
      "the shared browser is still running: " .. record.profile)
  end
  return S
end

return H
