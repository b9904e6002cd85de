-- .luacheckrc: `make lint` (luacheck, Debian's lua-check) over lua/, spec/,
-- bin/ and examples/. Each exception below says why it stays.

-- The library and the command line run under Lua 5.4 and LuaJIT (Neovim,
-- `make LUA=luajit install`): only the globals both have ("min": those of
-- every Lua and LuaJIT).
std = "min"
-- Lua 5.2+ names (and LuaJIT's own) the library reads once, at the top of
-- a file, with a fallback for the other interpreter beside it (STYLE.md:
-- version differences become locals at the top), e.g.
-- `local unpack = table.unpack or unpack`, `local load = loadstring or load`,
-- `local math_type = math.type  -- nil on LuaJIT`; and `jit`, nil outside
-- LuaJIT, to tell which interpreter runs (bin/devtools-tools picks its build).
-- `newproxy` likewise (LuaJIT and 5.1 only: wire/waiting.lua's sentinel,
-- a __gc a table cannot have there).
read_globals = {
  "unpack", "loadstring", "rawlen", "jit", "newproxy",
  table = { fields = { "unpack" } },
  math = { fields = { "tointeger", "type" } },
}
max_line_length = 120
ignore = {
  -- A method keeps the `:` form of its interface (Out:warn, a fake
  -- browser's :send) though it needs no state of its own.
  "212/self",
  -- `not (x >= 0)` is how a check refuses NaN as well; the `x < 0` luacheck
  -- offers lets NaN through.
  "581",
  -- An empty branch holding a comment names a case that must be told apart
  -- before the next test (`if x ~= x then -- NaN ... elseif type(x) ...`).
  "542",
}

-- `devtools-tools run SCRIPT` hands the script an os.exit that closes the
-- browser first, and puts the real one back when the script ends.
files["lua/devtools_tools/cli/commands.lua"] = { globals = { os = { fields = { "exit" } } } }

-- The Neovim plugin runs only inside Neovim: its LuaJIT and the vim API,
-- whose tables (vim.g, vim.bo, ...) a plugin writes into.
files["lua/devtools_tools/nvim"] = { std = "luajit", globals = { "vim" } }
files["lua/devtools_tools/health.lua"] = { std = "luajit", globals = { "vim" } }
files["plugin"] = { std = "luajit", globals = { "vim" } }

-- Specs run under busted, under Lua 5.4, and those in the Makefile's
-- LUAJIT_SPECS under LuaJIT as well: busted's globals, either Lua's.
-- Their lines are not bounded: a spec holds the messages, page scripts
-- and shell commands it checks whole, one per line, so that what a run
-- prints can be found in it as it is.
-- A step runs a command as `out, err, rc = run(...)` and asserts on what
-- that step is about, not always on all three (W311).
files["spec"] = { std = "max+busted", max_line_length = false, ignore = { "311" } }

-- The examples run under Lua 5.4 or LuaJIT, alone or through
-- `devtools-tools run`, which gives them the globals dt, browser and page.
files["examples"] = { std = "max", read_globals = { "dt", "browser", "page" } }
