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
}
build = {
  type = "builtin",
  modules = {
    ["devtools_tools.core"] = {
      sources = {
        "src/buf.c", "src/cdp_decode.c", "src/class.c", "src/clock.c", "src/codes.c",
        "src/core.c", "src/fs.c", "src/http.c", "src/json.c", "src/net.c",
        "src/pipe.c", "src/process.c", "src/regex.c", "src/ring.c", "src/transport.c",
        "src/ws.c",
      },
      libraries = { "websockets", "pcre2-8", "m" },
      incdirs = { "$(LIBWEBSOCKETS_INCDIR)", "$(PCRE2_INCDIR)" },
      libdirs = { "$(LIBWEBSOCKETS_LIBDIR)", "$(PCRE2_LIBDIR)" },
    },
    ["devtools_tools"] = "lua/devtools_tools/init.lua",
    ["devtools_tools.errors"] = "lua/devtools_tools/errors.lua",
    ["devtools_tools.json"] = "lua/devtools_tools/json.lua",
    ["devtools_tools.cdp"] = "lua/devtools_tools/cdp.lua",
    ["devtools_tools.browser"] = "lua/devtools_tools/browser.lua",
    ["devtools_tools.page"] = "lua/devtools_tools/page.lua",
    ["devtools_tools.discovery"] = "lua/devtools_tools/discovery.lua",
    ["devtools_tools.schema"] = "lua/devtools_tools/schema.lua",
    ["devtools_tools.formats"] = "lua/devtools_tools/formats.lua",
  },
}
