-- devtools_tools.tools.calls: calling tools. Prepares a call (arguments checked,
-- validated and marshalled before anything is sent), sends it, or many of
-- them pipelined in one request per document, and turns the page's reply
-- envelope into a value or a dt.Error.
--
-- What it must never do: start a clock of its own (every function takes the
-- absolute deadline of the public call it serves), wait in anything but the
-- connection, or let one entry's failure take another entry's result.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local remote = require "devtools_tools.wire.remote"
local marshal = require "devtools_tools.tools.marshal"
local element = require "devtools_tools.tools.element"
local types = require "devtools_tools.tools.types"
local pagejs = require "devtools_tools.tools.pagejs"
local CALL_EXPR_HEAD, CALL_EXPR_TAIL = pagejs.CALL_EXPR_HEAD, pagejs.CALL_EXPR_TAIL

local raise = errors.raise
local now = core.now
local array_mt = core.array_mt
local json_decode = core.json.decode
local json_encode = require("devtools_tools.base.json").encode
local encode_args = require("devtools_tools.base.json").encode_finite   -- no NaN sent as null
local sfind, ssub = string.find, string.sub
local next = next
local type, tostring, tonumber, ipairs, setmetatable, getmetatable, error =
      type, tostring, tonumber, ipairs, setmetatable, getmetatable, error

local M = {}

local is_error, pcall = errors.is_error, pcall
local doc_of, place_of = types.document_of, types.place_of

-- What a call makes once per Tool and keeps: its request's text around
-- the arguments, its group's key, its schema as text. Held weakly: it
-- goes with the Tool.
local made = setmetatable({}, { __mode = "k" })
local function made_of(tool)
  local m = made[tool]
  if not m then
    m = {}
    made[tool] = m
  end
  return m
end

-- (a number past 2^53 as JavaScript meant it: 2**62 is written
-- 4611686018427388000, which Lua 5.3+ would read as another integer)
local JS_NUMBERS = { js_numbers = true }

local function decode_page_json(text, what)
  if type(text) ~= "string" then     -- (a page that replaced JSON.stringify, say)
    raise("protocol_error", what .. ": the page answered a " .. type(text) .. ", not JSON text")
  end
  local v, err = json_decode(text, JS_NUMBERS)
  if v == nil and err then raise("protocol_error", what .. ": the page sent malformed JSON: " .. err) end
  return v
end
M.decode_page_json = decode_page_json

-- Raises `stale` for a Tool whose document is gone (details: what
-- Chromium said, when it said so).
local function stale_tool(tool, details)
  error(errors.gone("tool " .. tool.name, { tool = tool.name, details = details }, " (its frame navigated"
    .. " or was removed); get it again with page:tool()"), 0)
end

-- A Tool kept from an earlier discovery runs only if the tool the page
-- would run for it is that tool. The page's list of groups is the latest
-- discovery's (js/discover.js), and its runtime runs the tool at the
-- Tool's place if the group there has the Tool's group name, else the
-- first tool of that name in a group of that name (js/runtime.js findTool).
-- Group names are not unique: a group of the same name put before it since
-- would run another tool (a cart's deleteAll ran the admin's). The same
-- name, description and schema there is taken as the tool.
local function schema_text(t)
  local m = made_of(t)
  local s = m.schema_text
  if s == nil then
    local ok, text = pcall(json_encode, t.input_schema)
    s = ok and text or false
    m.schema_text = s
  end
  return s
end

local function page_would_run(groups, tool)
  local by_index, order = {}, {}
  local frame_id, place = doc_of(tool).frame_id, place_of(tool)
  for _, g in ipairs(groups) do
    local first = g.kind ~= "webmcp" and g.frame.id == frame_id and g.tools[1]
    if first then
      by_index[place_of(first).group] = g
      order[#order + 1] = g
    end
  end
  local name, gname = tool.name, tool.group.name
  local g = by_index[place.group]
  local t = g and g.name == gname and g.tools[place.tool + 1]
  if t and t.name == name then return t end
  table.sort(order, function(a, b) return place_of(a.tools[1]).group < place_of(b.tools[1]).group end)
  for _, o in ipairs(order) do
    if o.name == gname then
      for _, x in ipairs(o.tools) do if x.name == name then return x end end
    end
  end
  return nil
end

local function check_place(tool, deadline)
  local site = doc_of(tool).site
  if tool.kind == "webmcp" or not site:latest_groups() then return end
  -- (what the page holds now, when its documents or tools changed since)
  local groups = site:current_groups(deadline)
  if site:in_latest(tool.group) then return end   -- from the latest discovery
  local there = page_would_run(groups, tool)
  if there and there.description == tool.description and schema_text(there) == schema_text(tool) then
    return
  end
  -- another tool would run, or none the latest discovery knows of (its
  -- frame skipped, say: what the page holds there is not known)
  raise("stale", "tool " .. tool.name .. ": the page's groups changed since it was found ("
    .. (there and ("another tool of that name, in a group named \"" .. tool.group.name .. "\", would run")
      or "the latest discovery did not find it") .. "); get it again with page:tool()",
    { tool = tool.name })
end

-- prepare(tool, args, who, deadline) -> {tool, args, els}: validation and
-- marshalling happen before anything is sent.
local function prepare(tool, args, who, deadline)
  args = marshal.check_args(args, who)
  local doc = doc_of(tool)
  doc:check_open(deadline)
  doc.conn:poll(true)         -- events already read; a late one shows as `navigated`
  if not doc:is_current() then
    stale_tool(tool)
  end
  check_place(tool, deadline)
  local ok, err = tool:validate(args, deadline)
  if not ok then error(err, 0) end
  local wire, els = marshal.extract_elements(types.shape(tool, args))
  if els then
    for _, el in ipairs(els) do
      if element.stale(el) then
        error(errors.gone("an Element passed to " .. tool.name, { tool = tool.name }), 0)
      end
      local ed = element.document_of(el)
      if ed.frame_id ~= doc.frame_id or not ed:same_page(doc) then
        raise("bad_argument", "an Element passed to " .. tool.name .. " lives in another frame ("
          .. tostring(el.frame and el.frame.url) .. ")", { tool = tool.name })
      end
    end
  end
  return { tool = tool, doc = doc, args = wire, els = els }
end
M.prepare = prepare

-- Resolves the Element arguments of prepared calls (all of one session and
-- context) to remote objects, pipelined. Returns the list of objectIds, in
-- call order, and sets c.el_first on each call.
local function resolve_elements(calls, deadline, group)
  local ids, els = {}, {}
  for _, c in ipairs(calls) do
    c.el_first = #els
    for _, el in ipairs(c.els or {}) do
      local doc = c.doc
      els[#els + 1] = { el = el, tool = c.tool, doc = doc }
      ids[#els] = doc.conn:send("DOM.resolveNode", { backendNodeId = el.backend_node_id,
        executionContextId = doc.context, objectGroup = group }, doc.session, deadline)
    end
  end
  local out = {}
  for i, e in ipairs(els) do
    local conn = e.doc.conn
    local ok, r = errors.catch(conn.await, conn, ids[i], deadline, "DOM.resolveNode")
    if not ok then
      if r.code == "protocol_error" then
        raise("stale", "an Element passed to " .. e.tool.name .. " is no longer in the document ("
          .. tostring(e.el.description) .. ")", { tool = e.tool.name })
      end
      error(r, 0)
    end
    out[i] = { objectId = r.object.objectId }
  end
  return out
end

-- What a call names its tool's group by (js/runtime.js findTool): the
-- group's name and the tool's description, so that the page runs no other
-- tool of that name in another group of that name, whatever discovery
-- (another task's, say) changed its list since this Tool was found.
local function group_key(tool)
  local m = made_of(tool)
  local k = m.group_key
  if k == nil then
    if type(tool.description) == "string" then
      k = setmetatable({ tool.group.name, tool.description }, array_mt)
    else
      k = tool.group.name
    end
    m.group_key = k
  end
  return k
end

-- The text of a tool's Runtime.evaluate request around its arguments
-- (Conn:send_text's head is head .. arguments .. tail). A Tool's session,
-- context and indexes are set when discovery makes it and never change,
-- so the text is made on its first call. The arguments stand inside the
-- expression, a JSON string: they go in as the content of one.
local function request_text(tool, doc)
  local m = made_of(tool)
  local head = m.req_head
  if head then return head, m.req_tail end
  local place = place_of(tool)
  local expr_head = json_encode(CALL_EXPR_HEAD .. place.group .. "," .. place.tool .. ","
    .. json_encode(tool.name) .. ",")
  head = '{"method":"Runtime.evaluate","sessionId":' .. json_encode(doc.session)
    .. ',"params":{"contextId":' .. json_encode(doc.context)
    .. ',"awaitPromise":true,"returnByValue":true,"expression":' .. ssub(expr_head, 1, -2)
  -- after the arguments: no elements, and the tool's group by name (js/runtime.js findTool)
  local tail = ssub(json_encode(",null," .. json_encode(group_key(tool)) .. CALL_EXPR_TAIL), 2) .. '},"id":'
  m.req_head, m.req_tail = head, tail
  return head, tail
end

-- (doc:navigating(): has Chromium started a navigation of the tool's own
-- frame? It then holds the request until the new document: it cannot run.
-- Not its parent's: the iframe's document runs on until the parent's new
-- one commits.)

-- Releases an operation's remote objects (its group), never raising: on
-- a failure's way out too (else they hold their DOM nodes until the
-- document goes).
local function release_group(conn, session, group)
  if group then
    errors.catch(conn.send_nowait, conn, "Runtime.releaseObjectGroup", { objectGroup = group }, session)
  end
end

-- Sends one prepared call; returns after writing.
local function send_call(c, deadline)
  local tool = c.tool
  -- A key "__proto__" is data: an object literal (and Chromium's reading of
  -- callFunctionOn arguments) would take it as the prototype, so such
  -- arguments travel as JSON text, which the page reads with JSON.parse.
  local argtext = encode_args(c.args)
  local proto = sfind(argtext, '"__proto__"', 1, true) ~= nil
  local doc = c.doc
  c.nav_known = doc:navigating()
  if not c.els then
    -- An expression with the arguments as literals (js/call_expr.js), in a
    -- request whose text is the tool's but for them.
    local head, tail = request_text(tool, doc)
    local lit = json_encode(proto and ("JSON.parse(" .. json_encode(argtext) .. ")") or argtext)
    c.id = doc.conn:send_text(head .. ssub(lit, 2, -2) .. tail, doc.session, deadline, true,
      "Runtime.evaluate")
    return
  end
  local place = place_of(tool)
  local arguments = { { value = setmetatable({ place.group, place.tool, tool.name,
    proto and argtext or c.args, group_key(tool) }, array_mt) } }
  local conn = doc.conn
  c.group = remote.object_group()         -- released once the reply is in (await_reply)
  local ok, err = pcall(function()
    for _, o in ipairs(resolve_elements({ c }, deadline, c.group)) do arguments[#arguments + 1] = o end
    c.id = conn:send("Runtime.callFunctionOn", { functionDeclaration = pagejs.CALL,
      executionContextId = doc.context, arguments = arguments, awaitPromise = true,
      returnByValue = true }, doc.session, deadline, true)
  end)
  if not ok then
    release_group(conn, doc.session, c.group)
    c.group = nil
    error(err, 0)
  end
end

-- How long the page may wait for a batch's slowest calls: the time left,
-- less a share for the answer to travel back, so that the calls that did
-- settle are answered before the deadline. The share is a quarter of a
-- short deadline, at most 0.25 s, and a tenth of a long one, at most 2 s:
-- on a loaded machine the answer's way back (the renderer's timer, the
-- browser process, our process) took more than 0.25 s, and the whole
-- batch, its settled calls too, timed out. -> ms from when the page starts
-- the batch, and the same end as a time of the page's clock (clock: its
-- offset from ours, measured by discovery), or nil. The page may start the
-- batch late (busy with its own work as the request came): it answers by
-- the time of its clock, so what settled still comes back in time.
local function batch_limit_ms(deadline, clock)
  local t = now()
  local left = deadline - t
  if left <= 0 then return 0, clock and t * 1000 + clock end
  -- no deadline, or one past what setTimeout takes (2^31 - 1 ms, about 24.8
  -- days; it fires at once past it): the page waits for every call
  if left * 1000 > 2147483647 then return -1 end
  local margin = math.min(left * 0.25, math.max(0.25, math.min(left * 0.1, 2)))
  return math.floor((left - margin) * 1000), clock and (deadline - margin) * 1000 + clock
end

-- Sends the calls of one batch (one session and context) as one request.
-- Does v hold a key "__proto__" at any depth? (See send_call.)
local function has_proto_key(v, depth)
  if depth > 64 then return true end        -- unusual enough: take the safe way
  for k, x in next, v do
    if k == "__proto__" then return true end
    if type(x) == "table" and has_proto_key(x, depth + 1) then return true end
  end
  return false
end

local function send_batch(b, deadline)
  local specs = setmetatable({}, array_mt)
  local group = remote.object_group()
  local tool = b.calls[1].tool
  local doc = b.calls[1].doc
  local ok, objs = pcall(resolve_elements, b.calls, deadline, group)
  if not ok then
    release_group(doc.conn, doc.session, group)
    error(objs, 0)
  end
  for i, c in ipairs(b.calls) do
    local args = c.args
    local place = place_of(c.tool)
    if has_proto_key(args, 0) then args = json_encode(args) end
    specs[i] = setmetatable({ place.group, place.tool, c.tool.name, args, c.el_first,
      c.els and #c.els or 0, group_key(c.tool) }, array_mt)
  end
  local limit, at = batch_limit_ms(deadline, place_of(tool).clock)
  local arguments = { { value = specs }, { value = limit }, { value = at or core.null } }
  for _, o in ipairs(objs) do arguments[#arguments + 1] = o end
  b.nav_known = doc:navigating()
  b.group = #objs > 0 and group or nil
  local sent, err = pcall(function()
    b.id = doc.conn:send("Runtime.callFunctionOn", { functionDeclaration = pagejs.BATCH,
      executionContextId = doc.context, arguments = arguments, awaitPromise = true,
      returnByValue = true }, doc.session, deadline, true)
  end)
  if not sent then
    release_group(doc.conn, doc.session, b.group)
    b.group = nil
    error(err, 0)
  end
end

-- The elements a result refers to -> their backend node ids (0-based).
local fetch_in

local function fetch_elements(c, n, key, deadline)
  local doc = c.doc
  local conn, session = doc.conn, doc.session
  local group = remote.object_group()
  local ok, backend = pcall(fetch_in, conn, session, doc, group, n, key, deadline)
  release_group(conn, session, group)
  if not ok then error(backend, 0) end
  return backend
end

fetch_in = function(conn, session, doc, group, n, key, deadline)
  local r = conn:await(conn:send("Runtime.callFunctionOn", { functionDeclaration = pagejs.TAKE,
    executionContextId = doc.context, arguments = { { value = key } },
    returnByValue = false, objectGroup = group }, session, deadline), deadline,
    "Runtime.callFunctionOn")
  local props = conn:await(conn:send("Runtime.getProperties", { objectId = r.result.objectId,
    ownProperties = true }, session, deadline), deadline, "Runtime.getProperties")
  -- What the page's array holds, not the envelope's count, says how many:
  -- a page may forge the envelope (n = 1e400 looped for ever).
  local oids, order = {}, {}
  for _, p in ipairs(type(props) == "table" and type(props.result) == "table" and props.result or {}) do
    local i = type(p) == "table" and tonumber(p.name)
    local v = i and type(p.value) == "table" and p.value
    if v and i >= 0 and i % 1 == 0 and i < n and type(v.objectId) == "string" and oids[i] == nil then
      oids[i] = v.objectId
      order[#order + 1] = i
    end
  end
  return element.backend_ids(conn, session, oids, order, deadline)
end

local function not_settled(tool)
  return errors.not_settled(tool.name)
end

-- Awaits the reply to request id (a call or a batch whose first call is
-- tool's) and returns the page's decoded envelope; CDP-level failures
-- become Errors.
-- nav_known: a navigation of the tool's frame had begun when the request
-- was sent. Then Chromium's "Cannot find context" means the request came
-- after the old document went: it did not run (page:call looks again).
-- Otherwise the document may have gone while the tool ran (one that
-- removed its own iframe): `navigated`, never run a second time.
local function await_reply(tool, doc, id, deadline, group, nav_known)
  local conn = doc.conn
  local ok, r = pcall(conn.await, conn, id, deadline, "tool " .. tool.name)
  if not ok and not is_error(r) then error(r, 0) end
  release_group(conn, doc.session, group)   -- the Element arguments' remote objects
  if not ok then
    if remote.session_gone(r) or (nav_known and remote.never_ran(r)) then
      stale_tool(tool, r.details)
    end
    if remote.is_navigation_error(r) then
      error(errors.navigated("tool " .. tool.name, { tool = tool.name, details = r.details }), 0)
    end
    -- (A reply cut while decoding is a timeout too, but the page answered:
    -- conn:await's message says so, under the tool's name.)
    if r.code == "timeout" and not (r.details and r.details.decoding) then
      doc:timed_out()
      error(not_settled(tool), 0)
    end
    -- A cancelled wait leaves the tool running as a timeout does.
    if r.code == "cancelled" then doc:timed_out() end
    r.tool = r.tool or tool.name
    error(r, 0)
  end
  if r.exceptionDetails then
    -- The call wrapper itself failed (it never throws for a tool's error).
    remote.release_thrown(conn, doc.session, r)
    local msg, details = remote.exception_info(r.exceptionDetails)
    raise("tool_error", "tool " .. tool.name .. ": " .. msg, { tool = tool.name, details = details })
  end
  local rr = r.result
  -- The transport decoded the page's JSON text in place (send's json_reply).
  if rr and rr.json ~= nil then return rr.json end
  if rr and rr.type == "undefined" then
    -- A call by expression in a document without our runtime (js/call_expr.js)
    raise("stale", "tool " .. tool.name .. ": the tools of this document are gone", { tool = tool.name })
  end
  if rr and rr.json_error then
    raise("protocol_error", "tool " .. tool.name .. ": the page sent malformed JSON: " .. rr.json_error,
      { tool = tool.name })
  end
  local text = remote.remote_value(rr)
  if type(text) ~= "string" then
    raise("protocol_error", "tool " .. tool.name .. ": unexpected reply from the page", { tool = tool.name })
  end
  return decode_page_json(text, "tool " .. tool.name)
end

-- A decoded envelope {"n":..,"k":..,"e":..,"v":..} or {"error":..} -> the
-- value, or raises.
local function open_envelope(c, env, deadline)
  local tool = c.tool
  if type(env) ~= "table" then
    raise("protocol_error", "tool " .. tool.name .. ": unexpected reply from the page", { tool = tool.name })
  end
  local e = env.error
  if e then
    if type(e) ~= "table" then e = { message = tostring(e) } end
    if e.kind == "not_found" then
      raise("tool_not_found", tostring(e.message), { tool = tool.name })
    elseif e.kind == "stale" then
      raise("stale", "tool " .. tool.name .. ": " .. tostring(e.message), { tool = tool.name })
    elseif e.kind == "changed" then
      -- nothing ran: the page's tools changed since the discovery this
      -- call relied on (js/runtime.js)
      c.doc.site:tools_changed()
      raise("stale", "tool " .. tool.name .. ": the page's tools changed since it was found (a "
        .. "devtoolstooldiscovery listener came or went, or the page navigated within its document)",
        { tool = tool.name, details = { changed = true } })
    elseif e.kind == "pending" then
      c.doc:timed_out()
      error(not_settled(tool), 0)
    end
    raise("tool_error", tostring(e.message), { tool = tool.name,
      details = { message = e.message, name = e.name, stack = e.stack, kind = e.kind } })
  end
  local v = env.v
  local n = env.n
  if type(n) == "number" and n > 0 and type(env.e) == "string" then
    local backend = fetch_elements(c, n, env.k, deadline)
    local frame, doc = tool.group.frame, c.doc
    local edoc = doc:bare()
    v = marshal.replace_elements(v, env.e, function(idx, description, text)
      if backend[idx] == nil then return nil end        -- not one of the page's elements: data
      if type(description) ~= "string" then description = "element" end
      if type(text) ~= "string" then text = "" end
      return element.new({ backend_node_id = backend[idx], description = description, text = text,
        frame = { id = doc.frame_id, url = frame.url, origin = frame.origin } }, edoc)
    end)
  end
  return v
end

-- call_tool(tool, args, deadline) -> value: one call, as an expression
-- when it has no Element arguments (js/call_expr.js)
function M.call_tool(tool, args, deadline)
  local c = prepare(tool, args, "tool " .. tostring(tool.name), deadline)
  send_call(c, deadline)
  return open_envelope(c, await_reply(tool, c.doc, c.id, deadline, c.group, c.nav_known), deadline)
end

-- Many calls (call_many): grouped by the document they run in, and each
-- group goes to the page as one request (js/batch.js).
local function send_many(list, deadline)
  local batches, by_doc = {}, {}
  for _, c in ipairs(list) do
    local key = c.doc.session .. "\0" .. c.doc.context
    local b = by_doc[key]
    if not b then
      b = { calls = {} }
      by_doc[key] = b
      batches[#batches + 1] = b
    end
    b.calls[#b.calls + 1] = c
    c.batch, c.slot = b, #b.calls
  end
  for _, b in ipairs(batches) do
    local ok, err = errors.catch(send_batch, b, deadline)
    if not ok then b.failed = err end
  end
end

-- The reply to a call's batch, awaited once for all its calls: b.envs (a
-- list of envelopes), or b.failed (the whole request failed).
local function batch_reply(b, deadline)
  if b.failed or b.envs then return end
  local tool = b.calls[1].tool
  local ok, envs = errors.catch(await_reply, tool, b.calls[1].doc, b.id, deadline, b.group, b.nav_known)
  if ok and (getmetatable(envs) ~= array_mt or #envs ~= #b.calls) then
    if type(envs) == "table" and envs.error then
      -- one envelope for the whole batch (e.g. the document is gone)
      local _
      _, envs = errors.catch(open_envelope, b.calls[1], envs, deadline)
      ok = false
    else
      ok, envs = false, errors.new("protocol_error", "call_many: unexpected reply from the page")
    end
  end
  if ok then b.envs = envs else b.failed = envs end
end

-- A call of a batch: its own envelope, or the batch's failure said in its
-- own name.
local function finish_one(c, deadline)
  local b = c.batch
  local sent_failed = b.failed ~= nil and b.envs == nil and b.id == nil
  batch_reply(b, deadline)
  if b.envs then return open_envelope(c, b.envs[c.slot], deadline) end
  local e = b.failed
  if sent_failed then error(e, 0) end         -- (the request was never written)
  local decoding = e.details and e.details.decoding
  if e.code == "timeout" and decoding then
    raise("timeout", "tool " .. c.tool.name .. ": the batch's reply came, but " .. decoding,
      { tool = c.tool.name, details = e.details })
  elseif e.code == "timeout" then
    error(not_settled(c.tool), 0)
  end
  raise(e.code, e.message, { tool = c.tool.name, details = e.details })
end

-- The kind of the devtoolstooldiscovery event's tools (tools/kinds.lua).
M.kind = {
  name = "devtools",
  prepare = function(tool, args, deadline, who)
    return prepare(tool, args, who or ("tool " .. tostring(tool.name)), deadline)
  end,
  send = send_many,
  finish = finish_one,
  call = M.call_tool,
}

return M
