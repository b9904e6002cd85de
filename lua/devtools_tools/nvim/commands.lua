-- devtools_tools.nvim.commands: the subcommands of :DevTools (launch,
-- connect, open, close, cancel, tools, list, call, eval), each a command of
-- the session (nvim/session.lua) on the public API, and their completion.
--
-- It must never wait in the editor (each runs as the session's one task),
-- nor complete from the browser (completion reads the last discovery).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local P = require "devtools_tools.nvim.session"
local V = require "devtools_tools.nvim.views"

local levels = vim.log.levels
local type, tostring, ipairs, pcall, error, rawget = type, tostring, ipairs, pcall, error, rawget
local concat = table.concat
local S, lib = P.S, P.lib
local ready, echo, progress, notify, report, start = P.ready, P.echo, P.progress, P.notify, P.report, P.start
local forget_if_gone, cancel_running, loaded, oneline = P.forget_if_gone, P.cancel_running, P.loaded, P.oneline

local C = {}

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
  S.browser = lib.dt.launch({ executable = o.executable, headless = o.headless, timeout = left().timeout })
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
    local b = lib.dt.connect(url, { timeout = left().timeout })   -- (refused remote hosts: REMOTE_RULE)
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
  return discover_then(function(groups) V.pick(groups) end)
end

usage.list = "list"
function commands.list()
  return discover_then(V.render_tools)
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
  if not (lib.dt.is_error(err) and err.code == "invalid_params" and type(err.details) == "table") then
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
    local ok, v = pcall(lib.dt.json.decode, json)
    if not ok then
      return report(lib.dt.new_error("bad_argument", "call " .. name
        .. ": the arguments are not valid JSON: " .. tostring(lib.dt.is_error(v) and v.message or v)))
    end
    if v ~= lib.dt.null then args = v end
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
      V.open_args(r.fill, r.given)
      echo("devtools_tools: " .. oneline(name) .. " needs arguments: fill them in, then :w calls it")
    else
      V.show_result(r.result, "call " .. name)
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
    V.show_result(res, "eval")
  end, "the page did not answer")
end

local order = { "launch", "connect", "open", "close", "tools", "list", "call", "eval", "cancel" }

-- command(line): runs ":DevTools <line>".
function C.command(line)
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
function C.complete(arglead, cmdline)
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


-- the session's browser is dropped (the editor exits): see init.lua
C.drop_browser = drop_browser

return C
