-- devtools_tools.wire.remote: reading what Chromium's Runtime domain answers
-- (RemoteObjects returned by value, exception details, the errors that mean
-- "the document went away"), shared by page evaluation and tool calls.
--
-- What it must never do: wait, or keep state (but a counter naming object
-- groups); it only interprets replies.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"

local null = core.null
local type, tostring, ipairs, math_huge = type, tostring, ipairs, math.huge

local M = {}

-- Messages Chromium uses when the document a call was for went away: before
-- the call came to it (it did not run), or at any time.
local SESSION_GONE = "Session with given id not found"
local never_ran_patterns = {
  "Cannot find context with specified id",
  "Cannot find default execution context",
  SESSION_GONE,
}
local gone_patterns = {
  "Execution context was destroyed",
  "Inspected target navigated or closed",
  "Frame with the given id was not found",
  never_ran_patterns[1], never_ran_patterns[2],   -- (not the third: a session id the caller
}                                                 -- gave, e.g. evaluate's, may be wrong)

local function says(err, patterns)
  if not errors.is_error(err) or err.code ~= "protocol_error" then return false end
  local msg = err.details and err.details.message or err.message
  if type(msg) ~= "string" then return false end
  for _, p in ipairs(patterns) do
    if msg:find(p, 1, true) then return true end
  end
  return false
end

-- never_ran(err) -> true when a protocol_error says the execution context
-- was gone before the request came to it (the script did not run; the
-- page's events saying so may not have been read yet)
function M.never_ran(err)
  return says(err, never_ran_patterns)
end

-- session_gone(err) -> true when a protocol_error says the request's
-- session had ended before it came (nothing can have run)
local session_gone_patterns = { SESSION_GONE }
function M.session_gone(err)
  return says(err, session_gone_patterns)
end

-- is_navigation_error(err) -> true when a protocol_error says the document
-- (execution context) the request ran in is gone
function M.is_navigation_error(err)
  return says(err, gone_patterns)
end

-- object_group() -> a name for the remote objects of one operation, which
-- releases them (and only them) when done: two tasks at one page must not
-- release each other's (a shared name let one call's release take the
-- window another task's discovery was asking about).
local groups_made = 0
function M.object_group()
  groups_made = groups_made + 1
  return "devtools_tools." .. groups_made
end

local unserializable = {
  NaN = 0 / 0, Infinity = math_huge, ["-Infinity"] = -math_huge, ["-0"] = -0.0,
}

-- remote_value(RemoteObject returned by value) -> Lua value
function M.remote_value(ro)
  if ro == nil or ro.type == "undefined" then return nil end
  local u = ro.unserializableValue
  if u ~= nil then
    local v = unserializable[u]
    if v ~= nil then return v end
    return u                        -- a BigInt: "123n"
  end
  local v = ro.value
  if v == nil and ro.subtype == "null" then return null end
  return v
end

-- release_thrown(conn, session, reply): what a call threw (or its promise
-- rejected with) comes as remote objects that Chromium keeps alive, in no
-- object group, until their document goes, even when the call asked for
-- its value: the exception, and for a throw the result as well. Released
-- at once (300 evaluates that threw a 40 KB value held 12 MB of the
-- page's heap). Never waits.
function M.release_thrown(conn, session, r)
  local ex = r.exceptionDetails
  if type(ex) ~= "table" then return end
  for _, o in ipairs({ r.result, ex.exception }) do
    if type(o) == "table" and type(o.objectId) == "string" then
      conn:send_nowait("Runtime.releaseObject", { objectId = o.objectId }, session)
    end
  end
end

-- exception_info(exceptionDetails) -> message, details
function M.exception_info(ex)
  local e = ex.exception
  local message, stack
  if e then
    if e.type == "object" and type(e.description) == "string" then
      stack = e.description
      message = e.description:match("^[^\n]*")
    elseif e.value == null or e.subtype == "null" then
      message = "null"                              -- throw null
    elseif type(e.description) == "string" then
      message = e.description                       -- a number as JavaScript writes it
    elseif e.value ~= nil then
      message = tostring(e.value)
    elseif e.unserializableValue then
      message = e.unserializableValue
    elseif e.description then
      message = e.description
    end
  end
  message = tostring(message or ex.text or "exception")
  return message, { message = message, stack = stack, line = ex.lineNumber,
    column = ex.columnNumber, text = ex.text }
end

return M
