-- devtools_tools.discovery: finding the tools a page exposes through the
-- `devtoolstooldiscovery` event, in every frame, and calling them.
--
-- Compatible with Chrome DevTools for agents (chrome-devtools-mcp): the same
-- listener check, the same event, the same group validation, the same
-- window.__dtmcp.toolGroups and window.__dtmcp.executeTool, the same
-- post-processing of results. Beyond it: tools in iframes (cross-origin ones
-- live in their own target sessions), elements as Lua objects, BigInt,
-- Symbol and depth limits with clear outcomes, structured errors.
--
-- What it must never do: use a page-provided name as a key of one of our
-- objects or metatables (names are values in lists), or trust a page value
-- to be of the type it claims.

local core = require "devtools_tools.core"
local errors = require "devtools_tools.errors"
local schema = require "devtools_tools.schema"
local pagemod = require "devtools_tools.page"

local raise = errors.raise
local array_mt = core.array_mt
local type, tostring, tonumber, ipairs, pairs, setmetatable, getmetatable, next =
      type, tostring, tonumber, ipairs, pairs, setmetatable, getmetatable, next

local M = {}

-- The key, in decoded results and encoded arguments, that marks an element.
-- A NUL byte no page puts in a key by accident.
local EL = "\0dt-element"
M.ELEMENT_KEY = EL
M.MAX_DEPTH = 512

-- ---- page-side JavaScript ---------------------------------------------------

-- Installed once per document by the discovery function; kept off
-- enumeration. `call` runs one tool and returns a JSON envelope string:
-- {"n": elements stashed, "v": value} or {"error": {...}}.
local RUNTIME_JS = [==[
const KEY = '__devtools_tools';
if (!window[KEY]) {
  const EL = '\u0000dt-element';
  const MAX_DEPTH = %d;
  const stash = new Map();
  const describeEl = (el) => {
    let d = (el.localName || el.nodeName || 'element').toLowerCase();
    if (el.id) d += '#' + el.id;
    if (el.classList) for (const c of Array.from(el.classList).slice(0, 3)) d += '.' + c;
    return d;
  };
  const errInfo = (e) => {
    let message;
    if (e instanceof Error || (e !== null && typeof e === 'object' && 'message' in e)) message = String(e.message);
    else if (e !== null && typeof e === 'object') { try { message = JSON.stringify(e); } catch (_) { message = String(e); } }
    else message = String(e);
    return { message, name: (e && typeof e === 'object' && e.name) ? String(e.name) : undefined,
             stack: (e && typeof e === 'object' && typeof e.stack === 'string') ? e.stack : undefined };
  };
  // The reference's post-processing, plus BigInt, Symbol and a depth limit.
  const processResult = (value, stashed) => {
    const ancestors = [];
    const walk = (data, parentEl, depth) => {
      if (depth > MAX_DEPTH) return '<Max depth>';
      if (typeof Element !== 'undefined' && data instanceof Element) {
        stashed.push(data);
        const ref = Object.create(null);
        ref[EL] = stashed.length - 1;
        ref.description = describeEl(data);
        return ref;
      }
      if (Array.isArray(data)) return data.map((item) => walk(item, parentEl, depth + 1));
      if (data !== null && typeof data === 'object') {
        while (ancestors.length > 0 && ancestors[ancestors.length - 1] !== parentEl) ancestors.pop();
        if (ancestors.includes(data)) return '<Circular reference>';
        ancestors.push(data);
        const proto = Object.getPrototypeOf(data);
        if (proto !== Object.prototype && proto !== null) {
          const ctor = data.constructor;
          return '<' + ((ctor && typeof ctor.name === 'string') ? ctor.name : 'Object') + ' instance>';
        }
        const out = Object.create(null);   // so a key "__proto__" stays data
        for (const [k, v] of Object.entries(data)) out[k] = walk(v, data, depth + 1);
        return out;
      }
      if (typeof data === 'function') return '<Function object>';
      if (typeof data === 'bigint') return data.toString() + 'n';
      if (typeof data === 'symbol') return data.toString();
      return data;
    };
    return walk(value, undefined, 0);
  };
  // Is the value already what processResult would make of it (plain
  // objects, arrays and JSON primitives, no cycles, not too deep)? Then
  // JSON.stringify gives the same text without building a copy.
  const isPlain = (value) => {
    const ancestors = [];
    const ok = (data, depth) => {
      const t = typeof data;
      if (t === 'string' || t === 'number' || t === 'boolean' || t === 'undefined' || data === null) return true;
      if (t !== 'object' || depth >= MAX_DEPTH) return false;
      if (Array.isArray(data)) {
        if (Object.getPrototypeOf(data) !== Array.prototype || ancestors.includes(data)) return false;
        ancestors.push(data);
        for (let i = 0; i < data.length; i++) if (!ok(data[i], depth + 1)) return false;
        ancestors.pop();
        return true;
      }
      if (Object.getPrototypeOf(data) !== Object.prototype || ancestors.includes(data)) return false;
      ancestors.push(data);
      for (const k in data) {
        if (!Object.prototype.hasOwnProperty.call(data, k)) continue;
        if (k === '__proto__' || !ok(data[k], depth + 1)) return false;
      }
      ancestors.pop();
      return true;
    };
    return ok(value, 0);
  };
  // Puts the elements passed as extra arguments back where Lua left markers.
  const restore = (v, els, depth) => {
    if (depth > MAX_DEPTH || v === null || typeof v !== 'object') return v;
    if (Array.isArray(v)) { for (let i = 0; i < v.length; i++) v[i] = restore(v[i], els, depth + 1); return v; }
    if (Object.prototype.hasOwnProperty.call(v, EL)) return els[v[EL]];
    for (const k of Object.keys(v)) v[k] = restore(v[k], els, depth + 1);
    return v;
  };
  const findTool = (gi, ti, name) => {
    const groups = window.__dtmcp && window.__dtmcp.toolGroups;
    if (!Array.isArray(groups)) return undefined;
    const g = groups[gi];
    if (g && Array.isArray(g.tools) && g.tools[ti] && g.tools[ti].name === name) return g.tools[ti];
    for (const group of groups) {
      const t = group && Array.isArray(group.tools) && group.tools.find((t) => t && t.name === name);
      if (t) return t;
    }
    return undefined;
  };
  const failed = (kind, e) => JSON.stringify({ error: Object.assign({ kind }, errInfo(e)) });
  // Elements a result holds wait here under a key the envelope names
  // ("k"), until Lua takes them. Requests carry no per-call id: identical
  // calls stay identical messages (Chromium answers those measurably faster).
  let stashKey = 0;
  const finish = (value) => {
    const stashed = [];
    let text;
    try { text = JSON.stringify(isPlain(value) ? value : processResult(value, stashed)); }
    catch (e) { return failed('result', e); }
    let head = '{"n":0';
    if (stashed.length) {
      stashKey += 1;
      stash.set(stashKey, stashed);
      if (stash.size > 64) stash.delete(stash.keys().next().value);
      head = '{"n":' + stashed.length + ',"k":' + stashKey;
    }
    return text === undefined ? head + '}' : head + ',"v":' + text + '}';
  };
  const rt = {
    // Like the reference's `await tool.execute(args)`, but a tool that
    // answers synchronously is answered without a trip through promises.
    call(gi, ti, name, args, els) {
      const tool = findTool(gi, ti, name);
      if (!tool) return JSON.stringify({ error: { kind: 'not_found', message: 'Tool ' + name + ' not found' } });
      if (els.length) args = restore(args, els, 0);
      let value;
      try { value = tool.execute(args); }
      catch (e) { return failed('tool', e); }
      if (value !== null && (typeof value === 'object' || typeof value === 'function')) {
        let then;
        try { then = value.then; } catch (e) { return failed('tool', e); }
        if (typeof then === 'function') {
          return Promise.resolve(value).then((v) => finish(v), (e) => failed('tool', e));
        }
      }
      return finish(value);
    },
    // Several calls in one round trip (call_many): an array of envelopes.
    batch(specs, els) {
      const out = new Array(specs.length);
      let pending = null;
      specs.forEach((s, i) => {
        let r;
        try { r = rt.call(s[0], s[1], s[2], s[3], els.slice(s[4], s[4] + s[5])); }
        catch (e) { r = failed('tool', e); }
        if (typeof r === 'string') out[i] = r;
        else (pending || (pending = [])).push(r.then((v) => { out[i] = v; }));
      });
      const join = () => '[' + out.join(',') + ']';
      return pending ? Promise.all(pending).then(join) : join();
    },
    take(key) { const s = stash.get(key) || []; stash.delete(key); return s; },
  };
  Object.defineProperty(window, KEY, { value: rt, enumerable: false, configurable: true });
}
]==]

-- Discovery, point by point as the reference does it: reset toolGroups,
-- dispatch the event with respondWith, validate each group, define
-- executeTool once, wait one setTimeout(0) only when nobody answered
-- synchronously. Invalid groups are reported with console.error and
-- returned as warnings.
local DISCOVER_JS = [==[
function () {
  ]==] .. RUNTIME_JS .. [==[
  if (window.__dtmcp) window.__dtmcp.toolGroups = [];
  return new Promise((resolve) => {
    const event = new CustomEvent('devtoolstooldiscovery');
    const groups = [];
    const warnings = [];
    const label = (g) => (g && typeof g.name === 'string') ? ' "' + g.name + '"' : '';
    event.respondWith = (toolGroup) => {
      if (!window.__dtmcp) window.__dtmcp = {};
      if (!window.__dtmcp.toolGroups) window.__dtmcp.toolGroups = [];
      let problem;
      if (toolGroup === null || typeof toolGroup !== 'object') problem = 'respondWith needs an object, got ' + (toolGroup === null ? 'null' : typeof toolGroup);
      else if (typeof toolGroup.name !== 'string') problem = 'name must be a string';
      else if (toolGroup.description && typeof toolGroup.description !== 'string') problem = 'description must be a string';
      else if (!Array.isArray(toolGroup.tools)) problem = 'tools must be an array';
      if (problem) {
        console.error('Invalid toolGroup:', toolGroup);
        warnings.push('Invalid toolGroup' + label(toolGroup) + ': ' + problem);
        return;
      }
      for (let i = 0; i < toolGroup.tools.length; i++) {
        const tool = toolGroup.tools[i];
        let bad;
        if (tool === null || typeof tool !== 'object') bad = 'is not an object';
        else if (typeof tool.name !== 'string') bad = 'name must be a string';
        else if (typeof tool.description !== 'string') bad = 'description must be a string';
        else if (typeof tool.inputSchema !== 'object') bad = 'inputSchema must be an object';
        else if (typeof tool.execute !== 'function') bad = 'execute must be a function';
        if (bad) {
          console.error('Invalid tool:', tool);
          warnings.push('Invalid tool ' + (tool && typeof tool.name === 'string' ? '"' + tool.name + '"' : '#' + (i + 1))
            + ' in group' + label(toolGroup) + ': ' + bad + '; group skipped');
          return;
        }
      }
      window.__dtmcp.toolGroups.push(toolGroup);
      if (!window.__dtmcp.executeTool) {
        window.__dtmcp.executeTool = async (toolName, args) => {
          if (!window.__dtmcp?.toolGroups || window.__dtmcp.toolGroups.length === 0) {
            throw new Error('No tools found on the page');
          }
          for (const group of window.__dtmcp.toolGroups) {
            const tool = group.tools?.find((t) => t.name === toolName);
            if (tool) return await tool.execute(args);
          }
          throw new Error(`Tool ${toolName} not found`);
        };
      }
      groups.push(toolGroup);
    };
    const finish = () => {
      const all = (window.__dtmcp && window.__dtmcp.toolGroups) || [];
      const out = [];
      for (const g of groups) {
        const desc = { index: all.indexOf(g), name: g.name, description: typeof g.description === 'string' ? g.description : undefined,
          tools: g.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema })) };
        try { JSON.stringify(desc); out.push(desc); }
        catch (e) { warnings.push('Invalid toolGroup' + label(g) + ': its schemas are not JSON (' + e.message + '); group skipped'); }
      }
      resolve(JSON.stringify({ groups: out, warnings }));
    };
    window.dispatchEvent(event);
    if (groups.length > 0) finish(); else setTimeout(finish, 0);
  });
}
]==]
DISCOVER_JS = DISCOVER_JS:gsub("%%d", tostring(M.MAX_DEPTH))

-- One call: spec is [groupIndex, toolIndex, name, args]; element
-- arguments follow as remote objects.
local CALL_JS = [==[
function (spec, ...els) {
  const rt = window.__devtools_tools;
  if (!rt) return '{"error":{"kind":"stale","message":"the tools of this document are gone"}}';
  return rt.call(spec[0], spec[1], spec[2], spec[3], els);
}
]==]

-- Many calls: each spec also holds [.., firstElement, elementCount].
local BATCH_JS = [==[
function (specs, ...els) {
  const rt = window.__devtools_tools;
  if (!rt) return '{"error":{"kind":"stale","message":"the tools of this document are gone"}}';
  return rt.batch(specs, els);
}
]==]

local TAKE_JS = [==[
function (key) { const rt = window.__devtools_tools; return rt ? rt.take(key) : []; }
]==]

-- ---- Element -------------------------------------------------------------------

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

local function element_stale(el)
  local fr = el._page.frames[el._frame_id]
  return el._page.closed or not fr or fr.loader_id ~= el._loader
end

-- ---- ToolGroup and Tool --------------------------------------------------------

local ToolGroup = {}
ToolGroup.__index = ToolGroup
ToolGroup.__name = "devtools_tools.ToolGroup"
M.ToolGroup = ToolGroup

-- group:tool(name) -> Tool | nil (the first of that name in this group)
function ToolGroup:tool(name)
  for _, t in ipairs(self.tools) do
    if t.name == name then return t end
  end
  return nil
end

function ToolGroup:__tostring()
  return "ToolGroup(" .. tostring(self.name) .. ", " .. #self.tools .. " tools, frame "
    .. tostring(self.frame.url) .. ")"
end

local Tool = {}
Tool.__index = Tool
Tool.__name = "devtools_tools.Tool"
M.Tool = Tool

function Tool:__tostring()
  return "Tool(" .. tostring(self.name) .. ")"
end

function Tool:__call(args, opts)
  return self:call(args, opts)
end

-- The validator is compiled once, on first use.
local function validator(tool)
  local v = tool._validator
  if v == nil then
    local ok, res = errors.catch(schema.compile, tool.input_schema)
    if not ok then
      raise("tool_error", "tool " .. tool.name .. " has an invalid inputSchema: " .. res.message,
        { tool = tool.name, details = res.details })
    end
    v = res
    tool._validator = v
  end
  return v
end

-- tool:validate(args) -> true | false, err (an invalid_params dt.Error)
function Tool:validate(args)
  if args == nil then args = {} end
  local ok, errs = validator(self)(args)
  if ok then return true end
  return false, errors.new("invalid_params", "Invalid parameters for tool " .. self.name .. ": "
    .. schema.format_errors(errs, "; "), { tool = self.name, details = errs })
end

-- ---- discovery ------------------------------------------------------------------

-- Every session of the page: its own, then the out-of-process iframes'.
local function sessions_of(page)
  local list = { page.session }
  for sid in pairs(page.child_sessions) do list[#list + 1] = sid end
  return list
end

-- The frames of the page in order: the main frame, then a depth-first walk
-- of each session's frame tree (same-process frames in document order). An
-- out-of-process iframe is not in its parent's tree: its own session's tree
-- is walked after the parent frame's same-process children, in the order
-- the iframes attached.
local function ordered_frames(page, trees)
  local out = {}
  local oopif_children = {}           -- parent frame id -> list of child sessions
  for sid, info in pairs(page.child_sessions) do
    if trees[sid] and info.parent_frame then
      local l = oopif_children[info.parent_frame] or {}
      l[#l + 1] = sid
      oopif_children[info.parent_frame] = l
    end
  end
  for _, l in pairs(oopif_children) do
    table.sort(l, function(a, b) return page.child_sessions[a].order < page.child_sessions[b].order end)
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
  walk(trees[page.session], page.session)
  return out
end

local json_decode = core.json_decode

local function decode_page_json(text, what)
  local v, err = json_decode(text)
  if v == nil and err then raise("protocol_error", what .. ": the page sent malformed JSON: " .. err) end
  return v
end

local function make_groups(page, frame, ctx, payload, out)
  for _, g in ipairs(payload.groups or {}) do
    local fr = { id = frame.id, url = frame.url, origin = frame.origin }
    local group = setmetatable({
      name = g.name, description = g.description, tools = {}, frame = fr,
    }, ToolGroup)
    for ti, t in ipairs(g.tools or {}) do
      group.tools[#group.tools + 1] = setmetatable({
        name = t.name, description = t.description, input_schema = t.inputSchema, group = group,
        _page = page, _session = frame.session, _context = ctx, _frame_id = frame.id,
        _loader = frame.loader_id, _gi = g.index, _ti = ti - 1,
      }, Tool)
    end
    out[#out + 1] = group
  end
end

-- discover(page, opts) -> groups, warnings (fresh, in every frame)
function M.discover(page, opts)
  local conn = page.conn
  local deadline = conn:deadline(opts)
  conn:poll()
  -- Any document change from here on makes this discovery out of date.
  local epoch = page.epoch
  -- 1. The frame trees of every session, and a barrier on each child
  --    session's Runtime.enable so that its contexts are known.
  local sessions = sessions_of(page)
  local ids = {}
  for _, sid in ipairs(sessions) do
    if sid ~= page.session and not page.child_sessions[sid].ready then
      ids[#ids + 1] = { sid, conn:send("Runtime.enable", nil, sid, deadline), "barrier" }
    end
    ids[#ids + 1] = { sid, conn:send("Page.getFrameTree", nil, sid, deadline), "tree" }
  end
  -- With them, the window object of every main world we already know of
  -- (a context of a session not yet confirmed waits for the second round).
  local wins = {}
  for fid, ctx in pairs(page.contexts) do
    local child = page.child_sessions[ctx.session]
    if ctx.session == page.session or (child and child.ready) then
      wins[fid] = { ctx = ctx, id = conn:send("Runtime.evaluate", { expression = "window",
        contextId = ctx.id, objectGroup = "devtools_tools" }, ctx.session, deadline) }
    end
  end
  local trees = {}
  for _, e in ipairs(ids) do
    local ok, r = errors.catch(conn.await, conn, e[2], deadline, e[3] == "tree" and "Page.getFrameTree" or "Runtime.enable")
    if ok then
      if e[3] == "tree" then trees[e[1]] = r.frameTree
      else page.child_sessions[e[1]].ready = true end
    elseif r.code ~= "protocol_error" then
      error(r, 0)            -- timeout, disconnected: the caller must know
    end                      -- a child session that just went away: skip it
  end
  if not trees[page.session] then raise("protocol_error", "discover: no frame tree for the page") end
  local frames = ordered_frames(page, trees)

  -- Record what the trees say; events keep it current from here on.
  for _, f in ipairs(frames) do
    local fr = page.frames[f.id] or {}
    page.frames[f.id] = fr
    fr.id, fr.url, fr.origin, fr.parent, fr.session = f.id, f.url, f.origin, f.parent, f.session
    fr.loader_id = f.loader_id
  end

  -- 2. The window object of each frame's main world, then its listeners.
  local todo = {}
  for _, f in ipairs(frames) do
    local ctx = page.contexts[f.id]
    if ctx and ctx.session == f.session then todo[#todo + 1] = { frame = f, ctx = ctx } end
  end
  local function window_of(w)
    local ok, r = errors.catch(conn.await, conn, w.id, deadline, "Runtime.evaluate")
    if ok then return r.result and r.result.objectId end
    if r.code ~= "protocol_error" then error(r, 0) end
  end
  local calls, used = {}, {}
  for i, t in ipairs(todo) do
    local w = wins[t.frame.id]
    if w and w.ctx == t.ctx then
      used[t.frame.id] = true
    else                                   -- a context we learnt of just now
      calls[i] = conn:send("Runtime.evaluate", { expression = "window", contextId = t.ctx.id,
        objectGroup = "devtools_tools" }, t.frame.session, deadline)
    end
  end
  for fid, w in pairs(wins) do
    local oid = window_of(w)
    if used[fid] then
      for _, t in ipairs(todo) do if t.frame.id == fid then t.window = oid end end
    elseif oid then
      conn:send_nowait("Runtime.releaseObject", { objectId = oid }, w.ctx.session)
    end
  end
  for i, t in ipairs(todo) do
    if calls[i] then t.window = window_of({ id = calls[i] }) end
  end
  for i, t in ipairs(todo) do
    if t.window then
      calls[i] = conn:send("DOMDebugger.getEventListeners", { objectId = t.window }, t.frame.session, deadline)
    end
  end
  for i, t in ipairs(todo) do
    if t.window then
      local ok, r = errors.catch(conn.await, conn, calls[i], deadline, "DOMDebugger.getEventListeners")
      if ok then
        for _, l in ipairs(r.listeners or {}) do
          if l.type == "devtoolstooldiscovery" then t.listening = true break end
        end
      elseif r.code ~= "protocol_error" then error(r, 0) end
      conn:send_nowait("Runtime.releaseObject", { objectId = t.window }, t.frame.session)
    end
  end

  -- 3. Dispatch the event where someone listens.
  for i, t in ipairs(todo) do
    if t.listening then
      calls[i] = conn:send("Runtime.callFunctionOn", { functionDeclaration = DISCOVER_JS,
        executionContextId = t.ctx.id, awaitPromise = true, returnByValue = true },
        t.frame.session, deadline)
    end
  end
  local groups, warnings = {}, {}
  for i, t in ipairs(todo) do
    if t.listening then
      local ok, r = errors.catch(conn.await, conn, calls[i], deadline, "Runtime.callFunctionOn")
      if not ok then
        if pagemod.is_navigation_error(r) then
          warnings[#warnings + 1] = "frame " .. t.frame.url .. " navigated during discovery"
        else
          error(r, 0)
        end
      elseif r.exceptionDetails then
        local msg = pagemod.exception_info(r.exceptionDetails)
        warnings[#warnings + 1] = "discovery failed in frame " .. t.frame.url .. ": " .. msg
      else
        local payload = decode_page_json(pagemod.remote_value(r.result) or "{}", "discover")
        make_groups(page, t.frame, t.ctx.id, payload, groups)
        for _, w in ipairs(payload.warnings or {}) do
          warnings[#warnings + 1] = w .. (t.frame.id ~= page.main_frame and (" (frame " .. t.frame.url .. ")") or "")
        end
      end
    end
  end
  page._tool_cache = { epoch = epoch, groups = groups, warnings = warnings }
  return groups, warnings
end

-- Is the cached discovery still about the documents the page shows?
local function cache_valid(page)
  local c = page._tool_cache
  if not c then return false end
  page.conn:poll()
  return c.epoch == page.epoch
end

function M.tool_groups(page, opts)
  if cache_valid(page) then return page._tool_cache.groups, page._tool_cache.warnings end
  return M.discover(page, opts)
end

-- find(page, name, opts) -> Tool | nil: main frame first, then frames in
-- document order (the order of the groups); the first group wins.
local function find_in(groups, name)
  for _, g in ipairs(groups) do
    for _, t in ipairs(g.tools) do
      if t.name == name then return t end
    end
  end
end

function M.find(page, name, opts)
  local groups = M.tool_groups(page, opts)
  local t = find_in(groups, name)
  if t == nil and not page._tool_cache.fresh_miss then
    -- A page may register its listener late: look again once per document.
    groups = M.discover(page, opts)
    page._tool_cache.fresh_miss = true
    t = find_in(groups, name)
  end
  return t
end

-- ---- calling ----------------------------------------------------------------------

local function check_args(args, who)
  if args == nil then return {} end
  if type(args) ~= "table" or getmetatable(args) == Element then
    raise("bad_argument", who .. ": args must be a table (or nil), got " .. type(args))
  end
  if getmetatable(args) == array_mt or (args[1] ~= nil) then
    raise("bad_argument", who .. ": args must be a table of named arguments (a JSON object), not a list")
  end
  return args
end

-- Replaces Element objects in args by markers; returns the new args and the
-- list of elements (nil when there are none, the common case: no copy).
local function walk_elements(v, els, depth)
  if depth > M.MAX_DEPTH then return v end
  local mt = getmetatable(v)
  if mt == Element then
    els[#els + 1] = v
    return { [EL] = #els - 1 }
  end
  local copy
  for k, x in next, v do
    if type(x) == "table" then
      local y = walk_elements(x, els, depth + 1)
      if y ~= x then
        if not copy then
          copy = {}
          for k2, x2 in next, v do copy[k2] = x2 end
          if mt == array_mt then setmetatable(copy, array_mt) end
        end
        copy[k] = y
      end
    end
  end
  return copy or v
end

local function extract_elements(args)
  for _, x in next, args do
    if type(x) == "table" then          -- only nested tables can hold elements
      local els = {}
      local out = walk_elements(args, els, 0)
      if #els > 0 then return out, els end
      return args, nil
    end
  end
  return args, nil
end

-- Prepares one call: validation and encoding happen before anything is sent.
-- Returns a record {tool, session, params, els}.
local function prepare(tool, args, who)
  args = check_args(args, who)
  local page = tool._page
  if page.closed then raise("disconnected", "the page is closed") end
  page.conn:poll(true)        -- events already read; a late one shows as `navigated`
  local fr = page.frames[tool._frame_id]
  local ctx = page.contexts[tool._frame_id]
  if not fr or fr.loader_id ~= tool._loader or not ctx or ctx.id ~= tool._context then
    raise("stale", "tool " .. tool.name .. " belongs to a document that is gone (its frame navigated"
      .. " or was removed); get it again with page:tool()", { tool = tool.name })
  end
  local ok, err = tool:validate(args)
  if not ok then error(err, 0) end
  local wire, els = extract_elements(args)
  if els then
    for _, el in ipairs(els) do
      if element_stale(el) then
        raise("stale", "an Element passed to " .. tool.name .. " belongs to a document that is gone",
          { tool = tool.name })
      end
      if el._frame_id ~= tool._frame_id then
        raise("bad_argument", "an Element passed to " .. tool.name .. " lives in another frame ("
          .. tostring(el._page.frames[el._frame_id].url) .. ")", { tool = tool.name })
      end
    end
  end
  return { tool = tool, args = wire, els = els }
end

-- Resolves the Element arguments of prepared calls (all of one session and
-- context) to remote objects, pipelined. Returns the list of objectIds, in
-- call order, and sets c.el_first on each call.
local function resolve_elements(calls, deadline)
  local ids, els = {}, {}
  for _, c in ipairs(calls) do
    c.el_first = #els
    for _, el in ipairs(c.els or {}) do
      local tool = c.tool
      els[#els + 1] = { el = el, tool = tool }
      ids[#els] = tool._page.conn:send("DOM.resolveNode", { backendNodeId = el.backend_node_id,
        executionContextId = tool._context, objectGroup = "devtools_tools" }, tool._session, deadline)
    end
  end
  local out = {}
  for i, e in ipairs(els) do
    local ok, r = pcall(e.tool._page.conn.await, e.tool._page.conn, ids[i], deadline, "DOM.resolveNode")
    if not ok then
      if errors.is_error(r) and r.code == "protocol_error" then
        raise("stale", "an Element passed to " .. e.tool.name .. " is no longer in the document ("
          .. tostring(e.el.description) .. ")", { tool = e.tool.name })
      end
      error(r, 0)
    end
    out[i] = { objectId = r.object.objectId }
  end
  return out
end

-- Sends one prepared call; returns after writing.
local function send_call(c, deadline)
  local tool = c.tool
  local arguments = { { value = setmetatable({ tool._gi, tool._ti, tool.name, c.args }, array_mt) } }
  if c.els then
    for _, o in ipairs(resolve_elements({ c }, deadline)) do arguments[#arguments + 1] = o end
  end
  local conn = tool._page.conn
  c.id = conn:send("Runtime.callFunctionOn", { functionDeclaration = CALL_JS,
    executionContextId = tool._context, arguments = arguments, awaitPromise = true,
    returnByValue = true }, tool._session, deadline, true)
end

-- Sends the calls of one batch (one session and context) as one request.
local function send_batch(b, deadline)
  local specs, arguments = setmetatable({}, array_mt), { false }
  local objs = resolve_elements(b.calls, deadline)
  for i, c in ipairs(b.calls) do
    local tool = c.tool
    specs[i] = setmetatable({ tool._gi, tool._ti, tool.name, c.args, c.el_first,
      c.els and #c.els or 0 }, array_mt)
  end
  arguments[1] = { value = specs }
  for _, o in ipairs(objs) do arguments[#arguments + 1] = o end
  local tool = b.calls[1].tool
  local conn = tool._page.conn
  b.id = conn:send("Runtime.callFunctionOn", { functionDeclaration = BATCH_JS,
    executionContextId = tool._context, arguments = arguments, awaitPromise = true,
    returnByValue = true }, tool._session, deadline, true)
  b.has_els = #objs > 0
end

-- Element placeholders in a decoded result -> Element objects.
local function fetch_elements(c, n, key, deadline)
  local tool = c.tool
  local page, conn, session = tool._page, tool._page.conn, tool._session
  local r = conn:await(conn:send("Runtime.callFunctionOn", { functionDeclaration = TAKE_JS,
    executionContextId = tool._context, arguments = { { value = key } },
    returnByValue = false, objectGroup = "devtools_tools" }, session, deadline), deadline,
    "Runtime.callFunctionOn")
  local props = conn:await(conn:send("Runtime.getProperties", { objectId = r.result.objectId,
    ownProperties = true }, session, deadline), deadline, "Runtime.getProperties")
  local oids = {}
  for _, p in ipairs(props.result or {}) do
    local i = tonumber(p.name)
    if i and p.value and p.value.objectId then oids[i] = p.value.objectId end
  end
  local ids = {}
  for i = 0, n - 1 do
    if oids[i] then
      ids[i] = conn:send("DOM.describeNode", { objectId = oids[i] }, session, deadline)
    end
  end
  local backend = {}
  for i = 0, n - 1 do
    if ids[i] then
      local d = conn:await(ids[i], deadline, "DOM.describeNode")
      backend[i] = d.node and d.node.backendNodeId
    end
  end
  conn:send_nowait("Runtime.releaseObjectGroup", { objectGroup = "devtools_tools" }, session)
  return backend
end

local function replace_elements(v, c, backend, depth)
  if type(v) ~= "table" or depth > M.MAX_DEPTH + 2 then return v end
  local idx = v[EL]
  if idx ~= nil and getmetatable(v) ~= array_mt then
    local tool = c.tool
    return setmetatable({ backend_node_id = backend[idx], description = v.description,
      frame = { id = tool._frame_id, url = tool.group.frame.url, origin = tool.group.frame.origin },
      _page = tool._page, _frame_id = tool._frame_id, _loader = tool._loader }, Element)
  end
  for k, x in next, v do
    if type(x) == "table" then v[k] = replace_elements(x, c, backend, depth + 1) end
  end
  return v
end

-- Awaits the reply to request id on behalf of `who` (a call or a batch)
-- and returns the page's envelope text; CDP-level failures become Errors.
local function await_reply(tool, id, deadline, has_els)
  local conn = tool._page.conn
  local ok, r = pcall(conn.await, conn, id, deadline, "tool " .. tool.name)
  if not ok and not errors.is_error(r) then error(r, 0) end
  if has_els then
    conn:send_nowait("Runtime.releaseObjectGroup", { objectGroup = "devtools_tools" }, tool._session)
  end
  if not ok then
    if pagemod.is_navigation_error(r) then
      raise("navigated", "tool " .. tool.name .. ": the frame navigated during the call",
        { tool = tool.name, details = r.details })
    end
    if r.code == "timeout" then
      raise("timeout", "tool " .. tool.name .. " did not settle in time", { tool = tool.name })
    end
    r.tool = r.tool or tool.name
    error(r, 0)
  end
  if r.exceptionDetails then
    -- The call wrapper itself failed (it never throws for a tool's error).
    local msg, details = pagemod.exception_info(r.exceptionDetails)
    raise("tool_error", "tool " .. tool.name .. ": " .. msg, { tool = tool.name, details = details })
  end
  local rr = r.result
  -- The transport decoded the page's JSON text in place (see cdp json_ids).
  if rr and rr.json ~= nil then return rr.json end
  if rr and rr.json_error then
    raise("protocol_error", "tool " .. tool.name .. ": the page sent malformed JSON: " .. rr.json_error,
      { tool = tool.name })
  end
  local text = pagemod.remote_value(rr)
  if type(text) ~= "string" then
    raise("protocol_error", "tool " .. tool.name .. ": unexpected reply from the page", { tool = tool.name })
  end
  return decode_page_json(text, "tool " .. tool.name)
end

-- A decoded envelope {"n":..,"v":..} or {"error":..} -> the value, or raises.
local function open_envelope(c, env, deadline)
  local tool = c.tool
  if type(env) ~= "table" then
    raise("protocol_error", "tool " .. tool.name .. ": unexpected reply from the page", { tool = tool.name })
  end
  local e = env.error
  if e then
    if e.kind == "not_found" then
      raise("tool_not_found", e.message, { tool = tool.name })
    elseif e.kind == "stale" then
      raise("stale", "tool " .. tool.name .. ": " .. tostring(e.message), { tool = tool.name })
    end
    raise("tool_error", tostring(e.message), { tool = tool.name,
      details = { message = e.message, name = e.name, stack = e.stack, kind = e.kind } })
  end
  local v = env.v
  local n = env.n
  if type(n) == "number" and n > 0 then
    local backend = fetch_elements(c, n, env.k, deadline)
    v = replace_elements(v, c, backend, 0)
  end
  return v
end

-- call_tool(tool, args, opts) -> value
function M.call_tool(tool, args, opts)
  if getmetatable(tool) ~= Tool then raise("bad_argument", "call: not a Tool") end
  local conn = tool._page.conn
  local deadline = conn:deadline(opts)
  local c = prepare(tool, args, "tool " .. tostring(tool.name))
  send_call(c, deadline)
  return open_envelope(c, await_reply(tool, c.id, deadline, c.els ~= nil), deadline)
end

function Tool:call(args, opts)
  return M.call_tool(self, args, opts)
end

local function lookup(page, name, opts)
  if type(name) ~= "string" then
    raise("bad_argument", "tool name must be a string, got " .. type(name))
  end
  local t = M.find(page, name, opts)
  if not t then raise("tool_not_found", "Tool " .. name .. " not found", { tool = name }) end
  return t
end
M.lookup = lookup

-- call_many(page, list, opts) -> results (in order). The calls are grouped
-- by the document they run in, and each group goes to the page as one
-- request: every request is written before the first reply is awaited.
function M.call_many(page, list, opts)
  if type(list) ~= "table" then raise("bad_argument", "call_many: expected a list of {name, args}") end
  local keep = opts and opts.errors == "return"
  local conn = page.conn
  local deadline = conn:deadline(opts)
  local results, n = {}, #list
  local batches, by_doc = {}, {}
  local function fail(i, err)
    if not keep then error(err, 0) end
    results[i] = err
  end
  for i = 1, n do
    local entry = list[i]
    local ok, c = errors.catch(function()
      if type(entry) ~= "table" then raise("bad_argument", "call_many: entry " .. i .. " must be {name, args}") end
      local t = entry[1]
      if getmetatable(t) ~= Tool then t = lookup(page, t, opts) end
      return prepare(t, entry[2], "call_many entry " .. i)
    end)
    if not ok then
      fail(i, c)
    else
      c.index = i
      local key = c.tool._session .. "\0" .. c.tool._context
      local b = by_doc[key]
      if not b then
        b = { calls = {} }
        by_doc[key] = b
        batches[#batches + 1] = b
      end
      b.calls[#b.calls + 1] = c
    end
  end
  for _, b in ipairs(batches) do
    local ok, err = errors.catch(send_batch, b, deadline)
    if not ok then
      b.failed = err
      for _, c in ipairs(b.calls) do fail(c.index, err) end
    end
  end
  local first_err
  for _, b in ipairs(batches) do
    if not b.failed then
      local tool = b.calls[1].tool
      local ok, envs = errors.catch(await_reply, tool, b.id, deadline, b.has_els)
      if ok and (getmetatable(envs) ~= array_mt or #envs ~= #b.calls) then
        if type(envs) == "table" and envs.error then
          ok, envs = errors.catch(open_envelope, b.calls[1], envs, deadline)
          ok = false
        else
          ok, envs = false, errors.new("protocol_error", "call_many: unexpected reply from the page")
        end
      end
      for k, c in ipairs(b.calls) do
        local v
        if ok then
          local ok2, r = errors.catch(open_envelope, c, envs[k], deadline)
          v = r
          if not ok2 then first_err = first_err or r end
        else
          v = envs
          first_err = first_err or envs
        end
        results[c.index] = v
      end
    end
  end
  if first_err and not keep then error(first_err, 0) end
  results.n = n
  return results
end

return M
