-- devtools_tools.browser.connect: dt.connect - a Browser over a websocket
-- to a browser someone else runs (ws:// or wss://, or http(s)://host:port
-- resolved through /json/version), with the caller's headers and TLS
-- settings; or over the Unix socket of a private background browser's
-- holder (unix:PATH, holder.lua).
--
-- What it must never do: attach to a non-loopback host unless asked,
-- skip a certificate check unless told to, talk to a Unix socket another
-- user serves, or wait past the call's deadline.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local options = require "devtools_tools.base.options"
local json = require "devtools_tools.base.json"
local tasks = require "devtools_tools.rt.task"
local cdp = require "devtools_tools.wire.cdp"
local endpoint = require "devtools_tools.wire.endpoint"
local chromium = require "devtools_tools.browser.chromium"
local object = require "devtools_tools.browser.object"
local holder = require "devtools_tools.browser.holder"

local raise = errors.raise
local now = core.now
local check_opts = options.check
local check_history = chromium.check_history
local type, tostring, tonumber, error, ipairs = type, tostring, tonumber, error, ipairs

local M = {}

local connect_opts = { allow_remote = "boolean", timeout = true, history = true, headers = true,
  ca_file = "string", insecure = "boolean" }

local default_port = endpoint.DEFAULT_PORT
local parse_url, is_loopback, http = endpoint.parse, endpoint.is_loopback, endpoint.http

-- The TLS and header options of connect, as the C core takes them.
local function tls_opts(opts, host)
  return { ca_file = opts.ca_file, insecure = opts.insecure == true, server_name = host }
end

-- A refused websocket handshake's HTTP status, as details (the C core
-- writes it "the server answered HTTP 401 (...)"), or nil.
local function handshake_details(message)
  local status = tostring(message):match("the server answered HTTP (%d+)")
  return status and { details = { status = tonumber(status) } } or nil
end

-- greet(transport, url, timeout, deadline, history) -> Browser: the
-- connection's first call answered (the browser's version), or a
-- connect_failed that says why.
local function greet(transport, url, timeout, deadline, history)
  local conn = cdp.new(transport, { timeout = timeout })
  local ok, version = errors.catch(conn.call, conn, "Browser.getVersion", nil,
    { timeout = math.max(0, deadline - now()) })
  if not ok then
    -- A handshake that failed on the loop (async) says why itself.
    local state, why
    if transport.state then state, why = transport:state() end
    conn:close()
    if version.code == "cancelled" then error(version, 0) end
    local message = version.message
    if state == "closed" and why and version.code ~= "timeout" then message = why end
    error(errors.c_failure(version.code, "connect: " .. url .. ": " .. message, "connect_failed",
      handshake_details(message)), 0)
  end
  return object.new(conn, { timeout = timeout, launched = false, url = url, history = history },
    { version = version })
end

-- connect("unix:PATH"): the private background browser's holder
-- (browser/holder.lua) at the socket PATH (absolute), served by a
-- process of this user only. opts: timeout, history.
local function connect_unix(url, opts, history)
  local path = url:sub(6)
  if path:sub(1, 2) == "//" then path = path:sub(3) end                   -- (unix:///path too)
  if path:sub(1, 1) ~= "/" then
    local problem = "expected unix:/absolute/path/of/a/socket"
    raise("bad_argument", "connect: " .. problem .. ", got " .. url, { details = { problem = problem, url = url } })
  end
  for _, k in ipairs({ "headers", "ca_file", "insecure", "allow_remote" }) do
    if opts[k] ~= nil then raise("bad_argument", "connect: " .. k .. " does not apply to a unix: socket") end
  end
  local timeout = opts.timeout or options.DEFAULT_TIMEOUT
  local deadline = now() + timeout
  return greet(holder.connect(path, deadline), url, timeout, deadline, history)
end

-- connect(url, opts?) -> Browser. url: http(s)://host:port (resolved
-- through /json/version), ws(s)://host:port/devtools/browser/<id>, or
-- unix:/path of a private background browser's socket.
-- opts: allow_remote, timeout, history, headers (on every request and the
-- handshake), ca_file (a private CA, PEM), insecure (no certificate check).
function M.connect(url, opts)
  opts = check_opts(opts, connect_opts, "connect")
  local history = check_history(opts.history, "connect")
  if type(url) ~= "string" then
    raise("bad_argument", "connect: url must be a string, got " .. type(url))
  end
  if url:sub(1, 5) == "unix:" then return connect_unix(url, opts, history) end
  local headers = endpoint.check_headers(opts.headers, "connect")
  local scheme, host, port, path = parse_url(url)
  -- (details.problem: what is wrong with the url, for a front end that
  -- names the url its own way; details.host, loopback_only: the host refused)
  if not scheme or not default_port[scheme] then
    local problem = "expected http(s)://host:port or ws(s)://host:port/..."
    raise("bad_argument", "connect: " .. problem .. ", got " .. url, { details = { problem = problem, url = url } })
  end
  if not is_loopback(host) and not opts.allow_remote then
    raise("connect_failed", "connect: refusing non-loopback host " .. host
      .. " (the DevTools protocol gives full control of the browser;"
      .. " pass allow_remote = true to allow it)", { details = { host = host, loopback_only = true } })
  end
  if port ~= nil and (port < 1 or port > 65535 or port % 1 ~= 0) then
    local problem = "port must be between 1 and 65535"
    raise("bad_argument", "connect: " .. problem .. ", got " .. tostring(port),
      { details = { problem = problem, url = url } })
  end
  port = port or default_port[scheme]
  local tls = scheme == "https" or scheme == "wss"
  local topts = tls_opts(opts, host)
  local timeout = opts.timeout or options.DEFAULT_TIMEOUT
  local deadline = now() + timeout
  -- Connect by address: "localhost" is resolved here (other names in the
  -- core, within the deadline), and the Host header stays what the URL
  -- says (Chromium answers 500 to a Host that is not an IP or localhost).
  local addr = host == "localhost" and "127.0.0.1" or host
  local hosthdr = (host:find(":", 1, true) and ("[" .. host .. "]") or host) .. ":" .. port
  if scheme == "http" or scheme == "https" then
    local status, body, code = http(addr, port, "/json/version", {
      deadline = deadline, headers = headers, tls = tls, server_name = topts.server_name,
      ca_file = topts.ca_file, insecure = topts.insecure })
    if not status then                                -- "GET http://host:port/json/version: why"
      error(errors.c_failure(code, "connect: " .. tostring(body), "connect_failed"), 0)
    end
    if status ~= 200 then
      raise("connect_failed", "connect: GET /json/version answered " .. tostring(status),
        { details = { status = status, body = body:sub(1, 200) } })
    end
    local ok, info = errors.catch(json.decode, body)
    local ws = ok and type(info) == "table" and info.webSocketDebuggerUrl
    if type(ws) ~= "string" then
      raise("connect_failed", "connect: /json/version has no webSocketDebuggerUrl")
    end
    local wscheme, _, _, wpath = parse_url(ws)
    if (wscheme ~= "ws" and wscheme ~= "wss") or not wpath then
      raise("connect_failed", "connect: /json/version gave an unusable webSocketDebuggerUrl: " .. ws)
    end
    -- The socket is the endpoint's own (host, port, TLS): a browser behind
    -- a TLS front still writes ws:// (it knows nothing of the front).
    path = wpath
    tls = tls or wscheme == "wss"
  end
  -- In a task the handshake is driven on the loop (async): the first CDP
  -- call below waits for it like for any reply.
  local transport, err, code = core.ws.connect(addr, port, path,
    { deadline = deadline, host_header = hosthdr, headers = headers, tls = tls,
      ca_file = topts.ca_file, insecure = topts.insecure, async = tasks.current() ~= nil })
  if not transport then
    error(errors.c_failure(code, "connect: " .. url .. ": " .. tostring(err), "connect_failed",
      handshake_details(err)), 0)
  end
  return greet(transport, url, timeout, deadline, history)
end

return M
