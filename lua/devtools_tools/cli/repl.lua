-- devtools_tools.cli.repl: `devtools-tools repl [URL]` - Lua in front of a
-- page. `page`, `browser` and `dt` are globals, each tool of the page is a
-- function of its name (getCacheStats{}; tools["odd name"]{} for any
-- name), a bare expression prints its value as `call` prints a result, a
-- chunk that is not complete waits for more lines (as lua -i), an error
-- shows as the command line shows one, and the REPL goes on.
--
-- Everything runs on the library's loop (dt.loop()), as the MCP server
-- does: stdin is watched there, each chunk runs in a task (so its waits
-- let the loop turn: Ctrl-C cancels the task, the page's events arrive),
-- a task keeps reading the page's connection while the prompt waits, and
-- the page's tool changes are discovered again and said in one line. On a
-- terminal the keys go to the line editor (cli.edit, on dt.term_raw), with
-- completion (cli.complete) and a history in the state directory; without
-- one, lines are read as they come and the output is plain text.
--
-- It must never leave the terminal in the mode it set (restored on every
-- way out but SIGKILL, which shells repair), leave a browser it launched
-- running or a tab it opened in a running browser open, run a page's text
-- as code, or print page text that is not cleaned outside a JSON string.

local dt = require "devtools_tools"
local argv = require "devtools_tools.cli.argv"
local target = require "devtools_tools.cli.target"
local background = require "devtools_tools.cli.background"
local trace = require "devtools_tools.cli.trace"
local edit = require "devtools_tools.cli.edit"
local complete = require "devtools_tools.cli.complete"
local pretty = require "devtools_tools.present.pretty"
local text = require "devtools_tools.present.text"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, tostring, pcall, error, setmetatable, select, ipairs, pairs, rawget, rawset, load =
      type, tostring, pcall, error, setmetatable, select, ipairs, pairs, rawget, rawset, load
local setfenv = rawget(_G, "setfenv")        -- LuaJIT: load's env is set with it too
local unpack = table.unpack or unpack
local concat, sort = table.concat, table.sort
local usage, as_url = argv.usage, argv.as_url
local clean = text.clean

local M = {}

M.SETTLE_MAX = 3         -- seconds a change may take to settle before discovering again
M.LISTEN = 60            -- seconds of one wait of the task reading the page's events
M.DISCOVER_TIMEOUT = 10  -- seconds one discovery may take
M.SHOW_MAX = 1024 * 1024 -- bytes of a value printed (the whole value is in _)
M.NAMES_SAID = 10        -- names a tools-changed line lists, of each kind
M.HOOK_COUNT = 100000    -- VM instructions between two looks for Ctrl-C in a chunk's own Lua code
M.HISTORY_FILE = "repl_history"
M.PROMPT, M.MORE = "> ", ">> "

M.HELP = [[
  Each tool is a function of its name:  getCacheStats{}   getState{path = "cart.items"}
  Any tool by its name:                 tools["odd name"]{}
  The page, the browser, the library:   page   browser   dt     (_ is the last value)
Commands:
  .tools            the page's tools, as `list` shows them
  .describe NAME    one tool: its description and schema
  .record FILE      record the calls from now on to FILE (a trace, see replay)
  .stop             stop recording
  .help             this text
  .exit             leave (Ctrl-D does too)
Keys: Tab completes tool names, argument keys, enum values, page: and dt.
methods; Up/Down the history; Ctrl-C stops the running call (at the prompt
it clears the input); Ctrl-D on an empty line leaves.]]

local Repl = {}
Repl.__index = Repl

local function pack(...) return { n = select("#", ...), ... } end

-- ---- output ----------------------------------------------------------------------------

-- term(s): to the terminal the editor draws on (stdout), at once
function Repl:term(s)
  io.stdout:write(s)
  io.stdout:flush()
end

-- say(line): a line of the REPL's own (stderr), above the prompt when one
-- is shown
function Repl:say(line)
  local ed = self.editor
  if ed and self.state == "prompt" then ed:hide() end
  self.ctx.out:note(line)
  io.stderr:flush()
  if ed and self.state == "prompt" then ed:show() end
end

-- show(v) -> v as the command line prints a result: JSON, indented, or
-- what tostring gives for a value JSON cannot hold
local function show(v)
  if v == nil then return "nil" end
  local ok, s = pcall(pretty.encode, v, { indent = "  " })
  if not ok then s = clean(tostring(v)) end
  if #s > M.SHOW_MAX then
    s = text.cut(s, M.SHOW_MAX) .. "\n... (" .. (#s - M.SHOW_MAX) .. " more bytes: the whole value is in _)"
  end
  return s
end

function Repl:print_values(r)
  if r.n == 0 then return end
  local out = {}
  for i = 1, r.n do out[i] = show(r[i]) end
  self.ctx.out:emit(concat(out, "\n"), "\n")
  io.stdout:flush()
end

-- failed(err): an error as the command line shows one
function Repl:failed(err)
  if dt.is_error(err) then
    if err.code == "cancelled" and self.interrupted then
      self.ctx.out:note("interrupted")
    else
      self.ctx.out:error(err, self.ctx.opts.verbose)
    end
  elseif type(err) == "string" and err:find("^interrupted") then
    self.ctx.out:note("interrupted")
  else
    local s = tostring(err)
    if not self.ctx.opts.verbose then s = s:gsub("\nstack traceback:.*$", "") end
    io.stderr:write(clean(s):sub(1, 4000), "\n")
  end
  io.stderr:flush()
end

-- ---- the page's tools --------------------------------------------------------------------

function Repl:tool_list()
  return self.tools
end

local function names_of(groups)
  local set, list = {}, {}
  for _, g in ipairs(groups or {}) do
    for _, t in ipairs(g.tools) do
      if not set[t.name] then
        set[t.name] = true
        list[#list + 1] = t
      end
    end
  end
  return set, list
end

local function said(names)
  sort(names)
  local out = {}
  for i, n in ipairs(names) do
    if i > M.NAMES_SAID then
      out[#out + 1] = "and " .. (#names - M.NAMES_SAID) .. " more"
      break
    end
    out[#out + 1] = text.brief(clean(n), 80)
  end
  return concat(out, ", ")
end

-- set_tools(groups, first): the latest discovery; a line says what came
-- and went (not for the first)
function Repl:set_tools(groups, first)
  local set, list = names_of(groups)
  local old = self.names
  self.groups, self.names, self.tools = groups, set, list
  if first or not old then return end
  local added, removed = {}, {}
  for n in pairs(set) do if not old[n] then added[#added + 1] = n end end
  for n in pairs(old) do if not set[n] then removed[#removed + 1] = n end end
  if #added == 0 and #removed == 0 then return end
  local parts = {}
  if #added > 0 then parts[#parts + 1] = "added " .. said(added) end
  if #removed > 0 then parts[#parts + 1] = "removed " .. said(removed) end
  self:say("tools changed: " .. concat(parts, "; "))
end

-- refresh(first): discovers again once the page has settled after a
-- change (page:settle, the rule `list` looks at a page by: its tools and
-- requests quiet, no frame loading; SETTLE_MAX at most), so that a
-- navigation is one line, not the document without tools between the two
function Repl:refresh(first)
  if self.closing then return end
  if self.refreshing then
    self.again = true
    return
  end
  local page = self.page
  local t
  t = dt.async(function()
    -- (the page's changes watched from the first discovery on: its set-up
    -- waits in this task, not before the prompt)
    if first and not self.off then
      self.off = page:on("tools_changed", function() self:refresh(false) end)
    end
    repeat
      self.again = false
      if not first then
        local sok, serr = pcall(page.settle, page, { max = M.SETTLE_MAX, timeout = M.DISCOVER_TIMEOUT })
        if not sok and dt.is_error(serr) and (serr.code == "cancelled" or serr.code == "disconnected") then
          return
        end
      end
      local ok, groups = pcall(page.discover, page, { timeout = M.DISCOVER_TIMEOUT })
      if self.closing then return end
      if ok then
        self:set_tools(groups, first)
      elseif dt.is_error(groups) and groups.code == "cancelled" then
        return
      elseif not (dt.is_error(groups) and groups.code == "disconnected") then
        self:say("discovering the page's tools failed: " .. clean(tostring(groups)))
      end
      first = false
    until not self.again or self.closing
  end, function()
    if self.refreshing == t then self.refreshing = nil end
  end)
  if not t.done then self.refreshing = t end
end

-- listen(): a task reads the page's events while nothing else waits on
-- its connection; it learns first that the browser went away
function Repl:listen()
  local page = self.page
  self.listener = dt.async(function()
    while not self.closing do
      local ok, err = pcall(page.wait_until, page, function() return self.closing end, { timeout = M.LISTEN })
      if not ok then
        if not self.closing and dt.is_error(err) and err.code == "disconnected" then
          self.gone = err
          self:finish()
        end
        return
      end
    end
  end)
end

-- ---- the globals ---------------------------------------------------------------------------

function Repl:tool_function(name)
  local f = self.fns[name]
  if not f then
    local page = self.page
    f = function(args, opts) return page:call(name, args, opts) end
    self.fns[name] = f
  end
  return f
end

function Repl:make_env()
  local env = { page = self.page, browser = self.browser, dt = dt }
  env.tools = setmetatable({}, { __index = function(_, name)
    if type(name) ~= "string" then return nil end
    return self:tool_function(name)
  end })
  setmetatable(env, { __index = function(_, k)
    local g = rawget(_G, k)
    if g ~= nil then return g end
    if type(k) == "string" and self.names and self.names[k] then return self:tool_function(k) end
  end })
  self.env = env
end

-- ---- running a chunk -----------------------------------------------------------------------

-- compile(src) -> fn | nil, err, incomplete. An expression first (its
-- values are printed), then a statement; either one ending early (the
-- parser wanted more at <eof>) waits for more lines.
local function at_eof(err) return err ~= nil and err:find("<eof>'?$") ~= nil end
local function compile(src, env)
  local code = src:gsub("^%s*=", "return ", 1)
  local f, rerr = load("return " .. code, "=stdin", "t", env)
  if not f then
    local err
    f, err = load(code, "=stdin", "t", env)
    if not f then
      return nil, err, at_eof(err) or at_eof(rerr)
    end
  end
  if setfenv then setfenv(f, env) end
  return f
end

-- The look for Ctrl-C while the chunk runs Lua code of its own (a loop
-- that never waits): stdin read without waiting; other keys kept.
function Repl:hook()
  local s = dt.fd_read(0)
  if type(s) ~= "string" or s == "" then return end
  self:typed(s)
  if self.interrupted then
    -- (level 1 is this function, 2 the hook, 3 what was running)
    local info = debug.getinfo(3, "S")
    if info and info.source == "=stdin" then error("interrupted", 0) end
  end
end

-- typed(s): keys that came while a chunk ran: Ctrl-C stops it, the rest
-- waits for the prompt
function Repl:typed(s)
  local c = s:find("\3", 1, true)
  if c then
    self.typeahead = self.typeahead .. s:sub(1, c - 1)
    -- (the chunk's task: not known yet to run() while it has never waited)
    local t = self.task or dt.current_task()
    if not self.interrupted then
      self.interrupted = true
      if t and not t.done then t:cancel() end
    end
    s = s:sub(c + 1)
  end
  self.typeahead = self.typeahead .. s
end

-- run(fn, after): fn() in a task; its values printed (or its error
-- shown); then after(), and the prompt again
function Repl:run(fn, print_values)
  self.state = "running"
  self.interrupted = false
  local first = self.discovering
  local tty = self.tty
  local t
  t = dt.async(function()
    -- (the first discovery, which the chunk's tool names come from; a
    -- Ctrl-C meanwhile stops the chunk: run without them, a tool's name
    -- was a nil global)
    if first and not first.done then
      local ok, err = pcall(first.wait, first)
      if not ok and dt.is_error(err) and err.code == "cancelled" then error(err, 0) end
    end
    if tty then debug.sethook(function() self:hook() end, "", M.HOOK_COUNT) end
    local r = pack(pcall(fn))
    if tty then debug.sethook() end
    return r
  end, function(ok, r)
    if tty then debug.sethook() end
    self.task = nil
    if not ok then
      self:failed(r)
    elseif not r[1] then
      self:failed(r[2])
    elseif print_values then
      local vals = { n = r.n - 1, unpack(r, 2, r.n) }
      if vals.n > 0 then rawset(self.env, "_", vals[1]) end
      self:print_values(vals)
    end
    self:ready()
  end)
  if not t.done then self.task = t end
  -- keys that came with the line (typed ahead, a Ctrl-C at once) are the
  -- running chunk's now
  local rest = self.editor and self.editor:take_rest() or ""
  if rest ~= "" then self:typed(rest) end
end

-- ---- the REPL's commands -----------------------------------------------------------------------

local COMMANDS = {}

COMMANDS.tools = function(self)
  self:run(function()
    local groups = self.groups
    if not groups then groups = self.page:discover({ timeout = M.DISCOVER_TIMEOUT }) end
    self.commands.print_list(self.ctx, groups)
  end)
end

COMMANDS.describe = function(self, arg)
  if arg == "" then
    self:failed("which tool? .describe NAME")
    return self:ready()
  end
  self:run(function()
    local tool = self.page:tool(arg, { timeout = M.DISCOVER_TIMEOUT })
    if not tool then self.page:call(arg, nil, { timeout = M.DISCOVER_TIMEOUT }) end   -- tool_not_found
    self.ctx.out:emit(self.commands.describe_text(tool), "\n")
  end)
end

COMMANDS.record = function(self, arg)
  if arg == "" then
    self:failed("which file? .record FILE")
  elseif self.recorder then
    self:failed("already recording to " .. tostring(self.record_file) .. " (.stop first)")
  else
    local ok, rec = pcall(dt.record, self.page, arg, { observe = self.ctx.opts["record-observe"] or nil,
      bodies = self.ctx.opts["record-bodies"] or nil, timeout = M.DISCOVER_TIMEOUT })
    if ok then
      self.recorder, self.record_file = rec, arg
      self:say("recording to " .. clean(arg))
    else
      self:failed(rec)
    end
  end
  self:ready()
end

COMMANDS.stop = function(self)
  if not self.recorder then
    self:failed("not recording (.record FILE starts)")
  else
    local rec, file = self.recorder, self.record_file
    self.recorder, self.record_file = nil, nil
    local ok, why = rec:stop()
    if ok then
      self:say("stopped recording: " .. rec.calls .. " calls in " .. clean(file))
    else
      self:failed("the trace " .. clean(file) .. " is cut short: " .. tostring(why))
    end
  end
  self:ready()
end

COMMANDS.help = function(self)
  self.ctx.out:emit(M.HELP, "\n")
  self:ready()
end

COMMANDS.exit = function(self)
  self:finish()
end

function Repl:command(line)
  local name, arg = line:match("^%.(%a*)%s*(.-)%s*$")
  local fn = name and COMMANDS[name]
  if not fn then
    self:failed("unknown command " .. clean(line):sub(1, 80) .. " (.help lists them)")
    return self:ready()
  end
  fn(self, arg or "")
end

-- ---- lines ---------------------------------------------------------------------------------

-- submit(line): a line entered
function Repl:submit(line)
  if self.chunk == nil and line:find("^%.%a") then
    self:add_history(line)
    return self:command(line)
  end
  local src = self.chunk and (self.chunk .. "\n" .. line) or line
  if self.chunk == nil and src:find("^%s*$") then return self:ready() end
  self:add_history(line)
  local f, err, incomplete = compile(src, self.env)
  if not f then
    if incomplete then
      self.chunk = src
      return self:ready()
    end
    self.chunk = nil
    self:failed(err)
    return self:ready()
  end
  self.chunk = nil
  self:run(f, true)
end

-- ready(): the next line is awaited (the prompt, or the next line read)
function Repl:ready()
  if self.closing then return end
  self.state = "prompt"
  if self.editor then
    local prompt = self.chunk and M.MORE or M.PROMPT
    local ahead = self.typeahead
    self.typeahead = ""
    local events = self.editor:resume(prompt)
    if ahead ~= "" then
      for _, e in ipairs(self.editor:feed(ahead)) do events[#events + 1] = e end
    end
    return self:events(events)
  end
  return self:next_line()
end

function Repl:events(events)
  local e = events[1]
  if not e then return end
  if e[1] == "line" then
    self:submit(e[2])
  elseif e[1] == "interrupt" then
    self.chunk = nil
    self:ready()
  elseif e[1] == "eof" then
    self:finish()
  end
end

-- Pipe mode: the next whole line read, when nothing runs.
function Repl:next_line()
  if self.state ~= "prompt" or self.closing then return end
  local nl = self.inbuf:find("\n", 1, true)
  if nl then
    local line = self.inbuf:sub(1, nl - 1):gsub("\r$", "")
    self.inbuf = self.inbuf:sub(nl + 1)
    self.state = "busy"
    return self:submit(line)
  end
  if self.eof then
    if self.inbuf ~= "" then
      local line = self.inbuf
      self.inbuf = ""
      self.state = "busy"
      return self:submit(line)
    end
    if self.chunk then
      self:failed(select(2, compile(self.chunk, self.env)) or "the input ended inside a chunk")
      self.chunk = nil
    end
    self:finish()
  end
end

-- input(): stdin is readable
function Repl:input()
  local s, why = dt.fd_read(0)
  if s == nil then
    -- the end of the input
    self.eof = true
    if self.input_watch then self.loop:unwatch(self.input_watch) self.input_watch = nil end
    if self.editor then
      if self.state == "prompt" then self:finish() end
    else
      self:next_line()
    end
    return why
  end
  if s == "" then return end
  if self.editor then
    if self.state == "prompt" then
      self:events(self.editor:feed(s))
    else
      self:typed(s)
    end
  else
    self.inbuf = self.inbuf .. s
    self:next_line()
  end
end

-- ---- history -------------------------------------------------------------------------------

local function history_path()
  local p = background.record_path(true)
  return p and (p:match("^(.*)/[^/]*$") .. "/" .. M.HISTORY_FILE)
end

function Repl:load_history()
  local path = history_path()
  self.history_file = path
  local list = {}
  local f = path and io.open(path, "rb")
  if f then
    for line in f:lines() do list[#list + 1] = line end
    f:close()
  end
  while #list > edit.HISTORY do table.remove(list, 1) end
  return list
end

function Repl:add_history(line)
  if not self.editor then return end
  if self.editor:add_history(line) and self.history_file then
    local ok, why = dt.write_state(self.history_file, concat(self.editor.history, "\n") .. "\n")
    if not ok and not self.history_warned then
      self.history_warned = true
      self:say("cannot keep the history in " .. self.history_file .. ": " .. tostring(why))
    end
  end
end

-- ---- start and end -----------------------------------------------------------------------

function Repl:finish()
  self.finished = true
end

function Repl:close()
  self.closing = true
  if self.task and not self.task.done then self.task:cancel() end
  if self.refreshing then self.refreshing:cancel() end
  if self.listener and not self.listener.done then self.listener:cancel() end
  if self.off then pcall(self.off) end
  if self.input_watch then self.loop:unwatch(self.input_watch) self.input_watch = nil end
  if self.recorder then
    local ok, why = self.recorder:stop()
    if not ok then
      self.ctx.out:warn("the trace " .. tostring(self.record_file) .. " is cut short: " .. tostring(why))
    end
    self.recorder = nil
  end
  if self.mode then
    self.mode:restore()
    self.mode = nil
  end
end

function Repl:start()
  local page = self.page
  self.loop = dt.loop()
  if type(self.loop.step) ~= "function" then
    error(dt.new_error("bad_argument", "repl: the loop cannot be turned"), 0)
  end
  self:make_env()
  if self.ctx.opts.record then
    self.recorder, self.record_file = trace.start(self.ctx, page), self.ctx.opts.record
  end
  self:refresh(true)
  self.discovering = self.refreshing
  self:listen()
  if self.tty then
    local mode, why = dt.term_raw(0)
    if not mode then error(dt.new_error("bad_argument", "repl: cannot read keys from the terminal: "
      .. tostring(why)), 0) end
    self.mode = mode
    self.editor = edit.new({
      write = function(s) self:term(s) end,
      columns = function() return dt.term_size(1) end,
      complete = complete.new({ tools = function() return self:tool_list() end, env = self.env, globals = _G }),
      history = self:load_history(),
    })
  else
    self.ctx.out:plain()
  end
  self.input_watch = self.loop:watch(0, "r", function() self:input() end)
  self:ready()
  while not self.finished do
    if self.loop:step(nil) == false then break end
  end
end

-- run(ctx, commands) -> exit status. commands: cli.commands (list's and
-- describe's printers).
function M.run(ctx, commands)
  local pos = ctx.pos
  if #pos > 1 then usage("repl takes at most one URL", "repl") end
  local url = as_url(pos[1])
  local self = setmetatable({ ctx = ctx, commands = commands, fns = {}, typeahead = "", inbuf = "",
    state = "starting", tty = dt.isatty(0) and dt.isatty(1) }, Repl)
  local browser, how = target.open_browser(ctx)
  self.browser = browser
  local opened
  local ok, err = pcall(function()
    self.page, opened = target.open_page(ctx, browser, how, url)
    ctx.progress:done()
    self:start()
  end)
  self:close()
  if opened and how == "connected" and self.page then pcall(self.page.close, self.page, { timeout = 1 }) end
  ctx.progress:done()
  pcall(browser.close, browser)
  if not ok then error(err, 0) end
  if self.gone then error(self.gone, 0) end
  return 0
end

return M
