-- feature_flags.lua: the feature flags of a page's session and where each
-- value comes from (server, default, or a per-session override).
--
--   lua5.4 examples/feature_flags.lua http://127.0.0.1:8080/
--
-- Works with any page exposing a `getFeatureFlags` tool that returns
-- {flags = {name = {value, source, ...}}}.
package.path = "lua/?.lua;lua/?/init.lua;examples/?.lua;" .. package.path
package.cpath = "build/lua5.4/?.so;" .. package.cpath
local dt = require "devtools_tools"
local report = require "report"

local url = arg[1] or error("usage: lua5.4 examples/feature_flags.lua URL", 0)

local browser <close> = dt.launch()
local page = browser:new_page(url)

local result = page:call("getFeatureFlags")
local rows = {}
for name, flag in pairs(result.flags) do
  rows[#rows + 1] = { name, tostring(flag.value), flag.source, flag.description }
end
table.sort(rows, function(a, b) return a[1] < b[1] end)
print(("feature flags of user %s (session %s)"):format(tostring(result.userId), tostring(result.sessionId)))
report.table({ "flag", "value", "source", "description" }, rows)
