-- fake_grid.lua - a stand-in for Selenium Grid 4's router, for
-- spec/integration/webdriver_spec.lua: the WebDriver commands dt.webdriver uses, with
-- the `se:cdp` capability Grid returns, pointing at a real Chromium the
-- spec started.
--
-- Usage: lua5.4 spec/support/fake_grid.lua CDP_URL   (prints "port N" on
-- stderr; listens on 127.0.0.1 only; runs until killed)
--   POST   /session (under any prefix, e.g. /wd/hub): a session whose
--          capabilities hold se:cdp = CDP_URL; browserName "firefox" is
--          refused with "session not created"; browserName "nocdp" gets a
--          session without se:cdp; "deadcdp" one whose se:cdp refuses
--          "slowdelete" one whose DELETE is answered 3 s late, "silentcdp"
--          one whose se:cdp accepts connections and never answers (and
--          whose DELETE is answered 3 s late too); "oddid" a session
--          whose id holds a space, a line break and a slash, "emptyid" and
--          "longid" ids no URL can carry (empty, 1100 bytes), "garbagecdp"
--          an se:cdp that is no URL, "numbercdp" an se:cdp that is a number,
--          "garbageaddr" a goog:chromeOptions.debuggerAddress that is no
--          address (and no se:cdp)
--   DELETE /session/<id>: ends it (404 "invalid session id" if unknown); the
--          id is percent-decoded, as a router does
--   GET    /log: {"created": [...], "deleted": [...], "bodies": [...]}
--   PUT    /cdp: the body is the CDP_URL of the sessions made from now on
-- A late answer is held back while the router goes on serving: it never
-- stalls the next request (issue 34.13: it slept in its one loop, so a
-- spec's next request waited on the last one's late DELETE, which on a
-- loaded machine ran past that request's deadline).
local socket = require "socket"
local cjson = require "cjson"

local cdp_url, dead_url = arg[1], arg[2]
local server = assert(socket.bind("127.0.0.1", 0))
local _, port = server:getsockname()
io.stderr:write("port ", port, "\n")
io.stderr:flush()

local SLOW = 3              -- seconds a slow DELETE is answered late
local log = { created = {}, deleted = {}, bodies = {} }
local held = {}             -- answers held back: {conn, due, status, value}
local live, n = {}, 0
local slow = {}             -- session id -> true: its DELETE is answered 3 s late
local silent = assert(socket.bind("127.0.0.1", 0))      -- accepts in the kernel, never answers
local silent_url = ("ws://127.0.0.1:%d/devtools/browser/silent"):format(select(2, silent:getsockname()))

local function answer(c, status, value)
  local body = cjson.encode({ value = value })
  c:send(("HTTP/1.1 %d X\r\nContent-Type: application/json; charset=utf-8\r\n"
    .. "Content-Length: %d\r\nConnection: close\r\n\r\n%s"):format(status, #body, body))
end

local function handle(c)
  c:settimeout(5)
  local line = c:receive("*l")
  if not line then return end
  local method, path = line:match("^(%u+) (%S+) HTTP/1%.1$")
  local len = 0
  while true do
    local h = c:receive("*l")
    if not h or h == "" then break end
    local k, v = h:match("^([^:]+):%s*(.*)$")
    if k and k:lower() == "content-length" then len = tonumber(v) end
  end
  local body = len > 0 and c:receive(len) or ""
  if method == "GET" and path == "/log" then
    return answer(c, 200, log)
  end
  if method == "PUT" and path == "/cdp" then
    cdp_url = body
    return answer(c, 200, cjson.null)
  end
  if method == "POST" and path:match("/session$") then
    log.bodies[#log.bodies + 1] = body
    local ok, req = pcall(cjson.decode, body)
    local caps = ok and type(req) == "table" and type(req.capabilities) == "table"
      and req.capabilities.alwaysMatch
    if type(caps) ~= "table" then
      return answer(c, 400, { error = "invalid argument", message = "no capabilities.alwaysMatch" })
    end
    if caps.browserName == "firefox" then
      return answer(c, 500, { error = "session not created",
        message = "no node supports the capabilities" })
    end
    n = n + 1
    local id = ("fake-session-%d"):format(n)
    if caps.browserName == "oddid" then id = ("fake session\n%d/x"):format(n)
    elseif caps.browserName == "emptyid" then id = ""
    elseif caps.browserName == "longid" then id = ("L"):rep(1100) end
    live[id] = true
    log.created[#log.created + 1] = id
    local out = { browserName = "chrome", browserVersion = "156", ["se:cdpVersion"] = "156" }
    if caps.browserName == "deadcdp" then out["se:cdp"] = dead_url
    elseif caps.browserName == "silentcdp" then out["se:cdp"] = silent_url
    elseif caps.browserName == "garbagecdp" then out["se:cdp"] = "not a url"
    elseif caps.browserName == "numbercdp" then out["se:cdp"] = 9222
    elseif caps.browserName == "garbageaddr" then
      out["goog:chromeOptions"] = { debuggerAddress = "no such address: at all" }
    elseif caps.browserName ~= "nocdp" then out["se:cdp"] = cdp_url end
    slow[id] = caps.browserName == "slowdelete" or caps.browserName == "silentcdp"
    return answer(c, 200, { sessionId = id, capabilities = out })
  end
  local id = path:match("/session/([^/]+)$")
  if id then id = id:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end) end
  if method == "DELETE" and id then
    if not live[id] then
      return answer(c, 404, { error = "invalid session id", message = "unknown session " .. id })
    end
    live[id] = nil
    log.deleted[#log.deleted + 1] = id
    if slow[id] then
      held[#held + 1] = { conn = c, due = socket.gettime() + SLOW, status = 200, value = cjson.null }
      return "held"
    end
    return answer(c, 200, cjson.null)
  end
  answer(c, 404, { error = "unknown command", message = method .. " " .. path })
end

server:settimeout(0)
while true do
  local wait
  for _, h in ipairs(held) do
    local left = math.max(0, h.due - socket.gettime())
    if not wait or left < wait then wait = left end
  end
  if socket.select({ server }, nil, wait) then
    local c = server:accept()
    if c then
      local ok, r = pcall(handle, c)
      if not (ok and r == "held") then c:close() end
    end
  end
  local now, keep = socket.gettime(), {}
  for _, h in ipairs(held) do
    if h.due <= now then
      pcall(answer, h.conn, h.status, h.value)
      h.conn:close()
    else
      keep[#keep + 1] = h
    end
  end
  held = keep
end
