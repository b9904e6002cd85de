-- devtools_tools.mcp.watch: keeps the served tool list in step with the
-- page - told by page:on("tools_changed") that the page's tools may have
-- changed (a devtoolstooldiscovery listener came or went, a navigation,
-- in the document too, frames, WebMCP tools added or removed), it waits
-- until the changes stop for a moment (DEBOUNCE, at most MAX_DELAY after
-- the first), discovers again, and calls on_change(list) only when the
-- list a client sees is another one.
--
-- The page's events are read only while someone waits on its connection,
-- so a listening task waits on it all along (page:wait_until), which also
-- learns first that the browser went away (on_gone(err)).
--
-- It must never discover in a tight loop (a refresh follows events, never
-- a timer alone), nor wait inside the page's listener (it starts a task).

local dt = require "devtools_tools"
local pretty = require "devtools_tools.present.pretty"
local tools = require "devtools_tools.mcp.tools"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local setmetatable, pcall, tostring, ipairs = setmetatable, pcall, tostring, ipairs

local M = {}

M.DEBOUNCE = 0.02        -- seconds without a change before discovering again
M.MAX_DELAY = 0.1        -- at most this long after the first change
M.DISCOVER_TIMEOUT = 10  -- seconds one discovery may take
M.LISTEN = 60            -- seconds of one wait of the listening task

local Watch = {}
Watch.__index = Watch

local function signature(list)
  return tools.signature(list, function(v) return pretty.encode(v, { indent = false }) end)
end

-- new(page, opts) -> Watch. opts: on_change(list) (the served list
-- changed), on_gone(err) (the browser or page went away), log(text)
-- (warnings: groups discovery skipped), trace(text) (each refresh's
-- outcome, for the debug log), timeout (of a discovery), trusted (the
-- page's descriptions go without the provenance line: see tools.lua).
function M.new(page, opts)
  return setmetatable({ page = page, opts = opts, list = tools.build({}), sig = nil,
    events = 0, warned = {} }, Watch)
end

local refresh

-- A refresh: discovers and compares; once more while changes came during it.
local function run(self, first)
  local page, opts = self.page, self.opts
  repeat
    if not first then
      -- quiet for DEBOUNCE, or MAX_DELAY after the first change
      local started = dt.now()
      repeat
        local seen = self.events
        dt.sleep(M.DEBOUNCE)
      until self.events == seen or dt.now() - started >= M.MAX_DELAY
    end
    first = false
    local seen = self.events
    if opts.trace then opts.trace("discovering") end
    local ok, groups, warnings = pcall(page.discover, page, { timeout = opts.timeout or M.DISCOVER_TIMEOUT })
    if self.stopped then return end
    if ok then
      for _, w in ipairs(warnings or {}) do
        local s = tostring(w)
        if not self.warned[s] and opts.log then
          self.warned[s] = true
          opts.log("warning: " .. s)
        end
      end
      local list = tools.build(groups, { trusted = opts.trusted })
      local sig = signature(list)
      if sig ~= self.sig then
        local was = self.sig
        self.list, self.sig = list, sig
        if opts.trace then opts.trace("tools: " .. #list .. " page tools" .. (was and ", changed" or "")) end
        if was ~= nil and opts.on_change then opts.on_change(list) end
      else
        self.list = list                  -- the same tools, the Tools of this discovery
        if opts.trace then opts.trace("tools: " .. #list .. " page tools, the same list") end
      end
    else
      local err = groups
      if dt.is_error(err) and (err.code == "cancelled") then return end
      if dt.is_error(err) and err.code == "disconnected" then
        if opts.on_gone then opts.on_gone(err) end
        return
      end
      if opts.log then opts.log("discovery failed: " .. tostring(err)) end
      if self.sig == nil then self.sig = signature(self.list) end
    end
  until self.events == seen or self.stopped
end

-- (refreshing is cleared by the task itself as it ends, so that an event
-- after its last look starts the next one)
refresh = function(self, first)
  if self.refreshing or self.stopped then return end
  local t = dt.async(function()
    local ok, err = pcall(run, self, first)
    self.refreshing = nil
    if not ok and self.opts.log and not (dt.is_error(err) and err.code == "cancelled") then
      self.opts.log("refreshing the tool list failed: " .. tostring(err))
    end
  end)
  if not t.done then self.refreshing = t end
end

-- start(): the first discovery now (its list is the one served first: no
-- on_change for it), the page's changes watched from now on
function Watch:start()
  local page = self.page
  self.off = page:on("tools_changed", function(e)
    self.events = self.events + 1
    if self.opts.trace then self.opts.trace("the page's tools may have changed: " .. tostring(e and e.reason)) end
    if not self.refreshing then refresh(self, false) end
  end)
  self.off_crash = page:on("crashed", function()
    if self.opts.log then self.opts.log("the page crashed (its renderer died): devtools.navigate reloads it") end
  end)
  refresh(self, true)
  self.listener = dt.async(function()
    while not self.stopped do
      local ok, err = pcall(page.wait_until, page, function() return self.stopped end, { timeout = M.LISTEN })
      if not ok then
        if not self.stopped and dt.is_error(err) and err.code == "disconnected" then
          if self.opts.on_gone then self.opts.on_gone(err) end
        elseif not self.stopped and not (dt.is_error(err) and err.code == "cancelled") and self.opts.log then
          self.opts.log("listening to the page failed: " .. tostring(err))
        end
        return
      end
    end
  end)
end

-- current() -> the list served now
function Watch:current() return self.list end

-- fresh() -> the list, after the refresh under way (or due) ended: what
-- tools/list answers, so that it is never older than a change it was told
-- of. Inside a task it waits for it.
function Watch:fresh()
  local r = self.refreshing
  if r and not r.done and dt.current_task() then
    local ok, err = pcall(r.wait, r)
    -- (this task cancelled: it ends here; the refresh's own failures it logs)
    if not ok and dt.is_error(err) and err.code == "cancelled" then
      error(err, 0)
    end
  end
  return self.list
end

-- stale(): a call found the page's tools changed (a Tool of a document
-- that is gone): discover again as for an event
function Watch:stale()
  self.events = self.events + 1
  refresh(self, false)
end

-- stop(): no more events; the tasks end
function Watch:stop()
  if self.stopped then return end
  self.stopped = true
  if self.off then pcall(self.off) self.off = nil end
  if self.off_crash then pcall(self.off_crash) self.off_crash = nil end
  if self.refreshing then self.refreshing:cancel() end
  if self.listener then self.listener:cancel() end
end

return M
