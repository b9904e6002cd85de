-- devtools_tools.options: one check for the opts table of every public
-- call, so a misspelt key ({timout = 1}) is refused instead of silently
-- meaning the default.
--
-- What it must never do: accept an unknown key, or compute a deadline (the
-- connection does that, once per call).

local errors = require "devtools_tools.errors"

local raise = errors.raise
local type, tostring, pairs = type, tostring, pairs

local M = {}

-- check(opts, allowed, fname) -> opts (a table; {} for nil).
-- allowed: a set of key names. `timeout` is checked when allowed.
function M.check(opts, allowed, fname)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    raise("bad_argument", fname .. ": opts must be a table, got " .. type(opts))
  end
  for k in pairs(opts) do
    if not allowed[k] then
      raise("bad_argument", fname .. ": unknown option '" .. tostring(k) .. "'")
    end
  end
  local t = opts.timeout
  if t ~= nil and (type(t) ~= "number" or t ~= t or t < 0) then
    raise("bad_argument", fname .. ": timeout must be a non-negative number of seconds, got "
      .. tostring(t))
  end
  return opts
end

-- The option sets used by more than one call.
M.TIMEOUT = { timeout = true }

return M
