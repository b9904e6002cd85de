-- devtools_tools.schema.context: the state of one validation, passed along.
--
-- Two objects, both owned by a compiled validator or by one call of it,
-- never by this module:
--  - the run state (one per compiled validator, reset at each call): the
--    recursion depth, the $ref memo, the step counter and the deadline;
--  - the error context (one per call that failed): the path of the value
--    being checked, the errors collected, and their cap.
-- fail() is the one place an error is recorded. It must never keep
-- anything between calls, and never let a hostile schema make a call
-- unbounded: errors are capped, and the deadline is checked every few
-- hundred expensive steps.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local values = require "devtools_tools.schema.values"

local type, tostring = type, tostring
local concat = table.concat
local sfind, sgsub = string.find, string.gsub
local now = core.now
local render = values.render

local M = {}

M.MAX_ERRORS = 100          -- errors collected per call
M.MAX_DEPTH = 1200          -- nested passes through circular $refs (LuaJIT's
                            -- stack holds about 1700 of the simplest)
local TICK = 256            -- expensive steps between two looks at the clock

M.VALIDATE_LATE = "validating the arguments against the inputSchema took longer than the call's timeout"
M.COMPILE_LATE = "compiling the inputSchema took longer than the call's timeout"

---------------------------------------------------------------- run state

function M.run_state()
  return { depth = 0, steps = 0, deadline = nil, memo = nil }
end

function M.start(rs, deadline)
  rs.depth, rs.steps, rs.deadline, rs.memo = 0, 0, deadline, nil
end

-- Raises timeout (with message) once the deadline (core.now() seconds, or
-- nil) has passed.
function M.check_deadline(deadline, message)
  if deadline and now() > deadline then
    errors.raise("timeout", message)
  end
end

-- Counts one expensive step ($ref memo, recursion) and looks at the clock
-- every TICK of them.
function M.tick(rs)
  local s = rs.steps + 1
  rs.steps = s
  if s % TICK == 0 and rs.deadline then M.check_deadline(rs.deadline, M.VALIDATE_LATE) end
end

-- Raised when a cycle nests deeper than MAX_DEPTH (a cyclic Lua value, or a
-- cycle compile could not see).
function M.too_deep(rs, loc)
  rs.depth = 0
  errors.raise("bad_argument", "schema recursion deeper than " .. M.MAX_DEPTH ..
               " levels at " .. loc .. " (is the value nested that deep, or cyclic?)")
end

------------------------------------------------------------ error context

function M.new(max)
  return { path = {}, d = 0, errs = {}, n = 0, max = max or M.MAX_ERRORS, full = false }
end

local function escape_token(k)
  if type(k) ~= "string" then return tostring(k) end
  if sfind(k, "[~/]") then k = sgsub(sgsub(k, "~", "~0"), "/", "~1") end
  return k
end
M.escape_token = escape_token

local function path_of(cx)
  local d = cx.d
  if d == 0 then return "" end
  local parts = {}
  for i = 1, d do parts[i] = escape_token(cx.path[i]) end
  return "/" .. concat(parts, "/")
end

-- fail(cx, keyword, message, schema_path, value, property?, allowed?) -> false
-- Records one error at the current path: the value received and, for
-- enum and const, what was allowed, both as short renderings.
-- Without a context (only "valid?" was asked) it records nothing.
function M.fail(cx, keyword, message, spath, value, property, allowed)
  if cx == nil or cx.full then return false end
  local n = cx.n + 1
  if n > cx.max then
    cx.full = true
    cx.errs[n] = { path = "", keyword = "errors", schema_path = "#",
                   message = "more errors were found; only the first " .. cx.max .. " are listed" }
    return false
  end
  cx.n = n
  cx.errs[n] = { path = path_of(cx), keyword = keyword, message = message, schema_path = spath,
                 property = property, received = render(value), allowed = allowed }
  return false
end

-- at(f, key, v, cx) -> f(v, cx) with key (a string, or a 0-based index)
-- on the path.
function M.at(f, key, v, cx)
  local d = cx.d + 1
  cx.d = d
  cx.path[d] = key
  local ok = f(v, cx)
  cx.d = d - 1
  return ok
end

return M
