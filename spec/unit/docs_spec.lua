-- The documentation: README.md and doc/*.md hold together (every link
-- between them resolves, each page's contents list is its sections), what
-- `make docs` writes is current (tools/docs.lua), the performance page
-- states no figure by hand, and types/devtools_tools.lua - the source of
-- the API reference - names the library's public functions, no more and
-- no fewer. No browser: the runnable blocks run in spec/e2e/doc_blocks_spec.lua.

package.path = "./tools/?.lua;" .. package.path
local docs = require "docs"

local function pages()
  local out = {}
  for _, p in ipairs(docs.pages()) do out[p] = assert(docs.read(p)) end
  return out
end

local function dir_of(path)
  return path:match("^(.*)/[^/]*$") or "."
end

-- "doc/../README.md" -> "README.md"
local function normalize(path)
  local parts = {}
  for part in path:gmatch("[^/]+") do
    if part == ".." and #parts > 0 and parts[#parts] ~= ".." then
      parts[#parts] = nil
    elseif part ~= "." then
      parts[#parts + 1] = part
    end
  end
  return table.concat(parts, "/")
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

-- broken_links(texts) -> "page: target (why)" for every link that does
-- not resolve, between the pages given (path -> text) and the tree
local function broken_links(texts)
  local out = {}
  local anchors = {}
  local function anchors_of(path)
    if not anchors[path] then
      local text = texts[path] or docs.read(path)
      local set = {}
      for _, h in ipairs(docs.headings(text or "")) do set[h.slug] = true end
      anchors[path] = set
    end
    return anchors[path]
  end
  for page, text in pairs(texts) do
    for _, l in ipairs(docs.links(text)) do
      local t = l.target
      if not t:match("^%a[%w+.-]*:") then              -- http:, https:, mailto: are not ours to check
        local file, anchor = t:match("^([^#]*)#?(.*)$")
        local target = file == "" and page or normalize(dir_of(page) .. "/" .. file)
        if not texts[target] and not exists(target) then
          out[#out + 1] = page .. ": " .. t .. " (no file " .. target .. ")"
        elseif anchor ~= "" then
          if not target:match("%.md$") then
            out[#out + 1] = page .. ": " .. t .. " (an anchor in a file that is not markdown)"
          elseif not anchors_of(target)[anchor] then
            out[#out + 1] = page .. ": " .. t .. " (no section #" .. anchor .. " in " .. target .. ")"
          end
        end
      end
    end
  end
  table.sort(out)
  return out
end

-- contents_problems(texts) -> the pages whose "Contents" list is not
-- their level-2 sections, in order
local function contents_problems(texts)
  local out = {}
  for page, text in pairs(texts) do
    local listed, err = docs.contents(text)
    local sections = {}
    for _, h in ipairs(docs.headings(text)) do
      if h.level == 2 then sections[#sections + 1] = h.slug end
    end
    if not listed then
      out[#out + 1] = page .. ": no contents list" .. (err and (" (" .. err .. ")") or "")
    elseif table.concat(listed, " ") ~= table.concat(sections, " ") then
      out[#out + 1] = page .. ": the contents list " .. table.concat(listed, " ")
        .. " is not the sections " .. table.concat(sections, " ")
    end
  end
  table.sort(out)
  return out
end

-- The text of a page outside what `make docs` writes, and outside code.
local function by_hand(text)
  local out, pos = {}, 1
  for _, b in ipairs(docs.blocks(text)) do
    out[#out + 1] = text:sub(pos, b.first - 1)
    pos = b.last + 1
  end
  out[#out + 1] = text:sub(pos)
  return docs.prose(table.concat(out))
end

describe("the documentation", function()
  local texts = pages()

  it("has a README of at most 400 lines and a page per subject in doc/", function()
    local _, lines = texts["README.md"]:gsub("\n", "")
    assert.is_true(lines <= 400, "README.md has " .. lines .. " lines")
    for _, p in ipairs({ "api", "cli", "mcp", "neovim", "page-tools", "errors", "remote", "performance",
        "install", "internals" }) do
      assert.is_string(texts["doc/" .. p .. ".md"], "doc/" .. p .. ".md")
    end
  end)

  it("links only to files and sections that are there", function()
    assert.same({}, broken_links(texts))
  end)

  it("finds a link to a missing file, a missing section and a section of another page", function()
    local t = {
      ["README.md"] = "# R\n\n## Install\n\n[a](doc/a.md#there) [b](doc/nope.md) [c](#install)\n"
        .. "[d](doc/a.md#gone) `[e](doc/code.md)`\n",
      ["doc/a.md"] = "# A\n\n## There\n\n[back](../README.md#install) [x](../README.md#nowhere)\n",
    }
    assert.same({
      "README.md: doc/a.md#gone (no section #gone in doc/a.md)",
      "README.md: doc/nope.md (no file doc/nope.md)",
      "doc/a.md: ../README.md#nowhere (no section #nowhere in README.md)",
    }, broken_links(t))
  end)

  it("gives each page a contents list of its sections", function()
    assert.same({}, contents_problems(texts))
    local t = { ["x.md"] = "# X\n\nContents\n\n- [One](#one)\n\n## One\n\n## Two\n" }
    assert.same({ "x.md: the contents list one is not the sections one two" }, contents_problems(t))
  end)

  it("holds what make docs writes, as it writes it now", function()
    local stale = docs.outdated()
    local names = {}
    for _, s in ipairs(stale) do names[#names + 1] = s.path end
    assert.same({}, names, "run make docs")
  end)

  it("sees a generated part edited by hand", function()
    local text = texts["doc/api.md"]
    local edited = text:gsub("Starts headless Chromium over", "Starts Chromium over", 1)
    assert.are_not.equal(text, edited)
    assert.are_not.equal(edited, docs.render(edited))
    assert.equal(text, docs.render(edited))
  end)

  it("shows every class, alias and function of types/ somewhere", function()
    local _, ctx = docs.outdated()
    local missing = {}
    for _, name in ipairs(docs.all_names(ctx.model)) do
      if not ctx.shown[name] then missing[#missing + 1] = name end
    end
    assert.same({}, missing)
  end)

  it("states no figure by hand on the performance page", function()
    local text = texts["doc/performance.md"]
    local figures = {}
    for line in by_hand(text):gmatch("[^\n]+") do
      if line:find("%d") then figures[#figures + 1] = line end
    end
    assert.same({}, figures)
    assert.is_true(#docs.blocks(text) >= 3)
    -- and sees one that is
    assert.truthy(by_hand(text .. "\nA call takes 0.3 ms.\n"):find("%d"))
  end)

  it("writes each bench figure as the median of the runs, with their range", function()
    local bench = require "bench_doc"
    local function run(v1, v2, ratio, met, load)
      return { meta = { started = "T", loadavg_at_start = load .. " 1 1 1/1 1", loadavg_at_end = "2 2 2 1/1 1",
          machine = { cores = 2, cpu = "CPU", commit = "abc" }, product = "Chrome/1", lua = "Lua 5.4" },
        rows = { { metric = "call (pipe)", value = v1, floor = "100 us", ratio = ratio, target = "<= 1.2", met = met },
          { metric = "RSS after 1,000 calls", value = v2, floor = "-", ratio = "-", target = "-", met = "-" },
          { metric = "RSS after 10000 calls", value = "9.0 MiB", floor = "-", ratio = "-", target = "-", met = "-" },
          { note = "a note" } }, legend = { "one", "  more", "two" } }
    end
    local record = { runs = { run("110 us", "7.0 MiB", "1.10", "yes", 3), run("130 us", "7.4 MiB", "1.30", "NO", 4),
      run("120 us", "7.2 MiB", "1.20", "yes", 5) } }
    assert.equal(table.concat({
      "| what | value | floor | ratio | target | met |",
      "|---|---|---|---|---|---|",
      "| call (pipe) | 120 (110-130) us | 100 us | 1.20 (1.10-1.30) | <= 1.2 | in 2 of 3 runs |",
      "| RSS after 1,000 calls | 7.2 (7.0-7.4) MiB | - | - | - | - |",
      "| RSS after 10000 calls | 9.0 MiB | - | - | - | - |",
      "",
      "Notes the bench printed (first run):",
      "",
      "- a note",
    }, "\n"), bench.render(record, "table"))
    assert.equal("- one more\n- two", bench.render(record, "legend"))
    local machine = bench.render(record, "machine")
    assert.truthy(machine:find("3 runs of `make bench`", 1, true), machine)
    assert.truthy(machine:find("as each run started: 3 1 1, 4 1 1, 5 1 1;", 1, true), machine)
    assert.truthy(machine:find("2 cores (CPU)", 1, true), machine)
  end)

  it("marks runnable only code blocks the e2e spec knows how to run", function()
    local count = 0
    for page, text in pairs(texts) do
      for _, b in ipairs(docs.runnable(text)) do
        count = count + 1
        assert.is_true(b.lang == "lua" or b.lang == "sh", page .. ":" .. b.line .. ": " .. b.lang)
      end
    end
    assert.is_true(#docs.runnable(texts["README.md"]) >= 1, "the README's Lua example is runnable")
    assert.is_true(count >= 3, count)
    assert.has_error(function() docs.runnable("<!-- runnable -->\ntext\n") end)
    assert.has_error(function() docs.runnable("<!-- runnable: fast -->\n```lua\nx()\n```\n") end)
    assert.same({ lang = "sh", code = "false\n", line = 2, exit = 1, own_app = true, stderr = "a b" },
      docs.runnable('<!-- runnable: own-app exit=1 stderr="a b" -->\n```sh\nfalse\n```\n')[1])
  end)

  it("shows one lazy.nvim spec, the help file's", function()
    local function lazy(text)
      return text:match("%-%- lazy%.nvim[^\n]*\n(%b{})")
    end
    local readme = lazy(texts["README.md"])
    assert.is_string(readme)
    assert.equal(readme, lazy(texts["doc/neovim.md"]))
    -- the help file indents it by 4 (nvim_spec loads and compares the two)
    local help = assert(docs.read("doc/devtools_tools.txt"))
    local block = help:match("%*devtools_tools%-lazy%*.-\n(    {.-\n    })")
    assert.equal(readme, (block:gsub("\n    ", "\n"):gsub("^    ", "")))
  end)
end)

describe("the command line's one definition", function()
  local def = require "devtools_tools.cli.definition"
  local help = require "devtools_tools.cli.help"
  local argv = require "devtools_tools.cli.argv"
  local committed_man = assert(docs.read(docs.MAN))

  -- every help text: the list of commands and each command's
  local function all_help()
    local out = { help.text() }
    for _, c in ipairs(def.COMMANDS) do
      if help.has(c.name) then out[#out + 1] = help.text(c.name) end
    end
    return table.concat(out, "\n")
  end

  it("is what the help, the man page and doc/cli.md show: every command and option", function()
    local texts = all_help()
    -- as make docs writes them (that the files are these: 'holds what make docs writes')
    local cli_doc = require "cli_doc"
    local man = cli_doc.man(def, docs.version(), docs.MAN_DATE)
    local md = cli_doc.markdown(def)
    local missing = {}
    for _, c in ipairs(def.COMMANDS) do
      if not texts:find("\n  " .. c.brief .. " ", 1, true) then missing[#missing + 1] = "help: " .. c.name end
      if not man:find(".TP\n\\fB" .. c.name .. "\\fR", 1, true) then missing[#missing + 1] = "man: " .. c.name end
      if not md:find("\n### " .. c.name .. "\n", 1, true) then missing[#missing + 1] = "cli.md: " .. c.name end
    end
    -- every entry of every option list: a line of its own in the help, a
    -- tagged paragraph of the man page, an item of the reference
    local entries = {}
    for _, o in ipairs(def.COMMON.options) do entries[#entries + 1] = o end
    for _, c in ipairs(def.COMMANDS) do
      for _, list in ipairs(def.lists(c)) do
        for _, o in ipairs(list) do entries[#entries + 1] = o end
      end
    end
    for _, o in ipairs(entries) do
      local h = help.head(o)
      if not texts:find("\n  " .. h .. "  ", 1, true) then missing[#missing + 1] = "help: " .. h end
      local name = (o.opt or o.word):match("^[^%s,]+"):gsub("%-", "\\-")
      local tag = man:match("\n%.TP\n([^\n]*" .. name:gsub("%p", "%%%0") .. "[^\n]*)\n")
      if not tag then missing[#missing + 1] = "man: " .. h end
      if not md:find("\n- `" .. h .. "`: ", 1, true) then missing[#missing + 1] = "cli.md: " .. h end
    end
    table.sort(missing)
    assert.same({}, missing)
  end)

  it("is what the command line parses: the options it declares and no other", function()
    local declared = def.options()
    for name, o in pairs(declared) do
      local words = { "--" .. name }
      local sample = { timeout = "5", viewport = "800x600", port = "0" }
      if o.arg then words[2] = sample[name] or "x" end
      local opts = argv.parse(words, "list")
      assert.is_not_nil(opts[name], name)
      if o.short then assert.is_not_nil(argv.parse({ o.short }, "list")[name], o.short) end
    end
    local ok, err = pcall(argv.parse, { "--no-such-option" }, "list")
    assert.is_false(ok)
    assert.matches("unknown option --no-such-option", err.message, 1, true)
    local commands = require "devtools_tools.cli.commands"
    for _, name in ipairs(commands.NAMES) do
      assert.is_true(help.has(name), name)
      assert.is_function(commands.get(name), name)
    end
  end)

  it("writes a man page whose every control line is a macro it means", function()
    local macros = { TH = true, SH = true, TP = true, PP = true, IP = true, RS = true, RE = true, B = true,
      BR = true, RI = true, br = true, nf = true, fi = true, nh = true, ad = true }
    local bad = {}
    for line in committed_man:gmatch("[^\n]+") do
      local m = line:match("^[.']([%a]*)")
      if m and not macros[m] and not line:match('^%.\\"') then bad[#bad + 1] = line end
    end
    assert.same({}, bad)
    -- a text line that begins with a dot is escaped, so it stays text
    local cli_doc = require "cli_doc"
    local d = setmetatable({ ABOUT = ".hidden line\n", ABOUT_MAN = "" }, { __index = def })
    assert.truthy(cli_doc.man(d, "v", "d"):find("\n\\&.hidden line", 1, true))
  end)

  it("sees the man page and the help change when the definition does", function()
    local cli_doc = require "cli_doc"
    local before = cli_doc.man(def, docs.version(), docs.MAN_DATE)
    assert.equal(committed_man, before)
    local saved = def.COMMON.options[1].text
    def.COMMON.options[1].text = "use a browser that runs"
    local ok, err = pcall(function()
      assert.are_not.equal(before, cli_doc.man(def, docs.version(), docs.MAN_DATE))
      assert.truthy(help.text("list"):find("--connect ENDPOINT  use a browser that runs\n", 1, true))
      assert.truthy(cli_doc.markdown(def):find("`--connect ENDPOINT`: use a browser that runs", 1, true))
    end)
    def.COMMON.options[1].text = saved
    assert(ok, err)
  end)
end)

describe("types/devtools_tools.lua", function()
  local model = docs.load_types()
  local dt = require "devtools_tools"

  -- What a reader of the module may call: its functions and callable
  -- tables, not the private ones (a leading _).
  local function public(tbl)
    local out = {}
    for k, v in pairs(tbl) do
      local callable = type(v) == "function"
        or (type(v) == "table" and getmetatable(v) and getmetatable(v).__call ~= nil)
      if type(k) == "string" and not k:match("^_") and callable then out[#out + 1] = k end
    end
    table.sort(out)
    return out
  end

  local function typed(cname)
    local out = {}
    for _, fn in ipairs(assert(model.classes[cname], cname).functions) do out[#out + 1] = fn.name end
    table.sort(out)
    return out
  end

  -- Methods a public object has that callers are not to use: each with why.
  local INTERNAL = {
    ["devtools_tools.Task"] = { suspend = "the task's own wait, called by rt/wait.lua from inside the task" },
  }

  local OBJECTS = {
    devtools_tools = function() return dt end,
    ["devtools_tools.Browser"] = function() return require("devtools_tools.browser").Browser end,
    ["devtools_tools.Page"] = function() return require("devtools_tools.page").Page end,
    ["devtools_tools.ToolGroup"] = function() return require("devtools_tools.tools.types").ToolGroup end,
    ["devtools_tools.Tool"] = function() return require("devtools_tools.tools.types").Tool end,
    ["devtools_tools.Element"] = function() return require("devtools_tools.tools.element").Element end,
    ["devtools_tools.Task"] = function() return require("devtools_tools.rt.task").Task end,
    ["devtools_tools.Background"] = function() return require("devtools_tools.browser.background").Background end,
    ["devtools_tools.base.json"] = function() return dt.json end,
    ["devtools_tools.schema"] = function() return require "devtools_tools.schema" end,
    ["devtools_tools.mcp"] = function() return require "devtools_tools.mcp" end,
  }

  for cname, get in pairs(OBJECTS) do
    it("names every public function of " .. cname .. ", and only those", function()
      local have = {}
      for _, k in ipairs(public(get())) do
        if not (INTERNAL[cname] and INTERNAL[cname][k]) then have[#have + 1] = k end
      end
      assert.same(have, typed(cname))
    end)
  end

  it("lists the error codes the library raises, as the README does", function()
    local codes = {}
    for code in pairs(require("devtools_tools.base.errors").codes) do codes[#codes + 1] = '"' .. code .. '"' end
    table.sort(codes)
    local alias = {}
    for _, v in ipairs(model.aliases["devtools_tools.ErrorCode"].values) do alias[#alias + 1] = v.value end
    table.sort(alias)
    assert.same(codes, alias)
    local readme = assert(docs.read("README.md")):match("The codes: (.-)%.\n")
    local listed = {}
    for c in readme:gmatch("`([%w_]+)`") do listed[#listed + 1] = '"' .. c .. '"' end
    table.sort(listed)
    assert.same(codes, listed)
  end)

  it("parses the types LuaLS writes", function()
    assert.same({ "fun(a: {b: integer}): boolean", 30 }, { docs.read_type("fun(a: {b: integer}): boolean x", 1) })
    assert.same({ "table<string, string>|nil", 26 }, { docs.read_type("table<string, string>|nil y", 1) })
    assert.same({ '"a"|"b"[]?', 11 }, { docs.read_type('"a"|"b"[]? z', 1) })
    local m = docs.parse("---@class X\n---@field a? integer the a\nlocal X = {}\n---Does b.\n"
      .. "---@param n number how many\n---@return string s the text\nfunction X:b(n) end\n")
    assert.same({ { name = "a?", type = "integer", desc = "the a" } }, m.classes.X.fields)
    local fn = m.classes.X.functions[1]
    assert.equal("Does b.", fn.desc)
    assert.equal("- `X:b(n: number) -> string`\n  Does b. `n`: how many. Returns `s`: the text.",
      (docs.render_types(m, { "X:b" }):gsub("^[^\n]*\n\n", "")))
  end)
end)
