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

-- (rec: the call's record for page:on("call"), which the page keeps)
local function call(rec, self, args, deadline)
  if rec then rec.tool = self end
  local ok, r = errors.catch(kinds.call, self, args, deadline)
  if ok then return r end
  -- Nothing ran: the page's tools changed since the discovery its place
  -- was checked against. Once more, against a new one (which runs the
  -- tool if the page still holds it, else fails stale).
  if r.code == "stale" and type(r.details) == "table" and r.details.changed == true then
    return kinds.call(self, args, deadline)
  end
  error(r, 0)
end

-- call(args?, opts?) -> value. opts: timeout.
function Tool:call(args, opts)
  if getmetatable(self) ~= Tool then raise("bad_argument", "call: not a Tool") end
  opts = options.check(opts, options.TIMEOUT, "tool " .. tostring(self.name))
  local page = self._page
  page:_check_open()
  return page:_observed(self.name, args, call, self, args, page.conn:deadline(opts))
end

function Tool:__call(args, opts)
  return self:call(args, opts)
end

errors.guard_methods(ToolGroup, "ToolGroup", "group")
errors.guard_methods(Tool, "Tool", "tool")

return types
