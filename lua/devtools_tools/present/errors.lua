-- devtools_tools.present.errors: a dt.Error as a person reads it - the
-- command line's stderr and Neovim's notifications.
--
-- The text is made from the error's fields, never from its message's
-- wording: the code, the message, and the structured details (a schema
-- error's path, the value received, the allowed values, the extra
-- property's name; the host a connect refused). What a page wrote is
-- bounded: a message longer than the limit shows its start and
-- "... (N more bytes)", at most 20 schema errors are listed; the whole
-- text stays in the error object and in whole(err) (the command line's
-- --verbose, Neovim's devtools://error buffer).
--
-- It must never raise, whatever the error holds, nor hand a front end
-- page text that is unbounded or not cleaned.

local dt = require "devtools_tools"
local text = require "devtools_tools.present.text"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local type, tostring, ipairs = type, tostring, ipairs
local concat = table.concat
local clean, bounded = text.clean, text.bounded

local M = {}

M.LIMIT = 2000           -- bytes of a message shown
M.MAX_DETAILS = 20       -- schema errors listed
M.MAX_LINE = 300         -- bytes of one of them

local function field(t, k)
  if type(t) ~= "table" then return nil end
  local v = t[k]
  if v == nil then return nil end
  return tostring(v)
end

-- A schema error (one entry of an invalid_params error's details) on one
-- line: "/path: message", the extra property's name, the value received
-- and what was allowed.
local function schema_line(d, limit)
  local path = field(d, "path")
  if path == nil or path == "" then path = "/" end
  local line = path .. ": " .. (field(d, "message") or "?")
  local keyword, property = field(d, "keyword"), field(d, "property")
  if keyword == "additionalProperties" and property then
    line = line .. " ('" .. property .. "')"
  elseif keyword ~= "required" and field(d, "received") then
    line = line .. " (got " .. field(d, "received")
      .. (field(d, "allowed") and ("; allowed: " .. field(d, "allowed")) or "") .. ")"
  end
  line = clean(line)
  if limit then line = text.brief(line, limit) end
  return "  " .. line
end

local function schema_errors(err)
  local d = err.details
  if err.code ~= "invalid_params" or type(d) ~= "table" or type(d[1]) ~= "table" then return nil end
  return d
end

-- The advice a refused remote host's error gives is an option of the
-- library (allow_remote); a front end that offers none says its own rule.
local function headline(err, opts)
  local d = err.details
  if err.code == "invalid_params" and schema_errors(err) and err.tool ~= nil then
    return "Invalid parameters for tool " .. tostring(err.tool)
  end
  if opts.remote and type(d) == "table" and d.loopback_only and d.host ~= nil then
    return "connect: refusing non-loopback host " .. tostring(d.host)
      .. " (the DevTools protocol gives full control of the browser; " .. opts.remote .. ")"
  end
  return tostring(err.message)
end

-- render(err, opts?) -> lines, cut: what a front end shows, each line
-- cleaned: "<code>: <message>" (at most opts.limit bytes of the message,
-- M.LIMIT by default), then one line per schema error. cut: something was
-- left out (whole(err) has it). opts.remote: the rule on remote hosts to
-- state instead of the library's advice. Not a dt.Error (a bug of ours):
-- "internal error: ...".
function M.render(err, opts)
  opts = opts or {}
  local limit = opts.limit or M.LIMIT
  if not dt.is_error(err) then
    local s, more = bounded(tostring(err), limit)
    return { "internal error: " .. text.rtrim(clean(s)) }, more > 0
  end
  -- (cut first, then cleaned: a 20 MB message costs no more than a short one)
  local msg, more = bounded(headline(err, opts), limit)
  msg = text.rtrim(clean(msg))
  local lines = { tostring(err.code) .. ": " .. msg }
  local cut = more > 0
  local list = schema_errors(err)
  if list then
    for i, d in ipairs(list) do
      if i > M.MAX_DETAILS then
        lines[#lines + 1] = "  ... and " .. (#list - M.MAX_DETAILS) .. " more"
        cut = true
        break
      end
      lines[#lines + 1] = schema_line(d, M.MAX_LINE)
    end
  end
  return lines, cut
end

-- text(err, opts?) -> render's lines as one text, and cut
function M.text(err, opts)
  local lines, cut = M.render(err, opts)
  return concat(lines, "\n"), cut
end

-- whole(err) -> all of it, for a person who asked: the whole message
-- (controls cleaned, line breaks kept), every schema error, and the
-- JavaScript stack where the page gave one.
function M.whole(err)
  if not dt.is_error(err) then return text.clean_lines(tostring(err)) end
  local out = { tostring(err.code) .. ": " .. text.clean_lines(tostring(err.message)) }
  local list = schema_errors(err)
  if list then
    for _, d in ipairs(list) do out[#out + 1] = schema_line(d) end
  end
  local stack = type(err.details) == "table" and err.details.stack
  if type(stack) == "string" and stack ~= "" then
    out[#out + 1] = "stack:"
    out[#out + 1] = text.clean_lines(stack)
  end
  return concat(out, "\n")
end

return M
