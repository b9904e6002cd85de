-- spec/gc_helper.lua: a busted --helper for `make test-gc`. It sets the
-- garbage collector at its most aggressive (a new cycle as soon as one
-- ends, large steps) and runs a full collection after every spec, so that
-- whatever a spec let go of is finalized (__gc of transports, processes,
-- regexes) while the next one runs: a finalizer that frees something still
-- in use, or an object kept alive only by accident, shows up here.
-- It must never change what a spec checks: it only collects.

local busted = require "busted"

if _VERSION == "Lua 5.4" then
  collectgarbage("incremental", 100, 1000)   -- pause 100%: no rest between cycles
else
  collectgarbage("setpause", 100)             -- Lua 5.1 and LuaJIT
  collectgarbage("setstepmul", 1000)
end

busted.subscribe({ "test", "end" }, function()
  collectgarbage("collect")
  collectgarbage("collect")                   -- a second pass for what the first finalized
  return nil, true                            -- let the other handlers run
end)
