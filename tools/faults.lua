-- tools/faults.lua: how fast each fault of a hostile page or a broken
-- browser becomes an error (the README's "Faults and hostile pages" table).
--   lua5.4 tools/faults.lua [build dir]     (needs Chromium; about 15 s)
-- Prints one line per fault: what was done, the error code, the time from
-- the call to the error.
local build = arg[1] or "build/lua5.4"
package.path = "lua/?.lua;lua/?/init.lua;spec/?.lua;" .. package.path
package.cpath = build .. "/?.so;" .. package.cpath
local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local H = require "helper"

local server = H.start_server()
local browser = dt.launch()
local rows = {}

local function measure(what, fn)
  local t0 = core.now()
  local ok, err = pcall(fn)
  local dt_ms = (core.now() - t0) * 1000
  local code = ok and "ok" or (dt.is_error(err) and err.code or ("raw: " .. tostring(err)))
  if dt.is_error(err) and err.details and err.details.decoding then code = code .. " (decoding)" end
  rows[#rows + 1] = ("%-62s %-19s %8.1f ms"):format(what, code, dt_ms)
end

local function fresh(path) return browser:new_page(server.url(path)) end

local p = fresh("/tools.html")
measure("tool that never settles, timeout 1 s", function() p:call("never", nil, { timeout = 1 }) end)
measure("busy loop (for(;;)) in a tool, timeout 1 s", function() p:call("busy", nil, { timeout = 1 }) end)
measure("  the next call on that page (script stopped first)", function() p:call("add", { a = 1, b = 2 }) end)
measure("page script opening alert, then confirm (answered as they open)", function()
  p:evaluate("alert('a'); confirm('b')", { timeout = 5 })
end)
measure("tool that throws", function() p:call("fail", { kind = "error" }) end)
measure("arguments that fail the schema", function() p:call("add", { a = "x" }) end)
measure("a misspelt tool name (one more discovery)", function() p:call("ad") end)
local el = p:call("elements").cart
p:navigate(server.url("/tools.html?again"))
measure("an Element of a document that is gone", function() p:call("elementText", { el = el }) end)
local lp = fresh("/tools.html")
measure("renderer crash during a call", function()
  lp.conn:send_nowait("Page.crash", nil, lp.session)
  lp:call("never", nil, { timeout = 10 })
end)
measure("  page:reload() after the crash", function() lp:reload() end)

-- A schema whose naive validation doubles per level (26 levels of anyOf $refs).
local defs = {}
for i = 0, 25 do
  defs["d" .. i] = { anyOf = { { ["$ref"] = "#/definitions/d" .. (i + 1) }, { ["$ref"] = "#/definitions/d" .. (i + 1) } } }
end
defs.d26 = { type = "string" }
local schema = require "devtools_tools.schema"
measure("26-level anyOf/$ref schema, compile and check a value", function()
  local check = schema.compile({ definitions = defs, ["$ref"] = "#/definitions/d0" }, { deadline = core.now() + 5 })
  local okv = check(42, core.now() + 5)
  if okv then error("validated") end
  error(dt.Error and setmetatable({ code = "invalid_params", message = "" }, dt.Error), 0)
end)

local dp = fresh("/deepframes.html")
measure("a group whose schema nests 600 levels (skipped, warned)", function()
  local groups, warnings = dp:discover()
  if #warnings == 0 then error("no warning") end
end)

-- A result of 1,000,000 rows (81 MB of JSON) whose decoding, about a third
-- of the call, would end past the deadline: timed once in full, then called
-- with 90 % of that, when the reply has usually come and is being decoded
-- (else the page is still building it: a plain timeout).
local bp = fresh("/tools.html")
local t0 = core.now()
bp:call("big", { mb = 80 }, { timeout = 60 })
local full = core.now() - t0
collectgarbage()
measure(("1,000,000-row result, timeout %.2f s (90 %% of its %.2f s)"):format(0.9 * full, full), function()
  bp:call("big", { mb = 80 }, { timeout = 0.9 * full })
end)
bp:close()
collectgarbage()

local b2 = dt.launch()
local p2 = b2:new_page(server.url("/tools.html"))
p2:tool("never")
measure("Chromium killed (SIGKILL) during a call", function()
  os.execute("kill -9 " .. b2.process:pid())
  p2:call("never", nil, { timeout = 10 })
end)
b2:close()
measure("no Chromium at the given path", function() dt.launch({ executable = "/nonexistent/chromium" }) end)
measure("connect to a closed port", function() dt.connect("http://127.0.0.1:9") end)

browser:close()
server.stop()
for _, r in ipairs(rows) do print(r) end
