-- devtools_tools.trace.replay: a trace's calls made again, in order, on a
-- page, each outcome compared with the recorded one (trace/compare.lua);
-- the navigations recorded between them made again too.
--
-- A difference is {call, tool, kind, ...}:
--   value           a value differs: path, recorded, new (compare.ABSENT
--                   where a side has none)
--   digest          a result kept as its digest differs: recorded, new
--                   ({sha256, bytes} each)
--   missing_tool    the page has no tool of that name now: message
--   refused         the tool's schema refuses the recorded arguments now:
--                   message, error (the invalid_params dt.Error)
--   error_instead   an error where a result was recorded: error
--   result_instead  a result where an error was recorded: recorded (the
--                   error as {code, message}), new
--   error_changed   another error than the recorded one: recorded, error
--   unreplayable    arguments the trace could not keep (over its limit,
--                   or holding an Element): message
--   navigation      a recorded navigation failed: url, error (call nil)
--
-- What it must never do: stop at a difference (every call is made and
-- compared), or go on once the page or the browser is gone (disconnected)
-- or the task is cancelled: those are raised.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local json = require "devtools_tools.base.json"
local errors = require "devtools_tools.base.errors"
local options = require "devtools_tools.base.options"
local compare = require "devtools_tools.trace.compare"
local values = require "devtools_tools.trace.values"

local type, tostring, ipairs, pairs, next, error, setmetatable =
      type, tostring, ipairs, pairs, next, error, setmetatable
local floor = math.floor
local raise = errors.raise
local now = core.now
local null = json.null

local M = {}

-- How long a call waits for its tool when the page does not have it yet
-- (one a page registers after its load, after a replayed navigation).
M.TOOL_WAIT = 2

local OPTS = { ignore = true, url = "string", timeout = true, on_difference = "function",
  tool_wait = "seconds", navigate = "boolean" }

local function origin_of(url)
  return type(url) == "string" and url:match("^(%a[%w+.-]*://[^/?#]*)") or nil
end

-- rebase(url, recorded, given) -> the URL a recorded navigation goes to
-- when the replay starts at given instead of recorded: the recorded start
-- itself becomes given, and a URL of its origin gets given's origin.
function M.rebase(url, recorded, given)
  if not given or not recorded or url == nil then return url end
  if url == recorded then return given end
  local ro, go = origin_of(recorded), origin_of(given)
  if ro and go and ro ~= go and url:sub(1, #ro) == ro then
    local rest = url:sub(#ro + 1)
    if rest == "" or rest:find("^[/?#]") then return go .. rest end
  end
  return url
end

-- The recorded outcome of a call event: "result", "digest" or "error".
local function recorded_kind(ev)
  if ev.error ~= nil then return "error" end
  if ev.result_digest ~= nil then return "digest" end
  return "result"
end

local function err_of(e)
  return { code = tostring(e.code), message = tostring(e.message) }
end

-- holds_element(v) -> the description of an Element marker in v, or nil
local function holds_element(v, depth)
  if type(v) ~= "table" or depth > 200 then return nil end
  local d = v[values.ELEMENT]
  if type(d) == "string" and next(v, next(v)) == nil then return d end
  for _, x in pairs(v) do
    local r = holds_element(x, depth + 1)
    if r then return r end
  end
end

-- The tool a call event names: of the recorded group and frame origin
-- when the page has one, else the first of its name.
local function find_tool(page, ev, timeout)
  local groups = page:tool_groups({ timeout = timeout })
  local first
  for _, g in ipairs(groups) do
    for _, t in ipairs(g.tools) do
      if t.name == ev.tool then
        if (ev.group == nil or g.name == ev.group)
            and (ev.origin == nil or (g.frame and g.frame.origin) == ev.origin) then
          return t
        end
        first = first or t
      end
    end
  end
  return first
end

-- fatal(err): raised on, not compared
local function fatal(err)
  return err.code == "disconnected" or err.code == "cancelled"
end

local Run = {}
Run.__index = Run

function Run:differ(d)
  local held = self.held
  if held then
    -- (a call_many's: said in the order of its calls once it ends)
    held[#held + 1] = d
    return
  end
  local list = self.report.differences
  list[#list + 1] = d
  if d.call and not self.differing[d.call] then
    self.differing[d.call] = true
    self.report.differing_calls = self.report.differing_calls + 1
  end
  if self.on_difference then self.on_difference(d) end
end

-- outcome(ev, ok, v, ms): the new outcome of a call made, compared
function Run:outcome(ev, ok, v, ms)
  local base = { call = ev.call, tool = ev.tool }
  local function d(fields)
    for k, x in pairs(base) do fields[k] = x end
    self:differ(fields)
  end
  local want = recorded_kind(ev)
  local new = { ms = ms }
  if ok then
    local plain = values.plain(v == nil and null or v)
    -- (kept whole for --update: format.write bounds it as a recorder does)
    new.result = plain
    if want == "error" then
      d({ kind = "result_instead", recorded = ev.error, new = plain })
    elseif want == "digest" then
      local text, digest = values.text(plain, 0)
      digest = digest or values.digest(plain, #text)
      if digest.sha256 ~= ev.result_digest.sha256 then
        d({ kind = "digest", recorded = ev.result_digest, new = digest })
      end
    else
      local rec = ev.result
      if rec == nil then rec = null end
      for _, x in ipairs(compare.diff(rec, plain, self.ignore)) do
        d({ kind = "value", path = x.path, recorded = x.recorded, new = x.new })
      end
    end
  else
    if fatal(v) then error(v, 0) end
    local e = err_of(v)
    if want ~= "error" then
      d({ kind = "error_instead", error = v })
    elseif ev.error.code ~= e.code or ev.error.message ~= e.message then
      d({ kind = "error_changed", recorded = ev.error, error = v })
    end
    new.error = e
  end
  self.updates[ev] = new
end

-- check(ev) -> tool, args | nil (a difference said, or the outcome
-- recorded as the tool's absence again)
function Run:check(ev)
  local base = { call = ev.call, tool = ev.tool }
  local function d(fields)
    for k, x in pairs(base) do fields[k] = x end
    self:differ(fields)
  end
  if ev.args_digest ~= nil then
    d({ kind = "unreplayable", message = "its arguments were over the trace's limit ("
      .. tostring(ev.args_digest.bytes) .. " bytes): only their digest was kept" })
    return nil
  end
  local args = ev.args
  if args == null then args = nil end
  local el = holds_element(args, 0)
  if el then
    d({ kind = "unreplayable", message = "its arguments hold an Element (" .. el .. ") of the recorded page" })
    return nil
  end
  local timeout = self.timeout
  local tool = find_tool(self.page, ev, timeout)
  local want = recorded_kind(ev)
  local absent_before = want == "error" and ev.error.code == "tool_not_found"
  if not tool and not absent_before and self.tool_wait > 0 then
    local ok, err = errors.catch(self.page.wait_for_tool, self.page, ev.tool, { timeout = self.tool_wait })
    if not ok and err.code ~= "timeout" then error(err, 0) end
    tool = find_tool(self.page, ev, timeout)
  end
  if not tool then
    local message = "Tool " .. ev.tool .. " not found"
    self.updates[ev] = { error = { code = "tool_not_found", message = message } }
    if not absent_before then d({ kind = "missing_tool", message = message }) end
    return nil
  end
  local valid, verr = tool:validate(args)
  if not valid then
    self.updates[ev] = { error = err_of(verr) }
    if want == "error" and ev.error.code == "invalid_params" and ev.error.message == verr.message then
      return nil
    end
    d({ kind = "refused", message = verr.message, error = verr })
    return nil
  end
  return tool, args
end

function Run:call(ev)
  self.report.calls = self.report.calls + 1
  local tool, args = self:check(ev)
  if not tool then return end
  local t0 = now()
  local ok, v = errors.catch(tool.call, tool, args, { timeout = self.timeout })
  self:outcome(ev, ok, v, floor((now() - t0) * 1e6 + 0.5) / 1000)
end

-- batch(list): the entries of one call_many, pipelined again
function Run:batch(list)
  self.held = {}
  local ok, err = errors.catch(self.batch_calls, self, list)
  local held = self.held
  self.held = nil
  for i, d in ipairs(held) do d.seq = i end
  table.sort(held, function(a, b)
    if a.call ~= b.call then return a.call < b.call end
    return a.seq < b.seq
  end)
  for _, d in ipairs(held) do
    d.seq = nil
    self:differ(d)
  end
  if not ok then error(err, 0) end
end

function Run:batch_calls(list)
  local entries, evs = {}, {}
  for _, ev in ipairs(list) do
    self.report.calls = self.report.calls + 1
    local tool, args = self:check(ev)
    if tool then
      entries[#entries + 1] = { tool, args }
      evs[#evs + 1] = ev
    end
  end
  if #entries == 0 then return end
  local t0 = now()
  local res = self.page:call_many(entries, { errors = "return", timeout = self.timeout })
  local ms = floor((now() - t0) * 1e6 + 0.5) / 1000
  for i, ev in ipairs(evs) do
    local v = res[i]
    if errors.is_error(v) then self:outcome(ev, false, v, ms) else self:outcome(ev, true, v, ms) end
  end
end

function Run:navigate(ev)
  local url = M.rebase(ev.url, self.start_recorded, self.start)
  if type(url) ~= "string" then return end
  self.report.navigations = self.report.navigations + 1
  local ok, err = errors.catch(self.page.navigate, self.page, url, { timeout = self.timeout })
  if not ok then
    if fatal(err) then error(err, 0) end
    self:differ({ kind = "navigation", url = url, error = err })
  end
end

-- replay(page, trace, opts?) -> report: {calls, navigations, differences,
-- differing_calls, updated (the trace with each call's new outcome, for
-- format.write)}. opts: ignore (a list of pointers), url (where the
-- replay starts, when not at the recorded URL: recorded navigations move
-- with it, see rebase), timeout (of each call and navigation, seconds),
-- on_difference(d) (told as each is found), tool_wait (seconds a call
-- waits for a tool the page does not have yet; 2), navigate (false: the
-- page is where the replay starts already, freshly loaded; by default it
-- is navigated there first, so that the calls meet a new document as the
-- recorded ones did).
function M.replay(page, trace, opts)
  opts = options.check(opts, OPTS, "replay")
  if type(trace) ~= "table" or type(trace.header) ~= "table" or type(trace.events) ~= "table" then
    raise("bad_argument", "replay: expected a trace (dt.trace.read)")
  end
  local ignore_list = opts.ignore
  if type(ignore_list) == "string" then ignore_list = { ignore_list } end
  if ignore_list ~= nil and type(ignore_list) ~= "table" then
    raise("bad_argument", "replay: ignore must be a list of JSON pointers")
  end
  local header = trace.header
  local start = opts.url or header.url
  local self = setmetatable({
    page = page, ignore = compare.ignorer(ignore_list), timeout = opts.timeout,
    on_difference = opts.on_difference, tool_wait = opts.tool_wait or M.TOOL_WAIT,
    start_recorded = header.url, start = opts.url, differing = {}, updates = {},
    report = { calls = 0, navigations = 0, differences = {}, differing_calls = 0 },
  }, Run)
  if opts.navigate ~= false and type(start) == "string" then
    page:navigate(start, opts.timeout and { timeout = opts.timeout } or nil)
  end
  local events = trace.events
  local i = 1
  while i <= #events do
    local ev = events[i]
    if ev.type == "call" then
      if ev.batch ~= nil then
        local list, j = { ev }, i + 1
        while events[j] and events[j].type == "call" and events[j].batch == ev.batch
            and events[j].page == ev.page do
          list[#list + 1] = events[j]
          j = j + 1
        end
        table.sort(list, function(a, b) return (a.index or 0) < (b.index or 0) end)
        self:batch(list)
        i = j
      else
        self:call(ev)
        i = i + 1
      end
    else
      if ev.type == "navigate" then self:navigate(ev) end
      i = i + 1
    end
  end
  -- the trace with the new outcomes
  local updated = {}
  for k, ev in ipairs(events) do
    local new = self.updates[ev]
    if new then
      local copy = {}
      for f, x in pairs(ev) do copy[f] = x end
      copy.result, copy.result_digest, copy.error = nil, nil, nil
      for f, x in pairs(new) do copy[f] = x end
      updated[k] = copy
    else
      updated[k] = ev
    end
  end
  local h = {}
  for f, x in pairs(header) do h[f] = x end
  h.updated = os.date("!%Y-%m-%dT%H:%M:%SZ")
  self.report.updated = { header = h, events = updated, calls = {}, name = trace.name }
  return self.report
end

return M
