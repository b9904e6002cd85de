-- remote_helper.lua - what the remote specs need around a real browser:
-- headless Chromium on a debugging port, certificates made on the spot
-- (openssl), and spec/support/tls_proxy in front of the browser (TLS and a
-- required header, as a hosted endpoint has). Everything listens on
-- 127.0.0.1; every process started here is ended by its owner.
require("devtools_tools.base.nojit")()   -- the specs' helpers too: see lua/devtools_tools/base/nojit.lua

local core = require "devtools_tools.core"
local H = require "helper"

local M = {}

local CHROMIUM = os.getenv("DEVTOOLS_TOOLS_CHROME") or "/usr/lib/chromium/chromium"

M.chrome_args = { "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
  "--disable-quic" }

-- Chromium with --remote-debugging-port=0, then args (default: a start-up
-- page, about:blank): returns proc, port, dir.
M._profiles = setmetatable({}, { __mode = "k" })   -- a process -> its profile directory

function M.chromium(args)
  local dir = assert(core.fs.mkdtemp("dt-remote-chromium-"))
  local argv = { CHROMIUM }
  for _, a in ipairs(M.chrome_args) do argv[#argv + 1] = a end
  argv[#argv + 1] = "--remote-debugging-port=0"
  argv[#argv + 1] = "--user-data-dir=" .. dir
  for _, a in ipairs(args or { "about:blank" }) do argv[#argv + 1] = a end
  local proc = assert(core.process.spawn(argv, { cleanup_dir = dir }))
  M._profiles[proc] = dir
  local port
  assert(H.wait_for(function()
    local f = io.open(dir .. "/DevToolsActivePort")
    if f then
      port = tonumber(f:read("*l"))
      f:close()
    end
    return port ~= nil or not proc:running()
  end, 30) and port, "chromium wrote no DevToolsActivePort: " .. proc:stderr())
  return proc, port, dir
end

local function run(cmd)
  local ok = os.execute(cmd .. " >/dev/null 2>&1")
  assert(ok == true or ok == 0, "failed: " .. cmd)
end

-- Makes two CAs and a server certificate for localhost signed by the first:
-- returns { dir, ca, other_ca, cert, key }. EC keys: quick to make.
function M.certificates()
  local dir = assert(core.fs.mkdtemp("dt-remote-certs-"))
  local key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
  for _, name in ipairs({ "ca", "other_ca" }) do
    run(("openssl req -x509 %s -keyout %s/%s.key -out %s/%s.pem -days 2 -subj /CN=dt-%s"
      .. " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign")
      :format(key, dir, name, dir, name, name))
  end
  run(("openssl req %s -keyout %s/server.key -out %s/server.csr -subj /CN=localhost")
    :format(key, dir, dir))
  local ext = assert(io.open(dir .. "/ext.cnf", "w"))
  ext:write("subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n"
    .. "extendedKeyUsage=serverAuth\n")
  ext:close()
  run(("openssl x509 -req -in %s/server.csr -CA %s/ca.pem -CAkey %s/ca.key -CAcreateserial"
    .. " -out %s/server.pem -days 2 -extfile %s/ext.cnf"):format(dir, dir, dir, dir, dir))
  return { dir = dir, ca = dir .. "/ca.pem", other_ca = dir .. "/other_ca.pem",
    cert = dir .. "/server.pem", key = dir .. "/server.key" }
end

-- tls_proxy in front of 127.0.0.1:target; require: "Name: value" or nil.
function M.proxy(certs, target, require_header)
  local argv = { H.support("tls_proxy"), "--cert", certs.cert, "--key", certs.key,
    "--target", tostring(target), "--port", "0" }
  if require_header then
    argv[#argv + 1] = "--require"
    argv[#argv + 1] = require_header
  end
  return H.start_port_program(argv)
end

-- Ends a process started here (SIGTERM, then SIGKILL after wait seconds)
-- and asserts that nothing of its process group is left: tls_proxy's
-- children, chromedriver's browsers. pid: the process's, if proc may be
-- closed already.
-- A Chromium started with a debugging port keeps its process singleton in
-- a directory of its own under /tmp (the profile's SingletonSocket links
-- there), which it leaves behind when it is stopped by a signal: stop
-- removes it too, so that runs of the specs do not pile them up.
local function singleton_dir(profile)
  if not profile then return nil end
  local p = io.popen("readlink '" .. (profile .. "/SingletonSocket"):gsub("'", "'\\''") .. "' 2>/dev/null")
  local target = p:read("*l")
  p:close()
  return target and target:match("^(/tmp/org%.chromium%.Chromium%.[%w]+)/SingletonSocket$")
end

function M.stop(proc, wait, pid)
  pid = pid or proc:pid()
  local singleton = singleton_dir(M._profiles[proc])
  M._profiles[proc] = nil
  proc:close(wait or 0)
  assert(H.wait_for(function() return H.live_in_group(pid) == 0 end, H.LONG),
    "processes of group " .. tostring(pid) .. " are still running")
  if singleton then core.fs.rmtree(singleton) end
end

return M
