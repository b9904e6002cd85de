-- devtools_tools.health: `:checkhealth devtools_tools`.
--
-- Reports whether the C core is built for this Neovim (and not older than
-- its sources), the Lua engine, the event loop the commands run on, and
-- runs a smoke test: launch Chromium, open a data: page that registers a
-- tool, call it, close. It must never leave a browser running, whatever
-- fails, and never raise: every problem becomes a report line.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local build = require "devtools_tools.nvim.build"

local M = {}

-- Neovim 0.7 has require("health") with report_*; 0.8 adds vim.health with
-- the same names; 0.9+ renames them start/ok/warn/error/info.
local function reporter()
  local h = vim.health
  if h and h.start then
    return { start = h.start, ok = h.ok, warn = h.warn, error = h.error, info = h.info }
  end
  if not (h and h.report_start) then h = require("health") end
  return { start = h.report_start, ok = h.report_ok, warn = h.report_warn,
    error = h.report_error, info = h.report_info }
end

local uv = vim.uv or vim.loop

local function mtime(path)
  local st = uv.fs_stat(path)
  return st and st.mtime and (st.mtime.sec + st.mtime.nsec / 1e9) or nil
end

-- The checkout a core.so found on the runtimepath belongs to, and whether
-- a C source there is newer than it (an update without `make nvim`).
local function stale_sources(so)
  local root = so:gsub("/lua/devtools_tools/core%.so$", "")
  local built = mtime(so)
  local newer = {}
  for _, src in ipairs(vim.fn.glob(root .. "/src/*.[ch]", true, true)) do
    local t = mtime(src)
    if built and t and t > built then newer[#newer + 1] = vim.fn.fnamemodify(src, ":t") end
  end
  return root, newer
end

-- A page with one tool, as a data: URL.
local SMOKE_PAGE = "data:text/html,<title>devtools_tools health</title><script>"
  .. "window.addEventListener('devtoolstooldiscovery',e=>e.respondWith({name:'health',"
  .. "description:'checkhealth',tools:[{name:'increment',description:'n plus one',"
  .. "inputSchema:{type:'object',properties:{n:{type:'integer'}},required:['n']},"
  .. "execute:({n})=>({n:n+1})}]}))</script>"

function M.check()
  local r = reporter()

  r.start("devtools_tools: C core")
  local found = vim.api.nvim_get_runtime_file("lua/devtools_tools/core.so", true)
  local ok, core = pcall(require, "devtools_tools.core")
  if not ok then
    -- (the advice and the package list are those a command gives: nvim.build)
    r.error("the C core does not load: " .. tostring(core), build.advice())
    return
  end
  if found[1] then
    local root, newer = stale_sources(found[1])
    r.ok("core built for this Neovim: " .. found[1])
    if #newer > 0 then
      r.warn("the core is older than " .. table.concat(newer, ", ") .. " in " .. root,
        { "run `make nvim` there again" })
    end
  else
    r.ok("core loaded from package.cpath (not from the runtimepath)")
  end
  r.info("Lua engine: " .. (jit and jit.version or _VERSION))
  local dt_ok, dt = pcall(require, "devtools_tools")
  if not dt_ok then
    r.error("require 'devtools_tools' failed: " .. tostring(dt))
    return
  end
  if dt.nojit.affected then
    r.info("LuaJIT's trace compiler is kept out of devtools_tools' functions: x64 LuaJIT "
      .. "\"2.1.0-beta3\" builds of 2021-22 (Debian 12's) miscompile some pairs() loops "
      .. "(README, LuaJIT; DEVTOOLS_TOOLS_JIT=on keeps it)")
  end
  r.start("devtools_tools: event loop")
  local luv = uv.version_string and uv.version_string() or "?"
  if dt.async and dt.use_loop then
    r.ok(("commands run as tasks on %s (luv %s): the editor never waits on the browser")
      :format(vim.uv and "vim.uv" or "vim.loop", luv))
  else
    r.error("this devtools_tools has no dt.async: the plugin needs it", { "update the plugin" })
    return
  end

  r.start("devtools_tools: Chromium")
  local opts = {}
  local nv = package.loaded["devtools_tools.nvim"]
  if nv and nv.options then opts = nv.options() end
  local browser
  local t0 = uv.hrtime()
  local sok, err = pcall(function()
    browser = dt.launch({ executable = opts.executable, timeout = 20 })
    local v = browser:version()
    r.ok(("found %s: %s"):format(tostring(browser.executable), tostring(v.product)))
    local page = browser:new_page(SMOKE_PAGE)
    local res = page:call("increment", { n = 41 })
    if type(res) ~= "table" or res.n ~= 42 then
      error(dt.new_error("protocol_error",
        "the smoke test's tool answered " .. dt.json.encode(res) .. ", not {\"n\":42}"), 0)
    end
    r.ok(("smoke test: launch, a data: page, discovery and a tool call in %d ms")
      :format((uv.hrtime() - t0) / 1e6))
  end)
  if browser then pcall(browser.close, browser) end
  if not sok then
    local msg = dt.is_error(err) and (err.code .. ": " .. err.message) or tostring(err)
    r.error("smoke test failed: " .. msg, {
      "install Chromium (apt-get install chromium), or point setup{executable = ...} or",
      "$DEVTOOLS_TOOLS_CHROME at a Chromium or Chrome binary",
    })
  end
end

return M
