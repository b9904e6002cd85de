-- tools/differential/ours.lua: our side of the differential run. On each
-- planned page: page:navigate, page:discover, then page:call for each
-- planned argument set, in one browser and one page for the whole run.
--
--   lua5.4 tools/differential/ours.lua BUILD PLAN.jsonl BASE_URL OUT.jsonl
--
-- Writes one JSON line per page, the shape reference.js writes: {index,
-- groups | listError, warnings, calls: [{tool, params, error | none |
-- value}]}, where an error is {code, message, thrown} (thrown: the page's
-- own message, for tool_error). An Element in a result is written
-- {"\u0000element": its data-diff attribute}, read through DOM.resolveNode.
--
-- What it must never do: stop at the first failure (each call is caught
-- and written down), or leave Chromium running (closed on every way out).

local build, plan_file, base, out_file = arg[1], arg[2], arg[3], arg[4]
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = "./" .. build .. "/?.so;" .. package.cpath

local dt = require "devtools_tools"
local json = dt.json

local ELEMENT = "\0element"
local TIMEOUT = 20

local function read_plan(file)
  local plan = {}
  for line in io.lines(file) do
    if #line > 0 then plan[#plan + 1] = json.decode(line) end
  end
  return plan
end

-- the element's data-diff attribute, or a note saying why not
local function tag_of(page, el)
  local ok, res = pcall(function()
    local node = page:cdp("DOM.resolveNode", { backendNodeId = el.backend_node_id })
    local id = node.object.objectId
    local r = page:cdp("Runtime.callFunctionOn", { objectId = id, returnByValue = true,
      functionDeclaration = "function () { return this.getAttribute('data-diff'); }" })
    pcall(page.cdp, page, "Runtime.releaseObject", { objectId = id })
    return r.result.value
  end)
  if ok then return res end
  return "unresolved: " .. tostring(res)
end

-- the value with each Element replaced as above (tables from a reply are ours)
local function plain(page, v, depth)
  if dt.is_element(v) then return { [ELEMENT] = tag_of(page, v) } end
  if type(v) ~= "table" or depth > 1100 then return v end
  for k, x in pairs(v) do
    if type(x) == "table" then v[k] = plain(page, x, depth + 1) end
  end
  return v
end

local function failure(err)
  if dt.is_error(err) then
    local thrown = err.details and type(err.details) == "table" and err.details.message or nil
    return { code = err.code, message = err.message, thrown = type(thrown) == "string" and thrown or nil }
  end
  return { code = "lua", message = tostring(err) }
end

local function run_page(page, p)
  local rec = { index = p.index, calls = dt.array{} }
  local ok, err = pcall(page.navigate, page, base .. p.file, { timeout = TIMEOUT })
  if not ok then rec.navError = failure(err) end
  local ok2, groups, warnings = pcall(page.discover, page, { timeout = TIMEOUT })
  if not ok2 then
    rec.listError = failure(groups)
  else
    rec.groups = dt.array{}
    for _, g in ipairs(groups) do
      local tools = dt.array{}
      for _, t in ipairs(g.tools) do
        tools[#tools + 1] = { name = t.name, description = t.description, inputSchema = t.input_schema }
      end
      rec.groups[#rec.groups + 1] = { name = g.name, description = g.description or dt.null, tools = tools,
        kind = g.kind, main = g.frame and g.frame.id == page.main_frame, frame = g.frame and g.frame.url }
    end
    local w = dt.array{}
    for i, x in ipairs(warnings or {}) do w[i] = tostring(x) end
    rec.warnings = w
  end
  local previous                  -- the last result as the API gave it (an Element)
  for _, c in ipairs(p.calls) do
    local entry = { tool = c.tool, params = c.params }
    local args = json.decode(c.params)
    for k, v in pairs(args) do
      if v == "\0prev" then args[k] = previous end
    end
    previous = nil
    local okc, res = pcall(page.call, page, c.tool, args, { timeout = TIMEOUT })
    if okc then previous = res end
    if not okc then
      entry.error = failure(res)
    elseif res == nil then
      entry.none = true
    else
      entry.value = plain(page, res, 0)
    end
    rec.calls[#rec.calls + 1] = entry
  end
  return rec
end

local plan = read_plan(plan_file)
local out = assert(io.open(out_file, "w"))
local browser = dt.launch{ timeout = TIMEOUT }
local ok, err = pcall(function()
  local page = browser:new_page()
  for _, p in ipairs(plan) do
    local rok, rec = pcall(run_page, page, p)
    if not rok then rec = { index = p.index, driverError = failure(rec) } end
    local eok, text = pcall(json.encode, rec)
    if not eok then text = json.encode({ index = p.index, driverError = failure(text) }) end
    out:write(text, "\n")
    out:flush()
    if not rok and rec.driverError.code == "disconnected" then
      page = browser:new_page()
    end
  end
end)
out:close()
browser:close()
if not ok then
  io.stderr:write("ours driver: ", tostring(err), "\n")
  os.exit(2)
end
