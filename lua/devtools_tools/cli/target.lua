-- devtools_tools.cli.target: the browser and the page a command works on -
-- the one --connect names, the background one, or a headless Chromium
-- launched for the command; in a running browser the tab that shows the
-- URL (else a new one), the --tab page, or the page used last (cli.tabs
-- chooses); then the page made ready: its viewport, the tools and the
-- network settled (page:settle), --wait-for TOOL (and why it did not come),
-- --wait-for-selector.
--
-- It must never leave a browser it launched running (with_page closes it
-- on every way out), leave a tab it opened in a running browser when the
-- URL could not be opened or a signal ended the command, nor connect to a
-- host that is not a loopback one.

local dt = require "devtools_tools"
local argv = require "devtools_tools.cli.argv"
local background = require "devtools_tools.cli.background"
local tabs = require "devtools_tools.cli.tabs"
local text = require "devtools_tools.present.text"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, tostring, pcall, error = type, tostring, pcall, error
local clean, usage = text.clean, argv.usage

local M = {}

-- The viewport of a page a command opens in a headless browser: a common
-- desktop size (--viewport WxH sets another, in any browser).
M.VIEWPORT = { 1280, 800 }

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
      if opts.webmcp and not rec.webmcp and not opts.quiet then
        ctx.out:note("--webmcp: the background browser was started without it (its WebMCP tools stay"
          .. " hidden); `browser stop`, then `browser start --webmcp`")
      end
      progress:step("connecting to the background browser")
      ctx.background = rec
      return dt.connect(rec.endpoint, { timeout = left() }), "connected"
    end
  end
  progress:step("launching Chromium")
  local lo = { timeout = left() }
  if opts.headful then lo.headless = false end
  if opts.chromium then lo.executable = opts.chromium end
  if opts.webmcp or ctx.launch_webmcp then lo.webmcp = true end
  return dt.launch(lo), "launched"
end

-- running_browser(ctx, cmd) -> browser: the one --connect names or the
-- background one (a command about a browser's tabs launches none)
function M.running_browser(ctx, cmd)
  local opts = ctx.opts
  if opts.headful or opts.chromium then
    usage(cmd .. " works on a running browser: --headful and --chromium launch one", cmd)
  end
  if not opts.connect then
    local bg = background.handle(true)
    local state = bg and bg:status() or "none"
    if state == "none" or state == "unreadable" then
      usage(cmd .. " needs a running browser: none runs in the background (`devtools-tools browser"
        .. " start`) and no --connect was given", cmd)
    end
  end
  local b, how = M.open_browser(ctx)
  return b, how
end

-- headless(ctx, browser, how): pages of this browser are not on a screen
local function headless(ctx, browser, how)
  if how == "launched" then return not ctx.opts.headful end
  if ctx.background then return ctx.background.headless ~= false end
  local ok, v = pcall(browser.version, browser, { timeout = ctx.left() })
  return ok and type(v) == "table" and type(v.userAgent) == "string"
    and v.userAgent:find("HeadlessChrome/", 1, true) ~= nil
end

-- viewport(ctx, page, size): the page's viewport made size (its window's
-- bounds outlive the command: a tab found again keeps its size)
local function viewport(ctx, page, size)
  page:set_viewport(size[1], size[2], { timeout = ctx.left() })
end

-- prepare(ctx, browser, how, page, new) -> true when the page is to be
-- settled once navigated (list, call, screenshot): before a page is
-- navigated, its viewport (the default for a page the command opens in a
-- headless browser)
local function prepare(ctx, browser, how, page, new)
  local size = ctx.opts.viewport or (new and headless(ctx, browser, how) and M.VIEWPORT)
  if size then viewport(ctx, page, size) end
  return ctx.settle and not ctx.opts["no-settle"] or nil
end

local function navigate(ctx, page, url)
  ctx.progress:step("opening " .. url)
  page:navigate(url, { timeout = ctx.left() })
end

-- A new page at url; closed again if url cannot be opened (in a running
-- browser nobody else would).
local function new_page(ctx, browser, how, url)
  local page = browser:new_page(nil, { timeout = ctx.left() })
  local ok, res = pcall(function()
    local w = prepare(ctx, browser, how, page, true)
    if url then navigate(ctx, page, url) end
    return w
  end)
  if not ok then
    pcall(page.close, page, { timeout = 1 })
    error(res, 0)
  end
  if how == "connected" then tabs.touch(page.target_id, url) end
  return page, res
end

-- picked(ctx, page): an open tab was attached (before it is navigated):
-- ctx.picked(page), when a caller wants the page even if opening it fails
-- (the MCP server's retries navigate that tab again, not another one)
local function picked(ctx, page)
  if ctx.picked then ctx.picked(page) end
  return page
end

-- pick_page(ctx, browser, how, url) -> page, opened (a tab the command
-- made), settle (true: it navigated the page, which is to settle)
-- reuse(ctx, browser, p) -> the open tab p as it is (not navigated, so not
-- settled), its viewport set when asked; recorded as used
local function reuse(ctx, browser, p)
  local page = picked(ctx, browser:attach(p.id, { timeout = ctx.left() }))
  if ctx.opts.viewport then viewport(ctx, page, ctx.opts.viewport) end
  tabs.touch(p.id)
  return page, false, nil
end

local function pick_page(ctx, browser, how, url)
  local opts, left = ctx.opts, ctx.left
  if opts.tab then
    local p = tabs.by_text(ctx, browser, opts.tab)
    local page = picked(ctx, browser:attach(p.id, { timeout = left() }))
    local w = (url or opts.viewport) and prepare(ctx, browser, how, page, false) or nil
    if url then navigate(ctx, page, url) end
    tabs.touch(p.id, url)
    return page, false, url and w or nil
  end
  if how ~= "connected" then
    return (function(page, w) return page, true, w end)(new_page(ctx, browser, how, url))
  end
  local pages = browser:pages({ timeout = left() })
  if url and not opts["new-tab"] then
    -- the tab that shows it, else the blank one a background browser starts with
    local p = tabs.showing(ctx, browser, url, pages)
    if p then return reuse(ctx, browser, p) end
    p = tabs.blank(pages)
    if p then
      local page = picked(ctx, browser:attach(p.id, { timeout = left() }))
      local w = prepare(ctx, browser, how, page, true)
      navigate(ctx, page, url)
      tabs.touch(p.id, url)
      return page, false, w
    end
  end
  if not url and not opts["new-tab"] then
    local p = tabs.ranked(browser, pages, left)[1]          -- the page used last
    if p then return reuse(ctx, browser, p) end
  end
  return (function(page, w) return page, true, w end)(new_page(ctx, browser, how, url))
end

-- What the command says when --wait-for timed out and the page's scripts
-- use WebMCP while it is off (the library's look: details.webmcp).
local function webmcp_hint(ctx, err)
  local w = type(err.details) == "table" and err.details.webmcp
  if type(w) ~= "table" or w.enabled or not w.uses then return err end
  local how = ctx.background and "`browser stop`, then `browser start --webmcp`" or "--webmcp"
  local h
  if w.named then
    h = "it looks like a WebMCP tool (the page's scripts register it through document.modelContext),"
      .. " and WebMCP is off: " .. how
  else
    h = "WebMCP is off, and the page's scripts use document.modelContext: its WebMCP tools show with " .. how
  end
  return dt.new_error("timeout", tostring(err.message) .. "; " .. h, { tool = err.tool, details = err.details })
end

-- open_page(ctx, browser, how, url) -> the page the command works on, and
-- true when the command opened it (a new tab, not one it found); settled
-- when the command navigated it and asked (ctx.settle), offering the
-- --wait-for tool and matching --wait-for-selector when given
function M.open_page(ctx, browser, how, url)
  local page, opened, settle = pick_page(ctx, browser, how, url)
  if settle then
    ctx.progress:step("waiting for the page to settle")
    page:settle({ timeout = ctx.left() })
  end
  local name = ctx.opts["wait-for"]
  if name then
    ctx.progress:step("waiting for the tool " .. name)
    local ok, err = pcall(page.wait_for_tool, page, name, { timeout = ctx.left() })
    if not ok then
      if dt.is_error(err) and err.code == "timeout" then err = webmcp_hint(ctx, err) end
      error(err, 0)
    end
  end
  local css = ctx.opts["wait-for-selector"]
  if css then
    ctx.progress:step("waiting for " .. css)
    local ok, err = pcall(page.wait_for_selector, page, css, { timeout = ctx.left() })
    if not ok then
      if dt.is_error(err) and err.code == "timeout" and type(err.details) == "table" and err.details.selector then
        err = dt.new_error("timeout", "no element matches the selector " .. tostring(css) .. " (--wait-for-selector)")
      end
      error(err, 0)
    end
  end
  return page, opened
end

-- interrupted(err): the command was ended by a signal (Ctrl-C, or the
-- TERM and HUP cli.init catches: the interpreter's "interrupted!")
function M.interrupted(err)
  return type(err) == "string" and err:match("^[^\n]*interrupted!") ~= nil
end

-- with_page(ctx, url, fn) -> fn(browser, page)'s result; the browser is
-- closed (a launched one ended, a connected one left running) on every way
-- out, and a tab the command opened in a running browser too when a
-- signal ended it
function M.with_page(ctx, url, fn)
  local browser, how = M.open_browser(ctx)
  local page, opened
  local ok, res = pcall(function()
    page, opened = M.open_page(ctx, browser, how, url)
    return fn(browser, page)
  end)
  ctx.progress:done()
  if not ok and opened and how == "connected" and M.interrupted(res) then pcall(page.close, page, { timeout = 1 }) end
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
