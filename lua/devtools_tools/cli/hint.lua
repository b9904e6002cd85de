-- devtools_tools.cli.hint: --wait-for TOOL, and what the command says when
-- the tool never came: the names the page has (the library's message:
-- the nearest one, how many), and when WebMCP is off while the page's
-- scripts use it (document.modelContext), that --webmcp would show its
-- WebMCP tools - the name itself among them when a script holds it.
--
-- The look at the page's scripts is made in what the command keeps of its
-- deadline for it (a tenth, at most a second): their text inline, and the
-- bodies of the scripts the page loaded as its history holds them. It
-- must never make the command later than its deadline, nor fail because
-- the look failed (the timeout is told either way).

local dt = require "devtools_tools"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, tostring, ipairs, pcall, error = type, tostring, ipairs, pcall, error

local M = {}

M.RESERVE = 1            -- seconds at most kept for the look
M.MAX_SCRIPTS = 20       -- script bodies read at most
M.MAX_BODY = 4 * 1024 * 1024

-- What the page's own document says: is WebMCP on, and do its inline
-- scripts use it or hold the name?
local LOOK = [[
((name) => {
  const on = typeof document.modelContext === 'object' || typeof navigator.modelContext === 'object';
  let uses = false, named = false;
  for (const s of Array.from(document.scripts)) {
    const t = s.src ? '' : String(s.text || '');
    if (t.includes('modelContext')) { uses = true; if (t.includes(name)) named = true; }
  }
  return [on, uses, named];
})(%s)]]

-- look(ctx, page, name, deadline) -> hint text or nil
local function look(ctx, page, name, deadline)
  local function left() return dt.left(deadline) end
  local r = page:evaluate(LOOK:format(dt.json.encode(name)), { timeout = left() })
  if type(r) ~= "table" or r[1] == true then return nil end         -- WebMCP is on: nothing to add
  local uses, named = r[2] == true, r[3] == true
  if not named then
    local n = 0
    for _, rec in ipairs(page:network_requests()) do
      if n >= M.MAX_SCRIPTS or left() <= 0 then break end
      if rec.type == "Script" and rec.done and not rec.failed
          and (rec.sizes and rec.sizes.body or 0) <= M.MAX_BODY then
        n = n + 1
        local ok, body = pcall(page.response_body, page, rec, { timeout = left() })
        if ok and type(body) == "string" and body:find("modelContext", 1, true) then
          uses = true
          if body:find(name, 1, true) then named = true break end
        end
      end
    end
  end
  if not uses then return nil end
  local how = ctx.background and "`browser stop`, then `browser start --webmcp`" or "--webmcp"
  if named then
    return "it looks like a WebMCP tool (the page's scripts register it through document.modelContext),"
      .. " and WebMCP is off: " .. how
  end
  return "WebMCP is off, and the page's scripts use document.modelContext: its WebMCP tools show with " .. how
end

-- wait_for_tool(ctx, page, name): page:wait_for_tool within the command's
-- deadline less the reserve; on a timeout, the look, then the timeout
-- with what it found
function M.wait_for_tool(ctx, page, name)
  local l = ctx.left()
  local reserve = math.min(M.RESERVE, l / 10)
  local ok, err = pcall(page.wait_for_tool, page, name, { timeout = l - reserve })
  if ok then return end
  if not (dt.is_error(err) and err.code == "timeout") then error(err, 0) end
  local has, rem = pcall(ctx.left)              -- (it raises once the deadline passed)
  local found, h = false, nil
  if has and rem > 0.05 then found, h = pcall(look, ctx, page, name, dt.now() + rem - 0.05) end
  if found and h then
    err = dt.new_error("timeout", tostring(err.message) .. "; " .. h, { tool = err.tool, details = err.details })
  end
  error(err, 0)
end

return M
