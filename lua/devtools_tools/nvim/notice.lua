-- devtools_tools.nvim.notice: how the plugin tells the user something -
-- through vim.notify, always, and never so that Neovim stops at "Press
-- ENTER".
--
-- Neovim's own vim.notify writes to the command line: a message taller
-- than 'cmdheight', or wider than the room there, makes Neovim wait for
-- ENTER. With it a message is shown as one line that fits (v:echospace),
-- ending with where the rest is (the devtools://error buffer, :help,
-- :checkhealth). A notification plugin that replaced vim.notify
-- (nvim-notify, noice.nvim, fidget.nvim, ...) shows several lines in a
-- window of its own: it gets the whole text.
--
-- It needs nothing but Neovim: the plugin uses it before (and without)
-- the C core. It must never raise.

local type, tostring, pcall = type, tostring, pcall

local M = {}

-- native() -> true while vim.notify is Neovim's own (defined in its
-- runtime's vim/_editor.lua), which writes to the command line
function M.native()
  local ok, info = pcall(debug.getinfo, vim.notify, "S")
  return ok and type(info) == "table" and type(info.source) == "string"
    and info.source:find("vim/_editor%.lua$") ~= nil
end

-- The columns a message may take in the command line without a prompt.
local function room()
  local w = tonumber(vim.v.echospace)
  if not w or w <= 0 then w = (vim.o.columns or 80) - 12 end
  return math.max(w, 20)
end

local ELLIPSIS = "..."

-- The start of s that takes at most w columns (whole UTF-8 characters).
local function head(s, w)
  local out, used = {}, 0
  for ch in s:gmatch("[%z\1-\127\192-\255][\128-\191]*") do
    local cw = vim.fn.strdisplaywidth(ch)
    if used + cw > w then break end
    out[#out + 1] = ch
    used = used + cw
  end
  return table.concat(out)
end

-- fits(line) -> true when line is shown whole: a notification plugin
-- shows anything; Neovim's own vim.notify a line of at most room() columns
function M.fits(line)
  return not M.native() or vim.fn.strdisplaywidth(line) <= room()
end

-- fit(msg, where) -> msg as one line of at most room() columns: its first
-- line, cut with "..." if it is too wide, then " (where)" when something
-- was left out (where: how to see the rest).
function M.fit(msg, where)
  msg = tostring(msg)
  local first = msg:match("^[^\n]*")
  local more = #first < #msg
  local w = room()
  if not more and vim.fn.strdisplaywidth(first) <= w then return first end
  local tail = where and (" (" .. where .. ")") or ""
  local left = w - vim.fn.strdisplaywidth(tail)
  if vim.fn.strdisplaywidth(first) > left then
    first = head(first, math.max(left - #ELLIPSIS, 0)) .. ELLIPSIS
  end
  return first .. tail
end

-- say(msg, level, where): vim.notify(msg, level) - fitted to one line
-- (fit) when vim.notify is Neovim's own. Returns what was notified.
function M.say(msg, level, where)
  msg = tostring(msg)
  if M.native() then msg = M.fit(msg, where) end
  vim.notify(msg, level or vim.log.levels.INFO)
  return msg
end

-- whole() -> true when a message may be notified with all its lines
function M.whole() return not M.native() end

return M
