-- devtools_tools.mcp.rpc: JSON-RPC messages as the client wrote them - the
-- raw text of a request's id, so that the answer carries it byte for byte
-- (1e999 stays 1e999, 12345678901234567890 is not rounded, "\u0041" is
-- not rewritten), and answers written around that text.
--
-- The id is found by walking the message's top level (and, for a batch,
-- each element's), skipping every other member's value by its brackets
-- and strings with string.find: a walk that stops at the id, which
-- clients write first, so a request's large arguments after it are never
-- looked at.
--
-- It must never be given text that did not decode (the walk trusts the
-- grammar: it is only ever asked about a message the codec took), nor
-- take more than linear time.

local dt = require "devtools_tools"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local find, sub, byte = string.find, string.sub, string.byte
local decode, utf8_error = dt.json.decode, dt.json.utf8_error
local pcall, type, tonumber = pcall, type, tonumber

local M = {}

local QUOTE, BACKSLASH, LBRACE, LBRACKET, RBRACKET, COLON, COMMA =
  34, 92, 123, 91, 93, 58, 44

local function skip_ws(s, i)
  return (find(s, "[^ \t\r\n]", i)) or #s + 1
end

-- After the string that opens at i (its quote): the index past its end.
local function skip_string(s, i)
  local j = i + 1
  while true do
    local k = find(s, '["\\]', j)
    if not k then return #s + 1 end
    if byte(s, k) == BACKSLASH then
      j = k + 2
    else
      return k + 1
    end
  end
end

-- After the value that starts at i: the index past its end.
local function skip_value(s, i)
  local c = byte(s, i)
  if c == QUOTE then return skip_string(s, i) end
  if c == LBRACE or c == LBRACKET then
    local depth, j = 1, i + 1
    while depth > 0 do
      local k = find(s, '[%[%]{}"]', j)
      if not k then return #s + 1 end
      local d = byte(s, k)
      if d == QUOTE then
        j = skip_string(s, k)
      else
        depth = depth + ((d == LBRACE or d == LBRACKET) and 1 or -1)
        j = k + 1
      end
    end
    return j
  end
  return (find(s, "[,}%] \t\r\n]", i)) or #s + 1      -- a number, true, false, null
end

local function same(a, b)
  return a == b or (a ~= a and b ~= b)
end

-- Does raw, an id's text, decode to want? Plain digits and strings
-- without escapes (what clients write) are read here; the rest by the codec.
local function reads_as(raw, want)
  local tw = type(want)
  if tw == "string" and byte(raw, 1) == QUOTE and not find(raw, "\\", 2, true) then
    return sub(raw, 2, -2) == want
  end
  if tw == "number" and #raw < 16 and find(raw, "^%-?%d+$") then
    return tonumber(raw) == want
  end
  local ok, v = pcall(decode, raw)
  return ok and same(v, want)
end

-- The raw text of member "id" of the object that opens at i (its brace),
-- whose decoded id is want (the raw text decodes to it: of two members
-- named id, the codec keeps the last).
local function id_in(s, i, want)
  local j = skip_ws(s, i + 1)
  while byte(s, j) == QUOTE do
    local kend = skip_string(s, j)
    local key = sub(s, j, kend - 1)
    if key ~= '"id"' and find(key, "\\", 1, true) then
      local ok, k = pcall(decode, key)
      key = ok and k == "id" and '"id"' or key
    end
    j = skip_ws(s, kend)
    if byte(s, j) ~= COLON then break end
    local v0 = skip_ws(s, j + 1)
    local v1 = skip_value(s, v0)
    if key == '"id"' then
      local raw = sub(s, v0, v1 - 1)
      if reads_as(raw, want) then return raw end
    end
    j = skip_ws(s, v1)
    if byte(s, j) ~= COMMA then break end
    j = skip_ws(s, j + 1)
  end
  return nil
end

-- raw_id(text, id) -> the id as text wrote it, for the message text that
-- decoded to an object whose id is id (a string or a number); nil when
-- it has none.
function M.raw_id(s, id)
  if id == nil then return nil end
  local i = skip_ws(s, 1)
  if byte(s, i) ~= LBRACE then return nil end
  return id_in(s, i, id)
end

-- raw_ids(text, batch) -> for the text of a batch (an array) that decoded
-- to the list batch, a list: element k's raw id, or false.
function M.raw_ids(s, batch)
  local out = {}
  local j = skip_ws(s, 1)
  if byte(s, j) ~= LBRACKET then return out end
  j = skip_ws(s, j + 1)
  local k = 0
  while j <= #s and byte(s, j) ~= RBRACKET do
    k = k + 1
    local el = batch[k]
    local raw
    local c = byte(s, j)
    if c == LBRACE and type(el) == "table" and el.id ~= nil then
      local e = skip_value(s, j)
      raw = id_in(sub(s, j, e - 1), 1, el.id)
      j = e
    else
      j = skip_value(s, j)
    end
    out[k] = raw or false
    j = skip_ws(s, j)
    if byte(s, j) ~= COMMA then break end
    j = skip_ws(s, j + 1)
  end
  return out
end

-- The raw text of an id the server writes itself (null, or a decoded value).
function M.id_text(id)
  if id == nil or id == dt.null then return "null" end
  return dt.json.encode(id)
end

-- readable(raw) -> raw when it can be written back as it is (UTF-8)
function M.readable(raw)
  if raw and utf8_error(raw) == nil then return raw end
  return nil
end

-- answer(raw_id, key, body) -> the text of a response: key "result" or
-- "error", body its JSON text
function M.answer(raw_id, key, body)
  return '{"jsonrpc":"2.0","id":' .. (raw_id or "null") .. ',"' .. key .. '":' .. body .. "}"
end

return M
