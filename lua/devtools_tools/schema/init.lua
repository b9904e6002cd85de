-- devtools_tools.schema: JSON Schema draft-07 validation of tool arguments.
--
-- The facade over three pieces: schema/compile.lua reads a tool's
-- inputSchema once into a graph of nodes (plain data); schema/generate.lua
-- writes that graph out as Lua source, which answers "valid?" fast and
-- collects the errors when not; schema/check.lua reads the same graph as
-- closures, the reference the specs compare the generated engine with
-- (verdicts and errors). The meaning follows ajv (what Chrome DevTools for
-- agents uses), including its error wording, with patterns as ECMA-262
-- regular expressions (through PCRE2 in the C core) and formats from
-- devtools_tools.schema.formats.
--
-- It must never reach the network (remote $refs come only from the
-- caller's loader), never modify the schema or the value it is given,
-- never call user code while validating (other than a metatable's __len),
-- and never run unbounded: work is memoised where a schema would make it
-- exponential, errors are capped, and opts.deadline / check(v, deadline)
-- are honoured. Validation that succeeds allocates nothing (formats,
-- non-ASCII strings near a length limit and schemas with shared
-- same-value subschemas excepted).
--
-- Values are what our JSON codec produces and sends; what a table is comes
-- from the encoder (devtools_tools.base.json.kind). A plain empty table `{}` is
-- both an empty array and an empty object (schema.shape marks it where the
-- schema says array); a decoded {} is an object and a decoded [] an array.
-- An Element is accepted wherever an object is, and is the only thing
-- "x-mcp-type": "HTMLElement" accepts.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local context = require "devtools_tools.schema.context"
local values = require "devtools_tools.schema.values"
local compile = require "devtools_tools.schema.compile"
local check = require "devtools_tools.schema.check"
local generate = require "devtools_tools.schema.generate"
local meta = require "devtools_tools.schema.meta"

local type, pairs, ipairs, next, setmetatable, getmetatable, rawget =
      type, pairs, ipairs, next, setmetatable, getmetatable, rawget
local rawlen = rawlen or function(t) return #t end      -- Lua 5.1: # is raw on tables
local concat = table.concat

local array_mt, object_mt = core.array_mt, core.object_mt
local resolved = compile.resolved

local M = {}

-- Generated checks that failed to load (a bug; the specs assert it stays 0).
M._codegen_failures = 0

-- compiled validators -> { root, rs }, for shape
local compiled = setmetatable({}, { __mode = "k" })

local OPTS = { loader = true, deadline = true, closures = true }

local function bad_opts(msg)
  errors.raise("bad_argument", "schema.compile: " .. msg)
end

-- compile(schema, opts?) -> check
-- opts.loader: table URI -> schema, or function(uri) -> schema | nil, for
-- remote $refs (the draft-07 meta-schema is built in).
-- opts.deadline: absolute, in core.now() seconds; compiling past it raises
-- timeout.
-- opts.closures: true to use the closure engine alone (the specs compare).
-- check(value, deadline?) -> true | false, errors; past the deadline
-- (core.now() seconds) it raises timeout.
local make

-- The draft-07 meta-schema's own check, made on first need.
local meta_check

-- Checks schema s against the draft-07 meta-schema, as ajv does before it
-- compiles one (Chrome DevTools for agents: ajv 6.15, whose formats are
-- ours): what our compiler reads meets its own checks first, with their
-- messages; this finds the rest, such as a malformed keyword beside a
-- $ref (ignored, but ajv refuses the schema), a title that is not a
-- string, or a $ref that is no URI reference. The page refuses every call
-- of a tool whose schema ajv refuses.
local function check_meta(s, deadline)
  if type(s) ~= "table" then return end
  if not meta_check then
    meta_check = make(meta.documents["http://json-schema.org/draft-07/schema"](), { closures = true }, true)
  end
  local ok, errs = meta_check(s, deadline)
  if ok then return end
  local e = errs[1]
  compile.bad("#" .. e.path, e.message .. " (the draft-07 meta-schema's " .. e.schema_path .. ")")
end

function M.compile(s, opts)
  return make(s, opts)
end

function make(s, opts, is_meta)
  if opts ~= nil and type(opts) ~= "table" then bad_opts("opts must be a table") end
  local loader, deadline, closures
  if opts then
    for k in pairs(opts) do
      if not OPTS[k] then bad_opts("unknown option " .. values.render(k)) end
    end
    loader, deadline, closures = opts.loader, opts.deadline, opts.closures
  end
  if loader ~= nil and type(loader) ~= "table" and type(loader) ~= "function" then
    bad_opts("opts.loader must be a table or a function")
  end
  if deadline ~= nil and (type(deadline) ~= "number" or deadline ~= deadline) then
    bad_opts("opts.deadline must be a number (core.now() seconds)")
  end
  if s ~= true and s ~= false and type(s) ~= "table" then
    bad_opts("a schema must be a table or a boolean, got " .. type(s))
  end
  context.check_deadline(deadline, context.COMPILE_LATE)
  local rs = context.run_state()
  local root, bounded, arrays = compile.compile(s, loader, deadline, rs)
  if not is_meta then check_meta(s, deadline) end
  local fast, full
  if not closures then
    fast, full = generate.generate(root, rs, deadline)
    if not fast then                    -- a bug of ours: counted for the tests
      M._codegen_failures = M._codegen_failures + 1
      M._codegen_error = full
    end
  end
  if not fast then
    fast = check.build(root, rs)
    full = fast
  end
  local new_context, check_deadline = context.new, context.check_deadline
  local late = context.VALIDATE_LATE
  local function validator(value, call_deadline)
    if call_deadline ~= nil then
      if type(call_deadline) ~= "number" or call_deadline ~= call_deadline then
        errors.raise("bad_argument", "check: the deadline must be a number (core.now() seconds)")
      end
      check_deadline(call_deadline, late)
    end
    -- Shared and cyclic nodes use the run state (memo, depth); patterns and
    -- uniqueItems, which can be costly on any schema, its deadline, set for
    -- this call only.
    if bounded then rs.depth, rs.memo = 0, nil end
    rs.deadline = call_deadline
    if fast(value) then rs.deadline = nil; return true end
    rs.depth = 0                        -- the memo of the first pass stays
    local cx = new_context()
    full(value, cx)
    rs.deadline = nil
    local errs = cx.errs
    if errs[1] == nil then
      errs[1] = { path = "", keyword = "", message = "is invalid", schema_path = "#" }
    end
    return false, errs
  end
  compiled[validator] = { root = root, arrays = arrays }
  return validator
end

local cache = setmetatable({}, { __mode = "k" })

-- validate(schema, value, opts?) -> true | false, errors
-- Compiles once per schema table (when no opts are given) and caches it;
-- a schema changed after its first use is not seen again.
function M.validate(s, value, opts)
  local v
  if opts == nil and type(s) == "table" then
    v = cache[s]
    if not v then
      v = M.compile(s)
      cache[s] = v
    end
  else
    v = M.compile(s, opts)
  end
  return v(value)
end

---------------------------------------------------------------- messages

local MAX_LINES = 20        -- errors shown by format_errors
local MAX_LINE = 300        -- characters of one of them

-- format_errors(errors, sep?) -> string, one line per error
-- ("<path>: <message> (got <value>)", "(root)" for the value itself, with
-- what was allowed for enum and const), joined by sep (default "\n"); at
-- most 20 lines, each cut at 300 characters.
function M.format_errors(errs, sep)
  if type(errs) ~= "table" then
    errors.raise("bad_argument", "schema.format_errors: expected the errors a check returned, got "
      .. type(errs))
  end
  if sep ~= nil and type(sep) ~= "string" then
    errors.raise("bad_argument", "schema.format_errors: sep must be a string, got " .. type(sep))
  end
  local lines = {}
  local shown = #errs < MAX_LINES and #errs or MAX_LINES
  for i = 1, shown do
    local err = errs[i]
    if type(err) ~= "table" or type(err.path) ~= "string" or type(err.message) ~= "string" then
      errors.raise("bad_argument", "schema.format_errors: entry " .. i .. " is not an error of a check")
    end
    local line = (err.path == "" and "(root)" or err.path) .. ": " .. err.message
    if err.keyword == "additionalProperties" and err.property then
      line = line .. " ('" .. err.property .. "')"
    end
    if err.received then
      line = line .. " (got " .. err.received ..
             (err.allowed and "; allowed: " .. err.allowed or "") .. ")"
    end
    if #line > MAX_LINE then line = values.cut(line, MAX_LINE) .. "..." end
    lines[i] = line
  end
  if #errs > shown then
    lines[#lines + 1] = "... and " .. (#errs - shown) .. " more"
  end
  return concat(lines, sep or "\n")
end

---------------------------------------------------------------- shape

-- The nodes that apply to the value under key k of an object checked by n.
local function object_children(n, k, out)
  if n.props then
    for i, key in ipairs(n.props.keys) do
      if key == k then out[#out + 1] = n.props.nodes[i] end
    end
  end
  local matched = false
  if n.merged then
    local c = n.merged.map[k]
    if c then out[#out + 1] = c; matched = true end
    if not matched and n.merged.addnode then out[#out + 1] = n.merged.addnode end
  end
  for _, rec in ipairs(n.obj) do
    if rec.kw == "patternProperties" then
      matched = matched or (rec.set[k] ~= nil)
      for j = 1, rec.n do
        if rec.rxs[j]:test(k) then out[#out + 1] = rec.nodes[j]; matched = true end
      end
      if not matched and rec.addnode then out[#out + 1] = rec.addnode end
    end
  end
  return out
end

local function array_children(n, i, out)
  if n.items then out[#out + 1] = n.items end
  for _, rec in ipairs(n.arr) do
    if rec.kw == "tuple" then
      if i <= rec.n then out[#out + 1] = rec.nodes[i]
      elseif rec.addnode then out[#out + 1] = rec.addnode end
    end
  end
  return out
end

local shape_node

-- v, or a copy of it with the children that change replaced
local function shape_children(n, v, fn, depth, kind, rs)
  local copy
  local function set(k, x)
    if not copy then
      copy = {}
      for k2, x2 in next, v do copy[k2] = x2 end
      local mt = getmetatable(v)
      if type(mt) ~= "table" and mt ~= nil then        -- protected (__metatable): keep the kind
        mt = kind == "array" and array_mt or object_mt
      end
      setmetatable(copy, mt)
    end
    copy[k] = x
  end
  if kind == "array" then
    for i = 1, rawlen(v) do                     -- raw, as the encoder reads it
      local x = rawget(v, i)
      if type(x) == "table" then
        local y = x
        for _, c in ipairs(array_children(n, i, {})) do y = shape_node(c, y, fn, depth + 1, rs) end
        if y ~= x then set(i, y) end
      end
    end
  elseif kind == "object" then
    for k, x in next, v do
      if type(x) == "table" then
        local y = x
        for _, c in ipairs(object_children(n, values.key_string(k), {})) do
          y = shape_node(c, y, fn, depth + 1, rs)
        end
        if y ~= x then set(k, y) end
      end
    end
  end
  return copy or v
end

function shape_node(node, v, fn, depth, rs)
  node = resolved(node)
  if node.kind ~= "node" or type(v) ~= "table" or depth > context.MAX_DEPTH then return v end
  context.tick(rs)
  local kind = values.kind(v)
  if kind == "element" then return v end
  if kind == "empty" then
    local tm = node.tmask
    if tm and tm.array and not tm.object then return setmetatable({}, array_mt) end
  else
    v = shape_children(node, v, fn, depth, kind, rs)
  end
  for _, rec in ipairs(node.any) do
    if rec.kw == "allOf" then
      for _, c in ipairs(rec.nodes) do v = shape_node(c, v, fn, depth + 1, rs) end
    elseif rec.kw == "anyOf" or rec.kw == "oneOf" then
      for _, c in ipairs(rec.nodes) do
        if fn(c)(v) then v = shape_node(c, v, fn, depth + 1, rs); break end
      end
    elseif rec.kw == "if" then
      local c = rec["else"]
      if fn(rec.cond)(v) then c = rec["then"] end
      if c then v = shape_node(c, v, fn, depth + 1, rs) end
    end
  end
  return v
end

-- shape(check, value, deadline?) -> value, or a copy of it in which every empty plain
-- table that the schema says is an array (type "array", not also "object")
-- carries dt.array_mt, so that it is sent as []. The caller's tables are
-- never modified; only the tables on the way to a change are copied.
-- anyOf/oneOf follow the first branch that accepts the value, if/then/else
-- the branch the value selects. Past the deadline (core.now() seconds) it
-- raises timeout.
function M.shape(chk, value, deadline)
  local info = compiled[chk]
  if not info then errors.raise("bad_argument", "schema.shape: not a check made by schema.compile") end
  if not info.arrays then return value end  -- nothing in the schema says array
  local fn = info.fn
  if not fn then
    info.shape_rs = context.run_state()
    local _
    _, fn = check.build(info.root, info.shape_rs)
    info.fn = fn
  end
  if deadline ~= nil and (type(deadline) ~= "number" or deadline ~= deadline) then
    errors.raise("bad_argument", "schema.shape: the deadline must be a number (core.now() seconds)")
  end
  context.check_deadline(deadline, context.VALIDATE_LATE)
  context.start(info.shape_rs, deadline)
  return shape_node(info.root, value, fn, 0, info.shape_rs)
end

M.is_element = values.is_element

-- local_target(root, ref) -> the node a local $ref names in the schema
-- root, read as the validator reads it (ajv 6's pointers), or nil
M.local_target = compile.local_target

return M
