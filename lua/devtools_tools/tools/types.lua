-- devtools_tools.tools.types: the ToolGroup and Tool types a discovery
-- returns, and what a Tool does without calling anything: its name, its
-- document, its schema and the validation of arguments against it
-- (devtools_tools.schema). Calling is the kind's (tools/kinds.lua); the
-- public module devtools_tools.tools adds call to these types.
--
-- What it must never do: use a page-provided name as a key of one of our
-- objects or metatables (names are values in fields and lists), let its
-- schema work run past the deadline of the call it serves, or know how a
-- kind of tool is called.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local schema = require "devtools_tools.schema"

local raise = errors.raise
local now = core.now
local tostring, ipairs, setmetatable, getmetatable =
      tostring, ipairs, setmetatable, getmetatable

local M = {}

local ToolGroup = {}
ToolGroup.__index = ToolGroup
ToolGroup.__name = "devtools_tools.ToolGroup"
M.ToolGroup = ToolGroup

-- group:tool(name) -> Tool | nil (the first of that name in this group)
function ToolGroup:tool(name)
  if type(name) ~= "string" then
    raise("bad_argument", "tool: name must be a string, got " .. type(name))
  end
  for _, t in ipairs(self.tools) do
    if t.name == name then return t end
  end
  return nil
end

function ToolGroup:__tostring()
  return "ToolGroup(" .. tostring(self.name) .. ", " .. #self.tools .. " tools, frame "
    .. tostring(self.frame.url) .. ")"
end

local Tool = {}
Tool.__index = Tool
Tool.__name = "devtools_tools.Tool"
M.Tool = Tool

function M.is_tool(v) return getmetatable(v) == Tool end

-- new_group(fields) -> ToolGroup; new_tool(fields, doc, place) -> Tool
-- (discovery and WebMCP build them): doc, the handle of the document it
-- lives in (tools/document.lua); place, what its kind calls it by (for
-- the devtools kind {group = index, tool = index, clock = ms})
function M.new_group(fields) return setmetatable(fields, ToolGroup) end
function M.new_tool(fields, doc, place)
  fields._doc, fields._place = doc, place
  return setmetatable(fields, Tool)
end

-- document_of(tool) -> its document handle; place_of(tool) -> its place
function M.document_of(tool) return tool._doc end
function M.place_of(tool) return tool._place end

function Tool:__tostring()
  return "Tool(" .. tostring(self.name) .. ")"
end

local function timed_out(tool, what)
  raise("timeout", "tool " .. tool.name .. ": " .. what .. " took longer than the call's timeout",
    { tool = tool.name })
end

-- The validator is compiled once, on first use, within the deadline of the
-- call that needs it.
local function validator(tool, deadline)
  local v = tool._validator
  if v == nil then
    local ok, res = errors.catch(schema.compile, tool.input_schema, { deadline = deadline })
    if not ok then
      if res.code == "timeout" then timed_out(tool, "compiling its inputSchema") end
      raise("tool_error", "tool " .. tool.name .. " has an invalid inputSchema: " .. res.message,
        { tool = tool.name, details = res.details })
    end
    v = res
    tool._validator = v
    if deadline and now() > deadline then timed_out(tool, "compiling its inputSchema") end
  end
  return v
end

-- validate(args, deadline?) -> true | false, err (an invalid_params dt.Error)
-- Raises timeout when the schema work passes the deadline.
function Tool:validate(args, deadline)
  if args == nil then args = {} end
  local check = validator(self, deadline)
  local ok, res, errs = pcall(check, args, deadline)
  if not ok then
    if errors.is_error(res) and res.code == "timeout" then timed_out(self, "validating its arguments") end
    error(res, 0)
  end
  if deadline and now() > deadline then timed_out(self, "validating its arguments") end
  if res then return true end
  return false, errors.new("invalid_params", "Invalid parameters for tool " .. self.name .. ": "
    .. schema.format_errors(errs, "; "), { tool = self.name, details = errs })
end

-- shape(tool, args) -> the arguments as the tool's schema wants them on the
-- wire (e.g. an empty table where it says array is sent as []), never
-- changing args (after validate)
function M.shape(tool, args)
  if schema.shape and tool._validator then return schema.shape(tool._validator, args) end
  return args
end

return M
