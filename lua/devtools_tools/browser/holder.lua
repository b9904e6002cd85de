-- devtools_tools.browser.holder: the private background browser's keeper.
-- A small process of its own (the detached launch with a socket starts
-- it: launch{detached = true, socket = path}) runs Chromium on
-- --remote-debugging-pipe, so the browser opens no port, and serves that
-- pipe on a Unix socket in a 0700 directory, to connections from its own
-- user only (the kernel's SO_PEERCRED, checked on each one).
--
-- Several clients share the one pipe (the command line's commands,
-- Neovim, `mcp --connect`): each gets a browser session of its own
-- (Target.attachToBrowserTarget), so Chromium keeps their state apart as
-- it does for two websocket connections - what each enabled, the targets
-- each attached, the events each asked for. The holder rewrites only the
-- envelope: a client's id becomes one of the holder's (replies go back
-- with the client's id), a message without a sessionId goes to the
-- client's browser session (and its replies and events come back without
-- it), a sessionId the client did not attach is refused. A client that
-- goes, however it goes, has its browser session detached, which detaches
-- every target session it opened.
--
-- It must never let a connection of another user in, route a message to
-- a client that did not ask for it, nor let one client stop the others
-- (a client that stops reading is dropped past a limit; a browser that
-- stops reading stops the reading of requests, not of replies).
--
--   command(chromium_argv, socket) -> argv   the holder's command line
--   connect(path, deadline) -> Transport     a client's connection (its
--                                            peer checked: our own uid)
--   serve(socket, "--", chromium argv...)    the holder's loop (its process)

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local json = require "devtools_tools.base.json"

local raise = errors.raise
local type, tostring, tonumber, pairs, ipairs, pcall, select, getmetatable =
      type, tostring, tonumber, pairs, ipairs, pcall, select, getmetatable
local format, concat = string.format, table.concat
local encode, decode = json.encode, json.decode

local M = {}

M.NAME = "devtools_tools.browser.holder"

-- Bytes a client may leave unread before it is dropped, and bytes of
-- requests queued for a browser that stopped reading before the holder
-- stops taking more (the replies still flow).
M.CLIENT_BACKLOG = 512 * 1024 * 1024
M.BROWSER_BACKLOG = 64 * 1024 * 1024

-- ---- its command line -----------------------------------------------------------

local function on_path(name)
  for dir in (os.getenv("PATH") or "/usr/bin:/bin"):gmatch("[^:]+") do
    local p = dir .. "/" .. name
    if core.fs.is_executable(p) then return p end
  end
end

-- interpreter() -> the path of a Lua that loads this library (and its
-- core): the one running now, when it is a Lua interpreter; from a host
-- that is not (Neovim), the one of its ABI on PATH. nil: none found.
function M.interpreter()
  local exe = core.process.exe()
  local base = exe and exe:match("([^/]+)$") or ""
  if base:match("^lua") then return exe end
  local jit = rawget(_G, "jit")
  return on_path(jit and "luajit" or (_VERSION == "Lua 5.1" and "lua5.1" or "lua5.4"))
end

-- This file, and the lua/ directory it is in (lua/devtools_tools/browser/).
local SCRIPT = (debug.getinfo(1, "S").source or ""):match("^@(.+)$")
local LUADIR = SCRIPT and (SCRIPT:match("^(.*)/devtools_tools/browser/[^/]+$") or
  SCRIPT:match("^devtools_tools/browser/[^/]+$") and ".")

-- command(chromium_argv, socket) -> argv: the holder, run by the
-- interpreter with this process's package.path and cpath (its
-- environment's LUA_* ignored: -E), serving chromium_argv on socket.
-- The library's own lua/ directory comes last on both (Neovim finds it
-- through its runtimepath, where package.path does not look; a core.so
-- there is the one `make nvim` built). Chromium's arguments stay whole on
-- its command line, so the processes that name the profile are the
-- holder and its browser.
function M.command(chromium_argv, socket)
  local lua = M.interpreter()
  if not lua then
    raise("launch_failed", "no Lua interpreter found to run the background browser's holder"
      .. " (looked for " .. (rawget(_G, "jit") and "luajit" or "lua" .. _VERSION:match("%d+%.%d+"))
      .. " on PATH)")
  end
  if not SCRIPT then raise("launch_failed", "cannot tell where " .. M.NAME .. " is") end
  local path, cpath = package.path, package.cpath
  if LUADIR then
    path = path .. ";" .. LUADIR .. "/?.lua;" .. LUADIR .. "/?/init.lua"
    cpath = cpath .. ";" .. LUADIR .. "/?.so"
  end
  local argv = { lua }
  if rawget(_G, "jit") or _VERSION ~= "Lua 5.1" then argv[#argv + 1] = "-E" end
  argv[#argv + 1] = "-e"
  argv[#argv + 1] = format("package.path=%q package.cpath=%q", path, cpath)
  argv[#argv + 1] = SCRIPT
  argv[#argv + 1] = "--serve"
  argv[#argv + 1] = socket
  argv[#argv + 1] = "--"
  for _, a in ipairs(chromium_argv) do argv[#argv + 1] = a end
  return argv
end

-- ---- a client's connection ------------------------------------------------------

-- connect(path, deadline) -> Transport: a connection to the holder at
-- path, refused (connect_failed) when the process listening there is not
-- of our own user.
function M.connect(path, deadline)
  local t, uid, code = core.unix.connect(path, deadline)
  if not t then error(errors.c_failure(code, "connect: " .. tostring(uid), "connect_failed"), 0) end
  local me = core.process.euid()
  if uid ~= me then
    t:close()
    raise("connect_failed", format("connect: refusing %s: the process listening there is of"
      .. " uid %d, not of this user (uid %d)", path, uid, me), { details = { uid = uid } })
  end
  return t
end

-- ---- the holder's loop ----------------------------------------------------------

-- The envelope of a message Chromium wrote: it writes the id or the method
-- first and the sessionId last, so both are read off the ends of the text
-- without decoding what lies between (a screenshot's megabytes). Each is
-- sound on any JSON text: a quote that follows ':' or ',' opens a string,
-- and the last '}' closes the top-level object.
local function head_of(text)
  local id, at = text:match('^{"id":(%d+),()')
  if id then return tonumber(id), nil, at end
  local method
  method, at = text:match('^{"method":"([^"\\]*)",()')
  return nil, method, at
end

-- sid_of(text) -> sessionId, where its member starts | nil
local function sid_of(text)
  local from = text:find(',"sessionId":"[^"\\]*"}$', #text > 200 and #text - 200 or 1)
  if from then return text:sub(from + 14, -3), from end
end

local function log(...)
  io.stderr:write(os.date("!%Y-%m-%dT%H:%M:%SZ"), " holder: ", concat({ ... }), "\n")
  io.stderr:flush()
end

-- A message the holder could not handle (a bug, or a shape nobody
-- foresaw) is dropped and said in the log: the holder, and with it every
-- client's browser, must outlive it.
local function safely(fn, ...)
  local ok, err = pcall(fn, ...)
  if not ok then log("dropped a message: ", tostring(err)) end
end

local ATTACH = { ["Target.attachToTarget"] = true, ["Target.attachToBrowserTarget"] = true,
  ["Target.autoAttachRelated"] = true }

-- start(argv) -> proc, transport: Chromium on its pipe, once it answered
-- its first call; nil after saying why (its output with it) in the log.
local function start(argv)
  local proc, browser = core.process.spawn(argv, { pipe = true })
  if not proc then
    log("cannot start Chromium: ", tostring(browser))
    return nil
  end
  local function failed(why)
    log("Chromium did not start: ", tostring(why))
    browser:close()
    local out = proc:stderr()
    if out ~= "" then io.stderr:write(out, out:sub(-1) == "\n" and "" or "\n") end
    proc:close(2)
  end
  local sent, why = browser:send(encode({ id = 0, method = "Browser.getVersion" }), -1)
  if not sent then return failed(why) end
  repeat
    local text, code
    text, why, code = browser:recv(-1)
    if not text and code ~= "interrupted" and code ~= "too_large" then return failed(why) end
  until text and head_of(text) == 0
  return proc, browser
end

-- serve(socket, "--", argv...) -> exit status. Runs Chromium (argv) on the
-- pipe, listens on socket once it answers (who starts the holder waits
-- for the socket: a start killed before leaves a record that says so),
-- and serves until the browser is gone.
function M.serve(socket, sep, ...)
  if type(socket) ~= "string" or sep ~= "--" or select("#", ...) == 0 then
    log("usage: holder.lua --serve SOCKET -- CHROMIUM ARGS...")
    return 2
  end
  local proc, browser = start({ ... })
  if not proc then return 1 end
  local listener, why = core.unix.listen(socket)
  if not listener then
    log(tostring(why))
    browser:close()
    proc:close(2)
    return 1
  end
  local me = core.process.euid()
  local clients = {}         -- the connected ones, in order
  local owner = {}           -- sessionId -> the client that attached it
  local pending = {}         -- our id -> {client, id, method} | {own = fn}
  local last_id = 0

  local function to_browser(text)
    local ok, err, code = browser:send(text, 0)
    if not ok and code ~= "timeout" then return false, err end        -- (timeout: queued)
    return true
  end

  local function drop(c, reason)
    if c.closed then return end
    c.closed = true
    c.t:close()
    for sid, o in pairs(owner) do
      if o == c then owner[sid] = nil end
    end
    if c.session then
      -- its browser session detached: the targets it attached with it
      last_id = last_id + 1
      pending[last_id] = { own = function() end }
      to_browser(encode({ id = last_id, method = "Target.detachFromTarget",
        params = { sessionId = c.session } }))
    end
    if reason then log("client ", c.name, " dropped: ", reason) end
  end

  local function to_client(c, text)
    if c.closed then return end
    local ok, _, code = c.t:send(text, 0)
    if not ok and code ~= "timeout" then return drop(c) end
    if c.t:queued() > M.CLIENT_BACKLOG then drop(c, "it stopped reading") end
  end

  local function reply_error(c, id, code, message, sid)
    to_client(c, encode({ id = id == nil and json.null or id, sessionId = sid,
      error = { code = code, message = message } }))
  end

  -- A request of client c: its id and session made ours.
  local function request(c, text)
    local ok, m = pcall(decode, text)
    if not ok or type(m) ~= "table" or getmetatable(m) == json.array_mt then
      return reply_error(c, nil, -32700, "Message must be a valid JSON object")
    end
    local id, sid = m.id, m.sessionId
    if type(id) ~= "number" or id % 1 ~= 0 then
      return reply_error(c, nil, -32600, "Message must have integer 'id' property")
    end
    if type(m.method) ~= "string" then
      return reply_error(c, id, -32600, "Message must have string 'method' property", sid)
    end
    if sid == nil then
      if c.session == nil then c.waiting[#c.waiting + 1] = text return end
      if not c.session then
        return reply_error(c, id, -32001, "the connection's browser session was detached")
      end
      m.sessionId = c.session
    elseif owner[sid] ~= c then
      return reply_error(c, id, -32001, "Session with given id not found.",
        type(sid) == "string" and sid or nil)
    end
    last_id = last_id + 1
    pending[last_id] = { client = c, id = id, method = m.method }
    m.id = last_id
    local sent, err = to_browser(encode(m))
    if not sent then log("writing to Chromium: ", tostring(err)) end
  end

  local function own(method, params, on_reply)
    last_id = last_id + 1
    pending[last_id] = { own = on_reply }
    to_browser(encode({ id = last_id, method = method, params = params }))
  end

  local function connected(t, uid, pid)
    local c = { t = t, name = format("uid %d pid %d", uid, pid), waiting = {} }
    if uid ~= me then
      log("refused a connection from uid ", tostring(uid), " pid ", tostring(pid))
      t:close()
      return
    end
    clients[#clients + 1] = c
    own("Target.attachToBrowserTarget", nil, function(m)
      local sid = type(m.result) == "table" and m.result.sessionId
      if type(sid) ~= "string" then
        log("no browser session for client ", c.name)
        return drop(c)
      end
      if c.closed then
        return own("Target.detachFromTarget", { sessionId = sid }, function() end)
      end
      c.session, owner[sid] = sid, c
      local waiting = c.waiting
      c.waiting = {}
      for _, text in ipairs(waiting) do safely(request, c, text) end
    end)
  end

  -- Who now owns the session an attach or detach event names.
  local function track(c, method, text)
    if method ~= "Target.attachedToTarget" and method ~= "Target.detachedFromTarget" then return end
    local ok, m = pcall(decode, text)
    local sid = ok and type(m) == "table" and type(m.params) == "table" and m.params.sessionId
    if type(sid) ~= "string" then return end
    if method == "Target.attachedToTarget" then
      owner[sid] = c
    elseif owner[sid] == c then
      owner[sid] = nil
    end
  end

  -- A message of Chromium, routed.
  local function from_browser(text)
    local id, method, at = head_of(text)
    if not at then
      -- (not as Chromium writes them: decoded, routed, written again)
      local ok, m = pcall(decode, text)
      if not ok or type(m) ~= "table" then return end
      local p = type(m.id) == "number" and pending[m.id]
      if p then
        pending[m.id] = nil
        if p.own then return p.own(m) end
        local c = p.client
        m.id = p.id
        if m.sessionId == c.session then m.sessionId = nil end
        return to_client(c, encode(m))
      end
      local c = type(m.sessionId) == "string" and owner[m.sessionId]
      if c and m.id == nil then
        if m.sessionId == c.session then m.sessionId = nil end
        return to_client(c, encode(m))
      end
      return
    end
    local sid, sfrom = sid_of(text)
    if id then
      local p = pending[id]
      if not p then return end
      pending[id] = nil
      if p.own then
        local ok, m = pcall(decode, text)
        return p.own(ok and type(m) == "table" and m or {})
      end
      local c = p.client
      if c.closed then return end
      if ATTACH[p.method] then
        local ok, m = pcall(decode, text)
        local new = ok and type(m) == "table" and type(m.result) == "table" and m.result.sessionId
        if type(new) == "string" then owner[new] = c end
      end
      local body = (sid and sid == c.session) and (text:sub(at, sfrom - 1) .. "}") or text:sub(at)
      return to_client(c, '{"id":' .. encode(p.id) .. "," .. body)
    end
    if not sid then
      -- the root session's events: only those of the holder's own calls
      if method == "Target.detachedFromTarget" then
        local ok, m = pcall(decode, text)
        local sid_gone = ok and type(m) == "table" and type(m.params) == "table" and m.params.sessionId
        local c = sid_gone and owner[sid_gone]
        if c and c.session == sid_gone then
          owner[sid_gone] = nil
          c.session = false            -- (it detached its own browser session)
        end
      end
      return
    end
    local c = owner[sid]
    if not c then return end
    track(c, method, text)
    if sid == c.session then text = text:sub(1, sfrom - 1) .. "}" end
    return to_client(c, text)
  end

  -- A message over the transport's limit was dropped: its caller, if its
  -- head tells whose reply it was, gets an error instead.
  local function too_large(head, message)
    local id = tonumber(tostring(head or ""):match('^{"id":(%d+),'))
    local p = id and pending[id]
    if not p then return end
    pending[id] = nil
    if p.client then reply_error(p.client, p.id, -32000, tostring(message)) end
  end

  -- Reading: each end is read when poll says it is readable, and again
  -- while a whole message waits in its buffer (a send may read as it
  -- writes: then no poll would tell). One syscall per message each way,
  -- and one poll per turn.
  local gone_why
  local function browser_read()
    while true do
      local text, err, code, head = browser:recv(0)
      if text then
        safely(from_browser, text)
      elseif code == "too_large" then
        too_large(head, err)
      elseif code == "timeout" or code == "interrupted" then
        return true
      else
        gone_why = err
        return false
      end
      if not browser:pending() then return true end
    end
  end

  local function reading() return browser:queued() <= M.BROWSER_BACKLOG end

  local function client_read(c)
    while not c.closed and reading() do
      local text, _, code, head = c.t:recv(0)
      if text then
        safely(request, c, text)
      elseif code == "too_large" then
        local id = tonumber(tostring(head or ""):match('"id":(%d+)'))
        if id then reply_error(c, id, -32000, "message over the holder's limit") end
      elseif code == "timeout" or code == "interrupted" then
        return
      else
        return drop(c)
      end
      if not c.t:pending() then return end
    end
  end

  local function flush(t)
    local ok, err, code = t:flush(0)
    return ok or code == "timeout", err
  end

  local exit_fd = proc:exit_fd()
  local fds, evs, who = {}, {}, {}
  local LISTENER, BROWSER, EXIT = {}, {}, {}
  while true do
    -- what is buffered already
    local more = true
    while more do
      more = false
      if browser:pending() then
        if not browser_read() then break end
        more = true
      end
      for _, c in ipairs(clients) do
        if not c.closed and reading() and c.t:pending() then
          client_read(c)
          more = true
        end
      end
    end
    if gone_why then break end
    local live = {}
    for _, c in ipairs(clients) do
      if not c.closed then live[#live + 1] = c end
    end
    clients = live
    -- what to wait for
    local n = 0
    local function watch(fd, ev, w)
      if fd and ev ~= "" then
        n = n + 1
        fds[n], evs[n], who[n] = fd, ev, w
      end
    end
    watch(listener:fd(), "r", LISTENER)
    local rfd, wfd, efd = browser:fds()
    watch(rfd, "r", BROWSER)
    if browser:queued() > 0 then watch(wfd, "w", BROWSER) end
    watch(efd, "r", BROWSER)
    watch(exit_fd, "r", EXIT)
    local r = reading() and "r" or ""
    for _, c in ipairs(clients) do
      watch(c.t:fd(), r .. (c.t:queued() > 0 and "w" or ""), c)
    end
    for i = n + 1, #fds do fds[i], evs[i], who[i] = nil, nil, nil end
    local ready = core.poll(fds, evs, exit_fd and -1 or 1)
    local ended = not exit_fd and not proc:running()
    for i, got in pairs(ready) do
      local w = who[i]
      if w == LISTENER then
        while true do
          local t, uid, pid = listener:accept()
          if not t then break end
          connected(t, uid, pid)
        end
      elseif w == EXIT then
        ended = true
      elseif w == BROWSER then
        if got ~= "w" and not browser_read() then break end
        if got ~= "r" then
          local ok, err = flush(browser)
          if not ok then gone_why = err break end
        end
      elseif not w.closed then
        if got ~= "w" then client_read(w) end
        if got ~= "r" and not w.closed and not flush(w.t) then drop(w) end
      end
    end
    if gone_why then break end
    if ended and not proc:running() then
      browser_read()                -- (what it wrote before it went)
      gone_why = gone_why or "Chromium exited"
      break
    end
  end
  log("the browser is gone: ", tostring(gone_why))
  listener:close()
  for _, c in ipairs(clients) do c.t:close() end
  browser:close()
  local out = proc:stderr()
  if out ~= "" then io.stderr:write(out, out:sub(-1) == "\n" and "" or "\n") end
  proc:close(2)
  return 0
end

-- Run as a script (command() above): serve.
if (...) == "--serve" then
  os.exit(M.serve(select(2, ...)))
end

return M
