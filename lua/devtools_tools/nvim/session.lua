-- devtools_tools.nvim.session: the one :DevTools session of this editor
-- (browser, page, running command, buffers: S), its options (setup{}), the
-- library loaded on first use, every message the plugin gives (progress,
-- notifications, errors and devtools://error), the one command running
-- at a time (start, cancel), and the buffer primitives the views share.
--
-- It must never block the editor (a command runs as a task on Neovim's
-- loop; what touches buffers goes through vim.schedule), nor load the
-- library before the first command (setup() only records options;
-- without the C core the command says `make nvim` in one line).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local build = require "devtools_tools.nvim.build"
local notice = require "devtools_tools.nvim.notice"

local M = { lib = {} }

-- The library and present/, loaded on first use: setup() only records
-- options (a plugin manager calls it when Neovim starts), and without the
-- C core (no `make nvim` yet) the library cannot load - a command then
-- says so in one line (nvim.build), and loads it once it is built.
local dt, text, pschema, skeleton, pretty, perrors

-- (P.lib: the same, for the plugin's other modules)
local function loaded()
  if dt then return true end
  local l, err = build.load()
  if not l then return false, err end
  text = require "devtools_tools.present.text"
  pschema = require "devtools_tools.present.schema"
  skeleton = require "devtools_tools.present.skeleton"
  pretty = require "devtools_tools.present.pretty"
  perrors = require "devtools_tools.present.errors"
  dt = l
  local lib = M.lib
  lib.dt, lib.text, lib.pschema, lib.skeleton, lib.pretty, lib.perrors = dt, text, pschema, skeleton, pretty, perrors
  return true
end

local api = vim.api
local uv = vim.uv or vim.loop
local levels = vim.log.levels
local type, tostring, ipairs, pairs, pcall, error = type, tostring, ipairs, pairs, pcall, error


-- ---- options ---------------------------------------------------------------------

local defaults = {
  executable = nil,        -- Chromium to launch; nil: the library's search (README, API)
  headless = true,         -- :DevTools launch starts a headless browser
  timeout = 30,            -- seconds: the deadline of one command, all its steps (the
                           -- library's dt.TIMEOUT, which the plugin knows before it loads)
  connect = "http://127.0.0.1:9222",   -- :DevTools connect without an endpoint
  keymaps = { open_tool = "<CR>" },    -- in the tool list; false: no mappings
}

local option_types = {
  executable = "string", headless = "boolean", timeout = "number",
  connect = "string", keymaps = "table",
}

local function bad(message)
  if loaded() then error(dt.new_error("bad_argument", message), 0) end
  error("devtools_tools: bad_argument: " .. message, 0)
end

local function copy_defaults()
  local o = {}
  for k, v in pairs(defaults) do o[k] = v end
  o.keymaps = { open_tool = defaults.keymaps.open_tool }
  return o
end

-- The one session of this editor.
local S = {
  opts = copy_defaults(),
  browser = nil, page = nil,   -- the browser in use and its page
  task = nil,                  -- the running command's task, or nil
  label = nil,                 -- what it is doing ("launching Chromium")
  queued = nil,                -- a command to run once a cancelled task ended
  untold = nil,                -- an error for devtools://error, not written there yet
  groups = nil,                -- the last discovery (completion, tool list)
  warnings = nil,
  bufs = { tools = nil, result = nil, error = nil },
  tool_lines = {},             -- line number in the tool list -> Tool
  arg_bufs = {},               -- bufnr -> Tool of an argument buffer
  loop_set = false,
}

-- setup(opts?): every option is optional; unknown keys and wrong types are
-- refused with a bad_argument dt.Error.
function M.setup(opts)
  if opts == nil then opts = {} end
  if type(opts) ~= "table" then bad("setup: expected a table of options, got " .. type(opts)) end
  local o = copy_defaults()
  for k, v in pairs(opts) do
    local want = option_types[k]
    if not want then bad("setup: unknown option '" .. tostring(k) .. "'") end
    if k == "keymaps" and v == false then
      o.keymaps = false
    elseif type(v) ~= want then
      bad("setup: option " .. k .. " must be a " .. want .. ", got " .. type(v))
    elseif k == "timeout" and not (v > 0 and v < math.huge) then
      bad("setup: option timeout must be a positive, finite number of seconds")
    elseif want == "string" and v == "" then
      bad("setup: option " .. k .. " must not be empty")
    elseif k == "keymaps" then
      for name, lhs in pairs(v) do
        if name ~= "open_tool" then bad("setup: unknown keymap '" .. tostring(name) .. "'") end
        if lhs ~= false and type(lhs) ~= "string" then
          bad("setup: keymap " .. name .. " must be a string or false")
        end
        o.keymaps[name] = lhs
      end
    else
      o[k] = v
    end
  end
  S.opts = o
  return M
end

-- ---- messages ------------------------------------------------------------------------

-- echo(msg, hl?): the command line (progress, short results). Looked up on
-- vim.api at each call, so a test can watch it.
local function echo(msg, hl)
  vim.api.nvim_echo({ { msg, hl or "None" } }, false, {})
end

-- Progress from inside a task: the task runs in a loop callback, so the
-- message is shown on the main loop.
local function progress(label)
  S.label = label
  vim.schedule(function()
    if S.task then echo("devtools_tools: " .. label .. "...", "MoreMsg") end
  end)
end

-- Every message goes through nvim.notice: one line that fits the command
-- line with Neovim's own vim.notify (no "Press ENTER"), the whole text
-- with a notification plugin. where: how to see what was left out.
local function notify(msg, level, where)
  notice.say(msg, level or levels.INFO, where)
end

-- ready() -> true once the library is loaded; else the user is told why,
-- in one line, and what to run
local function ready()
  local ok, err = loaded()
  if not ok then notify(build.line(err), levels.ERROR, ":checkhealth devtools_tools") end
  return ok
end

-- The rule a refused remote host is told (the library's way out,
-- allow_remote, is no option of :DevTools).
local REMOTE_RULE = ":DevTools connect accepts loopback hosts only: 127.0.0.1, ::1, localhost"

-- format_error(err) -> the text a notification shows, and whether it was
-- cut (present.errors: code and message, a schema error's paths with the
-- values received; page text cleaned and bounded). Anything that is not a
-- dt.Error is a bug of ours and says so.
function M.format_error(err)
  if not loaded() then return "devtools_tools: " .. tostring(err), false end
  if not dt.is_error(err) then
    local s = text.bounded(tostring(err), perrors.LIMIT)
    return "devtools_tools: internal error (please report): " .. text.clean(s), false
  end
  local t, cut = perrors.text(err, { remote = REMOTE_RULE })
  return "devtools_tools: " .. t, cut
end

local scratch, set_lines

-- The devtools://error buffer: the last error cut in its notification,
-- whole (its message, every schema error, the page's stack). Written when
-- the buffer is shown, not before: a page's 20 MB message costs nothing
-- until someone reads it.
local function write_whole(buf)
  local err = S.untold
  if err == nil or not api.nvim_buf_is_valid(buf) then return end
  S.untold = nil
  set_lines(buf, vim.split(perrors.whole(err), "\n", { plain = true }))
end

local function keep_whole(err)
  local buf = S.bufs.error
  if not (buf and api.nvim_buf_is_valid(buf)) then
    buf = scratch("devtools://error", nil)
    api.nvim_buf_set_option(buf, "buftype", "nofile")
    S.bufs.error = buf
    api.nvim_create_autocmd("BufEnter", { buffer = buf, callback = function(ev) write_whole(ev.buf) end })
  end
  S.untold = err
  set_lines(buf, {})
  if vim.fn.bufwinid(buf) ~= -1 then write_whole(buf) end      -- (shown already: no BufEnter)
  return buf
end

local WHOLE = ":b devtools://error"      -- (where a line fitted to the command line points)

-- A command's timeout in the user's words: what did not answer within
-- the limit (the timeout option): "the tool x did not answer within 30 s",
-- not the protocol step that was waiting ("Runtime.evaluate timed out",
-- kept in details.step).
-- rec: the command ({waiting, limit}).
local function worded(err, rec)
  if not (rec and rec.waiting and dt.is_error(err) and err.code == "timeout") then return err end
  return dt.new_error("timeout", ("%s within %s s")
    :format(rec.waiting, ("%g"):format(rec.limit)), { details = { step = err.message } })
end

-- report(err, rec?): a failure, notified at level ERROR (a cancel: WARN).
-- Whatever the notification leaves out - a message over the limit, the
-- lines after the first with Neovim's own vim.notify - is kept whole in
-- devtools://error.
local function report(err, rec)
  if dt.is_error(err) and err.code == "cancelled" then
    notify("devtools_tools: cancelled: " .. text.clean(text.bounded(tostring(err.message), perrors.LIMIT)),
      levels.WARN)
    return
  end
  err = worded(err, rec)
  local msg, cut = M.format_error(err)
  if cut then msg = msg .. "\n(the whole error: :buffer devtools://error)" end
  if cut or (notice.native() and notice.fit(msg) ~= msg) then keep_whole(err) end
  notify(msg, levels.ERROR, WHOLE)
end

-- The browser in use went away while no command ran (Chromium killed or
-- crashed, a connected browser closed): nothing read its connection, so it
-- stayed "in use" until :DevTools close. Found without waiting (status()
-- and every command ask); the browser is forgotten, closed without waiting
-- (a launched one is reaped and its profile removed in the background),
-- and the user told. Not while a command runs: that command finds out
-- itself, and this is asked again when it has ended.
local function forget_if_gone()
  local b = S.browser
  if not b or S.task then return false end
  local ok, alive, why = pcall(b.alive, b)
  if not ok or alive then return false end
  S.browser, S.page, S.groups, S.warnings = nil, nil, nil, nil
  S.tool_lines = {}
  pcall(b.close, b, { timeout = 0 })
  vim.schedule(function()
    notify("devtools_tools: the browser is gone (" .. tostring(why)
      .. "); :DevTools launch or :DevTools connect starts another", levels.WARN)
  end)
  return true
end

-- ---- tasks ------------------------------------------------------------------------------

-- Tasks run on Neovim's own loop; set once, on first use, so an editor
-- that never runs :DevTools leaves the library's loop setting alone.
local function use_loop()
  if not S.loop_set then
    dt.use_loop(uv)
    S.loop_set = true
  end
end

-- start(label, fn, after?, waiting?): runs fn(left) as the one task of
-- this session; after(result) runs on the main loop when it succeeded;
-- failures are reported. Returns false if another command is still
-- running. A command has one deadline, the `timeout` option from now, for
-- all its steps: left() gives the opts of each library call ({timeout =
-- what is left}). waiting: what a timeout says did not answer ("the tool
-- x did not answer"; default: label "did not finish").
local function start(label, fn, after, waiting)
  if S.task then
    notify("devtools_tools: busy (" .. tostring(S.label) .. "); :DevTools cancel stops it", levels.WARN)
    return false
  end
  use_loop()
  -- this command; rec.task is its dt Task
  local limit = S.opts.timeout
  local rec = { waiting = waiting or (label .. " did not finish"), limit = limit }
  S.task = rec
  S.label = label
  echo("devtools_tools: " .. label .. "...", "MoreMsg")
  local function finish(ok, res)
    -- Called on the loop (a libuv callback): UI work waits for the main
    -- loop.
    vim.schedule(function()
      if S.task == rec then
        S.task, S.label = nil, nil
        echo("")
      end
      if ok then
        if after then
          local ok2, err = pcall(after, res)
          if not ok2 then report(err) end
        end
      else
        report(res, rec)
      end
      forget_if_gone()           -- (a command that met a dead browser: the session forgets it)
      local q = S.queued
      S.queued = nil
      if q then q() end
    end)
  end
  local deadline = dt.now() + limit
  local function left() return { timeout = dt.left(deadline) } end
  local ok, task = pcall(dt.async, fn, finish, left)
  if not ok then                -- never leave the session busy for good
    S.task, S.label = nil, nil
    report(task)
    return false
  end
  rec.task = task
  return true
end

local function cancel_running()
  local rec = S.task
  if rec and rec.task and not rec.task.done then rec.task:cancel() end
end

-- ---- buffers ------------------------------------------------------------------------------

function scratch(name, ft)
  local buf = api.nvim_create_buf(false, true)
  pcall(api.nvim_buf_set_name, buf, name)
  api.nvim_buf_set_option(buf, "bufhidden", "hide")
  api.nvim_buf_set_option(buf, "swapfile", false)
  if ft then api.nvim_buf_set_option(buf, "filetype", ft) end
  return buf
end

-- Shows buf in a window: the one showing it already, else a new split.
local function show(buf)
  for _, win in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_buf(win) == buf then
      api.nvim_set_current_win(win)
      return win
    end
  end
  local cur = api.nvim_get_current_buf()
  if api.nvim_buf_get_name(cur) == "" and not api.nvim_buf_get_option(cur, "modified")
      and api.nvim_buf_line_count(cur) == 1 and api.nvim_buf_get_lines(cur, 0, 1, false)[1] == "" then
    api.nvim_win_set_buf(0, buf)              -- an empty start buffer: use its window
  else
    vim.cmd("botright split")
    api.nvim_win_set_buf(0, buf)
  end
  return api.nvim_get_current_win()
end

function set_lines(buf, lines)
  local mod = api.nvim_buf_get_option(buf, "modifiable")
  api.nvim_buf_set_option(buf, "modifiable", true)
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  api.nvim_buf_set_option(buf, "modifiable", mod)
end

local function valid(buf)
  return buf ~= nil and api.nvim_buf_is_valid(buf)
end

-- One line of page-provided text: cleaned (descriptions may hold line
-- breaks, a page may send escape sequences) and bounded.
local MAX_TEXT = 1000
local function oneline(s)
  return text.clean((text.bounded(tostring(s or ""), MAX_TEXT)))
end


M.S, M.loaded, M.ready, M.echo, M.progress, M.notify, M.report = S, loaded, ready, echo, progress, notify, report
M.forget_if_gone, M.start, M.cancel_running = forget_if_gone, start, cancel_running
M.scratch, M.show, M.set_lines, M.valid, M.oneline, M.MAX_TEXT = scratch, show, set_lines, valid, oneline, MAX_TEXT

return M
