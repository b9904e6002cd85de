-- checkout.lua: what lets a recipe run from any directory. Each recipe
-- starts with
--   dofile((debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or ".") .. "/checkout.lua")
-- which puts the recipes' own directory on package.path (report.lua,
-- workflow.lua) and, when they sit in a checkout of devtools_tools, the
-- checkout's lua/ and build/<interpreter>/ (make, or make LUA=luajit;
-- DEVTOOLS_TOOLS_BUILD overrides the build directory). Elsewhere the
-- installed module is used. Returns the recipes' directory and the root of
-- the checkout (nil outside one).
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local root = here .. "/.."
local f = io.open(root .. "/lua/devtools_tools/init.lua")
if not f then return here, nil end
f:close()
local build = os.getenv("DEVTOOLS_TOOLS_BUILD")
  or ("build/" .. (jit and "luajit" or ("lua" .. _VERSION:match("%d+%.%d+"))))
if build:sub(1, 1) ~= "/" then build = root .. "/" .. build end
package.path = root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. package.path
package.cpath = build .. "/?.so;" .. package.cpath
return here, root
