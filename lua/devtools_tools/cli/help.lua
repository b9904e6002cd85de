-- devtools_tools.cli.help: the command line's help texts, one per command
-- and the options every command shares.
--
-- Text only: it must never decide anything about the command line's
-- behaviour (cli.argv parses, cli.commands acts).

local M = {}

M.COMMON = [[
Browser and page (shared by every command; options may also come before it):
  --connect ENDPOINT  use a running browser (http://127.0.0.1:PORT, ws://...,
                      or unix:PATH of a private background browser)
  --tab TEXT          use the open page whose ID starts with TEXT or whose URL
                      or title contains it (the most recently used of several)
  --new-tab           open URL in a new tab even if one shows it already
  --wait-for TOOL     first wait until the page offers TOOL (for tools a page
                      registers later than it settles, see below)
  --wait-for-selector CSS  first wait until an element matches CSS
  --viewport WxH      the page's viewport in CSS pixels (default 1280x800 for
                      a page opened in a headless browser)
  --no-settle         look at a page right after its load event
  --headful           launch a visible Chromium instead of a headless one
  --webmcp            launch it with WebMCP on (the page's WebMCP tools too)
  --chromium PATH     the Chromium binary to launch
  --timeout SECONDS   deadline of the whole command (default 30)
  -q, --quiet         no progress or notes on stderr
  --verbose           an error whole: a page's long message, every schema
                      error, the JavaScript stack
  --debug             log the DevTools protocol messages on stderr
  -h, --help          this help
  --version           print the version and exit
Without --connect, a browser started by `devtools-tools browser start` is
used when there is one; otherwise a headless Chromium is launched for the
command and closed after it. In a running browser a URL uses the open tab
that shows it (opened for it before), else a new one; without URL or --tab,
the page used last. A URL without scheme is taken as http:// (127.0.0.1:8080).
list, call, describe and screenshot look at a page they opened once it has
settled: its tools unchanged and no request started or answered for 0.1 s,
none in flight but those older than 1 s, no frame still loading, and its
script idle (an idle callback ran); at most 3 s after its load event.
Exit status: 0 success, 1 an error (stderr: "devtools-tools: CODE: message"),
2 a usage error, 128 + the signal's number after SIGINT (130), SIGTERM (143)
or SIGHUP (129) (the browser it launched, a tab it was opening, closed
first); browser status: 3 when none runs.
]]

M.TEXT = {
  main = [[
Usage: devtools-tools [options] COMMAND [options] ...

Lists, calls and scripts the developer tools a web page exposes (through the
`devtoolstooldiscovery` event, and WebMCP with --webmcp), over the Chrome
DevTools Protocol.

Commands:
  list [URL] [--json]                    the page's tool groups, frames and tools
  call [URL] TOOL [JSON | k=v | k:=json] call one tool, print its result as JSON
  describe [URL] TOOL [--json]           one tool: its description and whole schema
  eval [URL] EXPR                        evaluate JavaScript in the page
  run SCRIPT.lua [URL] [ARGS]            run a Lua script with dt, browser, page set
  screenshot [URL] OUT.png|.jpg|.webp    an image of the page (or of one element)
  tabs [close ID|TEXT] [--json]          the open pages of a running browser
  browser start|stop|status              keep one headless Chromium in the background
  mcp [URL] [--allow-eval]               serve the page's tools to AI agents (MCP, stdio)
  help [COMMAND]                         help on a command

]],
  list = [[
Usage: devtools-tools list [URL] [--json] [options]

Discovers the tools of the page (in every frame) and prints, per group, its
frame and its tools with the first sentence of their descriptions and a
one-line summary of their arguments ([name: type] is optional, {...} takes
any object, an enum shows its values or 'one of N: "a", "b", ...'). On a
terminal (or with COLUMNS set) each line is cut to its width; in a pipe or
a file, lines are whole.
  --json   a JSON array of groups:
           [{"name", "kind", "description", "frame": {"url"},
             "tools": [{"name", "description", "inputSchema", "annotations"}]}]
           kind: "devtools" (devtoolstooldiscovery) or "webmcp"

]],
  call = [[
Usage: devtools-tools call [URL] TOOL [JSON | key=value | key:=json ...] [options]

Calls one tool and prints its result as indented JSON (`call [URL] TOOL
--help`: that tool's description and schema, as describe prints them).
  JSON        a JSON object of arguments, e.g. '{"a": 1, "b": 2}'
  key=value   one argument, typed by the tool's schema (its type, enum,
              const, and anyOf/oneOf/allOf branches): a number when the
              schema says number or integer, true/false when it says
              boolean, null when it says null; otherwise a string
  key:=json   one argument as raw JSON, e.g. ids:='[1,2]' or on:=true
  --compact   print the result on one line

]],
  describe = [[
Usage: devtools-tools describe [URL] TOOL [--json] [options]

Prints one tool: its group, kind and frame, its whole description, each
argument (type, whether required, description, every allowed value,
default) and its whole input schema as JSON.
  --json   {"name", "kind", "description", "inputSchema", "annotations",
            "group": {"name", "kind", "frame": {"url"}}}

]],
  eval = [[
Usage: devtools-tools eval [URL] EXPR [--compact] [options]

Evaluates a JavaScript expression in the page's main frame (a promise is
awaited) and prints its value as indented JSON, as JSON.stringify writes
it; a DOM element in it is shown as a tool's result shows one:
"Element(div#cart)". `await` may stand at the top level, as in the
DevTools console ('const r = await fetch("/api"); r.status'); then a
promise the code ends with is not awaited.

]],
  run = [[
Usage: devtools-tools run SCRIPT.lua [URL] [ARGS...] [options] [-- ARGS...]

Runs a Lua script with the globals `dt` (require "devtools_tools"), `browser`
and `page` set, and `arg` as `lua SCRIPT.lua URL ARGS` sets it: SCRIPT.lua
as arg[0], the page's URL as arg[1] (the one given, else that of the page
chosen), then ARGS (an ARG that starts with a dash goes after --).
The page is chosen as for the other commands (URL, --tab, the page used
last), a blank one when there is none; it is not waited for to settle.
Modules next to the script can be required. A dt.Error the script raises
ends the command with status 1 (its code on stderr, then the script's line
it came through), any other error too (with its traceback).
The script is not bound by --timeout as a whole: it is the default timeout of
each call the script makes.

]],
  screenshot = [[
Usage: devtools-tools screenshot [URL] OUT.png [--full-page | --element SELECTOR] [options]

Writes an image of the page's viewport to OUT, in the format its extension
names: .png, .jpg or .jpeg (JPEG), .webp; another is a usage error.
  --full-page         the whole document, not only the viewport
  --element SELECTOR  only the first element matching the CSS selector

]],
  tabs = [[
Usage: devtools-tools tabs [--json] [options]
       devtools-tools tabs close ID|TEXT [options]

Lists the open pages of the background browser (or of the --connect one):
ID (its start; --tab and tabs close take it), URL and title, the most
recently used first (the one a command without URL or --tab uses).
  close ID|TEXT  closes the page whose ID is or starts with ID, or the one
                 page whose URL or title contains TEXT (several: an error)
  --json         [{"id", "url", "title"}]

]],
  browser = [[
Usage: devtools-tools browser start|stop|status [--port PORT] [options]

  start    start a headless Chromium in the background (a fresh profile)
           and print its endpoint; later commands use it, so pages they open
           stay open for --tab. It is private: it opens no port, and a small
           holder serves it on a Unix socket to you only (its endpoint,
           unix:PATH, is what --connect, mcp --connect and Neovim's
           :DevTools connect take)
  stop     stop it and remove its profile
  status   print "running pid PID ENDPOINT" (exit status 0), or "not
           running: ..." and why (exit status 3)
  --port PORT  (start) open Chromium's own debugging port on 127.0.0.1
           instead (0: any free one), for tools that need a port
           (chrome-devtools-mcp --browserUrl, Playwright): then every local
           user can drive the browser, read its pages and cookies and run
           code in them
The endpoint and pid are kept in $XDG_STATE_HOME/devtools-tools/browser.json
(default ~/.local/state). That directory must be yours and 0700, and each
file in it yours and 0600: anything else is refused, not used.
  --headful, --chromium PATH, --webmcp as for other commands (start only)

]],
  mcp = [[
Usage: devtools-tools mcp [URL] [--no-webmcp] [--allow-eval] [--trust-page]
                          [--allow-navigate HOST,...] [options]

An MCP server (Model Context Protocol) on stdin and stdout, for AI agents:
every tool the page exposes (in every frame, and its WebMCP tools) is an MCP
tool of its own, beside devtools.navigate, devtools.screenshot,
devtools.console and devtools.network. When the page's tools change (a
listener comes or goes, a navigation, frames, WebMCP),
notifications/tools/list_changed is sent. stdout carries MCP messages only;
logs go to stderr (DEVTOOLS_TOOLS_DEBUG=mcp logs every message).
It answers at once, before the browser and page are up: a page that does not
answer yet (an app started after its agent) is tried again, with pauses up
to 5 s, until it does; meanwhile tools/list has the built-ins and a call
says what was tried, and list_changed is sent when the page is up. A page
tool's description ends with "(Provided by the page at ORIGIN.)": the page
wrote it, not the user. When stdin ends, or on SIGTERM, SIGHUP or SIGINT,
it closes what it opened (the browser it launched and its profile, a tab
of --new-tab) and exits (0; 128 + the signal's number), within 2 s.
  --no-webmcp     launch Chromium without WebMCP (on by default where the
                  server launches it; a running browser has it or not)
  --allow-eval    also serve devtools.evaluate (JavaScript in the page)
  --trust-page    the page is yours: its descriptions go without the line
                  that says the page wrote them
  --allow-navigate HOST,...  let devtools.navigate load these hosts too
                  (it refuses link-local, cloud metadata and private network
                  addresses other than loopback, but the page's own host)
  --timeout SECONDS  each attempt to open the page, and each tool call (30)
Example (Claude Code):
  claude mcp add shop -- devtools-tools mcp http://127.0.0.1:8080/
]],
}

-- has(topic) -> true when there is help on that command
function M.has(topic) return rawget(M.TEXT, topic) ~= nil end

-- text(topic?) -> the help on topic (nil: the list of commands), with the
-- common options
function M.text(topic)
  return (topic and rawget(M.TEXT, topic) or M.TEXT.main) .. M.COMMON
end

return M
