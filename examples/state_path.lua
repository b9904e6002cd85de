-- state_path.lua: read the app's global state at a dotted path.
--
--   lua5.4 examples/state_path.lua http://127.0.0.1:8080/ cart.items
--
-- Works with any page exposing `getGlobalState({path})`. A missing path is a
-- tool_error carrying the page's message (it lists the keys that exist).
package.path = "lua/?.lua;lua/?/init.lua;examples/?.lua;" .. package.path
package.cpath = "build/lua5.4/?.so;" .. package.cpath
local dt = require "devtools_tools"

local url = arg[1] or error("usage: lua5.4 examples/state_path.lua URL [path]", 0)
local path = arg[2] or "auth.user"

local browser <close> = dt.launch()
local page = browser:new_page(url)

local ok, value = pcall(page.call, page, "getGlobalState", { path = path })
if not ok then
  -- every failure is a dt.Error with a code: say what happened and stop
  io.stderr:write(tostring(value), "\n")
  os.exit(1)
end
print(path .. " = " .. dt.json.encode(value))
