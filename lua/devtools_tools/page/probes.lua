-- devtools_tools.page.probes: stuck scripts. A request on one of the page's
-- sessions ran out of time: was it page script that kept it (a busy loop
-- in a tool or a listener)? A probe tells - it is answered only once the
-- page's thread is free - and before the next call a script still running
-- is stopped, so the page answers again. Page holds one (page.probes).
--
-- What it must never do: wait when told of a timeout (timed_out only
-- sends), stop an idle page (terminating there would cut short whatever
-- script of the page runs next: another task's tool), or keep a probe's
-- reply once the page is gone.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"

local now = core.now
local pairs, ipairs, next, setmetatable = pairs, ipairs, next, setmetatable

local M = {}

local Probes = {}
Probes.__index = Probes
M.Probes = Probes

-- new(conn, session) -> Probes (session: the page's own, the default)
function M.new(conn, session)
  return setmetatable({ conn = conn, session = session, sent = {}, at = {} }, Probes)
end

-- timed_out(session?): a request on that session ran out of time: a probe
-- is sent. Never waits. A probe still unanswered stays: a newer one would
-- have behind it the requests sent since, which unstick waits for (two
-- tasks taking turns at a stuck page would then put it off for ever). Its
-- reply is kept until asked for (conn:keep), not forgotten by the
-- connection's sweep.
function Probes:timed_out(session)
  local conn = self.conn
  if conn.closed then return end
  session = session or self.session
  local old = self.sent[session]
  if old and conn:waiting(old) then return end
  local ok, id = errors.catch(conn.send, conn, "Runtime.evaluate", { expression = "0" }, session, now())
  if ok then
    conn:keep(id)
    self.sent[session] = id
    self.at[session] = now()
  end
end

-- unstick(deadline?): before the next call, a session whose probe has no
-- answer is still running the script that timed out: stop it
-- (Runtime.terminateExecution). The probe's answer, if it is on its way,
-- is given until the probe is PROBE_AGE old, and at least PROBE_GRACE from
-- now: a busy machine is slow to answer even an idle page (under three
-- make tests at once a probe took more than the 50 ms once given, and
-- another task's tool was stopped). Every call that comes meanwhile waits
-- for the same answer, and the first wait to end without one stops the
-- page: no call goes out to the page before that stop, which Chromium would
-- carry out on whatever script runs when it arrives (a starved renderer
-- still running the probe and the calls behind it: another task's call was
-- stopped, "Internal error", beside two other make tests). And while a
-- request sent before the probe still has a caller waiting for it (another
-- task's tool may be what keeps the page busy), the page is left alone and
-- the probe asked again at the next call. Those requests have deadlines:
-- once they are answered or given up, the page is stopped.
local PROBE_GRACE, PROBE_AGE = 0.05, 1

function Probes:unstick(deadline)
  if next(self.sent) == nil then return end
  local conn = self.conn
  local list = {}                -- (the waits below may yield: another task adds probes)
  for sid, id in pairs(self.sent) do list[#list + 1] = { sid, id } end
  for _, e in ipairs(list) do
    local sid, id = e[1], e[2]
    if self.sent[sid] ~= id then
      -- (another task's call dealt with it meanwhile)
    elseif conn.closed or not conn:waiting(id) then
      self.sent[sid], self.at[sid] = nil, nil   -- answered (or forgotten): nothing runs
      errors.catch(conn.await, conn, id, now())
    elseif not conn:waiting_before(sid, id) then
      local wait = math.max(now() + PROBE_GRACE, (self.at[sid] or 0) + PROBE_AGE)
      if deadline and deadline < wait then wait = deadline end
      -- (a cancelled or lost wait decides nothing: its error goes on up)
      conn:wait_for(function() return self.sent[sid] ~= id or not conn:waiting(id) end, wait)
      if self.sent[sid] == id then           -- (not decided by another task meanwhile)
        self.sent[sid], self.at[sid] = nil, nil
        if conn:waiting(id) then
          conn:forget(id)
          conn:send_nowait("Runtime.terminateExecution", nil, sid)
        else
          errors.catch(conn.await, conn, id, now())
        end
      end
    end
  end
end

-- forget(): the page is gone: the probes of its stuck scripts were kept
-- for its next call (conn:keep), which will never come (10 pages closed
-- after a busy tool timed out left 10 requests in the connection for good).
function Probes:forget()
  for _, id in pairs(self.sent) do self.conn:forget(id) end
  self.sent, self.at = {}, {}
end

return M
