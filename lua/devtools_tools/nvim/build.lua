-- devtools_tools.nvim.build: what the plugin needs built before it can
-- run, and what a Neovim that cannot load the C core is told.
--
-- The plugin's commands stand on the C core, built for Neovim's LuaJIT by
-- `make nvim` (a plugin manager's build step). Without it, loading the
-- library fails deep inside require; here that failure becomes one line
-- that says what to run and where, the same advice as :checkhealth's,
-- with the one list of packages the build needs (doc/devtools_tools.txt,
-- "Install", names the same; spec/e2e/nvim_spec.lua checks it).
--
-- It needs nothing but Neovim (no core, no library module). It must never
-- raise while the core is missing, and never keep a failed load: after
-- `make nvim` the next command loads the library, without a restart.

local notice = require "devtools_tools.nvim.notice"

local type, tostring, pairs, ipairs, pcall = type, tostring, pairs, ipairs, pcall

local M = {}

M.COMMAND = "make nvim"
M.PACKAGES = { "gcc", "make", "pkg-config", "liblua5.1-0-dev", "libwebsockets-dev", "libpcre2-dev",
  "libssl-dev" }

-- root() -> the plugin's directory: the runtimepath entry this file is in
function M.root()
  local src = debug.getinfo(1, "S").source or ""
  local dir = src:sub(2):gsub("/lua/devtools_tools/nvim/build%.lua$", "")
  return dir
end

-- packages() -> "gcc, make, ... and libssl-dev"
function M.packages()
  local p = M.PACKAGES
  return table.concat(p, ", ", 1, #p - 1) .. " and " .. p[#p]
end

-- The directory as a person types it (~ for the home directory).
local function shown_root()
  local ok, s = pcall(vim.fn.fnamemodify, M.root(), ":~")
  return ok and s or M.root()
end

-- why(err) -> what went wrong, in a few words, from require's error
local function why(err)
  local s = tostring(err)
  if s:find("module 'devtools_tools.core' not found", 1, true) then
    return "the C core is not built for this Neovim"
  elseif s:find("undefined symbol", 1, true) or s:find("wrong ELF", 1, true) then
    return "the C core was built for another Lua"
  end
  return "the C core does not load"
end

-- lines(err) -> the one line a command shows, from the fullest to the
-- shortest: the first that fits the command line is shown (a path may be
-- long, and a message wider than the command line asks for ENTER).
function M.lines(err)
  local cmd, dir = M.COMMAND, shown_root()
  return {
    ("devtools_tools: %s: run `%s` in %s (a plugin manager's build step)"):format(why(err), cmd, dir),
    ("devtools_tools: %s: run `%s` in %s"):format(why(err), cmd, dir),
    ("devtools_tools: no C core: run `%s` in %s"):format(cmd, dir),
    ("devtools_tools: no C core: run `%s` (:checkhealth devtools_tools)"):format(cmd),
    ("devtools_tools: no C core: run `%s` (:checkhealth)"):format(cmd),
  }
end

-- line(err) -> the fullest of lines(err) that fits (nvim.notice)
function M.line(err)
  local all = M.lines(err)
  for _, l in ipairs(all) do
    if notice.fits(l) then return l end
  end
  return all[#all]
end

-- advice() -> the lines :checkhealth adds to its error
function M.advice()
  return {
    ("run `%s` in %s (plugin managers: build = \"%s\")"):format(M.COMMAND, M.root(), M.COMMAND),
    "it needs " .. M.packages(),
  }
end

-- load() -> the library (require "devtools_tools"), or nil and the error.
-- A require that failed leaves a mark in package.loaded (Lua 5.1: "loop
-- or previous error loading module"): the marks are cleared, so that a
-- later try loads anew.
function M.load()
  local ok, dt = pcall(require, "devtools_tools")
  if ok and type(dt) == "table" then return dt end
  for name, v in pairs(package.loaded) do
    if type(name) == "string" and name:find("^devtools_tools") and type(v) ~= "table" then
      package.loaded[name] = nil
    end
  end
  return nil, dt
end

return M
