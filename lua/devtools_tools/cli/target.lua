-- devtools_tools.cli.target: the browser and the page a command works on -
-- the one --connect names, the background one, or a headless Chromium
-- launched for the command; a new page at URL, the --tab page, or the
-- page a running browser opened last.
--
-- It must never leave a browser it launched running (with_page closes it
-- on every way out), nor connect to a host that is not a loopback one.

local dt = require "devtools_tools"
local argv = require "devtools_tools.cli.argv"
local background = require "devtools_tools.cli.background"
local text = require "devtools_tools.present.text"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, tostring, ipairs, pcall, error, tonumber = type, tostring, ipairs, pcall, error, tonumber
local clean, usage = text.clean, argv.usage

local M = {}

local function fail(code, message, fields)
  error(dt.new_error(code, message, fields), 0)
end

-- open_browser(ctx) -> browser, how ("launched" | "connected")
function M.open_browser(ctx)
  local opts, progress, left = ctx.opts, ctx.progress, ctx.left
  if opts.connect then
    progress:step("connecting to " .. opts.connect)
    local ok, b = pcall(dt.connect, opts.connect, { timeout = left() })
    if ok then return b, "connected" end
    if dt.is_error(b) and b.code == "bad_argument" then
      -- Refused before any connection is tried: the value does not parse
      -- as an endpoint (connect's other options are ours), a usage error
      -- as a malformed --timeout is.
      progress:done()
      local d = type(b.details) == "table" and b.details
      usage("--connect " .. clean(opts.connect) .. ": " .. tostring(d and d.problem or b.message))
    end
    error(b, 0)
  end
  if not opts.headful and not opts.chromium then
    local bg = background.handle(true)
    local state, rec
    if bg then state, rec = bg:status() end
    if state == "starting" or state == "gone" then fail("disconnected", background.unusable(state, rec)) end
    if state == "running" then
      progress:step("connecting to the background browser")
      return dt.connect(rec.endpoint, { timeout = left() }), "connected"
    end
  end
  progress:step("launching Chromium")
  local lo = { timeout = left() }
  if opts.headful then lo.headless = false end
  if opts.chromium then lo.executable = opts.chromium end
  return dt.launch(lo), "launched"
end

local function pick_page(ctx, browser, how, url)
  local opts, progress, left = ctx.opts, ctx.progress, ctx.left
  if opts.tab then
    local want = opts.tab
    for _, p in ipairs(browser:pages({ timeout = left() })) do
      if (p.url or ""):find(want, 1, true) or (p.title or ""):find(want, 1, true) then
        local page = browser:attach(p.id, { timeout = left() })
        if url then
          progress:step("opening " .. url)
          page:navigate(url, { timeout = left() })
        end
        return page
      end
    end
    fail("bad_argument", "no open page whose URL or title contains \"" .. clean(want) .. "\"")
  end
  if url then
    progress:step("opening " .. url)
    return browser:new_page(url, { timeout = left() })
  end
  if how == "connected" then
    -- the page opened last: the one in the newest window (window ids grow;
    -- a headless browser gives each page a window), the last of its tabs
    -- (Chromium lists a window's tabs oldest first)
    local last, last_window
    for _, p in ipairs(browser:pages({ timeout = left() })) do
      local ok, r = pcall(browser.cdp, browser, "Browser.getWindowForTarget", { targetId = p.id },
        { timeout = left() })
      local w = ok and type(r) == "table" and tonumber(r.windowId) or -1
      if not last or w >= last_window then last, last_window = p, w end
    end
    if last then return browser:attach(last.id, { timeout = left() }) end
  end
  return browser:new_page(nil, { timeout = left() })
end

-- open_page(ctx, browser, how, url) -> the page the command works on,
-- offering the --wait-for tool when given (a page may register tools
-- after its load event)
function M.open_page(ctx, browser, how, url)
  local page = pick_page(ctx, browser, how, url)
  local name = ctx.opts["wait-for"]
  if name then
    ctx.progress:step("waiting for the tool " .. name)
    page:wait_for_tool(name, { timeout = ctx.left() })
  end
  return page
end

-- with_page(ctx, url, fn) -> fn(browser, page)'s result; the browser is
-- closed (a launched one ended, a connected one left running) on every way
-- out
function M.with_page(ctx, url, fn)
  local browser, how = M.open_browser(ctx)
  local ok, res = pcall(function()
    local page = M.open_page(ctx, browser, how, url)
    return fn(browser, page)
  end)
  ctx.progress:done()
  browser:close()
  if not ok then error(res, 0) end
  return res
end

-- need_target(ctx, url, cmd): a command that works on a page needs a URL
-- unless a browser is named or recorded: a usage error otherwise
function M.need_target(ctx, url, cmd)
  local opts = ctx.opts
  if url or opts.tab or opts.connect or opts.headful or opts.chromium then return end
  local bg = background.handle(true)
  local state = bg and bg:status() or "none"
  if state ~= "none" and state ~= "unreadable" then return end
  usage("a URL is needed: no browser runs in the background (`devtools-tools browser start`)"
    .. " and no --connect or --tab was given", cmd)
end

return M
