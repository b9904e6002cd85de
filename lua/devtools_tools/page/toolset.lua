-- devtools_tools.page.toolset: the page's face for tools - discovery cached
-- per document (a discovery is out of date once the page's epoch moved),
-- lookup by name (the main frame first), waiting for a tool, and calls by
-- name or by Tool, one or many, each public method under one deadline.
-- Page holds one (page.toolset) and its methods of the same names call it.
--
-- What it must never do: discover twice in one public call unless a
-- document changed while the first ran, call a tool more than twice (the
-- one rule for a call that did not run: kinds.call_again), or use a
-- page-provided name as a key of one of our tables.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local options = require "devtools_tools.base.options"
-- (devtools_tools.tools: the Tool and ToolGroup types, with a Tool's call)
local types = require "devtools_tools.tools"
local kinds = require "devtools_tools.tools.kinds"
local discovery = require "devtools_tools.tools.discovery"
local ready = require "devtools_tools.page.ready"

local raise = errors.raise
local now = core.now
local type, ipairs, setmetatable, error, pcall = type, ipairs, setmetatable, error, pcall
local math_min, math_huge = math.min, math.huge

local M = {}

local Toolset = {}
Toolset.__index = Toolset
M.Toolset = Toolset

-- new(site, webmcp, readiness) -> Toolset: for the page whose site it is
-- (page/site.lua), with its WebMCP registry and its Readiness
function M.new(site, webmcp, readiness)
  return setmetatable({ site = site, conn = site.conn, docs = site.docs, webmcp = webmcp,
    readiness = readiness, cache = nil }, Toolset)
end

-- fresh(deadline) -> groups, warnings: discovers now and caches the result
-- for the documents it is about. The cache remembers the deadline of the
-- call that made it: the same public call never discovers twice.
function Toolset:fresh(deadline)
  local groups, warnings, epoch, navigated, skipped = discovery.discover(self.site, deadline)
  self.webmcp:add_groups(groups, deadline)          -- WebMCP groups after the others
  -- groups.warnings and groups.skipped (README): on a metatable, so the
  -- list holds only groups for ipairs, pairs and comparisons
  setmetatable(groups, { __index = { warnings = warnings, skipped = skipped } })
  self.cache = { epoch = epoch, groups = groups, warnings = warnings, made_for = deadline,
    navigated = navigated, skipped = skipped }
  return groups, warnings
end

-- made_in(cache, deadline) -> true when the public call of that deadline
-- made the cache (a deadline tells calls apart; an infinite one does not)
local function made_in(c, deadline)
  return c.made_for == deadline and deadline ~= math_huge
end

-- groups(deadline) -> groups, warnings, fresh: the cached discovery while
-- no frame changed document, else a new one; fresh: made during this call
function Toolset:groups(deadline)
  local c = self.cache
  if c then
    self.conn:poll()
    if c.epoch == self.docs.epoch then return c.groups, c.warnings, made_in(c, deadline) end
  end
  local g, w = self:fresh(deadline)
  return g, w, true
end

-- current_groups(deadline) -> groups: the cached discovery, or a new one
-- when a document (or the page's tools) changed since (calls.lua asks it,
-- through the site, before it runs a Tool kept from an earlier discovery)
function Toolset:current_groups(deadline)
  local c = self.cache
  if c and c.epoch == self.docs.epoch then return c.groups end   -- (the caller read the events)
  return (self:groups(deadline))
end

-- latest_groups() -> the latest discovery's groups, or nil when there is none
function Toolset:latest_groups()
  local c = self.cache
  return c and c.groups
end

-- in_latest(group) -> true when group is one of the latest discovery's
function Toolset:in_latest(group)
  local c = self.cache
  if not c then return false end
  local set = c.group_set
  if not set then
    set = {}
    for _, g in ipairs(c.groups) do set[g] = true end
    c.group_set = set
  end
  return set[group] == true
end

-- find(name, deadline) -> Tool | nil, groups. A miss in a cached discovery
-- looks once more (a page may register late); a discovery made during this
-- same call is not repeated, unless a document changed while it ran (what
-- it found is about the old one, or a new one whose scripts had not run):
-- then again, when the new one is known, up to MOVED_LOOKS times.
local MOVED_LOOKS = 3

local function find(self, name, deadline)
  local docs, site = self.docs, self.site
  local gs, _, fresh = self:groups(deadline)
  local t = discovery.find_in(gs, name)
  local c = self.cache
  local looks = 0
  if t == nil then self.conn:poll() end      -- the events of a change that is under way
  while t == nil and looks < MOVED_LOOKS
      and ((looks == 0 and not fresh) or c.epoch ~= docs.epoch or c.navigated) do
    looks = looks + 1
    if c.navigated and c.epoch == docs.epoch then
      -- (a document went away under it, and its successor is not here yet)
      self.conn:wait_for(function() return docs.epoch ~= c.epoch or site:closed() or docs.crashed end,
        deadline)
      site:check_open()
    end
    gs = self:fresh(deadline)
    t = discovery.find_in(gs, name)
    c = self.cache
    if t == nil then self.conn:poll() end
  end
  return t, gs
end

local function check_name(name, fname)
  if type(name) ~= "string" then
    raise("bad_argument", fname .. ": tool name must be a string, got " .. type(name))
  end
end

local function lookup(self, name, deadline, fname)
  check_name(name, fname)
  local t, gs = find(self, name, deadline)
  if not t then error(discovery.not_found(name, gs, gs.skipped), 0) end
  return t
end

-- ---- the page's methods -------------------------------------------------------------

-- discover(opts?) -> groups, warnings: fresh discovery in every frame
function Toolset:discover(opts)
  opts = options.check(opts, options.TIMEOUT, "discover")
  local deadline = self.conn:deadline(opts)
  self.site:check_open(deadline)
  return self:fresh(deadline)
end

-- tool_groups(opts?) -> groups, warnings: cached while no frame changed document
function Toolset:tool_groups(opts)
  opts = options.check(opts, options.TIMEOUT, "tool_groups")
  local deadline = self.conn:deadline(opts)
  self.site:check_open(deadline)
  local g, w = self:groups(deadline)
  return g, w
end

-- tool(name, opts?) -> Tool | nil: the main frame first, then frames in document order
function Toolset:tool(name, opts)
  opts = options.check(opts, options.TIMEOUT, "tool")
  self.site:check_open()
  check_name(name, "tool")
  return (find(self, name, self.conn:deadline(opts)))
end

-- wait_for_tool(name, opts?) -> Tool, once the page offers it: discovers
-- again after each change of the page's tools (a listener came or went, a
-- document, a frame, WebMCP) and after its activity quietens (a response
-- it may build tools from: ready.QUIET without another, at most WAIT_MAX
-- after the first). Raises timeout; what the page's scripts say of WebMCP
-- is looked at first, in the last tenth of the deadline (at most a
-- second): details.webmcp = {enabled, uses, named}, for a front end that
-- says WebMCP would show the tool.
local WAIT_MAX, LOOK_SHARE, LOOK_MAX = 0.5, 0.1, 1

function Toolset:wait_for_tool(name, opts)
  opts = options.check(opts, options.TIMEOUT, "wait_for_tool")
  local site, docs, conn, r = self.site, self.docs, self.conn, self.readiness
  site:check_open()
  check_name(name, "wait_for_tool")
  docs:watch_tools()                          -- (a listener added or removed tells)
  local final = conn:deadline(opts)
  local deadline = final - math_min(LOOK_MAX, (final - now()) * LOOK_SHARE)
  local seen = r.seen
  local gs = self:groups(deadline)
  while true do
    local t = discovery.find_in(gs, name)
    if t then return t end
    -- The epoch the groups are about: a change while their discovery ran
    -- (a listener its dispatch did not reach) is one to look again for
    local c = self.cache
    local epoch = c and c.epoch or docs.epoch
    conn:wait_for(function()
      return docs.epoch ~= epoch or r.seen ~= seen or site:closed() or docs.crashed
    end, deadline)
    site:check_open()
    if docs.epoch == epoch and r.seen ~= seen then
      -- activity, not a change of the tools: once it quietens
      local until_ = math_min(now() + WAIT_MAX, deadline)
      repeat
        seen = r.seen
        conn:wait_for(function() return r.seen ~= seen or docs.epoch ~= epoch or site:closed() end,
          math_min(now() + ready.QUIET, until_))
      until r.seen == seen or docs.epoch ~= epoch or now() >= until_
      site:check_open()
    end
    if now() >= deadline then
      local e = discovery.not_found(name, gs, gs.skipped)
      local details = e.details
      details.webmcp = ready.webmcp_usage(site.page, name, final)
      raise("timeout", "wait_for_tool: " .. e.message .. " before the timeout", { tool = name, details = details })
    end
    seen = r.seen
    local ok, fresh = errors.catch(self.fresh, self, deadline)
    if ok then
      gs = fresh
    elseif fresh.code ~= "timeout" then
      error(fresh, 0)
    end
    -- (a discovery the deadline cut short: the last one answers below)
  end
end

-- What call does when its tool did not run (kinds.call_again): the tool
-- the page holds now under that name, unless this call's own discovery
-- found the one that did not run (and nothing says the page changed
-- since). A list the page no longer has it in is no good: dropped.
-- x: {toolset, name, deadline, the cache the call started with, given}.
local function refind(err, x)
  local self, name, deadline, c, given = x[1], x[2], x[3], x[4], x[5]
  if not given and not kinds.changed(err) and c and made_in(c, deadline) then return nil end
  if err.code == "tool_not_found" then self.cache = nil end
  return lookup(self, name, deadline, "call")
end

-- refind, and the tool it names is the one page:on("call") hears of (x[6]:
-- the call's record, when a listener hears)
local function refind_told(err, x)
  local t = refind(err, x)
  local rec = x[6]
  if rec and t then rec.tool = t end
  return t
end

-- call(name or Tool, args?, opts?) -> value. A tool that did not run - its
-- document gone (the events saying so were not read yet: stale), the
-- page's tools changed since it was found, or the page's list no longer
-- has it (another client's discovery, a page script: tool_not_found) - is
-- looked for again by its name, and called once more: a Tool given (one
-- kept from an earlier discovery), the tool the page holds now under its
-- name; a name, unless this call already discovered.
-- (rec: the call's record for page:on("call"), told the Tool that runs;
-- see page/observe.lua)
local function call(rec, self, name, args, deadline)
  local t, given
  if types.is_tool(name) then
    t, given = name, true
    if types.document_of(t).site ~= self.site then raise("bad_argument", "call: a tool of another page") end
    name = t.name
  else
    -- A call's one deadline covers the discovery it makes: when that runs
    -- out, the timeout still names the tool called.
    local ok, r = errors.catch(lookup, self, name, deadline, "call")
    if not ok then
      if r.code == "timeout" and r.tool == nil then r.tool = name end
      error(r, 0)
    end
    t = r
  end
  if rec then rec.tool = t end
  return kinds.call_again(t, args, deadline, refind_told, { self, name, deadline, self.cache, given, rec })
end

function Toolset:call(name, args, opts)
  if opts ~= nil then opts = options.check(opts, options.TIMEOUT, "call") end
  local deadline = self.conn:deadline(opts)
  self.site:check_open(deadline)
  local shown = types.is_tool(name) and name.name or name
  return self.site:observed(shown, args, call, self, name, args, deadline)
end

local call_many_opts = { timeout = true, errors = true }

-- The Tool an entry {name or Tool, args} of call_many names.
local function entry_tool(self, entry, i, deadline)
  if type(entry) ~= "table" then raise("bad_argument", "call_many: entry " .. i .. " must be {name, args}") end
  local t = entry[1]
  if types.is_tool(t) then
    if types.document_of(t).site ~= self.site then
      raise("bad_argument", "call_many: entry " .. i .. " is a tool of another page")
    end
    return t
  end
  return lookup(self, t, deadline, "call_many entry " .. i)
end

-- call_many({{name or Tool, args}, ...}, opts?) -> {results..., n = count}
-- opts.errors = "return": failed entries hold their dt.Error
function Toolset:call_many(list, opts)
  opts = options.check(opts, call_many_opts, "call_many")
  if opts.errors ~= nil and opts.errors ~= "return" and opts.errors ~= "raise" then
    raise("bad_argument", "call_many: errors must be \"return\" or \"raise\"")
  end
  self.site:check_open()
  if type(list) ~= "table" then raise("bad_argument", "call_many: expected a list of {name, args}") end
  local keep = opts.errors == "return"
  local deadline = self.conn:deadline(opts)
  local entries = {}
  for i = 1, #list do
    local ok, t = pcall(entry_tool, self, list[i], i, deadline)
    if ok then entries[i] = { tool = t, args = list[i][2], name = t.name }
    elseif keep and errors.is_error(t) then
      local e = type(list[i]) == "table" and list[i] or {}     -- (what a "call" listener hears of it)
      local named = e[1]
      entries[i] = { err = t, name = types.is_tool(named) and named.name or named, args = e[2] }
    else error(t, 0) end
  end
  return self.site:observed_many(entries, function(each)
    return kinds.call_many(entries, deadline, keep, each)
  end)
end

return M
