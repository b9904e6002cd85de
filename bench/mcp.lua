-- bench/mcp.lua: the MCP rows of `make bench` (bench.lua's "mcp" section).
--
-- Through one client, the official MCP TypeScript SDK's (bench/mcp_client.mjs,
-- in node), in one run with blocks taking turns: tools/call of `add` on
-- bench/fixtures/mcp.html through `devtools-tools mcp`, through a server
-- with no browser that answers at once (bench/mcp_floor.lua: the floor),
-- and through chrome-devtools-mcp 1.11.0's execute_3p_developer_tool on
-- the same page. page:call's own median on that page is measured here,
-- before and after. Then the time from a tool that adds (or removes) a
-- devtoolstooldiscovery listener to notifications/tools/list_changed at
-- the client, our server's resident memory after 1,000 and 10,000
-- calls, and the start-up of ours and the reference, each spawned afresh:
-- spawn to initialize answered, and spawn to the first list that names
-- the page's tool (ours: tools/list; the reference: navigate_page, then
-- list_3p_developer_tools).
--
-- The SDK and chrome-devtools-mcp come from `make differential`'s cache
-- (~/.cache/devtools_tools/differential) when it holds those versions,
-- else bench/mcp/'s lockfile is installed into ~/.cache/devtools_tools/mcp-bench.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local json = require "devtools_tools.base.json"
local C = require "common"

local M = {}

local CDM_VERSION, SDK_VERSION = "1.11.0", "1.32.2"
local CHROMIUM = os.getenv("DEVTOOLS_TOOLS_CHROME") or "/usr/lib/chromium/chromium"

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1; echo \"rc=$?\""))
  local out = p:read("*a")
  p:close()
  local body, rc = out:match("^(.-)rc=(%d+)\n?$")
  return body, tonumber(rc)
end

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

local function version_in(dir, pkg)
  local s = read(dir .. "/node_modules/" .. pkg .. "/package.json")
  return s and s:match('"version"%s*:%s*"([^"]+)"')
end

-- cache() -> the directory holding both packages at the versions wanted
local function cache()
  local home = os.getenv("HOME") or "/tmp"
  local diff = home .. "/.cache/devtools_tools/differential"
  if version_in(diff, "chrome-devtools-mcp") == CDM_VERSION
      and version_in(diff, "@modelcontextprotocol/sdk") == SDK_VERSION then
    return diff
  end
  local dir = os.getenv("MCP_BENCH_CACHE") or (home .. "/.cache/devtools_tools/mcp-bench")
  if read(dir .. "/package-lock.json") ~= read("bench/mcp/package-lock.json")
      or version_in(dir, "chrome-devtools-mcp") ~= CDM_VERSION then
    local out, rc = sh(("mkdir -p '%s' && cp bench/mcp/package.json bench/mcp/package-lock.json '%s'/"
      .. " && cd '%s' && npm ci --no-audit --no-fund --loglevel=error"):format(dir, dir, dir))
    if rc ~= 0 then error("npm ci of bench/mcp/ into " .. dir .. " failed: " .. out) end
  end
  return dir
end

local function page_call_median(page, n)
  for _ = 1, 50 do page:call("add", { a = 1, b = 2 }) end
  local t = {}
  for i = 1, n do
    local t0 = C.now()
    page:call("add", { a = 1, b = 2 })
    t[i] = C.now() - t0
  end
  return t
end

-- run(S, server) -> results: {calls = {floor, ours, cdm}, page_call, list_changed, memory}.
-- page:call is measured in a browser of its own with that one page, as
-- the MCP server's is (the bench's shared browser holds other pages).
function M.run(S, server)
  local node = select(2, sh("command -v node"))
  if node ~= 0 then return nil, "node is not installed" end
  local dir = cache()
  local url = server.url("/mcp.html")
  local browser = dt.launch()
  local ok, r = pcall(M.measure, S, url, dir, browser)
  browser:close()
  if not ok then error(r, 0) end
  return r
end

function M.measure(S, url, dir, browser)
  local page = browser:new_page(url)
  local before = page_call_median(page, S.mcp_page_calls)
  local build = os.getenv("DEVTOOLS_TOOLS_BUILD") or "build/lua5.4"
  local tmp = assert(core.fs.mkdtemp("dt-bench-mcp-"))
  local add = { name = "add", arguments = { a = 1, b = 2 } }
  local plan = {
    sdk = dir, warmup = S.mcp_warmup, block = S.mcp_block, blocks = S.mcp_blocks,
    servers = {
      floor = { command = "lua5.4", args = { "bench/mcp_floor.lua" }, env = { DEVTOOLS_TOOLS_BUILD = build },
        call = add, expect = "3" },
      ours = { command = "lua5.4", args = { "bin/devtools-tools", "mcp", url },
        env = { DEVTOOLS_TOOLS_BUILD = build, TMPDIR = tmp }, call = add, expect = "3" },
      cdm = { command = "node", args = {
          dir .. "/node_modules/chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js",
          "--categoryExperimentalThirdParty=true", "--headless", "--isolated", "--executablePath", CHROMIUM,
          "--no-page-id-routing", "--usage-statistics=false", "--performance-crux=false",
          "--chromeArg=--no-sandbox", "--chromeArg=--disable-gpu", "--chromeArg=--no-first-run",
          "--chromeArg=--disable-background-networking", "--chromeArg=--disable-component-update",
          "--chromeArg=--disable-sync", "--chromeArg=--disable-quic" },
        env = { CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS = "1", CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS = "1", TMPDIR = tmp },
        setup = { { name = "navigate_page", arguments = { type = "url", url = url } } },
        call = { name = "execute_3p_developer_tool", arguments = { toolName = "add", params = '{"a":1,"b":2}' } },
        expect = "3" },
    },
    list_changed = { server = "ours", rounds = S.mcp_list_rounds,
      add = { name = "register", arguments = {} }, remove = { name = "unregister", arguments = {} } },
    memory = { server = "ours", marks = { 1000, S.memory_calls } },
  }
  -- start-up: ours and the reference spawned afresh for each round (a
  -- profile of its own each: the reference's --isolated, ours a launch)
  local ours, cdm = plan.servers.ours, plan.servers.cdm
  plan.startup = { url = url, tool = "add", init_rounds = S.mcp_init_rounds, first_rounds = S.mcp_first_rounds,
    servers = {
      ours = { command = ours.command, args = ours.args, env = ours.env, first = "list" },
      cdm = { command = cdm.command, args = cdm.args, env = cdm.env, first = "navigate" },
    } }
  local planfile = tmp .. "/plan.json"
  local f = assert(io.open(planfile, "w"))
  f:write(json.encode(plan))
  f:close()
  local out, rc = sh("node bench/mcp_client.mjs " .. planfile)
  local after = page_call_median(page, S.mcp_page_calls)
  page:close()
  core.fs.rmtree(tmp)
  local line = out:match("(%b{})%s*$")
  local r = line and json.decode(line)
  if not r or rc ~= 0 then error("bench/mcp_client.mjs failed (" .. tostring(rc) .. "): " .. out:sub(-3000)) end
  local pc = {}
  for _, x in ipairs(before) do pc[#pc + 1] = x end
  for _, x in ipairs(after) do pc[#pc + 1] = x end
  r.page_call = pc
  r.cache = dir
  return r
end

return M
