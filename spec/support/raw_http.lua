-- raw_http.lua - an HTTP server that answers each path with canned bytes,
-- for the HTTP client's framing specs (answers no well-behaved server
-- gives in the other specs).
--
-- Usage: lua5.4 spec/support/raw_http.lua   (prints "port N" on stderr;
-- listens on 127.0.0.1 only; one connection at a time; runs until killed)
--   /head       200 with Content-Length: 5 and no body (the answer to HEAD);
--               the connection stays open 10 s
--   /continue   100 Continue, 103 Early Hints, then 200 "hello"
--   /zeros      Content-Length of 70 zeros and a 5, then "hello"
--   /minus      Content-Length: -1, then "hello"
--   /drip       a chunked body (sizes 1, 2, 17 and 10, an extension, hex in
--               either case) sent a byte at a time, 1 ms apart: the client
--               reads it in pieces cut at every place
local socket = require "socket"

local RESP = {
  ["/head"] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\n",
  ["/continue"] = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"
    .. "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
  ["/zeros"] = "HTTP/1.1 200 OK\r\nContent-Length: " .. string.rep("0", 70) .. "5\r\n\r\nhello",
  ["/minus"] = "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nhello",
}

-- (the body /drip sends is "a" .. "bc" .. 17 "d" .. 10 "e")
local DRIP = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
  .. "1\r\na\r\n2;ext=1\r\nbc\r\n11\r\n" .. string.rep("d", 17) .. "\r\nA\r\n" .. string.rep("e", 10)
  .. "\r\n0\r\n\r\n"

local server = assert(socket.bind("127.0.0.1", 0))
local _, port = server:getsockname()
io.stderr:write("port ", port, "\n")
io.stderr:flush()

while true do
  local c = server:accept()
  if c then
    c:settimeout(5)
    local line = c:receive("*l") or ""
    repeat local h = c:receive("*l") until not h or h == ""
    local path = line:match("^%u+ (%S+)") or "/"
    if path == "/drip" then
      c:setoption("tcp-nodelay", true)
      for i = 1, #DRIP do c:send(DRIP:sub(i, i)); socket.sleep(0.001) end
    else
      c:send(RESP[path] or "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    end
    if path == "/head" then socket.select({ c }, nil, 10) end   -- open, as keep-alive would be
    c:close()
  end
end
