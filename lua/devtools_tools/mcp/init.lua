-- devtools_tools.mcp: the MCP server (Model Context Protocol) - every tool
-- a page exposes, served to AI agents as an MCP tool of its own, with
-- notifications/tools/list_changed when the page's tools change, and a
-- few built-in devtools.* tools. `devtools-tools mcp` serves it on stdio;
-- from Lua it is served on any transport, so an editor can serve it
-- in-process:
--
--   local server = mcp.serve(mcp.stdio(), { page = page })   -- mcp: this module;
--                                                            -- or a transport of your own
--   server:run()          -- a program whose loop is the library's; Neovim only serves
--
-- The pieces: server (JSON-RPC, lifecycle, versions, dispatch), rpc (ids
-- as the client wrote them), stdio (the stdio transport), start (the page
-- brought up behind a server that answers already), tools (page tools as
-- MCP tools: names, schemas, annotations, provenance), watch (the list
-- kept in step with the page), content (results and errors as MCP
-- content), builtin (devtools.*), hosts (what devtools.navigate may
-- load). Built on the public API (require "devtools_tools") and present/
-- only.
--
-- A transport is a table with start(handlers) (handlers.message(text) for
-- each message received, handlers.close(why) once when the peer is gone),
-- send(text) (one JSON-RPC message, never waiting) and, optionally,
-- close(), pending() (bytes not written yet) and hold(reason) /
-- release(reason) (no more messages read meanwhile: the server holds one
-- while MAX_INFLIGHT requests run).
--
-- It must never write anything but MCP messages to the transport, nor
-- close the page or the browser it serves (they are the caller's).

local dt = require "devtools_tools"
local server = require "devtools_tools.mcp.server"
local stdio = require "devtools_tools.mcp.stdio"
local hosts = require "devtools_tools.mcp.hosts"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, tostring = type, tostring

local M = {}

-- serve(transport, opts) -> Server. opts: page (the Page whose tools are
-- served), or open (function(attempt) -> page, browser?: opens it, in a
-- task of the server's, retried with backoff while it raises - the server
-- answers meanwhile - until it returns: see mcp/start.lua) with url (what
-- it opens, for the texts); browser (the page's Browser, to report on
-- when it dies), allow_eval (serve devtools.evaluate), webmcp (say WebMCP
-- tools are served: the browser was launched with them), timeout (of
-- each call, seconds, 30), trust_page (the page is the user's own: its
-- tools' descriptions go without the line that says the page wrote
-- them), allow_navigate (hosts devtools.navigate may load beside those it
-- allows: see mcp/hosts.lua), log (function(line) for warnings; default:
-- stderr; false: none), debug (log every message; default:
-- DEVTOOLS_TOOLS_DEBUG holds "mcp"), on_close(why) (the transport closed
-- and the server stopped). The server: close(), run(linger?), tools(),
-- page_up() (the page, once it is up).
M.serve = server.serve

-- check_url(url) -> true | nil, why: a URL the server can be started on
-- (http and https with a host as a browser reads one, file:, about:,
-- data:); one that can never work is refused at start, not retried.
local OPENS = { http = true, https = true, file = true, about = true, data = true }
function M.check_url(url)
  local scheme = type(url) == "string" and url:match("^(%a[%w+.-]*):")
  if not scheme then return nil, "not a URL: " .. tostring(url) end
  scheme = scheme:lower()
  if not OPENS[scheme] then
    return nil, scheme .. ": URLs are not opened (http, https, file, about and data URLs are)"
  end
  if scheme == "http" or scheme == "https" then
    local u, why = hosts.parse(url)
    if not u then return nil, "a malformed URL (" .. why .. "): " .. url end
  end
  return true
end

-- check_host(host) -> true | nil, why: a host as allow_navigate takes it
function M.check_host(h)
  local ok, why = hosts.host(h)
  if not ok then return nil, why end
  return true
end

-- stdio(opts?) -> the stdio transport: newline-delimited messages on fds
-- 0 and 1 (opts.input, opts.output), watched on dt.loop() (opts.loop).
M.stdio = stdio.new

-- The protocol versions served: 2026-07-28 (stateless, per request), then
-- those the initialize handshake agrees on, newest first.
M.VERSIONS = server.SUPPORTED

return M
