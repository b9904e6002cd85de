-- feature_flags.lua: the feature flags of a page's session and where each
-- value comes from (server, default, or a per-session override).
--
--   devtools-tools run examples/feature_flags.lua http://127.0.0.1:8080/
--   lua5.4 examples/feature_flags.lua http://127.0.0.1:8080/
--
-- Works with any page exposing a `getFeatureFlags` tool that returns
-- {flags = {name = {value, source, ...}}}.
-- Through `devtools-tools run` it works on the page the command opened
-- (in its browser: a new headless one, the background one, --connect);
-- alone it launches headless Chromium. Runs from any directory, under Lua
-- 5.4 or LuaJIT, against the installed module or, when this file sits in
-- a checkout, the checkout's lua/ and build/<interpreter>/ (make, or make
-- LUA=luajit; DEVTOOLS_TOOLS_BUILD overrides the build directory).
dofile((debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or ".") .. "/checkout.lua")
local dt = require "devtools_tools"
local report = require "report"

local url = arg[1]
if not url then io.stderr:write("usage: lua5.4 examples/feature_flags.lua URL\n") os.exit(2) end

-- `devtools-tools run` gives the page it opened; alone, launch Chromium
-- (on Lua 5.4 `local browser <close> = dt.launch()` closes it on every way
-- out; this form also runs on LuaJIT: close it, then report a failure).
local browser = not rawget(_G, "page") and dt.launch() or nil
local ok, err = pcall(function()
  local page = rawget(_G, "page") or browser:new_page(url)

  local result = page:call("getFeatureFlags")
  local rows = {}
  for name, flag in pairs(result.flags) do
    rows[#rows + 1] = { name, tostring(flag.value), flag.source, flag.description }
  end
  table.sort(rows, function(a, b) return a[1] < b[1] end)
  print(("feature flags of user %s (session %s)"):format(tostring(result.userId), tostring(result.sessionId)))
  report.table({ "flag", "value", "source", "description" }, rows)
end)
if browser then browser:close() end
if not ok then io.stderr:write(tostring(err), "\n") os.exit(1) end
