-- devtools_tools.cli.complete: what Tab offers in the REPL, from the text
-- before the cursor -
--   .des|                 the REPL's commands; .describe get| tool names
--   getCa|                tool names, the REPL's globals, Lua's
--   tools["odd n|         tool names, quoted
--   getState{pa|          the tool's argument keys (its inputSchema's
--   page:call("getState", {pa|    properties), "path = "
--   getState{path = "c|   the values of that argument's enum
--   page:na|, dt.js|      methods and fields of what the name holds
--
-- It reads only what it is given: the tools of the latest discovery, the
-- REPL's globals (raw, so no __index runs), the methods tables of the
-- objects they hold. It must never wait, call a tool, or offer a name
-- that holds a control character (a page's names are data).

local dt = require "devtools_tools"
local pschema = require "devtools_tools.present.schema"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, ipairs, rawget, getmetatable, tostring, next =
      type, ipairs, rawget, getmetatable, tostring, next
local sort = table.sort
local sub, find, match = string.sub, string.find, string.match

local M = {}

M.COMMANDS = { ".tools", ".describe ", ".record ", ".stop", ".help", ".exit" }

local KEYWORDS = {}
for w in ([[and break do else elseif end false for function goto if in local nil not or
  repeat return then true until while]]):gmatch("%a+") do KEYWORDS[w] = true end

local function is_name(s)
  return type(s) == "string" and find(s, "^[%a_][%w_]*$") ~= nil and not KEYWORDS[s]
end
M.is_name = is_name

local function printable(s)
  return type(s) == "string" and not find(s, "[%z\1-\31\127]")
end

local function starting(list, prefix, out, seen)
  out = out or {}
  seen = seen or {}
  local n = #prefix
  for _, s in ipairs(list) do
    if not seen[s] and sub(s, 1, n) == prefix then
      seen[s] = true
      out[#out + 1] = s
    end
  end
  return out, seen
end

-- A name as a Lua string literal, quoted with q (" or ')
local function quoted(s, q)
  return q .. s:gsub("[\\" .. q .. "]", "\\%0") .. q
end

-- ---- what a line holds ---------------------------------------------------------------------

-- The innermost table constructor still open at the end of s: the byte
-- of its "{", or nil. Strings and comments are skipped.
local function open_brace(s)
  local stack, i, n = {}, 1, #s
  while i <= n do
    local c = sub(s, i, i)
    if c == '"' or c == "'" then
      local j = i + 1
      while j <= n do
        local d = sub(s, j, j)
        if d == "\\" then j = j + 1
        elseif d == c then break end
        j = j + 1
      end
      if j > n then return stack[#stack], true end     -- inside an open string
      i = j
    elseif c == "-" and sub(s, i, i + 1) == "--" then
      return stack[#stack]
    elseif c == "{" then
      stack[#stack + 1] = i
    elseif c == "}" then
      stack[#stack] = nil
    end
    i = i + 1
  end
  return stack[#stack], false
end

-- The tool a table constructor at brace is the arguments of: its name,
-- from getState{ / getState({ / tools["x"]{ / tools.x{ / page:call("x", {
local function callee(s, brace)
  local head = sub(s, 1, brace - 1):gsub("%s+$", "")
  head = head:gsub("%($", ""):gsub("%s+$", "")
  local _, name = match(head, "page:call%(%s*([\"'])(.-)%1%s*,$")
  if name then return name end
  _, name = match(head, "tools%[%s*([\"'])(.-)%1%s*%]$")
  if name then return name end
  name = match(head, "tools%.([%a_][%w_]*)$")
  if name then return name end
  name = match(head, "([%a_][%w_]*)$")
  if name and not match(head, "[%.:][%a_][%w_]*$") then return name end
  return nil
end

-- The keys already given at depth one of the constructor (text after {).
local function used_keys(body)
  local used, depth, i, n = {}, 0, 1, #body
  local at_start = true
  while i <= n do
    local c = sub(body, i, i)
    if c == "{" then depth = depth + 1
    elseif c == "}" then depth = depth - 1
    elseif c == '"' or c == "'" then
      local j = i + 1
      while j <= n and sub(body, j, j) ~= c do
        if sub(body, j, j) == "\\" then j = j + 1 end
        j = j + 1
      end
      i = j
    elseif c == "," and depth == 0 then at_start = true
    elseif depth == 0 and at_start and c:match("[%a_]") then
      local k = match(body, "^([%a_][%w_]*)%s*=", i)
      if k then used[k] = true end
      at_start = false
    end
    i = i + 1
  end
  return used
end

-- ---- the completer -------------------------------------------------------------------------

-- new(ctx) -> complete(line, pos) -> start, choices. ctx: tools() (the
-- latest Tools, a list), env (the REPL's globals), globals (Lua's, _G).
function M.new(ctx)
  local function tool_list() return ctx.tools() or {} end

  local function tool_named(name)
    for _, t in ipairs(tool_list()) do
      if t.name == name then return t end
    end
  end

  local function tool_names(filter)
    local out, seen = {}, {}
    for _, t in ipairs(tool_list()) do
      local nm = t.name
      if printable(nm) and not seen[nm] and (not filter or filter(nm)) then
        seen[nm] = true
        out[#out + 1] = nm
      end
    end
    sort(out)
    return out
  end

  -- the argument keys and enum values of a tool's schema
  local function params(tool)
    local root = tool.input_schema
    local b = pschema.budget({ seconds = 0.01, nodes = 5000 })
    return pschema.params(root, nil, "all", b), root, b
  end

  local function arg_choices(tool, seg)
    -- after key = "partial: the enum's values
    local key, q, partial = match(seg, "^%s*([%a_][%w_]*)%s*=%s*([\"']?)([^\"']*)$")
    if key then
      local ps, root, b = params(tool)
      for _, p in ipairs(ps) do
        if p.name == key then
          local s = pschema.settle(root, p.schema, b)
          local enum = type(s) == "table" and rawget(s, "enum")
          if type(enum) ~= "table" then return nil end
          local out = {}
          for _, v in ipairs(enum) do
            if type(v) == "string" and printable(v) then
              out[#out + 1] = quoted(v, q ~= "" and q or '"')
            elseif (type(v) == "number" or type(v) == "boolean") and q == "" then
              out[#out + 1] = tostring(v)
            end
          end
          local from = #seg - #partial - #q + 1
          local typed = q .. partial
          return from, starting(out, typed)
        end
      end
      return nil
    end
    local word = match(seg, "^%s*([%a_][%w_]*)$") or (match(seg, "^%s*$") and "")
    if not word then return nil end
    local ps = params(tool)
    local names = {}
    for _, p in ipairs(ps) do
      if is_name(p.name) and printable(p.name) then names[#names + 1] = p.name .. " = " end
    end
    return #seg - #word + 1, starting(names, word)
  end

  -- the fields and methods of what an expression (a.b.c) holds
  local function members(expr, sep)
    local v = rawget(ctx.env, (match(expr, "^([%a_][%w_]*)")))
    if v == nil then v = rawget(ctx.globals, (match(expr, "^([%a_][%w_]*)"))) end
    for part in expr:gmatch("%.([%a_][%w_]*)") do
      if type(v) ~= "table" then return {} end
      v = rawget(v, part)
    end
    if expr == "tools" and sep == "." then
      return tool_names(is_name)
    end
    local out, seen = {}, {}
    local function add(t, only_functions)
      if type(t) ~= "table" then return end
      for k, x in next, t do
        if is_name(k) and sub(k, 1, 1) ~= "_" and not seen[k]
            and (not only_functions or type(x) == "function") then
          seen[k] = true
          out[#out + 1] = k
        end
      end
    end
    if type(v) == "table" and (getmetatable(v) == nil or sep == ".") then add(v, sep == ":") end
    local mt = getmetatable(v)
    if type(mt) == "table" then add(rawget(mt, "__index"), sep == ":") end
    sort(out)
    return out
  end

  return function(line, pos)
    local s = sub(line, 1, pos)
    -- the REPL's commands
    if find(s, "^%.[%a]*$") then return 1, starting(M.COMMANDS, s) end
    local d = match(s, "^%.describe%s+(%S*)$")
    if d then return pos - #d + 1, starting(tool_names(), d) end
    if find(s, "^%.") then return nil end
    -- tools["odd n
    local q, partial = match(s, "tools%[%s*([\"'])([^\"']*)$")
    if q then
      local out = {}
      for _, nm in ipairs(tool_names()) do out[#out + 1] = quoted(nm, q) .. "]" end
      return pos - #partial, starting(out, q .. partial)
    end
    -- inside a tool's arguments
    local brace, in_string = open_brace(s)
    if brace then
      local name = callee(s, brace)
      local tool = name and tool_named(name)
      if tool then
        local body = sub(s, brace + 1)
        local seg = match(body, "[^,]*$")
        if not in_string or match(seg, "=%s*[\"'][^\"']*$") then
          local from, choices = arg_choices(tool, seg)
          if from then
            if not match(seg, "=") then
              local used = used_keys(body)
              local keep = {}
              for _, c in ipairs(choices) do
                if not used[match(c, "^([%w_]+)")] then keep[#keep + 1] = c end
              end
              choices = keep
            end
            return pos - #seg + from, choices
          end
        end
      end
      if in_string then return nil end
    end
    -- page:na / dt.js
    local expr, sep, word = match(s, "([%a_][%w_]*[%w_%.]*)([%.:])([%a_]*[%w_]*)$")
    if expr and not find(expr, "%.%.") then
      return pos - #word + 1, starting(members(expr, sep), word)
    end
    -- a name: the tools, the REPL's globals, Lua's
    word = match(s, "([%a_][%w_]*)$")
    if word then
      local before = sub(s, 1, pos - #word)
      if match(before, "[%.:]$") then return nil end
      local out, seen = starting(tool_names(is_name), word)
      local names = {}
      for k in next, ctx.env do if is_name(k) then names[#names + 1] = k end end
      for k in next, ctx.globals do if is_name(k) and sub(k, 1, 1) ~= "_" then names[#names + 1] = k end end
      sort(names)
      starting(names, word, out, seen)
      return pos - #word + 1, out
    end
    return nil
  end
end


return M
