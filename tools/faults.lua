-- tools/faults.lua: how fast each fault of a hostile page or a broken
-- browser becomes an error (the "Faults and hostile pages" table of doc/errors.md).
--   lua5.4 tools/faults.lua [build dir]     (needs Chromium and make's support
--   programs; about 25 s)
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

-- issue 33. A 50 MB response's body: kept (Chromium's own buffers keep no
-- body over about 20 MB), and too_large under history.body = 10 MiB.
do
  local dir = assert(core.fs.mkdtemp("dt-faults-big-"))
  local f = assert(io.open(dir .. "/index.html", "w")); f:write("<title>big</title>\n"); f:close()
  f = assert(io.open(dir .. "/big.txt", "wb")); f:write(("0123456789"):rep(5000000)); f:close()
  local big_server = H.start_server(dir)
  local function big_request(page)
    page:evaluate("fetch('/big.txt').then(r => r.text()).then(t => t.length)", { timeout = 30 })
    local r
    H.wait_for(function()
      r = page:network_requests({ url = "/big.txt" })[1]
      return r ~= nil and r.done
    end, 10)
    return r
  end
  local bp3 = browser:new_page(big_server.url("/index.html"))
  local r = big_request(bp3)
  measure("response_body of a 50 MB response", function() bp3:response_body(r, { timeout = 30 }) end)
  bp3:close()
  local b3 = dt.launch({ history = { body = 10 * 1024 * 1024 } })
  local p3 = b3:new_page(big_server.url("/index.html"))
  r = big_request(p3)
  measure("  the same under history.body = 10 MiB", function() p3:response_body(r, { timeout = 30 }) end)
  b3:close()
  big_server.stop()
  os.execute("rm -rf '" .. dir .. "'")
end

-- A websocket peer whose frame head declares 2^62 bytes (spec/support/ws_server).
do
  local ws_server, wport = H.start_port_program({ H.support("ws_server"), "--port", "0" })
  local t = assert(core.ws.connect("127.0.0.1", wport, "/devtools/browser/x", { deadline = core.now() + 5 }))
  t:send('{"cmd":"header","len":4611686018427387904,"body":0}', core.now() + 5)
  local conn = require("devtools_tools.wire.cdp").new(t, { timeout = 10 })
  measure("a websocket frame head declaring 2^62 bytes (timeout 10 s)", function()
    conn:call("Browser.getVersion")
  end)
  t:close()
  ws_server:close(0)
end

-- A WebDriver endpoint (spec/support/fake_grid.lua, in front of a Chromium
-- on a debugging port) that answers oddly.
do
  local R = require "support.remote_helper"
  local cjson = require "cjson"
  local chrome, cport = R.chromium()
  local _, body = core.http.get("127.0.0.1", cport, "/json/version", core.now() + 10)
  local grid, gport = H.start_port_program({ "/usr/bin/lua5.4", "spec/support/fake_grid.lua",
    cjson.decode(body).webSocketDebuggerUrl, "ws://127.0.0.1:9/gone" })
  local url = "http://127.0.0.1:" .. gport
  local wb = dt.webdriver(url, { browserName = "slowdelete" }, { timeout = 30 })
  measure("WebDriver close{timeout = 2} whose DELETE is answered 3 s late", function()
    wb:close({ timeout = 2 })
  end)
  measure("WebDriver session id with a space, a line break, a slash", function()
    dt.webdriver(url, { browserName = "oddid" }, { timeout = 30 }):close()
  end)
  measure("WebDriver session id that is empty", function()
    dt.webdriver(url, { browserName = "emptyid" }, { timeout = 30 })
  end)
  measure("WebDriver se:cdp that is not a URL", function()
    dt.webdriver(url, { browserName = "garbagecdp" }, { timeout = 30 })
  end)
  R.stop(grid)
  R.stop(chrome, 2)
end
measure("connect to a closed port", function() dt.connect("http://127.0.0.1:9") end)

browser:close()
server.stop()
for _, r in ipairs(rows) do print(r) end
