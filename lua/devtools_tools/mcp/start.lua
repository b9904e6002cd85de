-- devtools_tools.mcp.start: bringing the page up while the server already
-- answers - an agent's host starts its MCP servers when a session starts,
-- often before the developer's app listens, and a server that waited for
-- the page (or gave up on it) would leave the session without its tools.
--
-- open(n) (the caller's: it launches or connects to the browser, opens
-- the page, navigates; attempt n) runs in a task. When it raises, it is
-- tried again after a pause that doubles from FIRST_PAUSE up to
-- MAX_PAUSE, until it returns the page (on_up(page, browser)), forever:
-- only a bad_argument (nothing a retry changes) ends the trying. The
-- first failure is said on the log at once, then one line at most every
-- LOG_EVERY seconds, and the page coming up after failures once.
--
--   local s = start.new(open, { url =, log =, on_up = })
--   s:run(); s:wait_first(deadline); s:status() -> text; s:stop()
--
-- It must never try in a tight loop (every retry waits its pause), raise
-- into the loop (a failure is kept as the status), nor outlive stop():
-- its tasks are cancelled there, and open() sees the cancellation in its
-- waits (a launch under way ends its Chromium).

local dt = require "devtools_tools"
local text = require "devtools_tools.present.text"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local setmetatable, pcall, tostring, error = setmetatable, pcall, tostring, error
local format, min = string.format, math.min

local M = {}

M.FIRST_PAUSE = 0.25     -- seconds before the second attempt
M.MAX_PAUSE = 5          -- seconds between two attempts, at most
M.LOG_EVERY = 10         -- seconds between two lines about retries, at least

local Start = {}
Start.__index = Start

-- new(open, opts) -> Start. opts: url (what is opened, for the texts),
-- log(line), on_up(page, browser).
function M.new(open, opts)
  return setmetatable({ open = open, opts = opts, attempts = 0, up = false, since = dt.now() }, Start)
end

local function describe(err)
  local s = dt.is_error(err) and (err.code .. ": " .. tostring(err.message)) or tostring(err)
  return text.brief(text.clean(s), 400)
end

-- One attempt: true when it ended the trying (up, or a failure no retry
-- changes).
local function attempt(self)
  self.attempts = self.attempts + 1
  self.next_at = nil
  local ok, page, browser = pcall(self.open, self.attempts)
  if self.stopped then return true end
  if ok then
    self.up, self.last = true, nil
    if self.attempts > 1 and self.opts.log then
      self.opts.log(format("the page is up (%s, after %d attempts in %.1f s)",
        text.brief(text.clean(self.opts.url or "?"), 200), self.attempts, dt.now() - self.since))
    end
    if self.opts.on_up then self.opts.on_up(page, browser) end
    return true
  end
  local err = page
  if dt.is_error(err) and err.code == "cancelled" then
    if self.stopped then return true end
    error(err, 0)
  end
  self.last = describe(err)
  if dt.is_error(err) and err.code == "bad_argument" then
    self.failed = true
    if self.opts.log then self.opts.log("cannot open the page: " .. self.last) end
    return true
  end
  local t = dt.now()
  if self.opts.log and (not self.logged or t - self.logged >= M.LOG_EVERY) then
    self.logged = t
    self.opts.log(format("the page is not up yet (%s; attempt %d, %.1f s): trying again until it is",
      self.last, self.attempts, t - self.since))
  end
  return false
end

-- run(): the first attempt now, in a task; the retries after it
function Start:run()
  self.first = dt.async(function()
    if attempt(self) then return end
    self.retries = dt.async(function()
      local pause = M.FIRST_PAUSE
      repeat
        self.next_at = dt.now() + pause
        dt.sleep(pause)
        pause = min(pause * 2, M.MAX_PAUSE)
      until attempt(self)
    end)
  end)
end

-- running() -> true while a task of its own has not ended
function Start:running()
  local f, r = self.first, self.retries
  return (f ~= nil and not f.done) or (r ~= nil and not r.done)
end

-- wait_first(deadline): inside a task, until the first attempt ended or
-- the deadline (on dt.now()'s clock) passed; raises only the caller's
-- own cancellation.
function Start:wait_first(deadline)
  local f = self.first
  if not f or f.done or not dt.current_task() then return end
  local left = deadline - dt.now()
  if left <= 0 then return end
  local ok, err = pcall(f.wait, f, left)
  if not ok and not f.done and dt.is_error(err) and err.code == "cancelled" then error(err, 0) end
end

-- status() -> why there is no page yet, for a tool call's isError
function Start:status()
  local url = text.brief(text.clean(self.opts.url or "the page"), 300)
  local t = dt.now()
  if self.failed then
    return "The page " .. url .. " cannot be opened: " .. tostring(self.last)
      .. ". Restart the MCP server with another URL."
  end
  local s = format("The page is not up yet: %s is being opened (attempt %d, %.1f s since the server started)",
    url, self.attempts, t - self.since)
  if self.last then s = s .. "; the last attempt said: " .. self.last end
  if self.next_at then s = s .. format(". The next attempt is in %.1f s", math.max(0, self.next_at - t)) end
  return s .. ". notifications/tools/list_changed is sent when the page is up; list the tools again then."
end

-- stop(): no more attempts; an attempt under way is cancelled
function Start:stop()
  if self.stopped then return end
  self.stopped = true
  if self.retries and not self.retries.done then self.retries:cancel() end
  if self.first and not self.first.done then self.first:cancel() end
end

return M
