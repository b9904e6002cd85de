-- bench/background.lua: the background browser's rows of `make bench`
-- (bench.lua's "background" section): what the private one (Chromium on
-- its pipe behind the holder, served on a Unix socket: the default of
-- `browser start`) costs against the shareable one (Chromium's own TCP
-- debugging port: `browser start --port`), each a detached browser of its
-- own, measured in one run with blocks taking turns: a tool call, an 8 MB
-- result, a connection (what every command of the command line makes
-- first), and a start. A start, its first answer included, is a
-- browser's whole start-up, so few are taken.
--
-- Nothing here may leave a process behind: each browser is ended with
-- stop_detached on every path.

local dt = require "devtools_tools"
local core = require "devtools_tools.core"
local C = require "common"

local M = {}

local now = C.now

local function timed(fn)
  local t0 = now()
  fn()
  return now() - t0
end

-- run(S, server) -> {call = {private, port}, large = {...}, connect = {...}, start = {...}} in seconds
function M.run(S, server)
  local dir = assert(core.fs.mkdtemp("dt-bench-bg-"))
  local started = {}
  local function launch(kind, n)
    local o = { detached = true }
    if kind == "private" then o.socket = dir .. "/b" .. n .. ".sock" end
    local b = dt.launch(o)
    started[#started + 1] = b.detached
    return b
  end
  local function stop(b)
    pcall(b.close, b)
    pcall(dt.stop_detached, b.detached)
  end
  local out = { call = { private = {}, port = {} }, large = { private = {}, port = {} },
    connect = { private = {}, port = {} }, start = { private = {}, port = {} } }
  local ok, err = pcall(function()
    local kinds = { "private", "port" }
    -- starts: launch{detached} to its first answer, then ended (alternating)
    for round = 1, S.bg_start_rounds do
      for k = 0, 1 do
        local kind = kinds[(round + k) % 2 + 1]
        local b
        local t = timed(function() b = launch(kind, "s" .. round) end)
        out.start[kind][#out.start[kind] + 1] = t
        stop(b)
      end
    end
    local b = { private = launch("private", 0), port = launch("port", 0) }
    local page = {}
    for _, kind in ipairs(kinds) do
      page[kind] = b[kind]:new_page(server.url("/add.html"))
      if page[kind]:call("add", { a = 1, b = 2 }) ~= 3 then error("add(1, 2) failed (" .. kind .. ")") end
      for _ = 1, S.warmup do page[kind]:call("add", { a = 1, b = 2 }) end
    end
    for blk = 1, S.bg_blocks do
      for k = 0, 1 do
        local kind = kinds[(blk + k) % 2 + 1]
        local into = out.call[kind]
        for _ = 1, S.block do
          into[#into + 1] = timed(function() page[kind]:call("add", { a = 1, b = 2 }) end)
        end
      end
    end
    local big = "'x'.repeat(8 * 1024 * 1024)"
    for round = 1, S.bg_large_rounds do
      for k = 0, 1 do
        local kind = kinds[(round + k) % 2 + 1]
        local len
        out.large[kind][#out.large[kind] + 1] = timed(function() len = #page[kind]:evaluate(big) end)
        if len ~= 8 * 1024 * 1024 then error("the 8 MB string came back as " .. tostring(len) .. " bytes") end
      end
    end
    for round = 1, S.bg_connect_rounds do
      for k = 0, 1 do
        local kind = kinds[(round + k) % 2 + 1]
        out.connect[kind][#out.connect[kind] + 1] = timed(function()
          local c = dt.connect(b[kind].detached.endpoint)
          c:close()
        end)
      end
    end
    for _, kind in ipairs(kinds) do page[kind]:close() end
  end)
  for _, rec in ipairs(started) do pcall(dt.stop_detached, rec) end
  core.fs.rmtree(dir)
  if not ok then error(err, 0) end
  return out
end

return M
