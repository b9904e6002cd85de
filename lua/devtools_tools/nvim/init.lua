-- devtools_tools.nvim: the Neovim face of the library - the :DevTools
-- command, its buffers (tool list, argument buffers, result buffer) and
-- setup{} options.
--
-- It must never block the editor: every library call runs as a task on
-- Neovim's loop (dt.async on vim.uv / vim.loop), one user command at a time,
-- and `:DevTools cancel` stops it. Task bodies run inside loop callbacks,
-- where most of Neovim's API is off limits: they only call the library and
-- record plain state; everything that touches buffers, windows or messages
-- goes through vim.schedule. Names a page provides (groups, tools) are shown
-- as text and looked up by line number; they never become keys of a table
-- that has methods or a metatable.
--
-- Its parts: nvim/session.lua (the one session of this editor, its
-- options, messages and running command), nvim/views.lua (the buffers),
-- nvim/commands.lua (the subcommands), nvim/notice.lua (one line that fits
-- the command line), nvim/build.lua (what a Neovim without the C core is
-- told). Built on the public API and present/ (what every front end shows:
-- the tool list's parameters, the argument buffer's skeleton, the
-- result's JSON, error text), never on the library's private parts. The
-- library itself loads on the first command (setup() only records
-- options).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local P = require "devtools_tools.nvim.session"
local V = require "devtools_tools.nvim.views"
local C = require "devtools_tools.nvim.commands"

local type, pairs, pcall = type, pairs, pcall
local S, lib = P.S, P.lib

local M = {}

M.setup = function(opts) P.setup(opts) return M end
M.format_error = P.format_error
M.show_result, M.pick, M.open_args, M.open_tool_under_cursor = V.show_result, V.pick, V.open_args,
  V.open_tool_under_cursor
M.command, M.complete = C.command, C.complete

-- options() -> a copy of the options in use (setup{} over the defaults)
function M.options()
  local o = {}
  for k, v in pairs(S.opts) do o[k] = v end
  if type(o.keymaps) == "table" then             -- (the copy's own: a change leaves ours alone)
    local km = {}
    for k, v in pairs(o.keymaps) do km[k] = v end
    o.keymaps = km
  end
  return o
end

-- statusline() -> a short text for a statusline, never waiting and never
-- raising: "" with no browser, "DevTools: 127.0.0.1:8080" (the page's
-- host) with one, "DevTools: calling x..." while a command runs. Its text
-- is literal: use it as %{v:lua.require'devtools_tools.nvim'.statusline()}
-- or as a lualine component.
function M.statusline()
  if not lib.dt then return "" end    -- (nothing ran yet)
  local ok, s = pcall(function()
    if S.task then return "DevTools: " .. lib.text.brief(P.oneline(S.label), 40) .. "..." end
    local page = S.page
    if not (S.browser and page and not page.closed) then return "" end
    local url = tostring(page.url or "")
    local host = url:match("^%a[%w+.-]*://([^/?#]+)") or url:match("^[^:]+") or "page"
    return "DevTools: " .. lib.text.brief(P.oneline(host), 40)
  end)
  return ok and s or ""
end

-- status() -> {busy, doing, url, browser}: for statuslines and scripts. A
-- browser gone meanwhile is forgotten first (forget_if_gone).
function M.status()
  P.forget_if_gone()
  return {
    busy = S.task ~= nil,
    doing = S.label,
    url = S.page and not S.page.closed and S.page.url or nil,
    browser = S.browser and tostring(S.browser) or nil,
  }
end

-- The editor is exiting: stop the running command and end the browser (a
-- blocking close is fine now).
function M._on_exit()
  pcall(P.cancel_running)
  local b = S.browser
  S.browser, S.page = nil, nil
  if b then pcall(b.close, b) end
end

return M
