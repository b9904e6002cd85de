-- devtools_tools.page.navigate: page:navigate and page:reload - a new
-- document in the main frame, awaited until its load event.
--
-- What it must never do: wait past the call's deadline, take a load of
-- another document for the one it asked for (each waits for its own
-- loader's), or leave a crashed page unrecoverable (reload is how it
-- recovers).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local errors = require "devtools_tools.base.errors"
local options = require "devtools_tools.base.options"

local raise = errors.raise
local type, tostring = type, tostring

local M = {}

-- wait_load(page, loader_id, deadline, what): until that document fired load
local function wait_load(page, loader_id, deadline, what)
  local docs = page.docs
  local loaded = docs.loaded
  local ok = page.conn:wait_for(function()
    return loaded[loader_id] or docs.crashed or page.closed
  end, deadline)
  if docs.crashed then raise("disconnected", what .. ": the page crashed") end
  if page.closed then raise("disconnected", what .. ": the page was closed") end
  if not ok then raise("timeout", what .. ": timed out waiting for the load event") end
end

-- Chromium's errors for a host name that resolves to no address.
local DNS_FAILURES = { ["net::ERR_NAME_NOT_RESOLVED"] = true, ["net::ERR_NAME_RESOLUTION_FAILED"] = true }

-- navigate(page, url, opts?) -> page, once the new document fired `load`. A
-- host name that does not resolve is connect_failed; another error of the
-- browser's (a refused connection, a bad URL) protocol_error.
function M.navigate(page, url, opts)
  opts = options.check(opts, options.TIMEOUT, "navigate")
  page.site:check_open()
  if type(url) ~= "string" then
    raise("bad_argument", "navigate: url must be a string, got " .. type(url))
  end
  local conn = page.conn
  local deadline = conn:deadline(opts)
  local r = conn:await(conn:send("Page.navigate", { url = url }, page.session, deadline),
    deadline, "Page.navigate")
  if r.errorText and r.errorText ~= "" then
    local details = { errorText = r.errorText, url = url }
    if DNS_FAILURES[r.errorText] then
      -- the host has no address: the name is wrong (or no DNS answers),
      -- which no browser fault explains
      local host = (url:match("^%a[%w+.-]*://([^/?#]+)") or url):gsub("^.*@", ""):gsub(":%d*$", "")
      raise("connect_failed", "navigate: " .. url .. ": the host name " .. host
        .. " was not found (DNS: " .. r.errorText .. ")", { details = details })
    end
    raise("protocol_error", "navigate: " .. url .. ": " .. r.errorText, { details = details })
  end
  if r.loaderId then     -- none for a same-document (fragment) navigation
    wait_load(page, r.loaderId, deadline, "navigate to " .. url)
  end
  return page
end

local reload_opts = { timeout = true, ignore_cache = "boolean" }

-- reload(page, opts?) -> page, once the new document fired `load`. Also
-- recovers a page whose renderer crashed.
function M.reload(page, opts)
  opts = options.check(opts, reload_opts, "reload")
  if page.closed then raise("disconnected", "the page is closed") end
  local conn, docs = page.conn, page.docs
  if conn.closed then raise("disconnected", "the browser connection is closed: " .. tostring(conn.closed)) end
  local deadline = conn:deadline(opts)
  local before = docs.nav_count
  docs:recover()
  page.probes:unstick()
  conn:await(conn:send("Page.reload", { ignoreCache = opts.ignore_cache or nil },
    page.session, deadline), deadline, "Page.reload")
  local ok = conn:wait_for(function() return docs.nav_count > before or docs.crashed end, deadline)
  if docs.crashed then raise("disconnected", "reload: the page crashed") end
  if not ok then raise("timeout", "reload: timed out waiting for the new document") end
  local fr = docs.frames[docs.main_frame]
  wait_load(page, fr.loader_id, deadline, "reload")
  return page
end

return M
