-- tools/fuzz/http_target.lua: `make fuzz` cases for core.http.get, the
-- small HTTP/1.1 client dt.connect uses to read /json/version (status
-- line, headers, Content-Length, chunked bodies, bodies up to the close).
--
-- The peer (tools/fuzz/peer.lua http, on LuaSocket) answers the GET with a
-- random response, sent in random pieces: well formed (any status, odd
-- header spelling, a body by Content-Length, by chunks with extensions and
-- trailers, or up to the close), or mutated, cut short or oversized; then
-- closes, or stays silent. A well-formed answer must come back as its
-- status and body (too_large past 1 MiB); anything else as nil, a message
-- and a code of the fixed vocabulary, within the deadline; never a crash.
-- The peer generates the case again from (seed, case), so generation must
-- never depend on pairs order or the clock.

local core = require "devtools_tools.core"
local J = require "fuzz.json_target"
local tcp_peer = require "fuzz.tcp_peer"

local T = { name = "http", batch = 40 }

local MAX_BODY = 1024 * 1024
-- (bad_message: a Content-Length that is not a number the client can read)
local CODES = { timeout = true, closed = true, too_large = true, connect_failed = true, bad_message = true }

local function body_of(r)
  local n = r:chance(0.05) and r:int(MAX_BODY - 2, MAX_BODY + 2) or r:chance(0.05) and r:int(MAX_BODY, 3 * MAX_BODY)
    or r:size(70000)
  if n <= 256 then return r:bytes(n) end
  return r:bytes(256):rep(n // 256 + 1):sub(1, n)
end

local function header_name(r, name)
  if r:chance(0.3) then return name:upper() end
  if r:chance(0.3) then return name:lower() end
  return name
end

-- gen(r) -> case: the response bytes, what a correct client reads from
-- them (status and body, or nil when it must fail), pieces, ending
function T.gen(r)
  local c = { pieces = {}, pauses = {} }
  local status = r:pick({ 200, 200, 200, 101, 204, 301, 404, 500, r:int(100, 599), r:int(0, 999) })
  local body = status == 204 and "" or body_of(r)
  local framing = r:pick({ "length", "length", "chunked", "chunked", "close" })
  local headers = {}
  local function add(name, value) headers[#headers + 1] = header_name(r, name) .. ":" .. (r:chance(0.8) and " " or "") .. value end
  add("Content-Type", "application/json")
  if r:chance(0.3) then add("X-Long", ("v"):rep(r:size(8000))) end
  local wire = body
  if framing == "length" then
    add("Content-Length", tostring(#body))
  elseif framing == "chunked" then
    -- Transfer-coding names are case-insensitive (RFC 9112, 7).
    add("Transfer-Encoding", r:pick({ "chunked", "Chunked", "CHUNKED", "gzip, chunked" }))
    local parts, at = {}, 1
    while at <= #body do
      local size = math.min(#body - at + 1, r:chance(0.3) and r:int(1, 16) or r:size(1 << 17) + 1)
      local hex = ("%x"):format(size)
      if r:chance(0.3) then hex = hex:upper() end
      if r:chance(0.1) then hex = "0" .. hex end
      parts[#parts + 1] = hex .. (r:chance(0.1) and ";ext=1" or "") .. "\r\n" .. body:sub(at, at + size - 1) .. "\r\n"
      at = at + size
    end
    parts[#parts + 1] = "0\r\n" .. (r:chance(0.2) and "X-Trailer: 1\r\n" or "") .. "\r\n"
    wire = table.concat(parts)
  end
  local head = ("HTTP/1.1 %03d %s\r\n%s\r\n\r\n"):format(status, r:pick({ "OK", "", "Whatever Reason" }),
    table.concat(headers, "\r\n"))
  c.response = head .. wire
  c.status, c.body = status, body
  c.framing = framing
  -- 1xx, 204 and 304 carry no body in HTTP, and a status outside 200..599
  -- may be refused: for those, anything but a crash, a hang or a strange code
  c.lenient = status < 200 or status > 599 or status == 204 or status == 304
  local k = r:int(1, 10)
  if k == 1 then                                   -- mutated
    c.response = J.mutate(r, c.response)
    c.status, c.body, c.mutated = nil, nil, true
  elseif k == 2 then                               -- cut short
    c.response = c.response:sub(1, r:int(0, #c.response - 1))
    c.status, c.body, c.mutated = nil, nil, true
  elseif k == 3 then                               -- lying Content-Length, bad chunk sizes, garbage
    local lie = r:int(1, 4)
    if lie == 1 then
      c.response = head:gsub("Content%-Length: %d+", "Content-Length: " .. r:pick({ "-1", "abc",
        "99999999999999999999", "18446744073709551616", tostring(#body + 1), "1 2", "" }), 1) .. wire
    elseif lie == 2 then
      c.response = head .. r:pick({ "fffffffffffffffff\r\n", "-1\r\n", "zz\r\n", "10\r\nshort", "8000000000000000\r\n",
        "ffffffffffffffff\r\nx\r\n0\r\n\r\n", "1\r\nab\r\n0\r\n\r\n" })
    elseif lie == 3 then
      c.response = r:bytes(r:int(0, 200))
    else
      c.response = "HTTP/1.1 200 OK\r\n" .. ("X: y\r\n"):rep(r:int(5000, 20000)) .. "\r\n"
    end
    c.status, c.body, c.mutated = nil, nil, true
  end
  c.ending = r:chance(0.75) and "close" or "stay"
  local left, n = #c.response, 0
  while left > 0 and n < 200 do
    n = n + 1
    c.pieces[n] = r:chance(0.3) and r:int(1, 8) or r:size(1 << 16) + 1
    left = left - c.pieces[n]
    if r:chance(0.03) then c.pauses[n] = r:int(1, 5) end
  end
  return c
end

local function show_bytes(s)
  if #s > 300 then return ("%q...(%d bytes)...%q"):format(s:sub(1, 200), #s, s:sub(-40)) end
  return ("%q"):format(s)
end

function T.show(c)
  return ("response %s; framing %s%s; ending %s; %d pieces"):format(show_bytes(c.response), c.framing,
    c.mutated and " (spoilt)" or "", c.ending, #c.pieces)
end

-- serve(c): in the peer process.
function T.serve(c)
  local socket = require "socket"
  local server = assert(socket.bind("127.0.0.1", 0))
  local _, port = server:getsockname()
  io.stderr:write("port ", port, "\n")
  io.stderr:flush()
  server:settimeout(30)
  local client = server:accept()
  server:close()
  if not client then os.exit(0) end
  client:settimeout(10)
  repeat
    local line = client:receive("*l")
    if not line then os.exit(0) end
  until line == ""
  local at = 1
  for n, size in ipairs(c.pieces) do
    if at > #c.response then break end
    if not client:send(c.response:sub(at, at + size - 1)) then os.exit(0) end
    at = at + size
    if c.pauses[n] then socket.sleep(c.pauses[n] / 1000) end
  end
  if at <= #c.response then client:send(c.response:sub(at)) end
  if c.ending == "close" then client:shutdown("send") end
  -- read until the client closes (nothing is left unread: no RST)
  client:settimeout(30)
  client:receive("*a")
  client:close()
  os.exit(0)
end

-- Does a correct client have all it needs before the peer closes?
local function complete_without_close(c)
  return c.framing ~= "close"
end

function T.run(c, ctx)
  local proc, port = tcp_peer.start("http", ctx)
  if not proc then return port end
  local silent_wait = c.ending == "stay" and (c.mutated or not complete_without_close(c))
  local wait = silent_wait and 1 or 10
  local t0 = core.now()
  local status, body, code = core.http.get("127.0.0.1", port, "/json/version", t0 + wait)
  local took = core.now() - t0
  proc:close(0)
  if took > wait + 1 then return ("http_get overran its deadline by %.1f s"):format(took - wait) end
  if status == nil then
    if not CODES[code] then return ("http_get failed with code %s: %s"):format(tostring(code), tostring(body)) end
    if c.mutated or c.lenient then return nil end
    if #c.body > MAX_BODY and code == "too_large" then return nil end
    if silent_wait and code == "timeout" then return nil end
    return ("a well-formed response gave %s: %s"):format(tostring(code), tostring(body))
  end
  if type(status) ~= "number" or type(body) ~= "string" then
    return ("http_get returned %s, %s"):format(type(status), type(body))
  end
  if c.mutated or c.lenient then return nil end
  if #c.body > MAX_BODY then return ("a body of %d bytes came back (over 1 MiB)"):format(#c.body) end
  if status ~= c.status then return ("status %s, sent %d"):format(tostring(status), c.status) end
  if body ~= c.body then
    return ("body of %d bytes differs from the %d sent: %s"):format(#body, #c.body, show_bytes(body))
  end
  return nil
end

return T
