-- The code blocks of README.md and doc/*.md marked <!-- runnable --> run,
-- as a reader would run them, against the sample app (build/app/server):
-- a Lua block under lua5.4 with this checkout's library, a shell block
-- under bash with this checkout's bin/ on PATH. `http://127.0.0.1:8080/`
-- in a block is the app this spec started; a block marked own-app starts
-- its own, on a free port put in place of 8080. Each block runs in a
-- directory of its own (its TMPDIR and XDG_STATE_HOME too, so a background
-- browser it starts is its own), ends with the status its mark names, and
-- leaves no process behind. How to mark a block: doc/internals.md, "The
-- documentation".

package.path = "./tools/?.lua;" .. package.path
local docs = require "docs"
local H = require "helper"
local app_server = require "support.app_server"
local socket = require "socket"

local root = io.popen("pwd"):read("*l")
local q = app_server.quote

local function free_port()
  local s = assert(socket.bind("127.0.0.1", 0))
  local _, port = s:getsockname()
  s:close()
  return port
end

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- run(block, url) -> status, stdout, stderr, dir, port (own-app: its app's)
local function run(block, url)
  local dir = app_server.run("mktemp -d \"${TMPDIR:-/tmp}/dt-doc-block-XXXXXX\""):gsub("%s+$", "")
  assert(dir ~= "", "mktemp failed")
  assert(os.execute("mkdir -p " .. q(dir .. "/tmp") .. " " .. q(dir .. "/state")))
  local code, port = block.code, nil
  if block.own_app then
    port = free_port()
    code = code:gsub("8080", tostring(port))
  else
    code = code:gsub("http://127%.0%.0%.1:8080/", url):gsub("127%.0%.0%.1:8080", (url:match("//([^/]+)")))
  end
  code = code:gsub("build/app/server", root .. "/" .. app_server.binary)
  local file = dir .. "/block." .. block.lang
  write(file, code)
  local env = table.concat({
    "TMPDIR=" .. q(dir .. "/tmp"), "XDG_STATE_HOME=" .. q(dir .. "/state"),
    "PATH=" .. q(root .. "/bin:" .. os.getenv("PATH")),
    "DEVTOOLS_TOOLS_BUILD=" .. q(H.build),
    "LUA_PATH=" .. q(root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;;"),
    "LUA_CPATH=" .. q(root .. "/" .. H.build .. "/?.so;;"),
  }, " ")
  local interp = block.lang == "lua" and "lua5.4" or "bash"
  local _, status = app_server.run("cd " .. q(dir) .. " && env -u LUA_PATH_5_4 -u LUA_CPATH_5_4 " .. env
    .. " timeout 180 " .. interp .. " " .. q(file) .. " >" .. q(dir .. "/out") .. " 2>" .. q(dir .. "/err")
    .. " </dev/null")
  return status, H.read_file(dir .. "/out"), H.read_file(dir .. "/err"), dir, port
end

-- own_app(port) -> the pids of the sample app a block started on port
local function own_app(port)
  local out = {}
  for _, pid in ipairs(H.live_with_arg(root .. "/" .. app_server.binary)) do
    local f = io.open("/proc/" .. pid .. "/cmdline")
    local cmd = f and f:read("*a") or ""
    if f then f:close() end
    if cmd:find("\0--port\0" .. port .. "\0", 1, true) or cmd:find("\0--port\0" .. port .. "$") then
      out[#out + 1] = pid
    end
  end
  return out
end

-- What a block that failed left: its background browser is stopped as a
-- reader would stop it, and what is still running of it ended.
local function clean(dir, port)
  app_server.run("cd " .. q(dir) .. " && XDG_STATE_HOME=" .. q(dir .. "/state") .. " DEVTOOLS_TOOLS_BUILD="
    .. q(H.build) .. " lua5.4 " .. q(root .. "/bin/devtools-tools") .. " browser stop -q >/dev/null 2>&1")
  local pids = H.live_with_arg(dir)
  if port then for _, p in ipairs(own_app(port)) do pids[#pids + 1] = p end end
  for _, pid in ipairs(pids) do app_server.run("kill -KILL " .. pid .. " 2>/dev/null") end
  app_server.run("rm -rf " .. q(dir))
end

describe("the documentation's runnable blocks", function()
  local server

  setup(function() server = assert(app_server.start()) end)
  teardown(function() server:stop() end)

  for _, page in ipairs(docs.pages()) do
    for _, block in ipairs(docs.runnable(assert(docs.read(page)))) do
      it(("%s:%d (%s) runs"):format(page, block.line, block.lang), function()
        local status, out, err, dir, port = run(block, server.url)
        finally(function() clean(dir, port) end)
        local said = "\n--- stdout:\n" .. out .. "\n--- stderr:\n" .. err
        assert.equal(block.exit, status, said)
        if block.stdout then assert.truthy(out:find(block.stdout, 1, true), said) end
        if block.stderr then assert.truthy(err:find(block.stderr, 1, true), said) end
        -- nothing left running: no browser, no app, under its directory
        assert.is_true(H.wait_for(function() return #H.live_with_arg(dir) == 0 end, H.LONG),
          "left behind: " .. table.concat(H.live_with_arg(dir), " "))
        if port then
          assert.is_true(H.wait_for(function() return #own_app(port) == 0 end, H.LONG),
            "the block's app still runs on port " .. port)
        end
      end)
    end
  end
end)
