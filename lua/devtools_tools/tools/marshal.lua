-- devtools_tools.tools.marshal: tool arguments from Lua to the page and results
-- back. Element objects in arguments become markers the page runtime puts
-- the real elements back into; element references in results become
-- Element objects.
--
-- What it must never do: change the caller's tables (a copy is made where
-- something must differ), or turn page data into an Element unless it
-- carries the key the page runtime chose for this result.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local element = require "devtools_tools.tools.element"
local json = require "devtools_tools.base.json"

local raise = errors.raise
local array_mt = core.array_mt
local Element = element.Element
local type, next, getmetatable, setmetatable = type, next, getmetatable, setmetatable

local M = {}

-- The key of an element marker in encoded arguments. A NUL byte no page
-- puts in a key by accident; the runtime (js/runtime.js) knows it too.
local EL = "\0dt-element"
M.ELEMENT_KEY = EL
-- Deepest nesting walked, in the page (passed to js/ as an argument) and here.
M.MAX_DEPTH = 512

-- check_args(args, who) -> args (a table of named arguments; {} for nil)
function M.check_args(args, who)
  if args == nil then return {} end
  if type(args) ~= "table" or getmetatable(args) == Element then
    raise("bad_argument", who .. ": args must be a table (or nil), got " .. type(args))
  end
  -- (a list as the encoder sees it: json.kind is the one judge of that)
  if json.kind(args) == "array" then
    raise("bad_argument", who .. ": args must be a table of named arguments (a JSON object), not a list")
  end
  return args
end

-- Replaces Element objects in v by markers; copies only the tables on the
-- way to an element.
local function walk_elements(v, els, depth)
  if depth > M.MAX_DEPTH then return v end
  local mt = getmetatable(v)
  if mt == Element then
    els[#els + 1] = v
    return { [EL] = #els - 1 }
  end
  local copy
  for k, x in next, v do
    if type(x) == "table" then
      local y = walk_elements(x, els, depth + 1)
      if y ~= x then
        if not copy then
          copy = {}
          for k2, x2 in next, v do copy[k2] = x2 end
          if mt == array_mt then setmetatable(copy, array_mt) end
        end
        copy[k] = y
      end
    end
  end
  return copy or v
end

-- extract_elements(args) -> wire args, list of Elements (nil when there are
-- none, the common case: no copy)
function M.extract_elements(args)
  for _, x in next, args do
    if type(x) == "table" then          -- only nested tables can hold elements
      local els = {}
      local out = walk_elements(args, els, 0)
      if #els > 0 then return out, els end
      return args, nil
    end
  end
  return args, nil
end

-- replace_elements(v, key, backend, make) -> v with every table holding
-- `key` (the runtime's marker key for this result) replaced by make(index,
-- description), unless that gives nil (the table stays, as data). Tables
-- from the reply are ours to change in place.
local function replace(v, key, make, depth)
  if type(v) ~= "table" or depth > M.MAX_DEPTH + 2 then return v end
  local idx = v[key]
  if idx ~= nil and getmetatable(v) ~= array_mt then
    local el = make(idx, v.description)
    if el ~= nil then return el end
  end
  for k, x in next, v do
    if type(x) == "table" then v[k] = replace(x, key, make, depth + 1) end
  end
  return v
end

function M.replace_elements(v, key, make)
  if type(key) ~= "string" then return v end
  return replace(v, key, make, 0)
end

return M
