-- tools/fuzz/ws_target.lua: `make fuzz` cases for the websocket transport
-- (core.ws.connect, libwebsockets underneath) against a fake server.
--
-- The peer (tools/fuzz/peer.lua ws, on LuaSocket) answers the upgrade -
-- correctly, or with a wrong status, a wrong accept key, garbage or
-- silence - then writes random frames in random chunks: text and binary
-- messages, fragmented or not, pings and pongs between fragments, and now
-- and then something a server must not send (a masked frame, RSV bits, an
-- unknown opcode, a long or fragmented control frame, a stray
-- continuation, a length not in its shortest form, garbage bytes, a head
-- declaring more than 2^40 bytes, which must end in bad_message); it ends
-- with a close frame, by dropping the connection, or by staying silent.
-- Every message before the first bad frame must come out exactly (or as
-- too_large over the limit); after it, anything but a crash, a hang or a
-- wait past a deadline; the transport ends "closed" (or "timeout" while
-- the peer stays silent). A failed handshake must give connect_failed or
-- timeout. The peer generates the case again from (seed, case), so
-- generation must never depend on pairs order or the clock; the peer must
-- never close with unread bytes (that sends RST, which loses data).

local core = require "devtools_tools.core"
local J = require "fuzz.json_target"
local tcp_peer = require "fuzz.tcp_peer"

local T = { name = "ws", batch = 20 }

local HANDSHAKES = { "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok",
  "status", "accept", "no_upgrade", "garbage", "hangup", "silent", "frame_in_head" }

local function payload(r, n, text)
  if text then                                  -- valid UTF-8, multi-byte characters too
    local t, len = {}, 0
    while len < n do
      local ch = r:chance(0.8) and string.char(r:int(0x20, 0x7E)) or utf8.char(r:pick({ 0xE9, 0x20AC, 0x1F600, r:int(0x80, 0xD7FF) }))
      t[#t + 1] = ch
      len = len + #ch
      if #t > 512 then                          -- long ones repeat a block
        local block = table.concat(t)
        return block:rep((n - len) // #block + 2)
      end
    end
    return table.concat(t)
  end
  if n <= 256 then return r:bytes(n) end
  return r:bytes(256):rep(n // 256 + 1):sub(1, n)
end

-- frame{fin, rsv, op, payload, masked, wide} -> bytes
function T.frame(f)
  local len, head = #f.payload, string.char(((f.fin and 1 or 0) << 7) | ((f.rsv or 0) << 4) | f.op)
  local mask = f.masked and 0x80 or 0
  if len < 126 and not f.wide then
    head = head .. string.char(mask | len)
  elseif len < 65536 and f.wide ~= 8 then
    head = head .. string.char(mask | 126) .. string.pack(">I2", len)
  else
    head = head .. string.char(mask | 127) .. string.pack(">I8", len)
  end
  local body = f.payload
  if f.masked then
    local key = { 0x12, 0x34, 0x56, 0x78 }
    local out = {}
    for i = 1, #body do out[i] = string.char(body:byte(i) ~ key[(i - 1) % 4 + 1]) end
    head = head .. string.char(table.unpack(key))
    body = table.concat(out)
  end
  return head .. body
end

local BAD = { "masked", "rsv", "opcode", "long_control", "fragmented_control", "continuation",
  "wide", "garbage", "new_in_fragmented", "huge" }

-- gen(r) -> case: handshake, items (frames or raw bytes, each with the
-- message it completes), where the stream turns bad, ending, chunks, limit
function T.gen(r)
  local c = { handshake = r:pick(HANDSHAKES), items = {}, chunks = {}, pauses = {} }
  local bad_at = r:chance(0.25) and r:int(1, 8) or nil
  local function add(item) c.items[#c.items + 1] = item end
  local nmsg = r:int(0, 8)
  for m = 1, nmsg do
    if bad_at == m then
      local kind = r:pick(BAD)
      c.bad = kind
      c.bad_item = #c.items + 1
      if kind == "masked" then add({ fin = true, op = 1, payload = "masked", masked = true })
      elseif kind == "rsv" then add({ fin = true, op = 1, rsv = r:int(1, 7), payload = "rsv" })
      elseif kind == "opcode" then add({ fin = true, op = r:pick({ 3, 4, 5, 6, 7, 11, 12, 15 }), payload = "op" })
      elseif kind == "long_control" then add({ fin = true, op = r:pick({ 8, 9, 10 }), payload = ("p"):rep(r:int(126, 300)) })
      elseif kind == "fragmented_control" then add({ fin = false, op = 9, payload = "ping" })
      elseif kind == "continuation" then add({ fin = true, op = 0, payload = "stray" })
      elseif kind == "wide" then add({ fin = true, op = 2, payload = "short", wide = r:pick({ 2, 8 }) })
      elseif kind == "new_in_fragmented" then
        add({ fin = false, op = 1, payload = "first half" })
        c.bad_item = #c.items + 1
        add({ fin = true, op = 2, payload = "a new message" })
      elseif kind == "huge" then                -- a few bytes of it follow, then whatever comes
        -- (the transport refuses a frame with more than 2^40 bytes still
        -- to come, as lws tells: what lws read of it counts off, so the
        -- length keeps a margin over 2^40)
        local len = r:pick({ (1 << 40) + (1 << 20), 1 << 62, (1 << 63) - 1,
          r:int((1 << 40) + (1 << 20), 1 << 62) })
        add({ raw = string.char(r:pick({ 0x81, 0x82, 0x01, 0x02 }), 127) .. string.pack(">I8", len)
          .. r:bytes(r:int(0, 10)) })
      else add({ raw = r:bytes(r:int(1, 40)) }) end
    end
    local text = r:chance(0.5)
    local size = r:chance(0.1) and r:int(100000, 1500000) or r:size(70000)
    local body = payload(r, size, text):sub(1, size)
    if text then                                -- do not end inside a character
      while #body > 0 and not utf8.len(body) do body = body:sub(1, -2) end
    end
    local nfrag = r:chance(0.3) and r:int(2, 6) or 1
    local at = 1
    for f = 1, nfrag do
      local piece = f == nfrag and body:sub(at) or body:sub(at, at + r:int(0, #body - at + 1) - 1)
      at = at + #piece
      add({ fin = f == nfrag, op = f == 1 and (text and 1 or 2) or 0, payload = piece,
            message = f == nfrag and body or nil })
      if f < nfrag and r:chance(0.3) then       -- a control frame between fragments
        add({ fin = true, op = r:pick({ 9, 10 }), payload = r:bytes(r:int(0, 125)) })
      end
    end
    if r:chance(0.15) then add({ fin = true, op = r:pick({ 9, 10 }), payload = r:bytes(r:size(125)) }) end
  end
  local e = r:int(1, 3)
  c.ending = e == 1 and "close" or e == 2 and "drop" or "stay"
  if c.ending == "close" then
    add({ fin = true, op = 8, payload = string.pack(">I2", r:pick({ 1000, 1001, 1011, 4000 })) .. "bye" })
  end
  if r:chance(0.3) then c.limit = r:pick({ 1, 64, 1000, 65536, 1 << 20 }) end
  local total = 0
  for _, it in ipairs(c.items) do
    it.bytes_len = it.raw and #it.raw or #T.frame(it)
    total = total + it.bytes_len
  end
  local left, n = total, 0
  while left > 0 and n < 300 do
    n = n + 1
    c.chunks[n] = r:chance(0.3) and r:int(1, 8) or r:size(1 << 17) + 1
    left = left - c.chunks[n]
    if r:chance(0.02) then c.pauses[n] = r:int(1, 5) end
  end
  return c
end

function T.stream(c)
  local parts = {}
  for i, it in ipairs(c.items) do parts[i] = it.raw or T.frame(it) end
  return table.concat(parts)
end

local function show_bytes(s)
  if #s > 80 then return ("%q...(%d bytes)"):format(s:sub(1, 60), #s) end
  return ("%q"):format(s)
end

function T.show(c)
  local items = {}
  for i, it in ipairs(c.items) do
    items[i] = it.raw and ("raw " .. show_bytes(it.raw))
      or ("%s%s op %d%s%s %s"):format(it.fin and "fin" or "more", it.rsv and (" rsv " .. it.rsv) or "", it.op,
        it.masked and " masked" or "", it.wide and (" wide " .. it.wide) or "", show_bytes(it.payload))
  end
  return ("handshake %s; %d frames [%s]; bad %s; ending %s; limit %s; %d chunks"):format(c.handshake, #c.items,
    table.concat(items, ", "), tostring(c.bad), c.ending, tostring(c.limit), #c.chunks)
end

---------------------------------------------------------------- the peer

-- SHA-1 (RFC 3174) and base64, for Sec-WebSocket-Accept.
local function sha1(msg)
  local function rol(x, n) return ((x << n) | (x >> (32 - n))) & 0xFFFFFFFF end
  local h0, h1, h2, h3, h4 = 0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0
  local ml = #msg * 8
  msg = msg .. "\128" .. ("\0"):rep((55 - #msg) % 64) .. string.pack(">I8", ml)
  for chunk = 1, #msg, 64 do
    local w = {}
    for i = 0, 15 do w[i] = string.unpack(">I4", msg, chunk + i * 4) end
    for i = 16, 79 do w[i] = rol(w[i - 3] ~ w[i - 8] ~ w[i - 14] ~ w[i - 16], 1) end
    local a, b, cc, d, e = h0, h1, h2, h3, h4
    for i = 0, 79 do
      local f, k
      if i < 20 then f, k = (b & cc) | ((~b) & d), 0x5A827999
      elseif i < 40 then f, k = b ~ cc ~ d, 0x6ED9EBA1
      elseif i < 60 then f, k = (b & cc) | (b & d) | (cc & d), 0x8F1BBCDC
      else f, k = b ~ cc ~ d, 0xCA62C1D6 end
      local temp = (rol(a, 5) + (f & 0xFFFFFFFF) + e + k + w[i]) & 0xFFFFFFFF
      e, d, cc, b, a = d, cc, rol(b, 30), a, temp
    end
    h0, h1, h2 = (h0 + a) & 0xFFFFFFFF, (h1 + b) & 0xFFFFFFFF, (h2 + cc) & 0xFFFFFFFF
    h3, h4 = (h3 + d) & 0xFFFFFFFF, (h4 + e) & 0xFFFFFFFF
  end
  return string.pack(">I4I4I4I4I4", h0, h1, h2, h3, h4)
end
T.sha1 = sha1

local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local function base64(s)
  local out = {}
  for i = 1, #s, 3 do
    local a, b, c = s:byte(i, i + 2)
    local n = (a << 16) | ((b or 0) << 8) | (c or 0)
    for k = 0, 3 do
      local idx = (n >> (18 - 6 * k)) & 63
      out[#out + 1] = (k <= 1 or (k == 2 and b) or (k == 3 and c)) and B64:sub(idx + 1, idx + 1) or "="
    end
  end
  return table.concat(out)
end
T.base64 = base64

-- serve(c): runs in the peer process; one client, then exits.
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
  local key
  repeat
    local line = client:receive("*l")
    if not line then os.exit(0) end
    key = key or line:match("^[Ss]ec%-[Ww]eb[Ss]ocket%-[Kk]ey:%s*(%S+)")
  until line == ""
  local accept = base64(sha1((key or "") .. "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
  local hs = c.handshake
  local function head(status, upgrade, acc)
    return ("HTTP/1.1 %s\r\n%sConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n"):format(
      status, upgrade and "Upgrade: websocket\r\n" or "", acc)
  end
  local stream = T.stream(c)
  if hs == "ok" then client:send(head("101 Switching Protocols", true, accept))
  elseif hs == "status" then client:send(head("200 OK", true, accept))
  elseif hs == "accept" then client:send(head("101 Switching Protocols", true, base64(sha1("wrong"))))
  elseif hs == "no_upgrade" then client:send(head("101 Switching Protocols", false, accept))
  elseif hs == "garbage" then client:send("\0\255garbage\r\n\r\n")
  elseif hs == "hangup" then client:send("HTTP/1.1 101 Swi"); client:close(); os.exit(0)
  elseif hs == "silent" then client:receive("*a"); os.exit(0)
  elseif hs == "frame_in_head" then
    -- the first frames arrive in the same write as the head
    client:send(head("101 Switching Protocols", true, accept) .. stream)
    stream = ""
  end
  if hs ~= "ok" and hs ~= "frame_in_head" then client:receive("*a"); os.exit(0) end
  local at = 1
  for n, size in ipairs(c.chunks) do
    if at > #stream then break end
    if not client:send(stream:sub(at, at + size - 1)) then os.exit(0) end
    at = at + size
    if c.pauses[n] then socket.sleep(c.pauses[n] / 1000) end
  end
  if at <= #stream and not client:send(stream:sub(at)) then os.exit(0) end
  if c.ending == "drop" then
    -- FIN without a close frame; then read what the client sent (pongs),
    -- since closing with unread bytes would send RST, and RST makes the
    -- client's kernel throw away what it had not read yet
    client:shutdown("send")
    client:settimeout(5)
    client:receive("*a")
    client:close()
    os.exit(0)
  end
  -- close and stay: read (and drop) what the client sends until it closes
  client:settimeout(c.ending == "close" and 5 or 30)
  client:receive("*a")
  client:close()
  os.exit(0)
end

---------------------------------------------------------------- the checks

-- The messages before the first bad frame (or the close frame), in order.
local function good_messages(c)
  local out = {}
  for i, it in ipairs(c.items) do
    if c.bad_item and i >= c.bad_item then break end
    if it.op == 8 then break end
    if it.message then out[#out + 1] = it.message end
  end
  return out
end

function T.run(c, ctx)
  local proc, port = tcp_peer.start("ws", ctx)
  if not proc then return port end
  local ok_hs = c.handshake == "ok" or c.handshake == "frame_in_head"
  local t0 = core.now()
  local wait = ok_hs and 10 or 0.5
  local t, msg, code = core.ws.connect("127.0.0.1", port, "/devtools/browser/fuzz",
    { deadline = t0 + wait, limit = c.limit })
  local failure
  if core.now() - t0 > wait + 1 then
    failure = ("ws_connect overran its deadline by %.1f s"):format(core.now() - t0 - wait)
  elseif not ok_hs then
    if t then failure = "ws_connect accepted a bad handshake (" .. c.handshake .. ")"
    elseif code ~= "connect_failed" and code ~= "timeout" then
      failure = "a bad handshake gave " .. tostring(code) .. ": " .. tostring(msg)
    end
  elseif not t and not (code == "connect_failed" and c.bad) then
    -- A bad frame that arrives with the handshake's answer makes
    -- libwebsockets drop the connection before ws_connect has looked: then
    -- connect_failed is what the caller gets (the messages before it are
    -- lost). Anything else from a good handshake is wrong.
    failure = "ws_connect failed against a good handshake: " .. tostring(code) .. ": " .. tostring(msg)
  elseif not t then
    failure = nil
  else
    failure = T.check_transport(c, t)
  end
  if t then t:close() end
  proc:close(0)
  return failure
end

function T.check_transport(c, t)
  local want = good_messages(c)
  local limit = c.limit or math.huge
  for i, m in ipairs(want) do
    local t0 = core.now()
    local got, err, code, head = t:recv(t0 + 15)
    if core.now() - t0 > 16 then return ("message %d: recv overran its deadline"):format(i) end
    if #m > limit then
      if code ~= "too_large" then
        return ("message %d (%d bytes, limit %d): expected too_large, got %s"):format(i, #m, limit,
          got and show_bytes(got) or (tostring(code) .. ": " .. tostring(err)))
      end
      if type(head) ~= "string" or head ~= m:sub(1, #head) then
        return ("message %d: too_large with a head that does not start it: %s"):format(i, tostring(head))
      end
    elseif got ~= m then
      return ("message %d (%d bytes): got %s"):format(i, #m, got and show_bytes(got) .. " (" .. #got .. " bytes)"
        or (tostring(code) .. ": " .. tostring(err)))
    end
  end
  -- then: after a bad frame, maybe more; at last closed (or timeout while
  -- the peer is silent and nothing was wrong)
  for _ = 1, 20 do
    -- a silent peer: 0.1 s shows nothing more comes; after a bad frame
    -- libwebsockets may close or carry on, so 2 s
    local wait = c.ending ~= "stay" and 15 or c.bad and 2 or 0.1
    local t0 = core.now()
    local got, err, code = t:recv(t0 + wait)
    if core.now() - t0 > wait + 1 then return "recv overran its deadline after the last message" end
    if got == nil then
      if c.ending == "stay" and not c.bad then
        if code ~= "timeout" then return "the peer is silent, yet recv gave " .. tostring(code) .. ": " .. tostring(err) end
      elseif c.bad == "huge" and code ~= "bad_message" then
        -- (what came before it in the same frame stream may still be
        -- read: a fragment's too_large is counted by the loop)
        if code ~= "too_large" then
          return ("after a head declaring more than 2^40 bytes: expected bad_message, got %s: %s"):format(
            tostring(code), tostring(err))
        end
      elseif code ~= "closed" and not (c.bad and (code == "timeout" or code == "too_large"
          or code == "bad_message")) then
        return ("after the last message: expected closed, got %s: %s"):format(tostring(code), tostring(err))
      end
      if code ~= "too_large" then return nil end
    elseif not c.bad then
      return "a message nobody sent: " .. show_bytes(got)
    end
  end
  return "recv kept handing out messages after a bad frame"
end

return T
