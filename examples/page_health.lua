-- page_health.lua: a page's console errors and warnings and its failed
-- requests, next to its tools and their state: everything an agent sees in
-- DevTools for agents, side by side.
--
--   devtools-tools run --webmcp examples/page_health.lua URL [tool ...]
--   lua5.4 examples/page_health.lua URL [tool ...]
--
-- Opens URL (WebMCP on), lists the page's tool groups of both kinds, calls
-- each named tool without arguments and prints what it returned (its state,
-- or its error), then the console messages of warning level and above and
-- the requests that failed or answered 4xx/5xx since the page opened.
-- Exits 1 when it found any of those, so it can gate a smoke test.
-- Through `devtools-tools run` it works on the page the command opened
-- (--webmcp shows the page's WebMCP tools too); alone it launches headless
-- Chromium, WebMCP on. Runs from any directory, under Lua 5.4 or LuaJIT
-- (see checkout.lua).
dofile((debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or ".") .. "/checkout.lua")
local dt = require "devtools_tools"
local report = require "report"

local url = arg[1]
if not url then io.stderr:write("usage: lua5.4 examples/page_health.lua URL [tool ...]\n") os.exit(2) end

-- `devtools-tools run` gives the page it opened; alone, launch Chromium
-- (Lua 5.4: local browser <close> = ...; this form also runs on LuaJIT)
local browser = not rawget(_G, "page") and dt.launch({ webmcp = true }) or nil
local found = false
local ok, err = pcall(function()
  local page = rawget(_G, "page") or browser:new_page(url)

  -- Tools, both kinds
  local groups = page:discover()
  local rows = {}
  for _, g in ipairs(groups) do
    rows[#rows + 1] = { g.kind, g.name, g.frame.url, #g.tools }
  end
  print("== tools")
  report.table({ "kind", "group", "frame", "tools" }, rows)

  -- Their state: each named tool, called with no arguments, within one
  -- bracket, so what the calls themselves cause is counted too.
  print("")
  print("== tool state")
  for i = 2, #arg do
    local ok, v = pcall(page.call, page, arg[i])
    if ok then
      print(("%s -> %s"):format(arg[i], dt.json.encode(v)))
    else
      print(("%s failed: %s"):format(arg[i], tostring(v)))
    end
  end

  -- Console messages of warning level and above
  local msgs = page:console_messages({ level = "warning" })
  print("")
  print(("== console: %d warning(s) and error(s)"):format(#msgs))
  rows = {}
  for _, m in ipairs(msgs) do
    local loc = m.location
    local where = loc and loc.url and (loc.url:match("[^/]*$") .. ":" .. tostring((loc.line or 0) + 1)) or ""
    -- a browser log entry says where it comes from (network, violation, ...)
    local kind = m.type == "entry" and m.source or m.type
    rows[#rows + 1] = { m.level, kind, (m.text:gsub("\n.*", " ...")), where }
  end
  if #rows > 0 then report.table({ "level", "type", "message", "where" }, rows) end

  -- Requests that failed or answered with an error status
  local bad = {}
  for _, r in ipairs(page:network_requests()) do
    if r.failed or (r.status and r.status >= 400) then bad[#bad + 1] = r end
  end
  print("")
  print(("== failed requests: %d"):format(#bad))
  rows = {}
  for _, r in ipairs(bad) do
    rows[#rows + 1] = { r.method, r.url, r.status or r.failed, r.type, r.initiator.type }
  end
  if #rows > 0 then report.table({ "method", "url", "status", "type", "initiator" }, rows) end

  found = #msgs > 0 or #bad > 0
end)
if browser then browser:close() end
if not ok then io.stderr:write(tostring(err), "\n") os.exit(1) end
if found then os.exit(1) end
