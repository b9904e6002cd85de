-- tools/install_hint.lua SHAREDIR LIBDIR BINDIR MANDIR: run by `make install`
-- with the interpreter it installed for, its LUA_PATH and LUA_CPATH unset
-- (what `require` finds by default). Prints nothing when that interpreter
-- finds the library where it was installed, devtools-tools is on PATH and
-- `man devtools-tools` finds its page; otherwise the lines to add to a
-- shell's startup file (Lua 5.4 reads LUA_PATH_5_4 before LUA_PATH, so
-- they leave LuaJIT and Lua 5.1 alone).
local share, lib, bin, man = arg[1], arg[2], arg[3], arg[4]
local v = _VERSION:match("%d+%.%d+")
local suffix = (not jit and v ~= "5.1") and ("_" .. v:gsub("%.", "_")) or ""

local function has(path, entry)
  for t in path:gmatch("[^;]+") do
    if t == entry then return true end
  end
  return false
end

local lines = {}
if not has(package.path, share .. "/?.lua") then
  lines[#lines + 1] = ("export LUA_PATH%s='%s/?.lua;%s/?/init.lua;;'"):format(suffix, share, share)
end
if not has(package.cpath, lib .. "/?.so") then
  lines[#lines + 1] = ("export LUA_CPATH%s='%s/?.so;;'"):format(suffix, lib)
end
local on_path = (":" .. (os.getenv("PATH") or "") .. ":"):find(":" .. bin .. "/?:") ~= nil
if not on_path then lines[#lines + 1] = ("export PATH='%s':\"$PATH\""):format(bin) end
-- man-db finds BINDIR/../share/man on its own; another MANDIR needs MANPATH
local p = io.popen("manpath 2>/dev/null")
local mp = p and p:read("*a") or ""
if p then p:close() end
local found = (":" .. mp:gsub("%s+$", "") .. ":"):find(":" .. man .. "/?:", 1) ~= nil
if not found and (not on_path or man ~= bin:gsub("/bin/?$", "") .. "/share/man") then
  lines[#lines + 1] = ("export MANPATH='%s':\"$(manpath 2>/dev/null)\""):format(man)
end
if #lines > 0 then
  io.write("devtools_tools is installed where ", jit and "luajit" or ("lua" .. v),
    " (or your shell) does not look by default; add to your shell's startup file:\n")
  for _, l in ipairs(lines) do io.write("  ", l, "\n") end
end
