-- devtools_tools.tools.pagejs: the page-side JavaScript, read from the .js files
-- in js/ next to this module (in a checkout, after `make install`, after
-- `luarocks make`, or on Neovim's runtimepath: wherever this file is, its
-- js/ directory is too).
--
-- What it must never do: edit the JavaScript text (no templating: values
-- such as the depth limit are passed as call arguments; a call's arguments
-- are written where js/call_expr.js says ARGS, as JSON literals), or look
-- for the files anywhere a user did not put this library.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local errors = require "devtools_tools.base.errors"

local M = {}

local NAMES = { "watch", "runtime", "discover", "call", "call_expr", "batch", "take", "evaluate",
  "idle", "wait_selector", "webmcp_usage" }

-- The directory this file was loaded from, from its chunk name "@path".
local function own_dir()
  local src = debug.getinfo(1, "S").source
  if type(src) == "string" and src:sub(1, 1) == "@" then
    return (src:sub(2):match("^(.*)[/\\]") or ".")
  end
end

-- Candidate places of js/NAME.js: next to this file first, then every
-- package.path entry (for a loader that gives no file name).
local function candidates(name)
  local out = {}
  local dir = own_dir()
  if dir then out[#out + 1] = dir .. "/js/" .. name .. ".js" end
  for templ in package.path:gmatch("[^;]+") do
    if templ:find("?.lua", 1, true) and not templ:find("init.lua", 1, true) then
      out[#out + 1] = (templ:gsub("%?%.lua$", "devtools_tools/tools/js/" .. name .. ".js"))
    end
  end
  return out
end

local function read(name)
  local tried = {}
  for _, path in ipairs(candidates(name)) do
    local f = io.open(path, "rb")
    if f then
      local text = f:read("*a")
      f:close()
      if text and text ~= "" then return text, path end
    end
    tried[#tried + 1] = path
  end
  errors.raise("bad_argument", "devtools_tools: page script js/" .. name .. ".js not found next to "
    .. "the library (tried " .. table.concat(tried, ", ") .. "); reinstall it")
end

-- M.source[name] -> the text of js/<name>.js; M.path[name] -> where it was read
M.source, M.path = {}, {}
-- What is sent of a file: its text less the lines that are only a `//`
-- comment (they document the file for its readers; every call would carry
-- them to the page, and Chromium hashes and parses what it is sent). Code
-- lines are sent as written.
local function sendable(text)
  local out = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if not line:match("^%s*//") then out[#out + 1] = line end
  end
  return (table.concat(out, "\n"):gsub("\n+$", ""))
end

for _, name in ipairs(NAMES) do
  local text
  text, M.path[name] = read(name)
  M.source[name] = sendable(text)
end

-- The functionDeclaration of the discovery call: installs the listener
-- count and the runtime, then discovers. The files are function
-- expressions, called, not edited.
M.DISCOVER = "function (maxDepth, maxValues) {\n  (" .. M.source.watch .. ")(null);\n  ("
  .. M.source.runtime .. ")(maxDepth);\n  return (" .. M.source.discover .. ")(maxDepth, maxValues);\n}"

-- The script that watches a document's listeners and tells Lua through
-- the binding named: at each document's start, and in documents already
-- there (page:on("tools_changed")).
function M.watch_source(binding)
  if not binding:match("^[%a_][%w_]*$") then            -- (ours: a name, written as a literal)
    errors.raise("bad_argument", "watch_source: a binding is a JavaScript name, got " .. binding)
  end
  return "(" .. M.source.watch .. ")('" .. binding .. "');"
end
M.CALL = M.source.call
-- A one-call expression is CALL_EXPR_HEAD, the arguments as JSON
-- literals, CALL_EXPR_TAIL: js/call_expr.js is one line of code, cut where
-- it says ARGS (the one place its text is not sent as written).
M.CALL_EXPR_HEAD, M.CALL_EXPR_TAIL = M.source.call_expr:match("^%s*(.-)ARGS(.-)%s*$")
assert(M.CALL_EXPR_HEAD and not M.CALL_EXPR_HEAD:find("\n") and not M.CALL_EXPR_TAIL:find("\n"),
  "js/call_expr.js: one line of code with one ARGS")
-- The functionDeclaration of page:evaluate{elements = true}, called on
-- the value: js/evaluate.js, given the runtime to install where the
-- document has none (it describes elements).
M.EVALUATE = "function (key, maxDepth) {\n  return (" .. M.source.evaluate .. ").call(this, key, maxDepth, "
  .. M.source.runtime .. ");\n}"
M.BATCH = M.source.batch
M.TAKE = M.source.take
-- Readiness (page/ready.lua): the main thread caught up, a selector
-- matched, what the document's scripts say of WebMCP.
M.IDLE = M.source.idle
M.WAIT_SELECTOR = M.source.wait_selector
M.WEBMCP_USAGE = M.source.webmcp_usage

return M
