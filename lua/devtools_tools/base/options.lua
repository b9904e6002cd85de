-- devtools_tools.base.options: one check for the opts table of every public
-- call, so a misspelt key ({timout = 1}) is refused instead of silently
-- meaning the default.
--
-- What it must never do: accept an unknown key, or compute a deadline (the
-- connection does that, once per call).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local errors = require "devtools_tools.base.errors"

local raise = errors.raise
local type, tostring, pairs = type, tostring, pairs

local M = {}

-- A value as an error message names it: its type, or the number.
local function shown(v)
  if type(v) ~= "number" then return type(v) end
  if v ~= v then return "NaN" end
  -- a whole number as such (Lua 5.4 writes the float -1 as "-1.0", LuaJIT "-1")
  if v % 1 == 0 and v > -2 ^ 63 and v < 2 ^ 63 then return string.format("%d", v) end
  return tostring(v)
end
M.shown = shown

-- What a key of an option set may hold: true (anything; the call checks
-- it), or one of these names, checked here.
local KINDS = {
  boolean = function(v) return type(v) == "boolean" end,
  string = function(v) return type(v) == "string" end,
  number = function(v) return type(v) == "number" and v == v end,        -- not NaN
  seconds = function(v) return type(v) == "number" and v >= 0 end,       -- NaN fails too
  ["function"] = function(v) return type(v) == "function" end,
}
local WHAT = { boolean = "a boolean", string = "a string", number = "a number",
  seconds = "a non-negative number of seconds", ["function"] = "a function" }

-- check(opts, allowed, fname) -> opts (a table; {} for nil).
-- allowed: key name -> true or a kind above. `timeout` is checked when
-- allowed.
function M.check(opts, allowed, fname)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    raise("bad_argument", fname .. ": opts must be a table, got " .. type(opts))
  end
  for k, v in pairs(opts) do
    local kind = allowed[k]
    if not kind then
      raise("bad_argument", fname .. ": unknown option '" .. tostring(k) .. "'")
    end
    if k == "timeout" then kind = "seconds" end
    if kind ~= true and not KINDS[kind](v) then
      raise("bad_argument", fname .. ": " .. tostring(k) .. " must be " .. WHAT[kind] .. ", got "
        .. shown(v))
    end
  end
  return opts
end

-- The option sets used by more than one call.
M.TIMEOUT = { timeout = true }

-- The one default timeout: seconds a call may take when neither it nor its
-- browser says otherwise (launch, connect, a browser's calls; the front
-- ends' commands: dt.TIMEOUT).
M.DEFAULT_TIMEOUT = 30

return M
