-- devtools_tools.present.pretty: JSON text for people - the one printer of
-- the front ends (a call's result on the command line and in Neovim's
-- result buffer, `list --json`).
--
-- Object keys are sorted, so the same value always reads the same; an
-- Element shows as the string tostring(el) gives ("Element(div#cart)");
-- strings keep their value, with the C1 controls and bidirectional
-- overrides a page may send written as \u escapes (the text stays the same
-- JSON value, and cannot drive a terminal). What is an array, and how a
-- scalar is written, is the library codec's decision (dt.json), never made
-- again here.
--
-- It must never change a value: decoding its output gives back what
-- dt.json.encode would have sent (Elements aside).

local dt = require "devtools_tools"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, tostring, pairs, ipairs, error, math_type = type, tostring, pairs, ipairs, error, math.type
local concat, sort, rep, format, find = table.concat, table.sort, string.rep, string.format,
  string.find
local encode, kind, is_element = dt.json.encode, dt.json.kind, dt.is_element

local M = {}

M.MAX_DEPTH = 1000            -- as the codec's default (a cycle ends there too)

-- A page's C1 controls and bidi overrides inside JSON strings, as \u
-- escapes (the library's one list, dt.controls; the encoder escaped C0).
local clean = dt.controls.clean
local function as_escape(cp)
  if cp >= 0x80 then return format("\\u%04x", cp) end
end
local function escape_controls(s)
  if not find(s, "[\194\226]") then return s end
  return clean(s, as_escape)
end
M.escape_controls = escape_controls

local function too_deep()
  error(dt.new_error("bad_argument", "cannot show as JSON: nested deeper than "
    .. M.MAX_DEPTH .. " levels (or cyclic)"), 0)
end

-- The text of an object key: strings as they are, whole numbers in decimal
-- (as the encoder writes them); anything else is the encoder's error.
local function key_text(k)
  local tk = type(k)
  if tk == "string" then return k end
  if tk == "number" and k % 1 == 0 and k == k then
    return (math_type and math_type(k) == "integer") and tostring(k) or format("%.0f", k)
  end
  encode({ [k] = true })           -- raises bad_argument, in the encoder's words
  return tostring(k)
end

-- encode(value, opts?) -> text. opts.indent: the indent of one level
-- ("  " by default; false: one line, no spaces).
function M.encode(value, opts)
  local indent = "  "
  if opts and opts.indent ~= nil then indent = opts.indent or nil end
  local out, n = {}, 0
  local nl, colon = indent and "\n" or "", indent and ": " or ":"
  local function put(s) n = n + 1 out[n] = s end
  local function walk(x, pad, depth)
    local tx = type(x)
    if x == nil then
      put("null")
    elseif tx == "string" then
      put(escape_controls(encode(x)))
    elseif tx ~= "table" then
      put(encode(x))
    elseif is_element(x) then
      put(escape_controls(encode(tostring(x))))
    else
      if depth >= M.MAX_DEPTH then too_deep() end
      local inner = indent and (pad .. indent) or ""
      if kind(x) == "array" then
        local len = #x
        if len == 0 then put("[]") return end
        put("[" .. nl)
        for i = 1, len do
          put(inner)
          walk(x[i], inner, depth + 1)
          put(i < len and ("," .. nl) or nl)
        end
        put(pad .. "]")
      else
        local keys, names = {}, {}
        for k in pairs(x) do
          local name = key_text(k)
          keys[#keys + 1] = name
          names[name] = k
        end
        if #keys == 0 then put("{}") return end
        sort(keys)
        put("{" .. nl)
        for i, name in ipairs(keys) do
          put(inner .. escape_controls(encode(name)) .. colon)
          walk(x[names[name]], inner, depth + 1)
          put(i < #keys and ("," .. nl) or nl)
        end
        put(pad .. "}")
      end
    end
  end
  walk(value, "", 0)
  return concat(out)
end

-- reindent(text, indent?) -> compact JSON text (no white space between
-- tokens, as dt.json.encode writes it) laid out over several lines, its
-- tokens and their order untouched.
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

return M
