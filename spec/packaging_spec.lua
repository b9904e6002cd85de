-- Packaging: `make install` into a staging root and `luarocks make` into a
-- private tree both give a library that loads and drives Chromium.

local core = require "devtools_tools.core"

local H = require "helper"
local sh = H.sh

local SMOKE = [[lua5.4 -e 'local dt = require "devtools_tools"
local b = dt.launch()
io.write(b:new_page("data:text/html,<title>packaged</title>"):evaluate("document.title"), " ", dt.json.encode(dt.array{}))
b:close()']]

describe("packaging", function()
  local dir
  before_each(function() dir = assert(core.mkdtemp("dt-pkg-")) end)
  after_each(function() core.rmtree(dir) end)

  it("make install honours DESTDIR and PREFIX", function()
    local out, rc = sh(("make -s install DESTDIR=%s PREFIX=/opt/dt"):format(dir))
    assert.equal(0, rc, out)
    local share, lib = dir .. "/opt/dt/share/lua/5.4", dir .. "/opt/dt/lib/lua/5.4"
    out, rc = sh(("cd %s && LUA_PATH='%s/?.lua;%s/?/init.lua;;' LUA_CPATH='%s/?.so;;' %s"):format(
      dir, share, share, lib, SMOKE))
    assert.equal(0, rc, out)
    assert.equal("packaged []", out)
    -- the command line and its man page, and the command finds the library
    -- next to itself
    assert.is_true(H.exists(dir .. "/opt/dt/share/man/man1/devtools-tools.1"))
    out, rc = sh(("cd / && %s/opt/dt/bin/devtools-tools --version"):format(dir))
    assert.equal(0, rc, out)
    assert.matches("^devtools%-tools %(devtools_tools [%d.]+, Lua 5.4%)\n$", out)
    out, rc = sh(("make -s uninstall DESTDIR=%s PREFIX=/opt/dt && find %s -type f"):format(dir, dir))
    assert.equal(0, rc, out)
    assert.equal("", out)
  end)

  it("the rockspec builds against the system libraries and leaves no build output behind", function()
    local src = dir .. "/src-tree"
    local out, rc = sh(("mkdir %s && cp -r src lua rockspec bin doc Makefile %s/ && cd %s && find . | sort"):format(src, src, src))
    assert.equal(0, rc, out)
    local before = out
    out, rc = sh(("cd %s && luarocks --lua-version=5.4 --tree=%s/tree make rockspec/devtools_tools-scm-1.rockspec"):format(src, dir))
    assert.equal(0, rc, out)
    assert.equal(before, (sh(("cd %s && find . | sort"):format(src))))
    out, rc = sh(("cd / && %s/tree/bin/devtools-tools --version"):format(dir))
    assert.equal(0, rc, out)
    assert.matches("devtools_tools", out, 1, true)
    local share, lib = dir .. "/tree/share/lua/5.4", dir .. "/tree/lib/lua/5.4"
    out, rc = sh(("cd / && LUA_PATH='%s/?.lua;%s/?/init.lua;;' LUA_CPATH='%s/?.so;;' %s"):format(
      share, share, lib, SMOKE))
    assert.equal(0, rc, out)
    assert.equal("packaged []", out)
  end)
end)
