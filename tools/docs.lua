-- tools/docs.lua: `make docs`. Writes the parts of the documentation that
-- have a source elsewhere, so that each fact is stated once:
--
--   <!-- make docs: types NAME... -->   the API reference of those classes
--     or functions, read from types/devtools_tools.lua (the LuaLS
--     annotations, the API's machine-readable definition);
--   <!-- make docs: layers -->          the drawing of the layers,
--     tools/layers.lua's render() of the require graph;
--   <!-- make docs: bench -->           the performance tables, from the
--     runs `make bench-doc` recorded in doc/performance.json;
--   <!-- make docs: cli -->             the command line's reference, from
--     its definition, lua/devtools_tools/cli/definition.lua (which
--     `devtools-tools help` prints from too; tools/cli_doc.lua);
--
-- each up to its `<!-- end make docs -->`, in README.md and doc/*.md; the
-- Lua API section of Neovim's help file, doc/devtools_tools.txt, from
-- types/ too (see M.help); and the man page, doc/devtools-tools.1, whole,
-- from the command line's definition (see M.man).
-- What is between the markers is replaced; what is around them is written
-- by hand and never touched.
--
--   lua5.4 tools/docs.lua           rewrites what is out of date
--   lua5.4 tools/docs.lua --check   names what is out of date, exits 1
--
-- spec/unit/docs_spec.lua runs the same check. It must never run a
-- browser or read the network: everything comes from files in the tree.

local M = {}

local fmt = string.format

M.TYPES = "types/devtools_tools.lua"
M.BENCH = "doc/performance.json"

local function read(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local s = f:read("*a")
  f:close()
  return s
end
M.read = read

local function write(path, s)
  local tmp = path .. ".tmp"
  local f = assert(io.open(tmp, "wb"))
  f:write(s)
  f:close()
  assert(os.rename(tmp, path))
end

-- ---- types/devtools_tools.lua -------------------------------------------------

-- read_type(s, i) -> the LuaLS type that starts at i, the index after it.
-- A type is one or more alternatives joined by `|`: a name (a.b.C), a
-- string literal, a table literal {...}, fun(...)[: type], each maybe
-- followed by [] and ?.
local function read_type(s, i)
  local start = i
  local function balanced(open, close)
    local depth = 0
    repeat
      local c = s:sub(i, i)
      if c == "" then error("unbalanced " .. open .. " in type: " .. s) end
      if c == open then depth = depth + 1 elseif c == close then depth = depth - 1 end
      i = i + 1
    until depth == 0
  end
  while true do
    local c = s:sub(i, i)
    if c == "{" then
      balanced("{", "}")
    elseif s:sub(i, i + 3) == "fun(" then
      i = i + 3
      balanced("(", ")")
      local colon = s:match("^:%s*()", i)
      if colon then
        local _, j = read_type(s, colon)
        i = j
      end
    elseif c == '"' then
      i = assert(s:find('"', i + 1, true), "unclosed string in type") + 1
    elseif c == "(" then
      balanced("(", ")")
    else
      local j = s:match("^[%w_.]+()", i)
      if not j then error("no type at " .. i .. " in: " .. s) end
      i = j
      if s:sub(i, i) == "<" then balanced("<", ">") end
    end
    while s:sub(i, i + 1) == "[]" do i = i + 2 end
    if s:sub(i, i) == "?" then i = i + 1 end
    if s:sub(i, i) == "|" then i = i + 1 else break end
  end
  return s:sub(start, i - 1), i
end
M.read_type = read_type

-- "name type comment" -> name, type, comment (name may end with ?)
local function name_type(rest)
  local name, at = rest:match("^([%w_]+%??)%s+()")
  if not name then name, at = rest:match("^(%.%.%.)%s+()") end
  if not name then error("no name in: " .. rest) end
  local ty, j = read_type(rest, at)
  return name, ty, (rest:sub(j):gsub("^%s+", ""))
end

-- parse(text) -> model: {classes = {name -> class}, order = {names},
-- aliases = {name -> {values}}}. class: {name, desc, parent, fields =
-- {{name, type, desc}}, functions = {fn}, var}; fn: {class, name, sep
-- ("." or ":"), desc, params = {{name, type, desc}}, returns = {{type,
-- name, desc}}}.
function M.parse(text)
  local model = { classes = {}, order = {}, aliases = {}, alias_order = {} }
  local vars = {}                     -- local variable -> class name
  local doc, params, returns = {}, {}, {}
  local class, alias                  -- the class (alias) being read
  local ty                            -- the ---@type of the next assignment
  local function reset() doc, params, returns = {}, {}, {} end
  local n = 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    local tag, rest = line:match("^%-%-%-@(%w+)%s*(.*)$")
    if tag == "class" then
      local name, parent = rest:match("^([%w_.]+)%s*:%s*([%w_.]+)")
      name = name or rest:match("^([%w_.]+)")
      class = { name = name, parent = parent, desc = table.concat(doc, " "), fields = {}, functions = {} }
      model.classes[name] = class
      model.order[#model.order + 1] = name
      alias = nil
      reset()
    elseif tag == "field" then
      assert(class, "a field outside a class, line " .. n)
      local fname, ty, desc = name_type(rest)
      class.fields[#class.fields + 1] = { name = fname, type = ty, desc = desc }
    elseif tag == "alias" then
      alias = { name = rest:match("^([%w_.]+)"), values = {} }
      model.aliases[alias.name] = alias
      model.alias_order[#model.alias_order + 1] = alias.name
      class = nil
    elseif tag == "param" then
      local pname, ty, desc = name_type(rest)
      params[#params + 1] = { name = pname, type = ty, desc = desc }
    elseif tag == "return" then
      local ty, j = read_type(rest, 1)
      local tail = rest:sub(j):gsub("^%s+", "")
      local rname, rdesc = tail:match("^([%w_]+)%s*(.*)$")
      if ty == "..." then ty = "any" end
      returns[#returns + 1] = { type = ty, name = rname, desc = rdesc ~= "" and rdesc or nil }
    elseif tag then
      -- @meta, @overload, @generic: nothing to show
      if tag == "overload" and class then class.overload = rest end
      if tag == "type" then ty = rest end
    elseif line:match("^%-%-%-|") then
      local value, comment = line:match('^%-%-%-|%s*(%S+)%s*#?%s*(.*)$')
      assert(alias, "an alias value outside an alias, line " .. n)
      alias.values[#alias.values + 1] = { value = value, desc = comment }
    elseif line:match("^%-%-%-") then
      doc[#doc + 1] = line:match("^%-%-%-%s?(.*)$")
    elseif line:match("^local ([%w_]+) = {}$") then
      local var = line:match("^local ([%w_]+)")
      assert(class, "a class table without a class, line " .. n)
      vars[var] = class.name
      class.var = var
      reset()
    elseif line:match("^[%w_]+%.[%w_]+ = ") then
      -- a field of a module table given a value: its type from ---@type,
      -- else from the value (dt.TIMEOUT = 30)
      local var, fname, value = line:match("^([%w_]+)%.([%w_]+) = (.*)$")
      local cname = assert(vars[var], "a field of an unknown table, line " .. n)
      local c = model.classes[cname]
      ty = ty or (tonumber(value) and "number") or (value:match('^"') and "string") or "any"
      c.fields[#c.fields + 1] = { name = fname, type = ty, desc = table.concat(doc, " ") }
      ty = nil
      reset()
    elseif line:match("^function ") then
      local var, sep, fname, args = line:match("^function ([%w_]+)([.:])([%w_]+)%((.-)%)")
      local cname = assert(vars[var], "a function of an unknown table, line " .. n)
      local c = model.classes[cname]
      local fn = { class = cname, name = fname, sep = sep, desc = table.concat(doc, " "),
        params = params, returns = returns, args = args }
      c.functions[#c.functions + 1] = fn
      reset()
    else
      if not line:match("^%s*$") and not line:match("^%-%-") and not line:match("^return ") then
        error("types: a line the parser does not know, line " .. n .. ": " .. line)
      end
      if line:match("^%s*$") then reset() end
    end
  end
  return model
end

function M.load_types(path)
  return M.parse(assert(read(path or M.TYPES)))
end

-- How a class's methods and functions are written in the reference:
-- the receiver a reader names it by.
M.RECEIVER = {
  devtools_tools = "dt", ["devtools_tools.Browser"] = "browser", ["devtools_tools.Page"] = "page",
  ["devtools_tools.ToolGroup"] = "group", ["devtools_tools.Tool"] = "tool",
  ["devtools_tools.Task"] = "task", ["devtools_tools.base.json"] = "dt.json",
  ["devtools_tools.schema"] = "schema", ["devtools_tools.Background"] = "bg",
  ["devtools_tools.nvim"] = "nvim", ["devtools_tools.mcp"] = "mcp",
  ["devtools_tools.McpServer"] = "server", ["devtools_tools.Element"] = "el",
}

local function short(ty)
  return (ty:gsub("devtools_tools%.", ""))
end

local function code(s)
  -- a code span that holds backticks needs a longer fence
  if s:find("`", 1, true) then return "`` " .. s .. " ``" end
  return "`" .. s .. "`"
end

local function sentence(s)
  s = s:gsub("%s+$", "")
  if s == "" then return s end
  return s:sub(1, 1):upper() .. s:sub(2)
end

local function render_fn(fn)
  local recv = M.RECEIVER[fn.class] or short(fn.class)
  local args = {}
  for _, p in ipairs(fn.params) do
    args[#args + 1] = p.name:gsub("%?$", "") .. (p.name:find("?", 1, true) and "?" or "")
      .. ": " .. short(p.type)
  end
  local rets = {}
  for _, r in ipairs(fn.returns) do rets[#rets + 1] = short(r.type) end
  local sig = recv .. fn.sep .. fn.name .. "(" .. table.concat(args, ", ") .. ")"
    .. (#rets > 0 and (" -> " .. table.concat(rets, ", ")) or "")
  local out = { "- " .. code(sig) }
  local text = {}
  if fn.desc ~= "" then text[#text + 1] = sentence(fn.desc) end
  for _, p in ipairs(fn.params) do
    if p.desc ~= "" then text[#text + 1] = code(p.name:gsub("%?$", "")) .. ": " .. p.desc .. "." end
  end
  for _, r in ipairs(fn.returns) do
    if r.name and r.desc then
      text[#text + 1] = "Returns " .. code(r.name) .. (r.desc and (": " .. r.desc) or "") .. "."
    end
  end
  if #text > 0 then out[#out + 1] = "  " .. table.concat(text, " ") end
  return table.concat(out, "\n")
end

local function render_fields(class)
  local out = {}
  for _, f in ipairs(class.fields) do
    local opt = f.name:find("?", 1, true) and "?" or ""
    out[#out + 1] = "- " .. code(f.name:gsub("%?$", "") .. opt .. ": " .. short(f.type))
      .. (f.desc ~= "" and (" - " .. f.desc) or "")
  end
  return out
end

local function render_class(model, class)
  local out = {}
  local head = "**" .. code(short(class.name)) .. "**"
  if class.parent then head = head .. " (also every field of " .. code(short(class.parent)) .. ")" end
  if class.desc ~= "" then head = head .. ": " .. class.desc end
  out[#out + 1] = head
  out[#out + 1] = ""
  for _, l in ipairs(render_fields(class)) do out[#out + 1] = l end
  if class.overload then
    local params = class.overload:match("^fun%((.-)%)") or ""
    out[#out + 1] = "- " .. code((M.RECEIVER[class.name] or "x") .. "(" .. short(params) .. ")")
      .. " - the same as " .. code((M.RECEIVER[class.name] or "x") .. ":call(...)")
  end
  for _, fn in ipairs(class.functions) do out[#out + 1] = render_fn(fn) end
  return table.concat(out, "\n")
end

local function render_alias(alias)
  local out = { "**" .. code(short(alias.name)) .. "**", "" }
  for _, v in ipairs(alias.values) do
    out[#out + 1] = "- " .. code(v.value) .. (v.desc ~= "" and (" - " .. v.desc) or "")
  end
  return table.concat(out, "\n")
end

local function render_alias_table(alias, head)
  local out = { "| " .. head .. " | when |", "|---|---|" }
  for _, v in ipairs(alias.values) do
    out[#out + 1] = "| " .. code(v.value:gsub('^"(.*)"$', "%1")) .. " | " .. v.desc:gsub("|", "\\|") .. " |"
  end
  return table.concat(out, "\n")
end

-- find(model, name) -> "class", class | "alias", alias | "fn", fn |
-- "fields", class (fields:NAME: the class's fields alone) | "table",
-- alias (table:NAME: an alias as a table of its values)
local function find(model, name)
  local only = name:match("^fields:(.+)$")
  if only and model.classes[only] then return "fields", model.classes[only] end
  only = name:match("^table:(.+)$")
  if only and model.aliases[only] then return "table", model.aliases[only] end
  if model.classes[name] then return "class", model.classes[name] end
  if model.aliases[name] then return "alias", model.aliases[name] end
  local cname, sep, fname = name:match("^(.-)([.:])([%w_]+)$")
  local c = cname and model.classes[cname]
  if c then
    for _, fn in ipairs(c.functions) do
      if fn.name == fname and fn.sep == sep then return "fn", fn end
    end
  end
  return nil
end

-- render_types(model, names) -> the reference of the classes, aliases and
-- functions named (a class: its description, fields and functions)
function M.render_types(model, names)
  local parts, fns = {}, {}
  local function flush()
    if #fns > 0 then parts[#parts + 1] = table.concat(fns, "\n") fns = {} end
  end
  for _, name in ipairs(names) do
    local kind, x = find(model, name)
    if kind == "class" then
      flush()
      parts[#parts + 1] = render_class(model, x)
    elseif kind == "alias" then
      flush()
      parts[#parts + 1] = render_alias(x)
    elseif kind == "fn" then
      fns[#fns + 1] = render_fn(x)
    elseif kind == "fields" then
      for _, l in ipairs(render_fields(x)) do fns[#fns + 1] = l end
    elseif kind == "table" then
      flush()
      parts[#parts + 1] = render_alias_table(x, "code")
    else
      error("types: no class, alias or function " .. name .. " in " .. M.TYPES)
    end
  end
  flush()
  return "*Reference (`types/devtools_tools.lua`):*\n\n" .. table.concat(parts, "\n\n")
end

-- Every class, alias and function of the model, by the name a marker
-- gives it ("Class", "Class.fn", "Class:method").
function M.all_names(model)
  local out = {}
  for _, a in ipairs(model.alias_order) do out[#out + 1] = a end
  for _, cname in ipairs(model.order) do
    out[#out + 1] = cname
    for _, fn in ipairs(model.classes[cname].functions) do
      out[#out + 1] = cname .. fn.sep .. fn.name
    end
  end
  return out
end

-- ---- the help file's Lua API (doc/devtools_tools.txt) ----------------------

-- Neovim's help file is the plugin's manual; its section on the library's
-- API is written from types/ too. A help file has no comments to mark a
-- block with, so the block is the section itself: from the line after the
-- one tagged *devtools_tools-api* to the line before "The plugin module,".
M.HELP = "doc/devtools_tools.txt"
local HELP_FUNCTIONS = { "launch", "connect", "webdriver", "async", "wait_all", "sleep", "current_task",
  "debug", "use_loop", "is_error", "is_element", "array", "now", "left" }
local HELP_OBJECTS = { "Browser", "Page", "ToolGroup", "Tool", "Element" }

local function wrap(text, width, first, rest)
  local lines, cur = {}, first
  local fresh = true
  for word in text:gmatch("%S+") do
    if not fresh and #cur + 1 + #word > width then
      lines[#lines + 1] = cur
      cur, fresh = rest, true
    end
    cur = fresh and (cur .. word) or (cur .. " " .. word)
    fresh = false
  end
  lines[#lines + 1] = cur
  return table.concat(lines, "\n")
end

local function help_tag(tag)
  return string.rep(" ", math.max(1, 78 - #tag - 2)) .. "*" .. tag .. "*"
end

local function render_help(model)
  local dtc = model.classes.devtools_tools
  local out = {
    "",
    wrap("The editor commands are built on the library, usable from any Lua code in Neovim: "
      .. "`local dt = require(\"devtools_tools\")`. The whole API, with the error and timeout "
      .. "contract, is doc/api.md and doc/errors.md in the repository; LuaLS annotations are in "
      .. "`types/devtools_tools.lua` (add the plugin directory to `workspace.library`), which this "
      .. "section is written from (`make docs`).", 78, "", ""),
    "",
  }
  for _, name in ipairs(HELP_FUNCTIONS) do
    local fn
    for _, f in ipairs(dtc.functions) do if f.name == name then fn = f end end
    assert(fn, "types: no dt." .. name)
    local args = {}
    for _, p in ipairs(fn.params) do
      if p.name ~= "..." then args[#args + 1] = "{" .. p.name:gsub("%?$", "") .. "}" end
    end
    local sig = "dt." .. name .. "(" .. table.concat(args, ", ") .. ")"
    local head = #sig < 23 and (sig .. string.rep(" ", 24 - #sig)) or (sig .. " ")
    out[#out + 1] = help_tag("devtools_tools." .. name .. "()")
    out[#out + 1] = wrap(fn.desc ~= "" and fn.desc or "-", 78, head, string.rep(" ", 24))
  end
  out[#out + 1] = ""
  for _, oname in ipairs(HELP_OBJECTS) do
    local c = assert(model.classes["devtools_tools." .. oname], oname)
    local members = {}
    for _, f in ipairs(c.fields) do members[#members + 1] = "`." .. f.name:gsub("%?$", "") .. "`" end
    if c.overload then members[#members + 1] = "`" .. M.RECEIVER[c.name] .. "(args)`" end
    for _, fn in ipairs(c.functions) do
      local args = {}
      for _, p in ipairs(fn.params) do args[#args + 1] = p.name:gsub("%?$", "") end
      members[#members + 1] = "`:" .. fn.name .. "(" .. table.concat(args, ", ") .. ")`"
    end
    local tag = "*devtools_tools-" .. oname .. "*"
    out[#out + 1] = oname .. string.rep(" ", math.max(1, 78 - #oname - #tag)) .. tag
    out[#out + 1] = wrap((c.desc ~= "" and (c.desc .. " ") or "") .. table.concat(members, ", ") .. ".",
      78, "  ", "  ")
  end
  out[#out + 1] = ""
  return table.concat(out, "\n") .. "\n"
end

-- help(text, model) -> the help file with its API section written anew
function M.help(text, model)
  local a = text:find("%*devtools_tools%-api%*\n")
  local b = text:find("\nThe plugin module, ", a or 1, true)
  if not (a and b) then error(M.HELP .. ": no section tagged *devtools_tools-api* ending before \"The plugin module,\"") end
  local first = text:find("\n", a, true) + 1
  return text:sub(1, first - 1) .. render_help(model) .. text:sub(b + 1)
end

-- ---- the command line (doc/devtools-tools.1) ----------------------------------

-- The man page is written whole from the command line's definition
-- (lua/devtools_tools/cli/definition.lua), which `devtools-tools help`
-- prints from too; its version is the library's.
M.MAN = "doc/devtools-tools.1"
M.MAN_DATE = "2026"

function M.cli_definition()
  package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
  return require "devtools_tools.cli.definition"
end

function M.version()
  local v = assert(read("lua/devtools_tools/init.lua")):match('_VERSION = "([^"]+)"')
  return assert(v, "no _VERSION in lua/devtools_tools/init.lua")
end

function M.man()
  package.path = "./tools/?.lua;" .. package.path
  return require("cli_doc").man(M.cli_definition(), M.version(), M.MAN_DATE)
end

-- ---- generated blocks -------------------------------------------------------

M.OPEN = "<!-- make docs: "
M.CLOSE = "<!-- end make docs -->"

local generators = {}

generators.types = function(args, ctx)
  ctx.model = ctx.model or M.load_types()
  ctx.shown = ctx.shown or {}
  for _, n in ipairs(args) do
    local kind, x = find(ctx.model, n)
    ctx.shown[(n:gsub("^%a+:", ""))] = true
    if kind == "class" then
      for _, fn in ipairs(x.functions) do ctx.shown[n .. fn.sep .. fn.name] = true end
    end
  end
  return M.render_types(ctx.model, args)
end

generators.layers = function()
  package.path = "./tools/?.lua;" .. package.path
  local layers = require "layers"
  return "```\n" .. layers.render(layers.modules()) .. "```"
end

generators.cli = function()
  return require("cli_doc").markdown(M.cli_definition())
end

generators.bench = function(args, ctx)
  local bench = require "bench_doc"
  ctx.runs = ctx.runs or bench.load(M.BENCH)
  return bench.render(ctx.runs, args[1])
end

M.generators = generators

-- blocks(text) -> list of {kind, args, first, last (byte positions of the
-- block's inside), line}; raises on a marker left open
function M.blocks(text)
  local out = {}
  local pos = 1
  while true do
    local a, b, spec = text:find("<!%-%- make docs: ([^\n]-) %-%->\n", pos)
    if not a then break end
    local c, d = text:find(M.CLOSE, b + 1, true)
    if not c then error("a '" .. M.OPEN .. spec .. " -->' with no '" .. M.CLOSE .. "'") end
    local words = {}
    for w in spec:gmatch("%S+") do words[#words + 1] = w end
    local kind = table.remove(words, 1)
    local _, line = text:sub(1, a):gsub("\n", "")
    out[#out + 1] = { kind = kind, args = words, first = b + 1, last = c - 1, line = line + 1 }
    pos = d + 1
  end
  return out
end

-- render(text, ctx) -> the text with every generated block written anew
function M.render(text, ctx)
  ctx = ctx or {}
  local parts, pos = {}, 1
  for _, blk in ipairs(M.blocks(text)) do
    local gen = generators[blk.kind]
    if not gen then error("line " .. blk.line .. ": no generator '" .. blk.kind .. "'") end
    parts[#parts + 1] = text:sub(pos, blk.first - 1)
    parts[#parts + 1] = "\n" .. gen(blk.args, ctx) .. "\n\n"
    pos = blk.last + 1
  end
  parts[#parts + 1] = text:sub(pos)
  return table.concat(parts)
end

-- The files make docs writes blocks into.
function M.pages()
  local out = { "README.md" }
  local p = io.popen("ls doc/*.md 2>/dev/null")
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  return out
end

-- outdated(ctx?) -> list of {path, want} whose text is not what make docs writes
function M.outdated(ctx)
  ctx = ctx or {}
  local out = {}
  for _, path in ipairs(M.pages()) do
    local text = assert(read(path))
    local want = M.render(text, ctx)
    if want ~= text then out[#out + 1] = { path = path, want = want } end
  end
  ctx.model = ctx.model or M.load_types()
  local help = assert(read(M.HELP))
  local want = M.help(help, ctx.model)
  if want ~= help then out[#out + 1] = { path = M.HELP, want = want } end
  local man = read(M.MAN)
  want = M.man()
  if want ~= man then out[#out + 1] = { path = M.MAN, want = want } end
  return out, ctx
end

-- ---- reading the pages (spec/unit/docs_spec.lua, spec/e2e/doc_blocks_spec.lua) ----

-- The text outside fenced code blocks, code spans and HTML comments, each
-- left out as blank lines (so line numbers stay).
function M.prose(text)
  local out, fence = {}, false
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if line:match("^%s*```") then
      fence = not fence
      out[#out + 1] = ""
    elseif fence or line:match("^    ") then
      out[#out + 1] = ""
    else
      out[#out + 1] = (line:gsub("``.-``", ""):gsub("`[^`]*`", ""))
    end
  end
  return (table.concat(out, "\n"):gsub("<!%-%-.-%-%->", function(c) return (c:gsub("[^\n]", "")) end))
end

-- slug(heading) -> the anchor GitHub gives a heading: lower case, every
-- character but letters, digits, `_`, `-` and spaces left out, spaces as `-`
function M.slug(h)
  h = h:gsub("`", ""):lower()
  h = h:gsub("[^%w_%- \128-\255]", "")
  return (h:gsub(" ", "-"))
end

-- headings(text) -> list of {level, title, slug} (code blocks left out);
-- a slug seen before gets -1, -2... as on GitHub
function M.headings(text)
  local out, seen = {}, {}
  for line in (M.prose(text) .. "\n"):gmatch("([^\n]*)\n") do
    local hashes, title = line:match("^(#+)%s+(.-)%s*$")
    if hashes then
      local s = M.slug(title)
      if seen[s] then
        seen[s] = seen[s] + 1
        s = s .. "-" .. seen[s]
      else
        seen[s] = 0
      end
      out[#out + 1] = { level = #hashes, title = title, slug = s }
    end
  end
  return out
end

-- links(text) -> list of {target, line} of the page's markdown links (not
-- those in code)
function M.links(text)
  local out, n = {}, 0
  for line in (M.prose(text) .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    for target in line:gmatch("%]%(([^)%s]+)%)") do out[#out + 1] = { target = target, line = n } end
  end
  -- a link text broken over two lines: "[writing\ntools](page.md)"
  for target in M.prose(text):gmatch("%]%(([^)%s]+)%)") do
    local found = false
    for _, l in ipairs(out) do found = found or l.target == target end
    if not found then out[#out + 1] = { target = target, line = 0 } end
  end
  return out
end

-- contents(text) -> the anchors the page's "Contents" list links to, in order
function M.contents(text)
  local list = text:match("\nContents\n\n(.-)\n\n")
  if not list then return nil end
  local out = {}
  for line in (list .. "\n"):gmatch("([^\n]*)\n") do
    local anchor = line:match("^%- %[.-%]%(#([^)]+)%)$")
    if not anchor then return nil, "not a contents line: " .. line end
    out[#out + 1] = anchor
  end
  return out
end

-- runnable(text) -> the code blocks marked <!-- runnable[: words] -->:
-- {lang, code, line, own_app, exit, stdout, stderr}
function M.runnable(text)
  local out = {}
  local n = 0
  local lines = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  local i = 1
  while i <= #lines do
    local spec = lines[i]:match("^<!%-%- runnable:? ?(.-)%s*%-%->$")
    if spec then
      local lang = (lines[i + 1] or ""):match("^```(%w+)$")
      if not lang then error("line " .. i .. ": a runnable mark not followed by a code block") end
      local code, j = {}, i + 2
      while lines[j] and lines[j] ~= "```" do code[#code + 1] = lines[j]; j = j + 1 end
      if not lines[j] then error("line " .. i .. ": a runnable block that does not end") end
      local b = { lang = lang, code = table.concat(code, "\n") .. "\n", line = i + 1, exit = 0 }
      local rest = spec
      rest = rest:gsub('(%w+)="(.-)"', function(k, v) b[k] = v; return "" end)
      for word in rest:gmatch("%S+") do
        local k, v = word:match("^(%w+)=(%d+)$")
        if k == "exit" then b.exit = tonumber(v)
        elseif word == "own-app" then b.own_app = true
        else error("line " .. i .. ": a runnable mark with '" .. word .. "'") end
      end
      out[#out + 1] = b
      i = j
    end
    i = i + 1
    n = n + 1
  end
  return out
end

local function main(argv)
  package.path = "./tools/?.lua;./lua/?.lua;./lua/?/init.lua;" .. package.path
  package.cpath = "./" .. (os.getenv("DEVTOOLS_TOOLS_BUILD") or "build/lua5.4") .. "/?.so;" .. package.cpath
  local check = argv[1] == "--check"
  local stale = M.outdated()
  for _, s in ipairs(stale) do
    if check then
      io.stderr:write(s.path, ": out of date (run make docs)\n")
    else
      write(s.path, s.want)
      io.stdout:write("wrote ", s.path, "\n")
    end
  end
  return (check and #stale > 0) and 1 or 0
end

if arg and arg[0] and arg[0]:match("docs%.lua$") and not package.loaded["docs"] then
  os.exit(main(arg))
end

return M
