-- cache_stats.lua: the page's API cache statistics around one action, to
-- see what the action really costs. The action here reassigns a lead to
-- another sales rep (the sample app's dashboard); change it for yours.
-- It changes the app's data: the lead keeps its new rep until the server
-- restarts (the database is rebuilt from seed.sql at every start).
--
--   devtools-tools run examples/cache_stats.lua http://127.0.0.1:8080/ [leadId]
--   lua5.4 examples/cache_stats.lua http://127.0.0.1:8080/ [leadId]
-- leadId: the lead to reassign (default: the first on the pipeline).
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
if not url then io.stderr:write("usage: lua5.4 examples/cache_stats.lua URL [leadId]\n") os.exit(2) end

-- `devtools-tools run` gives the page it opened; alone, launch Chromium
-- (on Lua 5.4 `local browser <close> = dt.launch()` closes it on every way
-- out; this form also runs on LuaJIT: close it, then report a failure).
local browser = not rawget(_G, "page") and dt.launch() or nil
local ok, err = pcall(function()
  local page = rawget(_G, "page") or browser:new_page(url)

  -- Pick a lead and a rep who does not own it yet.
  local pipeline = page:call("getPipeline")
  local lead = pipeline.leads[1]
  if arg[2] then
    for _, l in ipairs(pipeline.leads) do
      if l.id == tonumber(arg[2]) then lead = l end
    end
  end
  local rep
  for _, r in ipairs(pipeline.reps) do
    if r.id ~= lead.repId then rep = r break end
  end

  local before = page:call("getCacheStatistics")
  page:call("reassignLead", { leadId = lead.id, repId = rep.id })
  local after = page:call("getCacheStatistics")

  print(("reassigned lead %d (%s) from %s to %s"):format(lead.id, lead.company, lead.repName, rep.name))
  report.table({ "", "hits", "misses", "entries", "invalidations" }, {
    { "before", before.hits, before.misses, before.entries, before.invalidations },
    { "after", after.hits, after.misses, after.entries, after.invalidations },
    { "change", after.hits - before.hits, after.misses - before.misses,
      after.entries - before.entries, after.invalidations - before.invalidations },
  })
end)
if browser then browser:close() end
if not ok then io.stderr:write(tostring(err), "\n") os.exit(1) end
