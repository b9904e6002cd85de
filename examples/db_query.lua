-- db_query.lua: rows of a database table through the page's read-only
-- debug endpoint, as an aligned table.
--
--   devtools-tools run examples/db_query.lua http://127.0.0.1:8080/ [table] [limit]
--   lua5.4 examples/db_query.lua http://127.0.0.1:8080/ orders 10
-- table: default orders; limit: default 5.
--
-- Works with any page exposing `queryDatabaseTable({tableName, limit})`
-- returning {columns, rows}. Bad arguments are refused before anything is
-- sent: the tool's inputSchema lists the allowed tables.
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
if not url then io.stderr:write("usage: lua5.4 examples/db_query.lua URL [table] [limit]\n") os.exit(2) end
local table_name = arg[2] or "orders"
local limit = tonumber(arg[3] or "5")
if not limit then      -- "abc" would have been sent as no limit at all
  io.stderr:write("usage: lua5.4 examples/db_query.lua URL [table] [limit]: limit must be a number, got "
    .. arg[3] .. "\n")
  os.exit(2)
end
if math.tointeger then limit = math.tointeger(limit) or limit end   -- an integer on 5.3+

-- `devtools-tools run` gives the page it opened; alone, launch Chromium
-- (on Lua 5.4 `local browser <close> = dt.launch()` closes it on every way
-- out; this form also runs on LuaJIT: close it, then report a failure).
local browser = not rawget(_G, "page") and dt.launch() or nil
local ok, result = pcall(function()
  local page = rawget(_G, "page") or browser:new_page(url)
  return page:call("queryDatabaseTable", { tableName = table_name, limit = limit })
end)
if browser then browser:close() end
if not ok then
  io.stderr:write(tostring(result), "\n")   -- e.g. invalid_params: .../tableName must be equal to one of ...
  os.exit(1)
end
local rows = {}
for i, row in ipairs(result.rows) do
  rows[i] = {}
  for j, col in ipairs(result.columns) do rows[i][j] = row[col] end
end
print(("%s: %d rows"):format(table_name, #rows))
report.table(result.columns, rows)
