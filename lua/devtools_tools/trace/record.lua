-- devtools_tools.trace.record: dt.record(page or browser, file or handle,
-- opts) -> Recorder. Writes each tool call of the page (or of every page
-- of the browser, those it holds and those it attaches later) as it
-- ends, each main-frame navigation, and with opts.observe a summary of
-- each console message and finished request, to a trace
-- (trace/format.lua) until recorder:stop().
--
-- It listens only (page:on "call", "navigated", "console", "response";
-- browser:on "page"): the calls run as they would, and what it adds to
-- each is the encoding and one write of its line.
--
-- What it must never do: wait inside a listener, write a request's or a
-- response's headers (where pages put their secrets), write a body unless
-- asked (opts.bodies), keep a value over the limit other than as its
-- digest and size, or let a failing write break the call it records.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local json = require "devtools_tools.base.json"
local errors = require "devtools_tools.base.errors"
local options = require "devtools_tools.base.options"
local format = require "devtools_tools.trace.format"
local values = require "devtools_tools.trace.values"

local type, tostring, ipairs, pcall, setmetatable, getmetatable, floor =
      type, tostring, ipairs, pcall, setmetatable, getmetatable, math.floor
local concat = table.concat
local raise = errors.raise
local encode = json.encode
local members = format.members
local now = core.now

local M = {}

-- How much of a console message's text, a request's URL and a body a
-- summary keeps.
M.MAX_TEXT = 2000
M.MAX_BODY = 64 * 1024

local Recorder = {}
Recorder.__index = Recorder
Recorder.__name = "devtools_tools.Recorder"

local OPTS = { limit = "number", observe = "boolean", bodies = "boolean", timeout = true }

local function bounded(s, n)
  if type(s) ~= "string" then return s end
  if #s <= n then return s end
  return s:sub(1, n) .. "... (" .. (#s - n) .. " more bytes)"
end

-- milliseconds, to the microsecond
local function ms_of(ms)
  return floor((ms or 0) * 1000 + 0.5) / 1000
end

-- The line of a call, built from its encoded parts (the values are
-- encoded once, straight into the line).
local function call_line(self, rec, page_no)
  local n = self.calls + 1
  local tool = rec.tool
  local group = tool and tool.group
  local frame = group and group.frame
  local parts = { '{"type":"call","call":', tostring(n), ',"tool":', encode(tostring(rec.name)) }
  if tool then
    parts[#parts + 1] = ',"kind":' .. encode(tostring(tool.kind or "devtools"))
    if group and type(group.name) == "string" then parts[#parts + 1] = ',"group":' .. encode(group.name) end
    if frame and type(frame.origin) == "string" then parts[#parts + 1] = ',"origin":' .. encode(frame.origin) end
  end
  local ok, s, digest = pcall(values.text, rec.args == nil and json.null or rec.args, self.limit)
  if not ok then s, digest = encode("(arguments that are not JSON: " .. tostring(s) .. ")"), nil end
  if s then parts[#parts + 1] = ',"args":' .. s else parts[#parts + 1] = ',"args_digest":' .. encode(digest) end
  if rec.ok then
    ok, s, digest = pcall(values.text, rec.result, self.limit)
    if not ok then s, digest = encode("(a result that is not JSON: " .. tostring(s) .. ")"), nil end
    if s then parts[#parts + 1] = ',"result":' .. s else parts[#parts + 1] = ',"result_digest":' .. encode(digest) end
  else
    local e = rec.error
    parts[#parts + 1] = ',"error":' .. encode({ code = tostring(e.code), message = tostring(e.message) })
  end
  parts[#parts + 1] = ',"ms":' .. encode(ms_of(rec.ms))
  if rec.batch then
    parts[#parts + 1] = ',"batch":' .. tostring(rec.batch) .. ',"index":' .. tostring(rec.index)
  end
  if page_no then parts[#parts + 1] = ',"page":' .. tostring(page_no) end
  parts[#parts + 1] = "}"
  return concat(parts)
end

-- Listens to one page: its calls, navigations, and (observe) its console
-- and network.
local function watch(self, page, page_no)
  local offs = self.offs
  offs[#offs + 1] = page:on("call", function(rec)
    if self.stopped then return end
    -- a call the user stopped (Ctrl-C, a task cancelled) checks nothing
    if not rec.ok and rec.error and rec.error.code == "cancelled" then return end
    if self.out:line(call_line(self, rec, page_no)) then self.calls = self.calls + 1 end
  end)
  offs[#offs + 1] = page:on("navigated", function(e)
    if self.stopped then return end
    self.out:event(members("type", "navigate", "url", e.url, "page", page_no), true)
  end)
  if self.observe then
    offs[#offs + 1] = page:on("console", function(rec)
      if self.stopped then return end
      self.out:event(members("type", "console", "level", rec.level, "text", bounded(tostring(rec.text), M.MAX_TEXT),
        "page", page_no), true)
    end)
    offs[#offs + 1] = page:on("response", function(rec)
      if self.stopped then return end
      -- method, URL, status and type: never the headers
      self.out:event(members("type", "network", "method", rec.method, "url", bounded(rec.url, M.MAX_TEXT),
        "status", rec.status, "mime", rec.mime_type, "failed", rec.failed,
        "body", self.bodies and bounded(rec.post_data, M.MAX_BODY) or nil, "page", page_no), true)
    end)
  end
end

local function kind_of(x)
  local mt = getmetatable(x)
  local name = type(mt) == "table" and mt.__name
  if name == "devtools_tools.Page" then return "page" end
  if name == "devtools_tools.Browser" then return "browser" end
end

-- record(target, dest, opts?) -> Recorder. opts: limit (bytes; 1 MiB),
-- observe (console and network summaries), bodies (with the requests'
-- bodies), timeout (asking the browser its version for the header).
function M.record(target, dest, opts)
  opts = options.check(opts, OPTS, "record")
  local what = kind_of(target)
  if not what then
    raise("bad_argument", "record: expected a Page or a Browser, got " .. type(target))
  end
  if dest == nil then raise("bad_argument", "record: expected a file name or a handle to write the trace to") end
  local limit = opts.limit or values.LIMIT
  if limit < 0 or limit % 1 ~= 0 then raise("bad_argument", "record: limit must be a whole number of bytes") end
  local browser = what == "page" and target.browser or target
  local version = {}
  if browser then
    local ok, v = errors.catch(browser.version, browser, opts.timeout and { timeout = opts.timeout } or nil)
    if ok and type(v) == "table" then version = v end
  end
  local out = format.writer(dest)
  local self = setmetatable({ out = out, limit = limit, observe = opts.observe == true,
    bodies = opts.bodies == true, calls = 0, offs = {}, path = type(dest) == "string" and dest or nil,
    started = now() }, Recorder)
  out:event(format.header(members(
    "url", what == "page" and target.url or nil,
    "browser", version.product, "protocol", version.protocolVersion,
    "time", os.date("!%Y-%m-%dT%H:%M:%SZ"),
    "recorder", "devtools_tools 0.1.0",
    "limit", limit,
    "observe", self.observe or nil, "bodies", self.bodies or nil
  )), true)
  if what == "page" then
    watch(self, target)
  else
    local pages = 0
    self.offs[#self.offs + 1] = target:on("page", function(page)
      pages = pages + 1
      watch(self, page, pages)
    end)
  end
  return self
end

-- stop() -> true | nil, why (a write failed: the trace ends before it).
-- Idempotent.
function Recorder:stop()
  if not self.stopped then
    self.stopped = true
    for _, off in ipairs(self.offs) do pcall(off) end
    self.out:event(members("type", "end", "calls", self.calls, "time", os.date("!%Y-%m-%dT%H:%M:%SZ")), true)
    self.out:close()
  end
  if self.out.failed then return nil, self.out.failed end
  return true
end

-- failed() -> why writing stopped, or nil
function Recorder:failed()
  return self.out.failed
end

function Recorder:__tostring()
  return "Recorder(" .. tostring(self.path or "a handle") .. ", " .. self.calls .. " calls"
    .. (self.stopped and ", stopped" or "") .. ")"
end

errors.guard_methods(Recorder, "Recorder", "recorder")

return M
