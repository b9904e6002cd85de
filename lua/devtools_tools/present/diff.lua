-- devtools_tools.present.diff: a replay's differences (dt.trace.replay) as
-- a person reads them, one line each -
--   call 3 getCacheStats: /misses: 9 -> 17
--   call 4 legacyStats: missing tool: the page has no legacyStats now
-- and a summary line; the same as JSON for a program (--json). The
-- command line prints these; Neovim's replay buffer and quickfix list
-- read the same lines.
--
-- It must never raise on what a difference holds, nor show page text
-- unbounded or uncleaned (a value shows its start, at most VALUE bytes).

local dt = require "devtools_tools"
local text = require "devtools_tools.present.text"
local pretty = require "devtools_tools.present.pretty"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, tostring, pcall, ipairs = type, tostring, pcall, ipairs
local clean = text.clean
local ABSENT = dt.trace.ABSENT

local M = {}

M.VALUE = 200            -- bytes of a value shown
M.MESSAGE = 500          -- bytes of a message shown

-- value(v) -> v on one line: its JSON, or "(absent)"
function M.value(v)
  if v == ABSENT then return "(absent)" end
  local ok, s = pcall(pretty.encode, v, { indent = false })
  if not ok then s = tostring(v) end
  return text.brief(clean(s), M.VALUE)
end

local function message(s)
  return text.brief(clean(tostring(s or "")), M.MESSAGE)
end

local function err_text(e)
  if type(e) ~= "table" then return message(e) end
  return message(tostring(e.code) .. ": " .. tostring(e.message))
end

local function digest_text(d)
  if type(d) ~= "table" then return "?" end
  return tostring(d.bytes) .. " bytes, sha256 " .. tostring(d.sha256):sub(1, 16) .. "..."
end

-- What a difference of each kind says, after "call N TOOL: ".
local SAYS = {
  value = function(d)
    return (d.path ~= "" and (clean(d.path) .. ": ") or "") .. M.value(d.recorded) .. " -> " .. M.value(d.new)
  end,
  digest = function(d)
    return "the result (kept as its digest) changed: " .. digest_text(d.recorded) .. " -> " .. digest_text(d.new)
  end,
  missing_tool = function(d)
    return "missing tool: the page has no " .. clean(d.tool) .. " now"
  end,
  refused = function(d)
    return "arguments refused now: " .. message(d.message)
  end,
  error_instead = function(d)
    return "an error where there was a result: " .. err_text(d.error)
  end,
  result_instead = function(d)
    return "a result where there was an error (" .. err_text(d.recorded) .. "): " .. M.value(d.new)
  end,
  error_changed = function(d)
    return "another error: " .. err_text(d.recorded) .. " -> " .. err_text(d.error)
  end,
  unreplayable = function(d)
    return "not replayed: " .. message(d.message)
  end,
}

-- line(d) -> the difference on one line
function M.line(d)
  if d.kind == "navigation" then
    return "navigation to " .. text.brief(clean(d.url), M.VALUE) .. " failed: " .. err_text(d.error)
  end
  local says = SAYS[d.kind]
  local ok, s = pcall(says or function() return tostring(d.kind) end, d)
  if not ok then s = tostring(d.kind) end
  return "call " .. tostring(d.call) .. " " .. text.brief(clean(d.tool), M.VALUE) .. ": " .. s
end

local function plural(n, one, many)
  return tostring(n) .. " " .. (n == 1 and one or many)
end

-- summary(report) -> "replayed 12 calls and 1 navigation: 3 differences in 2 calls"
function M.summary(report)
  local head = "replayed " .. plural(report.calls, "call", "calls")
  if report.navigations > 0 then head = head .. " and " .. plural(report.navigations, "navigation", "navigations") end
  local n = #report.differences
  if n == 0 then return head .. ": no differences" end
  return head .. ": " .. plural(n, "difference", "differences") .. " in "
    .. plural(report.differing_calls, "call", "calls")
end

local function json_err(e)
  if type(e) ~= "table" then return nil end
  return { code = e.code, message = e.message }
end

local function json_value(v)
  if v == ABSENT then return nil end
  if v == nil then return dt.null end
  return v
end

-- json(report) -> {calls, navigations, differing_calls, differences =
-- [{call, tool, kind, path, recorded, new, message, error, url}]}: a
-- side that has no value there ("(absent)") has no member
function M.json(report)
  local list = dt.array{}
  for _, d in ipairs(report.differences) do
    local e = { call = d.call, tool = d.tool, kind = d.kind, url = d.url, message = d.message,
      error = json_err(d.error) }
    if d.kind == "value" or d.kind == "digest" or d.kind == "result_instead" or d.kind == "error_changed" then
      e.path = d.path
      e.recorded = json_value(d.recorded)
      e.new = json_value(d.new)
    end
    list[#list + 1] = e
  end
  return { calls = report.calls, navigations = report.navigations, differing_calls = report.differing_calls,
    differences = list }
end

return M
