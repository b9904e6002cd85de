-- Interop: the official MCP TypeScript SDK's client (npm
-- @modelcontextprotocol/sdk 1.x, the version spec/support/mcp-sdk/ locks)
-- against `devtools-tools mcp` on a real page: initialize, tools/list, a
-- call's result, isError, an unknown tool, a list change, a cancelled
-- call, and the close; and a server started before its app (a port
-- nothing listens on, then node's own HTTP server on it). The SDK is installed into a cache outside the tree
-- (~/.cache/devtools_tools/mcp-sdk, or MCP_SDK_CACHE) with `npm ci` when
-- it is not there yet; node 20 and the npm registry are needed (CI has
-- both), and without node the spec fails, saying so.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local H = require "helper"

local SDK_VERSION = "1.32.2"

-- The SDK's cache, installed from the committed package.json and lockfile
-- when it does not hold them yet (a changed lockfile installs again).
local function sdk_dir()
  local dir = os.getenv("MCP_SDK_CACHE") or ((os.getenv("HOME") or "/tmp") .. "/.cache/devtools_tools/mcp-sdk")
  local want = H.read_file("spec/support/mcp-sdk/package-lock.json")
  local have = H.exists(dir .. "/package-lock.json") and H.read_file(dir .. "/package-lock.json") or nil
  if have ~= want or not H.exists(dir .. "/node_modules/@modelcontextprotocol/sdk/package.json") then
    local out, rc = H.sh(("mkdir -p '%s' && cp spec/support/mcp-sdk/package.json spec/support/mcp-sdk/package-lock.json '%s'/"
      .. " && cd '%s' && npm ci --no-audit --no-fund --loglevel=error"):format(dir, dir, dir))
    assert(rc == 0, "npm ci of the MCP SDK into " .. dir .. " failed: " .. out)
  end
  return dir
end

describe("the official MCP SDK's client against devtools-tools mcp", function()
  local server
  setup(function() server = H.start_server() end)
  teardown(function() server.stop() end)

  it("initializes, lists, calls, gets isError, follows list_changed, cancels and closes", function()
    local node = select(2, H.sh("command -v node"))
    assert.equal(0, node, "node is needed for the interop spec (node 20)")
    local dir = sdk_dir()
    local pkg = dt.json.decode(H.read_file(dir .. "/node_modules/@modelcontextprotocol/sdk/package.json"))
    assert.equal(SDK_VERSION, pkg.version)
    local tmp = assert(core.fs.mkdtemp("dt-mcp-interop-"))
    local cwd = os.getenv("PWD") or H.sh("pwd"):gsub("\n$", "")
    local out, rc = H.sh(("TMPDIR=%s DEVTOOLS_TOOLS_BUILD=%s node spec/support/mcp_interop.mjs '%s' '%s' '%s/bin/devtools-tools'")
      :format(tmp, H.build, dir, server.url("/mcp.html"), cwd))
    H.wait_for(function() return #H.live_with_arg(tmp) == 0 end, H.LONG)   -- (a loaded machine)
    local left = H.live_with_arg(tmp)
    core.fs.rmtree(tmp)
    assert.equal(0, rc, out)
    local r = dt.json.decode(out:match("([^\n]+)\n*$"))
    local s = r.steps
    for _, name in ipairs({ "initialize", "list", "call", "webmcp", "isError", "unknown", "list_changed",
        "cancel", "close", "start_before_app" }) do
      assert.is_true(s[name] and s[name].ok, name .. ": " .. tostring(s[name] and s[name].error))
    end
    -- initialize: the SDK took our answer (its latest version, 2025-11-25)
    assert.equal("devtools-tools", s.initialize.value.version.name)
    assert.is_true(s.initialize.value.capabilities.tools.listChanged)
    -- tools/list passed the SDK's schema: every tool, each inputSchema of type object
    local names = {}
    for _, t in ipairs(s.list.value) do
      names[t.name] = t
      assert.equal("object", t.type, t.name)
    end
    for _, n in ipairs({ "echo", "untyped", "stringy", "add", "devtools.navigate", "devtools.evaluate" }) do
      assert.truthy(names[n], n)
    end
    assert.same({ readOnlyHint = true }, names.add.annotations)
    -- a call: JSON text and structuredContent; a WebMCP tool's
    assert.same({ text = "from node", n = 3 }, s.call.value.structured)
    assert.same({ text = "from node", n = 3 }, dt.json.decode(s.call.value.content[1].text))
    assert.same({ sum = 42 }, s.webmcp.value.structured)
    -- isError: the path, the value received, the allowed values
    assert.is_true(s.isError.value.isError)
    assert.matches('/colour: must be equal to one of the allowed values (got "pink"; allowed: ["red","green","blue"])',
      s.isError.value.text, 1, true)
    -- an unknown tool: JSON-RPC -32602, which the SDK raises
    assert.same({ true, -32602 }, { s.unknown.value.threw, s.unknown.value.code })
    -- list_changed reached the SDK's handler, and tools/list then had the tool
    assert.is_true(s.list_changed.value.changed >= 1)
    assert.is_true(s.list_changed.value.added)
    -- the SDK's cancellation (an AbortSignal: notifications/cancelled) ended
    -- the call's wait, and the server went on answering
    assert.matches("^rejected", s.cancel.value.how)
    assert.same({ result = 42 }, s.cancel.value.after)
    -- close: the server exited (the SDK's close ends stdin), leaving no process
    assert.is_true(s.close.value.exited)
    assert.is_true(s.close.value.ms < 2000, s.close.value.ms)
    -- started before the app: the SDK connected (initialize answered) while nothing
    -- listened, listed the built-ins, got isError for a page tool saying why, then
    -- list_changed when the app came up, and listed and called the page's tool
    local late = s.start_before_app.value
    assert.same({ "devtools.navigate", "devtools.screenshot", "devtools.console", "devtools.network" }, late.before)
    assert.is_true(late.notUp.isError)
    assert.matches("The page is not up yet", late.notUp.text, 1, true)
    assert.is_true(late.changes >= 1)
    assert.equal("hello", late.after[1])
    assert.same({ result = "hello late" }, late.called)
    assert.same({}, left)
  end)
end)
