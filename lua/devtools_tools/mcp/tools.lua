-- devtools_tools.mcp.tools: a page's tools as MCP tools - their names,
-- descriptions, schemas, annotations and _meta - and the list the server
-- serves.
--
-- Provenance: a page tool's description is the page's text, handed to a
-- model: it ends with a line that says so, "(Provided by the page at
-- ORIGIN.)", and _meta["devtools-tools/provenance"] says it for programs
-- ({source = "page", page = ORIGIN, trusted}); --trust-page drops the
-- line (the _meta stays, trusted = true).
--
-- Names: a tool keeps its own name when MCP allows it (^[A-Za-z0-9_.-]{1,64}$),
-- no tool before it in page order (devtools groups of the main frame, of
-- the iframes, then WebMCP groups) holds it, and it does not start with
-- "devtools." (the built-in tools' prefix). Otherwise its name is made
-- from its own (each character MCP does not allow as "_", cut to 40
-- bytes), "_" and 8 hex digits of a hash of what it is (kind, group, frame
-- origin, name), with "_2", "_3"... while that is taken: the same page
-- gives the same names at every discovery. The original name, its group
-- and frame go in the description (when renamed) and always in _meta.
--
-- Schemas: arguments are always a JSON object, and MCP clients require an
-- inputSchema whose root says type "object" (the official SDK refuses a
-- whole tools/list otherwise), with properties an object of schemas and
-- required a list of names. The root is served as the page gave it, with
-- only what does not meet that changed on a copy (see fit_schema); nothing
-- below the root is read.
--
-- It must never change a page's schema (the validator uses it), use a
-- page-provided name as a key of a table of ours but the name map, or
-- read a schema deeper than its root.

local dt = require "devtools_tools"
local text = require "devtools_tools.present.text"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, tostring, ipairs, pairs, setmetatable, rawget, next =
      type, tostring, ipairs, pairs, setmetatable, rawget, next
local byte, format, gsub, sub, find = string.byte, string.format, string.gsub, string.sub, string.find
local kind, array, null = dt.json.kind, dt.array, dt.null

local M = {}

M.PREFIX = "devtools."                 -- the built-in tools' names
M.META = "devtools-tools/page"         -- the _meta key of a page tool's origin
M.PROVENANCE = "devtools-tools/provenance"   -- the _meta key of who wrote a text: the page
M.MAX_DESCRIPTION = 64 * 1024          -- bytes of a description served
M.MAX_TEXT = 1000                      -- bytes of a name, group or URL quoted

-- valid(name) -> true when MCP takes the name as it is
function M.valid(name)
  return type(name) == "string" and #name >= 1 and #name <= 64 and not find(name, "[^%w_%.%-]")
end

local function reserved(name)
  return sub(name, 1, #M.PREFIX) == M.PREFIX
end

-- Two polynomial hashes over the bytes (exact in doubles: no bit
-- operations, which LuaJIT's and Lua 5.4's syntax do not share), 4 hex
-- digits of each.
local function hash8(s)
  local a, b = 5381, 7919
  for i = 1, #s do
    local c = byte(s, i)
    a = (a * 257 + c) % 2147483647
    b = (b * 65599 + c) % 2147483629
  end
  return format("%04x%04x", a % 65536, b % 65536)
end
M.hash8 = hash8

local function origin_of(group)
  local f = type(group) == "table" and group.frame
  if type(f) ~= "table" then return "" end
  return tostring(f.origin or f.url or "")
end

-- derived(tool) -> the name a tool gets when it cannot keep its own
local function derived(tool)
  local g = tool.group or {}
  local base = gsub(tostring(tool.name), "[^%w_%.%-]", "_")
  base = sub(base, 1, 40)
  if base == "" or reserved(base) then
    base = "tool" .. (base ~= "" and ("_" .. gsub(base, "^devtools%.", "")) or "")
  end
  base = sub(base, 1, 40)
  return base .. "_" .. hash8(tostring(tool.kind or g.kind or "devtools") .. "\0" .. tostring(g.name)
    .. "\0" .. origin_of(g) .. "\0" .. tostring(tool.name))
end

-- names(tools) -> list of MCP names, one per tool, in order (tools: Tool
-- objects in page order)
function M.names(tools)
  local out, taken = {}, {}
  for i, t in ipairs(tools) do               -- own names first, in page order
    local n = t.name
    if M.valid(n) and not reserved(n) and not taken[n] then
      out[i] = n
      taken[n] = true
    end
  end
  for i, t in ipairs(tools) do
    if out[i] == nil then
      local base = derived(t)
      local n, k = base, 1
      while taken[n] do
        k = k + 1
        n = base .. "_" .. k
      end
      out[i] = n
      taken[n] = true
    end
  end
  return out
end

-- ---- schemas --------------------------------------------------------------------

local function copy_root(s)
  local c = {}
  for k, v in pairs(s) do c[k] = v end
  return c
end

-- fit_schema(schema) -> the schema to serve (the page's own table when it
-- needs nothing), and a note for the description when the page's schema
-- cannot be met by any arguments (nil otherwise):
--   no type at the root: type "object" is added (arguments are objects:
--     the calls it accepts are the same);
--   a list of types with "object" among them: "object";
--   another type: "object", and the note says no call can pass it;
--   properties that is no object: left out, and the note says the schema
--     is malformed (the library's validator refuses such a schema: every
--     call fails); a property's schema true is served as {} and false as
--     {"not": {}} (the same meaning, in the form clients take);
--   required that is no list of names: left out, the schema malformed.
function M.fit_schema(schema)
  if type(schema) ~= "table" or kind(schema) == "array" then
    return { type = "object" }, "its inputSchema is not an object: every call fails"
  end
  local out, note = schema, nil
  local function edit(k, v)
    if out == schema then out = copy_root(schema) end
    out[k] = v
  end
  local t = rawget(schema, "type")
  if t ~= "object" then
    if t == nil then
      edit("type", "object")
    elseif type(t) == "table" and kind(t) == "array" then
      local has = false
      for _, x in ipairs(t) do if x == "object" then has = true end end
      edit("type", "object")
      if not has then note = "its inputSchema admits no object (types " .. text.brief(dt.json.encode(t), 80)
        .. "), and arguments are one: every call fails" end
    else
      edit("type", "object")
      note = "its inputSchema's root type is " .. text.brief(tostring(t), 60)
        .. ", and arguments are an object: every call fails"
    end
  end
  local props = rawget(schema, "properties")
  if props ~= nil then
    if type(props) ~= "table" or kind(props) == "array" then
      edit("properties", nil)
      note = "its inputSchema is malformed (properties is no object): every call fails"
    else
      local fixed
      for k, v in pairs(props) do
        if type(v) ~= "table" then
          fixed = fixed or copy_root(props)
          if v == true then fixed[k] = setmetatable({}, dt.json.object_mt)
          elseif v == false then fixed[k] = { ["not"] = setmetatable({}, dt.json.object_mt) }
          else
            fixed[k] = nil
            note = "its inputSchema is malformed (property " .. text.brief(text.clean(tostring(k)), 60)
              .. " is no schema): every call fails"
          end
        end
      end
      if fixed then edit("properties", next(fixed) == nil and setmetatable({}, dt.json.object_mt) or fixed) end
    end
  end
  local req = rawget(schema, "required")
  if req ~= nil then
    local ok = type(req) == "table" and kind(req) ~= "object"
    if ok then for _, x in pairs(req) do if type(x) ~= "string" then ok = false end end end
    if not ok then
      edit("required", nil)
      note = "its inputSchema is malformed (required is no list of names): every call fails"
    end
  end
  return out, note
end

-- ---- annotations ------------------------------------------------------------------

-- WebMCP's annotations in MCP's words: readOnly -> readOnlyHint,
-- untrustedContent (its output may hold content of users or third
-- parties) -> openWorldHint true, consequential (it books, pays, sends)
-- -> destructiveHint true. Chromium reports each one false when the page
-- said nothing, so a false one says nothing (MCP's defaults assume the
-- worst) but readOnly's. nil when none applies.
function M.annotations(a)
  if type(a) ~= "table" then return nil end
  local out, any = {}, false
  if type(a.readOnly) == "boolean" then out.readOnlyHint = a.readOnly any = true end
  if a.untrustedContent == true then out.openWorldHint = true any = true end
  if a.consequential == true then out.destructiveHint = true any = true end
  return any and out or nil
end

-- ---- provenance -------------------------------------------------------------------

-- where(frame) -> what a person calls the page that wrote a text: its
-- frame's origin (from an http(s) URL when only that is known), or its
-- URL without query and fragment where an origin says nothing (file:)
function M.where(frame)
  frame = type(frame) == "table" and frame or {}
  local o = frame.origin
  if type(o) ~= "string" or o == "" or o == "null" then
    local url = tostring(frame.url or "?")
    o = url:match("^[hH][tT][tT][pP][sS]?://[^/?#]*") or url:match("^[^?#]*")
  end
  return (text.bounded(text.clean(o), M.MAX_TEXT))
end

-- provenance(frame, trusted) -> the _meta value that says a page wrote it
function M.provenance(frame, trusted)
  return { source = "page", page = M.where(frame), trusted = trusted and true or false }
end

-- The line a page tool's description ends with (unless the page is
-- trusted): the description is the page's words, not the user's nor this
-- server's, and a model that reads it should take it as such.
function M.provenance_line(frame)
  return "(Provided by the page at " .. M.where(frame) .. ".)"
end

-- ---- the served list -----------------------------------------------------------------

local function bounded(s, limit)
  return (text.bounded(tostring(s), limit))
end

-- entry(tool, name, trusted) -> {name, tool, descriptor}: descriptor is the MCP Tool
-- object (all versions' fields; server.lua drops what a version lacks)
local function entry(tool, name, trusted)
  local g = tool.group or {}
  local frame = type(g.frame) == "table" and g.frame or {}
  local schema, note = M.fit_schema(tool.input_schema)
  local desc = type(tool.description) == "string" and bounded(tool.description, M.MAX_DESCRIPTION) or ""
  local renamed = name ~= tool.name
  -- (the frame by its origin: a single-page app's URL changes at each
  -- route, its tools need not)
  local where = "tool " .. dt.json.encode(bounded(text.clean(tool.name), M.MAX_TEXT)) .. " of "
    .. (tool.kind == "webmcp" and "the page's WebMCP tools"
      or ("group " .. dt.json.encode(bounded(text.clean(g.name), M.MAX_TEXT))))
    .. " in a frame of " .. bounded(text.clean(frame.origin or frame.url), M.MAX_TEXT)
  if renamed then desc = desc .. (desc ~= "" and "\n\n" or "") .. "(On the page: " .. where .. ".)" end
  if note then desc = desc .. (desc ~= "" and "\n\n" or "") .. "(Note: " .. note .. ".)" end
  if not trusted then desc = desc .. (desc ~= "" and "\n\n" or "") .. M.provenance_line(frame) end
  local origin = {
    name = bounded(tool.name, M.MAX_TEXT), kind = tool.kind or g.kind or "devtools",
    group = g.name ~= nil and bounded(g.name, M.MAX_TEXT) or null,
    frame = { url = frame.url ~= nil and bounded(frame.url, M.MAX_TEXT) or null,
      origin = frame.origin ~= nil and bounded(frame.origin, M.MAX_TEXT) or null },
  }
  if type(tool.annotations) == "table" then origin.annotations = tool.annotations end
  local d = { name = name, description = desc, inputSchema = schema,
    _meta = { [M.META] = origin, [M.PROVENANCE] = M.provenance(frame, trusted) } }
  if renamed then d.title = bounded(text.clean(tool.name), 200) end
  d.annotations = M.annotations(tool.annotations)
  return { name = name, tool = tool, descriptor = d }
end

-- build(groups, opts?) -> list: one entry per tool of the groups, in page
-- order, each {name, tool, descriptor}; list.by_name maps names to
-- entries. opts.trusted: the page is the user's own (--trust-page): its
-- descriptions go without the provenance line.
function M.build(groups, opts)
  local trusted = opts and opts.trusted
  local tools = {}
  for _, g in ipairs(groups or {}) do
    for _, t in ipairs(g.tools or {}) do tools[#tools + 1] = t end
  end
  local names = M.names(tools)
  local list, by_name = {}, {}
  for i, t in ipairs(tools) do
    local e = entry(t, names[i], trusted)
    list[i] = e
    by_name[e.name] = e
  end
  return setmetatable(list, { __index = { by_name = by_name } })
end

-- signature(list) -> a text that is the same for two lists of the same
-- tools (names, titles, descriptions, schemas, annotations, where they
-- come from), key order aside. The frame's URL is left out: a
-- single-page app changes it at each route, and its tools may stay.
function M.signature(list, encode)
  local d = array{}
  for i, e in ipairs(list) do
    local x = e.descriptor
    local o = x._meta[M.META]
    d[i] = { x.name, x.title or null, x.description, x.inputSchema, x.annotations or null,
      o.name, o.kind, o.group, o.frame.origin, o.annotations or null }
  end
  return encode(d)
end

return M
