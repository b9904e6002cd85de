-- db_query.lua: rows of a database table through the page's read-only
-- debug endpoint, as an aligned table.
--
--   lua5.4 examples/db_query.lua http://127.0.0.1:8080/ orders 10
--
-- Works with any page exposing `queryDatabaseTable({tableName, limit})`
-- returning {columns, rows}. Bad arguments are refused before anything is
-- sent: the tool's inputSchema lists the allowed tables.
package.path = "lua/?.lua;lua/?/init.lua;examples/?.lua;" .. package.path
package.cpath = "build/lua5.4/?.so;" .. package.cpath
local dt = require "devtools_tools"
local report = require "report"

local url = arg[1] or error("usage: lua5.4 examples/db_query.lua URL [table] [limit]", 0)
local table_name = arg[2] or "orders"
local limit = math.tointeger(tonumber(arg[3] or "5"))

local browser <close> = dt.launch()
local page = browser:new_page(url)

local ok, result = pcall(page.call, page, "queryDatabaseTable", { tableName = table_name, limit = limit })
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
