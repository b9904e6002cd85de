-- devtools_tools.tools.kinds: the kinds of tool a page has, and the one way
-- a tool of any kind is called, alone or many at once.
--
-- A kind is a table (tools/calls.lua has "devtools", the tools of the
-- devtoolstooldiscovery event; tools/webmcp.lua has "webmcp"):
--   prepare(tool, args, deadline, who) -> c  checked, validated, marshalled:
--                                           nothing sent
--   send(list, deadline)                    writes the requests of prepared
--                                           calls of this kind (a failure is
--                                           kept in each call, for finish)
--   sent(list, deadline)                    optional: runs once every kind's
--                                           requests are written, before
--                                           any call's answer is awaited
--   finish(c, deadline) -> value            awaits one call's answer, opens it
--   call(tool, args, deadline) -> value     the steps in turn, as fast as
--                                           the kind can make one call
-- M.call, M.call_many and M.call_again are the one way any tool is called
-- (a Tool's call, the page's, a front end's through the page).
-- A tool says its kind by name (tool.kind); a group's tools are of one kind.
--
-- What it must never do: let one entry's failure take another entry's
-- result, wait for any answer before every request of a call_many is
-- written, or start a clock of its own (each step takes the call's one
-- absolute deadline).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local errors = require "devtools_tools.base.errors"
local calls = require "devtools_tools.tools.calls"
local webmcp = require "devtools_tools.tools.webmcp"
local current_task = require("devtools_tools.rt.task").current

local raise = errors.raise
local ipairs, error, pcall, type = ipairs, error, pcall, type

local M = { devtools = calls.kind, webmcp = webmcp.kind }

-- of(tool) -> its kind
function M.of(tool)
  return M[tool.kind] or calls.kind
end

-- call(tool, args, deadline) -> value
function M.call(tool, args, deadline)
  return M.of(tool).call(tool, args, deadline)
end

-- changed(err) -> true when a call failed because the page's tools changed
-- since its Tool was found (nothing ran: js/runtime.js said "changed")
function M.changed(err)
  return err.code == "stale" and type(err.details) == "table" and err.details.changed == true
end

-- call_again(tool, args, deadline, refind, x) -> value: the one rule for a
-- call that did not run. The tool is called; when it failed because
-- nothing ran - its document is gone, or the page's tools changed since
-- it was found (stale), or the page's list no longer has it
-- (tool_not_found) - refind(err, x) names the tool to call instead (the same
-- one, or the one the page holds now under that name), and that one is
-- called, once; nil: the failure stands. Anything else fails as it is.
function M.call_again(tool, args, deadline, refind, x)
  local ok, r = errors.catch(M.call, tool, args, deadline)
  if ok then return r end
  if r.code ~= "stale" and r.code ~= "tool_not_found" then error(r, 0) end
  local again = refind(r, x)
  if again == nil then error(r, 0) end
  return M.call(again, args, deadline)
end

-- call_many(entries, deadline, keep) -> results. entries[i] is {tool =,
-- args =} or {err = a dt.Error} (a name that could not be resolved). Every
-- entry is prepared (checked) first, then every kind's requests are
-- written, then the answers awaited in order. keep: failed entries hold
-- their dt.Error instead of raising the first one.
function M.call_many(entries, deadline, keep)
  local results, n = {}, #entries
  local order, lists, calls_of = {}, {}, {}
  for i = 1, n do
    local entry = entries[i]
    local ok, c
    if entry.err then
      ok, c = false, entry.err
    else
      local kind = M.of(entry.tool)
      ok, c = pcall(kind.prepare, entry.tool, entry.args, deadline, "call_many entry " .. i)
      if not ok and not errors.is_error(c) then error(c, 0) end
      if ok then
        local list = lists[kind]
        if not list then
          list = {}
          lists[kind] = list
          order[#order + 1] = kind
        end
        list[#list + 1] = c
        calls_of[i] = { kind = kind, c = c }
      end
    end
    if not ok then
      if not keep then error(c, 0) end
      results[i] = c
    end
  end
  -- Everything checked: from here on an entry's failure is recorded, so
  -- that every request sent is also awaited (raised at the end).
  for _, kind in ipairs(order) do kind.send(lists[kind], deadline) end
  for _, kind in ipairs(order) do
    if kind.sent then kind.sent(lists[kind], deadline) end
  end
  local first_err
  for i = 1, n do
    local e = calls_of[i]
    if e then
      local ok, v = errors.catch(e.kind.finish, e.c, deadline)
      if not ok then first_err = first_err or v end
      results[i] = v
    end
  end
  if first_err and not keep then error(first_err, 0) end
  -- errors = "return" keeps the entries' failures, not the task's own
  -- cancellation (every entry after it failed with it)
  local me = current_task()
  if me and me.cancelled then raise("cancelled", "the task was cancelled") end
  results.n = n
  return results
end

return M
