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
-- One editor has one :DevTools session, so this module keeps that one
-- session (browser, page, running task, buffers) in `S` below.
--
-- Built on the public API and present/ (what every front end shows: the
-- tool list's parameters, the argument buffer's skeleton, the result's
-- JSON, error text), never on the library's private parts. Page text it
-- shows is cleaned and bounded; an error too long to show whole is kept
-- whole in the devtools://error buffer. Every message goes through
-- nvim.notice (one line that fits the command line with Neovim's own
-- vim.notify: nothing stops at "Press ENTER"). The library itself loads on
-- the first command (setup() only records options); without the C core
-- that command says `make nvim` in one line (nvim.build).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local build = require "devtools_tools.nvim.build"
local notice = require "devtools_tools.nvim.notice"

-- The library and present/, loaded on first use: setup() only records
-- options (a plugin manager calls it when Neovim starts), and without the
-- C core (no `make nvim` yet) the library cannot load - a command then
-- says so in one line (nvim.build), and loads it once it is built.
local dt, text, pschema, skeleton, pretty, perrors

local function loaded()
  if dt then return true end
  local lib, err = build.load()
  if not lib then return false, err end
  text = require "devtools_tools.present.text"
  pschema = require "devtools_tools.present.schema"
  skeleton = require "devtools_tools.present.skeleton"
  pretty = require "devtools_tools.present.pretty"
  perrors = require "devtools_tools.present.errors"
  dt = lib
  return true
end

local api = vim.api
local uv = vim.uv or vim.loop
local levels = vim.log.levels
local type, tostring, ipairs, pairs, pcall, error = type, tostring, ipairs, pairs, pcall, error
local concat = table.concat

local M = {}

-- ---- options ---------------------------------------------------------------------

local defaults = {
  executable = nil,        -- Chromium to launch; nil: the library's search (README, API)
  headless = true,         -- :DevTools launch starts a headless browser
  timeout = nil,           -- seconds: the deadline of one command, all its steps
                           -- (nil: the library's default, dt.TIMEOUT: 30)
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

-- echo(text, hl?): the command line (progress, short results). Looked up on
-- vim.api at each call, so a test can watch it.
local function echo(text, hl)
  vim.api.nvim_echo({ { text, hl or "None" } }, false, {})
end

-- Progress from inside a task: the task runs in a loop callback, so the
-- message is shown on the main loop.
local function progress(text)
  S.label = text
  vim.schedule(function()
    if S.task then echo("devtools_tools: " .. text .. "...", "MoreMsg") end
  end)
end

-- Every message goes through nvim.notice: one line that fits the command
-- line with Neovim's own vim.notify (no "Press ENTER"), the whole text
-- with a notification plugin. where: how to see what was left out.
local function notify(text, level, where)
  notice.say(text, level or levels.INFO, where)
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
  local limit = S.opts.timeout or dt.TIMEOUT
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

-- The result buffer, devtools://result: pretty JSON, filetype json, reused.
function M.show_result(value, title)
  if not ready() then return end
  local buf = S.bufs.result
  if not valid(buf) then
    buf = scratch("devtools://result", "json")
    api.nvim_buf_set_option(buf, "buftype", "nofile")
    S.bufs.result = buf
  end
  local lines = vim.split(pretty.encode(value), "\n", { plain = true })
  set_lines(buf, lines)
  api.nvim_buf_set_option(buf, "modifiable", true)
  api.nvim_buf_set_var(buf, "devtools_tools_title", title or "")
  show(buf)
  echo("devtools_tools: " .. (title or "result") .. " -> devtools://result")
  return buf
end

-- ---- the tool list -------------------------------------------------------------------------

-- "(name*, other)": every parameter, the required ones starred first; the
-- schema is read on a budget ("..." where it was cut), within the
-- deadline of the whole list.
local function param_summary(tool, deadline)
  local b = pschema.budget({ deadline = deadline })
  local schema = tool.input_schema
  local parts = {}
  for _, p in ipairs(pschema.params(schema, nil, "all", b)) do
    parts[#parts + 1] = oneline(p.name) .. (p.required and "*" or "")
  end
  if b.cut then parts[#parts + 1] = "..." end
  return "(" .. concat(parts, ", ") .. ")"
end

local function render_tools(groups, warnings)
  local buf = S.bufs.tools
  if not valid(buf) then
    buf = scratch("devtools://tools", "devtools_tools")
    api.nvim_buf_set_option(buf, "buftype", "nofile")
    S.bufs.tools = buf
    local lhs = S.opts.keymaps and S.opts.keymaps.open_tool
    if lhs then
      vim.keymap.set("n", lhs, function() M.open_tool_under_cursor() end,
        { buffer = buf, desc = "devtools_tools: argument buffer for the tool on this line" })
    end
  end
  local lines, map = {}, {}
  local deadline = dt.now() + 1
  local ntools = 0
  for _, g in ipairs(groups) do ntools = ntools + #g.tools end
  lines[1] = ("devtools_tools: %s - %d groups, %d tools"):format(
    oneline(S.page and S.page.url), #groups, ntools)
  local lhs = S.opts.keymaps and S.opts.keymaps.open_tool
  lines[2] = lhs and (lhs .. " on a tool: argument buffer; :w there calls the tool") or ""
  for _, w in ipairs(warnings or {}) do
    lines[#lines + 1] = "warning: " .. oneline(type(w) == "table" and (w.message or w.name) or w)
  end
  for _, g in ipairs(groups) do
    lines[#lines + 1] = ""
    lines[#lines + 1] = ("%s  [frame %s]"):format(oneline(g.name), oneline(g.frame and g.frame.url))
    if g.description and g.description ~= "" then
      lines[#lines + 1] = "  " .. oneline(g.description)
    end
    for _, t in ipairs(g.tools) do
      lines[#lines + 1] = "  " .. oneline(t.name) .. param_summary(t, deadline)
      map[#lines] = t
      lines[#lines + 1] = "      " .. oneline(t.description)
      map[#lines] = t
    end
  end
  set_lines(buf, lines)
  api.nvim_buf_set_option(buf, "modifiable", false)
  S.tool_lines = map
  show(buf)
  return buf
end

-- pick(groups?): the page's tools offered with vim.ui.select (Telescope,
-- fzf-lua or dressing.nvim show it when they replace vim.ui.select); the
-- one chosen opens its argument buffer. groups: a discovery (default: the
-- last one).
function M.pick(groups)
  if not ready() then return end
  groups = groups or S.groups or {}
  local items = {}
  local deadline = dt.now() + 1
  for _, g in ipairs(groups) do
    for _, t in ipairs(g.tools) do
      items[#items + 1] = {
        tool = t,
        text = oneline(t.name) .. param_summary(t, deadline) .. "  [" .. oneline(g.name) .. "]  "
          .. text.first_sentence(text.bounded(tostring(t.description or ""), MAX_TEXT), 120),
      }
    end
  end
  if #items == 0 then
    return notify("devtools_tools: the page has no tools" .. (#(S.warnings or {}) > 0
      and " (some it offered are not valid: :DevTools list shows why)" or ""), levels.WARN)
  end
  vim.ui.select(items, {
    prompt = "devtools_tools: a tool of " .. oneline(S.page and S.page.url),
    kind = "devtools_tools.tool",
    format_item = function(item) return item.text end,
  }, function(item)
    if item then M.open_args(item.tool) end
  end)
end

-- ---- argument buffers ---------------------------------------------------------------------

-- Calls a tool of an argument buffer; buf is marked written once the call
-- succeeded (a schema error leaves it modified, as a failed write does).
-- Through the page: a Tool whose document is gone since the buffer was
-- opened is the page's tool of that name now (the library's one rule).
local function call_tool(tool, args, buf)
  local page = S.page
  return start("calling " .. tool.name, function(left)
    if page and not page.closed then return page:call(tool, args, left()) end
    return tool:call(args, left())
  end, function(res)
    if valid(buf) then api.nvim_buf_set_option(buf, "modified", false) end
    M.show_result(res, "call " .. tool.name)
  end, "the tool " .. oneline(tool.name) .. " did not answer")
end

local function on_write_args(buf)
  local tool = S.arg_bufs[buf]
  if not tool then return end
  -- (its comment lines - a skeleton that was cut says so in one - are not JSON)
  local body = skeleton.strip_notes(concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n"))
  local ok, args = pcall(dt.json.decode, body)
  if not ok then
    report(dt.new_error("bad_argument", "the argument buffer is not valid JSON: "
      .. tostring(dt.is_error(args) and args.message or args)))
    return
  end
  if args == dt.null then args = nil end
  call_tool(tool, args, buf)
end

-- open_args(tool, given?): the argument buffer of a tool, pre-filled with
-- a JSON skeleton of its inputSchema (comment lines first: the allowed
-- values of its enums, and a note when the schema was too large to show
-- whole); :w calls the tool with what it holds. given: arguments already
-- typed (a JSON object), shown in place of the skeleton's placeholders
-- (they replace what the buffer held).
function M.open_args(tool, given)
  if not ready() then return end
  local name = "devtools://call/" .. oneline(tool.group and tool.group.name or "?") .. "/" .. oneline(tool.name)
  -- The same tool after a new discovery is a new Tool object: its buffer,
  -- with what was typed there, now calls the new one.
  for b in pairs(S.arg_bufs) do
    if valid(b) and api.nvim_buf_get_name(b) == name then
      S.arg_bufs[b] = tool
      if given ~= nil then
        api.nvim_buf_set_lines(b, 0, -1, false, vim.split(skeleton.text(tool.input_schema, nil, given), "\n",
          { plain = true }))
      end
      show(b)
      return b
    end
  end
  local buf = api.nvim_create_buf(false, false)
  if not pcall(api.nvim_buf_set_name, buf, name) then
    pcall(api.nvim_buf_set_name, buf, name .. " (" .. buf .. ")")
  end
  api.nvim_buf_set_option(buf, "buftype", "acwrite")
  api.nvim_buf_set_option(buf, "bufhidden", "hide")
  api.nvim_buf_set_option(buf, "swapfile", false)
  api.nvim_buf_set_option(buf, "filetype", "json")
  local start = skeleton.text(tool.input_schema, nil, given)
  api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(start, "\n", { plain = true }))
  api.nvim_buf_set_option(buf, "modified", false)
  S.arg_bufs[buf] = tool
  local write_cmd
  write_cmd = api.nvim_create_autocmd("BufWriteCmd", { buffer = buf, callback = function(ev)
    local name = api.nvim_buf_get_name(ev.buf)
    if ev.match == name and name:sub(1, 16) == "devtools://call/" then return on_write_args(ev.buf) end
    -- :w other.json, :saveas: a file, not a call
    local renamed = ev.match == name                 -- (:saveas renamed the buffer first)
    if not renamed and vim.v.cmdbang == 0 and vim.loop.fs_stat(ev.match) then
      notify("devtools_tools: " .. ev.file .. " exists (add ! to override)", levels.ERROR)
      return
    end
    local ok, rc = pcall(vim.fn.writefile, api.nvim_buf_get_lines(ev.buf, 0, -1, false), ev.match)
    if not ok or rc ~= 0 then
      notify("devtools_tools: cannot write " .. ev.file .. (ok and "" or (": " .. tostring(rc))), levels.ERROR)
      return
    end
    if renamed then
      -- now a file's buffer: later writes are plain writes
      S.arg_bufs[ev.buf] = nil
      api.nvim_del_autocmd(write_cmd)
      api.nvim_buf_set_option(ev.buf, "buftype", "")
      api.nvim_buf_set_option(ev.buf, "modified", false)
    end
    notify("devtools_tools: wrote " .. ev.file, levels.INFO)
  end })
  api.nvim_create_autocmd("BufWipeout", { buffer = buf, callback = function(ev) S.arg_bufs[ev.buf] = nil end })
  show(buf)
  return buf
end

function M.open_tool_under_cursor()
  if not ready() then return end
  local line = api.nvim_win_get_cursor(0)[1]
  local tool = S.tool_lines[line]
  if not tool then
    notify("devtools_tools: no tool on this line", levels.WARN)
    return
  end
  return M.open_args(tool)
end

-- ---- commands ----------------------------------------------------------------------------------

local function need_page()
  if S.page and not S.page.closed and S.browser then return true end
  notify("devtools_tools: no page: :DevTools launch [url] or :DevTools connect [endpoint] first", levels.ERROR)
  return false
end

-- Fills the completion cache after a navigation; a failure here is not the
-- command's failure, and shows in :DevTools tools.
local function discover_quietly(page, left)
  progress("discovering tools")
  local ok, groups, warnings = pcall(page.tool_groups, page, left())
  if ok then S.groups, S.warnings = groups, warnings else S.groups = nil end
end

-- A page just navigated is looked at once it is ready (page:settle: its
-- tools and network stopped changing, a few seconds at most): an app that
-- mounts a frame with tools after its load shows them in the first list.
local function settle(page, left)
  progress("waiting for the page to settle")
  page:settle(left())
end

-- Closes the browser in use (called inside a task, or at exit).
local function drop_browser()
  local b = S.browser
  S.browser, S.page, S.groups = nil, nil, nil
  S.tool_lines = {}
  if b then b:close() end
end

-- A new browser and its blank page, in S at once: a cancel or a failure
-- later still finds them there to close.
local function launch_browser(left)
  drop_browser()
  local o = S.opts
  progress("launching Chromium")
  S.browser = dt.launch({ executable = o.executable, headless = o.headless, timeout = left().timeout })
  S.page = S.browser:new_page(nil, left())
  return S.browser
end

local commands = {}
local usage = {}

usage.launch = "launch [url]"
function commands.launch(rest)
  local url = rest ~= "" and rest or "about:blank"
  return start("launching Chromium", function(left)
    local b = launch_browser(left)
    if url ~= "about:blank" then  -- the page stays if the url fails: :DevTools open
      progress("opening " .. url)
      S.page:navigate(url, left())
      settle(S.page, left)
    end
    discover_quietly(S.page, left)
    return b:version(left())
  end, function(v)
    echo(("devtools_tools: %s, page %s"):format(tostring(v.product), tostring(S.page and S.page.url)))
  end)
end

usage.connect = "connect [endpoint]"
function commands.connect(rest)
  local url = rest ~= "" and rest or S.opts.connect
  return start("connecting to " .. url, function(left)
    -- The browser in use is dropped once the new one answers: a mistyped
    -- endpoint leaves the session as it was.
    local b = dt.connect(url, { timeout = left().timeout })   -- (refused remote hosts: REMOTE_RULE)
    local ok, err = pcall(drop_browser)
    S.browser = b
    if not ok then error(err, 0) end
    local pages = b:pages(left())
    progress("attaching to a page")
    S.page = pages[1] and b:attach(pages[1].id, left()) or b:new_page(nil, left())
    discover_quietly(S.page, left)
    return b:version(left())
  end, function(v)
    echo(("devtools_tools: connected to %s, page %s"):format(tostring(v.product), tostring(S.page and S.page.url)))
  end)
end

usage.open = "open {url}"
function commands.open(rest)
  if rest == "" then return notify("devtools_tools: usage: :DevTools " .. usage.open, levels.ERROR) end
  return start("opening " .. rest, function(left)
    if not (S.page and not S.page.closed) then
      launch_browser(left)
      progress("opening " .. rest)
    end
    S.groups = nil
    S.page:navigate(rest, left())
    settle(S.page, left)
    discover_quietly(S.page, left)
    return S.page.url
  end, function(url)
    echo("devtools_tools: opened " .. tostring(url))
  end)
end

usage.close = "close"
function commands.close()
  local function go()
    return start("closing the browser", function() drop_browser() end,
      function() echo("devtools_tools: closed") end)
  end
  if S.task then
    S.queued = go
    cancel_running()
    return true
  end
  if not S.browser then return notify("devtools_tools: no browser to close", levels.WARN) end
  return go()
end

usage.cancel = "cancel"
function commands.cancel()
  if not S.task then return notify("devtools_tools: nothing is running", levels.WARN) end
  cancel_running()
  return true
end

-- A fresh discovery, then show(groups, warnings) on the main loop: the
-- list is what the page exposes now (an app may mount a frame with tools
-- of its own after load).
local function discover_then(show_them)
  if not need_page() then return end
  local page = S.page
  return start("discovering tools", function(left)
    local groups, warnings = page:discover(left())
    S.groups, S.warnings = groups, warnings
    return { groups = groups, warnings = warnings }
  end, function(r)
    show_them(r.groups, r.warnings)
  end)
end

usage.tools = "tools"
function commands.tools()
  return discover_then(function(groups) M.pick(groups) end)
end

usage.list = "list"
function commands.list()
  return discover_then(render_tools)
end

-- A tool name on the command line: a backslash before white space or a
-- backslash makes it part of the name ("with\ space"), as <Tab> writes it;
-- the first other white space ends it. -> name, what follows it
local function escape_name(name)
  return (name:gsub("[%s\\]", "\\%0"))
end

local function split_name(s)
  local out, i, n = {}, 1, #s
  while i <= n do
    local c = s:sub(i, i)
    if c == "\\" and s:sub(i + 1, i + 1):match("^[%s\\]$") then
      out[#out + 1] = s:sub(i + 1, i + 1)
      i = i + 2
    elseif c:match("^%s$") then
      break
    else
      out[#out + 1] = c
      i = i + 1
    end
  end
  return concat(out), s:sub(i)
end

-- missing_only(err): a schema error whose every problem is a required
-- argument missing at the top (nothing given is wrong)
local function missing_only(err)
  if not (dt.is_error(err) and err.code == "invalid_params" and type(err.details) == "table") then
    return false
  end
  local n = 0
  for _, d in ipairs(err.details) do
    if type(d) ~= "table" or d.keyword ~= "required" or (d.path ~= "" and d.path ~= nil) then return false end
    n = n + 1
  end
  return n > 0
end

usage.call = "call {tool} [json]"
function commands.call(_, raw)
  local name, json = split_name(raw)
  json = json:match("^%s*(.-)%s*$")
  if name == "" then return notify("devtools_tools: usage: :DevTools " .. usage.call, levels.ERROR) end
  if not need_page() then return end
  local args
  if json ~= "" then
    local ok, v = pcall(dt.json.decode, json)
    if not ok then
      return report(dt.new_error("bad_argument", "call " .. name
        .. ": the arguments are not valid JSON: " .. tostring(dt.is_error(v) and v.message or v)))
    end
    if v ~= dt.null then args = v end
  end
  local page = S.page
  return start("calling " .. name, function(left)
    local ok, res = pcall(page.call, page, name, args, left())
    if ok then return { result = res } end
    -- Required arguments missing, nothing else wrong: the argument
    -- buffer, with what was given, for the rest.
    if missing_only(res) then
      local tool = page:tool(name, left())
      if tool then return { fill = tool, given = args } end
    end
    error(res, 0)
  end, function(r)
    if r.fill then
      M.open_args(r.fill, r.given)
      echo("devtools_tools: " .. oneline(name) .. " needs arguments: fill them in, then :w calls it")
    else
      M.show_result(r.result, "call " .. name)
    end
  end, "the tool " .. oneline(name) .. " did not answer")
end

usage.eval = "eval {expr}"
function commands.eval(rest)
  if rest == "" then return notify("devtools_tools: usage: :DevTools " .. usage.eval, levels.ERROR) end
  if not need_page() then return end
  local page = S.page
  return start("evaluating", function(left)
    return page:evaluate(rest, left())
  end, function(res)
    M.show_result(res, "eval")
  end, "the page did not answer")
end

local order = { "launch", "connect", "open", "close", "tools", "list", "call", "eval", "cancel" }

-- command(line): runs ":DevTools <line>".
function M.command(line)
  if not ready() then return end
  forget_if_gone()
  local sub, raw = (line or ""):match("^%s*(%S+)%s*(.-)$")
  local rest = raw and raw:match("^(.-)%s*$")
  local fn = sub and rawget(commands, sub)
  if not fn then
    local u = {}
    for _, n in ipairs(order) do u[#u + 1] = "  :DevTools " .. usage[n] end
    return notify("devtools_tools: " .. (sub and ("unknown subcommand '" .. sub .. "'") or "a subcommand is needed")
      .. "\n" .. concat(u, "\n"), levels.ERROR, ":help :DevTools")
  end
  return fn(rest, raw)        -- (raw: with its trailing white space, which an escape may keep)
end

-- complete(arglead, cmdline): subcommands, then tool names for `call`
-- (from the last discovery: completion never waits on the browser).
function M.complete(arglead, cmdline)
  if not loaded() then return {} end
  -- words as Neovim splits them for completion: "with\ space" is one
  local words, cur, i, gap = {}, nil, 1, false
  while i <= #cmdline do
    local c = cmdline:sub(i, i)
    if c == "\\" and i < #cmdline then
      cur, i, gap = (cur or "") .. cmdline:sub(i, i + 1), i + 2, false
    elseif c:match("^%s$") then
      if cur then words[#words + 1], cur = cur, nil end
      i, gap = i + 1, true
    else
      cur, i, gap = (cur or "") .. c, i + 1, false
    end
  end
  if cur then words[#words + 1] = cur end
  local pos = #words + (gap and 1 or 0)   -- the word being completed
  local out = {}
  local function offer(s)
    if s:sub(1, #arglead) == arglead then out[#out + 1] = s end
  end
  if pos == 2 then
    for _, n in ipairs(order) do offer(n) end
  elseif pos == 3 and words[2] == "call" then
    local seen = {}
    for _, g in ipairs(S.groups or {}) do
      for _, t in ipairs(g.tools) do
        if not seen[t.name] then
          seen[t.name] = true
          offer(escape_name(t.name))
        end
      end
    end
  elseif pos == 3 and words[2] == "connect" then
    offer(S.opts.connect)
  end
  return out
end

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
  if not dt then return "" end        -- (nothing ran yet)
  local ok, s = pcall(function()
    if S.task then return "DevTools: " .. text.brief(oneline(S.label), 40) .. "..." end
    local page = S.page
    if not (S.browser and page and not page.closed) then return "" end
    local url = tostring(page.url or "")
    local host = url:match("^%a[%w+.-]*://([^/?#]+)") or url:match("^[^:]+") or "page"
    return "DevTools: " .. text.brief(oneline(host), 40)
  end)
  return ok and s or ""
end

-- status() -> {busy, doing, url, browser}: for statuslines and scripts. A
-- browser gone meanwhile is forgotten first (forget_if_gone).
function M.status()
  forget_if_gone()
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
  pcall(cancel_running)
  local b = S.browser
  S.browser, S.page = nil, nil
  if b then pcall(b.close, b) end
end

return M
