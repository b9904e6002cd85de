-- ws_transport.lua - measures the WebSocket transport: round trips of small
-- CDP calls and the time for a 64 MiB reply, against headless Chromium and
-- against spec/support/ws_server. Prints numbers; asserts nothing about them.
--
--   lua5.4 bench/ws_transport.lua [build dir, default build/lua5.4]
local build = arg[1] or "build/lua5.4"
package.cpath = "./" .. build .. "/?.so;" .. package.cpath
local core = require("devtools_tools.core")
local cjson = require("cjson")

local CALLS, WARMUP = 2000, 20
local MiB = 1024 * 1024
local CHROMIUM = os.getenv("DEVTOOLS_TOOLS_CHROME") or "/usr/lib/chromium/chromium"

local function stats(ts)
  table.sort(ts)
  local function at(p) return ts[math.max(1, math.floor(#ts * p + 0.5))] * 1e6 end
  return ("median %.0f us, p90 %.0f us, p99 %.0f us, min %.0f us"):format(at(0.5), at(0.9), at(0.99), ts[1] * 1e6)
end

-- Sends text and waits for the reply with that id (events are skipped).
local function call(t, id, text, timeout)
  local deadline = core.now() + (timeout or 30)
  assert(t:send(text, deadline))
  local pat = '^{"id":' .. id .. ","
  while true do
    local m = assert(t:recv(deadline))
    if m:find(pat) then
      return m
    end
  end
end

local function rounds(t, make)
  local ts = {}
  for i = 1, CALLS + WARMUP do
    local id = 1000 + i
    local t0 = core.now()
    call(t, id, make(id))
    if i > WARMUP then
      ts[#ts + 1] = core.now() - t0
    end
  end
  return ts
end

-- ---- Chromium ----
local dir = assert(core.fs.mkdtemp("dt-ws-bench-"))
local proc = assert(core.process.spawn({ CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
  "--no-first-run", "--disable-background-networking", "--disable-component-update",
  "--disable-sync", "--disable-quic", "--remote-debugging-port=0",
  "--user-data-dir=" .. dir, "about:blank" }, { cleanup_dir = dir }))
local port, path
local deadline = core.now() + 30
while not port and core.now() < deadline do
  local f = io.open(dir .. "/DevToolsActivePort")
  if f then
    local a, b = f:read("*l"), f:read("*l")
    f:close()
    if a and b then port, path = tonumber(a), b end
  end
  core.sleep(0.02)
end
assert(port, "no DevToolsActivePort")
local t = assert(core.ws.connect("127.0.0.1", port, path, { deadline = core.now() + 10 }))
print(("chromium Browser.getVersion x%d: %s"):format(CALLS,
  stats(rounds(t, function(id) return '{"id":' .. id .. ',"method":"Browser.getVersion"}' end))))
local target = cjson.decode(call(t, 1, '{"id":1,"method":"Target.createTarget","params":{"url":"about:blank"}}'))
local att = cjson.decode(call(t, 2, cjson.encode({ id = 2, method = "Target.attachToTarget",
  params = { targetId = target.result.targetId, flatten = true } })))
local sid = att.result.sessionId
print(("chromium Runtime.evaluate(\"1\") on a page session x%d: %s"):format(CALLS,
  stats(rounds(t, function(id)
    return '{"id":' .. id .. ',"method":"Runtime.evaluate","sessionId":"' .. sid
      .. '","params":{"expression":"1","returnByValue":true}}'
  end))))
for _ = 1, 3 do
  local t0 = core.now()
  local m = call(t, 3, '{"id":3,"method":"Runtime.evaluate","sessionId":"' .. sid
    .. '","params":{"expression":"\\"x\\".repeat(' .. 64 * MiB .. ')","returnByValue":true}}', 120)
  print(("chromium 64 MiB string reply (%d bytes): %.0f ms"):format(#m, (core.now() - t0) * 1e3))
end
t:close()
proc:close()

-- ---- the local test server ----
local build_support = build .. "/support/ws_server"
local srv = assert(core.process.spawn({ build_support, "--port", "0" }))
deadline = core.now() + 10
local sport
repeat
  sport = srv:stderr():match("port (%d+)\n")
  if not sport then core.sleep(0.005) end
until sport or core.now() > deadline
t = assert(core.ws.connect("127.0.0.1", tonumber(sport), "/", { deadline = core.now() + 10 }))
local ts = {}
for i = 1, CALLS + WARMUP do
  local t0 = core.now()
  assert(t:send('{"id":1,"method":"Browser.getVersion"}', t0 + 10))
  assert(t:recv(t0 + 10))
  if i > WARMUP then ts[#ts + 1] = core.now() - t0 end
end
print(("ws_server echo x%d: %s"):format(CALLS, stats(ts)))
for _ = 1, 3 do
  local t0 = core.now()
  assert(t:send(('{"cmd":"big","size":%d}'):format(64 * MiB), t0 + 60))
  local m = assert(t:recv(t0 + 60))
  print(("ws_server 64 MiB reply (%d bytes): %.0f ms"):format(#m, (core.now() - t0) * 1e3))
end
local big = string.rep("y", 64 * MiB)
for _ = 1, 3 do
  local t0 = core.now()
  assert(t:send(big, t0 + 60))
  assert(t:send('{"cmd":"last"}', t0 + 60))
  assert(t:recv(t0 + 60))
  local m = assert(t:recv(t0 + 60))
  print(("ws_server 64 MiB request and echo: %.0f ms (%s)"):format((core.now() - t0) * 1e3, m))
end
t:close()
srv:close()
