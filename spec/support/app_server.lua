-- support/app_server.lua - starts and stops the sample app's backend
-- (build/app/server) for specs, and speaks plain HTTP/1.1 to it.
--
-- It must never leave a server running: stop() waits for the exit and kills
-- with SIGKILL as a last resort, and every server gets its own temporary
-- directory (log, database) that stop() removes. Requests are written byte
-- for byte as given (no path normalisation), so specs can send hostile input.
require("devtools_tools.base.nojit")()   -- the specs' helpers too: see lua/devtools_tools/base/nojit.lua

local socket = require "socket"
local cjson = require "cjson.safe"

local M = {}

-- DEVTOOLS_TOOLS_APP_SERVER runs another build (ASan, a valgrind wrapper).
M.binary = os.getenv("DEVTOOLS_TOOLS_APP_SERVER") or "build/app/server"

local function q(s)
	return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end
M.quote = q

-- Runs a shell command; returns its output and exit code (the same way on
-- Lua 5.1, LuaJIT and 5.4, whose popen/close and os.execute differ).
local function run(cmd)
	local p = assert(io.popen("{ " .. cmd .. "\n}; echo \"rc=$?\"", "r"))
	local out = p:read("*a")
	p:close()
	local body, code = out:match("^(.-)rc=(%d+)\n?$")
	return body or out, tonumber(code) or -1
end
M.run = run

local function alive(pid)
	local _, code = run("kill -0 " .. pid .. " 2>/dev/null")
	return code == 0
end
M.alive = alive

--- Runs one SQL text through the sqlite3 command-line shell, read-only.
-- Returns its output and exit code.
function M.sqlite(db, sql)
	return run("sqlite3 -readonly -batch " .. q(db) .. " " .. q(sql) .. " 2>&1")
end

--- The whole database as SQL text (schema and rows).
function M.dump(db)
	local out, code = run("sqlite3 -readonly -batch " .. q(db) .. " .dump 2>&1")
	assert(code == 0, "sqlite3 .dump failed: " .. out)
	return out
end

-- 150 more orders after the seed's 8 (free shipping, tax right): a server
-- that took many orders since it started, whose next order is not among the
-- 100 lowest ids.
M.MANY_ORDERS = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 150) "
	.. "INSERT INTO orders (user_id, status, subtotal_cents, shipping_cents, tax_cents, total_cents, created_at) "
	.. "SELECT 3, 'placed', 8900, 0, 712, 9612, '2025-03-05 09:00:00' FROM n;"

local Server = {}
Server.__index = Server

--- Starts build/app/server --port 0. opts.db: database path (default: a file
-- in the server's temporary directory); opts.default_db: pass no --db at all;
-- opts.extra_seed: SQL run after examples/app/seed.sql when the database is
-- built; opts.args: extra arguments. Returns a Server, or nil plus the reason.
function M.start(opts)
	opts = opts or {}
	local dir = run("mktemp -d \"${TMPDIR:-/tmp}/app-spec-XXXXXX\""):gsub("%s+$", "")
	assert(dir ~= "", "mktemp failed")
	local db = opts.db or (dir .. "/app.db")
	local log = dir .. "/server.log"
	local argv = { q(M.binary), "--port", "0" }
	if not opts.default_db then
		argv[#argv + 1] = "--db"
		argv[#argv + 1] = q(db)
	end
	if opts.extra_seed then
		local f = assert(io.open("examples/app/seed.sql", "rb"))
		local seed = f:read("*a") .. "\n" .. opts.extra_seed .. "\n"
		f:close()
		f = assert(io.open(dir .. "/seed.sql", "wb"))
		f:write(seed)
		f:close()
		argv[#argv + 1] = "--seed"
		argv[#argv + 1] = q(dir .. "/seed.sql")
	end
	for _, a in ipairs(opts.args or {}) do argv[#argv + 1] = q(a) end
	-- The server's stdout and the shell's lines share one pipe: "pid N" and
	-- "listening on ..." come in either order, "exit N" when it ends.
	local script = table.concat(argv, " ") .. " 2>" .. q(log) .. ' & echo "pid $!"; wait $!; echo "exit $?"'
	local pipe = assert(io.popen("sh -c " .. q(script), "r"))
	local self = setmetatable({ dir = dir, db = db, log = log, pipe = pipe, lines = {} }, Server)
	while not (self.pid and self.port) do
		local line = pipe:read("*l")
		if not line then break end
		self.lines[#self.lines + 1] = line
		local pid = line:match("^pid (%d+)$")
		local port = line:match("^listening on http://127%.0%.0%.1:(%d+)/$")
		local code = line:match("^exit (%d+)$")
		if pid then self.pid = tonumber(pid) end
		if port then self.port = tonumber(port) end
		if code then
			self.exit_code = tonumber(code)
			break
		end
	end
	if not (self.pid and self.port) then
		pipe:close()
		local why = "server did not start: " .. table.concat(self.lines, " | ") .. " | " .. self:log_text()
		run("rm -rf " .. q(dir))
		return nil, why
	end
	self.url = "http://127.0.0.1:" .. self.port .. "/"
	return self
end

function Server:log_text()
	local f = io.open(self.log, "r")
	if not f then return "" end
	local s = f:read("*a")
	f:close()
	return s
end

--- The request lines of the log ("METHOD /path[?query] STATUS N.Nms").
function Server:request_log()
	local out = {}
	for line in self:log_text():gmatch("[^\n]+") do
		if not line:match("^app: ") then out[#out + 1] = line end
	end
	return out
end

--- Sends a signal (default TERM), waits for the exit, cleans up.
-- Returns the exit code. keep_dir leaves the directory (database) in place.
function Server:stop(sig, keep_dir)
	if self.stopped then return self.exit_code end
	self.stopped = true
	if alive(self.pid) then
		run("kill -" .. (sig or "TERM") .. " " .. self.pid .. " 2>/dev/null")
		for _ = 1, 200 do
			if not alive(self.pid) then break end
			socket.sleep(0.05)
		end
		if alive(self.pid) then
			run("kill -KILL " .. self.pid .. " 2>/dev/null")
			self.killed = true
		end
	end
	for line in self.pipe:lines() do
		local code = line:match("^exit (%d+)$")
		if code then self.exit_code = tonumber(code) end
	end
	self.pipe:close()
	if not keep_dir then run("rm -rf " .. q(self.dir)) end
	return self.exit_code
end

function Server:cleanup()
	self:stop("TERM")
	run("rm -rf " .. q(self.dir))
end

local function parse_response(raw)
	local head, body = raw:match("^(.-)\r\n\r\n(.*)$")
	if not head then return nil, "no complete response: " .. raw:sub(1, 200) end
	local status_line = head:match("^[^\r\n]*")
	local version, status = status_line:match("^(HTTP/1%.%d) (%d%d%d)")
	if not status then return nil, "bad status line: " .. status_line end
	local headers = {}
	for name, value in head:gmatch("\r\n([^:\r\n]+):[ \t]*([^\r\n]*)") do
		headers[name:lower()] = value
	end
	local len = tonumber(headers["content-length"] or "")
	if len then body = body:sub(1, len) end
	local res = { status = tonumber(status), version = version, headers = headers, body = body }
	if (headers["content-type"] or ""):match("^application/json") then
		res.json = cjson.decode(body)
	end
	return res
end

--- One request on a fresh connection (Connection: close).
-- opts: body (string, or table sent as JSON), headers (table), host
-- (Host header; false for none), content_length (override), timeout.
function Server:request(method, path, opts)
	opts = opts or {}
	local body = opts.body
	if type(body) == "table" then body = assert(cjson.encode(body)) end
	local c = assert(socket.tcp())
	c:settimeout(opts.timeout or 10)
	assert(c:connect("127.0.0.1", self.port))
	local lines = { method .. " " .. path .. " HTTP/1.1", "Connection: close" }
	if opts.host ~= false then lines[#lines + 1] = "Host: " .. (opts.host or ("127.0.0.1:" .. self.port)) end
	for k, v in pairs(opts.headers or {}) do lines[#lines + 1] = k .. ": " .. v end
	if opts.content_length or body then
		lines[#lines + 1] = "Content-Length: " .. (opts.content_length or #body)
	end
	if body then lines[#lines + 1] = "Content-Type: application/json" end
	local ok, err = c:send(table.concat(lines, "\r\n") .. "\r\n\r\n" .. (body or ""))
	local chunks = {}
	while ok or err == "closed" do
		local data, e, partial = c:receive(8192)
		local piece = data or partial
		if piece and #piece > 0 then chunks[#chunks + 1] = piece end
		if not data then
			if e ~= "closed" then err = e end
			break
		end
	end
	c:close()
	local raw = table.concat(chunks)
	if raw == "" then return nil, "no response (" .. tostring(err) .. ")" end
	return parse_response(raw)
end

function Server:get(path, opts) return self:request("GET", path, opts) end

function Server:post(path, body, opts)
	opts = opts or {}
	opts.body = body
	return self:request("POST", path, opts)
end

return M
