-- The reference's npm packages for the specs that run it beside ours
-- (chrome-devtools-mcp 1.11.0 and the MCP TypeScript SDK 1.32.2), in a
-- cache outside the tree: `make differential`'s when it holds those
-- versions, else bench/mcp/'s lockfile installed with `npm ci` into
-- ~/.cache/devtools_tools/mcp-bench (MCP_BENCH_CACHE), as `make bench`
-- does. Never a dependency of the library.

local M = {}

M.CDM_VERSION, M.SDK_VERSION = "1.11.0", "1.32.2"

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

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1; echo \"rc=$?\""))
  local out = p:read("*a")
  p:close()
  local body, rc = out:match("^(.-)rc=(%d+)\n?$")
  return body, tonumber(rc)
end

-- dir() -> the directory whose node_modules hold both
function M.dir()
  local home = os.getenv("HOME") or "/tmp"
  local diff = (os.getenv("XDG_CACHE_HOME") or (home .. "/.cache")) .. "/devtools_tools/differential"
  if version_in(diff, "chrome-devtools-mcp") == M.CDM_VERSION
      and version_in(diff, "@modelcontextprotocol/sdk") == M.SDK_VERSION then
    return diff
  end
  local dir = os.getenv("MCP_BENCH_CACHE") or (home .. "/.cache/devtools_tools/mcp-bench")
  if read(dir .. "/package-lock.json") ~= read("bench/mcp/package-lock.json")
      or version_in(dir, "chrome-devtools-mcp") ~= M.CDM_VERSION then
    local out, rc = sh(("mkdir -p '%s' && cp bench/mcp/package.json bench/mcp/package-lock.json '%s'/"
      .. " && cd '%s' && npm ci --no-audit --no-fund --loglevel=error"):format(dir, dir, dir))
    assert(rc == 0, "npm ci of bench/mcp/ into " .. dir .. " failed: " .. out)
  end
  return dir
end

return M
