-- devtools_tools.base.nojit: keeps LuaJIT's trace compiler out of this library's
-- own functions on the LuaJIT builds that miscompile table traversal.
--
-- From 2021-09-19 (LuaJIT 986bb406, which compiles pairs() and next()
-- through lj_vm_next, returning a pointer and an index in a register pair)
-- to 2022-04-05 (LuaJIT 5e3c45c4, "x64: Fix RETHI/RETLO swap after call"),
-- LuaJIT on x64 swaps that pair with a 32-bit xchg when its register
-- allocator wants the two the other way round: the pointer loses its upper
-- half and the trace dies with SIGSEGV. Which traces get the swap depends
-- on register pressure, so any pairs() loop that gets hot can be one.
-- Debian 12's LuaJIT (2.1.0~beta3+git20220320), and so Debian 12's Neovim,
-- is such a build: here the task specs crashed in about one run in four,
-- in the loop of cdp.lua's unwatch_all (its core showed `call lj_vm_next;
-- xchg eax, edx`, then a load through the truncated pointer).
--
-- Every build from 2017 to mid-2023 calls itself "LuaJIT 2.1.0-beta3";
-- later ones carry a release number ("LuaJIT 2.1.1700008891"). So on x64
-- with that version string the library's functions run in LuaJIT's
-- interpreter (still faster than PUC Lua), and the host's own code keeps
-- its JIT: this sets a flag on our functions only, never jit.off() for the
-- whole state.
--
--   nojit()       called from a module's main chunk: all of the module's
--                 functions, nested ones included (each module of the
--                 library calls it first thing)
--   nojit.fn(f)   one function and those nested in it, e.g. a chunk that
--                 load() made

local jit = rawget(_G, "jit") or package.loaded.jit
local getinfo = debug and debug.getinfo

-- The builds that may carry the bug (see above); DEVTOOLS_TOOLS_JIT=on
-- keeps the JIT anyway (a build known to have the fix), =off turns it off
-- for our functions on any LuaJIT.
local affected = false
if type(jit) == "table" and type(jit.off) == "function" then
  local env = os.getenv("DEVTOOLS_TOOLS_JIT")
  if env == "off" then
    affected = true
  elseif env ~= "on" then
    affected = jit.arch == "x64" and jit.version == "LuaJIT 2.1.0-beta3"
  end
end

local M = { affected = affected }
if affected then jit.off(true, true) end     -- this module's own functions

function M.fn(f)
  if affected and type(f) == "function" then jit.off(f, true) end
  return f
end

-- Called from a module's main chunk: that chunk, so every function it
-- defines.
setmetatable(M, { __call = function()
  if affected and getinfo then
    local info = getinfo(2, "f")
    if info and info.func then jit.off(info.func, true) end
  end
end })

return M
