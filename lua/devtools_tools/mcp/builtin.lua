-- devtools_tools.mcp.builtin: the server's own tools, named devtools.* so
-- that no page tool can shadow them (tools.lua renames a page tool with
-- that prefix): devtools.navigate, devtools.screenshot (image content),
-- devtools.console, devtools.network, and devtools.evaluate when the
-- server was started with allow_eval.
--
-- Each is {name, description, inputSchema, annotations, run(ctx, args,
-- timeout) -> value | CallToolResult}, ctx holding the page. The server
-- checks the arguments against inputSchema first, with the library's
-- validator (devtools_tools.schema), as a page tool's are checked.
--
-- Each has page_data when what it answers is the page's (its results
-- carry the page's provenance in _meta: see server.lua).
--
-- It must never navigate to a scheme it does not allow (file: and the
-- like only when the page served was opened on one), nor to a host
-- mcp/hosts.lua refuses (link-local, metadata, private networks) that is
-- neither the served page's own nor one the user allowed (ctx.allow), nor
-- hand the client a record's page text unbounded.

local dt = require "devtools_tools"
local text = require "devtools_tools.present.text"
local content = require "devtools_tools.mcp.content"
local hosts = require "devtools_tools.mcp.hosts"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, tostring, ipairs, setmetatable = type, tostring, ipairs, setmetatable
local array, null = dt.array, dt.null

local M = {}

M.MAX_TEXT = 2000        -- bytes of one record's text
M.LIMIT = 50             -- records by default
M.MAX_LIMIT = 500

local function obj(t) return setmetatable(t, dt.json.object_mt) end

local function bounded(s)
  if s == nil then return null end
  return (text.bounded(tostring(s), M.MAX_TEXT))
end

local function fail(code, msg)
  error(dt.new_error(code, msg), 0)
end

-- The last `limit` of a list (oldest first), and how many were left out.
local function last(list, limit)
  local n = #list
  if n <= limit then return list, 0 end
  local out = {}
  for i = n - limit + 1, n do out[#out + 1] = list[i] end
  return out, n - limit
end

local function scheme(url)
  return (tostring(url):match("^(%a[%w+.-]*):") or ""):lower()
end

-- ---- the tools ------------------------------------------------------------------------

local navigate = {}
function navigate.describe()
  return {
    name = "devtools.navigate",
    description = "Loads a URL in the page whose tools this server serves (http, https or about:blank;"
      .. " other schemes only when the page was opened on one; link-local, cloud metadata and private"
      .. " network addresses other than loopback only on the page's own host or those the user allowed),"
      .. " or reloads it when no url is given, and waits for its load event. The page's tools change"
      .. " with its document: the tool list is sent again (notifications/tools/list_changed).",
    inputSchema = { type = "object", properties = {
      url = { type = "string", description = "the URL to load; absent: reload the page" },
    }, additionalProperties = false },
    annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = true, openWorldHint = true },
  }
end

function navigate.run(ctx, args, timeout)
  local page = ctx.page
  local url = args.url
  if url == nil then
    page:reload({ timeout = timeout })
    return { url = page.url }
  end
  local s = scheme(url)
  local allowed = s == "http" or s == "https" or url == "about:blank" or (s ~= "" and s == ctx.scheme)
  if not allowed then
    fail("bad_argument", "devtools.navigate: " .. text.brief(text.clean(url), 200)
      .. " is not an http(s) URL (nor about:blank)")
  end
  if s == "http" or s == "https" then
    local ok, why = hosts.allowed(url, { allow = ctx.allow, own = ctx.own })
    if not ok then
      fail("bad_argument", "devtools.navigate: " .. text.brief(text.clean(url), 200) .. " is refused: "
        .. text.brief(text.clean(why), 400))
    end
  end
  page:navigate(url, { timeout = timeout })
  return { url = page.url }
end

local screenshot = { page_data = true }
function screenshot.describe()
  return {
    name = "devtools.screenshot",
    description = "A PNG screenshot of the page: its viewport, the whole document (full_page), or the"
      .. " first element a CSS selector matches (selector).",
    inputSchema = { type = "object", properties = {
      full_page = { type = "boolean", description = "the whole document, not only the viewport" },
      selector = { type = "string", description = "a CSS selector: only the first element it matches" },
    }, additionalProperties = false },
    annotations = { readOnlyHint = true, openWorldHint = false },
  }
end

function screenshot.run(ctx, args, timeout)
  if args.full_page and args.selector ~= nil then
    fail("bad_argument", "devtools.screenshot: full_page and selector exclude each other")
  end
  local data = ctx.page:screenshot({ full_page = args.full_page or nil, element = args.selector,
    base64 = true, timeout = timeout })
  return content.image(data, "image/png")
end

local LEVELS = { "debug", "info", "warning", "error" }

local console = { page_data = true }
function console.describe()
  return {
    name = "devtools.console",
    description = "The page's console messages (uncaught exceptions and browser log entries included),"
      .. " oldest first: the last `limit` (50) of those at `level` or above, after `since` (the seq of"
      .. " a record seen before, e.g. the `last` of an earlier answer).",
    inputSchema = { type = "object", properties = {
      level = { type = "string", enum = LEVELS, description = "the lowest level to show" },
      limit = { type = "integer", minimum = 1, maximum = M.MAX_LIMIT },
      since = { type = "integer", minimum = 0, description = "only records after this seq" },
    }, additionalProperties = false },
    annotations = { readOnlyHint = true, openWorldHint = false },
  }
end

function console.run(ctx, args, timeout)
  local list = ctx.page:console_messages({ level = args.level, since = args.since, timeout = timeout })
  local shown, left_out = last(list, args.limit or M.LIMIT)
  local out = array{}
  for _, m in ipairs(shown) do
    local loc = m.location
    out[#out + 1] = {
      seq = m.seq, level = m.level, type = m.type, text = bounded(m.text),
      location = type(loc) == "table" and bounded(tostring(loc.url or "") .. ":" .. tostring(loc.line or "")
        .. ":" .. tostring(loc.column or "")) or null,
      exception = type(m.exception) == "table" and bounded(m.exception.message) or nil,
    }
  end
  local lastseq = #list > 0 and list[#list].seq or (args.since or 0)
  return { messages = out, omitted = left_out, last = lastseq }
end

local network = { page_data = true }
function network.describe()
  return {
    name = "devtools.network",
    description = "The page's network requests, oldest first: the last `limit` (50) whose URL contains"
      .. " `url`, after `since` (the seq of a record seen before, e.g. the `last` of an earlier"
      .. " answer). Each: method, url, status, type, mime_type, failed (the browser's reason),"
      .. " duration (seconds), done.",
    inputSchema = { type = "object", properties = {
      url = { type = "string", description = "only requests whose URL contains this text" },
      limit = { type = "integer", minimum = 1, maximum = M.MAX_LIMIT },
      since = { type = "integer", minimum = 0, description = "only records after this seq" },
    }, additionalProperties = false },
    annotations = { readOnlyHint = true, openWorldHint = false },
  }
end

function network.run(ctx, args, timeout)
  local list = ctx.page:network_requests({ url = args.url, since = args.since, timeout = timeout })
  local shown, left_out = last(list, args.limit or M.LIMIT)
  local out = array{}
  for _, r in ipairs(shown) do
    out[#out + 1] = {
      seq = r.seq, method = r.method, url = bounded(r.url), status = r.status or null,
      status_text = r.status_text and bounded(r.status_text) or nil, type = r.type,
      mime_type = r.mime_type, failed = r.failed and bounded(r.failed) or nil,
      duration = type(r.timing) == "table" and r.timing.duration or nil, done = r.done and true or false,
    }
  end
  local lastseq = #list > 0 and list[#list].seq or (args.since or 0)
  return { requests = out, omitted = left_out, last = lastseq }
end

local evaluate = { page_data = true }
function evaluate.describe()
  return {
    name = "devtools.evaluate",
    description = "Evaluates a JavaScript expression in the page's main frame (a promise is awaited)"
      .. " and returns its value as JSON.",
    inputSchema = { type = "object", properties = {
      expression = { type = "string", description = "JavaScript, e.g. document.title" },
    }, required = array{ "expression" }, additionalProperties = false },
    annotations = { readOnlyHint = false, destructiveHint = true, openWorldHint = true },
  }
end

function evaluate.run(ctx, args, timeout)
  return ctx.page:evaluate(args.expression, { timeout = timeout })
end

-- list(opts) -> the built-in tools the server serves (opts.allow_eval adds
-- devtools.evaluate), in the order tools/list gives them; each a fresh
-- {name, description, inputSchema, annotations, run}
function M.list(opts)
  local kinds = { navigate, screenshot, console, network }
  if opts and opts.allow_eval then kinds[#kinds + 1] = evaluate end
  local out = {}
  for i, k in ipairs(kinds) do
    local b = k.describe()
    b.inputSchema.properties = obj(b.inputSchema.properties)
    b.run = k.run
    b.page_data = k.page_data
    out[i] = b
  end
  return out
end

return M
