-- Sharing a browser: an agent drives a page with chrome-devtools-mcp (it
-- navigates and clicks) and calls the page's own tools through
-- `devtools-tools mcp --connect`, both on one Chromium and one tab. The
-- reference is chrome-devtools-mcp 1.11.0 through the official MCP SDK
-- client (spec/support/mcp_shared.mjs, npm packages in a cache outside
-- the tree: spec/support/cdm_cache.lua); ours is spoken to by the specs'
-- JSON-RPC client. When the reference takes the tab elsewhere, ours
-- sends notifications/tools/list_changed, and lists and calls the new
-- page's tools. Needs node 20.19 (CI has it); without it the spec fails,
-- saying so.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local H = require "helper"
local Client = require "support.mcp_client"
local cache = require "support.cdm_cache"

local function has(list, x)
  for _, v in ipairs(list) do if v == x then return true end end
  return false
end

-- The reference, one JSON line per command
local Ref = {}
Ref.__index = Ref

local function start_reference(dir, browser_url)
  local proc, fds = assert(core.process.spawn({ "/usr/bin/env", "node", "spec/support/mcp_shared.mjs", dir, browser_url },
    { stdio = true, stderr_size = 1 << 20 }))
  return setmetatable({ proc = proc, stdin = fds.stdin, stdout = fds.stdout, buf = "" }, Ref)
end

function Ref:read(timeout)
  local deadline = core.now() + timeout
  while true do
    local nl = self.buf:find("\n", 1, true)
    if nl then
      local line = self.buf:sub(1, nl - 1)
      self.buf = self.buf:sub(nl + 1)
      return dt.json.decode(line)
    end
    local left = deadline - core.now()
    assert(left > 0, "the reference said nothing in time; its stderr: " .. self.proc:stderr())
    core.poll({ self.stdout }, { "r" }, left)
    local s = core.fd.read(self.stdout, 1 << 20)
    assert(s, "the reference ended; its stderr: " .. self.proc:stderr())
    self.buf = self.buf .. s
  end
end

function Ref:run(cmd, timeout)
  local s = dt.json.encode(cmd) .. "\n"
  assert(core.fd.write(self.stdin, s) == #s)
  local r = self:read(timeout or 60)
  assert(r.ok, "the reference's " .. cmd["do"] .. " failed: " .. tostring(r.error) .. "\n" .. tostring(r.stderr))
  return r.text
end

function Ref:close()
  pcall(core.fd.write, self.stdin, '{"do":"quit"}\n')
  self.proc:wait(core.now() + 10)
  self.proc:close(1)
  pcall(core.fd.close, self.stdin)
  pcall(core.fd.close, self.stdout)
end

describe("chrome-devtools-mcp and devtools-tools mcp on one browser and one page", function()
  local server, browser, ref, ours
  setup(function() server = H.start_server() end)
  teardown(function()
    if ours then ours:kill() end
    if ref then ref:close() end
    if browser then
      local rec = browser.detached
      browser:close()
      dt.stop_detached(rec)
    end
    server.stop()
  end)

  it("the reference navigates and clicks; ours sends list_changed, then lists and calls the new page's tools", function()
    assert.equal(0, select(2, H.sh("command -v node")), "node is needed for the shared-browser spec (node 20.19)")
    local dir = cache.dir()
    browser = dt.launch({ detached = true })
    local endpoint = browser.detached.endpoint
    -- one tab, on the first page
    local pages = browser:pages()
    assert.equal(1, #pages)
    local tab = browser:attach(pages[1].id)
    tab:navigate(server.url("/mcp.html"))
    ours = Client.spawn({ "mcp", server.url("/mcp.html"), "--connect", endpoint }, { stderr_size = 1 << 20 })
    ours:initialize()
    assert.is_true(has(ours:tool_names(), "echo"))
    assert.equal(1, #browser:pages())                         -- ours took the tab that shows it
    -- (--browserUrl http://host:port, as the README has the pair)
    ref = start_reference(dir, "http://" .. endpoint:match("^%a+://([^/]+)"))
    assert.equal("connected", ref:read(60).text)
    -- the reference navigates: ours follows
    ours.inbox = {}
    ref:run({ ["do"] = "navigate", url = server.url("/shared.html") })
    assert.truthy(ours:next_notification("notifications/tools/list_changed", 20), ours:stderr())
    local names = ours:tool_names()
    assert.is_true(has(names, "where"), table.concat(names, " "))
    assert.is_false(has(names, "echo"))
    assert.same({ result = "/shared.html" }, ours:request("tools/call", { name = "where" }).structuredContent)
    -- both see the same page's tools
    assert.matches("where", ref:run({ ["do"] = "list3p" }), 1, true)
    -- the reference clicks a button that leaves for another page: ours follows again
    ours.inbox = {}
    ref:run({ ["do"] = "click", text = "Go to the shop" })
    assert.truthy(ours:next_notification("notifications/tools/list_changed", 20), ours:stderr())
    local after
    assert.is_true(H.wait_for(function()
      after = ours:tool_names()
      return has(after, "whichView")
    end, 20), table.concat(after or {}, " "))
    assert.is_false(has(after, "where"))
    local r = ours:request("tools/call", { name = "whichView" })
    assert.is_nil(r.isError)
    assert.same({ result = "home" }, r.structuredContent)
    assert.equal(1, #browser:pages())                         -- still one tab
    -- ours leaves the browser and its tab to the others
    ours:close_stdin()
    assert.same({ "exit", 0 }, { ours:wait_exit(30) })
    ours = nil
    assert.equal(1, #browser:pages())
    assert.matches("whichView", ref:run({ ["do"] = "list3p" }), 1, true)
  end)
end)
