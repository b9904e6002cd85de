-- devtools_tools.cli.mcp: `devtools-tools mcp [URL]` - the page's tools
-- served to AI agents over stdio (devtools_tools.mcp), until stdin ends.
--
-- Thin: it checks its words, opens the browser and the page as every
-- command does (cli.target: launched, --connect, the background browser,
-- --tab), hands the page to the MCP server on the stdio transport and
-- turns the loop; when stdin ends it closes what it opened (a launched
-- browser ended and its profile removed; a page it opened in a running
-- browser closed) and exits 0.
--
-- It must never write anything on stdout itself (stdout carries MCP
-- messages only: what it says goes to stderr), nor leave a browser it
-- launched running.

local dt = require "devtools_tools"
local argv = require "devtools_tools.cli.argv"
local target = require "devtools_tools.cli.target"
local mcp = require "devtools_tools.mcp"
local trace = require "devtools_tools.cli.trace"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local pcall, error = pcall, error

local M = {}

-- How long closing may take once stdin ended (the client waits for the
-- exit; MCP clients send SIGTERM after a few seconds).
M.CLOSE_TIMEOUT = 1.5

function M.run(ctx)
  local pos, opts = ctx.pos, ctx.opts
  if #pos > 1 then argv.usage("mcp takes at most one URL", "mcp") end
  local url = pos[1]
  target.need_target(ctx, url, "mcp")
  local browser, how = target.open_browser(ctx)
  local page, opened
  local ok, res = pcall(function()
    page, opened = target.open_page(ctx, browser, how, url)
    ctx.progress:done()
    local server = mcp.serve(mcp.stdio(), {
      page = page, browser = browser, allow_eval = opts["allow-eval"] or nil, webmcp = opts.webmcp or nil,
      timeout = opts.timeout or nil,
      log = function(line) ctx.out:note("mcp: " .. line) end,
    })
    trace.recording(ctx, page, function() server:run() end)
  end)
  if opened and how == "connected" and page then pcall(page.close, page, { timeout = M.CLOSE_TIMEOUT }) end
  pcall(browser.close, browser, { timeout = M.CLOSE_TIMEOUT })
  if not ok then error(res, 0) end
  return 0
end

return M
