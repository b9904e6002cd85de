-- support/cli_install.lua - the command line as `make install DESTDIR=...`
-- installs it, in a directory of its own, for the end-to-end specs: each
-- command runs from / with TMPDIR and XDG_STATE_HOME in that directory, so
-- the processes it leaves (none, it must) are found by that path.
--
-- It must never leave the directory behind: remove() takes it away.
require("devtools_tools.base.nojit")()   -- the specs' helpers too: see lua/devtools_tools/base/nojit.lua

local core = require "devtools_tools.core"
local H = require "helper"

local M = {}

local function shq(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
M.shq = shq

local Install = {}
Install.__index = Install

-- install(prefix_name) -> Install {dir, bin}: make install into a new
-- temporary directory (and its tmp/ for TMPDIR)
function M.install(name)
  local dir = assert(core.fs.mkdtemp(name or "dt-cli-"))
  local out, rc = H.sh(("make -s install DESTDIR=%s PREFIX=/usr && mkdir %s/tmp"):format(dir, dir))
  assert(rc == 0, out)
  return setmetatable({ dir = dir, bin = dir .. "/usr/bin/devtools-tools" }, Install)
end

local function slurp(p)
  local f = io.open(p, "rb")
  local s = f and f:read("*a") or ""
  if f then f:close() end
  return s
end
M.slurp = slurp

-- The commands that work on a page, which a shared browser can serve.
local PAGE_COMMANDS = { list = true, call = true, describe = true, eval = true, run = true, screenshot = true,
  replay = true }

-- share() -> the Install, whose later runs of a command on a page go to
-- one headless Chromium launched here for all of them (a launch and a
-- first page cost about 2 s of CPU, the two cores' scarcest resource in
-- make test), each in a tab of its own (--connect ENDPOINT --new-tab)
-- that is closed when the command has ended: as a launched browser, each
-- command sees a page of its own, opened for it. A command that names its
-- browser (--connect, --tab, --headful, --chromium, --webmcp: the shared
-- browser runs without WebMCP), one the shell tells
-- what to do with a browser (browser, tabs), and a run given opts.launch
-- launch their own as before; while a background browser runs (its
-- record is in the state directory), commands go to it as before.
function Install:share()
  self.shared = H.shared_browser()
  return self
end

-- shared_args(shared, args, state_dir, opts?) -> the command line args
-- on the shared browser (H.shared_browser), or nil: when its first word
-- that is no option (after the options that take a value) names a page
-- command, it names no browser of its own, opts.launch is not set, and no
-- background browser runs in state_dir (a command goes there then).
local VALUE_OPTS = { ["--timeout"] = true }
function M.shared_args(shared, args, state_dir, opts)
  if not shared or (opts and opts.launch) then return nil end
  if H.exists(state_dir .. "/devtools-tools/browser.json") then return nil end
  if args:find("%-%-connect") or args:find("%-%-tab[%s=]") or args:find("%-%-headful")
      or args:find("%-%-chromium") or args:find("%-%-new%-tab") or args:find("%-%-webmcp") then
    return nil
  end
  local skip = false
  for w in args:gmatch("%S+") do
    if skip then skip = false
    elseif VALUE_OPTS[w] then skip = true
    elseif w:sub(1, 1) ~= "-" then
      if not PAGE_COMMANDS[w] then return nil end
      return "--connect " .. shq(shared.endpoint) .. " --new-tab " .. args
    end
  end
  return nil
end

-- run(args, opts?) -> stdout, stderr, exit status. opts.env: words put
-- before the command (VAR=value, env -u ..., timeout 60); opts.cwd: the
-- directory it runs in (/ by default); opts.tmpdir: its TMPDIR;
-- opts.launch: never on the shared browser (share())
function Install:run(args, opts)
  opts = opts or {}
  local dir = self.dir
  local shared = M.shared_args(self.shared, args, self.dir .. "/state", opts)
  local cmd = ("(cd %s && TMPDIR=%s XDG_STATE_HOME=%s/state %s %s %s >%s/out 2>%s/err)"):format(
    shq(opts.cwd or "/"), shq(opts.tmpdir or (dir .. "/tmp")), shq(dir), opts.env or "", shq(self.bin),
    shared or args, dir, dir)
  local _, rc = H.sh(cmd)
  if shared then self.shared.close_tabs() end
  return slurp(dir .. "/out"), slurp(dir .. "/err"), rc
end

-- left_behind() -> pids of live processes naming the directory's tmp/
function Install:left_behind()
  return H.live_with_arg(self.dir .. "/tmp")
end

function Install:remove()
  if self.shared then self.shared.close() end
  core.fs.rmtree(self.dir)
end

return M
