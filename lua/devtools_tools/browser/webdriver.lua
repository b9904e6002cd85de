-- devtools_tools.browser.webdriver: a browser from any W3C WebDriver endpoint
-- (Selenium Grid 4's router, chromedriver), driven over CDP.
--
-- dt.webdriver(url, capabilities?, opts?) creates a WebDriver session (POST
-- /session), reads where the session's browser speaks CDP (Grid's `se:cdp`
-- capability, or chromedriver's `goog:chromeOptions.debuggerAddress`),
-- attaches with dt.connect and returns that Browser; closing it deletes the
-- session (DELETE /session/<id>), which ends the remote browser.
--
-- What it must never do: leave a session behind when attaching fails (it
-- is deleted before the error is raised), return as if a session were gone
-- when its DELETE got no answer (the error says it may still be alive),
-- put what the endpoint sent into a URL unescaped, blame the caller for
-- what the endpoint sent (protocol_error, not bad_argument), talk to a
-- non-loopback endpoint without allow_remote, or wait past the one
-- deadline of the call; inside a task its requests run on the loop, never
-- blocking the other tasks. It uses WebDriver only to create and delete
-- the session: everything else is CDP.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local json = require "devtools_tools.base.json"
local options = require "devtools_tools.base.options"
local browser = require "devtools_tools.browser"
local endpoint = require "devtools_tools.wire.endpoint"

local raise = errors.raise
local now = core.now
local type, tostring, ipairs = type, tostring, ipairs

local M = {}

-- The capabilities used when the caller gives none: Chrome, headless, with
-- the flags dt.launch uses (a root, offline machine needs them).
function M.default_capabilities()
  local args = {}
  for i, a in ipairs(browser.default_args) do args[i] = a end
  return { browserName = "chrome", ["goog:chromeOptions"] = { args = json.array(args) } }
end

-- parse(url) -> scheme, host, port, path: the endpoint's URL (wire/endpoint),
-- its port as its scheme's when it gives none, its path without a trailing /
local function parse(url)
  local scheme, host, port, path = endpoint.parse(url)
  if not scheme then return nil end
  return scheme, host, port or endpoint.DEFAULT_PORT[scheme] or 80, (path:gsub("/+$", ""))
end

local is_loopback = endpoint.is_loopback

-- The longest request path the C core's HTTP client takes (a longer one is
-- a misuse it raises on), and the longest path of the caller's URL, which
-- leaves room for /session/<an id of 36 bytes, escaped> and more.
local MAX_PATH, MAX_URL_PATH = 1023, 512

-- An id the endpoint chose, as one segment of a URL path: every byte but
-- RFC 3986's unreserved ones percent-encoded (a W3C id is a UUID, which
-- this leaves as it is).
local function escape_segment(s)
  return (s:gsub("[^%w%-%._~]", function(c) return ("%%%02X"):format(c:byte()) end))
end

-- What the endpoint sent, for a message: printable ASCII, at most 200 bytes.
local function shown(v)
  local s = tostring(v)
  local cut = #s > 200
  s = s:sub(1, 200):gsub("[^\32-\126]", function(c) return ("\\x%02x"):format(c:byte()) end)
  return '"' .. s .. '"' .. (cut and "..." or "")
end

local wd_opts = { allow_remote = "boolean", timeout = true, headers = true, ca_file = "string",
  insecure = "boolean", history = true }

-- One WebDriver command: returns the decoded `value`, or raises with the
-- endpoint's own error and message.
local function command(ep, method, path, body, deadline)
  local addr = ep.host == "localhost" and "127.0.0.1" or ep.host
  local status, text, code = endpoint.http(addr, ep.port, ep.path .. path, {
    method = method, body = body and json.encode(body) or nil,
    content_type = body and "application/json; charset=utf-8" or nil,
    headers = ep.headers, deadline = deadline, tls = ep.scheme == "https",
    server_name = ep.host, ca_file = ep.ca_file, insecure = ep.insecure })
  if not status then                                      -- "METHOD url: why"
    error(errors.c_failure(code, "webdriver: " .. tostring(text), "connect_failed"), 0)
  end
  local ok, doc = errors.catch(json.decode, text)
  local value = ok and type(doc) == "table" and doc.value
  if status ~= 200 or type(value) == "table" and value.error then
    local e = type(value) == "table" and value or {}
    raise("connect_failed", "webdriver: " .. method .. " " .. path .. " answered "
      .. tostring(status) .. (e.error and (": " .. tostring(e.error)) or "")
      .. (e.message and (": " .. tostring(e.message):sub(1, 300)) or ""),
      { details = { status = status, error = e.error, message = e.message } })
  end
  if not ok then
    raise("protocol_error", "webdriver: " .. method .. " " .. path .. " answered something that is not JSON")
  end
  return value
end

-- Where the session's browser speaks CDP, from its capabilities: the URL
-- and the capability it came from; nil when none is named; nil, why when
-- one is there but is no URL (the endpoint's fault).
local function cdp_endpoint(caps)
  local se = caps["se:cdp"]
  if se ~= nil then
    if type(se) ~= "string" or se == "" then
      return nil, "se:cdp is " .. (type(se) == "string" and "empty" or "a " .. type(se)
        .. (type(se) == "table" and "" or " (" .. shown(se) .. ")"))
    end
    return se, "se:cdp"
  end
  local goog = caps["goog:chromeOptions"]
  local addr = type(goog) == "table" and goog.debuggerAddress
  if addr ~= nil and addr ~= false then
    if type(addr) ~= "string" or addr == "" then
      return nil, "goog:chromeOptions.debuggerAddress is " .. (type(addr) == "string" and "empty"
        or "a " .. type(addr))
    end
    return "http://" .. addr, "goog:chromeOptions.debuggerAddress"
  end
  return nil
end

-- webdriver(url, capabilities?, opts?) -> Browser
-- opts: timeout (one deadline for the session and attaching), allow_remote,
-- headers, ca_file, insecure (for the WebDriver endpoint and the CDP one),
-- history (as dt.connect's).
function M.connect(url, capabilities, opts)
  opts = options.check(opts, wd_opts, "webdriver")
  if type(url) ~= "string" then
    raise("bad_argument", "webdriver: url must be a string, got " .. type(url))
  end
  if capabilities ~= nil and type(capabilities) ~= "table" then
    raise("bad_argument", "webdriver: capabilities must be a table, got " .. type(capabilities))
  end
  endpoint.check_headers(opts.headers, "webdriver")
  browser.check_history(opts.history, "webdriver")
  local scheme, host, port, path = parse(url)
  if scheme ~= "http" and scheme ~= "https" then
    raise("bad_argument", "webdriver: expected http(s)://host:port[/path], got " .. url)
  end
  if #path > MAX_URL_PATH or path:find("[%c ]") then
    raise("bad_argument", "webdriver: the URL's path must be at most " .. MAX_URL_PATH
      .. " bytes, without spaces or control characters")
  end
  if port < 1 or port > 65535 then
    raise("bad_argument", "webdriver: port must be between 1 and 65535, got " .. tostring(port))
  end
  if not is_loopback(host) and not opts.allow_remote then
    raise("connect_failed", "webdriver: refusing non-loopback host " .. host
      .. " (pass allow_remote = true to allow it)")
  end
  local timeout = opts.timeout or 60
  local deadline = now() + timeout
  -- Attaching may fail after the session exists: what is left for deleting
  -- it then (a session left behind holds a Grid node until it times out)
  -- is kept back from the attach, within the one deadline.
  local reserve = math.min(1, timeout / 10)
  local ep = { url = url:gsub("/+$", ""), scheme = scheme, host = host, port = port,
    path = path, headers = opts.headers, ca_file = opts.ca_file, insecure = opts.insecure }

  local created = command(ep, "POST", "/session",
    { capabilities = { alwaysMatch = capabilities or M.default_capabilities() } }, deadline)
  local id = type(created) == "table" and created.sessionId
  local caps = type(created) == "table" and created.capabilities
  if type(id) ~= "string" or type(caps) ~= "table" then
    raise("protocol_error", "webdriver: POST /session gave no sessionId and capabilities")
  end
  -- The id goes into every later URL, escaped; one that no URL can carry
  -- leaves nothing to delete the session with.
  local session_path = "/session/" .. escape_segment(id)
  if id == "" or #ep.path + #session_path > MAX_PATH then
    raise("protocol_error", "webdriver: POST /session gave a session id that cannot be used ("
      .. (id == "" and "empty" or #id .. " bytes: no URL can carry it") .. "); a session may be left"
      .. " on the endpoint until its idle timeout", { details = { session_id = id } })
  end
  local function delete(limit)
    return command(ep, "DELETE", session_path, nil, limit)
  end
  -- Deletes the session; false, error when it may still be alive (no
  -- answer, no connection, an error other than "invalid session id", which
  -- says it is gone already).
  local function delete_checked(limit)
    local ok, e = errors.catch(delete, limit)
    if ok or (e.details and e.details.error == "invalid session id") then return true end
    return false, e
  end
  local function alive_note(e)
    return "the WebDriver session " .. shown(id) .. " may still be alive: " .. e.message
  end
  -- Raises err after deleting the session, saying so when that failed.
  local function fail(err)
    local deleted, e = delete_checked(deadline)
    if not deleted then
      err.message = err.message .. " (and " .. alive_note(e) .. ")"
      err.details = err.details or {}
      err.details.session_id = id
    end
    error(err, 0)
  end

  local target, from = cdp_endpoint(caps)
  if not target then
    if from then
      fail(errors.new("protocol_error", "webdriver: the session's CDP endpoint is not a URL: " .. from))
    end
    fail(errors.new("connect_failed", "webdriver: the session's capabilities name no CDP endpoint"
      .. " (neither se:cdp nor goog:chromeOptions.debuggerAddress)"))
  end
  local ok, b = errors.catch(browser.connect, target, {
    timeout = math.max(0, deadline - reserve - now()), allow_remote = opts.allow_remote,
    headers = opts.headers, ca_file = opts.ca_file, insecure = opts.insecure, history = opts.history })
  if not ok then
    if b.code == "bad_argument" then
      -- Our own options were checked above: what connect refused is the
      -- URL the endpoint named.
      b = errors.new("protocol_error", "webdriver: the session's CDP endpoint (" .. from .. ") is not a URL"
        .. " dt.connect takes: " .. shown(target) .. ": " .. b.message)
    end
    fail(b)
  end
  b.webdriver = { url = ep.url, session_id = id, capabilities = caps, cdp = target }
  -- browser:close's deadline bounds the DELETE too; a DELETE that got no
  -- answer (or failed) makes close raise, after everything else is done:
  -- the session may still be alive, holding a node.
  browser.on_close(b, function(_, close_deadline)
    local deleted, e = delete_checked(close_deadline)
    if not deleted then
      e.message = "close: " .. alive_note(e)
      e.details = e.details or {}
      e.details.session_id = id
      error(e, 0)
    end
  end)
  return b
end

return M
