-- devtools_tools.base.debug: the one reader of DEVTOOLS_TOOLS_DEBUG, the
-- environment variable that turns the debug logs on: its words ("cdp":
-- every CDP message; "mcp": every MCP message), separated by anything
-- that is not a letter, a digit or "_" ("cdp,mcp", "cdp mcp").
--
-- What it must never do: read the environment more than once per process
-- (the logs are process-wide by nature, as the variable is), or turn on a
-- log whose name it was not given.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local M = {}

-- words(value) -> {[word] = true}
function M.words(value)
  local set = {}
  for w in (value or ""):gmatch("[%w_]+") do set[w] = true end
  return set
end

local from_env = M.words(os.getenv("DEVTOOLS_TOOLS_DEBUG"))

-- wants(what) -> true when DEVTOOLS_TOOLS_DEBUG names that log
function M.wants(what)
  return from_env[what] == true
end

return M
