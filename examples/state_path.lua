-- state_path.lua: read the app's global state at a dotted path.
--
--   devtools-tools run examples/state_path.lua http://127.0.0.1:8080/ [path]
--   lua5.4 examples/state_path.lua http://127.0.0.1:8080/ cart.items
-- path: default auth.user.
--
-- Works with any page exposing `getGlobalState({path})`. A missing path is a
-- tool_error carrying the page's message (it lists the keys that exist).
-- Through `devtools-tools run` it works on the page the command opened
-- (in its browser: a new headless one, the background one, --connect);
-- alone it launches headless Chromium. Runs from any directory, under Lua
-- 5.4 or LuaJIT, against the installed module or, when this file sits in
-- a checkout, the checkout's lua/ and build/<interpreter>/ (make, or make
-- LUA=luajit; DEVTOOLS_TOOLS_BUILD overrides the build directory).
dofile((debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or ".") .. "/checkout.lua")
local dt = require "devtools_tools"

local url = arg[1]
if not url then io.stderr:write("usage: lua5.4 examples/state_path.lua URL [path]\n") os.exit(2) end
local path = arg[2] or "auth.user"

-- `devtools-tools run` gives the page it opened; alone, launch Chromium
-- (on Lua 5.4 `local browser <close> = dt.launch()` closes it on every way
-- out; this form also runs on LuaJIT: close it, then report a failure).
local browser = not rawget(_G, "page") and dt.launch() or nil
local ok, value = pcall(function()
  local page = rawget(_G, "page") or browser:new_page(url)
  return page:call("getGlobalState", { path = path })
end)
if browser then browser:close() end
if not ok then
  -- every failure is a dt.Error with a code: say what happened and stop
  io.stderr:write(tostring(value), "\n")
  os.exit(1)
end
print(path .. " = " .. dt.json.encode(value))
