-- bench/cli_list.lua URL: the work of `devtools-tools list URL` written as a
-- plain Lua script (launch, open the page, discover, print every group and
-- tool, close): the floor `make bench` compares the command line with.
local dt = require "devtools_tools"
local b = dt.launch()
local ok, err = pcall(function()
  local page = b:new_page(arg[1])
  for _, g in ipairs(page:discover()) do
    print(g.name, g.description, g.frame.url)
    for _, t in ipairs(g.tools) do print("", t.name, t.description) end
  end
end)
b:close()
if not ok then io.stderr:write(tostring(err), "\n") os.exit(1) end
