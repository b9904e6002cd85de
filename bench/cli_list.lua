-- bench/cli_list.lua URL: the work of `devtools-tools list URL` written as a
-- plain Lua script (launch, open the page, wait until it settles as the
-- command does - no change to its tools and no request for 0.1 s, at most
-- 3 s -, discover, print every group and tool, close): the floor `make
-- bench` compares the command line with.
local dt = require "devtools_tools"
local b = dt.launch()
local ok, err = pcall(function()
  local page = b:new_page()
  local last, inflight = dt.now(), 0
  local function event() last = dt.now() end
  page:on("tools_changed", event)
  page:on("request", function() inflight = inflight + 1 event() end)
  page:on("response", function() inflight = inflight - 1 event() end)
  page:navigate(arg[1])
  local stop = dt.now() + 3
  while dt.now() < stop and (inflight > 0 or dt.now() < last + 0.1) do
    local seen = last
    page:wait_until(function() return last ~= seen end,
      { timeout = math.max(0, math.min(stop, inflight > 0 and stop or last + 0.1) - dt.now()) })
  end
  for _, g in ipairs(page:discover()) do
    print(g.name, g.description, g.frame.url)
    for _, t in ipairs(g.tools) do print("", t.name, t.description) end
  end
end)
b:close()
if not ok then io.stderr:write(tostring(err), "\n") os.exit(1) end
