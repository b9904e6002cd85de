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
        "src/core.c", "src/fs.c", "src/http.c", "src/json.c", "src/net.c", "src/pipe.c",
        "src/poll.c", "src/process.c", "src/regex.c", "src/ring.c", "src/transport.c",
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
    ["devtools_tools.loop"] = "lua/devtools_tools/loop.lua",
    ["devtools_tools.task"] = "lua/devtools_tools/task.lua",
    ["devtools_tools.browser"] = "lua/devtools_tools/browser.lua",
    ["devtools_tools.page"] = "lua/devtools_tools/page.lua",
    ["devtools_tools.discovery"] = "lua/devtools_tools/discovery.lua",
    ["devtools_tools.options"] = "lua/devtools_tools/options.lua",
    ["devtools_tools.remote"] = "lua/devtools_tools/remote.lua",
    ["devtools_tools.element"] = "lua/devtools_tools/element.lua",
    ["devtools_tools.tools"] = "lua/devtools_tools/tools.lua",
    ["devtools_tools.marshal"] = "lua/devtools_tools/marshal.lua",
    ["devtools_tools.calls"] = "lua/devtools_tools/calls.lua",
    ["devtools_tools.pagejs"] = "lua/devtools_tools/pagejs.lua",
    ["devtools_tools.schema"] = "lua/devtools_tools/schema.lua",
    ["devtools_tools.schema.values"] = "lua/devtools_tools/schema/values.lua",
    ["devtools_tools.schema.uri"] = "lua/devtools_tools/schema/uri.lua",
    ["devtools_tools.schema.meta"] = "lua/devtools_tools/schema/meta.lua",
    ["devtools_tools.schema.context"] = "lua/devtools_tools/schema/context.lua",
    ["devtools_tools.schema.compile"] = "lua/devtools_tools/schema/compile.lua",
    ["devtools_tools.schema.keywords"] = "lua/devtools_tools/schema/keywords.lua",
    ["devtools_tools.schema.check"] = "lua/devtools_tools/schema/check.lua",
    ["devtools_tools.schema.generate"] = "lua/devtools_tools/schema/generate.lua",
    ["devtools_tools.formats"] = "lua/devtools_tools/formats.lua",
    ["devtools_tools.observe"] = "lua/devtools_tools/observe.lua",
    ["devtools_tools.webmcp"] = "lua/devtools_tools/webmcp.lua",
    ["devtools_tools.screenshot"] = "lua/devtools_tools/screenshot.lua",
    ["devtools_tools.base64"] = "lua/devtools_tools/base64.lua",
  },
  -- The page-side JavaScript goes next to the modules (devtools_tools/js/),
  -- where devtools_tools.pagejs reads it.
  install = {
    lua = {
      ["devtools_tools.js.runtime"] = "lua/devtools_tools/js/runtime.js",
      ["devtools_tools.js.discover"] = "lua/devtools_tools/js/discover.js",
      ["devtools_tools.js.call"] = "lua/devtools_tools/js/call.js",
      ["devtools_tools.js.batch"] = "lua/devtools_tools/js/batch.js",
      ["devtools_tools.js.take"] = "lua/devtools_tools/js/take.js",
    },
  },
}
