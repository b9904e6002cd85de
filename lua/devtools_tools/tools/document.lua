-- devtools_tools.tools.document: a document handle - what a Tool, an
-- Element and a call need of the document they belong to: the connection,
-- the CDP session, the execution context, the frame and the loader of its
-- document, and the page's answers about it. Page makes them (through its
-- site, page/site.lua); tools/ holds and asks them, and reaches the page
-- through nothing else.
--
--   doc.conn, doc.session, doc.context (nil: none in particular), doc.frame_id,
--   doc.loader, doc.frame ({id, url, origin}: as a ToolGroup shows it),
--   doc.site (the page's answers: below)
--   doc:is_current() -> true while its frame shows that document (and
--                       that context, if it has one)
--   doc:timed_out()     a request on its session ran out of time (a busy
--                       script there: the page stops it before its next call)
--   doc:check_open(deadline)  raises disconnected when the page is gone
--   doc:navigating() -> true once a navigation of its frame has begun
--   doc:crashed() -> true when its session's renderer crashed
--   doc:same_page(other) -> true when other is a document of the same page
--
-- The site a page gives (page/site.lua) answers: is_current(frame_id,
-- loader, context), timed_out(session), check_open(deadline),
-- navigating(frame_id), session_crashed(session), and for a Tool kept
-- from an earlier discovery latest_groups(), current_groups(deadline),
-- in_latest(group), tools_changed(); heard(method) (a page:on_cdp listener
-- of that event), webmcp() (the page's WebMCP registry).
--
-- What it must never do: hold the page itself (only its site's answers),
-- or change what it names (a new document is a new handle).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local setmetatable, getmetatable, tostring = setmetatable, getmetatable, tostring

local M = {}

local Document = {}
Document.__index = Document
Document.__name = "devtools_tools.Document"
M.Document = Document

-- new(site, session, context, frame, loader) -> Document; frame: {id, url,
-- origin}
function M.new(site, session, context, frame, loader)
  return setmetatable({ site = site, conn = site.conn, session = session, context = context,
    frame_id = frame.id, frame = frame, loader = loader }, Document)
end

function M.is_document(v) return getmetatable(v) == Document end

function Document:is_current()
  return self.site:is_current(self.frame_id, self.loader, self.context)
end

function Document:timed_out()
  self.site:timed_out(self.session)
end

function Document:check_open(deadline)
  self.site:check_open(deadline)
end

function Document:navigating()
  return self.site:navigating(self.frame_id)
end

function Document:crashed()
  return self.site:session_crashed(self.session)
end

-- bare() -> the handle of the same document whatever its execution
-- context (an Element's: it lives in the document, not in a context)
function Document:bare()
  if self.context == nil then return self end
  local b = self.bare_doc
  if not b then
    b = M.new(self.site, self.session, nil, self.frame, self.loader)
    self.bare_doc = b
  end
  return b
end

function Document:same_page(other)
  return other ~= nil and self.site == other.site
end

function Document:__tostring()
  return "Document(" .. tostring(self.frame and self.frame.url) .. ")"
end

return M
