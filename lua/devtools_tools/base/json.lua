-- devtools_tools.base.json: the one JSON codec of the library, over the C core.
--
-- Values:
--   JSON null   <-> json.null, a light userdata NULL (equal to cjson.null)
--   JSON array  <-> a table whose metatable is json.array_mt; decoding sets it
--   JSON object <-> a plain table; an empty one decodes carrying
--               json.object_mt, so that decoded {} and [] stay distinct
--   numbers     integer literals that fit int64 decode to Lua integers (on
--               5.3+), everything else to floats; floats encode in their
--               shortest form, 3.0 as 3, NaN and +-Infinity as null
-- When encoding, a table is an array if it carries json.array_mt or a
-- metatable with __jsontype = "array" (dkjson's convention; elements 1..#t,
-- holes become null) or if its keys are exactly the integers 1..n (n > 0).
-- Any other table is an object (__jsontype = "object" forces it): integer
-- keys are written as decimal strings, keys of other types are an error.
-- So an empty plain table encodes as {} - use json.array{} (or
-- json.array()) to send []. json.kind(t) tells which, and is what the
-- schema validator asks: the C encoder owns the decision. Tables are read
-- raw, without __index or __pairs.
--
-- It must never change how any other JSON library in the program behaves,
-- and holds no settings: limits are passed per call (opts.max_depth,
-- default 1000).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require("devtools_tools.core")
local errors = require("devtools_tools.base.errors")
local options = require("devtools_tools.base.options")

local setmetatable, getmetatable, type, pairs, tostring, pcall =
      setmetatable, getmetatable, type, pairs, tostring, pcall
local c_encode, c_decode = core.json.encode, core.json.decode
local array_mt = core.array_mt
local c_kind = core.json.kind

local M = {}

M.null = core.null
M.array_mt = array_mt
M.object_mt = core.object_mt

-- opts of encode and decode: max_depth = a whole number >= 0; encode's
-- finite = true refuses NaN and +-Infinity (otherwise null, as
-- JSON.stringify writes them), and replace_surrogates = true writes a
-- lone surrogate (what a page's "\ud800" decodes to) as U+FFFD, which
-- every reader takes, instead of "\ud800", which strict ones refuse.
local function check_opts(opts, fname)
  if type(opts) ~= "table" then
    errors.raise("bad_argument", fname .. ": opts must be a table, got " .. type(opts))
  end
  for k, v in pairs(opts) do
    if k == "max_depth" then
      if type(v) ~= "number" or not (v >= 0) or v % 1 ~= 0 then
        errors.raise("bad_argument", fname .. ": max_depth must be a whole number >= 0, got "
          .. options.shown(v))
      end
    elseif (k == "finite" or k == "replace_surrogates") and fname == "json.encode" then
      if type(v) ~= "boolean" then
        errors.raise("bad_argument", fname .. ": " .. k .. " must be a boolean, got " .. type(v))
      end
    else
      errors.raise("bad_argument", fname .. ": unknown option '" .. tostring(k) .. "'")
    end
  end
end

local function encode_failed(message, code)
  -- bad_value and too_deep are the caller's; no_memory is not
  local dt_code = (code == "too_deep") and "bad_argument" or errors.from_c(code)
  errors.raise(dt_code, "cannot encode as JSON: " .. message, { details = { code = code } })
end

-- encode(value, opts?) -> string; raises bad_argument for a value JSON
-- cannot hold (functions, invalid UTF-8, odd keys) or nesting deeper than
-- opts.max_depth (also what a cycle gives); protocol_error when out of
-- memory (errors.from_c).
function M.encode(value, opts)
  if opts ~= nil then check_opts(opts, "json.encode") end
  local s, message, code = c_encode(value, opts)
  if s == nil then encode_failed(message, code) end
  return s
end

-- encode_finite(value) -> string: encode with finite = true (a tool's
-- arguments: a NaN sent as null would be a silent wrong answer).
local FINITE = { finite = true }
function M.encode_finite(value)
  local s, message, code = c_encode(value, FINITE)
  if s == nil then encode_failed(message, code) end
  return s
end

-- decode(text, opts?) -> value; raises protocol_error for text that is not
-- JSON or nests deeper than opts.max_depth.
function M.decode(text, opts)
  if type(text) ~= "string" then
    errors.raise("bad_argument", "json.decode expects a string, got " .. type(text))
  end
  if opts ~= nil then check_opts(opts, "json.decode") end
  local v, message, code = c_decode(text, opts)
  if v == nil and message ~= nil then
    errors.raise(errors.from_c(code), "invalid JSON: " .. message, { details = { code = code } })
  end
  return v
end

-- utf8_error(s) -> nil when the string s is UTF-8 (RFC 3629: no overlong
-- form, no surrogate, nothing past U+10FFFF), else the byte offset of the
-- first byte that is not. decode passes other bytes through inside
-- strings (a page's may hold them); a peer's text that must be UTF-8 is
-- checked with this first.
function M.utf8_error(s)
  if type(s) ~= "string" then
    errors.raise("bad_argument", "json.utf8_error expects a string, got " .. type(s))
  end
  return core.json.utf8_error(s)
end

-- array(t?) -> t marked as a JSON array (a new empty one without t)
function M.array(t)
  if t == nil then
    t = {}
  elseif type(t) ~= "table" then
    errors.raise("bad_argument", "json.array expects a table, got " .. type(t))
  end
  if not pcall(setmetatable, t, array_mt) then
    errors.raise("bad_argument", "json.array: the table's metatable is protected (__metatable)")
  end
  return t
end

-- kind(t) -> "array" | "object" | "empty" (a plain {}: sent as {}, and
-- either one for the validator), as the encoder decides; nil for a value
-- that is not a table
function M.kind(t)
  if type(t) ~= "table" then return nil end
  return c_kind(t)
end

-- is_array(t) -> true if t carries the array marker
function M.is_array(t)
  return type(t) == "table" and getmetatable(t) == array_mt
end

return M
