-- Packaging: `make install` into a staging root, `luarocks make` into a
-- private tree and Neovim's runtimepath all give a library that loads, finds
-- its page-side JavaScript where it was installed, and drives Chromium.

local core = require "devtools_tools.core"
local H = require "helper"

local sh = H.sh

-- Prints "<document title> <a tool's answer> <encoded []> <where js/runtime.js was read>"
local SMOKE = [[lua5.4 -e 'local dt = require "devtools_tools"
local b = dt.launch()
local p = b:new_page([==[data:text/html,<title>packaged</title><script>addEventListener("devtoolstooldiscovery", (e) => e.respondWith({ name: "g", tools: [{ name: "t", description: "d", inputSchema: { type: "object" }, execute: () => "tool" }] }))</script>]==])
io.write(p:evaluate("document.title"), " ", p:call("t"), " ", dt.json.encode(dt.array{}), " ", require("devtools_tools.tools.pagejs").path.runtime)
b:close()']]

describe("packaging", function()
  local dir
  before_each(function() dir = assert(core.fs.mkdtemp("dt-pkg-")) end)
  after_each(function() core.fs.rmtree(dir) end)

  it("make install honours DESTDIR and PREFIX", function()
    local out, rc = sh(("make -s install DESTDIR=%s PREFIX=/opt/dt"):format(dir))
    assert.equal(0, rc, out)
    local share, lib = dir .. "/opt/dt/share/lua/5.4", dir .. "/opt/dt/lib/lua/5.4"
    out, rc = sh(("cd %s && LUA_PATH='%s/?.lua;%s/?/init.lua;;' LUA_CPATH='%s/?.so;;' %s"):format(
      dir, share, share, lib, SMOKE))
    assert.equal(0, rc, out)
    assert.equal("packaged tool [] " .. share .. "/devtools_tools/tools/js/runtime.js", out)
    -- the command line and its man page, and the command finds the library
    -- next to itself
    assert.is_true(H.exists(dir .. "/opt/dt/share/man/man1/devtools-tools.1"))
    out, rc = sh(("cd / && %s/opt/dt/bin/devtools-tools --version"):format(dir))
    assert.equal(0, rc, out)
    assert.matches("^devtools%-tools %(devtools_tools [%d.]+, Lua 5.4%)\n$", out)
    -- the MCP server (mcp/) is there too: a ping answered, and stdin's end ends it
    out, rc = sh(("cd / && printf '%%s\\n' '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}'"
      .. " | %s/opt/dt/bin/devtools-tools mcp about:blank 2>/dev/null"):format(dir))
    assert.equal(0, rc, out)
    assert.same({ jsonrpc = "2.0", id = 1, result = {} }, require("devtools_tools").json.decode(out))
    out, rc = sh(("make -s uninstall DESTDIR=%s PREFIX=/opt/dt && find %s -type f"):format(dir, dir))
    assert.equal(0, rc, out)
    assert.equal("", out)
  end)

  it("make install says what to set where the interpreter, the shell and man do not look", function()
    -- a prefix of its own: the lines to add, which then work
    local prefix = dir .. "/p"
    local out, rc = sh(("make -s install PREFIX=%s"):format(prefix))
    assert.equal(0, rc, out)
    local share, lib = prefix .. "/share/lua/5.4", prefix .. "/lib/lua/5.4"
    assert.equal("devtools_tools is installed where lua5.4 (or your shell) does not look by default; add to"
      .. " your shell's startup file:\n"
      .. ("  export LUA_PATH_5_4='%s/?.lua;%s/?/init.lua;;'\n"):format(share, share)
      .. ("  export LUA_CPATH_5_4='%s/?.so;;'\n"):format(lib)
      .. ("  export PATH='%s/bin':\"$PATH\"\n"):format(prefix)
      .. ("  export MANPATH='%s/share/man':\"$(manpath 2>/dev/null)\"\n"):format(prefix), out)
    local lines = out:gsub("^[^\n]*\n", ""):gsub("\n", ";")
    out, rc = sh(("cd / && env -u LUA_PATH -u LUA_CPATH -u LUA_PATH_5_4 -u LUA_CPATH_5_4 sh -c %q"):format(
      lines .. " lua5.4 -e 'io.write(require(\"devtools_tools\")._VERSION, \" \")' && devtools-tools --version"
      .. " && man -w devtools-tools"))
    assert.equal(0, rc, out)
    assert.equal("devtools_tools 0.1.0 devtools-tools (devtools_tools 0.1.0, Lua 5.4)\n"
      .. prefix .. "/share/man/man1/devtools-tools.1\n", out)
    out, rc = sh(("make -s uninstall PREFIX=%s"):format(prefix))
    assert.equal(0, rc, out)
    -- where they look already (a package's staging root for /usr): nothing to say
    out, rc = sh(("make -s install DESTDIR=%s PREFIX=/usr"):format(dir))
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
    -- the copy it was built from is gone: only the installed tree remains
    out, rc = sh(("rm -rf %s && cd / && LUA_PATH='%s/?.lua;%s/?/init.lua;;' LUA_CPATH='%s/?.so;;' %s"):format(
      src, share, share, lib, SMOKE))
    assert.equal(0, rc, out)
    assert.equal("packaged tool [] " .. share .. "/devtools_tools/tools/js/runtime.js", out)
  end)

  it("finds its page scripts on Neovim's runtimepath", function()
    if not H.sh("command -v nvim") or select(2, H.sh("command -v nvim")) ~= 0 then
      pending("nvim is not installed")
      return
    end
    local out, rc = sh(("mkdir -p %s/rt && cp -r lua %s/rt/ && cd / && nvim --headless -u NONE -i NONE"
      .. " --cmd 'set rtp^=%s/rt' -c 'lua local ok, js = pcall(require, \"devtools_tools.tools.pagejs\");"
      .. " io.stdout:write(ok and js.path.discover or tostring(js)); vim.cmd(ok and \"qall!\" or \"cquit 1\")'"):format(
      dir, dir, dir))
    assert.equal(0, rc, out)
    assert.equal(dir .. "/rt/lua/devtools_tools/tools/js/discover.js", out)
  end)
end)
