-- tools/cli_doc.lua: the man page (doc/devtools-tools.1) and the command
-- line's reference in doc/cli.md, written from the command line's one
-- definition, lua/devtools_tools/cli/definition.lua - the definition
-- `devtools-tools help` prints from too (cli/help.lua).
--
-- tools/docs.lua calls man() and markdown() (`make docs`), and
-- spec/unit/docs_spec.lua checks that what is committed is what they write.
-- Nothing here states a fact about the command line: every word comes from
-- the definition, laid out for roff or for markdown.
--
-- The definition's texts are plain, wrapped for a terminal: `x` is code, an
-- option (--name) and a metavariable (def.METAVARS) are recognised by their
-- shape, a blank line ends a paragraph and a line indented by two spaces or
-- more is a literal one.

local M = {}

local concat, fmt = table.concat, string.format

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

-- blocks(text) -> list of {kind = "prose"|"literal", text}: prose lines
-- joined by spaces, literal lines kept (their first two spaces taken off)
local function blocks(text)
  local out, cur = {}, nil
  for line in (text:gsub("\n*$", "") .. "\n"):gmatch("([^\n]*)\n") do
    local kind = line:match("^  ") and "literal" or (line:match("^%s*$") and "blank" or "prose")
    if kind == "blank" then
      cur = nil
    else
      if not cur or cur.kind ~= kind then
        cur = { kind = kind, lines = {} }
        out[#out + 1] = cur
      end
      cur.lines[#cur.lines + 1] = kind == "literal" and line:sub(3) or trim(line)
    end
  end
  for _, b in ipairs(out) do b.text = concat(b.lines, b.kind == "prose" and " " or "\n") end
  return out
end
M.blocks = blocks

-- An option's text on one line: the lines of --help joined, and its `man`
-- text after it.
local function option_text(o)
  local s = trim((o.text or ""):gsub("%s*\n%s*", " "))
  if o.man then
    if s ~= "" and not s:match("[.:;]$") then s = s .. "." end
    s = s .. " " .. trim(o.man:gsub("%s*\n%s*", " "))
  end
  return s
end

-- head(o) -> "-q, --quiet", "--element SELECTOR", "close ID|TEXT"
local function head(o)
  local h = o.opt or o.word
  if o.short then h = o.short .. ", " .. h end
  if o.arg then h = h .. " " .. o.arg end
  return h
end

-- spans(s) -> list of {code = bool, text}: the text split at its `code` spans
local function spans(s)
  local out, pos = {}, 1
  while true do
    local a, b = s:find("`[^`]+`", pos)
    if not a then break end
    if a > pos then out[#out + 1] = { text = s:sub(pos, a - 1) } end
    out[#out + 1] = { code = true, text = s:sub(a + 1, b - 1) }
    pos = b + 1
  end
  if pos <= #s then out[#out + 1] = { text = s:sub(pos) } end
  return out
end

-- ---- roff -------------------------------------------------------------------------

local function roff_escape(s)
  return (s:gsub("\\", "\\e"))
end

local function roff_code(s)
  return roff_escape(s):gsub("%-", "\\-")
end

-- roff_inline(def, s, extra) -> s with code and options in bold and
-- metavariables in italics (extra: more words to set in italics)
local function roff_inline(def, s, extra)
  local meta = {}
  for _, m in ipairs(def.METAVARS) do meta[m] = true end
  for _, m in ipairs(extra or {}) do meta[m] = true end
  local out = {}
  for _, sp in ipairs(spans(s)) do
    if sp.code then
      out[#out + 1] = "\\fB" .. roff_code(sp.text) .. "\\fR"
    else
      local t = roff_escape(sp.text)
      -- options: --name, -q (a word of its own); the rest word by word
      t = t:gsub("()(%-%-?[%a][%w-]*)", function(at, opt)
        local before = at > 1 and t:sub(at - 1, at - 1) or ""
        if before:match("[%w-]") then return nil end
        if opt:match("^%-%a") and #opt > 2 then return nil end          -- -1.5, -joff
        return "\001" .. opt:gsub("%-", "\\-") .. "\002"
      end)
      t = t:gsub("()([%a][%w.]*)", function(at, word)
        local before = at > 1 and t:sub(at - 1, at - 1) or ""
        if before:match("[%w\\.$]") then return nil end
        local w, tail = word:match("^(.-)(%.*)$")
        if meta[w] then return "\003" .. w .. "\002" .. tail end
        local first, ext = w:match("^([%u]+)(%.%l+)$")          -- OUT.png
        if first and meta[first] then return "\003" .. first .. "\002" .. ext .. tail end
        return nil
      end)
      t = t:gsub("%-%-(%s)", "\\-\\-%1")           -- a lone "--"
      t = t:gsub("\001", "\\fB"):gsub("\003", "\\fI"):gsub("\002", "\\fR")
      out[#out + 1] = t
    end
  end
  return concat(out)
end

-- Source lines of at most about 78 columns (roff fills them again); none
-- starts with a control character.
local function roff_lines(s)
  local out, cur = {}, nil
  for w in s:gmatch("%S+") do
    if cur and #cur + 1 + #w > 78 then
      out[#out + 1] = cur
      cur = w
    else
      cur = cur and (cur .. " " .. w) or w
    end
  end
  out[#out + 1] = cur
  for i, l in ipairs(out) do
    if l:match("^[.']") then out[i] = "\\&" .. l end
    -- a line that ends with "..." or "e.g." ends no sentence (roff would
    -- put two spaces after it)
    if l:match("%.%.%.$") or l:match("e%.g%.$") then out[i] = out[i] .. "\\&" end
  end
  return concat(out, "\n")
end

local function roff_literal(s)
  local out = {}
  for line in (s .. "\n"):gmatch("([^\n]*)\n") do
    line = roff_code(line)
    if line:match("^[.']") then line = "\\&" .. line end
    out[#out + 1] = line
  end
  return ".nf\n" .. concat(out, "\n") .. "\n.fi"
end

-- roff_text(def, text, par) -> the text's paragraphs, each after par
-- (".PP" or ".IP"; nil before the first: it continues what was there)
local function roff_text(def, text, par, first_par)
  local out = {}
  for i, b in ipairs(blocks(text)) do
    local p = par
    if i == 1 then p = first_par end
    if p then out[#out + 1] = p end
    if b.kind == "prose" then
      out[#out + 1] = roff_lines(roff_inline(def, b.text))
    else
      out[#out + 1] = roff_literal(b.text)
    end
  end
  return concat(out, "\n")
end

-- The words of a usage line that stand for what the user gives, beside
-- def.METAVARS.
local SYNOPSIS_WORDS = { "JSON", "options", "ARGS", "COMMAND" }

local function roff_usage(def, name, rest)
  return ".B " .. def.PROG .. " " .. name .. "\n" .. roff_lines(roff_inline(def, rest, SYNOPSIS_WORDS))
end

-- man(def, version) -> the man page
function M.man(def, version, date)
  local out = {
    '.\\" Written by `make docs` (tools/cli_doc.lua) from lua/devtools_tools/cli/definition.lua:',
    '.\\" edit that file, not this one.',
    fmt('.TH %s 1 "%s" "%s" "User Commands"', def.PROG:upper(), date, version),
    ".nh",                -- no hyphenation: words and options are typed as shown
    ".ad l",
    ".SH NAME",
    roff_code(def.PROG) .. " \\- " .. def.SUMMARY,
    ".SH SYNOPSIS",
  }
  for _, c in ipairs(def.COMMANDS) do
    for _, u in ipairs(c.usage) do
      local rest = u:sub(#c.name + 2):gsub("%s*%[options%]", ""):gsub("\n", " ")
      out[#out + 1] = roff_usage(def, c.name, rest)
      out[#out + 1] = ".br"
    end
  end
  out[#out + 1] = ".B " .. def.PROG .. "\n.RI [ COMMAND ]\n.B \\-\\-help\n.br"
  out[#out + 1] = ".B " .. def.PROG .. " \\-\\-version"
  out[#out + 1] = ".SH DESCRIPTION"
  out[#out + 1] = roff_text(def, def.ABOUT .. "\n" .. def.ABOUT_MAN, ".PP")
  out[#out + 1] = ".SH COMMANDS"
  for _, c in ipairs(def.COMMANDS) do
    out[#out + 1] = ".TP"
    out[#out + 1] = roff_lines("\\fB" .. c.name .. "\\fR" .. roff_inline(def, c.brief:sub(#c.name + 1), SYNOPSIS_WORDS))
    local par = nil
    local function text(t)
      out[#out + 1] = roff_text(def, t, ".IP", par)
      par = ".IP"
    end
    for _, part in ipairs(c.body or {}) do
      if type(part) == "string" then
        text(part)
      else
        out[#out + 1] = ".RS"
        for _, o in ipairs(part) do
          out[#out + 1] = ".TP"
          local name = o.opt or o.word
          if not name:match("^%-") then name = "`" .. name .. "`" end   -- options are set in bold anyway
          out[#out + 1] = roff_lines(roff_inline(def, name .. (o.arg and (" " .. o.arg) or "")))
          out[#out + 1] = roff_lines(roff_inline(def, option_text(o)))
        end
        out[#out + 1] = ".RE"
        par = ".IP"
      end
    end
    if c.man then text(c.man) end
  end
  out[#out + 1] = ".SH OPTIONS"
  out[#out + 1] = roff_lines(roff_inline(def, def.COMMON.title))
  for _, o in ipairs(def.COMMON.options) do
    out[#out + 1] = ".TP"
    local h = "`" .. o.opt .. "`" .. (o.arg and (" " .. o.arg) or "")
    if o.short then h = "`" .. o.short .. "`, " .. h end
    out[#out + 1] = roff_lines(roff_inline(def, h))
    out[#out + 1] = roff_lines(roff_inline(def, option_text(o)))
  end
  for _, t in ipairs({ def.COMMON.browser, def.COMMON.browser_man, def.COMMON.settle, def.COMMON.settle_man }) do
    out[#out + 1] = roff_text(def, t, ".PP", ".PP")
  end
  out[#out + 1] = ".SH EXIT STATUS"
  for _, e in ipairs(def.EXIT) do
    out[#out + 1] = ".TP\n.B " .. e.code
    out[#out + 1] = roff_text(def, e.man, ".IP")
  end
  out[#out + 1] = ".SH ENVIRONMENT"
  for _, e in ipairs(def.ENVIRONMENT) do
    out[#out + 1] = ".TP\n.B " .. e[1]
    out[#out + 1] = roff_text(def, e[2], ".IP")
  end
  out[#out + 1] = ".SH EXAMPLES"
  for i, ex in ipairs(def.EXAMPLES) do
    if ex[1] then out[#out + 1] = roff_text(def, ex[1], ".PP", i > 1 and ".PP" or nil) end
    if i > 1 then out[#out + 1] = ".PP" end
    out[#out + 1] = roff_literal((ex[2]:gsub("\n$", "")))
  end
  out[#out + 1] = ".SH SEE ALSO"
  local see = {}
  for i, s in ipairs(def.SEE_ALSO) do
    local name, sec = s:match("^(.-)(%(%d%))$")
    see[#see + 1] = ".BR " .. roff_code(name) .. " " .. sec .. (i < #def.SEE_ALSO and "," or "")
  end
  out[#out + 1] = concat(see, "\n")
  return concat(out, "\n") .. "\n"
end

-- ---- markdown ---------------------------------------------------------------------

local function code(s)
  if s:find("`", 1, true) then return "`` " .. s .. " ``" end
  return "`" .. s .. "`"
end

-- md_inline(s) -> s with its options as code spans
local function md_inline(s)
  local out = {}
  for _, sp in ipairs(spans(s)) do
    if sp.code then
      out[#out + 1] = code(sp.text)
    else
      local t = sp.text:gsub("()(%-%-?[%a][%w-]*)", function(at, opt)
        local before = at > 1 and sp.text:sub(at - 1, at - 1) or ""
        if before:match("[%w-]") then return nil end
        if opt:match("^%-%a") and #opt > 2 then return nil end
        return code(opt)
      end)
      out[#out + 1] = t
    end
  end
  return concat(out)
end

-- Lines of at most about 76 columns; a word that would begin a line as a
-- list item, a heading or a quote stays on the line before.
local function md_lines(s, indent)
  indent = indent or ""
  local out, cur = {}, nil
  for w in s:gmatch("%S+") do
    local risky = w:match("^[-+*#>|]$") or w:match("^%d+[.)]$") or w:match("^#")
    if cur and #cur + 1 + #w > 76 and not risky then
      out[#out + 1] = cur
      cur = indent .. w
    else
      cur = cur and (cur .. " " .. w) or w
    end
  end
  out[#out + 1] = cur
  return concat(out, "\n")
end

local function md_text(text)
  local out = {}
  for _, b in ipairs(blocks(text)) do
    if b.kind == "prose" then
      out[#out + 1] = md_lines(md_inline(b.text))
    else
      out[#out + 1] = "```\n" .. b.text .. "\n```"
    end
  end
  return concat(out, "\n\n")
end

local function md_item(h, text)
  return md_lines("- " .. h .. ": " .. md_inline(text), "  ")
end

-- markdown(def) -> the reference part of doc/cli.md
function M.markdown(def)
  local out = {
    "*Reference (`lua/devtools_tools/cli/definition.lua`, which `devtools-tools help` prints too):*",
  }
  for _, c in ipairs(def.COMMANDS) do
    out[#out + 1] = "### " .. c.name
    local usage = {}
    for _, u in ipairs(c.usage) do
      usage[#usage + 1] = def.PROG .. " " .. u:gsub("\n", "\n" .. (" "):rep(#def.PROG + #c.name + 2))
    end
    out[#out + 1] = "```\n" .. concat(usage, "\n") .. "\n```"
    for _, part in ipairs(c.body or {}) do
      if type(part) == "string" then
        out[#out + 1] = md_text(part)
      else
        local items = {}
        for _, o in ipairs(part) do items[#items + 1] = md_item(code(head(o)), option_text(o)) end
        out[#out + 1] = concat(items, "\n")
      end
    end
    if c.man then out[#out + 1] = md_text(c.man) end
  end
  out[#out + 1] = "### Options of every command"
  out[#out + 1] = md_inline(def.COMMON.title)
  local items = {}
  for _, o in ipairs(def.COMMON.options) do items[#items + 1] = md_item(code(head(o)), option_text(o)) end
  out[#out + 1] = concat(items, "\n")
  for _, t in ipairs({ def.COMMON.browser, def.COMMON.browser_man, def.COMMON.settle, def.COMMON.settle_man }) do
    out[#out + 1] = md_text(t)
  end
  out[#out + 1] = "### Exit status"
  items = {}
  for _, e in ipairs(def.EXIT) do
    items[#items + 1] = md_item(code(tostring(e.code)), trim(e.man:gsub("%s*\n%s*", " ")))
  end
  out[#out + 1] = concat(items, "\n")
  out[#out + 1] = "### Environment"
  items = {}
  for _, e in ipairs(def.ENVIRONMENT) do
    items[#items + 1] = md_item(code(e[1]), trim(e[2]:gsub("%s*\n%s*", " ")))
  end
  out[#out + 1] = concat(items, "\n")
  out[#out + 1] = "### Examples"
  for _, ex in ipairs(def.EXAMPLES) do
    if ex[1] then out[#out + 1] = md_text(ex[1]) end
    local lines = ex[2]:gsub("\n$", "")
    -- shell commands only: a block of sh; configuration files: plain
    local sh = ("\n" .. lines):gsub("\n" .. def.PROG:gsub("%-", "%%-") .. " [^\n]*", "") == ""
    out[#out + 1] = "```" .. (sh and "sh" or "") .. "\n" .. lines .. "\n```"
  end
  return concat(out, "\n\n")
end

return M
