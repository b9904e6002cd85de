-- devtools_tools.tools.element: the Element type, a DOM element a tool returned
-- (or that is passed to one), bound to the document it lives in.
--
-- What it must never do: hold the element itself (only its backend node id:
-- the page keeps the node), or be made from page data (only the calling
-- code builds one, from a reference the page runtime marked).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local tostring, setmetatable, ipairs, type = tostring, setmetatable, ipairs, type

local M = {}

local Element = {}
Element.__index = Element
Element.__name = "devtools_tools.Element"
M.Element = Element

function Element:__tostring()
  return "Element(" .. tostring(self.description) .. ")"
end

-- is_element(v): the validator's rule (devtools_tools.schema.values, the one
-- place that knows what an element is: its metatable's __name), so the
-- library, the validator and the command line never disagree.
M.is_element = require("devtools_tools.schema.values").is_element

-- new(fields) -> Element. fields: backend_node_id, description, text (the
-- start of its text content, at most 80 characters), frame ({id, url, origin}), and the document it belongs to: _page, _frame_id, _loader.
function M.new(fields)
  return setmetatable(fields, Element)
end

-- backend_ids(conn, session, oids, order, deadline) -> {[i] = backend node
-- id}: the nodes of the remote objects oids[i] (i in order), described at
-- once (all sent, then all awaited); one that is no node is left out. What
-- a tool's result and page:evaluate{elements = true} both take elements by.
function M.backend_ids(conn, session, oids, order, deadline)
  local ids = {}
  for _, i in ipairs(order) do
    ids[i] = conn:send("DOM.describeNode", { objectId = oids[i] }, session, deadline)
  end
  local backend = {}
  for _, i in ipairs(order) do
    local d = conn:await(ids[i], deadline, "DOM.describeNode")
    local b = type(d) == "table" and type(d.node) == "table" and d.node.backendNodeId
    if type(b) == "number" then backend[i] = b end
  end
  return backend
end

-- stale(el) -> true when the element's document is gone
function M.stale(el)
  local page = rawget(el, "_page")
  if type(page) ~= "table" or type(page._is_current) ~= "function" then
    return true                     -- not an Element discovery made: no document of ours
  end
  return not page:_is_current(el._frame_id, el._loader)
end

return M
