-- LuaRocks spec: luarocks --lua-version=5.4 make rockspec/devtools_tools-scm-1.rockspec
rockspec_format = "3.0"
package = "devtools_tools"
version = "scm-1"
source = {
  url = "git+file:///dev/null",   -- build from a checkout with `luarocks make`
}
description = {
  summary = "Script the developer tools web pages expose, from Lua, over the Chrome DevTools Protocol",
  detailed = [[
Drives headless Chromium over the Chrome DevTools Protocol (pipe or websocket),
discovers the third-party developer tools a page exposes through the
`devtoolstooldiscovery` event, in every frame, and turns each into a Lua object.
]],
  license = "MIT",
}
dependencies = {
  "lua >= 5.1",
}
external_dependencies = {
  LIBWEBSOCKETS = { header = "libwebsockets.h", library = "websockets" },
  PCRE2 = { header = "pcre2.h", library = "pcre2-8" },
  OPENSSL = { header = "openssl/ssl.h", library = "ssl" },
}
-- Built by the Makefile, not the builtin backend: the builtin backend leaves
-- its objects and core.so in the source tree, and cannot install the command
-- line's man page. `make rock-install` builds in a temporary directory and
-- installs core.so, lua/devtools_tools/init.lua and the library's folders
-- beneath it (the Makefile's LIBDIRS: one per layer, the page scripts
-- tools/js/*.js, what the front ends show present/ and the command line
-- cli/); the command line's launcher bin/devtools-tools and its man page.
-- The Neovim plugin
-- (nvim/, health.lua, plugin/, syntax/, its :help file) is not installed:
-- a plugin manager runs it from a checkout built with `make nvim`.
build = {
  type = "make",
  build_pass = false,
  install_target = "rock-install",
  install_variables = {
    LUA = "$(LUA)",
    LUA_INCDIR = "$(LUA_INCDIR)",
    CFLAGS = "$(CFLAGS)",
    LIBFLAG = "$(LIBFLAG)",
    INST_LIBDIR = "$(LIBDIR)",
    INST_LUADIR = "$(LUADIR)",
    INST_BINDIR = "$(BINDIR)",
    INST_PREFIX = "$(PREFIX)",
    LWS_INCDIR = "$(LIBWEBSOCKETS_INCDIR)",
    LWS_LIBDIR = "$(LIBWEBSOCKETS_LIBDIR)",
    PCRE_LIBDIR = "$(PCRE2_LIBDIR)",
    SSL_INCDIR = "$(OPENSSL_INCDIR)",
    SSL_LIBDIR = "$(OPENSSL_LIBDIR)",
  },
}
