-- spec/gc_helper.lua: a busted --helper for `make test-gc`. It sets the
-- garbage collector to collect far more often than by default and runs a
-- full collection after every spec, so that whatever a spec let go of is
-- finalized (__gc of transports, processes, regexes) while the next one
-- runs: a finalizer that frees something still in use, or an object kept
-- alive only by accident, shows up here.
-- It must never change what a spec checks: it only collects.

local busted = require "busted"

-- A new cycle once the heap has grown by 10% (the default waits for it to
-- double), in steps four times the default. Not pause 100 ("no rest"):
-- on Lua 5.4.4 that makes building any large table take minutes.
if _VERSION == "Lua 5.4" then
  collectgarbage("incremental", 110, 400)
else
  collectgarbage("setpause", 110)             -- Lua 5.1 and LuaJIT
  collectgarbage("setstepmul", 400)
end

busted.subscribe({ "test", "end" }, function()
  collectgarbage("collect")
  collectgarbage("collect")                   -- a second pass for what the first finalized
  return nil, true                            -- let the other handlers run
end)
