-- devtools_tools.cli.background: `devtools-tools browser start|stop|status`
-- and where the background browser is recorded
-- ($XDG_STATE_HOME/devtools-tools/browser.json, default ~/.local/state).
--
-- The browser, its record, the checks of its state directory, and the
-- lock that makes starts take turns are the library's (dt.background);
-- this module only says what it found in the command line's words. It
-- must never end or start a browser by any other way.

local dt = require "devtools_tools"

dt.nojit()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see README

local tostring, format, type, error, pcall = tostring, string.format, type, error, pcall

local M = {}

local function fail(code, message, fields)
  error(dt.new_error(code, message, fields), 0)
end

-- record_path(optional) -> where the background browser is recorded
-- (dt.state_dir()/browser.json); with neither XDG_STATE_HOME nor HOME set
-- (cron, env -i) there is none: nil when optional (no background browser
-- can be running), else a failure.
function M.record_path(optional)
  local dir = dt.state_dir()
  if not dir then
    if optional then return nil end
    fail("launch_failed", "neither XDG_STATE_HOME nor HOME is set: the background browser"
      .. " cannot be recorded")
  end
  return dir .. "/browser.json"
end

-- handle(optional) -> the dt.background of the default record; with
-- neither XDG_STATE_HOME nor HOME set (cron, env -i) there is none: nil
-- when optional (no background browser can be running), else a failure.
function M.handle(optional)
  local ok, bg = pcall(dt.background)
  if ok then return bg end
  if optional then return nil end
  fail("launch_failed", (tostring(bg.message):gsub("^background: ", "")))
end

local STARTING = "the background browser is starting, or its start was killed"
  .. " (`devtools-tools browser stop` ends what it started)"

-- What a command that would use it says of a recorded browser it cannot
-- use (nil: none recorded, or one that runs).
function M.unusable(state, rec)
  if state == "starting" then return STARTING end
  if state == "gone" then
    return "the background browser (pid " .. tostring(rec.pid)
      .. ") is gone; run `devtools-tools browser stop` to forget it, or `browser start` again"
  end
end

function M.start(ctx)
  local opts, out = ctx.opts, ctx.out
  local bg = M.handle(false)
  ctx.progress:step("starting Chromium in the background")
  local ok, res, started = pcall(bg.start, bg, { executable = opts.chromium, headless = not opts.headful,
    webmcp = opts.webmcp or nil, port = opts.port, timeout = ctx.left() })
  ctx.progress:done()
  if not ok then
    -- (the command line's own advice where no Chromium was found)
    local d = dt.is_error(res) and res.code == "launch_failed" and type(res.details) == "table" and res.details
    if d and type(d.tried) == "table" then
      fail("launch_failed", "no Chromium found: tried " .. table.concat(d.tried, ", ")
        .. " (install the chromium package, or pass --chromium PATH)", { details = d })
    end
    error(res, 0)
  end
  if not started and (opts.chromium or opts.headful or opts.port) then
    out:note("a background browser already runs (pid " .. format("%d", res.pid)
      .. "); --chromium, --headful and --port apply to the next one (browser stop first)")
  end
  out:emit(res.endpoint, "\n")
  return 0
end

function M.stop(ctx)
  local bg = M.handle(true)
  local rec = bg and bg:stop({ timeout = ctx.left() })
  if not rec then ctx.out:note("no background browser") end
  return 0
end

-- status: a plain answer on stdout, its exit status STATUS_NOT_RUNNING
-- when none runs (none recorded, one that is gone, a start under way or
-- killed), 0 when one runs; an unreadable record is an error (1).
M.STATUS_NOT_RUNNING = 3                  -- (as LSB init scripts' status says "not running")

function M.status(ctx)
  local bg = M.handle(true)
  local state, rec, why = "none", nil, nil
  if bg then state, rec, why = bg:status() end
  local out = ctx.out
  if state == "running" then
    out:emit("running pid ", format("%d", rec.pid), " ", rec.endpoint, "\n")
    return 0
  end
  if state == "unreadable" then fail("launch_failed", why) end
  if state == "starting" then
    out:emit("not running: ", STARTING, "\n")
  elseif state == "gone" then
    out:emit("not running: the background browser (pid ", tostring(rec.pid),
      ") is gone; `devtools-tools browser stop` forgets it\n")
  else
    out:emit("not running: no background browser\n")
  end
  return M.STATUS_NOT_RUNNING
end

return M
