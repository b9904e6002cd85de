-- state_path.lua: read the app's global state at a dotted path.
--
--   lua5.4 examples/state_path.lua http://127.0.0.1:8080/ cart.items
--
-- Works with any page exposing `getGlobalState({path})`. A missing path is a
-- tool_error carrying the page's message (it lists the keys that exist).
-- Runs from any directory, under Lua 5.4 or LuaJIT, against the installed
-- module or, when this file sits in a checkout, the checkout's lua/ and
-- build/<interpreter>/ (make, or make LUA=luajit; DEVTOOLS_TOOLS_BUILD
-- overrides the build directory).
dofile((debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or ".") .. "/checkout.lua")
local dt = require "devtools_tools"

local url = arg[1]
if not url then io.stderr:write("usage: lua5.4 examples/state_path.lua URL [path]\n") os.exit(2) end
local path = arg[2] or "auth.user"

local browser = dt.launch()         -- Lua 5.4: local browser <close> = dt.launch()
local ok, value = pcall(function()
  return browser:new_page(url):call("getGlobalState", { path = path })
end)
browser:close()
if not ok then
  -- every failure is a dt.Error with a code: say what happened and stop
  io.stderr:write(tostring(value), "\n")
  os.exit(1)
end
print(path .. " = " .. dt.json.encode(value))
