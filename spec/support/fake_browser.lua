-- A fake of our own transport for the unit specs of page, discovery and
-- browser: a Lua table with send/recv/pending/close that plays a scripted
-- Chromium. `on[method] = function(params, session, msg, fake) -> result |
-- {error = {code, message}} | fake.NO_REPLY` answers a command; fake:event()
-- queues an event. Nothing here waits: an empty queue is a timeout at once,
-- unless fake.later holds {at = time, msg = message}: one that "arrives" at
-- that time, so a read whose deadline reaches it gets it.

require("devtools_tools.base.nojit")()   -- the specs' helpers too: see lua/devtools_tools/base/nojit.lua

local json = require "devtools_tools.base.json"
local cdp = require "devtools_tools.wire.cdp"
local pagejs = require "devtools_tools.tools.pagejs"
local CALL_HEAD, CALL_TAIL = pagejs.CALL_EXPR_HEAD, pagejs.CALL_EXPR_TAIL

local F = {}

F.NO_REPLY = setmetatable({}, { __tostring = function() return "NO_REPLY" end })
-- As a result: a large reply whose decoding the real transports cut at the
-- deadline of the call waiting for it (ids[id] or deadlines[id], a number;
-- otherwise it decodes as a tool's {"n":0,"v":"decoded"}). fake.late_deadline:
-- that number. As the output of a WebMCP.toolResponded event: the same, by
-- deadlines[invocationId] (otherwise the output is "decoded").
F.DECODE_LATE = setmetatable({}, { __tostring = function() return "DECODE_LATE" end })
F.LATE_MESSAGE = "the deadline passed while decoding (262144 of 1000000 bytes done)"

function F.new(on)
  local t = { sent = {}, queue = {}, out = {}, oi = 1, olen = 0, later = {}, closed = false, on = on or {} }
  function t:send(text)
    if self.closed then return nil, "gone", "closed" end
    local msg = json.decode(text)
    -- A tool call sent as an expression (js/call_expr.js): msg.call holds
    -- its decoded {groupIndex, toolIndex, name, args}.
    local expr = msg.method == "Runtime.evaluate" and msg.params and msg.params.expression
    if type(expr) == "string" and expr:sub(1, #CALL_HEAD) == CALL_HEAD
        and expr:sub(-#CALL_TAIL) == CALL_TAIL then
      msg.call = json.decode("[" .. expr:sub(#CALL_HEAD + 1, -#CALL_TAIL - 1) .. "]")
    end
    self.sent[#self.sent + 1] = msg
    local fn = self.on[msg.method]
    local r = {}
    if fn then r = fn(msg.params, msg.sessionId, msg, self) end
    if r ~= F.NO_REPLY then
      local reply = { id = msg.id, sessionId = msg.sessionId }
      if type(r) == "table" and r.error then reply.error = r.error else reply.result = r or {} end
      self.queue[#self.queue + 1] = reply
    end
    return true
  end
  -- recv_cdp(deadline, ids): replies whose id is in ids carry a JSON
  -- text in result.result.value, decoded in place as the real transports do
  function t:recv_cdp(deadline, ids, deadlines)
    -- (the queue taken whole into `out` and read from there: removing
    -- each message from the front of a long queue was quadratic)
    if self.oi > self.olen and #self.queue > 0 then
      self.out, self.queue, self.oi, self.olen = self.queue, {}, 1, #self.queue
    end
    local m
    if self.oi <= self.olen then
      m = self.out[self.oi]
      self.oi = self.oi + 1
    end
    if not m and self.later[1] and deadline and deadline >= self.later[1].at then
      m = table.remove(self.later, 1).msg
    end
    if m and m.result == F.DECODE_LATE then
      local late = ids and ids[m.id]
      if type(late) ~= "number" then late = deadlines and deadlines[m.id] end
      if type(late) == "number" then
        self.late_deadline = late
        return nil, F.LATE_MESSAGE, "timeout", m.id
      end
      m.result = { result = { type = "string", value = '{"n":0,"v":"decoded"}' } }
    end
    local p = m and m.method == "WebMCP.toolResponded" and m.params
    if p and p.output == F.DECODE_LATE then
      local late = deadlines and deadlines[p.invocationId]
      if type(late) == "number" then
        self.late_deadline = late
        return nil, F.LATE_MESSAGE, "timeout", p.invocationId
      end
      p.output = "decoded"
    end
    if m then
      local rr = m.result and m.result.result
      if ids and ids[m.id] and rr and type(rr.value) == "string" then
        local ok, v = pcall(json.decode, rr.value)
        if ok then rr.json = v else rr.json_error = tostring(v) end
        rr.value = nil
      end
      return m
    end
    if self.closed then return nil, "gone", "closed" end
    return nil, "timed out", "timeout"
  end
  function t:pending() return self.oi <= self.olen or #self.queue > 0 end
  function t:close() self.closed = true end
  function t:event(method, params, session)
    self.queue[#self.queue + 1] = { method = method, params = params, sessionId = session }
  end
  -- methods(session?) -> the methods sent, in order (on one session if given)
  function t:methods(session)
    local out = {}
    for _, m in ipairs(self.sent) do
      if session == nil or m.sessionId == session then out[#out + 1] = m.method end
    end
    return out
  end
  -- count_calls() -> tool calls sent, either way (evaluate or callFunctionOn)
  function t:count_calls()
    local n = 0
    for _, m in ipairs(self.sent) do
      if m.call or (m.method == "Runtime.callFunctionOn"
          and m.params.functionDeclaration:find("callDevtoolsTool", 1, true)) then n = n + 1 end
    end
    return n
  end
  function t:count(method)
    local n = 0
    for _, m in ipairs(self.sent) do if m.method == method then n = n + 1 end end
    return n
  end
  return t
end

-- A page target "T1" with session "S1", main frame "F1" at url, one
-- execution context (id 7). Returns the fake and the handlers to extend.
function F.page_target(url)
  local fake
  fake = F.new({
    ["Target.createTarget"] = function() return { targetId = "T1" } end,
    ["Target.attachToTarget"] = function() return { sessionId = "S1" } end,
    ["Runtime.enable"] = function(_, session, _, f)
      f:event("Runtime.executionContextCreated", { context = { id = 7, uniqueId = "u7",
        origin = "http://127.0.0.1", auxData = { isDefault = true, frameId = "F1" } } }, session)
      return {}
    end,
    ["Page.getFrameTree"] = function()
      return { frameTree = { frame = { id = "F1", url = url, securityOrigin = "http://127.0.0.1",
        loaderId = "L1" } } }
    end,
    ["Target.closeTarget"] = function() return { success = true } end,
  })
  return fake
end

-- A Browser over the fake (no process), as dt.connect makes one.
function F.browser(fake, timeout)
  local browser = require "devtools_tools.browser"
  local conn = cdp.new(fake, { timeout = timeout or 5 })
  return browser._new(conn, { timeout = timeout or 5, launched = false, url = "fake" })
end

-- The reply a discovery call gives: the page's JSON text (clock: what the
-- page's clock read as it answered, ms; none by default).
function F.discovery_value(groups, warnings, clock)
  return { result = { type = "string", value = json.encode({ groups = groups,
    warnings = warnings or json.array {}, clock = clock }) } }
end

-- Handlers that make F1 answer discovery with `groups`, counting dispatches.
function F.with_tools(fake, groups, counter)
  fake.on["Runtime.evaluate"] = function(p, s, m, f)
    if p.expression == "window" then return { result = { type = "object", objectId = "W" .. tostring(p.contextId) } } end
    if m.call then
      if fake.on_call then return fake.on_call(p, s, m, f) end
      return { result = { type = "string", value = '{"n":0,"v":"called"}' } }
    end
    return { result = { type = "number", value = 1 } }
  end
  fake.on["DOMDebugger.getEventListeners"] = function()
    return { listeners = { { type = "devtoolstooldiscovery" } } }
  end
  fake.on["Runtime.callFunctionOn"] = function(p, s, m, f)
    if p.functionDeclaration:find("discoverDevtoolsTools", 1, true) then
      if counter then counter.n = counter.n + 1 end
      return F.discovery_value(type(groups) == "function" and groups() or groups)
    end
    if fake.on_call then return fake.on_call(p, s, m, f) end
    if p.functionDeclaration:find("batchDevtoolsTools", 1, true) then
      local envs = {}
      for i = 1, #p.arguments[1].value do envs[i] = '{"n":0,"v":"called"}' end
      return { result = { type = "string", value = "[" .. table.concat(envs, ",") .. "]" } }
    end
    return { result = { type = "string", value = '{"n":0,"v":"called"}' } }
  end
end

return F
