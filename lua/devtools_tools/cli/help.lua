-- devtools_tools.cli.help: the command line's help texts, one per command
-- and the options every command shares.
--
-- Text only: it must never decide anything about the command line's
-- behaviour (cli.argv parses, cli.commands acts).

local M = {}

M.COMMON = [[
Browser (shared by every command; options may also come before it):
  --connect ENDPOINT  use a running browser (http://127.0.0.1:PORT or ws://...)
  --tab TEXT          use the first open page whose URL or title contains TEXT
  --wait-for TOOL     first wait until the page offers TOOL (for tools a page
                      registers after its load event, e.g. in a frame it adds)
  --headful           launch a visible Chromium instead of a headless one
  --chromium PATH     the Chromium binary to launch
  --timeout SECONDS   deadline of the whole command (default 30)
  -q, --quiet         no progress on stderr
  --verbose           an error whole: a page's long message, every schema
                      error, the JavaScript stack
  --debug             log the DevTools protocol messages on stderr
  -h, --help          this help
  --version           print the version and exit
Without --connect, a browser started by `devtools-tools browser start` is
used when there is one; otherwise a headless Chromium is launched for the
command and closed after it. Without URL or --tab, a running browser's page
opened last is used.
Exit status: 0 success, 1 an error (stderr: "devtools-tools: CODE: message"),
2 a usage error, 130 interrupted (the browser it launched is closed first).
]]

M.TEXT = {
  main = [[
Usage: devtools-tools [options] COMMAND [options] ...

Lists, calls and scripts the developer tools a web page exposes (through the
`devtoolstooldiscovery` event), over the Chrome DevTools Protocol.

Commands:
  list [URL] [--json]                    the page's tool groups, frames and tools
  call [URL] TOOL [JSON | k=v | k:=json] call one tool, print its result as JSON
  eval [URL] EXPR                        evaluate JavaScript in the page
  run SCRIPT.lua [URL] [-- ARGS]         run a Lua script with dt, browser, page set
  screenshot [URL] OUT.png               write a PNG of the page (or of one element)
  browser start|stop|status              keep one headless Chromium in the background
  help [COMMAND]                         help on a command

]],
  list = [[
Usage: devtools-tools list [URL] [--json] [options]

Discovers the tools of the page (in every frame) and prints, per group, its
frame and its tools with their descriptions and a one-line summary of their
arguments ([name: type] is optional, {...} takes any object).
  --json   a JSON array of groups:
           [{"name", "description", "frame": {"url"},
             "tools": [{"name", "description", "inputSchema"}]}]

]],
  call = [[
Usage: devtools-tools call [URL] TOOL [JSON | key=value | key:=json ...] [options]

Calls one tool and prints its result as indented JSON.
  JSON        a JSON object of arguments, e.g. '{"a": 1, "b": 2}'
  key=value   one argument, typed by the tool's schema (its type, enum,
              const, and anyOf/oneOf/allOf branches): a number when the
              schema says number or integer, true/false when it says
              boolean, null when it says null; otherwise a string
  key:=json   one argument as raw JSON, e.g. ids:='[1,2]' or on:=true
  --compact   print the result on one line

]],
  eval = [[
Usage: devtools-tools eval [URL] EXPR [--compact] [options]

Evaluates a JavaScript expression in the page's main frame (a promise is
awaited) and prints its value as indented JSON.

]],
  run = [[
Usage: devtools-tools run SCRIPT.lua [URL] [options] [-- ARGS...]

Runs a Lua script with the globals `dt` (require "devtools_tools"), `browser`
and `page` set, and `arg` holding SCRIPT.lua as arg[0] and ARGS after it.
The page is a new page at URL, the --tab page, or a blank page. Modules next
to the script can be required. A dt.Error the script raises ends the command
with status 1 (its code on stderr), any other error too (with its traceback).
The script is not bound by --timeout as a whole: it is the default timeout of
each call the script makes.

]],
  screenshot = [[
Usage: devtools-tools screenshot [URL] OUT.png [--full-page | --element SELECTOR] [options]

Writes a PNG of the page's viewport to OUT.png.
  --full-page         the whole document, not only the viewport
  --element SELECTOR  only the first element matching the CSS selector

]],
  browser = [[
Usage: devtools-tools browser start|stop|status [options]

  start    start a headless Chromium in the background (debugging port on
           127.0.0.1 only, a fresh profile) and print its endpoint; later
           commands use it, so pages they open stay open for --tab
  stop     stop it and remove its profile
  status   print its pid and endpoint; status 1 when none runs
The endpoint and pid are kept in $XDG_STATE_HOME/devtools-tools/browser.json
(default ~/.local/state), readable by you only.
  --headful, --chromium PATH as for other commands (start only)

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
