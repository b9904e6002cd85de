-- bench/repl_start.lua URL: the floor of `devtools-tools repl URL`'s start
-- (make bench): dt.launch() and a new page at URL, then the prompt as the
-- REPL draws it ("\r> \27[K"); it closes the browser at the end of its
-- input (Ctrl-D on the terminal `script` gives it).
local dt = require "devtools_tools"
local b = dt.launch()
local ok, err = pcall(function()
  b:new_page(arg[1])
  io.stdout:write("\r> \27[K")
  io.stdout:flush()
  io.read(1)
end)
b:close()
if not ok then io.stderr:write(tostring(err), "\n") os.exit(1) end
