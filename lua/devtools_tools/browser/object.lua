-- devtools_tools.browser.object: the Browser object - its pages (new,
-- attached, listed), its version, whether it may still answer, a raw CDP
-- command on the browser target, and its close (a launched Chromium asked
-- to exit, then ended, and its profile removed; a connected one only
-- disconnected). launch.lua and connect.lua make them.
--
-- What it must never do: wait in a finalizer (a Browser only collected is
-- ended by its C process object), leave a page target a failed new_page
-- made, or let close run past its deadline.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local options = require "devtools_tools.base.options"
local tasks = require "devtools_tools.rt.task"
local wait = require "devtools_tools.rt.wait"
local Page = require "devtools_tools.page"
local observe = require "devtools_tools.page.observe"
local chromium = require "devtools_tools.browser.chromium"

local raise = errors.raise
local now = core.now
local check_opts = options.check
local await_exit, await_removed, cancel_of = chromium.await_exit, chromium.await_removed, chromium.cancel_of
local type, tostring, ipairs, pairs, setmetatable, pcall, error =
      type, tostring, ipairs, pairs, setmetatable, pcall, error
local unpack = table.unpack or unpack

local M = {}

local Browser = {}
Browser.__index = Browser
Browser.__name = "devtools_tools.Browser"
M.Browser = Browser

-- new(conn, fields, private?) -> Browser: fields (process, executable,
-- user_data_dir, timeout, launched, url, history) as they are; private:
-- version (its Browser.getVersion), headless, temp_profile (a profile of
-- ours, removed on close).
function M.new(conn, fields, private)
  local b = setmetatable(fields, Browser)
  private = private or {}
  b._version, b._headless, b._temp_profile = private.version, private.headless, private.temp_profile
  b.conn = conn
  b.pages_by_session = {}
  conn:listen(nil, function(method, params) b:_on_event(method, params) end)
  -- The targets the browser destroys (an iframe of a page it never told
  -- the page of: page/frames.lua). The filter is Target.getTargets' own
  -- default, which a getTargets without one then takes from discovery:
  -- an iframe-only filter there made browser:pages() empty.
  conn:send_nowait("Target.setDiscoverTargets", { discover = true, filter = {
    { type = "browser", exclude = true }, { type = "tab", exclude = true }, {} } })
  return b
end

-- await_closed(browser, deadline): another task's close, awaited (nil, or
-- the `cancelled` that cut the wait short).
local function await_closed(b, deadline)
  return cancel_of(wait.condition, function() return not b._closing end, deadline)
end

local function check_open(self)
  if self.conn.closed then
    raise("disconnected", "the browser is closed")
  end
end

-- gone_why(self) -> nil while the browser may still answer, else why it cannot.
-- Found without waiting, for a holder that keeps a browser while idle (the
-- Neovim plugin): nothing reads the connection then, so a browser killed
-- meanwhile would seem alive until a call failed. Reads what has arrived
-- (the end of the connection included) and asks whether a launched
-- Chromium still runs, which a helper still holding the pipe would hide.
local function gone_why(self)
  if self._closed then return "the browser was closed" end
  local conn = self.conn
  if not conn.closed then pcall(conn.poll, conn) end
  if conn.closed then return conn.closed end
  local proc = self.process
  if proc and not proc:running() then
    local how, n = proc:wait(0)
    if how == "signal" then return "Chromium was killed by signal " .. tostring(n) end
    return "Chromium exited" .. (how == "exit" and (" with status " .. tostring(n)) or "")
  end
  return nil
end

-- alive() -> true while the browser may still answer; false, why once it
-- cannot (closed, its connection ended, its Chromium exited or was
-- killed). Never waits: for a holder that keeps a browser while idle (an
-- editor), as gone_why above.
function Browser:alive()
  local why = gone_why(self)
  if why then return false, why end
  return true
end

function Browser:_on_event(method, params)
  if method == "Target.detachedFromTarget" then
    local page = self.pages_by_session[params.sessionId]
    if page then Page.detached(page) end
  elseif method == "Target.targetDestroyed" and params.targetId ~= nil then
    local list = {}
    for _, page in pairs(self.pages_by_session) do list[#list + 1] = page end
    for _, page in ipairs(list) do Page.target_destroyed(page, params.targetId) end
  end
end

-- The browser's list of its pages, by session: a page closed or detached
-- leaves it (Page.attach's forget).
local function page_opts(self)
  local by_session = self.pages_by_session
  return { forget = function(page)
    if by_session[page.session] == page then by_session[page.session] = nil end
  end }
end

-- cdp(method, params?, opts?) -> result, on the browser target (issue 14)
Browser.cdp = observe.browser_cdp

-- version() -> {product, protocolVersion, revision, userAgent, jsVersion}
function Browser:version(opts)
  opts = check_opts(opts, options.TIMEOUT, "version")
  check_open(self)
  return self.conn:call("Browser.getVersion", nil, opts)
end

-- pages() -> list of {id, url, title, attached} for targets of type "page"
function Browser:pages(opts)
  opts = check_opts(opts, options.TIMEOUT, "pages")
  check_open(self)
  local r = self.conn:call("Target.getTargets", nil, opts)
  local out = {}
  for _, t in ipairs(r.targetInfos or {}) do
    if t.type == "page" then
      out[#out + 1] = { id = t.targetId, url = t.url, title = t.title, attached = t.attached }
    end
  end
  return out
end

-- A headless Chromium gives each page a window of its own: of the tabs of
-- one window only the front one is visible, and the others are hidden
-- pages (requestAnimationFrame never runs there, timers slow down). A
-- visible browser opens a tab, as a user would. Costs about 20 ms more
-- for the second and later pages. Headless: as launched, or for a browser
-- connected to, its user agent says HeadlessChrome.
local function own_window(self)
  if self._headless ~= nil then return self._headless end
  local v = self._version
  local ua = type(v) == "table" and v.userAgent
  return type(ua) == "string" and ua:find("HeadlessChrome/", 1, true) ~= nil
end

-- told_page(b, page): b's "page" listeners (Browser:on) hear of page
local function told_page(b, page)
  for _, fn in ipairs({ unpack(b._page_listeners or {}) }) do pcall(fn, page) end
end

-- new_page(url?, opts?) -> Page, attached, navigated to url (load awaited)
function Browser:new_page(url, opts)
  opts = check_opts(opts, options.TIMEOUT, "new_page")
  check_open(self)
  if url ~= nil and type(url) ~= "string" then
    raise("bad_argument", "new_page: url must be a string, got " .. type(url))
  end
  local conn = self.conn
  local deadline = conn:deadline(opts)
  -- (newWindow left out, not false: Chromium then opens a window when it
  -- has none, where false fails with "no browser is open")
  -- A new_page that fails (timed out, cancelled) closes its target: the
  -- caller never gets the Page, so nobody else would.
  local function close_target(target_id)
    if type(target_id) == "string" then
      conn:send_nowait("Target.closeTarget", { targetId = target_id })
    end
  end
  local created = conn:await(conn:send("Target.createTarget", { url = "about:blank",
    newWindow = own_window(self) or nil }, nil, deadline), deadline, "Target.createTarget",
    function(msg) close_target(msg.result and msg.result.targetId) end)
  local page
  local ok, err = errors.catch(function()
    page = Page.attach(self, created.targetId, deadline, page_opts(self))
    self.pages_by_session[page.session] = page
    told_page(self, page)
    if url and url ~= "about:blank" then
      page:navigate(url, { timeout = math.max(0, deadline - now()) })
    end
  end)
  if not ok then
    close_target(created.targetId)
    if page then Page.detached(page) end
    error(err, 0)
  end
  return page
end

-- attach(target_id) -> Page for an existing page target (e.g. from pages())
function Browser:attach(target_id, opts)
  opts = check_opts(opts, options.TIMEOUT, "attach")
  check_open(self)
  if type(target_id) ~= "string" then
    raise("bad_argument", "attach: target_id must be a string, got " .. type(target_id))
  end
  local page = Page.attach(self, target_id, self.conn:deadline(opts), page_opts(self))
  self.pages_by_session[page.session] = page
  return page
end

-- on("page", fn) -> remove(): fn(page) for each Page the browser holds
-- now, at once, and for each it attaches from now on (new_page before it
-- navigates, attach); fn must not wait (dt.record of a browser listens so)
function Browser:on(event, fn)
  if event ~= "page" then raise("bad_argument", "on: unknown event " .. tostring(event) .. " (page)") end
  if type(fn) ~= "function" then raise("bad_argument", "on: expected a function, got " .. type(fn)) end
  local list = self._page_listeners or {}
  self._page_listeners = list
  list[#list + 1] = fn
  for _, page in pairs(self.pages_by_session) do fn(page) end
  return function()
    for i = #list, 1, -1 do
      if list[i] == fn then table.remove(list, i) return true end
    end
    return false
  end
end

-- on_close(b, fn): fn(b, deadline) runs at the end of b:close, within its
-- deadline (what attached the browser has more to undo: dt.webdriver
-- deletes its session); an error it raises is raised once all else is done.
function M.on_close(b, fn)
  b._after_close = fn
end

-- The work of close: see below.
local function close_now(self, deadline)
  local function soon(s) return math.min(now() + s, deadline) end
  local conn, proc = self.conn, self.process
  local stop                      -- a cancellation met on the way, raised at the end
  local function step(fn, ...)
    local ok, err = errors.catch(fn, ...)
    if not ok and err.code == "cancelled" then stop = stop or err end
    return ok
  end
  if proc and not conn.closed then
    -- Ask politely; the reply may never come, as the browser is exiting.
    step(conn.send, conn, "Browser.close", nil, nil, soon(1))
    if not stop then step(conn.wait_for, conn, function() return conn.closed ~= nil end, soon(2)) end
  end
  conn:close()
  if proc then
    local in_task = tasks.current() and not stop
    if in_task then
      -- Inside a task the exit is awaited on the loop, not in proc:close;
      -- one that has not come asks again by SIGTERM (what proc:close's
      -- grace would send, with the loop stopped), awaited the same way.
      stop = await_exit(proc, soon(2))
      local pid = not stop and proc:running() and proc:pid()
      if pid and soon(2) > now() then
        errors.catch(core.process.kill, pid, "TERM")
        stop = await_exit(proc, soon(2))
      end
    end
    local left = soon(2) - now()
    if stop then
      proc:close(0)
    elseif left <= 0 then
      -- No time left: killed, then reaped and its profile removed in the
      -- background (the reaper), not within this call.
      proc:close(0, true)
    elseif in_task and self._temp_profile then
      -- Removing a profile takes 40-250 ms of work: the reaper does it
      -- (and kills a Chromium that outlived its SIGTERM), and the task
      -- waits on the loop, which goes on turning.
      proc:close(0, true)
      stop = await_removed(self._temp_profile, deadline)   -- (the last step: all that is left)
    else
      proc:close(left)
    end
  end
  -- What attached it may have more to undo (dt.webdriver deletes its
  -- WebDriver session), within close's deadline; an error there is raised
  -- once all else is done (the browser is closed all the same): the
  -- session may still be alive.
  local after, after_err = self._after_close, nil
  if after then
    self._after_close = nil
    local ok, err = errors.catch(after, self, deadline)
    if not ok then after_err = err end
  end
  if stop then error(stop, 0) end
  if after_err then error(after_err, 0) end
end

-- close(opts?): a launched browser is asked to exit, then ended by signal
-- if it does not, and its temporary profile removed; a connected one is
-- only disconnected. opts.timeout (5 s) bounds all of it: what is left of
-- it when the browser has not exited, it is killed (with none left, the
-- reaper finishes in the background). Idempotent. Inside a task that is
-- cancelled meanwhile, the clean-up still runs, then close raises
-- `cancelled`.
function Browser:close(opts)
  opts = check_opts(opts, options.TIMEOUT, "close")
  local deadline = now() + (opts.timeout or 5)
  if self._closed then
    -- Another task's close under way: this one returns when that one has
    -- (within its own deadline). Blocking, it cannot drive that task: it
    -- waits for Chromium's exit, which is what a caller relies on.
    local task = tasks.current()
    if self._closing and self._closing ~= task then   -- (not the closing task itself: a listener)
      if task then
        local err = await_closed(self, deadline)
        if err then error(err, 0) end
        if self._closing then
          raise("timeout", "close: another close of this browser was still under way at the deadline")
        end
      elseif self.process then
        wait.exit(self.process, deadline)
      end
    end
    return
  end
  self._closed, self._closing = true, tasks.current() or true
  local ok, err = pcall(close_now, self, deadline)
  self._closing = nil
  if not ok then error(err, 0) end
end

-- `local b <close> = dt.launch()`: Lua passes the error that ends the
-- scope, if any, which is not an opts table.
function Browser:__close() return self:close() end
-- No __gc here: a finalizer must never wait, and close() waits for Chromium
-- to exit. A Browser that is only collected is ended by its C Process
-- object's own finalizer (kills and reaps Chromium, removes the profile),
-- on every Lua version.

function Browser:__tostring()
  if self.webdriver then
    -- (the endpoint chose the id: shown as printable ASCII)
    local id = tostring(self.webdriver.session_id):gsub("[^\32-\126]", function(c)
      return ("\\x%02x"):format(c:byte())
    end)
    return "Browser(WebDriver session " .. id .. " at "
      .. tostring(self.webdriver.url) .. (self._closed and ", closed" or "") .. ")"
  end
  local how = self.launched and ("pid " .. tostring(self.process:pid() or "gone"))
    or ("connected to " .. tostring(self.url))
  return "Browser(" .. how .. (self._closed and ", closed" or "") .. ")"
end

errors.guard_methods(Browser, "Browser", "browser")

return M
