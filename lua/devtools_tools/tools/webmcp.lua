-- devtools_tools.tools.webmcp: the page's WebMCP tools (document.modelContext,
-- Chromium's experimental `WebMCP` CDP domain, behind
-- --enable-features=WebMCP, which dt.launch{webmcp = true} adds) as ToolGroups
-- of kind "webmcp" beside the devtoolstooldiscovery groups, called through
-- the same Tool API.
--
-- The registry (a Registry, which Page holds: page.webmcp) is kept from
-- events (toolsAdded, toolsRemoved, a frame that navigates or goes away),
-- so discovery reads it without a round trip of its own (the domain is
-- enabled with the page's other records, in devtools_tools.page.observe);
-- a call is WebMCP.invokeTool, answered by a toolResponded event. A tool
-- reaches the registry through its document handle (doc.site:webmcp()).
--
-- What it must never do: trust the page to validate arguments (Chromium
-- does not check them against inputSchema: we do, before sending), use a
-- page-provided name as a key of one of our objects (tools are kept in a
-- list; lookups compare fields), or wait inside an event handler.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local errors = require "devtools_tools.base.errors"
local types = require "devtools_tools.tools.types"
local calls = require "devtools_tools.tools.calls"
local remote = require "devtools_tools.wire.remote"

local raise = errors.raise
local type, tostring, ipairs, pairs, error, setmetatable = type, tostring, ipairs, pairs, error, setmetatable

local M = {}

-- The flag that turns the page API on in Chromium.
M.FEATURE = "WebMCP"

-- How a tool's result starts, as Chromium writes it: its invocation id
-- comes next, before the output, so the connection can cut the decoding of
-- a large one at its caller's deadline (cdp.lua's expect_event).
local RESPONDED = '{"method":"WebMCP.toolResponded","params":{"invocationId":"'
M.RESPONDED = RESPONDED

-- How many answers to invocations are kept until their caller reads them.
local KEEP_ANSWERS = 128

-- How many invocations whose caller gave up are remembered while their
-- result may still come (see give_up).
local KEEP_GIVEN_UP = 128

local Registry = {}
Registry.__index = Registry
M.Registry = Registry

-- new(site) -> Registry: the WebMCP tools of the page whose site it is
-- (page/site.lua: its frames, site.docs; its connection, site.conn)
function M.new(site)
  return setmetatable({ site = site, conn = site.conn, docs = site.docs,
    tools = {}, by_key = {}, dead = 0, seq = 0, answers = {}, answer_order = {},
    watched = {},        -- invocation id -> true: its result's decoding is bounded
    given_up = {},       -- invocation id -> {session, seq}: its caller gave up, its result not come
    n_given_up = 0, given_seq = 0 }, Registry)
end

-- st.tools: the registry in the order tools came; st.by_key finds a tool
-- by frame and name at once (a page may register thousands, one event
-- each: looking through the list for each made that quadratic, 16 s for
-- 10,000). A tool replaced or removed is marked dead and left in the list
-- until dead ones are half of it.
local function key_of(frame_id, name) return frame_id .. "\0" .. name end

local function compact(st)
  local kept = {}
  for _, t in ipairs(st.tools) do
    if not t.dead then kept[#kept + 1] = t end
  end
  st.tools, st.dead = kept, 0
end

local function kill(st, t)
  if t.dead then return end
  t.dead = true
  st.dead = (st.dead or 0) + 1
  local k = key_of(t.frame_id, t.name)
  if st.by_key[k] == t then st.by_key[k] = nil end
end

local function settle(st)
  if (st.dead or 0) > 64 and st.dead * 2 > #st.tools then compact(st) end
end

local function drop(st, pred)
  for _, t in ipairs(st.tools) do
    if not t.dead and pred(t) then kill(st, t) end
  end
  compact(st)
end

-- ---- invocations given up on ----------------------------------------------------------
-- A call that gave up (timed out, its frame gone) sends WebMCP.cancelInvocation;
-- the result or the cancellation that still comes is cut at once by the
-- connection (end_event) and forgotten. Until it comes the invocation is
-- remembered here, so that a page that goes forgets it at once in the
-- connection too (detached). A result that can no longer come is forgotten
-- now: its session ended (an out-of-process iframe removed during the
-- call, whose cancellation is never answered) or its renderer crashed;
-- and the oldest beyond KEEP_GIVEN_UP are forgotten here (the connection's
-- sweep forgets its own entry), so a page that answers no cancellation
-- cannot grow the list for as long as it stays open.

local function forget(st, id, tell_conn)
  if st.given_up[id] == nil then return end
  st.given_up[id] = nil
  st.n_given_up = st.n_given_up - 1
  if tell_conn then st.conn:end_event(id, false) end
end

local function forget_session(st, session)
  for id, g in pairs(st.given_up) do
    if g.session == session then forget(st, id, true) end
  end
end

-- Can a result (or a cancellation) still come on this session?
local function may_answer(st, session)
  if st.site:closed() then return false end
  local docs = st.docs
  if session == docs.session then return not docs.crashed end
  local child = docs.child_sessions[session]
  return child ~= nil and not child.crashed
end

local function give_up(st, id, session)
  if not may_answer(st, session) then
    st.conn:end_event(id, false)
    return
  end
  st.given_seq = st.given_seq + 1
  st.given_up[id] = { session = session, seq = st.given_seq }
  st.n_given_up = st.n_given_up + 1
  if st.n_given_up > KEEP_GIVEN_UP then
    local oldest, seq
    for k, g in pairs(st.given_up) do
      if not seq or g.seq < seq then oldest, seq = k, g.seq end
    end
    forget(st, oldest, false)
  end
end

local handlers = {}

handlers["WebMCP.toolsAdded"] = function(st, p, session)
  for _, t in ipairs(type(p.tools) == "table" and p.tools or {}) do
    if type(t) == "table" and type(t.name) == "string" and type(t.frameId) == "string" then
      local k = key_of(t.frameId, t.name)
      local old = st.by_key[k]
      if old then kill(st, old) end
      local fr = st.docs.frames[t.frameId]
      st.seq = st.seq + 1
      local rec = {
        name = t.name, description = t.description, input_schema = t.inputSchema,
        annotations = t.annotations, frame_id = t.frameId, backend_node_id = t.backendNodeId,
        session = (fr and fr.session) or session or st.docs.session, loader = fr and fr.loader_id,
        seq = st.seq,
      }
      st.tools[#st.tools + 1] = rec
      st.by_key[k] = rec
    end
  end
  settle(st)
end

handlers["WebMCP.toolsRemoved"] = function(st, p)
  for _, t in ipairs(type(p.tools) == "table" and p.tools or {}) do
    if type(t) == "table" and type(t.name) == "string" and type(t.frameId) == "string" then
      local old = st.by_key[key_of(t.frameId, t.name)]
      if old then kill(st, old) end
    end
  end
  settle(st)
end

handlers["WebMCP.toolResponded"] = function(st, p)
  local id = p.invocationId
  if type(id) ~= "string" then return end
  st.conn:end_event(id)                -- it came whole
  forget(st, id, false)
  if st.answers[id] == nil then
    local order = st.answer_order
    order[#order + 1] = id
    if #order > KEEP_ANSWERS then
      -- the oldest no caller waits for (call_many may have many in flight)
      for i = 1, #order do
        if not st.watched[order[i]] then
          st.answers[table.remove(order, i)] = nil
          break
        end
      end
    end
  end
  st.answers[id] = p
end

-- A new document in a frame: the tools of the old one are gone.
handlers["Page.frameNavigated"] = function(st, p)
  local f = p.frame
  if not f then return end
  drop(st, function(o) return o.frame_id == f.id and o.loader ~= f.loaderId end)
  -- Tools added before the frame was known learn their document now.
  for _, o in ipairs(st.tools) do
    if not o.dead and o.frame_id == f.id and o.loader == nil then o.loader = f.loaderId end
  end
end

handlers["Page.frameDetached"] = function(st, p)
  if p.reason ~= "swap" then drop(st, function(o) return o.frame_id == p.frameId end) end
end

-- An iframe's session ended: its tools went with it, and so did what
-- discovery knew of its WebMCP.enable (a new session each time: a page
-- with a cross-site iframe navigated 240 times kept 120).
handlers["Target.detachedFromTarget"] = function(st, p)
  drop(st, function(o) return o.session == p.sessionId end)
  if st.enabled and p.sessionId ~= nil then st.enabled[p.sessionId] = nil end
  if p.sessionId ~= nil then forget_session(st, p.sessionId) end
end

-- A renderer that crashed answers nothing more.
handlers["Inspector.targetCrashed"] = function(st, _, session)
  forget_session(st, session or st.docs.session)
end

-- registry:dispatch(method, params, session): every event of the page's
-- sessions (the page's dispatcher calls it)
function Registry:dispatch(method, params, session)
  local h = handlers[method]
  if h then h(self, params or {}, session) end
end

-- ---- discovery -------------------------------------------------------------------

-- An out-of-process iframe's session may take WebMCP.enable before its
-- document exists, and then report nothing: discovery enables the domain
-- again, in one pipelined round, on each child session whose document
-- changed since (the answer comes after the toolsAdded it triggers).
local function enable_children(st, deadline)
  local conn, pend, docs = st.conn, {}, st.docs
  st.enabled = st.enabled or {}
  for sid, info in pairs(docs.child_sessions) do
    local fr = docs.frames[info.target_id]
    local loader = fr and fr.loader_id or false
    if st.enabled[sid] ~= loader and not info.crashed then     -- (a crashed one answers nothing)
      pend[#pend + 1] = { sid = sid, loader = loader, id = conn:send("WebMCP.enable", nil, sid, deadline) }
    end
  end
  for _, e in ipairs(pend) do
    local ok, err = errors.catch(conn.await, conn, e.id, deadline, "WebMCP.enable")
    if ok then st.enabled[e.sid] = e.loader
    elseif err.code ~= "protocol_error" then error(err, 0) end
  end
end

-- registry:add_groups(groups, deadline): appends one "webmcp" group per
-- frame that has WebMCP tools, the main frame first, then frames in the
-- order their tools appeared.
function Registry:add_groups(groups, deadline)
  local st, docs = self, self.docs
  if deadline then enable_children(st, deadline) end
  local by_frame, order = {}, {}
  for _, t in ipairs(st.tools) do
    local fr = not t.dead and docs.frames[t.frame_id]
    local child = docs.child_sessions[t.session]
    if fr and (t.loader == nil or t.loader == fr.loader_id) and not (child and child.crashed) then
      local list = by_frame[t.frame_id]
      if not list then
        list = {}
        by_frame[t.frame_id] = list
        order[#order + 1] = t.frame_id
      end
      list[#list + 1] = t
    end
  end
  local main = docs.main_frame
  table.sort(order, function(a, b)
    if a == main then return b ~= main end
    if b == main then return false end
    return by_frame[a][1].seq < by_frame[b][1].seq
  end)
  for _, fid in ipairs(order) do
    local fr = docs.frames[fid]
    local frame = { id = fid, url = fr.url, origin = fr.origin }
    local group = types.new_group({
      name = "webmcp", kind = "webmcp",
      description = "WebMCP tools registered through document.modelContext",
      tools = {}, frame = frame,
    })
    for _, t in ipairs(by_frame[fid]) do
      group.tools[#group.tools + 1] = types.new_tool({
        name = t.name, description = t.description, annotations = t.annotations,
        backend_node_id = t.backend_node_id,
        -- Chromium may omit the schema (a tool without parameters)
        input_schema = type(t.input_schema) == "table" and t.input_schema or { type = "object" },
        group = group, kind = "webmcp",
      }, self.site:document(t.session, nil, frame, t.loader or fr.loader_id))
    end
    groups[#groups + 1] = group
  end
  return groups
end

-- ---- calling ---------------------------------------------------------------------

local function tool_failure(tool, a)
  local ex = type(a.exception) == "table" and a.exception or nil
  local stack = ex and type(ex.description) == "string" and ex.description or nil
  local message = a.errorText
  if type(message) ~= "string" or message == "" then
    -- as a devtools tool's failure reads: the Error's message, not "Error: ..."
    local first = stack and stack:match("^[^\n]*")
    local cls = ex and type(ex.className) == "string" and ex.className
    if first and cls and first:sub(1, #cls + 2) == cls .. ": " then first = first:sub(#cls + 3) end
    message = first or (ex and tostring(ex.value or ex.description or ex.className)) or "the tool failed"
  end
  raise("tool_error", message, { tool = tool.name,
    details = { message = message, stack = stack, name = ex and ex.className } })
end

-- registry:detached(): the page is gone, and the results its callers gave
-- up on will never come: the connection forgets them now (its sweep would,
-- after a while).
function Registry:detached()
  for id in pairs(self.given_up) do self.conn:end_event(id, false) end
  self.given_up, self.n_given_up = {}, 0
end

-- registry:unwatch(): a page:on_cdp("WebMCP.toolResponded") listener came:
-- the results of calls in flight are decoded whole for it, as later ones are.
function Registry:unwatch()
  for id in pairs(self.watched) do
    self.conn:end_event(id, false)
    self.watched[id] = nil
  end
end

-- A call goes in steps, so that call_many can check every entry before
-- anything is sent, then send them all, then learn every invocation's id,
-- and only then wait for answers:
--   prepare(tool, args, deadline) -> c  (arguments checked; nothing sent)
--   send(c, deadline)                   (WebMCP.invokeTool written)
--   ack(c, deadline)                    (its reply: the invocation id)
--   finish(c, deadline) -> value        (the toolResponded answer)
function M.prepare(tool, args, deadline)
  local c = calls.prepare(tool, args, "tool " .. tostring(tool.name), deadline)
  if c.els then
    raise("bad_argument", "tool " .. tool.name .. ": WebMCP tools take JSON arguments, not Elements",
      { tool = tool.name })
  end
  if c.doc:crashed() then
    raise("disconnected", "tool " .. tool.name .. ": the renderer of its iframe crashed", { tool = tool.name })
  end
  return c
end

function M.send(c, deadline)
  local tool, doc = c.tool, c.doc
  local conn = doc.conn
  local ok, id = errors.catch(conn.send, conn, "WebMCP.invokeTool", { frameId = doc.frame_id,
    toolName = tool.name, input = c.args }, doc.session, deadline)
  if ok then c.id = id else c.err = id end           -- (err: ack says it)
end

-- A failed invokeTool, as the caller should see it: a fresh Error (one the
-- connection gave may be shared by every request that failed with it).
local function invoke_failure(tool, r)
  local msg = r.details and r.details.message
  if remote.never_ran(r) then
    return errors.gone("tool " .. tool.name, { tool = tool.name, details = r.details })
  elseif remote.is_navigation_error(r) then
    return errors.navigated("tool " .. tool.name, { tool = tool.name, details = r.details })
  elseif r.code == "protocol_error" and type(msg) == "string" and msg:find("not found", 1, true) then
    return errors.new("tool_not_found", "Tool " .. tool.name .. " not found", { tool = tool.name,
      details = r.details })
  end
  return errors.new(r.code, r.message, { tool = tool.name, details = r.details })
end

function M.ack(c, deadline)
  if c.invocation or c.failed then return end
  local tool, doc = c.tool, c.doc
  local conn = doc.conn
  local ok, r = false, c.err
  if not r then
    -- Given up before the invocation's id came (the task cancelled, the
    -- deadline passed): the tool runs all the same, so it is cancelled as
    -- soon as its id is known.
    ok, r = errors.catch(conn.await, conn, c.id, deadline, "WebMCP.invokeTool", function(msg)
      local iid = type(msg) == "table" and type(msg.result) == "table" and msg.result.invocationId
      if type(iid) == "string" then
        conn:send_nowait("WebMCP.cancelInvocation", { invocationId = iid }, doc.session)
      end
    end)
  end
  if not ok then c.failed = invoke_failure(tool, r) return end
  local id = r.invocationId
  if type(id) ~= "string" then
    c.failed = errors.new("protocol_error", "tool " .. tool.name .. ": WebMCP.invokeTool gave no invocationId",
      { tool = tool.name })
    return
  end
  c.invocation = id
  -- The result is an event that names its invocation before the output:
  -- decoding a large one stops at this call's deadline (cdp's pump), unless
  -- a page:on_cdp listener wants it whole.
  local st = doc.site:webmcp()
  if not doc.site:heard("WebMCP.toolResponded") and st.answers[id] == nil then
    st.watched[id] = true
    conn:expect_event(RESPONDED, id, deadline)
  end
end

function M.finish(c, deadline)
  M.ack(c, deadline)
  if c.failed then error(c.failed, 0) end
  local tool, doc = c.tool, c.doc
  local conn = doc.conn
  local st = doc.site:webmcp()
  local id = c.invocation
  local answers = st.answers
  local docs = st.docs
  local ok2, got = errors.catch(conn.wait_for, conn, function()
    return answers[id] ~= nil or conn:event_cut(id) or docs.crashed or doc:crashed() or not doc:is_current()
  end, deadline)
  local a, e = answers[id], conn:event_cut(id)
  -- given up: a result that still comes is dropped, its decoding cut at once
  -- (unless a listener came meanwhile: see unwatch)
  if st.watched[id] then
    local gave_up = a == nil and e == nil
    conn:end_event(id, gave_up)
    if gave_up then give_up(st, id, doc.session) end
  end
  st.watched[id] = nil
  if a == nil then
    if e then
      raise("timeout", "tool " .. tool.name .. ": " .. e.message, { tool = tool.name, details = e.details })
    end
    conn:send_nowait("WebMCP.cancelInvocation", { invocationId = id }, doc.session)
    if not ok2 then error(got, 0) end
    doc:check_open()
    if doc:crashed() then
      raise("disconnected", "tool " .. tool.name .. ": the renderer of its iframe crashed", { tool = tool.name })
    end
    if not doc:is_current() then
      error(errors.navigated("tool " .. tool.name, { tool = tool.name }), 0)
    end
    error(errors.not_settled(tool.name), 0)
  end
  answers[id] = nil
  if a.status == "Completed" then
    return a.output
  elseif a.status == "Canceled" then
    raise("cancelled", "tool " .. tool.name .. ": the invocation was cancelled", { tool = tool.name })
  elseif a.status == "Error" then
    tool_failure(tool, a)
  end
  raise("protocol_error", "tool " .. tool.name .. ": unknown WebMCP status " .. tostring(a.status),
    { tool = tool.name })
end

-- call(tool, args, deadline) -> value: the steps above, one after another.
function M.call(tool, args, deadline)
  local c = M.prepare(tool, args, deadline)
  M.send(c, deadline)
  return M.finish(c, deadline)
end

-- The kind of WebMCP's tools (tools/kinds.lua): every invocation written,
-- then every invocation's id learnt, before any answer is awaited.
M.kind = {
  name = "webmcp",
  prepare = M.prepare,
  send = function(list, deadline) for _, c in ipairs(list) do M.send(c, deadline) end end,
  sent = function(list, deadline) for _, c in ipairs(list) do M.ack(c, deadline) end end,
  finish = M.finish,
  call = M.call,
}

return M
