-- devtools_tools.schema.check: the closure engine.
--
-- Makes one closure per compiled node: the type, then a list of checks for
-- the value's kind (each simple keyword is a small closure, the others come
-- from schema/keywords.lua), then the checks for any value. It is the
-- plain reading of the compiled graph, kept as the reference the generated
-- engine (schema/generate.lua) is compared with: both must give the same
-- verdicts and the same errors. Every failure goes through context.fail.
--
-- It must never keep state outside the validator's run state and the
-- caller's error context.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local context = require "devtools_tools.schema.context"
local values = require "devtools_tools.schema.values"
local keywords = require "devtools_tools.schema.keywords"
local compile = require "devtools_tools.schema.compile"

local type, ipairs, next, getmetatable = type, ipairs, next, getmetatable

local null = require("devtools_tools.core").null
local fail = context.fail
local kind, ulen, key_string, raw_view = values.kind, values.ulen, values.key_string, values.raw_view
local numeric_keys = values.numeric_keys
local child, TRUE = keywords.child, keywords.TRUE
local resolved = compile.resolved

local M = {}

-- The simplest keywords: test(v, limit) is true when v passes.
local SIMPLE = {
  maxLength = function(v, m) return not (#v > m and ulen(v) > m) end,
  minLength = function(v, m) return not (#v < m or (#v < 4 * m and ulen(v) < m)) end,
  pattern = function(v, rx) return rx:test(v) end,
  -- (v + 0.0: a Lua 5.4 integer past 2^53 as the page parses it, see values.as_sent)
  maximum = function(v, b) return v + 0.0 <= b end,
  exclusiveMaximum = function(v, b) return v + 0.0 < b end,
  minimum = function(v, b) return v + 0.0 >= b end,
  exclusiveMinimum = function(v, b) return v + 0.0 > b end,
  maxItems = function(v, m) return #v <= m end,
  minItems = function(v, m) return #v >= m end,
}
-- in the order their errors come out
local STR = { "maxLength", "minLength", "pattern" }
local NUM = { "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum" }
local ARR = { "maxItems", "minItems" }

local function simple(name, rec)
  local test, b, msg, loc = SIMPLE[name], rec[1], rec[2], rec[3]
  return function(v, cx)
    if test(v, b) then return true end
    return fail(cx, name, msg, loc, v)
  end
end

local function required(rec)
  local names, msgs, loc = rec[1], rec[2], rec[3]
  local nums = numeric_keys(names) or {}      -- see values.numeric_key
  return function(v, cx)
    local ok = true
    for i = 1, #names do
      if v[names[i]] == nil and (not nums[i] or v[nums[i]] == nil) then
        if not cx then return false end
        ok = fail(cx, "required", msgs[i], loc, v, names[i])
      end
    end
    return ok
  end
end

local function properties(rec, fn)
  local keys, fns = rec.keys, {}
  local nums = numeric_keys(keys) or {}
  for i, node in ipairs(rec.nodes) do fns[i] = fn(node) end
  return function(v, cx)
    local ok = true
    for i = 1, #keys do
      local pv = v[keys[i]]
      if pv == nil and nums[i] then pv = v[nums[i]] end
      if pv ~= nil and not child(fns[i], keys[i], pv, cx) then
        if not cx then return false end
        ok = false
      end
    end
    return ok
  end
end

-- properties and additionalProperties in one pass over the value's keys
local function merged(rec, fn)
  local map = {}
  for k, node in next, rec.map do map[k] = fn(node) end
  local addno, addf, msg, loc = rec.addno, rec.addnode and fn(rec.addnode), rec.msg, rec.loc
  return function(v, cx)
    local ok = true
    for k, pv in next, v do
      if type(k) ~= "string" then k = key_string(k) end
      local f = map[k] or addf
      if f then
        if not child(f, k, pv, cx) then
          if not cx then return false end
          ok = false
        end
      elseif addno then
        if not cx then return false end
        ok = fail(cx, "additionalProperties", msg, loc, pv, k)
      end
    end
    return ok
  end
end

local function items(node, fn)
  local f = fn(node)
  return function(v, cx)
    local ok = true
    for i = 1, #v do
      if not child(f, i - 1, v[i], cx) then
        if not cx then return false end
        ok = false
      end
    end
    return ok
  end
end

local function append(list, more)
  for _, f in ipairs(more) do list[#list + 1] = f end
  return list
end

local function node_check(n, fn, rs)
  local str, num, arr, obj, any = {}, {}, {}, {}, {}
  for _, name in ipairs(STR) do if n[name] then str[#str + 1] = simple(name, n[name]) end end
  for _, name in ipairs(NUM) do if n[name] then num[#num + 1] = simple(name, n[name]) end end
  for _, name in ipairs(ARR) do if n[name] then arr[#arr + 1] = simple(name, n[name]) end end
  if n.items then arr[#arr + 1] = items(n.items, fn) end
  if n.required then obj[#obj + 1] = required(n.required) end
  if n.props then obj[#obj + 1] = properties(n.props, fn) end
  if n.merged then obj[#obj + 1] = merged(n.merged, fn) end
  for kind_list, recs in next, { [str] = n.str, [num] = n.num, [arr] = n.arr, [obj] = n.obj,
                                 [any] = n.any } do
    for _, rec in ipairs(recs) do kind_list[#kind_list + 1] = keywords.build(rec, fn, rs) end
  end
  -- one list per kind of value, the checks for any value last
  local both = append(append(append({}, obj), arr), any)
  str, num = append(str, any), append(num, any)
  obj, arr = append(obj, any), append(arr, any)
  local tm, tmsg, tloc = n.tmask, n.tmsg, n.tloc

  return function(v, cx)
    if cx and cx.full then cx = nil end
    local tv, list, tok = type(v), any, true
    if tv == "string" then
      list, tok = str, not tm or tm.string
    elseif tv == "number" then
      list, tok = num, not tm or tm.number or (tm.integer and v % 1 == 0)
    elseif tv == "table" then
      if getmetatable(v) ~= nil then v = raw_view(v) end   -- checked as the encoder reads it
      local k = kind(v)
      if k == "object" then
        list, tok = obj, not tm or tm.object
      elseif k == "array" then
        list, tok = arr, not tm or tm.array
      elseif k == "empty" then
        list, tok = both, not tm or tm.object or tm.array
      else                              -- an Element: an object to the page
        tok = not tm or tm.object
      end
    elseif tm then
      tok = (tv == "boolean" and tm.boolean) or (v == null and tm.null)
    end
    local ok = true
    if not tok then
      if not cx then return false end
      ok = fail(cx, "type", tmsg, tloc, v)
    end
    for i = 1, #list do
      if not list[i](v, cx) then
        if not cx then return false end
        ok = false
      end
    end
    return ok
  end
end

-- build(root, rs) -> check(v, cx?), fn for the compiled graph at root,
-- with the validator's run state rs; fn(node) is the check of any node.
function M.build(root, rs)
  local fns, building = {}, {}
  local function fn(node)
    node = resolved(node)
    if node == compile.TRUE or node.trivial then return TRUE end
    local f = fns[node]
    if f then return f end
    if node.kind ~= "node" then
      f = keywords.leaf(node)
      fns[node] = f
      return f
    end
    local slot = building[node]
    if slot then return function(v, cx) return slot.f(v, cx) end end
    slot = {}
    building[node] = slot
    f = node_check(node, fn, rs)
    if node.cyclic then f = keywords.counted(f, node, rs) end
    if node.shared then f = keywords.memoised(f, node, rs) end
    slot.f = f
    building[node] = nil
    fns[node] = f
    return f
  end
  return fn(root), fn
end

return M
