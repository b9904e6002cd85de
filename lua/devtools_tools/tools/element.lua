-- devtools_tools.tools.element: the Element type, a DOM element a tool returned
-- (or that is passed to one), bound to the document it lives in.
--
-- What it must never do: hold the element itself (only its backend node id:
-- the page keeps the node), or be made from page data (only the calling
-- code builds one, from a reference the page runtime marked).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local tostring, setmetatable, getmetatable, rawget, ipairs, type =
      tostring, setmetatable, getmetatable, rawget, ipairs, type

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

-- new(fields, doc) -> Element. fields: backend_node_id, description, text
-- (the start of its text content, at most 80 characters), frame ({id,
-- url, origin}); doc: the handle of the document it belongs to
-- (tools/document.lua).
function M.new(fields, doc)
  fields._document = doc
  return setmetatable(fields, Element)
end

-- document_of(el) -> the handle of its document, nil for a table that is
-- no Element we made
function M.document_of(el)
  if getmetatable(el) ~= Element then return nil end
  return rawget(el, "_document")
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
  local doc = M.document_of(el)
  if doc == nil then return true end   -- not an Element we made: no document of ours
  return not doc:is_current()
end

return M
