-- devtools_tools.element: the Element type, a DOM element a tool returned
-- (or that is passed to one), bound to the document it lives in.
--
-- What it must never do: hold the element itself (only its backend node id:
-- the page keeps the node), or be made from page data (only the calling
-- code builds one, from a reference the page runtime marked).

local tostring, getmetatable, setmetatable = tostring, getmetatable, setmetatable

local M = {}

local Element = {}
Element.__index = Element
Element.__name = "devtools_tools.Element"
M.Element = Element

function Element:__tostring()
  return "Element(" .. tostring(self.description) .. ")"
end

function M.is_element(v)
  return getmetatable(v) == Element
end

-- new(fields) -> Element. fields: backend_node_id, description, frame
-- ({id, url, origin}), and the document it belongs to: _page, _frame_id, _loader.
function M.new(fields)
  return setmetatable(fields, Element)
end

-- stale(el) -> true when the element's document is gone
function M.stale(el)
  return not el._page:_is_current(el._frame_id, el._loader)
end

return M
