-- devtools_tools.cli.commands: what each command does - list, call, eval,
-- screenshot, run and browser - on the public API, showing what it found
-- through present/ (summaries, argument typing, pretty JSON).
--
-- A command takes ctx {opts, pos, rest, out, progress, left} and returns
-- its exit status, or raises a dt.Error or a usage error (cli.argv). It
-- must never print anything but its result on stdout, and checks its
-- words before any browser starts.

local dt = require "devtools_tools"
local argv = require "devtools_tools.cli.argv"
local target = require "devtools_tools.cli.target"
local background = require "devtools_tools.cli.background"
local text = require "devtools_tools.present.text"
local pschema = require "devtools_tools.present.schema"
local pargs = require "devtools_tools.present.args"
local pretty = require "devtools_tools.present.pretty"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, tostring, ipairs, pcall, xpcall, error, setmetatable, getmetatable, loadfile =
      type, tostring, ipairs, pcall, xpcall, error, setmetatable, getmetatable, loadfile
local unpack = table.unpack or unpack
local clean, width, pad = text.clean, text.width, text.pad
local usage, looks_like_url = argv.usage, argv.looks_like_url
local with_page, need_target = target.with_page, target.need_target

local M = {}

-- A `run` script's own Lua error (exit 1, with its traceback): {text}
M.ScriptError = {}

local function print_json(ctx, v)
  ctx.out:emit(pretty.encode(v, { indent = not ctx.opts.compact and "  " or false }), "\n")
end

-- ---- list -------------------------------------------------------------------------

-- The table shows a description's first sentence, at most 100 bytes (the
-- whole text is in --json); a summary of arguments wider than 40 columns
-- does not widen the column for the others; a name is bounded too.
local MAX_DESC, MAX_ARGS, MAX_NAME = 100, 40, 200

local function print_list(ctx, groups)
  if #groups == 0 then
    ctx.out:emit("no tools\n")
    return
  end
  -- each tool's schema on a budget of its own, all within one second: a
  -- hostile schema is cut without cutting the others
  local deadline = dt.now() + 1
  local wname, wargs = 4, 9
  local rows = {}
  for _, g in ipairs(groups) do
    for _, t in ipairs(g.tools) do
      local row = { name = (text.bounded(clean(t.name), MAX_NAME)),
        args = pschema.summary(t.input_schema, pschema.budget({ deadline = deadline })), desc = text.first_sentence(t.description, MAX_DESC) }
      rows[t] = row
      wname = math.max(wname, width(row.name))
      local n = width(row.args)
      if n <= MAX_ARGS then wargs = math.max(wargs, n) end
    end
  end
  local lines = {}
  for i, g in ipairs(groups) do
    if i > 1 then lines[#lines + 1] = "" end
    local head = text.bounded(clean(g.name), MAX_NAME)
    if type(g.description) == "string" and g.description ~= "" then
      head = head .. " - " .. text.first_sentence(g.description, MAX_DESC)
    end
    lines[#lines + 1] = head
    lines[#lines + 1] = "  frame " .. text.bounded(clean(g.frame and g.frame.url), 2000)
    for _, t in ipairs(g.tools) do
      local row = rows[t]
      lines[#lines + 1] = text.rtrim("  " .. pad(row.name, wname) .. "  " .. pad(row.args, wargs) .. "  " .. row.desc)
    end
  end
  ctx.out:emit(table.concat(lines, "\n"), "\n")
end

local function list_json(groups)
  local out = dt.array{}
  for _, g in ipairs(groups) do
    local tools = dt.array{}
    for _, t in ipairs(g.tools) do
      tools[#tools + 1] = { name = t.name, description = t.description, inputSchema = t.input_schema }
    end
    out[#out + 1] = { name = g.name, description = g.description == nil and dt.null or g.description,
      frame = { url = g.frame and g.frame.url }, tools = tools }
  end
  return out
end

function M.list(ctx)
  local pos, opts = ctx.pos, ctx.opts
  if #pos > 1 then usage("list takes at most one URL", "list") end
  local url = pos[1]
  need_target(ctx, url, "list")
  return with_page(ctx, url, function(_, page)
    ctx.progress:step("discovering tools")
    local groups, warnings = page:discover({ timeout = ctx.left() })
    ctx.progress:done()
    -- groups the page got wrong were skipped: say why (its author wants to know)
    if not opts.quiet then
      for _, w in ipairs(warnings or {}) do ctx.out:warn(text.bounded(tostring(w), 2000)) end
    end
    if opts.json then print_json(ctx, list_json(groups)) else print_list(ctx, groups) end
    return 0
  end)
end

-- ---- call -------------------------------------------------------------------------

local function words_of(ctx)
  local words = {}
  for _, w in ipairs(ctx.pos) do words[#words + 1] = w end
  for _, w in ipairs(ctx.rest or {}) do words[#words + 1] = w end
  return words
end

local function args_of(schema, words)
  local args, err = pargs.from_words(schema, words)
  if not args then usage(err, "call") end
  return args
end

function M.call(ctx)
  local words = words_of(ctx)
  local url
  if looks_like_url(words[1]) then url = table.remove(words, 1) end
  local name = table.remove(words, 1)
  if not name then usage("which tool? devtools-tools call [URL] TOOL [ARGS]", "call") end
  need_target(ctx, url, "call")
  local args = args_of(nil, words)     -- usage errors before any browser starts
  return with_page(ctx, url, function(_, page)
    ctx.progress:step("discovering tools")
    local tool = page:tool(name, { timeout = ctx.left() })
    ctx.progress:step("calling " .. name)
    local result
    if tool then
      result = tool:call(args_of(tool.input_schema, words), { timeout = ctx.left() })
    else
      result = page:call(name, args, { timeout = ctx.left() })   -- raises tool_not_found
    end
    ctx.progress:done()
    print_json(ctx, result)
    return 0
  end)
end

-- ---- screenshot, eval -----------------------------------------------------------------

function M.screenshot(ctx)
  local pos, opts = ctx.pos, ctx.opts
  local url, out
  if #pos == 2 then url, out = pos[1], pos[2]
  elseif #pos == 1 and not looks_like_url(pos[1]) then out = pos[1]
  else usage("screenshot takes [URL] OUT.png", "screenshot") end
  if opts["full-page"] and opts.element then
    usage("--full-page and --element exclude each other", "screenshot")
  end
  need_target(ctx, url, "screenshot")
  return with_page(ctx, url, function(_, page)
    ctx.progress:step("taking the screenshot")
    local png = page:screenshot({ path = out, full_page = opts["full-page"] or nil,
      element = opts.element, timeout = ctx.left() })
    ctx.progress:done()
    if not opts.quiet then ctx.out:note("wrote " .. out .. " (" .. tostring(#png) .. " bytes)") end
    return 0
  end)
end

function M.eval(ctx)
  local words = words_of(ctx)
  local url, expr
  if #words == 2 then url, expr = words[1], words[2]
  elseif #words == 1 and not looks_like_url(words[1]) then expr = words[1]
  else usage("eval takes [URL] EXPR", "eval") end
  need_target(ctx, url, "eval")
  return with_page(ctx, url, function(_, page)
    ctx.progress:step("evaluating")
    local v = page:evaluate(expr, { timeout = ctx.left() })
    ctx.progress:done()
    print_json(ctx, v)
    return 0
  end)
end

-- ---- run ----------------------------------------------------------------------------

function M.run(ctx)
  local pos, rest, progress = ctx.pos, ctx.rest, ctx.progress
  local script, url = pos[1], pos[2]
  if not script then usage("which script? devtools-tools run SCRIPT.lua [URL] [-- ARGS]", "run") end
  if #pos > 2 then usage("run takes SCRIPT.lua [URL]; put the script's own arguments after --", "run") end
  local chunk, err = loadfile(script)
  if not chunk then usage("cannot load " .. script .. ": " .. tostring(err), "run") end
  local browser, how = target.open_browser(ctx)
  local real_exit = os.exit
  local ok, res = pcall(function()
    local page = target.open_page(ctx, browser, how, url)
    progress:done()
    local sarg = { [0] = script }
    for i, a in ipairs(rest or {}) do sarg[i] = a end
    _G.dt, _G.browser, _G.page, _G.arg = dt, browser, page, sarg
    -- modules next to the script load as in a plain `lua SCRIPT.lua` run from there
    package.path = (script:match("^(.*)/[^/]*$") or ".") .. "/?.lua;" .. package.path
    -- a script that calls os.exit still closes the browser first
    os.exit = function(code, close)
      pcall(browser.close, browser)
      real_exit(code, close)
    end
    -- the script's own failures keep their traceback; a dt.Error stays one,
    -- and so does Ctrl-C (the interpreter's "interrupted!": status 130)
    local sok, serr = xpcall(function() return chunk(unpack(sarg)) end, function(e)
      if dt.is_error(e) or getmetatable(e) == argv.Usage then return e end
      if type(e) == "string" and e:match("^[^\n]*interrupted!$") then return e end
      return setmetatable({ text = debug.traceback(tostring(e), 2) }, M.ScriptError)
    end)
    if not sok then error(serr, 0) end
  end)
  os.exit = real_exit
  progress:done()
  browser:close()
  if not ok then error(res, 0) end
  return 0
end

-- ---- browser ------------------------------------------------------------------------

function M.browser(ctx)
  local pos = ctx.pos
  if #pos ~= 1 then usage("browser takes one of start, stop, status", "browser") end
  local sub = pos[1]
  if sub == "start" then return background.start(ctx)
  elseif sub == "stop" then return background.stop(ctx)
  elseif sub == "status" then return background.status(ctx)
  end
  usage("unknown browser command " .. sub .. " (start, stop or status)", "browser")
end

-- get(name) -> the command of that name, or nil
function M.get(name)
  if name == "list" or name == "call" or name == "eval" or name == "run" or name == "screenshot"
      or name == "browser" then
    return M[name]
  end
end

return M
