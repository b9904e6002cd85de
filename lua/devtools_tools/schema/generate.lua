-- devtools_tools.schema.generate: the generated engine.
--
-- Writes the compiled graph out as Lua source (as ajv writes JavaScript)
-- and loads it. Each node that is called rather than inlined gets two
-- functions: R[j](v), the fast "valid?" with the type dispatch, the simple
-- keywords and small child schemas inlined as straight-line code; and
-- C[j](v, cx), which collects the errors in the same order as the closure
-- engine (schema/check.lua), through context.fail. The rarer keywords are
-- called as closures from schema/keywords.lua, built on the generated
-- functions of their children. F[j] and FC[j] are R[j] and C[j] with the
-- bounding wrappers (memo for shared nodes, depth count for cyclic ones).
--
-- It must never run page-provided text as code: names and patterns become
-- string literals (%q) or constants, never source.

local nojit = require "devtools_tools.base.nojit"
nojit()                                 -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local context = require "devtools_tools.schema.context"
local values = require "devtools_tools.schema.values"
local numeric_keys = values.numeric_keys
local keywords = require "devtools_tools.schema.keywords"
local compile = require "devtools_tools.schema.compile"

local type, pairs, ipairs, next, setmetatable, getmetatable =
      type, pairs, ipairs, next, setmetatable, getmetatable
local concat, sort = table.concat, table.sort
local sformat = string.format
local huge = math.huge
local math_type = math.type  -- (nil on LuaJIT: every number is a double)

local core = require "devtools_tools.core"
local null, array_mt = core.null, core.array_mt
local resolved, TRUE_NODE, TYPES = compile.resolved, compile.TRUE, compile.TYPES

local load = loadstring or load

local M = {}

local MAX_LINES = 2000       -- past this, children are called, not inlined
local MAX_INLINE = 6         -- nesting depth of inlined schemas
local PROPS_CHUNK = 64       -- properties per generated function (LuaJIT
                             -- limits the length of a jump)

local function lit(x)        -- a number or string as Lua source, read back as the same value
  if type(x) == "string" then return (sformat("%q", x):gsub("\n", "n")) end
  if x ~= x then return "(0/0)" end
  if x == huge then return "(1/0)" end
  if x == -huge then return "(-1/0)" end
  -- an integer of Lua 5.3+ whole (%.17g would round one past 2^53)
  if math_type and math_type(x) == "integer" then return sformat("%d", x) end
  if x % 1 == 0 and x > -2 ^ 53 and x < 2 ^ 53 then return sformat("%d", x) end
  return sformat("%.17g", x)
end

local function trivial(node)
  return node == TRUE_NODE or node.trivial
end

local Gen = {}
Gen.__index = Gen

function Gen:k(x)            -- a constant (table, userdata, string)
  local id = self.kmap[x]
  if not id then
    id = #self.consts + 1
    self.consts[id] = x
    self.kmap[x] = id
  end
  return "K[" .. id .. "]"
end

function Gen:emit(line)
  self.n = self.n + 1
  self.lines[self.n] = line
end

function Gen:var(prefix)
  self.nvar = self.nvar + 1
  return prefix .. self.nvar
end

-- The index j of a node's functions (F[j], FC[j]), queued for writing.
function Gen:fn_for(node)
  local j = self.index[node]
  if j then return j end
  j = #self.queue + 1
  self.index[node] = j
  self.queue[j] = node
  return j
end

-- A keyword record called as a closure: KW[i], built after loading. Its
-- child nodes get functions of their own.
function Gen:kw(rec)
  local i = self.kwmap[rec]
  if i then return "KW[" .. i .. "]" end
  i = #self.kws + 1
  self.kws[i] = rec
  self.kwmap[rec] = i
  local function need(node)
    if node and not trivial(resolved(node)) then self:fn_for(resolved(node)) end
  end
  need(rec.node); need(rec.addnode); need(rec.cond); need(rec["then"]); need(rec["else"])
  for _, n in ipairs(rec.nodes or {}) do need(n) end
  for _, d in ipairs(rec.list or {}) do need(d.node) end
  return "KW[" .. i .. "]"
end

------------------------------------------------------------ fast code

-- Emits statements that `return false` unless value x passes node.
function Gen:check(node, x, nest)
  node = resolved(node)
  if trivial(node) then return end
  if node.kind ~= "node" or node.shared or node.cyclic
     or nest > MAX_INLINE or self.n > MAX_LINES then
    self:emit("if not F[" .. self:fn_for(node) .. "](" .. x .. ") then return false end")
    return
  end
  self:emit("do")
  self:node(node, x, nest)
  self:emit("end")
end

function Gen:recs(list, x)
  for _, rec in ipairs(list) do
    self:emit("if not " .. self:kw(rec) .. "(" .. x .. ") then return false end")
  end
end

function Gen:strings(n, x)
  if n.maxLength then
    local m = lit(n.maxLength[1])
    self:emit("if #" .. x .. " > " .. m .. " and ulen(" .. x .. ") > " .. m .. " then return false end")
  end
  if n.minLength then
    local m = lit(n.minLength[1])
    self:emit("if #" .. x .. " < " .. m .. " or (#" .. x .. " < 4 * " .. m ..
              " and ulen(" .. x .. ") < " .. m .. ") then return false end")
  end
  if n.pattern then
    local r = n.pattern[1]
    self:emit("if not " .. self:k(r.test) .. "(" .. self:k(r) .. ", " .. x .. ") then return false end")
  end
  self:recs(n.str, x)
end

local NUM_OPS = { { "maximum", "<=" }, { "exclusiveMaximum", "<" },
                  { "minimum", ">=" }, { "exclusiveMinimum", ">" } }

function Gen:numbers(n, x)
  for _, op in ipairs(NUM_OPS) do
    if n[op[1]] then
      -- (x + 0.0: a Lua 5.4 integer past 2^53 as the page parses it, see values.as_sent)
      self:emit("if not (" .. x .. " + 0.0 " .. op[2] .. " " .. lit(n[op[1]][1]) .. ") then return false end")
    end
  end
  self:recs(n.num, x)
end

function Gen:tables(n, x, nest)
  local tm = n.tmask
  local m, o, a, e = self:var("m"), self:var("o"), self:var("a"), self:var("e")
  self:emit("local " .. m .. " = getmetatable(" .. x .. ")")
  self:emit("local " .. o .. ", " .. a .. ", " .. e)
  -- the common case without a call: a plain table without key 1 is not
  -- an array to the encoder (json_kind says "object", or "empty" when it
  -- has no keys at all); any other table is asked (values.kind)
  self:emit("if " .. m .. " == nil and " .. x .. "[1] == nil then " .. o .. " = true")
  if n.has_arr or (tm and not tm.object) then
    self:emit(a .. " = next(" .. x .. ") == nil")
  end
  self:emit("elseif " .. m .. " == array_mt then " .. a .. " = true")
  self:emit("else")
  -- a metatable of the caller's own: checked as the raw table the encoder sends
  self:emit(x .. " = raw_view(" .. x .. ")")
  local k = self:var("k")
  self:emit("local " .. k .. " = kind(" .. x .. ")")
  self:emit(o .. ", " .. a .. ", " .. e .. " = " .. k .. ' == "object" or ' .. k .. ' == "empty", ' ..
            k .. ' == "array" or ' .. k .. ' == "empty", ' .. k .. ' == "element"')
  self:emit("end")
  if tm then
    local conds = {}
    if tm.object then conds[#conds + 1] = o; conds[#conds + 1] = e end
    if tm.array then conds[#conds + 1] = a end
    self:emit("if not (" .. concat(conds, " or ") .. ") then return false end")
  end
  if n.has_obj then
    self:emit("if " .. o .. " then")
    self:object(n, x, nest)
    self:emit("end")
  end
  if n.has_arr then
    self:emit("if " .. a .. " then")
    self:array(n, x, nest)
    self:emit("end")
  end
end

function Gen:node(n, x, nest)
  local tm = n.tmask
  local single
  if tm then
    local count = 0
    for name in pairs(TYPES) do
      if tm[name] then count = count + 1; single = name end
    end
    if count == 2 and tm.integer and tm.number then count, single = 1, "number" end
    if count == 2 and tm.object and tm.array then count, single = 1, "table" end
    if single == "object" or single == "array" then single = "table" end
    if single == "integer" then single = "number" end
    if count ~= 1 then single = nil end
  end
  if single then                        -- one type: no dispatch needed
    if single == "boolean" then
      self:emit("if " .. x .. " ~= true and " .. x .. " ~= false then return false end")
    elseif single == "null" then
      self:emit("if " .. x .. " ~= null then return false end")
    else
      self:emit("if type(" .. x .. ') ~= "' .. single .. '" then return false end')
      if single == "string" then
        self:strings(n, x)
      elseif single == "number" then
        if not tm.number then self:emit("if " .. x .. " % 1 ~= 0 then return false end") end
        self:numbers(n, x)
      else
        self:tables(n, x, nest)
      end
    end
    self:recs(n.any, x)
    return
  end
  local t = self:var("t")
  self:emit("local " .. t .. " = type(" .. x .. ")")
  local branch = "if"
  if n.has_str or tm then
    self:emit(branch .. " " .. t .. ' == "string" then')
    branch = "elseif"
    if tm and not tm.string then self:emit("return false") else self:strings(n, x) end
  end
  if n.has_num or tm then
    self:emit(branch .. " " .. t .. ' == "number" then')
    branch = "elseif"
    if tm and not tm.number then
      if tm.integer then
        self:emit("if " .. x .. " % 1 ~= 0 then return false end")
      else
        self:emit("return false")
      end
    end
    if not tm or tm.number or tm.integer then self:numbers(n, x) end
  end
  if n.has_obj or n.has_arr or tm then
    self:emit(branch .. " " .. t .. ' == "table" then')
    branch = "elseif"
    if tm and not tm.object and not tm.array then
      self:emit("return false")
    else
      self:tables(n, x, nest)
    end
  end
  -- booleans, null, and values that are not JSON
  if tm then
    local conds = {}
    if tm.boolean then conds[#conds + 1] = t .. ' == "boolean"' end
    if tm.null then conds[#conds + 1] = x .. " == null" end
    self:emit(branch == "if" and "do" or "else")
    if #conds == 0 then
      self:emit("return false")
    else
      self:emit("if not (" .. concat(conds, " or ") .. ") then return false end")
    end
    self:emit("end")
  elseif branch ~= "if" then
    self:emit("end")
  end
  self:recs(n.any, x)
end

-- The value of merged.map as constants: name -> j, or true for no check.
function Gen:jmap(map)
  local jm = self.jmaps[map]
  if jm then return jm end
  jm = {}
  for name, node in next, map do
    node = resolved(node)
    jm[name] = trivial(node) or self:fn_for(node)
  end
  self.jmaps[map] = jm
  return jm
end

function Gen:object(n, x, nest)
  if n.required then
    local names = n.required[1]
    local nums = numeric_keys(names)      -- names also found under a number (values.numeric_key)
    if #names <= PROPS_CHUNK then
      for i = 1, #names do
        self:emit("if " .. x .. "[" .. lit(names[i]) .. "] == nil" ..
                  (nums and nums[i] and (" and " .. x .. "[" .. lit(nums[i]) .. "] == nil") or "") ..
                  " then return false end")
      end
    else                                -- many: a loop keeps the jumps short
      local i, names_k = self:var("i"), self:k(names)
      self:emit("for " .. i .. " = 1, " .. #names .. " do if " .. x .. "[" .. names_k .. "[" .. i ..
                "]] == nil" .. (nums and (" and (not " .. self:k(nums) .. "[" .. i .. "] or " .. x ..
                "[" .. self:k(nums) .. "[" .. i .. "]] == nil)") or "") .. " then return false end end")
    end
  end
  if n.props then
    local keys, nodes = n.props.keys, n.props.nodes
    local nums = numeric_keys(keys) or {}
    local function props(gen, from, to, y, depth)
      for i = from, to do
        if not trivial(resolved(nodes[i])) then
          local p = gen:var("p")
          gen:emit("do local " .. p .. " = " .. y .. "[" .. lit(keys[i]) .. "]")
          if nums[i] then
            gen:emit("if " .. p .. " == nil then " .. p .. " = " .. y .. "[" .. lit(nums[i]) .. "] end")
          end
          gen:emit("if " .. p .. " ~= nil then")
          gen:check(nodes[i], p, depth + 1)
          gen:emit("end end")
        end
      end
    end
    if #keys <= PROPS_CHUNK then
      props(self, 1, #keys, x, nest)
    else                                -- many: in functions of their own
      for from = 1, #keys, PROPS_CHUNK do
        local to = from + PROPS_CHUNK - 1
        if to > #keys then to = #keys end
        local part = { kind = "part", emit = function(gen) props(gen, from, to, "v", 0) end }
        self:emit("if not F[" .. self:fn_for(part) .. "](" .. x .. ") then return false end")
      end
    end
  end
  if n.merged then
    local m = n.merged
    local jm = self:jmap(m.map)
    local names = {}
    for name in pairs(m.map) do names[#names + 1] = name end
    sort(names)
    local kk, pv = self:var("k"), self:var("v")
    self:emit("for " .. kk .. ", " .. pv .. " in next, " .. x .. " do")
    if #names <= 12 then
      local branch = "if"
      for _, name in ipairs(names) do
        self:emit(branch .. " " .. kk .. " == " .. lit(name) .. " then")
        branch = "elseif"
        self:check(m.map[name], pv, nest + 1)
      end
      self:emit(branch == "if" and "do" or "else")
    end
    -- a key not matched above; one that is not a string is looked up as
    -- the encoder writes it
    local j = self:var("j")
    self:emit("local " .. j .. " = " .. self:k(jm) .. "[" .. kk .. "]")
    self:emit("if " .. j .. " == nil and type(" .. kk .. ') ~= "string" then ' .. j .. " = " ..
              self:k(jm) .. "[key_string(" .. kk .. ")] end")
    self:emit("if " .. j .. " then")
    self:emit("if " .. j .. " ~= true and not F[" .. j .. "](" .. pv .. ") then return false end")
    self:emit("else")
    if m.addno then
      self:emit("return false")
    elseif m.addnode then
      self:check(m.addnode, pv, nest + 1)
    end
    self:emit("end")
    if #names <= 12 then self:emit("end") end
    self:emit("end")
  end
  self:recs(n.obj, x)
end

function Gen:array(n, x, nest)
  local len = self:var("n")
  self:emit("local " .. len .. " = #" .. x)
  if n.maxItems then self:emit("if " .. len .. " > " .. lit(n.maxItems[1]) .. " then return false end") end
  if n.minItems then self:emit("if " .. len .. " < " .. lit(n.minItems[1]) .. " then return false end") end
  if n.items and not trivial(resolved(n.items)) then
    local i, it = self:var("i"), self:var("x")
    self:emit("for " .. i .. " = 1, " .. len .. " do")
    -- a hole is sent as null, and checked as null
    self:emit("local " .. it .. " = " .. x .. "[" .. i .. "]")
    self:emit("if " .. it .. " == nil then " .. it .. " = null end")
    self:check(n.items, it, nest + 1)
    self:emit("end")
  end
  self:recs(n.arr, x)
end

------------------------------------------------------- collecting code

-- C[j]: every error of node n, in the closure engine's order.
function Gen:collect(n, j)
  local tm = n.tmask
  local function fail(kw, rec, value, prop)
    return "ok = fail(cx, " .. lit(kw) .. ", " .. self:k(rec[2]) .. ", " .. self:k(rec[3]) ..
           ", " .. value .. (prop and ", " .. prop or "") .. ")"
  end
  local function type_fail(cond)
    if not tm or cond == "true" then return end
    local f = "ok = fail(cx, \"type\", " .. self:k(n.tmsg) .. ", " .. self:k(n.tloc) .. ", v)"
    self:emit(cond == "false" and f or "if not (" .. cond .. ") then " .. f .. " end")
  end
  local function recs(list)
    for _, rec in ipairs(list) do
      self:emit("if not " .. self:kw(rec) .. "(v, cx) then ok = false end")
    end
  end
  local function call(node, key, x)       -- a child's errors, at key
    node = resolved(node)
    if trivial(node) then return "true" end
    return "at(FC[" .. self:fn_for(node) .. "], " .. key .. ", " .. x .. ", cx)"
  end
  self:emit("C[" .. j .. "] = function(v, cx)")
  self:emit("if cx == nil or cx.full then return F[" .. j .. "](v) end")
  self:emit("local ok, t = true, type(v)")
  self:emit('if t == "string" then')
  type_fail(tm and tm.string and "true" or "false")
  if n.maxLength then
    local m = lit(n.maxLength[1])
    self:emit("if #v > " .. m .. " and ulen(v) > " .. m .. " then " .. fail("maxLength", n.maxLength, "v") .. " end")
  end
  if n.minLength then
    local m = lit(n.minLength[1])
    self:emit("if #v < " .. m .. " or (#v < 4 * " .. m .. " and ulen(v) < " .. m .. ") then " ..
              fail("minLength", n.minLength, "v") .. " end")
  end
  if n.pattern then
    local r = n.pattern[1]
    self:emit("if not " .. self:k(r.test) .. "(" .. self:k(r) .. ", v) then " ..
              fail("pattern", n.pattern, "v") .. " end")
  end
  recs(n.str)
  self:emit('elseif t == "number" then')
  if tm then
    type_fail(tm.number and "true" or tm.integer and "v % 1 == 0" or "false")
  end
  for _, op in ipairs(NUM_OPS) do
    if n[op[1]] then
      self:emit("if not (v + 0.0 " .. op[2] .. " " .. lit(n[op[1]][1]) .. ") then " ..
                fail(op[1], n[op[1]], "v") .. " end")
    end
  end
  recs(n.num)
  self:emit('elseif t == "table" then')
  self:emit("if getmetatable(v) ~= nil then v = raw_view(v) end")
  self:emit("local k = kind(v)")
  if tm then
    local conds = {}
    if tm.object then conds[#conds + 1] = 'k == "object" or k == "empty" or k == "element"' end
    if tm.array then conds[#conds + 1] = 'k == "array" or k == "empty"' end
    type_fail(#conds > 0 and concat(conds, " or ") or "false")
  end
  self:emit('if k == "object" or k == "empty" then')
  -- (loops over constant lists: the size of the code does not grow with
  -- the number of properties, and LuaJIT's jumps stay short)
  if n.required then
    local names, msgs, loc = n.required[1], n.required[2], n.required[3]
    local nums = numeric_keys(names)
    self:emit("for i = 1, " .. #names .. " do local name = " .. self:k(names) .. "[i]")
    self:emit("if v[name] == nil" .. (nums and (" and (not " .. self:k(nums) .. "[i] or v[" ..
              self:k(nums) .. "[i]] == nil)") or "") .. " then ok = fail(cx, \"required\", " ..
              self:k(msgs) .. "[i], " .. self:k(loc) .. ", v, name) end end")
  end
  if n.props then
    local keys, nodes = n.props.keys, n.props.nodes
    local js = {}
    for i = 1, #keys do
      local node = resolved(nodes[i])
      js[i] = trivial(node) or self:fn_for(node)
    end
    self:emit("for i = 1, " .. #keys .. " do local key, j = " .. self:k(keys) .. "[i], " ..
              self:k(js) .. "[i]")
    self:emit("local p = v[key]")
    local nums = numeric_keys(keys)
    if nums then self:emit("if p == nil and " .. self:k(nums) .. "[i] then p = v[" .. self:k(nums) .. "[i]] end") end
    self:emit("if p ~= nil and j ~= true and not at(FC[j], key, p, cx) then ok = false end end")
  end
  if n.merged then
    local m = n.merged
    self:emit("for key, pv in next, v do")
    self:emit('if type(key) ~= "string" then key = key_string(key) end')
    self:emit("local j = " .. self:k(self:jmap(m.map)) .. "[key]")
    self:emit("if j then")
    self:emit("if j ~= true and not at(FC[j], key, pv, cx) then ok = false end")
    if m.addno then
      self:emit("else ok = fail(cx, \"additionalProperties\", " .. self:k(m.msg) .. ", " ..
                self:k(m.loc) .. ", pv, key)")
    elseif m.addnode and not trivial(resolved(m.addnode)) then
      self:emit("elseif not " .. call(m.addnode, "key", "pv") .. " then ok = false")
    end
    self:emit("end")
    self:emit("end")
  end
  recs(n.obj)
  self:emit("end")
  self:emit('if k == "array" or k == "empty" then')
  if n.maxItems then
    self:emit("if #v > " .. lit(n.maxItems[1]) .. " then " .. fail("maxItems", n.maxItems, "v") .. " end")
  end
  if n.minItems then
    self:emit("if #v < " .. lit(n.minItems[1]) .. " then " .. fail("minItems", n.minItems, "v") .. " end")
  end
  if n.items and not trivial(resolved(n.items)) then
    self:emit("for i = 1, #v do local x = v[i]; if x == nil then x = null end")
    self:emit("if not " .. call(n.items, "i - 1", "x") .. " then ok = false end end")
  end
  recs(n.arr)
  self:emit("end")
  self:emit("else")
  if tm then
    local conds = {}
    if tm.boolean then conds[#conds + 1] = 't == "boolean"' end
    if tm.null then conds[#conds + 1] = "v == null" end
    type_fail(#conds > 0 and concat(conds, " or ") or "false")
  end
  self:emit("end")
  recs(n.any)
  self:emit("return ok")
  self:emit("end")
end

------------------------------------------------------------------ build

local function source(gen)
  local body = {}
  local i = 1
  while gen.queue[i] do
    local node = gen.queue[i]
    if i % 64 == 0 then context.check_deadline(gen.deadline, context.COMPILE_LATE) end
    if node.kind == "node" or node.kind == "part" then
      gen.lines, gen.n = {}, 0
      gen:emit("R[" .. i .. "] = function(v)")
      if node.kind == "part" then node.emit(gen) else gen:node(node, "v", 0) end
      gen:emit("return true")
      gen:emit("end")
      if node.kind == "node" then gen:collect(node, i) end
      body[#body + 1] = concat(gen.lines, "\n")
    end
    i = i + 1
  end
  return "local K, KW, F, FC, type, next, null, ulen, kind, key_string, fail, at, getmetatable, " ..
         "array_mt, raw_view = ...\n" ..
         "local R, C = {}, {}\n" .. concat(body, "\n") .. "\nreturn R, C\n"
end

-- generate(root, rs, deadline) -> fast(v), full(v, cx) | nil, error
-- (nil when the source fails to load: a bug of ours, which the caller
-- counts; the closure engine then serves alone).
function M.generate(root, rs, deadline)
  root = resolved(root)
  if trivial(root) then return keywords.TRUE, keywords.TRUE end
  local gen = setmetatable({ consts = {}, kmap = {}, kws = {}, kwmap = {}, jmaps = {},
                             lines = {}, n = 0, nvar = 0, index = {}, queue = {},
                             deadline = deadline }, Gen)
  gen:fn_for(root)
  local src = source(gen)
  context.check_deadline(deadline, context.COMPILE_LATE)
  local chunk, err = load(src, "=schema")
  if not chunk then return nil, err end
  nojit.fn(chunk)                       -- its functions too (see nojit.lua)
  local F, FC, KW = {}, {}, {}
  local R, C = chunk(gen.consts, KW, F, FC, type, next, null, values.ulen, values.kind,
                     values.key_string, context.fail, context.at, getmetatable,
                     array_mt, values.raw_view)
  for j, node in ipairs(gen.queue) do
    local f, fc
    if node.kind == "node" then
      f, fc = R[j], C[j]
      if node.cyclic then f, fc = keywords.counted(f, node, rs), keywords.counted(fc, node, rs) end
      if node.shared then f, fc = keywords.memoised(f, node, rs), keywords.memoised(fc, node, rs) end
    elseif node.kind == "part" then
      f, fc = R[j], R[j]
    else                                -- false, element
      f = keywords.leaf(node)
      fc = f
    end
    F[j], FC[j] = f, fc
  end
  local function fn(node)
    node = resolved(node)
    if trivial(node) then return keywords.TRUE end
    return FC[gen.index[node]]
  end
  for i, rec in ipairs(gen.kws) do KW[i] = keywords.build(rec, fn, rs) end
  return F[1], FC[1]
end

return M
