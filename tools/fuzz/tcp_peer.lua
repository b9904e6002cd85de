-- tools/fuzz/tcp_peer.lua: starts tools/fuzz/peer.lua as the fake server of
-- one case of a network target (ws, http) and reads the port it listens on.
-- Shared by ws_target and http_target so that both start their peer alike.

local core = require "devtools_tools.core"

local M = {}

-- start(kind, ctx) -> proc, port | nil, failure message
function M.start(kind, ctx)
  local proc, err = core.process.spawn({ ctx.lua, ctx.dir .. "/fuzz/peer.lua", kind, tostring(ctx.seed),
    tostring(ctx.index) }, { env = { DEVTOOLS_TOOLS_BUILD = ctx.build } })
  if not proc then return nil, "cannot start the peer: " .. tostring(err) end
  local port
  local deadline = core.now() + 10
  repeat
    port = tonumber(proc:stderr():match("port (%d+)\n"))
    if not port then core.sleep(0.002) end
  until port or core.now() > deadline or not proc:running()
  if not port then
    local out = proc:stderr()
    proc:close(0)
    return nil, "the peer printed no port: " .. out
  end
  return proc, port
end

return M
