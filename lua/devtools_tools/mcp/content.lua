-- devtools_tools.mcp.content: what a tools/call answers - a tool's value
-- as MCP content, and a failure as a result the model reads.
--
-- A value is given twice: as JSON text content, and as structuredContent
-- (an object as it is; any other value as {"result": value}), where the
-- protocol version has it (2025-06-18 and later). An Element (a DOM
-- element a tool returned) is {"element": {description, tag, id, classes,
-- text, backendNodeId, frame}} in both, and a line of text when it is the
-- whole value. A failure is a result with isError: true whose text is the
-- error as present.errors renders it for people (its code and message,
-- each schema error with its path, the value received and the allowed
-- values; a page's long message bounded).
--
-- It must never hand the client a page's text unbounded in an error, nor
-- raise on a value a tool returned (a value too deep to write becomes an
-- error result).

local dt = require "devtools_tools"
local perrors = require "devtools_tools.present.errors"
local text = require "devtools_tools.present.text"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, tostring, pairs, pcall, setmetatable, getmetatable =
      type, tostring, pairs, pcall, setmetatable, getmetatable
local is_element, kind, null, array_mt = dt.is_element, dt.json.kind, dt.null, dt.array_mt

-- (a lone surrogate a page's string held is written as U+FFFD, as the
-- message around this text is: strict readers refuse "\ud800")
local ENCODE = { replace_surrogates = true }
local function encode(v) return dt.json.encode(v, ENCODE) end

local M = {}

M.MAX_DEPTH = 1000       -- as the codec's: a deeper value is an error result

-- element(el) -> the structured form of an Element
function M.element(el)
  local d = tostring(el.description or "element")
  local tag = d:match("^[^#.]*")
  local id = d:match("#([^.]*)")
  local classes = setmetatable({}, array_mt)
  local rest = d:sub(#tag + 1 + (id and (#id + 1) or 0))
  for c in rest:gmatch("%.([^.]+)") do classes[#classes + 1] = c end
  local frame = type(el.frame) == "table" and el.frame.url or nil
  return { element = {
    description = d, tag = tag ~= "" and tag or null, id = id or null, classes = classes,
    text = type(el.text) == "string" and el.text or "",
    backendNodeId = el.backend_node_id or null, frame = frame or null,
  } }
end

local function describe(el)
  local t = type(el.text) == "string" and el.text or ""
  return "Element " .. text.clean(el.description or "element")
    .. (t ~= "" and (": " .. encode(text.clean(t))) or " (no text)")
end

-- Elements replaced by their structured form, on a copy of only the
-- tables that hold one (the rest is shared, never changed).
local function jsonable(v, depth)
  if type(v) ~= "table" then return v end
  if is_element(v) then return M.element(v) end
  if depth >= M.MAX_DEPTH then
    error(dt.new_error("too_large", "the result nests deeper than " .. M.MAX_DEPTH .. " levels"), 0)
  end
  local copy
  for k, x in pairs(v) do
    if type(x) == "table" then
      local y = jsonable(x, depth + 1)
      if y ~= x then
        if not copy then
          copy = {}
          for k2, x2 in pairs(v) do copy[k2] = x2 end
          setmetatable(copy, getmetatable(v))
        end
        copy[k] = y
      end
    end
  end
  return copy or v
end

-- result(value, structured) -> CallToolResult (a table). structured:
-- whether the version has structuredContent.
local function build(value, structured)
  if is_element(value) then
    local s = M.element(value)
    return { content = { { type = "text", text = describe(value) } }, structuredContent = structured and s or nil }
  end
  local v = jsonable(value, 0)
  local body = encode(v)
  local sc
  if structured then
    local k = type(v) == "table" and kind(v) or nil
    if k == "object" or k == "empty" then       -- (a plain {} is written {})
      sc = v
    else
      sc = { result = v }
    end
  end
  return { content = { { type = "text", text = body } }, structuredContent = sc }
end

function M.result(value, structured)
  if value == nil then value = null end
  local ok, res = pcall(build, value, structured)
  if ok then return res end
  return M.failure(res)
end

-- failure(err) -> CallToolResult with isError: the error as a person (or
-- a model) reads it, bounded
function M.failure(err)
  local s = perrors.text(err)
  return { content = { { type = "text", text = s } }, isError = true }
end

-- image(base64, mime) -> CallToolResult holding one image
function M.image(data, mime)
  return { content = { { type = "image", data = data, mimeType = mime or "image/png" } } }
end

return M
