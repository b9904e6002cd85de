-- devtools_tools.page.site: the page's face for what works inside it - the
-- document handles of tools/ (tools/document.lua lists what they ask),
-- discovery, and the page's own parts (navigation, evaluation, readiness,
-- its records). One per page (page.site); it answers from the page's
-- parts and reaches nothing else.
--
-- What it must never do: wait (but check_open, which lets a stuck script
-- of an earlier call be stopped, within the caller's deadline), or answer
-- for a page that is gone as if it were there.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local errors = require "devtools_tools.base.errors"
local document = require "devtools_tools.tools.document"

local raise = errors.raise
local tostring, setmetatable = tostring, setmetatable

local M = {}

local Site = {}
Site.__index = Site
M.Site = Site

-- new(page) -> Site. The page's parts it answers from: page.conn,
-- page.docs (page/frames.lua), page.probes, page.toolset, page.observation,
-- page.webmcp, page.closed.
function M.new(page)
  return setmetatable({ page = page, conn = page.conn, docs = page.docs }, Site)
end

-- check_alive(): raises disconnected when the page, its browser or its
-- renderer is gone
function Site:check_alive()
  local page = self.page
  if page.closed then raise("disconnected", "the page is closed") end
  if self.conn.closed then raise("disconnected", "the browser connection is closed: "
    .. tostring(self.conn.closed)) end
  if self.docs.crashed then
    raise("disconnected", "the page crashed (its renderer process died); page:reload() recovers")
  end
end

-- check_open(deadline?): check_alive, then a script an earlier call left
-- running is stopped (page/probes.lua)
function Site:check_open(deadline)
  self:check_alive()
  self.page.probes:unstick(deadline)
end

function Site:closed() return self.page.closed == true end

function Site:is_current(frame_id, loader, context)
  return not self.page.closed and self.docs:is_current(frame_id, loader, context)
end

function Site:timed_out(session)
  self.page.probes:timed_out(session)
end

function Site:navigating(frame_id)
  return self.docs.nav_requested[frame_id] == true
end

function Site:session_crashed(session)
  return self.docs:session_crashed(session)
end

-- The page's tool set, for a Tool kept from an earlier discovery
-- (tools/calls.lua): the latest discovery's groups, the groups now
-- (discovering again when a document or the tools changed), whether a
-- group is one of the latest.
function Site:latest_groups() return self.page.toolset:latest_groups() end
function Site:current_groups(deadline) return self.page.toolset:current_groups(deadline) end
function Site:in_latest(group) return self.page.toolset:in_latest(group) end

-- tools_changed(): the page's tools changed in a way no event told of (a
-- call answered "changed": js/runtime.js): whatever was discovered is out
-- of date, and its tools_changed listeners are told.
function Site:tools_changed()
  local docs = self.docs
  docs:tools_changed()
  if docs.watching then self.page.observation:tools_changed("listener") end
end

function Site:heard(method) return self.page.observation:heard(method) end
function Site:webmcp() return self.page.webmcp end

-- document(session, context, frame, loader) -> the handle of a document
-- (frame: {id, url, origin})
function Site:document(session, context, frame, loader)
  return document.new(self, session, context, frame, loader)
end

return M
