-- devtools_tools.mcp.stdio: the stdio transport of the MCP server -
-- newline-delimited JSON-RPC messages read from stdin and written to
-- stdout, on the loop the library's tasks run on.
--
-- stdin is watched on the loop and read, when the loop says it is
-- readable, with dt.fd_read (what fd 0 holds now: the loop is never
-- blocked, and fd 0's flags, shared with whoever started us, are never
-- changed); stdout is written with dt.fd_write, what does not fit waiting
-- for the loop to say it is writable. A transport is what the server
-- needs of one (see devtools_tools.mcp): start(handlers), send(text),
-- close(), and hold(reason) / release(reason), reading stopped for a while.
--
-- What stdout has not taken yet is bounded: past max_pending bytes no
-- more input is read (nor lines already read handed on) until it drains
-- to half that, so a client that stops reading stops the requests that
-- would pile up answers.
--
-- It must never write anything on stdout but the messages it is given,
-- one per line, nor hold more than MAX_LINE bytes of a line that does not
-- end.

local dt = require "devtools_tools"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local setmetatable, tostring = setmetatable, tostring
local find, sub, byte, concat = string.find, string.sub, string.byte, table.concat

local M = {}

M.MAX_LINE = 256 * 1024 * 1024     -- as the CDP transports' limit
M.MAX_PENDING = 64 * 1024 * 1024   -- bytes not written yet past which reading stops
local READ = 65536                 -- bytes read at a time (the loop calls again while more is there)

local Stdio = {}
Stdio.__index = Stdio
Stdio.__name = "devtools_tools.mcp.Stdio"

-- new(opts?) -> transport. opts: input (fd, 0), output (fd, 1), loop (a
-- driver: dt.loop() by default, the one tasks run on), max_pending
-- (bytes, M.MAX_PENDING).
function M.new(opts)
  opts = opts or {}
  return setmetatable({
    input = opts.input or 0, output = opts.output or 1, loop = opts.loop or dt.loop(),
    max_pending = opts.max_pending or M.MAX_PENDING,
    parts = {}, held = 0, skipping = false,     -- the line read so far
    rest = nil, at = 1,                         -- a chunk read, not yet taken (reading stopped meanwhile)
    holds = {}, nholds = 0,                     -- why reading stopped: "output", the server's reasons
    queue = {}, head = 1, tail = 0, from = 1,   -- what stdout did not take yet
    queued = 0,                                 -- its bytes
    closed = false,
  }, Stdio)
end

local function ended(self, why)
  if self.closed then return end
  self:close()
  local h = self.handlers
  if h and h.close then h.close(why) end
end

local function deliver(self, line)
  if byte(line, -1) == 13 then line = sub(line, 1, -2) end       -- CRLF
  if line ~= "" then self.handlers.message(line) end
end

local readable

local function watch_input(self)
  if not self.in_watch and not self.closed and self.nholds == 0 and self.handlers then
    self.in_watch = self.loop:watch(self.input, "r", function() readable(self) end)
  end
end

-- The chunk read last: every line it ends is delivered, in order, while
-- nothing holds reading; what is left of it waits for the hold to end.
local function pump(self)
  while self.rest and not self.closed and self.nholds == 0 do
    local chunk, start = self.rest, self.at
    local nl = find(chunk, "\n", start, true)
    if not nl then
      self.rest, self.at = nil, 1
      if start <= #chunk and not self.skipping then
        local tail = sub(chunk, start)
        self.held = self.held + #tail
        if self.held > M.MAX_LINE then
          -- a line that never ends: dropped (up to its newline), said once
          self.parts, self.held, self.skipping = {}, 0, true
          local h = self.handlers
          if h.too_long then h.too_long(M.MAX_LINE) end
        else
          self.parts[#self.parts + 1] = tail
        end
      end
      break
    end
    self.at = nl + 1
    if self.at > #chunk then self.rest, self.at = nil, 1 end
    local piece = sub(chunk, start, nl - 1)
    if self.skipping then
      self.skipping = false
    else
      if self.held > 0 then
        self.parts[#self.parts + 1] = piece
        piece = concat(self.parts)
        self.parts, self.held = {}, 0
      end
      deliver(self, piece)
    end
  end
  if not self.rest then watch_input(self) end
end

readable = function(self)
  if self.closed or self.nholds > 0 or self.rest then return end
  local chunk, why = dt.fd_read(self.input, READ)
  if chunk == nil then
    -- the end of the input: a last line without its newline counts
    if self.held > 0 and not self.skipping then
      local line = concat(self.parts)
      self.parts, self.held = {}, 0
      deliver(self, line)
    end
    ended(self, why or "end of input")
  elseif chunk ~= "" then
    self.rest, self.at = chunk, 1
    pump(self)
  end
end

-- hold(reason): reading stops (what was read and not taken waits) until
-- release(reason); reasons count apart: the transport's own "output" (more
-- than max_pending bytes not written), and those of the server (a cap on
-- requests under way).
function Stdio:hold(reason)
  if self.holds[reason] then return end
  self.holds[reason] = true
  self.nholds = self.nholds + 1
  if self.in_watch then
    self.loop:unwatch(self.in_watch)
    self.in_watch = nil
  end
end

function Stdio:release(reason)
  if not self.holds[reason] then return end
  self.holds[reason] = nil
  self.nholds = self.nholds - 1
  if self.nholds == 0 and not self.closed then
    if self.rest then pump(self) else watch_input(self) end
  end
end

local function flush(self)
  local q = self.queue
  while self.head <= self.tail do
    local s = q[self.head]
    local n, why = dt.fd_write(self.output, s, self.from)
    if n == nil then
      self.broken = true
      self:drop()
      ended(self, "stdout: " .. tostring(why))
      return
    end
    self.from = self.from + n
    self.queued = self.queued - n
    if self.from <= #s then                    -- the rest when it is writable
      if not self.out_watch then
        self.out_watch = self.loop:watch(self.output, "w", function() flush(self) end)
      end
      if self.holds.output and self.queued <= self.max_pending / 2 then self:release("output") end
      return
    end
    q[self.head] = nil
    self.head, self.from = self.head + 1, 1
  end
  self.queue, self.head, self.tail, self.from, self.queued = {}, 1, 0, 1, 0
  if self.out_watch then
    self.loop:unwatch(self.out_watch)
    self.out_watch = nil
  end
  if self.holds.output then self:release("output") end
end

-- start(handlers): handlers.message(text) for each line read, handlers.close(why)
-- once, when the input ends (or stdout's reader is gone); handlers.too_long(limit)
-- for a line over M.MAX_LINE bytes (dropped).
function Stdio:start(handlers)
  self.handlers = handlers
  watch_input(self)
end

-- send(text): one message (it holds no line break); never waits: what
-- stdout does not take now goes when it can, and while more than
-- max_pending bytes wait, no more input is read. false once stdout is gone.
function Stdio:send(text)
  if self.broken then return false end
  self.tail = self.tail + 1
  self.queue[self.tail] = text .. "\n"
  self.queued = self.queued + #text + 1
  if not self.out_watch then flush(self) end
  if self.queued > self.max_pending and not self.broken then self:hold("output") end
  return true
end

-- pending() -> bytes not written yet
function Stdio:pending()
  return self.queued
end

-- close(): stops reading; what is queued for stdout is still written while
-- the loop turns (drop forgets it).
function Stdio:close()
  if self.closed then return end
  self.closed = true
  if self.in_watch then self.loop:unwatch(self.in_watch) self.in_watch = nil end
end

-- drop(): forgets what stdout has not taken (at exit)
function Stdio:drop()
  if self.out_watch then self.loop:unwatch(self.out_watch) self.out_watch = nil end
  self.queue, self.head, self.tail, self.from, self.queued = {}, 1, 0, 1, 0
end

function Stdio:__tostring()
  return "Stdio(" .. (self.closed and "closed" or "open") .. ", " .. tostring(self:pending()) .. " bytes queued)"
end

return M
