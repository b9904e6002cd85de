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

-- run(args, opts?) -> stdout, stderr, exit status. opts.env: words put
-- before the command (VAR=value, env -u ..., timeout 60); opts.cwd: the
-- directory it runs in (/ by default); opts.tmpdir: its TMPDIR
function Install:run(args, opts)
  opts = opts or {}
  local dir = self.dir
  local cmd = ("(cd %s && TMPDIR=%s XDG_STATE_HOME=%s/state %s %s %s >%s/out 2>%s/err)"):format(
    shq(opts.cwd or "/"), shq(opts.tmpdir or (dir .. "/tmp")), shq(dir), opts.env or "", shq(self.bin),
    args, dir, dir)
  local _, rc = H.sh(cmd)
  return slurp(dir .. "/out"), slurp(dir .. "/err"), rc
end

-- left_behind() -> pids of live processes naming the directory's tmp/
function Install:left_behind()
  return H.live_with_arg(self.dir .. "/tmp")
end

function Install:remove()
  core.fs.rmtree(self.dir)
end

return M
