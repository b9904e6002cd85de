-- devtools_tools.schema.keywords: the run-time side both engines share.
--
-- The keywords that are not worth writing inline (enum, const, multipleOf,
-- format, tuple items, contains, uniqueItems, patternProperties,
-- propertyNames, dependencies, min/maxProperties, allOf, anyOf, oneOf, not,
-- if) become closures here, from a compiled node's records; so do the leaf
-- nodes (false, x-mcp-type HTMLElement) and the wrappers that keep a
-- validation bounded (memo for shared nodes, depth count for cyclic ones).
--
-- Every check has the form f(v, cx): cx nil asks only "valid?" (the first
-- failure returns false), an error context collects every error through
-- context.fail. A child is called through `child` (its function comes from
-- the engine that builds us: closures or generated code).
--
-- What it must never do: hold state of its own (the run state `rs`
-- belongs to the validator), change the value it checks, or run past the
-- deadline the run state carries.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local context = require "devtools_tools.schema.context"
local values = require "devtools_tools.schema.values"

local type, next, ipairs = type, next, ipairs
local concat = table.concat
local null = require("devtools_tools.core").null

local fail, at, tick = context.fail, context.at, context.tick
local deep_equal, multiple_of, key_string, is_element =
      values.deep_equal, values.multiple_of, values.key_string, values.is_element
local numeric_key, numeric_keys = values.numeric_key, values.numeric_keys
local as_sent = values.as_sent

local M = {}

local function TRUE() return true end
M.TRUE = TRUE

-- Calls f on the value under key (0-based index or string): the path grows
-- only while collecting. A hole in an array is null, as it is sent.
local function child(f, key, x, cx)
  if x == nil then x = null end
  if cx then return at(f, key, x, cx) end
  return f(x)
end
M.child = child

local B = {}    -- keyword name -> builder(rec, fn, rs) -> check

function B.enum(r)
  local set, tables, nt, msg, loc, allowed = r.set, r.tables, r.nt, r.msg, r.loc, r.allowed
  return function(v, cx)
    if set[v] or set[as_sent(v)] then return true end
    if nt > 0 and type(v) == "table" then
      for i = 1, nt do
        if deep_equal(v, tables[i]) then return true end
      end
    end
    return fail(cx, "enum", msg, loc, v, nil, allowed)
  end
end

function B.const(r)
  local k, msg, loc, allowed = r.value, r.msg, r.loc, r.allowed
  return function(v, cx)
    if v == k or deep_equal(v, k) then return true end
    return fail(cx, "const", msg, loc, v, nil, allowed)
  end
end

function B.multipleOf(r)
  local m, msg, loc = r.m, r.msg, r.loc
  return function(v, cx)
    if multiple_of(v, m) then return true end
    return fail(cx, "multipleOf", msg, loc, v)
  end
end

function B.format(r)
  local f, msg, loc = r.f, r.msg, r.loc
  return function(v, cx)
    if f(v) then return true end
    return fail(cx, "format", msg, loc, v)
  end
end

function B.tuple(r, fn)
  local n, fns = r.n, {}
  for i = 1, n do fns[i] = fn(r.nodes[i]) end
  local addf = r.addnode and fn(r.addnode)
  local addmsg, aloc = r.addmsg, r.aloc
  return function(v, cx)
    local len, ok = #v, true
    for i = 1, len < n and len or n do
      if not child(fns[i], i - 1, v[i], cx) then
        if not cx then return false end
        ok = false
      end
    end
    if len > n then
      if addmsg then return fail(cx, "additionalItems", addmsg, aloc, v) end
      if addf then
        for i = n + 1, len do
          if not child(addf, i - 1, v[i], cx) then
            if not cx then return false end
            ok = false
          end
        end
      end
    end
    return ok
  end
end

function B.contains(r, fn)
  local f, msg, loc = fn(r.node), r.msg, r.loc
  return function(v, cx)
    for i = 1, #v do
      local x = v[i]
      if x == nil then x = null end
      if f(x) then return true end
    end
    return fail(cx, "contains", msg, loc, v)
  end
end

local function count_keys(v)
  local n = 0
  for _ in next, v do n = n + 1 end
  return n
end

local function count_limit(r)
  local lim, more, msg, loc, kw = r.lim, r.more, r.msg, r.loc, r.kw
  return function(v, cx)
    local n = count_keys(v)
    if more then
      if n <= lim then return true end
    elseif n >= lim then
      return true
    end
    return fail(cx, kw, msg, loc, v)
  end
end
B.maxProperties, B.minProperties = count_limit, count_limit

-- The first duplicate: i, j (1-based, j < i) or nil. Tables are compared
-- pairwise (quadratic: 5,000 of them took 16 s), so each comparison is a
-- step of the run state, which watches the call's deadline.
local function duplicate(v, rs)
  local n = #v
  if n <= 32 then                   -- small: pairwise, nothing allocated
    for i = 2, n do
      local x = v[i]
      for j = 1, i - 1 do
        if deep_equal(x, v[j]) then return i, j end
      end
    end
    return nil
  end
  local seen, tables = {}, {}
  for i = 1, n do
    local x = v[i]
    local j
    if x == nil then x = null end     -- a hole is sent as null
    if x ~= x then                    -- NaN equals nothing (and is refused when sent)
    elseif type(x) == "table" then
      for t = 1, #tables do
        tick(rs)
        if deep_equal(x, v[tables[t]]) then j = tables[t]; break end
      end
      tables[#tables + 1] = i
    else
      x = as_sent(x)
      j = seen[x]
      seen[x] = seen[x] or i
    end
    if j then return i, j end
  end
  return nil
end

function B.uniqueItems(r, _, rs)
  local loc = r.loc
  return function(v, cx)
    if #v < 2 then return true end
    local i, j = duplicate(v, rs)
    if not i then return true end
    return fail(cx, "uniqueItems", "must NOT have duplicate items (items ## " ..
                (i - 1) .. " and " .. (j - 1) .. " are identical)", loc, v)
  end
end

function B.patternProperties(r, fn)
  local set, rxs, np, addno, msg, aloc = r.set, r.rxs, r.n, r.addno, r.msg, r.aloc
  local tests, fns = {}, {}
  for j = 1, np do tests[j], fns[j] = rxs[j].test, fn(r.nodes[j]) end
  local addf = r.addnode and fn(r.addnode)
  return function(v, cx)
    local ok = true
    for k, pv in next, v do
      if type(k) ~= "string" then k = key_string(k) end
      local matched = set[k]
      for j = 1, np do
        if tests[j](rxs[j], k) then
          matched = true
          if not child(fns[j], k, pv, cx) then
            if not cx then return false end
            ok = false
          end
        end
      end
      if not matched then
        if addno then
          if not cx then return false end
          ok = fail(cx, "additionalProperties", msg, aloc, pv, k)
        elseif addf and not child(addf, k, pv, cx) then
          if not cx then return false end
          ok = false
        end
      end
    end
    return ok
  end
end

function B.propertyNames(r, fn)
  local f, loc = fn(r.node), r.loc
  return function(v, cx)
    local ok = true
    for k in next, v do
      if type(k) ~= "string" then k = key_string(k) end
      if not f(k) then
        if not cx then return false end
        local sub = context.new(10)
        f(k, sub)
        local msgs = {}
        for i = 1, #sub.errs do msgs[i] = sub.errs[i].message end
        ok = fail(cx, "propertyNames", "property name '" .. k .. "' is invalid: " ..
                  concat(msgs, "; "), loc, k, k)
      end
    end
    return ok
  end
end

function B.dependencies(r, fn)
  local list = {}
  for i, d in ipairs(r.list) do
    list[i] = { key = d.key, names = d.names, msgs = d.msgs, loc = d.loc, f = d.node and fn(d.node),
      nkey = numeric_key(d.key), nums = d.names and numeric_keys(d.names) or {} }
  end
  return function(v, cx)
    local ok = true
    for i = 1, #list do
      local d = list[i]
      if v[d.key] ~= nil or (d.nkey and v[d.nkey] ~= nil) then
        if d.f then
          if not d.f(v, cx) then
            if not cx then return false end
            ok = false
          end
        else
          local names, nums = d.names, d.nums
          for j = 1, #names do
            if v[names[j]] == nil and (not nums[j] or v[nums[j]] == nil) then
              if not cx then return false end
              ok = fail(cx, "dependencies", d.msgs[j], d.loc, v, names[j])
            end
          end
        end
      end
    end
    return ok
  end
end

local function fns_of(nodes, fn)
  local fns = {}
  for i = 1, #nodes do fns[i] = fn(nodes[i]) end
  return fns, #nodes
end

function B.allOf(r, fn)
  local fns, n = fns_of(r.nodes, fn)
  return function(v, cx)
    local ok = true
    for i = 1, n do
      if not fns[i](v, cx) then
        if not cx then return false end
        ok = false
      end
    end
    return ok
  end
end

function B.anyOf(r, fn)
  local fns, n = fns_of(r.nodes, fn)
  local msg, loc = r.msg, r.loc
  return function(v, cx)
    for i = 1, n do
      if fns[i](v) then return true end
    end
    if cx then
      for i = 1, n do fns[i](v, cx) end
    end
    return fail(cx, "anyOf", msg, loc, v)
  end
end

function B.oneOf(r, fn)
  local fns, n = fns_of(r.nodes, fn)
  local msg, loc = r.msg, r.loc
  return function(v, cx)
    local count = 0
    for i = 1, n do
      if fns[i](v) then
        count = count + 1
        if count > 1 then break end
      end
    end
    if count == 1 then return true end
    if cx and count == 0 then
      for i = 1, n do fns[i](v, cx) end
    end
    return fail(cx, "oneOf", msg, loc, v)
  end
end

B["not"] = function(r, fn)
  local f, msg, loc = fn(r.node), r.msg, r.loc
  return function(v, cx)
    if not f(v) then return true end
    return fail(cx, "not", msg, loc, v)
  end
end

B["if"] = function(r, fn)
  local iff = fn(r.cond)
  local thenf = r["then"] and fn(r["then"])
  local elsef = r["else"] and fn(r["else"])
  local ploc = r.ploc
  return function(v, cx)
    local f, which = elsef, "else"
    if iff(v) then f, which = thenf, "then" end
    if not f or f(v) then return true end
    if cx then f(v, cx) end
    return fail(cx, "if", 'must match "' .. which .. '" schema', ploc .. "/" .. which, v)
  end
end

-- build(rec, fn, rs) -> check for a keyword record of a node; fn(node)
-- gives the engine's check for a child node.
function M.build(rec, fn, rs)
  return B[rec.kw](rec, fn, rs)
end

-- The check of a leaf node: "false" or "element".
function M.leaf(node)
  local loc = node.loc
  if node.kind == "false" then
    return function(v, cx) return fail(cx, "false schema", "boolean schema is false", loc, v) end
  end
  local msg = "must be an element reference (an Element a tool returned)"
  return function(v, cx)
    if is_element(v) then return true end
    return fail(cx, "x-mcp-type", msg, loc, v)
  end
end

-- A shared node's check, with its verdict memoised per value for the call
-- (rs.memo is reset by each call). While collecting, a value known to be
-- valid has nothing to report; an invalid one is collected again (the cap
-- on errors bounds that).
function M.memoised(f, node, rs)
  return function(v, cx)
    if v == nil or v ~= v then return f(v, cx) end
    tick(rs)
    local memo = rs.memo
    if not memo then memo = {}; rs.memo = memo end
    local m = memo[node]
    if not m then m = {}; memo[node] = m end
    local r = m[v]
    if cx == nil or cx.full then
      if r == nil then
        r = f(v)
        m[v] = r
      end
      return r
    end
    if r == true then return true end
    return f(v, cx)
  end
end

-- A cyclic node's check: counts nesting, so that a cyclic Lua value (or a
-- cycle compile could not see) raises instead of overflowing the stack.
function M.counted(f, node, rs)
  local max, loc = context.MAX_DEPTH, node.loc
  return function(v, cx)
    local d = rs.depth + 1
    if d > max then context.too_deep(rs, loc) end
    rs.depth = d
    tick(rs)
    local ok = f(v, cx)
    rs.depth = d - 1
    return ok
  end
end

M.is_element = is_element

return M
