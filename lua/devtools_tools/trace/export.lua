-- devtools_tools.trace.export: a trace as a Lua recipe that makes the same
-- calls in the same order, for `devtools-tools run` (which sets page, dt
-- and browser): each result printed as one line of JSON, a call recorded
-- as failing made in a pcall (its error printed, the recipe going on), a
-- call_many made as one again, each navigation made again, and the page
-- taken to the recorded URL first when `run` was given none.
--
-- What it must never do: write a value into the Lua text other than as a
-- literal of that value (strings are quoted, names that are no Lua
-- identifiers bracketed), so nothing in a trace can become code.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local json = require "devtools_tools.base.json"
local errors = require "devtools_tools.base.errors"

local type, tostring, pairs, ipairs, math_type = type, tostring, pairs, ipairs, math.type
local concat, sort, format, tonumber = table.concat, table.sort, string.format, tonumber
local raise = errors.raise
local kind, null = json.kind, json.null

local M = {}

local KEYWORDS = {}
for w in ([[and break do else elseif end false for function goto if in local nil not or
  repeat return then true until while]]):gmatch("%a+") do KEYWORDS[w] = true end

local function is_name(s)
  return type(s) == "string" and s:match("^[%a_][%w_]*$") ~= nil and not KEYWORDS[s]
end
M.is_name = is_name

-- quote(s) -> a Lua string literal of s, the same bytes under Lua 5.1-5.4
-- (every byte outside printable ASCII escaped in decimal)
local function quote(s)
  return '"' .. s:gsub('[%c"\\\128-\255]', function(c)
    if c == "\n" then return "\\n" end
    if c == "\t" then return "\\t" end
    if c == '"' then return '\\"' end
    if c == "\\" then return "\\\\" end
    return format("\\%03d", c:byte())
  end) .. '"'
end
M.quote = quote

local function number(n)
  if math_type and math_type(n) == "integer" then return tostring(n) end
  if n % 1 == 0 and n > -2 ^ 53 and n < 2 ^ 53 then return format("%d", n) end
  local s = format("%.17g", n)
  if tonumber(format("%.15g", n)) == n then s = format("%.15g", n) end
  return s
end

-- literal(v, indent) -> Lua text that makes v (dt.null for JSON null,
-- dt.array{} for an empty array)
local function literal(v, indent, depth)
  local t = type(v)
  if v == nil or v == null then return "dt.null" end
  if t == "string" then return quote(v) end
  if t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then return "dt.null" end
    return number(v)
  end
  if t == "boolean" then return tostring(v) end
  if t ~= "table" then raise("bad_argument", "export: a " .. t .. " in a trace") end
  if depth > 200 then raise("bad_argument", "export: a value nested deeper than 200 levels") end
  local k = kind(v)
  local inner = indent .. "  "
  if k == "array" then
    if #v == 0 then return "dt.array{}" end
    local parts = {}
    for i = 1, #v do parts[i] = literal(v[i], inner, depth + 1) end
    local one = "{ " .. concat(parts, ", ") .. " }"
    if #one <= 80 and not one:find("\n", 1, true) then return one end
    return "{\n" .. inner .. concat(parts, ",\n" .. inner) .. ",\n" .. indent .. "}"
  end
  local keys = {}
  for key in pairs(v) do keys[#keys + 1] = key end
  if #keys == 0 then return "{}" end
  sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local parts = {}
  for i, key in ipairs(keys) do
    local name = is_name(key) and key or ("[" .. (type(key) == "string" and quote(key) or tostring(key)) .. "]")
    parts[i] = name .. " = " .. literal(v[key], inner, depth + 1)
  end
  local one = "{ " .. concat(parts, ", ") .. " }"
  if #one <= 80 and not one:find("\n", 1, true) then return one end
  return "{\n" .. inner .. concat(parts, ",\n" .. inner) .. ",\n" .. indent .. "}"
end
function M.literal(v) return literal(v, "", 0) end

-- The arguments of a call event, or nil (and why) when they cannot be made.
local function args_of(ev)
  if ev.args_digest ~= nil then
    return nil, "its arguments were over the trace's limit (" .. tostring(ev.args_digest.bytes) .. " bytes)"
  end
  if ev.args == nil or ev.args == null then return "" end
  return literal(ev.args, "", 0)
end

local function comment_line(s)
  return "-- " .. tostring(s):gsub("[%c]", " ")
end

local function outcome_comment(ev)
  if ev.error ~= nil then
    return comment_line("recorded: " .. tostring(ev.error.code) .. ": " .. tostring(ev.error.message)):sub(1, 200)
  end
end

-- lua(trace) -> the recipe's text
function M.lua(trace)
  if type(trace) ~= "table" or type(trace.header) ~= "table" or type(trace.events) ~= "table" then
    raise("bad_argument", "export: expected a trace (dt.trace.read)")
  end
  local h = trace.header
  local out = {
    "-- A recipe exported from the trace " .. (trace.name and quote(trace.name):sub(2, -2) or "")
      .. " (" .. tostring(h.time or "?") .. ").",
    "-- Run it with: devtools-tools run THIS.lua [URL]   (page, browser and dt are set)",
    "-- It makes the recorded calls in order and prints each result as a line of JSON.",
    "",
    "local function show(v) io.write(dt.json.encode(v == nil and dt.null or v), \"\\n\") end",
    "local function failed(err) io.write(\"error: \", tostring(err), \"\\n\") end",
    "",
  }
  if type(h.url) == "string" and h.url ~= "about:blank" then
    out[#out + 1] = "if page.url == \"about:blank\" then page:navigate(" .. quote(h.url) .. ") end"
    out[#out + 1] = ""
  end
  local events = trace.events
  local i = 1
  while i <= #events do
    local ev = events[i]
    if ev.type == "navigate" and type(ev.url) == "string" then
      out[#out + 1] = "page:navigate(" .. quote(ev.url) .. ")"
      i = i + 1
    elseif ev.type == "call" and ev.batch ~= nil then
      local list, j = { ev }, i + 1
      while events[j] and events[j].type == "call" and events[j].batch == ev.batch do
        list[#list + 1] = events[j]
        j = j + 1
      end
      sort(list, function(a, b) return (a.index or 0) < (b.index or 0) end)
      out[#out + 1] = "-- calls " .. list[1].call .. " to " .. list[#list].call .. ", pipelined"
      out[#out + 1] = "do"
      out[#out + 1] = "  local rs = page:call_many({"
      for _, e in ipairs(list) do
        local a, why = args_of(e)
        if a then
          out[#out + 1] = "    { " .. quote(e.tool) .. (a ~= "" and (", " .. a:gsub("\n", "\n    ")) or "") .. " },"
        else
          out[#out + 1] = "    -- " .. quote(e.tool) .. " left out: " .. why
        end
      end
      out[#out + 1] = "  }, { errors = \"return\" })"
      out[#out + 1] = "  for i = 1, rs.n do"
      out[#out + 1] = "    if dt.is_error(rs[i]) then failed(rs[i]) else show(rs[i]) end"
      out[#out + 1] = "  end"
      out[#out + 1] = "end"
      i = j
    elseif ev.type == "call" then
      local a, why = args_of(ev)
      local head = "-- call " .. tostring(ev.call) .. ": " .. quote(ev.tool):sub(2, -2)
      if not a then
        out[#out + 1] = head .. ", left out: " .. why
      elseif ev.error ~= nil then
        out[#out + 1] = outcome_comment(ev)
        out[#out + 1] = "do"
        out[#out + 1] = "  local ok, r = pcall(page.call, page, " .. quote(ev.tool)
          .. (a ~= "" and (", " .. a:gsub("\n", "\n  ")) or "") .. ")"
        out[#out + 1] = "  if ok then show(r) else failed(r) end"
        out[#out + 1] = "end"
      else
        out[#out + 1] = "show(page:call(" .. quote(ev.tool) .. (a ~= "" and (", " .. a) or "") .. "))"
      end
      i = i + 1
    else
      i = i + 1
    end
  end
  out[#out + 1] = ""
  return concat(out, "\n")
end


return M
