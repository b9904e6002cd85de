-- A small JSON-RPC client of the specs' own for `devtools-tools mcp`: it
-- starts the command as a child (core.process.spawn with stdio pipes), writes
-- requests on its stdin and reads newline-delimited messages from its
-- stdout, keeping the notifications it meets apart from the answers.
--
--   local c = Client.spawn({ "mcp", url }, { env = {...} })
--   c:initialize()                            -- handshake, 2025-11-25 by default
--   local r = c:request("tools/list")         -- the result, or raises on a JSON-RPC error
--   local msg = c:call("tools/list")          -- the whole answer
--   c:next_notification("notifications/tools/list_changed", 5)
--   c:close_stdin(); c:wait_exit(2)

local core = require "devtools_tools.core"
local json = require "devtools_tools.base.json"

local Client = {}
Client.__index = Client

local BIN = "bin/devtools-tools"

-- spawn(args, opts?) -> Client. opts.env: environment additions;
-- opts.lua: the interpreter (default lua5.4; the command's own shebang
-- is bypassed so that a spec picks the build).
function Client.spawn(args, opts)
  opts = opts or {}
  local argv = { "/usr/bin/env", opts.lua or "lua5.4", BIN }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  local env = { DEVTOOLS_TOOLS_BUILD = os.getenv("DEVTOOLS_TOOLS_BUILD") or "build/lua5.4" }
  for k, v in pairs(opts.env or {}) do env[k] = v end
  local proc, io_ = assert(core.process.spawn(argv, { stdio = true, env = env, stderr_size = opts.stderr_size }))
  return setmetatable({ proc = proc, stdin = io_.stdin, stdout = io_.stdout, buf = "", lines = {},
    inbox = {}, next_id = 0, raw = {}, closed_in = false }, Client)
end

-- send_raw(text): bytes as they are on the server's stdin
function Client:send_raw(text)
  local from = 1
  while from <= #text do
    local n = assert(core.fd.write(self.stdin, text, from))
    from = from + n
    if from <= #text then core.poll({ self.stdin }, { "w" }, 1) end
  end
end

function Client:send(msg)
  self:send_raw(json.encode(msg) .. "\n")
end

-- read_line(deadline) -> the next line of stdout, or nil at the deadline
-- (false: stdout ended)
function Client:read_line(deadline)
  while true do
    local nl = self.buf:find("\n", 1, true)
    if nl then
      local line = self.buf:sub(1, nl - 1)
      self.buf = self.buf:sub(nl + 1)
      self.raw[#self.raw + 1] = line
      return line
    end
    if self.eof then return false end
    local left = deadline - core.now()
    if left <= 0 then return nil end
    core.poll({ self.stdout }, { "r" }, left)
    local s, err = core.fd.read(self.stdout, 1024 * 1024)
    if s == nil then
      self.eof = err or true
    else
      self.buf = self.buf .. s
    end
  end
end

-- next_message(timeout) -> the next message (decoded), nil at the timeout
function Client:next_message(timeout)
  local line = self:read_line(core.now() + (timeout or 10))
  if not line then return nil end
  local ok, msg = pcall(json.decode, line)
  assert(ok, "stdout carried something that is not JSON: " .. line:sub(1, 200))
  return msg
end

-- wait_for(pred, timeout) -> the first message (read from now, or kept
-- in the inbox) for which pred holds; others are kept in the inbox
function Client:wait_for(pred, timeout)
  for i, m in ipairs(self.inbox) do
    if pred(m) then
      table.remove(self.inbox, i)
      return m
    end
  end
  local deadline = core.now() + (timeout or 10)
  while true do
    local left = deadline - core.now()
    if left <= 0 then return nil end
    local m = self:next_message(left)
    if m == nil then return nil end
    if pred(m) then return m end
    self.inbox[#self.inbox + 1] = m
  end
end

function Client:start(method, params, id)
  if id == nil then
    self.next_id = self.next_id + 1
    id = self.next_id
  end
  self:send({ jsonrpc = "2.0", id = id, method = method, params = params })
  return id
end

-- answer(id, timeout) -> the response to request id, waited for up to timeout
-- seconds (60: beside a second make test, 20 were once too few)
function Client:answer(id, timeout)
  local m = self:wait_for(function(m) return m.id == id and m.method == nil end, timeout or 60)
  assert(m, "no answer to request " .. tostring(id) .. " in time; stderr: " .. self.proc:stderr())
  return m
end

-- call(method, params, timeout) -> the whole response
function Client:call(method, params, timeout)
  return self:answer(self:start(method, params), timeout)
end

-- request(method, params, timeout) -> result (raises on an error answer)
function Client:request(method, params, timeout)
  local m = self:call(method, params, timeout)
  if m.error then error("JSON-RPC error " .. tostring(m.error.code) .. ": " .. tostring(m.error.message), 2) end
  return m.result
end

function Client:notify(method, params)
  self:send({ jsonrpc = "2.0", method = method, params = params })
end

-- initialize(version?, opts?): the handshake, then a first tools/list, as
-- clients do: answered once the server's first attempt to open the page
-- ended (it may take a while on a loaded machine: 60 s), so that a spec
-- goes on with the page up when it can be. opts.list = false: no list.
function Client:initialize(version, opts)
  local r = self:request("initialize", { protocolVersion = version or "2025-11-25",
    capabilities = {}, clientInfo = { name = "spec", version = "1" } }, 60)
  self:notify("notifications/initialized")
  if not (opts and opts.list == false) then self:request("tools/list", nil, 60) end
  return r
end

-- next_notification(method, timeout) -> its params (or true), nil at the timeout
function Client:next_notification(method, timeout)
  local m = self:wait_for(function(m) return m.method == method and m.id == nil end, timeout)
  return m and (m.params or true) or nil
end

-- tool_names() -> the names tools/list gives, in order
function Client:tool_names(params)
  local r = self:request("tools/list", params)
  local out = {}
  for i, t in ipairs(r.tools) do out[i] = t.name end
  return out, r
end

function Client:close_stdin()
  if not self.closed_in then
    core.fd.close(self.stdin)
    self.closed_in = true
  end
end

-- wait_exit(timeout) -> "exit", code | "signal", n | nil (still running)
function Client:wait_exit(timeout)
  local how, code = self.proc:wait(core.now() + timeout)
  if how == nil then return nil end
  return how, code
end

function Client:stderr() return self.proc:stderr() end

-- kill(): ends the server (and closes our ends)
function Client:kill()
  self:close_stdin()
  if not self.eof then pcall(core.fd.close, self.stdout) self.eof = true end
  self.proc:close(0.5)
end

return Client
