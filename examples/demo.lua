-- demo.lua: what `make demo` runs. Starts the sample app's backend on a free
-- port, launches headless Chromium, runs the multi-step workflow against the
-- app and prints its report; stops everything it started, also on failure.
--
--   lua5.4 examples/demo.lua [path/to/app/server]     (make demo)
--   lua5.4 examples/demo.lua http://127.0.0.1:8080/   (an app already running)
--   devtools-tools run --webmcp examples/demo.lua http://127.0.0.1:8080/
-- Given the URL of an app already running (it changes the app's data: see
-- workflow.lua), it starts no server; through `devtools-tools run` it works
-- on the page the command opened. Runs from any directory, under Lua 5.4 or
-- LuaJIT, against the installed module or, when this file sits in a
-- checkout, the checkout's lua/ and build/<interpreter>/ (make, or make
-- LUA=luajit; DEVTOOLS_TOOLS_BUILD overrides the build directory).
dofile((debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or ".") .. "/checkout.lua")
local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local workflow = require "workflow"

-- a URL (what `devtools-tools run` gives first), or the server to start
local app_url = arg[1] and arg[1]:match("^%a[%w+.-]*://") and arg[1] or nil
local server_bin = not app_url and arg[1] or "build/app/server"

local function say(fmt, ...) io.stdout:write(fmt:format(...), "\n"); io.stdout:flush() end

local server, browser
local function cleanup()
  if browser then pcall(browser.close, browser) end
  if server then pcall(server.close, server, 5) end      -- SIGTERM, then SIGKILL after 5 s
end

-- The backend on a free port: its process and its URL.
local function start_server()
  say("- starting the sample app backend (%s --port 0)", server_bin)
  local proc, e = core.process.spawn({ server_bin, "--port", "0" })
  if not proc then error(e, 0) end
  server = proc
  local url
  local deadline = core.now() + 10
  repeat
    url = proc:stderr():match("listening on (http://[%d.:]+/)")
    if not url then
      if not proc:running() then error("the app server exited: " .. proc:stderr(), 0) end
      core.sleep(0.02)
    end
  until url or core.now() > deadline
  if not url then error("the app server did not start within 10 s: " .. proc:stderr(), 0) end
  say("  app at %s", url)
  return url
end

local ok, err = xpcall(function()
  say("devtools_tools demo")
  local url = app_url or start_server()

  local page = rawget(_G, "page")             -- devtools-tools run: the page it opened
  if not page then
    say("- launching headless Chromium")
    local t0 = core.now()
    browser = dt.launch({ webmcp = true })    -- the app registers a WebMCP tool too
    say("  %s in %.0f ms", browser:version().product, (core.now() - t0) * 1000)
    say("- opening the app")
    page = browser:new_page(url)
  end
  say("  %s", page.url)

  local findings = workflow.run(page, { log = function(s) say("%s", s) end })
  if #findings < 3 then error(("expected the three planted bugs, found %d"):format(#findings), 0) end
end, function(e)
  if dt.is_error(e) then return e end
  return debug.traceback(tostring(e), 2)
end)

cleanup()
if not ok then
  io.stderr:write("demo failed: ", tostring(err), "\n")
  os.exit(1)
end
say("")
say("demo finished: every process it started has been stopped")
