-- devtools_tools.wire.endpoint: what the library knows of an endpoint it
-- talks to over HTTP or a websocket (a browser's debugging port, a
-- WebDriver server): its URL read, whether its host is this machine, the
-- caller's extra headers checked, and one HTTP request made, in a task on
-- the task's loop (rt/wait) or blocking outside one.
--
-- What it must never do: take a name the resolver would look up for this
-- machine (127.0.0.256 is a host name, not a loopback address), let a
-- header break the request it goes into, or wait without the caller's
-- deadline.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local tasks = require "devtools_tools.rt.task"
local wait = require "devtools_tools.rt.wait"

local raise = errors.raise
local type, tostring, tonumber, pairs, pcall, error = type, tostring, tonumber, pairs, pcall, error

local M = {}

-- The port of each scheme when the URL gives none.
M.DEFAULT_PORT = { http = 80, ws = 80, https = 443, wss = 443 }

-- parse(url) -> scheme, host, port | nil, path ("/" when empty), or nil:
-- scheme and host lower-cased, an IPv6 address without its brackets.
function M.parse(url)
  local scheme, rest = url:match("^(%a[%w+.-]*)://(.*)$")
  if not scheme then return nil end
  local hostport, path = rest:match("^([^/]*)(/?.*)$")
  local host, port = hostport:match("^%[([^%]]+)%]:?(%d*)$")
  if not host then host, port = hostport:match("^([^:]+):?(%d*)$") end
  if not host then return nil end
  port = tonumber(port)
  if path == "" then path = "/" end
  return scheme:lower(), host:lower(), port, path
end

-- is_loopback(host) -> true for "localhost", "::1" or an address in
-- 127.0.0.0/8 written as one (four decimal octets 0-255, no leading zero).
local function octet_ok(x) return #x <= 3 and tonumber(x) <= 255 and (x == "0" or x:sub(1, 1) ~= "0") end

function M.is_loopback(host)
  if host == "localhost" or host == "::1" then return true end
  local a, b, c = host:match("^127%.(%d+)%.(%d+)%.(%d+)$")
  return a ~= nil and octet_ok(a) and octet_ok(b) and octet_ok(c)
end

-- check_headers(h, what) -> h: a table of HTTP token names to strings
-- without line breaks (they go on the wire as they are); bad_argument
-- naming what otherwise.
function M.check_headers(h, what)
  if h == nil then return nil end
  if type(h) ~= "table" then
    raise("bad_argument", what .. ": headers must be a table of name = value strings")
  end
  for k, v in pairs(h) do
    if type(k) ~= "string" or not k:match("^[%w!#$%%&'*+%-.^_`|~]+$") then
      raise("bad_argument", what .. ": a header name must be an HTTP token, got " .. tostring(k))
    end
    if type(v) ~= "string" or v:find("[%z\r\n]") then
      raise("bad_argument", what .. ": header " .. k .. " must be a string without line breaks")
    end
  end
  return h
end

-- http(host, port, path, o) -> status, body | nil, message, code: one HTTP
-- request (o: core.http.request's options, o.deadline set). Outside a task
-- it blocks until done or the deadline; inside one it runs on the task's
-- loop (core.http.start), so the other tasks go on meanwhile.
function M.http(host, port, path, o)
  if not tasks.current() then return core.http.request(host, port, path, o) end
  local req, err, code = core.http.start(host, port, path, o)
  if not req then return nil, err, code end
  while true do
    local status, body, c = req:step()
    if status ~= false then
      req:close()
      return status, body, c
    end
    local rfd, wfd = req:fds()
    local ok, why = pcall(function()
      if rfd or wfd then wait.fds(rfd, wfd, o.deadline)
      else wait.condition(function() return false end, o.deadline) end
    end)
    if not ok then
      req:close()
      error(why, 0)                           -- cancelled
    end
  end
end

return M
