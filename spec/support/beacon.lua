-- beacon.lua - an HTTP server that notes the path of every request it
-- gets, for specs that must learn what a page did without asking the
-- browser (asking would read the connection, which is what they test).
--
-- Usage: lua5.4 spec/support/beacon.lua FILE   (prints "port N" on
-- stderr; listens on 127.0.0.1 only; appends "PATH\n" to FILE for each
-- request and answers 204 to any origin; runs until killed)
local socket = require "socket"

local file = assert(arg[1], "usage: beacon.lua FILE")
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
    local f = io.open(file, "a")
    if f then
      f:write((line:match("^%u+ (%S+)") or "/"), "\n")
      f:close()
    end
    c:send("HTTP/1.1 204 No Content\r\nAccess-Control-Allow-Origin: *\r\nContent-Length: 0\r\n"
      .. "Connection: close\r\n\r\n")
    c:close()
  end
end
