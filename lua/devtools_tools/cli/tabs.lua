-- devtools_tools.cli.tabs: the open pages (tabs) of a running browser, the
-- background one or one given with --connect: which one a URL, --tab TEXT
-- or a bare command means, and `devtools-tools tabs [close ID|TEXT]`.
--
-- A URL names the tab that shows it (the URLs compared normalised: scheme
-- and host in lower case, no default port, "/" for an empty path, the
-- fragment only when the URL given has one), or the tab a command opened
-- for it (a page that redirected still counts). Of several candidates the
-- one the command line used most recently wins: each command records the
-- tab it used, with the time and the URL it was asked for, in tabs.json
-- beside the background browser's record; a tab it never used comes after
-- those, the newest window first (headless Chromium gives each page a
-- window, whose ids grow).
--
-- It must never close a tab but the one `tabs close` names unambiguously,
-- nor take page text (URLs, titles) for anything but data.

local dt = require "devtools_tools"
local argv = require "devtools_tools.cli.argv"
local background = require "devtools_tools.cli.background"
local text = require "devtools_tools.present.text"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, tostring, ipairs, pairs, pcall, tonumber, error = type, tostring, ipairs, pairs, pcall, tonumber, error
local sort, concat = table.sort, table.concat
local clean, usage = text.clean, argv.usage

local M = {}

M.KEEP = 200             -- tabs remembered at most (the most recently used)

local function fail(code, message, fields)
  error(dt.new_error(code, message, fields), 0)
end

-- ---- URLs ---------------------------------------------------------------------------

local DEFAULT_PORT = { http = "80", https = "443", ws = "80", wss = "443" }

-- normalise(url, keep_fragment) -> the URL as compared: scheme and host in
-- lower case, no default port, "/" for an empty path of a URL with a host,
-- no fragment unless keep_fragment. Anything that does not parse as
-- scheme://host... is compared as it is.
function M.normalise(url, keep_fragment)
  if type(url) ~= "string" then return "" end
  local frag = url:find("#", 1, true)
  if frag and not keep_fragment then url = url:sub(1, frag - 1) end
  local scheme, auth, rest = url:match("^(%a[%w+.-]*)://([^/?#]*)(.*)$")
  if not scheme then return url end
  scheme = scheme:lower()
  local user, hostport = auth:match("^(.*@)(.*)$")
  hostport = (hostport or auth):lower()
  local host, port = hostport:match("^(.*):(%d*)$")
  if not host or host:find("]", 1, true) and not host:find("]$") then host, port = hostport, nil end
  if port == "" or port == DEFAULT_PORT[scheme] then port = nil end
  if rest == "" or rest:sub(1, 1) == "?" or rest:sub(1, 1) == "#" then rest = "/" .. rest end
  return scheme .. "://" .. (user or "") .. host .. (port and (":" .. port) or "") .. rest
end

-- same(want, have) -> true when the page URL have shows the URL want
function M.same(want, have)
  if type(want) ~= "string" or type(have) ~= "string" then return false end
  local keep = want:find("#", 1, true) ~= nil
  return M.normalise(want, keep) == M.normalise(have, keep)
end

-- ---- what the command line used last --------------------------------------------

local FILE = "tabs.json"

-- recent() -> {[target id] = {t = dt.now() when used, url = the URL asked}}
function M.recent()
  local bg = background.handle(true)
  local s = bg and bg:read(FILE)
  if not s then return {} end
  local ok, t = pcall(dt.json.decode, s)
  if not ok or type(t) ~= "table" then return {} end
  local out = {}
  for id, r in pairs(t) do
    if type(id) == "string" and type(r) == "table" and type(r.t) == "number" then
      out[id] = { t = r.t, url = type(r.url) == "string" and r.url or nil }
    end
  end
  return out
end

-- save(recent, alive?): written whole (0600) through a new file renamed
-- over the old (a command killed meanwhile leaves the old one: the
-- library's write); alive, a set of the target ids open now, drops the
-- others. Where there is no state directory (no browser was ever started
-- in the background), none.
local function save(recent, alive)
  local bg = background.handle(true)
  if not bg then return end
  local list = {}
  for id, r in pairs(recent) do
    if not alive or alive[id] then list[#list + 1] = { id = id, r = r } end
  end
  sort(list, function(a, b) return a.r.t > b.r.t end)
  local out = {}
  for i = 1, math.min(#list, M.KEEP) do out[list[i].id] = list[i].r end
  bg:write(FILE, dt.json.encode(out) .. "\n")
end

-- touch(id, url?): the command used the tab id (for the URL url)
function M.touch(id, url)
  local recent = M.recent()
  local r = recent[id] or {}
  recent[id] = { t = dt.now(), url = url or r.url }
  save(recent)
end

-- forget(id): the tab id was closed
function M.forget(id)
  local recent = M.recent()
  if recent[id] then
    recent[id] = nil
    save(recent)
  end
end

-- ---- choosing -------------------------------------------------------------------------

-- ranked(browser, pages, left, recent?) -> pages, the most recently used
-- first, then those never used, the newest window first
function M.ranked(browser, pages, left, recent)
  recent = recent or M.recent()
  local used, other = {}, {}
  for _, p in ipairs(pages) do
    if recent[p.id] then used[#used + 1] = p else other[#other + 1] = p end
  end
  sort(used, function(a, b) return recent[a.id].t > recent[b.id].t end)
  if #other > 1 then
    local win = {}
    for _, p in ipairs(other) do
      local ok, r = pcall(browser.cdp, browser, "Browser.getWindowForTarget", { targetId = p.id },
        { timeout = left() })
      win[p] = ok and type(r) == "table" and tonumber(r.windowId) or -1
    end
    -- (Chromium lists a window's tabs oldest first: the later one wins a tie)
    local order = {}
    for i, p in ipairs(other) do order[p] = i end
    sort(other, function(a, b)
      if win[a] ~= win[b] then return win[a] > win[b] end
      return order[a] > order[b]
    end)
  end
  for _, p in ipairs(other) do used[#used + 1] = p end
  return used
end

-- A tab shown in messages: its id's start and its URL (cleaned, bounded)
local function shown(p)
  return tostring(p.id):sub(1, 8) .. " " .. text.brief(clean(p.url), 100)
end
M.shown = shown

local function matches(p, want)
  local lw = want:lower()
  return (p.id or ""):lower():sub(1, #lw) == lw
    or (p.url or ""):find(want, 1, true) ~= nil or (p.title or ""):find(want, 1, true) ~= nil
end

-- by_text(ctx, browser, want, what) -> the tab --tab TEXT names: the most
-- recently used of those whose id starts with TEXT or whose URL or title
-- contains it; when several match, a note on stderr says which was taken
function M.by_text(ctx, browser, want)
  local found = {}
  for _, p in ipairs(browser:pages({ timeout = ctx.left() })) do
    if matches(p, want) then found[#found + 1] = p end
  end
  if #found == 0 then
    fail("bad_argument", "no open page whose URL or title contains \"" .. clean(want) .. "\"")
  end
  found = M.ranked(browser, found, ctx.left)
  if #found > 1 and not ctx.opts.quiet then
    local others = {}
    for i = 2, math.min(#found, 4) do others[#others + 1] = shown(found[i]) end
    ctx.out:note(("--tab %s: %d open pages match; using the most recently used, %s (not %s%s)")
      :format(text.brief(clean(want), 60), #found, shown(found[1]), concat(others, ", "),
        #found > 4 and ", ..." or ""))
  end
  return found[1]
end

-- showing(ctx, browser, url, pages) -> the tab that shows url (or was
-- opened for it), the most recently used of them; nil when none
function M.showing(ctx, browser, url, pages)
  local recent = M.recent()
  local found = {}
  for _, p in ipairs(pages) do
    if M.same(url, p.url) or (recent[p.id] and M.same(url, recent[p.id].url)) then
      found[#found + 1] = p
    end
  end
  if #found == 0 then return nil end
  return M.ranked(browser, found, ctx.left, recent)[1]
end

-- blank(pages) -> a tab showing about:blank that no command used (the one
-- a background browser starts with), to open a URL in; nil when none
function M.blank(pages)
  local recent = M.recent()
  for _, p in ipairs(pages) do
    if p.url == "about:blank" and not recent[p.id] then return p end
  end
end

-- ---- `devtools-tools tabs` --------------------------------------------------------------

local function list(ctx, browser)
  local pages = browser:pages({ timeout = ctx.left() })
  local recent = M.recent()
  local alive = {}
  for _, p in ipairs(pages) do alive[p.id] = true end
  save(recent, alive)                          -- (tabs closed since are forgotten)
  pages = M.ranked(browser, pages, ctx.left, recent)
  if ctx.opts.json then
    local out = dt.array{}
    for _, p in ipairs(pages) do out[#out + 1] = { id = p.id, url = p.url, title = p.title } end
    ctx.out:emit(dt.json.encode(out), "\n")
    return 0
  end
  if #pages == 0 then
    ctx.out:emit("no open pages\n")
    return 0
  end
  -- the ids shown by their first 8 characters (longer where two share them)
  local n = 8
  local again = true
  while again and n < 64 do
    again = false
    local seen = {}
    for _, p in ipairs(pages) do
      local k = tostring(p.id):sub(1, n)
      if seen[k] then again = true end
      seen[k] = true
    end
    if again then n = n + 4 end
  end
  local width = ctx.out:width()
  local rows, wurl = {}, 3
  for _, p in ipairs(pages) do
    local url = text.brief(clean(p.url), 100)
    rows[#rows + 1] = { id = tostring(p.id):sub(1, n), url = url, title = clean(p.title) }
    wurl = math.max(wurl, text.width(url))
  end
  local lines = { text.fit(text.rtrim(text.pad("ID", n) .. "  " .. text.pad("URL", wurl) .. "  TITLE"), width) }
  for _, r in ipairs(rows) do
    lines[#lines + 1] = text.fit(text.rtrim(text.pad(r.id, n) .. "  " .. text.pad(r.url, wurl) .. "  "
      .. r.title), width)
  end
  ctx.out:emit(concat(lines, "\n"), "\n")
  return 0
end

local function close(ctx, browser, want)
  local pages = browser:pages({ timeout = ctx.left() })
  local found = {}
  for _, p in ipairs(pages) do
    if p.id == want then found = { p } break end
    if matches(p, want) then found[#found + 1] = p end
  end
  if #found == 0 then
    fail("bad_argument", "no open page whose ID starts with, or URL or title contains, \"" .. clean(want) .. "\"")
  end
  if #found > 1 then
    local names = {}
    for i = 1, math.min(#found, 5) do names[i] = shown(found[i]) end
    fail("bad_argument", ("%d open pages match \"%s\": %s%s; give its ID (devtools-tools tabs)")
      :format(#found, clean(want), concat(names, ", "), #found > 5 and ", ..." or ""))
  end
  local p = found[1]
  browser:cdp("Target.closeTarget", { targetId = p.id }, { timeout = ctx.left() })
  M.forget(p.id)
  if not ctx.opts.quiet then ctx.out:note("closed " .. shown(p)) end
  return 0
end

-- run(ctx, browser): `tabs` or `tabs close ID|TEXT` (words checked by the
-- command before the browser is reached: check(pos))
function M.check(pos)
  if #pos == 0 then return end
  if pos[1] == "close" then
    if #pos ~= 2 then usage("tabs close takes one ID or TEXT", "tabs") end
    return
  end
  usage("tabs takes no word but close ID|TEXT", "tabs")
end

function M.run(ctx, browser)
  if ctx.pos[1] == "close" then return close(ctx, browser, ctx.pos[2]) end
  return list(ctx, browser)
end

return M
