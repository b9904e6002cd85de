-- devtools_tools.trace.format: a trace on disk - JSON Lines, one event a
-- line, written append-only (each line whole and flushed as it happens, so
-- a crash loses at most the line being written), and read back.
--
--   line 1   {"format": "devtools-tools-trace", "version": 1, "url",
--             "browser", "protocol", "time", "recorder", "limit"}
--   a call   {"type": "call", "call": n, "tool", "kind", "group", "origin",
--             "args" | "args_digest", "result" | "result_digest" | "error":
--             {"code", "message"}, "ms"[, "batch", "index"][, "page"]}
--   others   {"type": "navigate", "url"}, {"type": "console", "level",
--             "text"}, {"type": "network", "method", "url", "status",
--             "mime", "failed"[, "body"]}, {"type": "end", "calls", "time"}
-- A *_digest is {"sha256", "bytes"}: the value was over the limit.
--
-- It must never read a trace it does not understand as if it did: a first
-- line of another format, a newer version, or a line cut short is a clear
-- error naming the file and the line, never a shorter replay.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local json = require "devtools_tools.base.json"
local errors = require "devtools_tools.base.errors"
local values = require "devtools_tools.trace.values"

local type, tostring, pcall, pairs, ipairs, setmetatable, select =
      type, tostring, pcall, pairs, ipairs, setmetatable, select
local raise = errors.raise
local encode, decode = json.encode, json.decode

local M = {}

M.FORMAT = "devtools-tools-trace"
M.VERSION = 1

-- ---- writing -------------------------------------------------------------------------

local Writer = {}
Writer.__index = Writer

-- writer(dest) -> Writer. dest: a path (created, or emptied) or a handle
-- with write (and flush, used when it has one), which stays the caller's.
function M.writer(dest)
  if type(dest) == "string" then
    local f, why = io.open(dest, "wb")
    if not f then raise("bad_argument", "trace: cannot write " .. dest .. ": " .. tostring(why)) end
    return setmetatable({ f = f, own = true, path = dest }, Writer)
  end
  local ok, w = pcall(function() return dest.write end)
  if not ok or type(w) ~= "function" then
    raise("bad_argument", "trace: expected a file name or a handle with write, got " .. type(dest))
  end
  return setmetatable({ f = dest, own = false }, Writer)
end

-- line(text): one whole line, flushed; a failure (a full disk) is kept
-- and stops the writing (failed holds why)
function Writer:line(text)
  if self.failed or self.closed then return false end
  local f = self.f
  local ok, r, why = pcall(f.write, f, text, "\n")
  if ok and r and f.flush then ok, r, why = pcall(f.flush, f) end
  if not ok or not r then
    self.failed = tostring(ok and (why or "write failed") or r)
    return false
  end
  return true
end

-- members(key, value, key, value, ...) -> the list object() takes (nil
-- values too: list.n counts them)
function M.members(...)
  return { n = select("#", ...), ... }
end

-- object(list) -> JSON text of an object whose members come in the order
-- of list = members(key, value, ...) (a nil value leaves its key out): a
-- trace reads the same way each time ("type" first)
function M.object(list)
  local out, n = {}, 0
  for i = 1, list.n or #list, 2 do
    local v = list[i + 1]
    if v ~= nil then
      n = n + 1
      out[n] = encode(list[i]) .. ":" .. encode(v)
    end
  end
  return "{" .. table.concat(out, ",") .. "}"
end

-- event(t): t as one line; t a table, or a list for object()
function Writer:event(t, ordered)
  return self:line(ordered and M.object(t) or encode(t))
end

function Writer:close()
  if self.closed then return end
  self.closed = true
  if self.own then self.f:close() end
end

-- header(list) -> the first line's members, for object(): format and
-- version, then list's (from members())
function M.header(list)
  local h = { "format", M.FORMAT, "version", M.VERSION }
  for i = 1, list.n do h[4 + i] = list[i] end
  h.n = 4 + list.n
  return h
end

-- ---- reading --------------------------------------------------------------------------

-- bad(where, message): "f.trace:3: message" for a line, "f.trace is ..."
-- for the file (a message that starts with "is" or "was")
local function bad(where, message)
  local sep = (message:find("^is ") or message:find("^was ")) and " " or ": "
  raise("bad_argument", where .. sep .. message, { details = { where = where } })
end

-- parse(text, name?) -> trace: {header, events, calls, name}. calls: the
-- call events, in order (events[i].call numbers them). name is what
-- errors call the trace (a file name).
function M.parse(text, name)
  name = name or "trace"
  if type(text) ~= "string" then raise("bad_argument", "trace: expected the text of a trace") end
  if text == "" then bad(name, "is empty: a trace starts with its header line") end
  local events, calls, header = {}, {}, nil
  local n, pos, len = 0, 1, #text
  while pos <= len do
    local nl = text:find("\n", pos, true)
    local line = text:sub(pos, (nl or len + 1) - 1)
    n = n + 1
    pos = (nl or len) + 1
    if line:sub(-1) == "\r" then line = line:sub(1, -2) end
    if line ~= "" then
      local ok, v = pcall(decode, line)
      if not ok or type(v) ~= "table" or json.kind(v) == "array" then
        if not nl then
          bad(name .. ":" .. n, "the line is cut short (the file ends in the middle of it: the"
            .. " recording was interrupted); delete that line to use the rest")
        end
        bad(name .. ":" .. n, "the line is not a JSON object"
          .. (ok and "" or (": " .. tostring(errors.is_error(v) and v.message or v))))
      end
      if not header then
        if v.format ~= M.FORMAT then
          bad(name, "is not a devtools-tools trace (its first line has no \"format\": \""
            .. M.FORMAT .. "\")")
        end
        if type(v.version) ~= "number" or v.version % 1 ~= 0 or v.version < 1 then
          bad(name .. ":1", "the header has no version number")
        end
        if v.version > M.VERSION then
          bad(name, "was written by a newer devtools-tools (trace format version " .. tostring(v.version)
            .. "; this one reads version " .. M.VERSION .. " and older): upgrade devtools-tools to use it")
        end
        header = v
      else
        v.line = n
        events[#events + 1] = v
        if v.type == "call" then
          if type(v.tool) ~= "string" then bad(name .. ":" .. n, "a call without a tool name") end
          calls[#calls + 1] = v
        end
      end
    end
  end
  if not header then bad(name, "is empty: a trace starts with its header line") end
  return { header = header, events = events, calls = calls, name = name }
end

-- read(path) -> trace (see parse)
function M.read(path)
  if type(path) ~= "string" then raise("bad_argument", "trace: expected a file name, got " .. type(path)) end
  local f, why = io.open(path, "rb")
  if not f then raise("bad_argument", "trace: cannot read " .. path .. ": " .. tostring(why)) end
  local text = f:read("*a")
  f:close()
  return M.parse(text, path)
end

-- write(trace, path): the trace whole, as a new file put in place of path
-- at once (written beside it, then renamed): for --update. A result over
-- the header's limit is written as its digest, as the recorder writes one.
function M.write(trace, path)
  local tmp = path .. ".tmp"
  local w = M.writer(tmp)
  local h = trace.header
  local first = { "format", h.format, "version", h.version }
  for k, v in pairs(h) do
    if k ~= "format" and k ~= "version" then first[#first + 1] = k; first[#first + 1] = v end
  end
  first.n = #first
  local ok = w:event(first, true)
  local limit = type(h.limit) == "number" and h.limit or values.LIMIT
  for _, ev in ipairs(trace.events) do
    if not ok then break end
    local copy = {}
    for k, v in pairs(ev) do copy[k] = v end
    copy.line = nil
    if copy.type == "call" and copy.result ~= nil then
      local _, digest = values.text(copy.result, limit)
      if digest then copy.result, copy.result_digest = nil, digest end
    end
    ok = w:event(copy)
  end
  w:close()
  if not ok then
    os.remove(tmp)
    raise("bad_argument", "trace: cannot write " .. tmp .. ": " .. tostring(w.failed))
  end
  local renamed, why = os.rename(tmp, path)
  if not renamed then
    os.remove(tmp)
    raise("bad_argument", "trace: cannot replace " .. path .. ": " .. tostring(why))
  end
end

return M
