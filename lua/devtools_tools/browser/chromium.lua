-- devtools_tools.browser.chromium: the Chromium a launch runs - where its
-- executable is, the flags every headless (or visible) one needs, its
-- throw-away profile, the features a caller's flags add to ours, the
-- history option a browser's pages keep, and waits on its process.
--
-- What it must never do: run anything (launch.lua and detached.lua do),
-- guess a default for an empty name, or wait past the caller's deadline.

require("devtools_tools.base.nojit")()   -- LuaJIT x64 builds of 2021-22 miscompile pairs(): see nojit.lua

local core = require "devtools_tools.core"
local errors = require "devtools_tools.base.errors"
local wait = require "devtools_tools.rt.wait"

local raise = errors.raise
local type, ipairs, pairs = type, ipairs, pairs
local concat = table.concat

local M = {}

-- Parts of the browser window a headless browser never shows, yet runs for
-- every new tab: the WebUI omnibox popup (a renderer of its own that loads
-- and compiles some 70 modules per tab) and the top-chrome WebUIs it
-- preloads. Measured on Chromium 156 (2 cores, make bench's new-page rows):
-- new_page takes 30-40 % less CPU (all processes) and about 30 % less time
-- without them. Unknown names are ignored by Chromium. Headless only: a
-- visible window keeps Chrome's own.
M.disabled_features = { "WebUIOmniboxPopup", "WebUIOmniboxFullPopup", "WebUIOmniboxAimPopup",
  "PreloadTopChromeWebUI" }
local DISABLE_FEATURES = "--disable-features=" .. concat(M.disabled_features, ",")

-- The flags a headless browser needs on a root, offline machine: no
-- sandbox as root, no GPU, and nothing that phones home (the network is
-- closed and every attempt costs start-up time).
M.default_args = {
  "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
  "--no-default-browser-check", "--disable-background-networking",
  "--disable-component-update", "--disable-sync", "--disable-quic",
  "--disable-extensions", "--disable-default-apps", "--mute-audio",
  "--disable-breakpad", "--password-store=basic", "--use-mock-keychain",
  DISABLE_FEATURES,
}
local HEADLESS_ONLY = { ["--headless"] = true, [DISABLE_FEATURES] = true }

-- chromium_args(headless) -> a new list of the flags for a headless (true,
-- nil) or visible (false) browser: default_args, less the headless-only
-- ones for a visible one.
function M.chromium_args(headless)
  local out = {}
  for _, a in ipairs(M.default_args) do
    if headless ~= false or not HEADLESS_ONLY[a] then out[#out + 1] = a end
  end
  return out
end

-- Where to look when opts.executable and DEVTOOLS_TOOLS_CHROME are unset.
-- Debian's /usr/bin/chromium is a shell wrapper that costs 60-130 ms per
-- start; the binary behind it is tried first.
M.candidates = {
  "/usr/lib/chromium/chromium", "chromium", "chromium-browser",
  "google-chrome", "google-chrome-stable",
}

local is_executable = core.fs.is_executable

-- Resolves a name on PATH; returns the path or nil, plus the paths tried.
local function resolve(name, tried)
  if name:find("/", 1, true) then
    tried[#tried + 1] = name
    return is_executable(name) and name or nil
  end
  for dir in (os.getenv("PATH") or "/usr/bin:/bin"):gmatch("[^:]+") do
    local p = dir .. "/" .. name
    tried[#tried + 1] = p
    if is_executable(p) then return p end
  end
end

-- locate(wanted?) -> path | nil, tried, named: the Chromium to run:
-- wanted (a path or a name on PATH), else DEVTOOLS_TOOLS_CHROME, else the
-- first of the candidates found. tried: the paths looked at; named: true
-- if one was asked for by name (wanted or the environment).
function M.locate(wanted)
  local tried = {}
  wanted = wanted or os.getenv("DEVTOOLS_TOOLS_CHROME")
  if wanted and wanted ~= "" then return resolve(wanted, tried), tried, true end
  for _, c in ipairs(M.candidates) do
    local p = resolve(c, tried)
    if p then return p, tried end
  end
  return nil, tried
end

-- (details.tried: the paths looked at, for a front end that names its
-- own options in the advice)
function M.find_executable(opts)
  local p, tried, named = M.locate(opts.executable)
  if p then return p end
  if named then
    raise("launch_failed", "Chromium not found: tried " .. concat(tried, ", "), { details = { tried = tried } })
  end
  raise("launch_failed", "no Chromium found: tried " .. concat(tried, ", ")
    .. " (install the chromium package, or set opts.executable or DEVTOOLS_TOOLS_CHROME)",
    { details = { tried = tried } })
end

function M.tail(s, n)
  s = s or ""
  if #s > n then s = "..." .. s:sub(-n) end
  return s
end

-- await_exit(proc, deadline) -> nil, or the `cancelled` dt.Error that cut
-- the wait short (rt/wait: the process's end, on the task's loop inside a
-- task; until deadline; other errors of the wait are of no interest here).
function M.cancel_of(fn, a, b)
  local ok, err = errors.catch(fn, a, b)
  if not ok and err.code == "cancelled" then return err end
end

function M.await_exit(proc, deadline)
  return M.cancel_of(wait.exit, proc, deadline)
end

-- await_removed(dir, deadline): the same for a directory the reaper removes.
function M.await_removed(dir, deadline)
  return M.cancel_of(wait.condition, function() return not core.fs.exists(dir) end, deadline)
end

-- The names of the profiles we make ($TMPDIR/<prefix>XXXXXX): a detached
-- browser's profile is removed by stop_detached only if its name says it
-- is one of ours (a record read back from a file is not trusted further).
M.PROFILE_PREFIX = "devtools_tools-profile-"
M.DETACHED_PREFIX = "devtools_tools-detached-"

function M.new_profile(prefix)
  local dir, err = core.fs.mkdtemp(prefix)
  if not dir then
    local tmp = os.getenv("TMPDIR")
    raise("launch_failed", "cannot create a profile under " .. ((tmp and tmp ~= "") and tmp or "/tmp"),
      { details = { reason = err } })
  end
  return dir
end

-- issue 14: {console = n, requests = n}, how many of each a page keeps,
-- and bytes = n, how much page text each of the two holds at most; issue
-- 33: bodies = n and body = n, how many bytes of response bodies the
-- browser keeps per page, in all and of one (Network.enable's buffers)
local HISTORY_KEYS = { console = true, requests = true, bytes = true, bodies = true, body = true }
function M.check_history(h, fname)
  if h == nil then return nil end
  if type(h) ~= "table" then raise("bad_argument", fname .. ": history must be a table") end
  for k, v in pairs(h) do
    if not HISTORY_KEYS[k] or type(v) ~= "number" or v < 0 or v % 1 ~= 0 or v >= 2^53 then
      raise("bad_argument", fname .. ": history takes console = n, requests = n, bytes = n, bodies = n"
        .. " and body = n (whole numbers)")
    end
  end
  if h.body and h.bodies and h.body > h.bodies then
    raise("bad_argument", fname .. ": history.body (one response's body) must not be over history.bodies"
      .. " (all of them)")
  end
  return h
end

-- Chromium reads only the last of each --*-features= switch
-- (--enable-features, --disable-features, --enable-blink-features...): a
-- list added to argv (the caller's, webmcp = true's) is merged into the
-- one already there (ours).
function M.add_features(argv, flag)
  local switch = flag:match("^(%-%-[%a-]+%-features=)")
  if switch then
    local list = flag:sub(#switch + 1)
    for i, a in ipairs(argv) do
      if a:sub(1, #switch) == switch then
        if list ~= "" then argv[i] = (a == switch and a or a .. ",") .. list end
        return
      end
    end
  end
  argv[#argv + 1] = flag
end

return M
