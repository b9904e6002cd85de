-- devtools_tools.tools.discovery: finding the tools a page exposes through the
-- `devtoolstooldiscovery` event, in every frame, in a stable order.
--
-- Compatible with Chrome DevTools for agents (chrome-devtools-mcp): the same
-- listener check, the same event, the same group validation, the same
-- window.__dtmcp.toolGroups and window.__dtmcp.executeTool (js/discover.js).
-- Beyond it: tools in iframes (cross-origin ones live in their own target
-- sessions), one bad frame or group never hides the others: an iframe
-- whose discovery does not answer in time (a listener still running, or
-- a page that broke what the script waits with: setTimeout, Promise) is
-- skipped with a warning, within the caller's deadline.
--
-- What it must never do: use a page-provided name as a key of one of our
-- objects, trust a page value to be of the type it claims, start a clock of
-- its own (it runs within its caller's deadline), or write the page's
-- fields (it asks the page's site: page/site.lua, and its frames,
-- page/frames.lua, through their methods).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local errors = require "devtools_tools.base.errors"
local remote = require "devtools_tools.wire.remote"
local types = require "devtools_tools.tools.types"
local marshal = require "devtools_tools.tools.marshal"
local calls = require "devtools_tools.tools.calls"
local pagejs = require "devtools_tools.tools.pagejs"

local raise = errors.raise
local now = require("devtools_tools.core").now
local type, ipairs, pairs, error = type, ipairs, pairs, error
local min = math.min

local M = {}

-- The most values one tool's inputSchema may have once written out (a
-- sub-schema shared by several properties counts once for each use); a
-- frame's tools together may have ten times as many. Larger ones are
-- skipped with a warning (js/discover.js): the bound keeps a schema that
-- shares one sub-schema at every level (2^30 values written out) from
-- taking the page, the wire and the validator with it.
M.MAX_SCHEMA_VALUES = 100000

-- Every session of the page: its own, then the out-of-process iframes'
-- (but for one whose renderer crashed: it answers nothing).
local function sessions_of(docs)
  local list = { docs.session }
  for sid, child in pairs(docs.child_sessions) do
    if not child.crashed then list[#list + 1] = sid end
  end
  return list
end

-- The frames of the page in order: the main frame, then a depth-first walk
-- of each session's frame tree (same-process frames in document order). An
-- out-of-process iframe is not in its parent's tree: its own session's tree
-- is walked after the parent frame's same-process children, in the order
-- the iframes attached.
function M.ordered_frames(main_session, child_sessions, trees)
  local out = {}
  local oopif_children = {}           -- parent frame id -> list of child sessions
  for sid, info in pairs(child_sessions) do
    if trees[sid] and info.parent_frame then
      local l = oopif_children[info.parent_frame] or {}
      l[#l + 1] = sid
      oopif_children[info.parent_frame] = l
    end
  end
  for _, l in pairs(oopif_children) do
    table.sort(l, function(a, b) return child_sessions[a].order < child_sessions[b].order end)
  end
  local seen = {}
  local function walk(node, session)
    local f = node.frame
    if seen[f.id] then return end
    seen[f.id] = true
    out[#out + 1] = { id = f.id, url = f.url .. (f.urlFragment or ""), origin = f.securityOrigin,
      loader_id = f.loaderId, parent = f.parentId, session = session }
    for _, c in ipairs(node.childFrames or {}) do walk(c, session) end
    for _, sid in ipairs(oopif_children[f.id] or {}) do walk(trees[sid], sid) end
  end
  walk(trees[main_session], main_session)
  return out
end

-- tree_from_events(docs, session) -> a frame tree as Page.getFrameTree
-- gives, made from the frames the page's events told of (docs:
-- page/frames.lua), or nil. For a page whose tree Chromium cannot send
-- (frames nested some 150 deep: "CBOR: stack limit exceeded"); frames of
-- one parent in id order.
function M.tree_from_events(docs, session)
  local kids, root = {}, nil
  for id, fr in pairs(docs.frames) do
    if fr.session == session then
      local parent = fr.parent and docs.frames[fr.parent]
      if parent and parent.session == session then
        local l = kids[fr.parent] or {}
        l[#l + 1] = id
        kids[fr.parent] = l
      elseif root == nil or id == docs.main_frame then
        root = id
      end
    end
  end
  if root == nil then return nil end
  local function node(id)
    local fr = docs.frames[id]
    local n = { frame = { id = id, url = fr.url, securityOrigin = fr.origin, loaderId = fr.loader_id,
      parentId = fr.parent }, childFrames = {} }
    local l = kids[id] or {}
    table.sort(l)
    for i, c in ipairs(l) do n.childFrames[i] = node(c) end
    return n
  end
  return node(root)
end

-- Our page script checked the groups, but it runs among the page's own
-- globals (JSON, Array.prototype, Promise...), which a page may replace:
-- what comes back is checked again, a group at a time. Its index goes into
-- a call's expression: a small integer, never text.
local function index_ok(x) return type(x) == "number" and x >= 0 and x < 2 ^ 31 and x % 1 == 0 end
local function opt_string(x) return x == nil or type(x) == "string" end

local function group_ok(g)
  if type(g) ~= "table" or not index_ok(g.index) or type(g.name) ~= "string"
      or not opt_string(g.description) or type(g.tools) ~= "table" then
    return false
  end
  for _, t in ipairs(g.tools) do
    if type(t) ~= "table" or type(t.name) ~= "string" or not opt_string(t.description) then return false end
  end
  return true
end

local function add_group(doc, frame, g, out, clock)
  local fr = { id = frame.id, url = frame.url, origin = frame.origin }
  local group = types.new_group({
    name = g.name, description = g.description, tools = {}, frame = fr, kind = "devtools",
  })
  for ti, t in ipairs(g.tools) do
    group.tools[#group.tools + 1] = types.new_tool({
      name = t.name, description = t.description, input_schema = t.inputSchema, group = group, kind = "devtools",
    }, doc, { group = g.index, tool = ti - 1, clock = clock })
  end
  out[#out + 1] = group
end

-- received: when the answer came (core.now); with the page's clock as it
-- answered, the difference between the two clocks (ms), which call_many
-- uses to give the page its deadline on the page's own clock (calls.lua).
local function make_groups(site, frame, ctx, payload, out, warnings, where, skipped, received)
  if type(payload.groups) ~= "table" then return end
  local c = payload.clock
  local clock = type(c) == "number" and c == c and c > -math.huge and c < math.huge and c - received * 1000 or nil
  local doc
  for i, g in ipairs(payload.groups) do
    if group_ok(g) then
      doc = doc or site:document(frame.session, ctx, { id = frame.id, url = frame.url, origin = frame.origin },
        frame.loader_id)
      add_group(doc, frame, g, out, clock)
    else
      warnings[#warnings + 1] = "discovery answered a malformed group (#" .. i .. ")" .. where
        .. "; it is skipped (does the page replace JSON, Array or Promise methods?)"
      skipped[#skipped + 1] = { group = type(g) == "table" and type(g.name) == "string" and g.name or nil,
        reason = "discovery answered it malformed", frame = frame.url }
    end
  end
end

-- How long the iframes' discovery may take: half the time left when it
-- starts, at most IFRAME_WAIT seconds. The main frame's has the whole
-- deadline, and a main frame that does not answer is a timeout: its tools
-- are the page's own, and without them a call by name would find an
-- iframe's tool of that name, or none. An iframe that does not answer
-- within its share is skipped with a warning, and what the caller does
-- with the tools keeps the other half (a call with {timeout = 4} on a page
-- with such an iframe answered in 2 s, not a timeout after 4).
local IFRAME_WAIT = 10

-- discover(site, deadline) -> groups, warnings, epoch, navigated, skipped
-- (fresh, in every frame; site: the page's, page/site.lua; epoch: the
-- page's document epoch the result is about; navigated: a frame's
-- document went away under the discovery call; skipped: {group = name or
-- nil, reason =, frame = url} for each group, or frame, whose tools are
-- left out, in the order of the warnings)
function M.discover(site, deadline)
  local conn, docs = site.conn, site.docs
  conn:poll()
  -- Any document change from here on makes this discovery out of date.
  local epoch = docs.epoch
  -- 1. The frame trees of every session, and a barrier on each child
  --    session's Runtime.enable so that its contexts are known.
  local sessions = sessions_of(docs)
  local gone = docs:watch_frames()        -- frames that go away while the trees come
  local ids = {}
  for _, sid in ipairs(sessions) do
    if sid ~= docs.session and not docs.child_sessions[sid].ready then
      ids[#ids + 1] = { sid, conn:send("Runtime.enable", nil, sid, deadline), "barrier" }
    end
    ids[#ids + 1] = { sid, conn:send("Page.getFrameTree", nil, sid, deadline), "tree" }
  end
  -- With them, the window object of every main world we already know of
  -- (a context of a session not yet confirmed waits for the second round).
  -- (the remote objects of this discovery: windows and their listeners'
  -- handlers, released together at the end of step 2)
  local group, holders = remote.object_group(), {}
  local function release()              -- (on every way out of step 2 too)
    for sid in pairs(holders) do
      errors.catch(conn.send_nowait, conn, "Runtime.releaseObjectGroup", { objectGroup = group }, sid)
    end
    holders = {}
  end
  local function fail(e)
    release()
    error(e, 0)
  end
  local wins = {}                        -- (by context: a frame may have one in two sessions)
  for _, ctx in ipairs(docs:all_contexts()) do
    local child = docs.child_sessions[ctx.session]
    if ctx.session == docs.session or (child and child.ready) then
      holders[ctx.session] = true
      wins[ctx] = { ctx = ctx, id = conn:send("Runtime.evaluate", { expression = "window",
        contextId = ctx.id, objectGroup = group }, ctx.session, deadline) }
    end
  end
  local trees, failed = {}, {}
  for _, e in ipairs(ids) do
    local ok, r = errors.catch(conn.await, conn, e[2], deadline,
      e[3] == "tree" and "Page.getFrameTree" or "Runtime.enable")
    if ok then
      if e[3] == "tree" then trees[e[1]] = r.frameTree
      else docs:session_ready(e[1]) end
    elseif r.code ~= "protocol_error" then
      fail(r)                -- timeout, disconnected: the caller must know
    elseif e[1] ~= docs.session and remote.session_gone(r) then
      failed[#failed + 1] = e[1]
    end                      -- a child session that just went away: skip it
  end
  -- (one that answers as a session that is gone: an attach that failed;
  -- its frames are forgotten, those its parent's tree listed too)
  for _, sid in ipairs(failed) do docs:session_failed(sid) end
  -- A page closed meanwhile answers its requests with errors that a frame
  -- going away also gives (and are skipped here): not "no tools".
  local function not_closed()
    if site:closed() then raise("disconnected", "discover: the page was closed during discovery") end
  end
  if site:closed() then fail(errors.new("disconnected", "discover: the page was closed during discovery")) end
  -- a tree Chromium could not send (frames nested some 150 deep): the
  -- frames the events told of, for the page and each iframe's session
  for _, sid in ipairs(sessions) do
    if not trees[sid] and (sid == docs.session or docs.child_sessions[sid]) then
      trees[sid] = M.tree_from_events(docs, sid)
    end
  end
  if not trees[docs.session] then fail(errors.new("protocol_error", "discover: no frame tree for the page")) end
  local frames = M.ordered_frames(docs.session, docs.child_sessions, trees)

  -- Record what the trees say; events keep it current from here on.
  docs:record_frames(frames, gone)

  -- 2. The window object of each frame's main world, then its listeners.
  local todo = {}
  for _, f in ipairs(frames) do
    local ctx = docs:context(f.id, f.session)
    if ctx then todo[#todo + 1] = { frame = f, ctx = ctx } end
  end
  local function window_of(w)
    local ok, r = errors.catch(conn.await, conn, w.id, deadline, "Runtime.evaluate")
    if ok then return r.result and r.result.objectId end
    if r.code ~= "protocol_error" then fail(r) end
  end
  local pend, used = {}, {}
  for i, t in ipairs(todo) do
    if wins[t.ctx] then
      used[t.ctx] = true
    else                                   -- a context we learnt of just now
      holders[t.frame.session] = true
      pend[i] = conn:send("Runtime.evaluate", { expression = "window", contextId = t.ctx.id,
        objectGroup = group }, t.frame.session, deadline)
    end
  end
  for ctx, w in pairs(wins) do
    local oid = window_of(w)
    if used[ctx] then
      for _, t in ipairs(todo) do if t.ctx == ctx then t.window = oid end end
    end
  end
  for i, t in ipairs(todo) do
    if pend[i] then t.window = window_of({ id = pend[i] }) end
  end
  for i, t in ipairs(todo) do
    if t.window then
      pend[i] = conn:send("DOMDebugger.getEventListeners", { objectId = t.window }, t.frame.session, deadline)
    end
  end
  for i, t in ipairs(todo) do
    if t.window then
      local ok, r = errors.catch(conn.await, conn, pend[i], deadline, "DOMDebugger.getEventListeners")
      if ok then
        for _, l in ipairs(r.listeners or {}) do
          if l.type == "devtoolstooldiscovery" then t.listening = true break end
        end
      elseif r.code ~= "protocol_error" then fail(r) end
    end
  end
  release()

  -- 3. Dispatch the event where someone listens.
  for i, t in ipairs(todo) do
    if t.listening then
      pend[i] = conn:send("Runtime.callFunctionOn", { functionDeclaration = pagejs.DISCOVER,
        executionContextId = t.ctx.id, arguments = { { value = marshal.MAX_DEPTH }, { value = M.MAX_SCHEMA_VALUES } },
        awaitPromise = true, returnByValue = true }, t.frame.session, deadline)
    end
  end
  local groups, warnings, navigated, skipped = {}, {}, false, {}
  local function skip_frame(t, text, reason)
    warnings[#warnings + 1] = text
    skipped[#skipped + 1] = { reason = reason, frame = t.frame.url }
  end
  local function where(t)
    return t.frame.id ~= docs.main_frame and (" (frame " .. t.frame.url .. ")") or ""
  end
  local started = now()
  local iframe_deadline = min(started + (deadline - started) / 2, started + IFRAME_WAIT, deadline)
  for i, t in ipairs(todo) do
    if t.listening then
      local main = t.frame.id == docs.main_frame
      local ok, r = errors.catch(conn.await, conn, pend[i], main and deadline or iframe_deadline,
        "Runtime.callFunctionOn")
      local received = now()
      if not ok then
        if remote.is_navigation_error(r) or remote.never_ran(r) then
          warnings[#warnings + 1] = "frame " .. t.frame.url .. " navigated during discovery"
          navigated = true
        else
          if r.code == "timeout" or r.code == "cancelled" then
            site:timed_out(t.frame.session)    -- a busy listener: the next call stops it
          end
          if r.code == "timeout" and not main then
            local after = ("(after %.3g s: a devtoolstooldiscovery listener still running, or a page that "
              .. "replaced setTimeout or Promise)"):format(now() - started)
            skip_frame(t, "discovery did not answer in time in frame " .. t.frame.url .. " " .. after
              .. "; its tools are skipped", "discovery did not answer in time " .. after)
          else
            if r.code == "timeout" then
              r = errors.new("timeout", "discovery did not finish in time in the main frame " .. t.frame.url
                .. " (a devtoolstooldiscovery listener still running, or a page that replaced setTimeout "
                .. "or Promise)")
            end
            error(r, 0)
          end
        end
      elseif r.exceptionDetails then
        remote.release_thrown(conn, t.frame.session, r)
        local msg = remote.exception_info(r.exceptionDetails)
        skip_frame(t, "discovery failed in frame " .. t.frame.url .. ": " .. msg, "discovery failed: " .. msg)
      else
        local okd, payload = errors.catch(calls.decode_page_json, remote.remote_value(r.result) or "{}", "discover")
        if not okd or type(payload) ~= "table" then
          local why = okd and "" or (": " .. payload.message)
          skip_frame(t, "discovery answered something unreadable in frame " .. t.frame.url .. why
            .. "; its tools are skipped", "discovery answered something unreadable" .. why)
        else
          make_groups(site, t.frame, t.ctx.id, payload, groups, warnings, where(t), skipped, received)
          local ws = type(payload.warnings) == "table" and payload.warnings or {}
          local why = type(payload.skipped) == "table" and payload.skipped or {}
          for k, w in ipairs(ws) do
            warnings[#warnings + 1] = tostring(w) .. where(t)
            local s = why[k]
            skipped[#skipped + 1] = { group = type(s) == "table" and type(s[1]) == "string" and s[1] or nil,
              reason = type(s) == "table" and type(s[2]) == "string" and s[2] or tostring(w),
              frame = t.frame.url }
          end
        end
      end
    end
  end
  not_closed()
  return groups, warnings, epoch, navigated, skipped
end

-- find_in(groups, name) -> Tool | nil: the first group wins
function M.find_in(groups, name)
  for _, g in ipairs(groups) do
    for _, t in ipairs(g.tools) do
      if t.name == name then return t end
    end
  end
end

-- Edit distance between two short strings (for "did you mean").
local function distance(a, b)
  if #a > 64 or #b > 64 then return math.huge end
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    local ai = a:byte(i)
    for j = 1, #b do
      local cost = (ai == b:byte(j)) and 0 or 1
      local v = prev[j] + 1
      if cur[j - 1] + 1 < v then v = cur[j - 1] + 1 end
      if prev[j - 1] + cost < v then v = prev[j - 1] + cost end
      cur[j] = v
    end
    prev = cur
  end
  return prev[#b]
end

-- What a tool_not_found message says of what discovery left out: the
-- first few groups (or frames) skipped, each with its reason, cut short.
local SHOW_SKIPPED, REASON_CHARS = 3, 200

local function skipped_text(skipped)
  local parts = {}
  for i, s in ipairs(skipped) do
    if i > SHOW_SKIPPED then
      parts[#parts + 1] = "and " .. (#skipped - SHOW_SKIPPED) .. " more"
      break
    end
    local why = s.reason
    if #why > REASON_CHARS then why = why:sub(1, REASON_CHARS) .. "..." end
    parts[#parts + 1] = (s.group and (s.group .. ": ") or ("frame " .. tostring(s.frame) .. ": ")) .. why
  end
  local groups_n, frames_n = 0, 0
  for _, s in ipairs(skipped) do
    if s.group then groups_n = groups_n + 1 else frames_n = frames_n + 1 end
  end
  local head = {}
  if groups_n > 0 then head[#head + 1] = groups_n .. " group" .. (groups_n == 1 and "" or "s") end
  if frames_n > 0 then head[#head + 1] = frames_n .. " frame" .. (frames_n == 1 and "" or "s") end
  return table.concat(head, " and ") .. " skipped: " .. table.concat(parts, "; ")
end

-- not_found(name, groups, skipped?) -> a tool_not_found dt.Error listing
-- the names that exist (details.available), the nearest one
-- (details.nearest) and what discovery skipped (details.skipped: see
-- discover), all also in the message.
function M.not_found(name, groups, skipped)
  local names, seen = {}, {}
  local nearest, best = nil, math.huge
  for _, g in ipairs(groups or {}) do
    for _, t in ipairs(g.tools) do
      if type(t.name) == "string" and not seen[t.name] then
        seen[t.name] = true
        names[#names + 1] = t.name
        local d = distance(name:lower(), t.name:lower())
        if d < best then nearest, best = t.name, d end
      end
    end
  end
  skipped = skipped or {}
  local msg = "Tool " .. name .. " not found"
  local left_out = #skipped > 0 and ("; " .. skipped_text(skipped)) or ""
  if #names == 0 then
    msg = msg .. " (the page has no tools" .. left_out .. ")"
  else
    -- (no nearest when every name is too long to compare: see distance)
    msg = msg .. " (" .. (nearest and ("nearest: " .. nearest .. "; ") or "") .. "the page has "
      .. #names .. " tool" .. (#names == 1 and "" or "s") .. left_out .. ")"
  end
  return errors.new("tool_not_found", msg, { tool = name,
    details = { available = names, nearest = nearest, skipped = skipped } })
end

return M
