-- cache_stats.lua: the page's API cache statistics around one action, to
-- see what the action really costs. The action here reassigns a lead to
-- another sales rep (the sample app's dashboard); change it for yours.
--
--   lua5.4 examples/cache_stats.lua http://127.0.0.1:8080/ [leadId]
package.path = "lua/?.lua;lua/?/init.lua;examples/?.lua;" .. package.path
package.cpath = "build/lua5.4/?.so;" .. package.cpath
local dt = require "devtools_tools"
local report = require "report"

local url = arg[1] or error("usage: lua5.4 examples/cache_stats.lua URL [leadId]", 0)

local browser <close> = dt.launch()
local page = browser:new_page(url)

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
