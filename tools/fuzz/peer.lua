-- tools/fuzz/peer.lua: the fake peers of `make fuzz`, one case each.
--
--   peer.lua pipe SEED CASE   writes case CASE of the pipe target to fd 4
--   peer.lua ws SEED CASE     serves case CASE of the ws target to one
--                             websocket client (prints "port N" first)
--   peer.lua http SEED CASE   the same for one HTTP GET
-- The case is generated again from (SEED, CASE), exactly as the runner
-- that checks it generated it. A peer ends on its own once its client is
-- gone (EOF on fd 3, a closed socket), so a killed runner leaves none.

local dir = arg[0]:match("^(.*)/fuzz/peer%.lua$") or "tools"
local build = os.getenv("DEVTOOLS_TOOLS_BUILD") or "build/lua5.4"
package.path = dir .. "/?.lua;./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = "./" .. build .. "/?.so;" .. package.cpath

local core = require "devtools_tools.core"
local rng = require "fuzz.rng"

local kind, seed, index = arg[1], math.tointeger(tonumber(arg[2])), math.tointeger(tonumber(arg[3]))
local T = require("fuzz." .. kind .. "_target")
local c = T.gen(rng.new(seed, kind, index))

if kind == "pipe" then
  local out = assert(io.open("/dev/fd/4", "wb"))
  out:setvbuf("no")
  local stream, at = T.stream(c), 1
  for n, size in ipairs(c.chunks) do
    if at > #stream then break end
    if not out:write(stream:sub(at, at + size - 1)) then os.exit(0) end   -- the runner is gone
    at = at + size
    if c.pauses[n] then core.sleep(c.pauses[n] / 1000) end
  end
  if at <= #stream then out:write(stream:sub(at)) end
  if c.ending == "stay" then
    -- hold fd 4 open until the runner closes its end of fd 3
    local inp = io.open("/dev/fd/3", "rb")
    if inp then inp:read("a") end
  end
  os.exit(0)
end

T.serve(c)
