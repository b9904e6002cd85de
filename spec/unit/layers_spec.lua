-- The library's layers (tools/layers.lua): each folder one layer, arrows
-- only downward, front ends on the facade and present/ alone, no require
-- cycle, no require hidden in a function, no module using another's
-- private ("_") fields or methods, and the README's drawing of the graph
-- is the graph.

local H = require "helper"
package.path = "./tools/?.lua;" .. package.path
local layers = require "layers"

local mods = layers.modules()

describe("the library's layers", function()
  it("read every module, in every folder", function()
    for _, name in ipairs({ "devtools_tools", "devtools_tools.base.errors", "devtools_tools.rt.task",
        "devtools_tools.wire.cdp", "devtools_tools.schema", "devtools_tools.schema.compile",
        "devtools_tools.tools", "devtools_tools.tools.discovery", "devtools_tools.page",
        "devtools_tools.browser", "devtools_tools.present.errors", "devtools_tools.cli" }) do
      assert.is_table(mods[name], name)
    end
  end)

  it("count a require in code, not one in a comment or a long string", function()
    local core = require "devtools_tools.core"
    local root = assert(core.fs.mkdtemp("dt-layers-"))
    assert(core.fs.mkdirs(root .. "/devtools_tools/base", 448))
    local f = assert(io.open(root .. "/devtools_tools/base/x.lua", "w"))
    f:write('-- require "devtools_tools.page"\nlocal help = [[ require "devtools_tools.browser" ]]\n'
      .. '--[[ require("devtools_tools.tools") ]]\nlocal errors = require "devtools_tools.base.errors" -- a note\n')
    f:close()
    local got = layers.modules(root)
    core.fs.rmtree(root)
    assert.same({ "devtools_tools.base.errors" }, got["devtools_tools.base.x"].requires)
  end)

  it("point only downward, front ends stand on the facade, and no module requires itself round", function()
    assert.same({}, layers.problems(mods))
  end)

  it("see an arrow up, a front end below the facade, and a cycle, when there is one", function()
    local bad = {
      ["devtools_tools.base.errors"] = { layer = "base", requires = { "devtools_tools.wire.cdp" } },
      ["devtools_tools.wire.cdp"] = { layer = "wire", requires = { "devtools_tools.base.errors" } },
      ["devtools_tools.cli"] = { layer = "cli", requires = { "devtools_tools.page" } },
      ["devtools_tools.page"] = { layer = "page", requires = {} },
    }
    local p = table.concat(layers.problems(bad), "\n")
    assert.matches("devtools_tools.base.errors (base) requires devtools_tools.wire.cdp (wire)", p, 1, true)
    assert.matches("devtools_tools.cli (a front end) requires devtools_tools.page", p, 1, true)
    assert.matches("require cycle: ", p, 1, true)
  end)

  it("keep each module's private parts its own: no \"_\" field or method is used by two modules", function()
    assert.same({}, layers.private_problems(mods))
  end)

  it("see a module that reads another's \"_\" field, calls its \"_\" method, or makes one in a table", function()
    local privates = layers.privates_of([[
      local a = page._tool_cache      -- a foreign read
      x:_check_open(deadline)         -- a call
      local t = { _gi = 1, n = 2 }    -- one a constructor makes
      local s = "._not_code"          -- (text is no code)
      local m = mt.__index            -- (a metamethod is no private part)
      local v = dt._VERSION           -- (Lua's own)
    ]])
    assert.same({ _tool_cache = true, _check_open = true, _gi = true }, privates)
    local bad = {
      ["devtools_tools.page.toolset"] = { layer = "page", requires = {}, privates = { _tool_cache = true } },
      ["devtools_tools.tools.calls"] = { layer = "tools", requires = {}, privates = { _tool_cache = true, _own = true } },
    }
    assert.same({ "_tool_cache is used by devtools_tools.page.toolset, devtools_tools.tools.calls" },
      layers.private_problems(bad))
  end)

  it("hide no edge in a function: every require a module holds runs when it loads", function()
    local out, rc = H.sh("lua5.4 -e \"package.path='./lua/?.lua;./lua/?/init.lua;./tools/?.lua;'..package.path;"
      .. " package.cpath='./" .. H.build .. "/?.so;'..package.cpath; local l = require 'layers';"
      .. " for _, x in ipairs(l.lazy(l.modules())) do print(x) end\" 2>&1")
    assert.equal(0, rc, out)
    assert.equal("", out)
  end)

  it("make a require on first use only where allowed by name, for a measured reason (Neovim's start-up)", function()
    assert.same({}, layers.lazy_problems(mods))
    local bad = { ["devtools_tools.nvim.session"] = { layer = "nvim",
      nested = { "devtools_tools.present.text", "devtools_tools.page" } } }
    assert.same({ "devtools_tools.nvim.session -> devtools_tools.page" }, layers.lazy_problems(bad))
    assert.same({ "devtools_tools.x" }, layers.nested_requires('local a = require "devtools_tools.y"\n'
      .. 'local function f()\n  return require("devtools_tools.x")\nend\n'))
  end)

  it("open each module with what it is for and what it must never do", function()
    local missing = {}
    for name, m in pairs(mods) do
      local f = assert(io.open(m.file))
      local head = {}
      for line in f:lines() do
        if not line:match("^%-%-") then break end
        head[#head + 1] = line
      end
      f:close()
      local text = table.concat(head, "\n")
      if not (head[1] and head[1]:match("^%-%- [%w_.]+:? ")) or not text:lower():find("never", 1, true) then
        missing[#missing + 1] = name
      end
    end
    table.sort(missing)
    assert.same({}, missing)
  end)

  it("are drawn in the README as they are", function()
    local f = assert(io.open("README.md"))
    local text = f:read("*a")
    f:close()
    local drawn = text:match("<!%-%- layers: tools/layers.lua %-%->\n```\n(.-)```\n")
    assert.is_string(drawn, "the README has no drawing of the layers")
    assert.equal(layers.render(mods), drawn)
  end)
end)
