-- End to end: how a host ends the command line - SIGTERM, SIGHUP, SIGINT -
-- and what is left after: `devtools-tools mcp` closes the tab it opened in
-- a running browser (--new-tab), ends the browser it launched and removes
-- its profile, then exits 128 + the signal's number; a command such as
-- `call` ended by SIGTERM closes the tab it opened too. Real Chromium,
-- real pages on 127.0.0.1, the command as a child process.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local H = require "helper"
local Client = require "support.mcp_client"

local server, browser, endpoint
local clients = {}

setup(function()
  server = H.start_server()
  browser = dt.launch({ detached = true })
  endpoint = browser.detached.endpoint
end)

teardown(function()
  local rec = browser.detached
  browser:close()
  dt.stop_detached(rec)
  server.stop()
end)

after_each(function()
  for _, c in ipairs(clients) do
    c:kill()
    H.wait_for(function() return #H.live_with_arg(c.tmp) == 0 end, H.LONG)
    core.fs.rmtree(c.tmp)
  end
  clients = {}
end)

local function spawn(args, env)
  local tmp = assert(core.fs.mkdtemp("dt-signals-spec-"))
  local e = { TMPDIR = tmp }
  for k, v in pairs(env or {}) do e[k] = v end
  local c = Client.spawn(args, { env = e, stderr_size = 1 << 20 })
  c.tmp = tmp
  clients[#clients + 1] = c
  return c
end

local function pages() return #browser:pages() end

local function leftover(dir)
  local left = {}
  for name in require("lfs").dir(dir) do
    if name ~= "." and name ~= ".." then left[#left + 1] = name end
  end
  return left
end

describe("devtools-tools mcp, ended by a signal", function()
  it("closes the tab of --new-tab on SIGTERM, and exits 143", function()
    local n = pages()
    local c = spawn({ "mcp", server.url("/mcp.html"), "--connect", endpoint, "--new-tab" })
    c:initialize()
    assert.truthy(c:request("tools/list").tools[1])
    assert.equal(n + 1, pages())
    core.process.kill(c.proc:pid(), "TERM")
    assert.same({ "exit", 143 }, { c:wait_exit(30) })
    -- (the target goes a moment after the server that closed it exits)
    assert.is_true(H.wait_for(function() return pages() == n end, H.LONG), "the tab is still open")
    assert.is_true(browser:alive())                          -- the browser is not ours: left running
  end)

  it("ends the browser it launched and removes its profile on SIGHUP, and exits 129", function()
    local c = spawn({ "mcp", server.url("/mcp.html") })
    c:initialize()
    assert.truthy(c:request("tools/list").tools[1])
    assert.is_true(#H.live_with_arg(c.tmp) > 0)
    os.execute("kill -HUP " .. c.proc:pid())           -- (core.process.kill sends TERM, KILL, INT)
    assert.same({ "exit", 129 }, { c:wait_exit(30) })
    -- (its Chromium's last processes and the profile may take a while on a loaded machine)
    assert.is_true(H.wait_for(function() return #H.live_with_arg(c.tmp) == 0 end, H.LONG))
    assert.is_true(H.wait_for(function() return #leftover(c.tmp) == 0 end, H.LONG), table.concat(leftover(c.tmp), " "))
  end)

  it("does the same on SIGINT, and exits 130", function()
    local n = pages()
    local c = spawn({ "mcp", server.url("/spa.html"), "--connect", endpoint, "--new-tab" })
    c:initialize()
    assert.truthy(c:request("tools/list").tools[1])
    assert.equal(n + 1, pages())
    core.process.kill(c.proc:pid(), "INT")
    assert.same({ "exit", 130 }, { c:wait_exit(30) })
    assert.is_true(H.wait_for(function() return pages() == n end, H.LONG), "the tab is still open")
  end)

  it("closes the tab it was opening when SIGTERM comes during the start, against a slow site", function()
    local n = pages()
    local c = spawn({ "mcp", server.url("/mcp.html?delay=20000"), "--connect", endpoint, "--new-tab",
      "--timeout", "20" }, { DEVTOOLS_TOOLS_DEBUG = "cdp" })
    c:initialize(nil, { list = false })
    assert.is_true(H.wait_for(function() return c:stderr():find("Page.navigate", 1, true) ~= nil end, 20))
    local t0 = core.now()
    core.process.kill(c.proc:pid(), "TERM")
    assert.same({ "exit", 143 }, { c:wait_exit(30) })
    assert.is_true(core.now() - t0 < 2.5, core.now() - t0)
    assert.is_true(H.wait_for(function() return pages() == n end, H.LONG), "the tab is still open")
  end)
end)

describe("the command line's other commands, ended by SIGTERM", function()
  it("`call --new-tab` closes the tab it opened, says why, and exits 143", function()
    local n = pages()
    local c = spawn({ "call", "--connect", endpoint, "--new-tab", server.url("/mcp.html"), "never" },
      { DEVTOOLS_TOOLS_DEBUG = "cdp" })
    -- the call is under way: its tool was asked for
    assert.is_true(H.wait_for(function()
      return c:stderr():find('never\\"', 1, true) ~= nil and pages() == n + 1
    end, 30), c:stderr():sub(-2000))
    core.process.kill(c.proc:pid(), "TERM")
    assert.same({ "exit", 143 }, { c:wait_exit(30) })
    assert.matches("ended by SIGTERM", c:stderr(), 1, true)
    assert.is_true(H.wait_for(function() return pages() == n end, H.LONG), "the tab is still open")
  end)

  it("`run SCRIPT URL --new-tab` closes the tab it opened for the script", function()
    local n = pages()
    local dir = assert(core.fs.mkdtemp("dt-signals-run-"))
    local script = dir .. "/wait.lua"
    local f = assert(io.open(script, "w"))
    f:write('io.stderr:write("calling\\n") page:call("never", {}, { timeout = 60 })\n')
    f:close()
    local c = spawn({ "run", "--connect", endpoint, "--new-tab", script, server.url("/mcp.html") })
    assert.is_true(H.wait_for(function()
      return c:stderr():find("calling", 1, true) ~= nil and pages() == n + 1
    end, 30), c:stderr():sub(-2000))
    core.process.kill(c.proc:pid(), "TERM")
    assert.same({ "exit", 143 }, { c:wait_exit(30) })
    assert.is_true(H.wait_for(function() return pages() == n end, H.LONG), "the tab is still open")
    core.fs.rmtree(dir)
  end)
end)
