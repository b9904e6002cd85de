-- devtools_tools.base.errors: the one error type of the library.
--
-- Every failure a user can see is a dt.Error: a table with `code`, `message`
-- and, where they apply, `tool` and `details`. The C core returns
-- `nil, message, code` on runtime failure; this module turns that into an
-- Error and raises it. It must never swallow an error that is not ours:
-- `catch` re-raises anything else untouched. `from_c` is the one place that
-- turns a C failure code into a dt.Error code.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local type, pairs, ipairs = type, pairs, ipairs
local setmetatable, getmetatable, error, pcall, tostring =
      setmetatable, getmetatable, error, pcall, tostring

local unpack = table.unpack or unpack
local select = select

local M = {}

-- The codes a caller can branch on, written down once.
M.codes = {
  bad_argument = true, launch_failed = true, connect_failed = true,
  tool_not_found = true, invalid_params = true, tool_error = true,
  js_error = true, timeout = true, stale = true, navigated = true,
  disconnected = true, protocol_error = true, too_large = true, cancelled = true,
}

-- The C core's failure codes (src/base.h, core.codes) and the dt.Error
-- code each becomes: the one place that decides it. Out of memory in C
-- (no_memory) is a protocol_error: the message could not be taken in,
-- and the connection stays usable; a C code not listed here is a bug.
M.from_c_codes = {
  timeout = "timeout",
  closed = "disconnected",
  too_large = "too_large",
  connect_failed = "connect_failed",
  spawn_failed = "launch_failed",
  bad_message = "protocol_error",
  syntax = "protocol_error",        -- text that is not JSON (or not a regex)
  too_deep = "protocol_error",      -- nesting over the decoder's limit
  bad_value = "bad_argument",       -- a Lua value JSON cannot hold
  no_memory = "protocol_error",
  system = "protocol_error",
  interrupted = "cancelled",        -- (the CDP layer reads again; see cdp.lua's pump)
}

-- from_c(c_code) -> the dt.Error code for a C failure code
function M.from_c(c_code)
  return M.from_c_codes[c_code] or "protocol_error"
end

local Error = {}
Error.__index = Error
Error.__name = "devtools_tools.Error"

function Error.__tostring(e)
  return "devtools_tools: " .. e.code .. ": " .. e.message
end

M.Error = Error

-- new(code, message, fields?) -> Error (not raised)
function M.new(code, message, fields)
  local e = {}
  if fields then
    for k, v in pairs(fields) do e[k] = v end
  end
  e.code = code
  e.message = tostring(message)
  return setmetatable(e, Error)
end

function M.is_error(x)
  return getmetatable(x) == Error
end

-- raise(code, message, fields?): never returns
function M.raise(code, message, fields)
  error(M.new(code, message, fields), 0)
end

-- One constructor per code: errors.timeout(message, fields?) -> Error, and
-- so on for each of M.codes. fields: `tool`, and `details`, the structured
-- facts a front end shows (a value received, the allowed values, the
-- frame, what Chromium said) instead of parsing the message.
for code in pairs(M.codes) do
  M[code] = function(message, fields) return M.new(code, message, fields) end
end

-- c_failure(c_code, message, otherwise?, fields?) -> Error for a C failure:
-- a timeout stays one; anything else is `otherwise` when given (a failed
-- HTTP request is connect_failed, whatever the socket said), else from_c.
function M.c_failure(c_code, message, otherwise, fields)
  local code = c_code == "timeout" and "timeout" or otherwise or M.from_c(c_code)
  return M.new(code, message, fields)
end

-- The failures several modules report in the same words, written once.
-- who: "tool NAME", "an Element passed to NAME", "screenshot: the Element".

-- navigated(who, fields?): the frame's document went while the call ran
function M.navigated(who, fields)
  return M.new("navigated", who .. ": the frame navigated during the call", fields)
end

-- not_settled(name): a tool that did not answer by the call's deadline
function M.not_settled(name)
  return M.new("timeout", "tool " .. name .. " did not settle in time", { tool = name })
end

-- gone(who, fields?, hint?): something of a document that is gone (stale)
function M.gone(who, fields, hint)
  return M.new("stale", who .. " belongs to a document that is gone" .. (hint or ""), fields)
end

-- catch(fn, ...) -> true, results... | false, Error
-- Runs fn; a dt.Error is returned, anything else is re-raised untouched.
local function pack(...) return { n = select("#", ...), ... } end

function M.catch(fn, ...)
  local res = pack(pcall(fn, ...))
  if res[1] then return unpack(res, 1, res.n) end
  if getmetatable(res[2]) == Error then return false, res[2] end
  error(res[2], 0)
end

-- guard_methods(class, label, var): every public method of class (a name
-- not starting with "_") checks that it was called on one of the class's
-- objects, so obj.method(...) for obj:method(...) is a bad_argument naming
-- the call, not "attempt to index a nil value". Run once, after the class
-- has all its methods.
function M.guard_methods(class, label, var)
  local names = {}
  for name, f in pairs(class) do
    if type(name) == "string" and type(f) == "function" and name:sub(1, 1) ~= "_" then
      names[#names + 1] = name
    end
  end
  for _, name in ipairs(names) do
    local f = class[name]
    local hint = label .. ":" .. name .. ": called without a " .. label .. " (write " .. var .. ":"
      .. name .. "(...), with a colon), got "
    class[name] = function(self, ...)
      if getmetatable(self) ~= class then M.raise("bad_argument", hint .. type(self)) end
      return f(self, ...)
    end
  end
  return class
end

return M
