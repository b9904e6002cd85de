-- bench/mcp_floor.lua: the floor of the MCP rows of `make bench` - an MCP
-- server with no browser behind it, answering every request at once on
-- stdio (initialize, tools/list with one tool, tools/call with the answer
-- a page's `add` gives), through the same client and the same JSON codec
-- as `devtools-tools mcp`: what reading, decoding, encoding and writing a
-- message costs, without the page.
--
--   DEVTOOLS_TOOLS_BUILD=build/lua5.4 lua5.4 bench/mcp_floor.lua

local build = os.getenv("DEVTOOLS_TOOLS_BUILD") or "build/lua5.4"
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = "./" .. build .. "/?.so;" .. package.cpath

local json = require("devtools_tools").json

local TOOL = { name = "add", description = "Adds two numbers", inputSchema = { type = "object",
  properties = { a = { type = "number" }, b = { type = "number" } }, required = { "a", "b" } } }

for line in io.lines() do
  local msg = json.decode(line)
  local result
  if msg.method == "initialize" then
    result = { protocolVersion = msg.params.protocolVersion, capabilities = { tools = {} },
      serverInfo = { name = "floor", version = "1" } }
  elseif msg.method == "tools/list" then
    result = { tools = json.array{ TOOL } }
  elseif msg.method == "tools/call" then
    result = { content = json.array{ { type = "text", text = "3" } }, structuredContent = { result = 3 } }
  elseif msg.id ~= nil then
    result = {}
  end
  if msg.id ~= nil then
    io.stdout:write(json.encode({ jsonrpc = "2.0", id = msg.id, result = result }), "\n")
    io.stdout:flush()
  end
end
