-- bench/common.lua: helpers shared by bench/bench.lua and its child
-- processes: statistics, RSS from /proc, the raw CDP round trips that are
-- the floors, the fixture server, and running a child Lua process.
--
-- Nothing here may leave a process behind: whatever starts one returns an
-- object whose close() ends it, and callers close it on every path.

local core = require "devtools_tools.core"

local C = {}

C.build = os.getenv("DEVTOOLS_TOOLS_BUILD") or "build/lua5.4"
local now = core.now
C.now = now
local fmt = string.format

-- ---- statistics -----------------------------------------------------------

local function sorted(xs)
  local s = {}
  for i = 1, #xs do s[i] = xs[i] end
  table.sort(s)
  return s
end

-- percentile(xs, p) by nearest rank (p in 0..100); median is p = 50
function C.percentile(xs, p)
  local s = sorted(xs)
  if #s == 0 then return nil end
  local k = math.ceil(#s * p / 100)
  if k < 1 then k = 1 end
  if k > #s then k = #s end
  return s[k]
end

function C.median(xs)
  local s = sorted(xs)
  local n = #s
  if n == 0 then return nil end
  if n % 2 == 1 then return s[(n + 1) / 2] end
  return (s[n / 2] + s[n / 2 + 1]) / 2
end

function C.sum(xs)
  local t = 0
  for i = 1, #xs do t = t + xs[i] end
  return t
end

-- ---- memory ------------------------------------------------------------------

-- rss() -> {rss = KiB now, hwm = KiB peak} of this process
function C.rss()
  local f = assert(io.open("/proc/self/status"))
  local s = f:read("*a")
  f:close()
  return { rss = tonumber(s:match("VmRSS:%s*(%d+)")), hwm = tonumber(s:match("VmHWM:%s*(%d+)")) }
end

-- Resets the peak (VmHWM) to the current RSS (Linux 4.0+); returns false
-- where the kernel does not allow it.
function C.reset_peak()
  local f = io.open("/proc/self/clear_refs", "w")
  if not f then return false end
  local ok = f:write("5")
  f:close()
  return ok and true or false
end

-- ---- raw CDP round trips (the floors) ----------------------------------------

-- Messages that are not the reply we wait for go where the connection would
-- have sent them, so the Page objects keep their state.
local function route(conn, msg)
  if msg.method then
    local fn = conn.listeners[msg.sessionId or ""]
    if fn then fn(msg.method, msg.params, msg.sessionId) end
  elseif msg.id ~= nil and conn.pending[msg.id] == false then
    conn.pending[msg.id] = msg
  end
end

local function recv(conn, deadline)
  local msg, err, code = conn.transport:recv_cdp(deadline)
  if msg == nil then error("raw recv: " .. tostring(err) .. " (" .. tostring(code) .. ")", 0) end
  return msg
end

local function send(conn, text, deadline)
  local ok, err, code = conn.transport:send(text, deadline)
  if not ok then error("raw send: " .. tostring(err) .. " (" .. tostring(code) .. ")", 0) end
end

local function take_id(conn)
  local id = conn.next_id
  conn.next_id = id + 1
  return id
end

local EVAL1 = '{"id":%d,"method":"Runtime.evaluate","params":{"expression":"1"},"sessionId":"%s"}'

-- raw_eval(conn, session): one Runtime.evaluate('1') written and its reply
-- read straight through the connection's transport (our framing and our
-- decoder, none of the CDP layer's bookkeeping)
function C.raw_eval(conn, session)
  local deadline = now() + 10
  local id = take_id(conn)
  send(conn, fmt(EVAL1, id, session), deadline)
  while true do
    local msg = recv(conn, deadline)
    if msg.id == id then
      if msg.error then error("raw eval: " .. tostring(msg.error.message), 0) end
      return msg
    end
    route(conn, msg)
  end
end

local EXEC = '{"id":%d,"method":"Runtime.evaluate","params":{"expression":'
  .. '"window.__dtmcp.executeTool(\'add\', {a: %d, b: 2})","awaitPromise":true,'
  .. '"returnByValue":true},"sessionId":"%s"}'

-- raw_exec(conn, session, a?): the same work as a tool call, done raw: the
-- page's own executor (window.__dtmcp.executeTool) run by Runtime.evaluate,
-- awaiting its promise, returned by value: add(a, 2), a = 1 by default.
function C.raw_exec(conn, session, a)
  a = a or 1
  local deadline = now() + 10
  local id = take_id(conn)
  send(conn, fmt(EXEC, id, a, session), deadline)
  while true do
    local msg = recv(conn, deadline)
    if msg.id == id then
      if msg.error then error("raw exec: " .. tostring(msg.error.message), 0) end
      if msg.result.result.value ~= a + 2 then error("raw exec: add(a, 2) did not give a + 2", 0) end
      return msg
    end
    route(conn, msg)
  end
end

-- raw_pipelined(conn, session, n): n requests written before any reply is read
function C.raw_pipelined(conn, session, n)
  local deadline = now() + 30
  local first = conn.next_id
  for _ = 1, n do send(conn, fmt(EVAL1, take_id(conn), session), deadline) end
  local left = n
  while left > 0 do
    local msg = recv(conn, deadline)
    local id = msg.id
    if id ~= nil and id >= first and id < first + n then
      if msg.error then error("raw eval: " .. tostring(msg.error.message), 0) end
      left = left - 1
    else
      route(conn, msg)
    end
  end
end

-- ---- processes ----------------------------------------------------------------

local function is_exe(p) return core.fs.is_executable(p) end

-- which(name) -> absolute path on PATH, or nil
function C.which(name)
  if name:find("/", 1, true) then return is_exe(name) and name or nil end
  for dir in (os.getenv("PATH") or "/usr/bin:/bin"):gmatch("[^:]+") do
    local p = dir .. "/" .. name
    if is_exe(p) then return p end
  end
end

-- The interpreter running us (arg[-1]), for the child processes.
function C.interpreter()
  local i = -1
  while arg and arg[i - 1] do i = i - 1 end
  local name = arg and arg[i] or "lua5.4"
  return C.which(name) or C.which("lua5.4") or error("cannot find the Lua interpreter " .. name)
end

-- Starts the spec support static server over root; returns
-- {proc, port, url(path, host), close()}.
function C.start_server(root)
  local exe = C.build .. "/support/static_server"
  if not is_exe(exe) then error("no " .. exe .. " (run make bench, which builds it)") end
  local proc, err = core.process.spawn({ exe, "--port", "0", "--root", root })
  if not proc then error("cannot start the static server: " .. tostring(err)) end
  local port
  local deadline = now() + 10
  repeat
    port = tonumber(proc:stderr():match("port (%d+)"))
    if not port then core.sleep(0.005) end
  until port or now() > deadline
  if not port then
    proc:close(0)
    error("the static server printed no port")
  end
  return {
    proc = proc, port = port,
    url = function(path, host)
      return "http://" .. (host or "127.0.0.1") .. ":" .. port .. (path or "/")
    end,
    close = function() proc:close(0) end,
  }
end

-- run_child(script, args, timeout) -> decoded JSON the child printed on
-- its last "RESULT " line. The child is a fresh interpreter with the same
-- paths; it is killed (with its process group) if it overstays.
function C.run_child(script, args, timeout)
  local argv = { C.interpreter(), script }
  for _, a in ipairs(args or {}) do argv[#argv + 1] = tostring(a) end
  local proc, err = core.process.spawn(argv, { stderr_size = 1024 * 1024 })
  if not proc then error("cannot run " .. script .. ": " .. tostring(err)) end
  local ok, how, code = pcall(proc.wait, proc, now() + (timeout or 60))
  local out = proc:stderr()
  proc:close(0)
  if not ok then error(how, 0) end
  if how == nil then
    error(script .. " did not finish within " .. tostring(timeout) .. " s; output:\n" .. out:sub(-2000), 0)
  end
  local line
  for l in out:gmatch("RESULT ([^\n]*)") do line = l end
  if how ~= "exit" or code ~= 0 or not line then
    error(script .. " failed (" .. tostring(how) .. " " .. tostring(code) .. "); output:\n"
      .. out:sub(-3000), 0)
  end
  return require("devtools_tools.base.json").decode(line)
end

-- For children: prints the result line the parent looks for.
function C.result(t)
  io.stdout:write("RESULT ", require("devtools_tools.base.json").encode(t), "\n")
  io.stdout:flush()
end

return C
