-- devtools_tools.nvim.pretty: JSON text for people - what the result
-- buffer shows.
--
-- It re-indents the library's own compact JSON (devtools_tools.json decides
-- what is an array and how a value is written; this module never makes
-- that choice again), after turning Element objects into their readable
-- names. It must never change a value: decoding its output gives back what
-- dt.json.encode would have sent. Pure Lua, no Neovim API.

require("devtools_tools.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local json = require "devtools_tools.json"

local getmetatable, setmetatable, type, tostring, next = getmetatable, setmetatable, type, tostring, next
local concat, rep = table.concat, string.rep

local M = {}

local is_element = require("devtools_tools.element").is_element

-- Element objects -> "Element(div#cart)"; copies only the tables that hold one.
local function readable(v, depth)
  if type(v) ~= "table" then return v end
  if is_element(v) then return tostring(v) end
  if depth > 1000 then return v end           -- the encoder reports the depth
  local copy
  for k, x in next, v do
    if type(x) == "table" then
      local y = readable(x, depth + 1)
      if y ~= x then
        if not copy then
          copy = {}
          for k2, x2 in next, v do copy[k2] = x2 end
          setmetatable(copy, getmetatable(v))
        end
        copy[k] = y
      end
    end
  end
  return copy or v
end

-- reindent(text, indent?) -> the same JSON over several lines. text must be
-- compact JSON as dt.json.encode writes it (no whitespace between tokens).
function M.reindent(text, indent)
  indent = indent or "  "
  local out, n, level = {}, 0, 0
  local i, len = 1, #text
  local function push(s) n = n + 1; out[n] = s end
  while i <= len do
    local c = text:sub(i, i)
    if c == '"' then
      local j = i + 1
      while true do
        local q = text:find('["\\]', j)
        if not q then j = len break end
        if text:sub(q, q) == "\\" then j = q + 2 else j = q break end
      end
      push(text:sub(i, j))
      i = j + 1
    elseif c == "{" or c == "[" then
      local close = c == "{" and "}" or "]"
      if text:sub(i + 1, i + 1) == close then
        push(c .. close)
        i = i + 2
      else
        level = level + 1
        push(c .. "\n" .. rep(indent, level))
        i = i + 1
      end
    elseif c == "}" or c == "]" then
      level = level - 1
      push("\n" .. rep(indent, level) .. c)
      i = i + 1
    elseif c == "," then
      push(",\n" .. rep(indent, level))
      i = i + 1
    elseif c == ":" then
      push(": ")
      i = i + 1
    else
      local j = text:find('[%[%]{},:"]', i)
      j = j and j - 1 or len
      push(text:sub(i, j))
      i = j + 1
    end
  end
  return concat(out)
end

-- encode(value) -> pretty JSON text (nil, a JS undefined, shows as null)
function M.encode(value)
  if value == nil then return "null" end
  return M.reindent(json.encode(readable(value, 0)))
end

return M
