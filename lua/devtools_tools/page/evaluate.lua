-- devtools_tools.page.evaluate: page:evaluate - JavaScript run in one of the
-- page's documents (its main frame's, or an execution context named),
-- promises awaited, the value returned by value, or with its DOM elements
-- as Element objects.
--
-- What it must never do: leave the remote objects it made in the page
-- (its object group is released on every way out), or take a failure of
-- the page's document for the expression's (a document gone is
-- `navigated`, an expression that threw `js_error`).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local errors = require "devtools_tools.base.errors"
local options = require "devtools_tools.base.options"
local remote = require "devtools_tools.wire.remote"
local pagejs = require "devtools_tools.tools.pagejs"
local marshal = require "devtools_tools.tools.marshal"
local element = require "devtools_tools.tools.element"
local json = require "devtools_tools.base.json"

local raise = errors.raise
local type, tostring, tonumber, ipairs, pcall, error = type, tostring, tonumber, ipairs, pcall, error

local M = {}

local evaluate_opts = { timeout = true, context = "number", session = "string", elements = "boolean",
  repl = "boolean" }

-- with_elements(page, r, session, frame, deadline) -> the value of the
-- object r.result, its DOM elements as Element objects (js/evaluate.js
-- writes it as JSON with markers; the elements' node ids are asked for)
local function with_elements(page, r, session, frame, deadline)
  local conn = page.conn
  local group = r.group
  local key = "\0dt-element:" .. group
  local a = conn:await(conn:send("Runtime.callFunctionOn", { functionDeclaration = pagejs.EVALUATE,
    objectId = r.result.objectId, arguments = { { value = key }, { value = marshal.MAX_DEPTH } },
    returnByValue = false, objectGroup = group }, session, deadline), deadline, "Runtime.callFunctionOn")
  if a.exceptionDetails then
    local message, details = remote.exception_info(a.exceptionDetails)
    raise("js_error", message, { details = details })
  end
  local props = conn:await(conn:send("Runtime.getProperties", { objectId = a.result.objectId,
    ownProperties = true }, session, deadline), deadline, "Runtime.getProperties")
  local text, oids, order = nil, {}, {}
  for _, p in ipairs(type(props.result) == "table" and props.result or {}) do
    local i = tonumber(p.name)
    if i == 0 and type(p.value) == "table" then text = p.value.value
    elseif i and i > 0 and i % 1 == 0 and type(p.value) == "table" and type(p.value.objectId) == "string"
        and oids[i - 1] == nil then
      oids[i - 1] = p.value.objectId
      order[#order + 1] = i - 1
    end
  end
  if type(text) ~= "string" then raise("protocol_error", "evaluate: unexpected reply from the page") end
  local backend = element.backend_ids(conn, session, oids, order, deadline)
  local ok, v = pcall(json.decode, text)
  if not ok then raise("protocol_error", "evaluate: the page sent malformed JSON") end
  local fid, loader = frame and frame.id, frame and frame.loader_id
  local info = { id = fid, url = frame and frame.url, origin = frame and frame.origin }
  local doc = page.site:document(session, nil, info, loader)
  return marshal.replace_elements(v, key, function(idx, description, etext)
    if backend[idx] == nil then return nil end
    return element.new({ backend_node_id = backend[idx],
      description = type(description) == "string" and description or "element",
      text = type(etext) == "string" and etext or "",
      frame = { id = fid, url = info.url, origin = info.origin } }, doc)
  end)
end

-- evaluate(page, expression, opts?) -> value. Awaits a promise; returns by value.
-- opts: timeout; context (an execution context id, default: the main
-- frame); session (the CDP session to send it on, default: the page's);
-- elements (true: the DOM elements in the value come back as Element
-- objects, described as a tool's result gives them, where returning by
-- value gives {}; the value is then written as JSON.stringify writes it);
-- repl (true: read as the DevTools console reads it, CDP's replMode: `await`
-- at the top level, `let` declared again; a promise the code ends with is
-- then not awaited).
function M.evaluate(page, expression, opts)
  opts = options.check(opts, evaluate_opts, "evaluate")
  page.site:check_open()
  if type(expression) ~= "string" then
    raise("bad_argument", "evaluate: expression must be a string, got " .. type(expression))
  end
  local conn = page.conn
  local deadline = conn:deadline(opts)
  local session = opts.session or page.session
  local group = opts.elements and remote.object_group() or nil
  local frame = opts.elements and page.docs:frame_of_context(opts.context, session) or nil
  local ok, r = errors.catch(function()
    local reply = conn:await(conn:send("Runtime.evaluate", {
      expression = expression, awaitPromise = true, returnByValue = not group,
      contextId = opts.context, objectGroup = group, replMode = opts.repl or nil,
    }, session, deadline), deadline, "Runtime.evaluate")
    if group and not reply.exceptionDetails and type(reply.result) == "table" and reply.result.objectId then
      reply.group = group
      return { elements = with_elements(page, reply, session, frame, deadline) }
    end
    return reply
  end)
  if group then
    errors.catch(conn.send_nowait, conn, "Runtime.releaseObjectGroup", { objectGroup = group }, session)
  end
  if not ok then
    if remote.is_navigation_error(r) then
      if opts.context then
        raise("navigated", "evaluate: no execution context " .. tostring(opts.context)
          .. " (its document went away, or the id is not one of this page's)", { details = r.details })
      end
      raise("navigated", "evaluate: the document went away during the call", { details = r.details })
    elseif r.code == "protocol_error" and r.details and r.details.code == -32000 then
      -- e.g. a value that cannot be returned by value (a cycle)
      raise("js_error", r.details.message, { details = r.details })
    elseif (r.code == "timeout" and not (r.details and r.details.decoding)) or r.code == "cancelled" then
      page.probes:timed_out(session)   -- (a reply cut while decoding: the page did answer)
    end
    error(r, 0)
  end
  if r.exceptionDetails then
    remote.release_thrown(conn, session, r)
    local message, details = remote.exception_info(r.exceptionDetails)
    raise("js_error", message, { details = details })
  end
  if r.elements ~= nil then return r.elements end
  return remote.remote_value(r.result)
end

return M
