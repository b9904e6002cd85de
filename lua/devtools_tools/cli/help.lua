-- devtools_tools.cli.help: the command line's help texts, written from
-- its one definition (cli/definition.lua), as `devtools-tools help
-- [COMMAND]` and `--help` print them: one text per command, then the
-- options every command shares.
--
-- Text only: it must never decide anything about the command line's
-- behaviour (cli.argv parses, cli.commands acts).

local def = require "devtools_tools.cli.definition"

local M = {}

local concat, rep = table.concat, string.rep

-- The text's lines, without the newline that ends the last.
local function lines(text)
  local out = {}
  for l in (text:gsub("\n$", "") .. "\n"):gmatch("([^\n]*)\n") do out[#out + 1] = l end
  return out
end

-- head(entry) -> what an option list shows of an entry: "-q, --quiet",
-- "--element SELECTOR", "close ID|TEXT"
function M.head(o)
  local h = o.opt or o.word
  if o.short then h = o.short .. ", " .. h end
  if o.arg then h = h .. " " .. o.arg end
  return h
end

-- A list of entries, each head at two spaces and its text at the column
-- (two spaces after a head too long for it); the text's further lines at
-- the column too.
local function option_list(out, entries, column)
  for _, o in ipairs(entries) do
    local head = "  " .. M.head(o)
    local pad = #head + 2 <= column and rep(" ", column - #head) or "  "
    local ls = lines(o.text)
    out[#out + 1] = head .. pad .. ls[1] .. "\n"
    for i = 2, #ls do out[#out + 1] = rep(" ", column) .. ls[i] .. "\n" end
  end
end

-- Words joined into lines of at most width columns; "\0" in a word is a
-- space that does not break.
local function fill(words, width)
  local out, cur = {}, nil
  for _, w in ipairs(words) do
    if cur and #cur + 1 + #w > width then
      out[#out + 1] = cur
      cur = w
    else
      cur = cur and (cur .. " " .. w) or w
    end
  end
  out[#out + 1] = cur
  return (concat(out, "\n"):gsub("%z", " ")) .. "\n"
end

-- The exit statuses in one sentence (the command-specific ones after a ";").
local function exit_line()
  local all, only = {}, {}
  for _, e in ipairs(def.EXIT) do
    if e.command then
      only[#only + 1] = e.command .. ": " .. e.short:gsub("^(%d+) ", "%1\0")
    else
      all[#all + 1] = e.code .. "\0" .. e.short    -- a status stays with its first word
    end
  end
  local s = "Exit status: " .. concat(all, ", ")
  if #only > 0 then s = s .. "; " .. concat(only, "; ") end
  local words = {}
  for w in (s .. "."):gmatch("%S+") do words[#words + 1] = w end
  return fill(words, 78)     -- (as the hand-wrapped prose keeps to 78 columns)
end

local function common()
  local out = { def.COMMON.title, "\n" }
  option_list(out, def.COMMON.options, def.COMMON.column)
  out[#out + 1] = def.COMMON.browser
  out[#out + 1] = def.COMMON.settle
  out[#out + 1] = exit_line()
  return concat(out)
end

local function main()
  local out = { "Usage: ", def.PROG, " ", def.USAGE, "\n\n", def.ABOUT, "\nCommands:\n" }
  local column = 0
  for _, c in ipairs(def.COMMANDS) do column = math.max(column, #c.brief) end
  for _, c in ipairs(def.COMMANDS) do
    out[#out + 1] = "  " .. c.brief .. rep(" ", column + 1 - #c.brief) .. c.summary .. "\n"
  end
  out[#out + 1] = "\n"
  return concat(out)
end

local function command(c)
  local out = {}
  for i, u in ipairs(c.usage) do
    local first = (i == 1 and "Usage: " or "       ") .. def.PROG .. " "
    -- a line that goes on: under the command's first argument
    local on = "\n" .. rep(" ", #first + #c.name + 1)
    out[#out + 1] = first .. u:gsub("\n", on) .. "\n"
  end
  out[#out + 1] = "\n"
  for _, part in ipairs(c.body or {}) do
    if type(part) == "string" then
      out[#out + 1] = part
    else
      option_list(out, part, part.column)
    end
  end
  out[#out + 1] = "\n"
  return concat(out)
end

-- has(topic) -> true when there is help on that command
function M.has(topic)
  local c = def.command(topic)
  return c ~= nil and not c.builtin
end

-- text(topic?) -> the help on topic (nil: the list of commands), with the
-- common options
function M.text(topic)
  local c = topic and M.has(topic) and def.command(topic)
  return (c and command(c) or main()) .. common()
end

return M
