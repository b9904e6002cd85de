-- Packaging: `make install` into a staging root and `luarocks make` into a
-- private tree both give a library that loads and drives Chromium.

local core = require "devtools_tools.core"

local sh = require("helper").sh

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
  end)

  it("the rockspec builds against the system libraries", function()
    local out, rc = sh(("cp -r src lua rockspec %s/ && cd %s && luarocks --lua-version=5.4 --tree=%s/tree make rockspec/devtools_tools-scm-1.rockspec"):format(dir, dir, dir))
    assert.equal(0, rc, out)
    local share, lib = dir .. "/tree/share/lua/5.4", dir .. "/tree/lib/lua/5.4"
    out, rc = sh(("cd / && LUA_PATH='%s/?.lua;%s/?/init.lua;;' LUA_CPATH='%s/?.so;;' %s"):format(
      share, share, lib, SMOKE))
    assert.equal(0, rc, out)
    assert.equal("packaged []", out)
  end)
end)
