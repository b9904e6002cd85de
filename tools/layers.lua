-- tools/layers.lua: the require graph of lua/devtools_tools, by layer.
--
-- Each folder of the library is one layer, and a module may require only
-- modules of its own layer or of the layers beneath it (the arrows point
-- down). The command line, Neovim and the MCP server (and what they show,
-- present/) stand on the facade alone. spec/unit/layers_spec.lua checks
-- the rules and that the README's drawing is what render() gives;
-- `lua5.4 tools/layers.lua` prints that drawing.
--
-- It reads the files as text: a require is `require "devtools_tools..."`
-- or `require("devtools_tools...")`, anywhere in the code (comments and
-- long strings left out).

local lfs = require "lfs"

local M = {}

-- Layers from the bottom up; those of one rank do not require each other.
M.LAYERS = {
  { "core" },
  { "base" },
  { "rt" },
  { "wire", "schema" },
  { "tools" },
  { "page" },
  { "browser" },
  { "facade" },
  { "present" },
  { "mcp" },
  { "cli", "nvim" },
}

-- What each layer holds, for the drawing.
local WHAT = {
  core = "C: bytes, processes, time (src/, map in src/dt.h)",
  base = "errors, options, json, nojit, base64",
  rt = "tasks and loops: the one wait",
  wire = "CDP routing, remote values",
  schema = "JSON Schema as ajv 6 means it, formats",
  tools = "Tool, document handles, discovery, calls, elements, WebMCP, js/",
  page = "Page: frames, site, navigation, tools, readiness, records, shots",
  browser = "Browser: launch, connect, WebDriver, background",
  facade = "init.lua: the public API",
  present = "what every front end shows",
  cli = "the command line",
  nvim = "the Neovim plugin (and health.lua)",
  mcp = "the MCP server (which `devtools-tools mcp` serves)",
}

-- The one module every file may require first: it keeps LuaJIT's
-- compiler out of the file's functions (base/nojit.lua), and a front end
-- must load it before the facade may fail to load (health.lua).
M.ANYWHERE = { ["devtools_tools.base.nojit"] = true }

-- Front ends and present/ stand on the facade, the public modules beside
-- it (README: devtools_tools.schema, the validator) and their own folder;
-- a front end may serve one beneath it (the command line's `mcp` command
-- runs the MCP server, which Neovim may serve next).
local FRONT = { present = true, cli = true, nvim = true, mcp = true }
M.PUBLIC = { ["devtools_tools.schema"] = true }

local rank = {}
for i, names in ipairs(M.LAYERS) do
  for _, n in ipairs(names) do rank[n] = i end
end
M.rank = rank

-- layer_of(module name) -> layer name
function M.layer_of(name)
  if name == "devtools_tools" then return "facade" end
  if name == "devtools_tools.core" then return "core" end
  if name == "devtools_tools.health" then return "nvim" end
  return name:match("^devtools_tools%.([%w_]+)")
end

local function module_name(rel)
  -- rel: a path beneath lua/, e.g. devtools_tools/tools/init.lua
  local m = rel:gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", ".")
  return m
end

-- The code of a Lua source: long strings and comments left out (a help
-- text that shows `require "devtools_tools"` is no require).
local function code_of(src)
  local out, i, n = {}, 1, #src
  while i <= n do
    local a, b, eq = src:find("%[(=*)%[", i)
    local c = src:find("--", i, true)
    if c and (not a or c < a) then
      out[#out + 1] = src:sub(i, c - 1)
      local la, lb, leq = src:find("^%-%-%[(=*)%[", c)
      if la then
        local close = src:find("]" .. leq .. "]", lb + 1, true)
        i = close and close + #leq + 2 or n + 1
      else
        local nl = src:find("\n", c, true)
        i = nl or n + 1
      end
    elseif a then
      out[#out + 1] = src:sub(i, a - 1)
      local close = src:find("]" .. eq .. "]", b + 1, true)
      i = close and close + #eq + 2 or n + 1
    else
      out[#out + 1] = src:sub(i)
      i = n + 1
    end
  end
  return table.concat(out)
end

local function walk(dir, rel, out)
  for entry in lfs.dir(dir) do
    if entry ~= "." and entry ~= ".." then
      local path = dir .. "/" .. entry
      local mode = lfs.attributes(path, "mode")
      if mode == "directory" then
        walk(path, rel .. "/" .. entry, out)
      elseif entry:match("%.lua$") then
        out[#out + 1] = { file = path, rel = rel .. "/" .. entry }
      end
    end
  end
end

-- Names that are data, not a module's private parts, though they start
-- with "_": Lua's own, and the MCP protocol's _meta field.
M.NOT_PRIVATE = { _VERSION = true, _G = true, _ENV = true, _meta = true }

-- privates_of(code) -> {[name] = true}: the "_"-prefixed fields and methods
-- the code uses (x._name, x:_name(...), { _name = ... }, function X:_name),
-- short strings left out; "__" names (metamethods) are no private parts.
function M.privates_of(code)
  code = code:gsub('"[^"\n]*"', '""'):gsub("'[^'\n]*'", "''")
  local out = {}
  for name in code:gmatch("[%w_%)%]][%.:](_%a[%w_]*)") do out[name] = true end
  for name in code:gmatch("[{,;]%s*(_%a[%w_]*)%s*=[^=]") do out[name] = true end
  for name in pairs(M.NOT_PRIVATE) do out[name] = nil end
  return out
end

-- nested_requires(code) -> the modules the code requires on an indented
-- line (inside a function: a require made on first use, not on load)
function M.nested_requires(code)
  local out = {}
  for line in (code .. "\n"):gmatch("([^\n]*)\n") do
    if line:match("^%s+%S") then
      -- (not the word inside a string: "require 'devtools_tools' failed")
      for dep in (" " .. line):gmatch("[^%w_\"']require%s*%(?%s*[\"'](devtools_tools[%w_.]*)[\"']") do
        out[#out + 1] = dep
      end
    end
  end
  return out
end

-- The requires Neovim's plugin makes on first use, each for its reason. The
-- plugin loads when Neovim starts (a plugin manager calls setup()), and the
-- library and present/ took 118-282 ms more to load there (measured in
-- headless Neovim 0.7 on the 2-core machine, three runs, against 2.5 ms for
-- the plugin's own modules); without the C core (no `make nvim` yet) the
-- library cannot load at all, and the plugin says so in one line
-- (nvim/build.lua) instead of failing as Neovim starts.
M.LAZY_ALLOWED = {
  ["devtools_tools.nvim.session -> devtools_tools.present.text"] = true,
  ["devtools_tools.nvim.session -> devtools_tools.present.schema"] = true,
  ["devtools_tools.nvim.session -> devtools_tools.present.skeleton"] = true,
  ["devtools_tools.nvim.session -> devtools_tools.present.pretty"] = true,
  ["devtools_tools.nvim.session -> devtools_tools.present.errors"] = true,
}

-- lazy_problems(mods) -> list of "a -> b" for each require made inside a
-- function (on an indented line) that LAZY_ALLOWED does not name. For the
-- modules lazy() cannot load (Neovim's), by their text.
function M.lazy_problems(mods)
  local out = {}
  for name, m in pairs(mods) do
    for _, dep in ipairs(m.layer == "nvim" and m.nested or {}) do
      local edge = name .. " -> " .. dep
      if not M.LAZY_ALLOWED[edge] then out[#out + 1] = edge end
    end
  end
  table.sort(out)
  return out
end

-- private_problems(mods) -> list of strings: each private name (a field or
-- method starting with "_") that more than one module uses. A module's
-- private parts are its own: no other module reads or writes its "_"
-- fields or calls its "_" methods (it is handed a handle, or asks a public
-- method, instead).
function M.private_problems(mods)
  local users = {}
  for name, m in pairs(mods) do
    for p in pairs(m.privates or {}) do
      local l = users[p] or {}
      users[p] = l
      l[#l + 1] = name
    end
  end
  local out = {}
  for p, l in pairs(users) do
    if #l > 1 then
      table.sort(l)
      out[#out + 1] = p .. " is used by " .. table.concat(l, ", ")
    end
  end
  table.sort(out)
  return out
end

-- modules(root?) -> { [name] = {file =, layer =, requires = {name...},
-- privates = {[name] = true}} }
function M.modules(root)
  root = root or "lua"
  local files = {}
  walk(root .. "/devtools_tools", "devtools_tools", files)
  local mods = {}
  for _, f in ipairs(files) do
    local h = assert(io.open(f.file))
    local src = code_of(h:read("*a"))
    h:close()
    local name = module_name(f.rel)
    local reqs, seen = {}, {}
    for dep in src:gmatch("require%s*%(?%s*[\"'](devtools_tools[%w_.]*)[\"']") do
      if not seen[dep] then
        seen[dep] = true
        reqs[#reqs + 1] = dep
      end
    end
    table.sort(reqs)
    mods[name] = { file = f.file, layer = M.layer_of(name), requires = reqs, privates = M.privates_of(src),
      nested = M.nested_requires(src) }
  end
  return mods
end

-- problems(mods) -> list of strings: requires of modules that do not
-- exist, arrows that point up or sideways, front ends below the facade,
-- and cycles among modules.
function M.problems(mods)
  local out = {}
  for name, m in pairs(mods) do
    if not rank[m.layer] then out[#out + 1] = name .. " is in no layer (" .. tostring(m.layer) .. ")" end
    for _, dep in ipairs(m.requires) do
      local dl = M.layer_of(dep)
      if dep ~= "devtools_tools.core" and not mods[dep] then
        out[#out + 1] = name .. " requires " .. dep .. ", which is no module"
      elseif not M.ANYWHERE[dep] then
        if FRONT[m.layer] then
          local beneath = FRONT[dl] and rank[dl] and rank[dl] < rank[m.layer] and dl ~= "present"
          if dep ~= "devtools_tools" and not M.PUBLIC[dep] and dl ~= "present" and dl ~= m.layer
              and not beneath then
            out[#out + 1] = name .. " (a front end) requires " .. dep .. ": front ends use the facade and present/"
          end
        elseif rank[dl] and rank[m.layer] and rank[dl] >= rank[m.layer] and dl ~= m.layer then
          out[#out + 1] = name .. " (" .. m.layer .. ") requires " .. dep .. " (" .. dl .. "): an arrow up or sideways"
        end
      end
    end
  end
  -- cycles: a depth-first walk meets no module still on its way
  local state = {}
  local function visit(n, path)
    if state[n] == "done" then return end
    if state[n] == "open" then
      out[#out + 1] = "require cycle: " .. table.concat(path, " -> ") .. " -> " .. n
      return
    end
    state[n] = "open"
    path[#path + 1] = n
    for _, d in ipairs(mods[n] and mods[n].requires or {}) do visit(d, path) end
    path[#path] = nil
    state[n] = "done"
  end
  local names = {}
  for n in pairs(mods) do names[#names + 1] = n end
  table.sort(names)
  for _, n in ipairs(names) do visit(n, {}) end
  table.sort(out)
  return out
end

-- render(mods) -> the drawing for the README: each layer, from the top,
-- with the layers its modules require.
function M.render(mods)
  local uses = {}
  for _, m in pairs(mods) do
    local t = uses[m.layer] or {}
    uses[m.layer] = t
    for _, dep in ipairs(m.requires) do
      local dl = M.layer_of(dep)
      if dl ~= m.layer and not M.ANYWHERE[dep] then t[dl] = true end
    end
  end
  local function label(l)
    if l == "core" or l == "facade" then return l end
    return l .. "/"
  end
  local lines = {}
  for i = #M.LAYERS, 1, -1 do
    for _, l in ipairs(M.LAYERS[i]) do
      local deps = {}
      for d in pairs(uses[l] or {}) do deps[#deps + 1] = d end
      table.sort(deps, function(a, b)
        if rank[a] ~= rank[b] then return rank[a] > rank[b] end
        return a < b
      end)
      for j, d in ipairs(deps) do deps[j] = label(d) end
      lines[#lines + 1] = ("%-9s %-64s %s"):format(label(l), WHAT[l],
        #deps > 0 and ("-> " .. table.concat(deps, " ")) or ""):gsub("%s+$", "")
    end
  end
  return table.concat(lines, "\n") .. "\n"
end

-- lazy(mods) -> list of "a -> b" for each require of b that a's text
-- holds but loading a does not do (a require inside a function: an edge
-- the graph would hide). Loads every module but Neovim's: run it in an
-- interpreter of its own.
function M.lazy(mods)
  local real = require
  local stack, done = {}, {}
  _G.require = function(name)
    local top = stack[#stack]
    if top then done[top .. " -> " .. name] = true end
    if package.loaded[name] ~= nil then return package.loaded[name] end
    stack[#stack + 1] = name
    local ok, r = pcall(real, name)
    stack[#stack] = nil
    if not ok then error(r, 0) end
    return r
  end
  local names = {}
  for n, m in pairs(mods) do
    if m.layer ~= "nvim" then names[#names + 1] = n end
  end
  table.sort(names)
  for _, n in ipairs(names) do require(n) end
  _G.require = real
  local out = {}
  for _, n in ipairs(names) do
    for _, dep in ipairs(mods[n].requires) do
      if not done[n .. " -> " .. dep] then out[#out + 1] = n .. " -> " .. dep end
    end
  end
  return out
end

if arg and arg[0] and arg[0]:match("layers%.lua$") and not package.loaded["busted"] then
  local mods = M.modules()
  io.write(M.render(mods))
  local p = M.problems(mods)
  for _, x in ipairs(p) do io.stderr:write(x, "\n") end
  os.exit(#p == 0 and 0 or 1)
end

return M
