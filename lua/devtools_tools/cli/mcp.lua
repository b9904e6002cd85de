-- devtools_tools.cli.mcp: `devtools-tools mcp [URL]` - the page's tools
-- served to AI agents over stdio (devtools_tools.mcp), until stdin ends or
-- a signal (TERM, HUP, INT) comes.
--
-- The server answers at once: the browser and the page come up behind it
-- (mcp/start.lua retries a page that does not answer yet, for an app that
-- starts after its agent's host), opened as every command opens them
-- (cli.target: launched - with WebMCP on unless --no-webmcp -, --connect,
-- the background browser, --tab). When stdin ends or a signal comes it
-- closes what it opened (a launched browser ended and its profile
-- removed; a page it opened in a running browser closed) and exits: 0 at
-- the end of stdin, 128 + the signal's number after one.
--
-- It must never write anything on stdout itself (stdout carries MCP
-- messages only: what it says goes to stderr), leave a browser it
-- launched running, nor take more than CLOSE_TIMEOUT seconds (and the
-- server's LINGER) to exit.

local dt = require "devtools_tools"
local argv = require "devtools_tools.cli.argv"
local target = require "devtools_tools.cli.target"
local mcp = require "devtools_tools.mcp"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local pcall, error, getmetatable, type, tostring, ipairs = pcall, error, getmetatable, type, tostring, ipairs

local M = {}

-- How long closing what it opened may take once stdin ended (the client
-- waits for the exit; MCP clients send SIGTERM after a few seconds), and
-- how long the server's answers and the page's opening are given to end
-- first: 2 s in all.
M.CLOSE_TIMEOUT = 1.35
M.LINGER = 0.5

local SIGNALS = { TERM = 15, HUP = 1, INT = 2 }

local function webmcp_note(ctx, page, held)
  if held.noted then return end
  held.noted = true
  if ctx.background then
    if ctx.background.webmcp or ctx.opts.webmcp then return end   -- (cli.target said it for --webmcp)
    ctx.out:note("mcp: WebMCP: the background browser was started without it, so the page's WebMCP tools"
      .. " are not served: `browser stop`, then `browser start --webmcp` (--no-webmcp says nothing of it)")
    return
  end
  local ok, missing = pcall(page.evaluate, page, "isSecureContext && !('modelContext' in document)",
    { timeout = 5 })
  if ok and missing == true then
    ctx.out:note("mcp: WebMCP: this browser was started without it (--enable-features=WebMCP), so the"
      .. " page's WebMCP tools are not served (--no-webmcp says nothing of it)")
  end
end

function M.run(ctx)
  local pos, opts = ctx.pos, ctx.opts
  if #pos > 1 then argv.usage("mcp takes at most one URL", "mcp") end
  local url = argv.as_url(pos[1])
  if url then
    local ok, why = mcp.check_url(url)
    if not ok then argv.usage("mcp: " .. why, "mcp") end
  end
  target.need_target(ctx, url, "mcp")
  if opts.webmcp and opts["no-webmcp"] then argv.usage("--webmcp and --no-webmcp exclude each other", "mcp") end
  local allow = opts["allow-navigate"] or {}
  for _, h in ipairs(allow) do
    local ok, why = mcp.check_host(h)
    if not ok then argv.usage("--allow-navigate " .. h .. ": " .. why, "mcp") end
  end
  -- WebMCP on where we launch (--no-webmcp: off); a running browser has it or not
  ctx.launch_webmcp = not opts["no-webmcp"]
  ctx.progress = ctx.out:progress(true)      -- (nothing but notes on stderr: a host logs it)
  local per_attempt = opts.timeout or 30
  local held = {}                            -- what the opening opened: browser, how, page, opened
  local usage_error

  -- One attempt to bring the page up, inside the server's task: the
  -- browser is opened once; the tab is chosen as every command chooses it,
  -- once (an open tab attached is kept even when its page did not load:
  -- ctx.picked), and a tab kept from an attempt that failed is loaded
  -- again. A tab that shows the browser's own error page is not up (a
  -- failed navigation leaves the tab's URL as asked, so it would be taken
  -- for a tab that shows it).
  ctx.picked = function(page) held.page, held.opened = page, false end
  local function load_again()
    local page = held.page
    local ok, err = pcall(function()
      if url then page:navigate(url, { timeout = ctx.left() }) else page:reload({ timeout = ctx.left() }) end
    end)
    if not ok then
      if dt.is_error(err) and (err.code == "disconnected" or err.code == "stale") then held.page = nil end
      error(err, 0)
    end
  end
  local function open()
    local deadline = dt.now() + per_attempt
    ctx.left = function()
      local l = dt.left(deadline)
      if l <= 0 then error(dt.new_error("timeout", "opening the page took over " .. per_attempt .. " s"), 0) end
      return l
    end
    local ok, err = pcall(function()
      if not held.browser then held.browser, held.how = target.open_browser(ctx) end
      if held.page then
        load_again()
      else
        local page, opened = target.open_page(ctx, held.browser, held.how, url)
        held.page, held.opened = page, opened
      end
      local shown = held.page:evaluate("location.href", { timeout = ctx.left() })
      if type(shown) == "string" and shown:find("^chrome%-error:") then
        error(dt.new_error("protocol_error", "the tab shows the browser's error page for "
          .. tostring(url or held.page.url)), 0)
      end
    end)
    if not ok then
      if getmetatable(err) == argv.Usage then
        usage_error = err                        -- (a --connect that does not parse: exit 2)
        error(dt.new_error("bad_argument", tostring(err.message)), 0)
      end
      error(err, 0)
    end
    if held.how == "connected" and not opts["no-webmcp"] then webmcp_note(ctx, held.page, held) end
    return held.page, held.browser
  end

  local signals = dt.catch_signals({ "TERM", "HUP", "INT" })
  local caught
  local server
  local ok, res = pcall(function()
    server = mcp.serve(mcp.stdio(), {
      open = open, url = url or (opts.tab and ("the tab " .. opts.tab)) or "the page used last",
      allow_eval = opts["allow-eval"] or nil, webmcp = ctx.launch_webmcp or opts.webmcp or nil,
      timeout = opts.timeout or nil, trust_page = opts["trust-page"] or nil,
      allow_navigate = allow,
      log = function(line) ctx.out:note("mcp: " .. line) end,
    })
    if usage_error then server:close("usage") end
    local loop = dt.loop()
    local w = loop:watch(signals:fd(), "r", function()
      local name = signals:take()
      if name and not caught then
        caught = name
        server:close("SIG" .. name)
      end
    end)
    server:run(M.LINGER)
    loop:unwatch(w)
  end)
  if server then pcall(server.close, server, "error") end     -- (closed already, but on an error)
  local close_by = dt.now() + M.CLOSE_TIMEOUT
  if held.page and held.opened and held.how == "connected" then
    pcall(held.page.close, held.page, { timeout = dt.left(close_by) })
  end
  if held.browser then pcall(held.browser.close, held.browser, { timeout = math.max(0.1, dt.left(close_by)) }) end
  signals:release()
  if not ok then error(res, 0) end
  if usage_error then error(usage_error, 0) end
  if caught then return 128 + SIGNALS[caught] end
  return 0
end

return M
