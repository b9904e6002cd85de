-- devtools_tools.nvim.views: the plugin's buffers - the result
-- (devtools://result, pretty JSON), the tool list (devtools://tools), the
-- picker (vim.ui.select) and the argument buffers (devtools://call/...,
-- a JSON skeleton of the tool's inputSchema; :w calls the tool).
--
-- It must never show page text uncleaned or unbounded, nor let a name a
-- page provides become a key of one of our tables (tools are looked up by
-- line number).

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local P = require "devtools_tools.nvim.session"

local api = vim.api
local levels = vim.log.levels
local type, tostring, ipairs, pairs, pcall = type, tostring, ipairs, pairs, pcall
local concat = table.concat
local S, lib = P.S, P.lib
local ready, echo, notify, report, start = P.ready, P.echo, P.notify, P.report, P.start
local scratch, show, set_lines, valid, oneline, MAX_TEXT = P.scratch, P.show, P.set_lines, P.valid, P.oneline,
  P.MAX_TEXT

local V = {}

function V.show_result(value, title)
  if not ready() then return end
  local buf = S.bufs.result
  if not valid(buf) then
    buf = scratch("devtools://result", "json")
    api.nvim_buf_set_option(buf, "buftype", "nofile")
    S.bufs.result = buf
  end
  local lines = vim.split(lib.pretty.encode(value), "\n", { plain = true })
  set_lines(buf, lines)
  api.nvim_buf_set_option(buf, "modifiable", true)
  api.nvim_buf_set_var(buf, "devtools_tools_title", title or "")
  show(buf)
  echo("devtools_tools: " .. (title or "result") .. " -> devtools://result")
  return buf
end

-- ---- the tool list -------------------------------------------------------------------------

-- "(name*, other)": every parameter, the required ones starred first; the
-- schema is read on a budget ("..." where it was cut), within the
-- deadline of the whole list.
local function param_summary(tool, deadline)
  local b = lib.pschema.budget({ deadline = deadline })
  local schema = tool.input_schema
  local parts = {}
  for _, p in ipairs(lib.pschema.params(schema, nil, "all", b)) do
    parts[#parts + 1] = oneline(p.name) .. (p.required and "*" or "")
  end
  if b.cut then parts[#parts + 1] = "..." end
  return "(" .. concat(parts, ", ") .. ")"
end

function V.render_tools(groups, warnings)
  local buf = S.bufs.tools
  if not valid(buf) then
    buf = scratch("devtools://tools", "devtools_tools")
    api.nvim_buf_set_option(buf, "buftype", "nofile")
    S.bufs.tools = buf
    local lhs = S.opts.keymaps and S.opts.keymaps.open_tool
    if lhs then
      vim.keymap.set("n", lhs, function() V.open_tool_under_cursor() end,
        { buffer = buf, desc = "devtools_tools: argument buffer for the tool on this line" })
    end
  end
  local lines, map = {}, {}
  local deadline = lib.dt.now() + 1
  local ntools = 0
  for _, g in ipairs(groups) do ntools = ntools + #g.tools end
  lines[1] = ("devtools_tools: %s - %d groups, %d tools"):format(
    oneline(S.page and S.page.url), #groups, ntools)
  local lhs = S.opts.keymaps and S.opts.keymaps.open_tool
  lines[2] = lhs and (lhs .. " on a tool: argument buffer; :w there calls the tool") or ""
  for _, w in ipairs(warnings or {}) do
    lines[#lines + 1] = "warning: " .. oneline(type(w) == "table" and (w.message or w.name) or w)
  end
  for _, g in ipairs(groups) do
    lines[#lines + 1] = ""
    lines[#lines + 1] = ("%s  [frame %s]"):format(oneline(g.name), oneline(g.frame and g.frame.url))
    if g.description and g.description ~= "" then
      lines[#lines + 1] = "  " .. oneline(g.description)
    end
    for _, t in ipairs(g.tools) do
      lines[#lines + 1] = "  " .. oneline(t.name) .. param_summary(t, deadline)
      map[#lines] = t
      lines[#lines + 1] = "      " .. oneline(t.description)
      map[#lines] = t
    end
  end
  set_lines(buf, lines)
  api.nvim_buf_set_option(buf, "modifiable", false)
  S.tool_lines = map
  show(buf)
  return buf
end

-- pick(groups?): the page's tools offered with vim.ui.select (Telescope,
-- fzf-lua or dressing.nvim show it when they replace vim.ui.select); the
-- one chosen opens its argument buffer. groups: a discovery (default: the
-- last one).
function V.pick(groups)
  if not ready() then return end
  groups = groups or S.groups or {}
  local items = {}
  local deadline = lib.dt.now() + 1
  for _, g in ipairs(groups) do
    for _, t in ipairs(g.tools) do
      items[#items + 1] = {
        tool = t,
        text = oneline(t.name) .. param_summary(t, deadline) .. "  [" .. oneline(g.name) .. "]  "
          .. lib.text.first_sentence(lib.text.bounded(tostring(t.description or ""), MAX_TEXT), 120),
      }
    end
  end
  if #items == 0 then
    return notify("devtools_tools: the page has no tools" .. (#(S.warnings or {}) > 0
      and " (some it offered are not valid: :DevTools list shows why)" or ""), levels.WARN)
  end
  vim.ui.select(items, {
    prompt = "devtools_tools: a tool of " .. oneline(S.page and S.page.url),
    kind = "devtools_tools.tool",
    format_item = function(item) return item.text end,
  }, function(item)
    if item then V.open_args(item.tool) end
  end)
end

-- ---- argument buffers ---------------------------------------------------------------------

-- Calls a tool of an argument buffer; buf is marked written once the call
-- succeeded (a schema error leaves it modified, as a failed write does).
-- Through the page: a Tool whose document is gone since the buffer was
-- opened is the page's tool of that name now (the library's one rule).
local function call_tool(tool, args, buf)
  local page = S.page
  return start("calling " .. tool.name, function(left)
    if page and not page.closed then return page:call(tool, args, left()) end
    return tool:call(args, left())
  end, function(res)
    if valid(buf) then api.nvim_buf_set_option(buf, "modified", false) end
    V.show_result(res, "call " .. tool.name)
  end, "the tool " .. oneline(tool.name) .. " did not answer")
end

local function on_write_args(buf)
  local tool = S.arg_bufs[buf]
  if not tool then return end
  -- (its comment lines - a skeleton that was cut says so in one - are not JSON)
  local body = lib.skeleton.strip_notes(concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n"))
  local ok, args = pcall(lib.dt.json.decode, body)
  if not ok then
    report(lib.dt.new_error("bad_argument", "the argument buffer is not valid JSON: "
      .. tostring(lib.dt.is_error(args) and args.message or args)))
    return
  end
  if args == lib.dt.null then args = nil end
  call_tool(tool, args, buf)
end

-- open_args(tool, given?): the argument buffer of a tool, pre-filled with
-- a JSON skeleton of its inputSchema (comment lines first: the allowed
-- values of its enums, and a note when the schema was too large to show
-- whole); :w calls the tool with what it holds. given: arguments already
-- typed (a JSON object), shown in place of the skeleton's placeholders
-- (they replace what the buffer held).
function V.open_args(tool, given)
  if not ready() then return end
  local name = "devtools://call/" .. oneline(tool.group and tool.group.name or "?") .. "/" .. oneline(tool.name)
  -- The same tool after a new discovery is a new Tool object: its buffer,
  -- with what was typed there, now calls the new one.
  for b in pairs(S.arg_bufs) do
    if valid(b) and api.nvim_buf_get_name(b) == name then
      S.arg_bufs[b] = tool
      if given ~= nil then
        api.nvim_buf_set_lines(b, 0, -1, false, vim.split(lib.skeleton.text(tool.input_schema, nil, given), "\n",
          { plain = true }))
      end
      show(b)
      return b
    end
  end
  local buf = api.nvim_create_buf(false, false)
  if not pcall(api.nvim_buf_set_name, buf, name) then
    pcall(api.nvim_buf_set_name, buf, name .. " (" .. buf .. ")")
  end
  api.nvim_buf_set_option(buf, "buftype", "acwrite")
  api.nvim_buf_set_option(buf, "bufhidden", "hide")
  api.nvim_buf_set_option(buf, "swapfile", false)
  api.nvim_buf_set_option(buf, "filetype", "json")
  local skeleton = lib.skeleton.text(tool.input_schema, nil, given)
  api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(skeleton, "\n", { plain = true }))
  api.nvim_buf_set_option(buf, "modified", false)
  S.arg_bufs[buf] = tool
  local write_cmd
  write_cmd = api.nvim_create_autocmd("BufWriteCmd", { buffer = buf, callback = function(ev)
    local bufname = api.nvim_buf_get_name(ev.buf)
    if ev.match == bufname and bufname:sub(1, 16) == "devtools://call/" then return on_write_args(ev.buf) end
    -- :w other.json, :saveas: a file, not a call
    local renamed = ev.match == bufname                 -- (:saveas renamed the buffer first)
    if not renamed and vim.v.cmdbang == 0 and vim.loop.fs_stat(ev.match) then
      notify("devtools_tools: " .. ev.file .. " exists (add ! to override)", levels.ERROR)
      return
    end
    local ok, rc = pcall(vim.fn.writefile, api.nvim_buf_get_lines(ev.buf, 0, -1, false), ev.match)
    if not ok or rc ~= 0 then
      notify("devtools_tools: cannot write " .. ev.file .. (ok and "" or (": " .. tostring(rc))), levels.ERROR)
      return
    end
    if renamed then
      -- now a file's buffer: later writes are plain writes
      S.arg_bufs[ev.buf] = nil
      api.nvim_del_autocmd(write_cmd)
      api.nvim_buf_set_option(ev.buf, "buftype", "")
      api.nvim_buf_set_option(ev.buf, "modified", false)
    end
    notify("devtools_tools: wrote " .. ev.file, levels.INFO)
  end })
  api.nvim_create_autocmd("BufWipeout", { buffer = buf, callback = function(ev) S.arg_bufs[ev.buf] = nil end })
  show(buf)
  return buf
end

function V.open_tool_under_cursor()
  if not ready() then return end
  local line = api.nvim_win_get_cursor(0)[1]
  local tool = S.tool_lines[line]
  if not tool then
    notify("devtools_tools: no tool on this line", levels.WARN)
    return
  end
  return V.open_args(tool)
end


return V
