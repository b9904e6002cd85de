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
-- The pieces: server (JSON-RPC, lifecycle, versions, dispatch), stdio (the
-- stdio transport), tools (page tools as MCP tools: names, schemas,
-- annotations), watch (the list kept in step with the page), content
-- (results and errors as MCP content), builtin (devtools.*). Built on the
-- public API (require "devtools_tools") and present/ only.
--
-- A transport is a table with start(handlers) (handlers.message(text) for
-- each message received, handlers.close(why) once when the peer is gone),
-- send(text) (one JSON-RPC message, never waiting) and, optionally,
-- close() and pending() (bytes not written yet).
--
-- It must never write anything but MCP messages to the transport, nor
-- close the page or the browser it serves (they are the caller's).

local dt = require "devtools_tools"
local server = require "devtools_tools.mcp.server"
local stdio = require "devtools_tools.mcp.stdio"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local M = {}

-- serve(transport, opts) -> Server. opts: page (required: the Page whose
-- tools are served), browser (its Browser, to report on when it dies),
-- allow_eval (serve devtools.evaluate), webmcp (say WebMCP tools are
-- served: the browser was launched with them), timeout (of each call,
-- seconds, 30), log (function(line) for warnings; default: stderr; false:
-- none), debug (log every message; default: DEVTOOLS_TOOLS_DEBUG holds
-- "mcp"), on_close(why) (the transport closed and the server stopped).
-- The server: close(), run(), tools().
M.serve = server.serve

-- stdio(opts?) -> the stdio transport: newline-delimited messages on fds
-- 0 and 1 (opts.input, opts.output), watched on dt.loop() (opts.loop).
M.stdio = stdio.new

-- The protocol versions served: 2026-07-28 (stateless, per request), then
-- those the initialize handshake agrees on, newest first.
M.VERSIONS = server.SUPPORTED

return M
