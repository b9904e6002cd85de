-- devtools_tools.cli.trace: traces on the command line - --record FILE
-- (run, repl, call and mcp record through dt.record), `replay FILE [URL]`
-- (the recorded calls made again and compared: each difference on a line,
-- then a summary; exit status 0 without differences, 1 with) and `export
-- FILE --lua` (the recipe dt.trace.lua writes).
--
-- It must never leave a tab it opened in a running browser, write a trace
-- other than the one named (--update replaces it whole, at once), or read
-- a trace it cannot use as if it were a shorter one: the trace is read,
-- and --ignore pointers checked, before any browser starts.

local dt = require "devtools_tools"
local argv = require "devtools_tools.cli.argv"
local target = require "devtools_tools.cli.target"
local pdiff = require "devtools_tools.present.diff"
local pretty = require "devtools_tools.present.pretty"
local text = require "devtools_tools.present.text"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local pcall, error, tostring, type = pcall, error, tostring, type
local usage, as_url = argv.usage, argv.as_url

local M = {}

-- The timeout of each call and navigation of a replay, without --timeout.
M.CALL_TIMEOUT = 30

-- start(ctx, page) -> the Recorder --record asks for, or nil
function M.start(ctx, page)
  local opts = ctx.opts
  if not opts.record then return nil end
  return dt.record(page, opts.record, { observe = opts["record-observe"] or nil,
    bodies = opts["record-bodies"] or nil, timeout = ctx.left() })
end

-- stop(ctx, recorder): ends the trace; a write that failed is said
function M.stop(ctx, rec)
  if not rec then return end
  local ok, why = rec:stop()
  if not ok then ctx.out:warn("the trace " .. tostring(ctx.opts.record) .. " is cut short: " .. tostring(why)) end
end

-- recording(ctx, page, fn) -> fn()'s result, with --record on around it
function M.recording(ctx, page, fn)
  local rec = M.start(ctx, page)
  local ok, res = pcall(fn)
  M.stop(ctx, rec)
  if not ok then error(res, 0) end
  return res
end

-- read(file, cmd) -> the trace; a file that cannot be used is a usage error
local function read(file, cmd)
  local ok, t = pcall(dt.trace.read, file)
  if not ok then
    if dt.is_error(t) then usage(t.message, cmd) end
    error(t, 0)
  end
  return t
end

function M.replay(ctx)
  local pos, opts = ctx.pos, ctx.opts
  local file = pos[1]
  if not file then usage("which trace? devtools-tools replay FILE [URL]", "replay") end
  if #pos > 2 then usage("replay takes FILE [URL]", "replay") end
  local given = as_url(pos[2])
  local trace = read(file, "replay")
  local ok, err = pcall(dt.trace.ignorer, opts.ignore)
  if not ok then
    local why = dt.is_error(err) and err.message:gsub("^ignore: ", "") or tostring(err)
    usage("--ignore " .. why, "replay")
  end
  local url = given or trace.header.url
  if type(url) ~= "string" or url == "" then url = nil end
  if url == "about:blank" then url = nil end
  -- a page of its own, fresh, settled: the recording started on a new document
  opts["new-tab"] = true
  ctx.settle = true
  local browser, how = target.open_browser(ctx)
  local page, opened
  local report
  local done, res = pcall(function()
    page, opened = target.open_page(ctx, browser, how, url)
    ctx.progress:step("replaying " .. #trace.calls .. " calls")
    local timeout = opts.timeout or M.CALL_TIMEOUT
    report = dt.trace.replay(page, trace, {
      url = given, ignore = opts.ignore, timeout = timeout, navigate = false,
      on_difference = not opts.json and function(d)
        ctx.progress:done()
        ctx.out:emit(pdiff.line(d), "\n")
      end or nil,
    })
    ctx.progress:done()
  end)
  if opened and how == "connected" and page then pcall(page.close, page, { timeout = 1 }) end
  ctx.progress:done()
  browser:close()
  if not done then error(res, 0) end
  if opts.json then
    ctx.out:emit(pretty.encode(pdiff.json(report), { indent = "  " }), "\n")
  else
    ctx.out:emit(pdiff.summary(report), "\n")
  end
  if opts.update then
    dt.trace.write(report.updated, file)
    if not opts.quiet then ctx.out:note("updated " .. file .. " with the new results") end
    return 0
  end
  return #report.differences == 0 and 0 or 1
end

function M.export(ctx)
  local pos, opts = ctx.pos, ctx.opts
  local file = pos[1]
  if not file then usage("which trace? devtools-tools export FILE --lua", "export") end
  if #pos > 1 then usage("export takes one FILE", "export") end
  if not opts.lua then usage("export writes a Lua recipe: give --lua", "export") end
  local trace = read(file, "export")
  ctx.out:emit(dt.trace.lua(trace))
  if not opts.quiet and #trace.calls == 0 then ctx.out:note("the trace " .. text.clean(file) .. " holds no calls") end
  return 0
end


return M
