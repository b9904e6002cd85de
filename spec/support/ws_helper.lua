-- ws_helper.lua - starts and stops spec/support/ws_server for the transport
-- specs, and the small socket tricks they need (a port nobody listens on, a
-- listener that never answers). Never leaves a server process behind: stop()
-- reaps it and reports whether its pid is still alive.
require("devtools_tools.base.nojit")()   -- the specs' helpers too: see lua/devtools_tools/base/nojit.lua

local core = require("devtools_tools.core")
local socket = require("socket")

local M = {}

local build = os.getenv("DEVTOOLS_TOOLS_BUILD") or "build/lua5.4"
M.server_path = build .. "/support/ws_server"

-- The payload of the server's big and fragmented messages: byte i is 'a' + i % 26.
local alphabet = "abcdefghijklmnopqrstuvwxyz"
function M.pattern(n)
  return string.rep(alphabet, math.floor(n / 26) + 1):sub(1, n)
end

-- Starts the server on a free port; returns the Process and the port.
function M.start()
  local proc, msg = core.process.spawn({ M.server_path, "--port", "0" })
  assert(proc, msg)
  local deadline = core.now() + 10
  while core.now() < deadline do
    local out = proc:stderr()
    local port = out:match("port (%d+)\n")
    if port then
      return proc, tonumber(port)
    end
    if not proc:running() then
      proc:close(0)
      error("ws_server exited: " .. out)
    end
    core.sleep(0.005)
  end
  proc:close(0)
  error("ws_server printed no port")
end

-- Is there a live process with this pid?
function M.alive(pid)
  local f = io.open("/proc/" .. tostring(pid) .. "/stat")
  if f == nil then
    return false
  end
  local stat = f:read("*a") or ""
  f:close()
  -- a zombie is not alive ("pid (comm) Z ...")
  return stat:match("^%d+ %b() (%a)") ~= "Z"
end

-- Stops the server; returns its pid (for M.alive).
function M.stop(proc)
  local pid = proc:pid()
  proc:close()
  return pid
end

-- A port on 127.0.0.1 that refuses connections (bound once, then closed).
function M.refused_port()
  local s = assert(socket.bind("127.0.0.1", 0))
  local _, port = s:getsockname()
  s:close()
  return tonumber(port)
end

-- A listener that accepts TCP connections in the kernel and never answers.
-- Returns the LuaSocket server (close it when done) and its port.
function M.silent_listener()
  local s = assert(socket.bind("127.0.0.1", 0))
  local _, port = s:getsockname()
  return s, tonumber(port)
end

-- Sends raw bytes to 127.0.0.1:port and returns the status line of the answer.
function M.raw_status(port, request)
  local c = assert(socket.connect("127.0.0.1", port))
  c:settimeout(5)
  assert(c:send(request))
  local line = c:receive("*l")
  c:close()
  return line
end

return M
