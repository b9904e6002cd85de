-- devtools_tools.cli.commands: what each command does - list, call,
-- describe, eval, screenshot, run, tabs, browser and mcp - on the public
-- API, showing what it found through present/ (summaries, argument typing,
-- pretty JSON, text fitted to the terminal).
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
local mcpcmd = require "devtools_tools.cli.mcp"
local tabs = require "devtools_tools.cli.tabs"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, tostring, ipairs, pcall, xpcall, error, setmetatable, getmetatable, loadfile, rawget =
      type, tostring, ipairs, pcall, xpcall, error, setmetatable, getmetatable, loadfile, rawget
local unpack = table.unpack or unpack
local clean, width, pad = text.clean, text.width, text.pad
local usage, looks_like_url, as_url = argv.usage, argv.looks_like_url, argv.as_url
local with_page, need_target = target.with_page, target.need_target

local M = {}

-- A `run` script's own Lua error (exit 1, with its traceback): {text}
M.ScriptError = {}

local function print_json(ctx, v)
  ctx.out:emit(pretty.encode(v, { indent = not ctx.opts.compact and "  " or false }), "\n")
end

-- ---- list ----------------------------------------------------------------------------

-- The table shows a description's first sentence: each line cut to the
-- terminal's width (or COLUMNS), and whole where the output is no terminal
-- (a pipe, a file: what grep and cut are given), a sentence being bounded
-- only against a page's flood (2000 bytes; the whole text is in --json); a
-- summary of arguments wider than 40 columns does not widen the column for
-- the others; a name is bounded too.
local MAX_DESC, MAX_ARGS, MAX_NAME = 2000, 40, 200

local function print_list(ctx, groups)
  if #groups == 0 then
    ctx.out:emit("no tools\n")
    return
  end
  local cols = ctx.out:width()
  -- each tool's schema on a budget of its own, all within one second: a
  -- hostile schema is cut without cutting the others
  local deadline = dt.now() + 1
  local wname, wargs = 4, 9
  local rows = {}
  for _, g in ipairs(groups) do
    for _, t in ipairs(g.tools) do
      local row = { name = (text.bounded(clean(t.name), MAX_NAME)),
        args = pschema.summary(t.input_schema, pschema.budget({ deadline = deadline })),
        desc = text.first_sentence(t.description, MAX_DESC) }
      rows[t] = row
      wname = math.max(wname, width(row.name))
      local n = width(row.args)
      if n <= MAX_ARGS then wargs = math.max(wargs, n) end
    end
  end
  local fit = text.fit
  local lines = {}
  for i, g in ipairs(groups) do
    if i > 1 then lines[#lines + 1] = "" end
    local head = text.bounded(clean(g.name), MAX_NAME)
    if type(g.description) == "string" and g.description ~= "" then
      head = head .. " - " .. text.first_sentence(g.description, MAX_DESC)
    end
    lines[#lines + 1] = fit(head, cols)
    lines[#lines + 1] = fit("  frame " .. text.bounded(clean(g.frame and g.frame.url), 2000), cols)
    for _, t in ipairs(g.tools) do
      local row = rows[t]
      lines[#lines + 1] = fit(text.rtrim("  " .. pad(row.name, wname) .. "  " .. pad(row.args, wargs) .. "  "
        .. row.desc), cols)
    end
  end
  ctx.out:emit(table.concat(lines, "\n"), "\n")
end

local function list_json(groups)
  local out = dt.array{}
  for _, g in ipairs(groups) do
    local tools = dt.array{}
    for _, t in ipairs(g.tools) do
      tools[#tools + 1] = { name = t.name, description = t.description, inputSchema = t.input_schema,
        annotations = t.annotations }
    end
    out[#out + 1] = { name = g.name, kind = g.kind, description = g.description == nil and dt.null or g.description,
      frame = { url = g.frame and g.frame.url }, tools = tools }
  end
  return out
end

-- The page's groups; the groups it got wrong named on stderr (its author
-- wants to know why they were skipped)
local function discover(ctx, page)
  ctx.progress:step("discovering tools")
  local groups, warnings = page:discover({ timeout = ctx.left() })
  ctx.progress:done()
  if not ctx.opts.quiet then
    for _, w in ipairs(warnings or {}) do ctx.out:warn(text.bounded(tostring(w), 2000)) end
  end
  return groups
end

function M.list(ctx)
  local pos, opts = ctx.pos, ctx.opts
  if #pos > 1 then usage("list takes at most one URL", "list") end
  local url = as_url(pos[1])
  need_target(ctx, url, "list")
  ctx.settle = true
  return with_page(ctx, url, function(_, page)
    local groups = discover(ctx, page)
    if opts.json then print_json(ctx, list_json(groups)) else print_list(ctx, groups) end
    return 0
  end)
end

-- ---- call, describe ----------------------------------------------------------------

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

-- An argument word: JSON, key=value, key:=json (never a tool's name).
local function is_arg(w)
  return w:find("^%s*{") ~= nil or w:find("=", 1, true) ~= nil
end

-- url_and_tool(words, cmd) -> URL or nil, the tool's name (taken out of
-- words). The first word is the URL when it has a scheme, or when a tool's
-- name follows it and it reads as a host (127.0.0.1:8080, localhost/x,
-- example.com: taken as http://, as curl does).
local function url_and_tool(words, cmd)
  local url
  if looks_like_url(words[1]) then
    url = table.remove(words, 1)
  elseif argv.looks_like_host(words[1]) and (words[2] == nil or not is_arg(words[2])) then
    if words[2] == nil then
      usage("which tool? " .. clean(words[1]) .. " reads as a URL: devtools-tools " .. cmd
        .. " [URL] TOOL" .. (cmd == "call" and " [ARGS]" or ""), cmd)
    end
    url = as_url(table.remove(words, 1))
  end
  local name = table.remove(words, 1)
  if not name then
    usage("which tool? devtools-tools " .. cmd .. " [URL] TOOL" .. (cmd == "call" and " [ARGS]" or ""), cmd)
  end
  return url, name
end

function M.call(ctx)
  local words = words_of(ctx)
  local url, name = url_and_tool(words, "call")
  need_target(ctx, url, "call")
  local args = args_of(nil, words)     -- usage errors before any browser starts
  ctx.settle = true
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

-- One tool for a person: where it is, its whole description, each
-- argument (type, required, description, allowed values, default), then
-- its whole input schema.
local MAX_TEXT = 20000

local function describe_text(tool)
  local g = tool.group or {}
  local lines = { clean(tool.name) .. "  (" .. (tool.kind or g.kind or "devtools") .. " tool of group "
    .. text.brief(clean(g.name), 200) .. ", frame " .. text.brief(clean(g.frame and g.frame.url), 300) .. ")", "" }
  local desc = text.bounded(text.clean_lines(tool.description), MAX_TEXT)
  lines[#lines + 1] = desc ~= "" and desc or "(no description)"
  local schema = tool.input_schema
  local b = pschema.budget({ seconds = 0.5, nodes = 20000 })
  local params = pschema.params(schema, nil, "all", b)
  lines[#lines + 1] = ""
  if #params == 0 then
    lines[#lines + 1] = "Arguments: " .. (pschema.summary(schema, b) == "" and "none" or pschema.summary(schema, b))
  else
    lines[#lines + 1] = "Arguments:"
    local wname = 4
    for _, p in ipairs(params) do wname = math.max(wname, width(clean(p.name))) end
    for _, p in ipairs(params) do
      local s = type(p.schema) == "table" and p.schema or {}
      local enum = rawget(s, "enum")
      local has_enum = pschema.is_list(enum) and #enum > 0
      -- (an enum's values are listed whole below: its type, or "enum")
      local ty = has_enum and (type(rawget(s, "type")) == "string" and clean(rawget(s, "type")) or "enum")
        or pschema.type_of(s, schema, b)
      local line = "  " .. pad(clean(p.name), wname) .. "  " .. ty .. (p.required and ", required" or "")
      local d = rawget(s, "description")
      if type(d) == "string" and d ~= "" then line = line .. "  " .. text.first_sentence(d, 2000) end
      lines[#lines + 1] = line
      if has_enum then
        local vals = {}
        for i, v in ipairs(enum) do
          if i > 200 then vals[#vals + 1] = "... (" .. (#enum - 200) .. " more)" break end
          vals[#vals + 1] = pretty.encode(v, { indent = false })
        end
        lines[#lines + 1] = "  " .. pad("", wname) .. "  allowed: "
          .. clean(text.bounded(table.concat(vals, ", "), MAX_TEXT))
      end
      if rawget(s, "default") ~= nil then
        local ok, dv = pcall(pretty.encode, rawget(s, "default"), { indent = false })
        if ok then lines[#lines + 1] = "  " .. pad("", wname) .. "  default: " .. clean(text.bounded(dv, 2000)) end
      end
    end
  end
  if b.cut then lines[#lines + 1] = "  ... (the schema is too large to read whole here: it follows)" end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "Input schema:"
  lines[#lines + 1] = pretty.encode(schema)
  return table.concat(lines, "\n")
end

function M.describe(ctx)
  local words = words_of(ctx)
  local url, name = url_and_tool(words, "describe")
  if #words > 0 and not ctx.described_call then
    usage("describe takes [URL] TOOL", "describe")
  end
  need_target(ctx, url, "describe")
  ctx.settle = true
  return with_page(ctx, url, function(_, page)
    ctx.progress:step("discovering tools")
    local tool = page:tool(name, { timeout = ctx.left() })
    if not tool then page:call(name, nil, { timeout = ctx.left() }) end     -- raises tool_not_found
    ctx.progress:done()
    if ctx.opts.json then
      local g = tool.group or {}
      print_json(ctx, { name = tool.name, kind = tool.kind or g.kind, description = tool.description,
        inputSchema = tool.input_schema, annotations = tool.annotations,
        group = { name = g.name, kind = g.kind, frame = { url = g.frame and g.frame.url } } })
    else
      ctx.out:emit(describe_text(tool), "\n")
    end
    return 0
  end)
end

-- ---- screenshot, eval -----------------------------------------------------------------

-- The image formats, by the file's extension.
M.IMAGE_FORMATS = { png = "png", jpg = "jpeg", jpeg = "jpeg", webp = "webp" }

function M.screenshot(ctx)
  local pos, opts = ctx.pos, ctx.opts
  local url, out
  if #pos == 2 then url, out = as_url(pos[1]), pos[2]
  elseif #pos == 1 and not looks_like_url(pos[1]) then out = pos[1]
  else usage("screenshot takes [URL] OUT.png", "screenshot") end
  if opts["full-page"] and opts.element then
    usage("--full-page and --element exclude each other", "screenshot")
  end
  local ext = out:match("%.([%w]+)$")
  local format = ext and M.IMAGE_FORMATS[ext:lower()]
  if not format then
    usage("screenshot writes .png, .jpg (.jpeg) or .webp files: " .. clean(out) .. " is none of them", "screenshot")
  end
  need_target(ctx, url, "screenshot")
  ctx.settle = true
  return with_page(ctx, url, function(_, page)
    ctx.progress:step("taking the screenshot")
    local img = page:screenshot({ path = out, full_page = opts["full-page"] or nil, format = format,
      element = opts.element, timeout = ctx.left() })
    ctx.progress:done()
    if not opts.quiet then ctx.out:note("wrote " .. out .. " (" .. tostring(#img) .. " bytes)") end
    return 0
  end)
end

-- Top-level await, as in the DevTools console: an expression that does
-- not parse as a script and uses `await` is read again in the console's
-- way (nothing ran the first time: a syntax error stops a script before
-- it starts). Not every time, since that way a promise the code ends with
-- is not awaited (`fetch(u).then(r => r.status)` gives {}).
local function evaluate(ctx, page, expr)
  -- (DOM elements in the value shown as a tool's result shows them)
  local ok, v = pcall(page.evaluate, page, expr, { timeout = ctx.left(), elements = true })
  if ok then return v end
  if dt.is_error(v) and v.code == "js_error" and tostring(v.message):match("^SyntaxError")
      and expr:find("%f[%w_$]await%f[^%w_$]") then
    return page:evaluate(expr, { timeout = ctx.left(), elements = true, repl = true })
  end
  error(v, 0)
end

function M.eval(ctx)
  local words = words_of(ctx)
  local url, expr
  if #words == 2 then url, expr = as_url(words[1]), words[2]
  elseif #words == 1 and not looks_like_url(words[1]) then expr = words[1]
  else usage("eval takes [URL] EXPR", "eval") end
  need_target(ctx, url, "eval")
  return with_page(ctx, url, function(_, page)
    ctx.progress:step("evaluating")
    local v = evaluate(ctx, page, expr)
    ctx.progress:done()
    print_json(ctx, v)
    return 0
  end)
end

-- ---- run ----------------------------------------------------------------------------

-- The line of the script a dt.Error came through (the innermost of its
-- frames on the stack as the error is raised), or nil.
local function script_line(script)
  local src = "@" .. script
  for level = 2, 200 do
    local info = debug.getinfo(level, "Sl")
    if not info then return nil end
    if info.source == src and info.currentline and info.currentline > 0 then
      return script .. ":" .. info.currentline
    end
  end
end

-- The script runs as `lua SCRIPT.lua URL ARGS...` would: arg[1] is the
-- page's URL (the one given, else that of the page chosen), the script's
-- own arguments after it (those after URL, then those after --), so one
-- script reads the same arguments either way.
function M.run(ctx)
  local pos, rest, progress = ctx.pos, ctx.rest, ctx.progress
  local script, url = pos[1], as_url(pos[2])
  if not script then usage("which script? devtools-tools run SCRIPT.lua [URL] [ARGS] [-- ARGS]", "run") end
  local chunk, err = loadfile(script)
  if not chunk then usage("cannot load " .. script .. ": " .. tostring(err), "run") end
  local browser, how = target.open_browser(ctx)
  local real_exit = os.exit
  local page, opened
  local ok, res = pcall(function()
    page, opened = target.open_page(ctx, browser, how, url)
    progress:done()
    local sarg = { [0] = script, url or page.url }
    for i = 3, #pos do sarg[#sarg + 1] = pos[i] end
    for _, a in ipairs(rest or {}) do sarg[#sarg + 1] = a end
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
      if dt.is_error(e) then
        ctx.state.where = script_line(script)
        return e
      end
      if getmetatable(e) == argv.Usage then return e end
      if type(e) == "string" and e:match("^[^\n]*interrupted!$") then return e end
      return setmetatable({ text = debug.traceback(tostring(e), 2) }, M.ScriptError)
    end)
    if not sok then error(serr, 0) end
  end)
  os.exit = real_exit
  progress:done()
  -- a signal ended it: the tab it opened in a running browser goes too
  if not ok and opened and how == "connected" and target.interrupted(res) then
    pcall(page.close, page, { timeout = 1 })
  end
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
  local meant = text.nearest(sub, { "start", "stop", "status" })
  usage("unknown browser command " .. clean(sub) .. (meant and ("; did you mean " .. meant .. "?") or "")
    .. " (start, stop or status)", "browser")
end

-- ---- tabs --------------------------------------------------------------------------------

function M.tabs(ctx)
  tabs.check(ctx.pos)
  local browser = target.running_browser(ctx, "tabs")
  local ok, res = pcall(tabs.run, ctx, browser)
  ctx.progress:done()
  browser:close()
  if not ok then error(res, 0) end
  return res
end

-- ---- mcp ------------------------------------------------------------------------------

function M.mcp(ctx)
  return mcpcmd.run(ctx)
end

-- The commands, in the order help lists them.
M.NAMES = { "list", "call", "describe", "eval", "run", "screenshot", "tabs", "browser", "mcp" }
local COMMANDS = {}
for _, name in ipairs(M.NAMES) do COMMANDS[name] = true end

-- get(name) -> the command of that name, or nil
function M.get(name)
  if COMMANDS[name] then return M[name] end
end

return M
