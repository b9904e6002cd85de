-- devtools_tools.tools: the ToolGroup and Tool types (tools/types.lua), with
-- the one thing they do that reaches the page: a Tool's call, through its
-- kind (tools/kinds.lua).
--
-- What it must never do: use a page-provided name as a key of one of our
-- objects or metatables, or wait in anything but its kind's steps (all of
-- them within the one deadline of the call).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local errors = require "devtools_tools.base.errors"
local options = require "devtools_tools.base.options"
local types = require "devtools_tools.tools.types"
local kinds = require "devtools_tools.tools.kinds"

local raise = errors.raise
local tostring, getmetatable = tostring, getmetatable

local Tool, ToolGroup = types.Tool, types.ToolGroup

-- Once more, the same Tool, when nothing ran because the page's tools
-- changed since the discovery its place was checked against (against a
-- new one: it runs if the page still holds the tool, else fails stale).
local function same_if_changed(err, self)
  if kinds.changed(err) then return self end
end

-- call(args?, opts?) -> value. opts: timeout.
function Tool:call(args, opts)
  if getmetatable(self) ~= Tool then raise("bad_argument", "call: not a Tool") end
  opts = options.check(opts, options.TIMEOUT, "tool " .. tostring(self.name))
  local doc = types.document_of(self)
  doc:check_open()
  local deadline = doc.conn:deadline(opts)
  return kinds.call_again(self, args, deadline, same_if_changed, self)
end

function Tool:__call(args, opts)
  return self:call(args, opts)
end

errors.guard_methods(ToolGroup, "ToolGroup", "group")
errors.guard_methods(Tool, "Tool", "tool")

return types
