-- devtools_tools.cli.definition: the command line, defined once - every
-- command and option, with the texts that describe them - as gh defines
-- its commands. Three things are made of it:
--
--   `devtools-tools help` and `--help`   cli/help.lua, at run time;
--   the options cli/argv.lua parses     (which take a value, the short ones);
--   the man page doc/devtools-tools.1 and the reference in doc/cli.md
--                                       tools/docs.lua (`make docs`), which
--                                       spec/unit/docs_spec.lua keeps current.
--
-- Data only: it must never start, read or decide anything (cli/argv.lua
-- parses, cli/commands.lua acts).
--
-- Texts are written as --help prints them: lines of at most 80 columns,
-- wrapped by hand. In them, `x` is code (--help prints the backticks, the
-- man page sets it in bold, doc/cli.md makes it a code span); an option
-- (--name) is set in bold and a word of METAVARS in italics in the man
-- page; a line indented by two spaces or more is a literal line (a command
-- to type). `man` fields say more, for the man page and doc/cli.md only:
-- what --help has no room for. A fact is stated in one of them, not both.
--
-- An option: {opt = "--name", arg = "VALUE" (it takes a value), short =
-- "-q", list = true (it may be given again), comma = true (each value a
-- comma-separated list), text, man}; a form of the positional words: {word = "key=value",
-- text, man}. `text` continues at the list's column; a line indented
-- further keeps the indent.

local M = {}

M.PROG = "devtools-tools"

-- What the command line is, on the man page's NAME line.
M.SUMMARY = "list, call and script the developer tools a web page exposes"

-- The words that stand for what the user gives (italics in the man page).
M.METAVARS = {
  "URL", "TOOL", "EXPR", "OUT", "SELECTOR", "ID", "TEXT", "ARGS", "ENDPOINT", "PATH", "SECONDS",
  "CSS", "WxH", "WIDTHxHEIGHT", "COMMAND", "PID", "N", "CODE", "PORT", "SCRIPT.lua",
  "FILE", "POINTER",
}

M.USAGE = "[options] COMMAND [options] ..."

M.ABOUT = [[
Lists, calls and scripts the developer tools a web page exposes (through the
`devtoolstooldiscovery` event, and WebMCP with --webmcp), over the Chrome
DevTools Protocol.
]]

M.ABOUT_MAN = [[
The tools are JavaScript functions a page registers by answering a
`devtoolstooldiscovery` event on `window`, in any of its frames.
devtools-tools drives Chromium and finds them in every frame of a page. It
is the command line of the Lua library `devtools_tools`.

Results are printed on standard output as JSON; progress goes to standard
error, only when it is a terminal.
]]

-- The commands, in the order help lists them. `brief` and `summary` make
-- the table of `devtools-tools help`; `usage` the Usage lines (after the
-- program's name; a line may go on on the next, after a newline); `body`
-- what follows them, in order: texts and lists of options and forms (a
-- list's `column` is where their texts start; a list may be shared by
-- several commands).
-- The recording options of run, repl, call and mcp (a shared list).
local RECORD = { column = 22,
  { opt = "--record", arg = "FILE", text = [[
write each tool call (tool, arguments, result or error,
time) and each navigation to FILE, a trace for replay
and export (JSON Lines; a value over 1 MiB is kept as
its SHA-256 and size)]] },
  { opt = "--record-observe", text = [[
also a summary of each console message and request
(method, URL, status: never headers)]] },
  { opt = "--record-bodies", text = [[with --record-observe, the requests' bodies too]] },
}

M.COMMANDS = {
  {
    name = "list",
    brief = "list [URL] [--json]",
    summary = "the page's tool groups, frames and tools",
    usage = { "list [URL] [--json] [options]" },
    body = {
      [[
Discovers the tools of the page (in every frame) and prints, per group, its
frame and its tools with the first sentence of their descriptions and a
one-line summary of their arguments ([name: type] is optional, {...} takes
any object, an enum shows its values or 'one of N: "a", "b", ...'). On a
terminal (or with COLUMNS set) each line is cut to its width; in a pipe or
a file, lines are whole.
]],
      { column = 11,
        { opt = "--json", text = [[
a JSON array of groups:
[{"name", "kind", "description", "frame": {"url"},
  "tools": [{"name", "description", "inputSchema", "annotations"}]}]
kind: "devtools" (devtoolstooldiscovery) or "webmcp"]],
          man = [[
With --compact, on one line (without --json, --compact changes nothing).]] },
      },
    },
    man = [[
An enum shows its values when it has at most 6 short ones. Groups the page
declared wrongly are left out and named on standard error.
]],
  },
  {
    name = "call",
    brief = "call [URL] TOOL [JSON | k=v | k:=json]",
    summary = "call one tool, print its result as JSON",
    usage = { "call [URL] TOOL [JSON | key=value | key:=json ...] [--record FILE] [options]" },
    body = {
      [[
Calls one tool and prints its result as indented JSON (`call [URL] TOOL
--help`: that tool's description and schema, as describe prints them).
]],
      { column = 14,
        { word = "JSON", text = [[a JSON object of arguments, e.g. '{"a": 1, "b": 2}']],
          man = [[Only as the first argument after TOOL; a pair replaces its member of the same name.]] },
        { word = "key=value", text = [[
one argument, typed by the tool's schema (its type, enum,
const, and anyOf/oneOf/allOf branches): a number when the
schema says number or integer, true/false when it says
boolean, null when it says null; otherwise a string]],
          man = [[A number is decimal (12, -1.5, 2e3; 0x10 stays a string).]] },
        { word = "key:=json", text = [[one argument as raw JSON, e.g. ids:='[1,2]' or on:=true]] },
        { opt = "--compact", text = [[print the result on one line]] },
      },
      RECORD,
    },
    man = [[
The arguments are checked against the tool's schema before the call: each
failing path is printed on a line of its own, with the value received and
the allowed values (a property that is not allowed: its name). The result
has its keys sorted; a DOM element a tool returned is the string
"Element(div#cart)".

The first word is taken for the URL when it has a scheme, or when a tool's
name follows it and it reads as a host (127.0.0.1:8080, localhost/app,
example.com).
]],
  },
  {
    name = "describe",
    brief = "describe [URL] TOOL [--json]",
    summary = "one tool: its description and whole schema",
    usage = { "describe [URL] TOOL [--json] [options]" },
    body = {
      [[
Prints one tool: its group, kind and frame, its whole description, each
argument (type, whether required, description, every allowed value,
default) and its whole input schema as JSON.
]],
      { column = 11,
        { opt = "--json", text = [[
{"name", "kind", "description", "inputSchema", "annotations",
 "group": {"name", "kind", "frame": {"url"}}}]] },
      },
    },
  },
  {
    name = "eval",
    brief = "eval [URL] EXPR",
    summary = "evaluate JavaScript in the page",
    usage = { "eval [URL] EXPR [--compact] [options]" },
    body = {
      [[
Evaluates a JavaScript expression in the page's main frame (a promise is
awaited) and prints its value as indented JSON, as JSON.stringify writes
it; a DOM element in it is shown as a tool's result shows one:
"Element(div#cart)". `await` may stand at the top level, as in the
DevTools console ('const r = await fetch("/api"); r.status'); then a
promise the code ends with is not awaited.
]],
    },
    man = [[
With --compact, the value is printed on one line.
]],
  },
  {
    name = "run",
    brief = "run SCRIPT.lua [URL] [ARGS]",
    summary = "run a Lua script with dt, browser, page set",
    usage = { "run SCRIPT.lua [URL] [ARGS...] [--record FILE] [options] [-- ARGS...]" },
    body = {
      [[
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
      RECORD,
    },
  },
  {
    name = "screenshot",
    brief = "screenshot [URL] OUT.png|.jpg|.webp",
    summary = "an image of the page (or of one element)",
    usage = { "screenshot [URL] OUT.png [--full-page | --element SELECTOR] [options]" },
    body = {
      [[
Writes an image of the page's viewport to OUT, in the format its extension
names: .png, .jpg or .jpeg (JPEG), .webp; another is a usage error.
]],
      { column = 22,
        { opt = "--full-page", text = [[the whole document, not only the viewport]] },
        { opt = "--element", arg = "SELECTOR", text = [[only the first element matching the CSS selector]] },
      },
    },
  },
  {
    name = "tabs",
    brief = "tabs [close ID|TEXT] [--json]",
    summary = "the open pages of a running browser",
    usage = { "tabs [--json] [options]", "tabs close ID|TEXT [options]" },
    body = {
      [[
Lists the open pages of the background browser (or of the --connect one):
ID (its start; --tab and tabs close take it), URL and title, the most
recently used first (the one a command without URL or --tab uses).
]],
      { column = 17,
        { word = "close", arg = "ID|TEXT", text = [[
closes the page whose ID is or starts with ID, or the one
page whose URL or title contains TEXT (several: an error)]] },
        { opt = "--json", text = [=[[{"id", "url", "title"}]]=] },
      },
    },
  },
  {
    name = "browser",
    brief = "browser start|stop|status",
    summary = "keep one headless Chromium in the background",
    usage = { "browser start|stop|status [--port PORT] [options]" },
    body = {
      { column = 11,
        { word = "start", text = [[
start a headless Chromium in the background (a fresh profile)
and print its endpoint; later commands use it, so pages they
open stay open for --tab. It is private: it opens no port, and
a small holder serves it on a Unix socket to you only (its
endpoint, unix:PATH, is what --connect, mcp --connect and
Neovim's :DevTools connect take)]] },
        { word = "stop", text = [[stop it and remove its profile]] },
        { word = "status", text = [[
print "running pid PID ENDPOINT" (exit status 0), or "not
running: ..." and why (exit status 3)]],
          man = [[
The reasons: none recorded, one that is gone, a start under way or one
killed on its way.]] },
        { opt = "--port", arg = "PORT", text = [[
(start) open Chromium's own debugging port on 127.0.0.1
instead (0: any free one), for tools that need a port
(chrome-devtools-mcp --browserUrl, Playwright): then every
local user can drive the browser, read its pages and cookies
and run code in them]] },
        { word = "--headful, --chromium PATH, --webmcp", text = [[as for other commands (start only)]] },
      },
      [[
The endpoint and pid are kept in $XDG_STATE_HOME/devtools-tools/browser.json
(default ~/.local/state). That directory must be yours and 0700, and each
file in it yours and 0600: anything else is refused, not used.
]],
    },
    man = [[
While it runs, the other commands use it instead of launching a browser of
their own: a URL uses the tab that shows it (or the one opened for it
before), and --tab finds a tab again.
]],
  },
  {
    name = "mcp",
    brief = "mcp [URL] [--allow-eval]",
    summary = "serve the page's tools to AI agents (MCP, stdio)",
    usage = {
      "mcp [URL] [--no-webmcp] [--allow-eval] [--trust-page]\n[--allow-navigate HOST,...] [--record FILE] [options]",
    },
    body = {
      [[
An MCP server (Model Context Protocol) on stdin and stdout, for AI agents:
every tool the page exposes (in every frame, and its WebMCP tools) is an MCP
tool of its own, beside devtools.navigate, devtools.screenshot,
devtools.console and devtools.network. When the page's tools change (a
listener comes or goes, a navigation, frames, WebMCP), the list is made
again once the page has settled and notifications/tools/list_changed is
sent; devtools.navigate answers once the new page has settled. stdout
carries MCP messages only; logs go to stderr (DEVTOOLS_TOOLS_DEBUG=mcp logs
every message).
It answers at once, before the browser and page are up: a page that does not
answer yet (an app started after its agent) is tried again, with pauses up
to 5 s, until it does; meanwhile tools/list has the built-ins and a call
says what was tried, and list_changed is sent when the page is up. A page
tool's description ends with "(Provided by the page at ORIGIN.)": the page
wrote it, not the user. When stdin ends, or on SIGTERM, SIGHUP or SIGINT,
it closes what it opened (the browser it launched and its profile, a tab
of --new-tab) and exits (0; 128 + the signal's number), within 2 s.
]],
      { column = 18,
        { opt = "--no-webmcp", text = [[
launch Chromium without WebMCP (on by default where the
server launches it; a running browser has it or not)]],
          man = [[A running browser that lacks it is said once on stderr.]] },
        { opt = "--allow-eval", text = [[also serve devtools.evaluate (JavaScript in the page)]] },
        { opt = "--trust-page", text = [[
the page is yours: its descriptions go without the line
that says the page wrote them]],
          man = [[
That line is the boundary against prompt injection from a page you do not
control; drop it only for your own.]] },
        { opt = "--allow-navigate", arg = "HOST,...", list = true, comma = true, text = [[
let devtools.navigate load these hosts too
(it refuses link-local, cloud metadata and private network
addresses other than loopback, but the page's own host)]],
          man = [[
Names or addresses, in every spelling a browser reads (2852039166 is
169.254.169.254); the option may be given again.]] },
        { opt = "--timeout", arg = "SECONDS", text = [[each attempt to open the page, and each tool call (30)]] },
      },
      [[
Example (Claude Code):
  claude mcp add shop -- devtools-tools mcp http://127.0.0.1:8080/
]],
      RECORD,
      [[
An agent's session recorded so becomes a check (replay) or a script (export).
]],
    },
    man = [[
Messages are newline-delimited JSON-RPC 2.0. A tool keeps its own name when
MCP takes it (`^[A-Za-z0-9_.-]{1,64}$`, unique, not `devtools.*`); otherwise
it is named from it, an underscore and 8 hex digits of a hash of its kind,
group, frame and name, the same at every discovery. Its description and
input schema are the page's (a schema's root is served with `"type":
"object"` where it lacks one, as MCP clients require). Arguments that fail
the schema and tools that throw answer results with `isError` whose text
names each error's path, the value received and the allowed values; results
are JSON text and `structuredContent`. `notifications/cancelled` cancels a
call (no answer is sent); a `progressToken` gets `notifications/progress`
every half second.

It speaks MCP 2025-11-25, and 2025-06-18, 2025-03-26 and 2024-11-05 to
clients that ask for them, and the stateless 2026-07-28 (`server/discover`,
the version in each request's `_meta`).

Until the page is up, the pauses between attempts double from 0.25 to 5
seconds, a first `tools/list` waits for the first attempt, and retries are
said on stderr, one line at most every 10 seconds. A URL that can never
work (malformed, or of a scheme other than http, https, file, about and
data) is a usage error at once. A message that is not UTF-8 is answered
-32700 (with its id when that can be read), ids are written back as the
client wrote them, requests other than `ping` before `initialize` and a
second `initialize` are refused, batches are taken under 2025-03-26 only, a
lone surrogate a page wrote goes out as U+FFFD, and past 64 MiB of answers
not yet read (or 32 requests under way) no more requests are read until
the client reads. A page tool's `_meta` and its results' carry
`devtools-tools/provenance` too.

SIGKILL cannot be caught: a launched browser is then ended by its reaper
within a second and its profile removed, but a tab opened in a running
browser stays. A browser that dies is reported on stderr, and calls then
answer `isError` results that say so.
]],
  },
  {
    name = "repl",
    brief = "repl [URL]",
    summary = "Lua in front of the page: its tools as functions",
    usage = { "repl [URL] [--record FILE] [options]" },
    body = {
      [[
Lua 5.4 in front of the page: `page`, `browser` and `dt` are set, and each
tool of the page is a function of its name (getCacheStats{}, or
tools["odd name"]{} for a name that is no Lua identifier). A bare expression
prints its value as call prints results; a chunk that is not complete waits
for more lines, as lua -i does; an error shows as the command line shows
one, and the REPL goes on. When the page's tools change, a line says which
came and which went, once the page has settled (as list waits for it). On a
terminal: line editing, history (kept in
$XDG_STATE_HOME/devtools-tools/repl_history), Tab completes tool names,
argument keys and enum values from the tools' schemas, page: and dt.
methods; Ctrl-C stops the running call (at the prompt it clears the line),
Ctrl-D on an empty line exits and closes what the REPL opened. Without a
terminal it reads lines and prints plain text. Commands: .tools,
.describe NAME, .record FILE, .stop, .help, .exit.
]],
      RECORD,
    },
  },
  {
    name = "replay",
    brief = "replay FILE [URL] [--ignore POINTER]",
    summary = "make a recorded trace's calls again, compare",
    usage = { "replay FILE [URL] [--ignore POINTER]... [--update] [--json] [options]" },
    body = {
      [[
Makes the calls of a trace (--record, dt.record) again, in order, on a fresh
page at URL (the recorded one without it), with the navigations recorded
between them, and compares each outcome with the recorded one. Each
difference is a line: a JSON pointer with the recorded and the new value
("call 3 getCacheStats: /misses: 9 -> 17"), or a missing tool, arguments
the tool's schema refuses now, an error where there was a result (or the
reverse). Then a summary line. Exit status 0 without differences, 1 with
(or an error), 2 for a trace that cannot be read (cut short, of a newer
format) or a usage error. A recorded navigation to the recorded URL's origin
goes to URL's origin. --timeout is each call's (default 30).
]],
      { column = 20,
        { opt = "--ignore", arg = "POINTER", list = true, text = [[
leave out differences at or beneath a JSON pointer of a
result ("/ts"; "*" is any one segment: "/items/*/id");
may be repeated]] },
        { opt = "--update", text = [[write the new outcomes into FILE (exit status 0)]] },
        { opt = "--json", text = [[
{"calls", "navigations", "differing_calls", "differences":
[{"call", "tool", "kind", "path", "recorded", "new",
"message", "error"}]}]] },
      },
    },
  },
  {
    name = "export",
    brief = "export FILE --lua",
    summary = "a trace as a Lua recipe for `run`",
    usage = { "export FILE --lua" },
    body = {
      [[
Prints a Lua recipe that makes the trace's calls in the same order, for
`devtools-tools run RECIPE.lua [URL]`: each result is printed as a line of
JSON, a call recorded as failing is made in a pcall, each navigation is
made again, and the page is taken to the recorded URL when run gives none.
An agent's MCP session or a REPL session becomes a script.
]],
      { column = 10,
        { opt = "--lua", text = [[print the recipe as Lua (the one format today)]] },
      },
    },
  },
  {
    name = "help",
    builtin = true,            -- answered by cli/init.lua; no help page of its own
    brief = "help [COMMAND]",
    summary = "help on a command",
    usage = { "help [COMMAND]" },
    man = [[
Prints the help on COMMAND (without one, the list of commands) and the
common options, on standard output, as --help does.
]],
  },
}

-- The options every command shares (they may also come before it).
M.COMMON = {
  title = "Browser and page (shared by every command; options may also come before it):",
  column = 22,
  options = {
    { opt = "--connect", arg = "ENDPOINT", text = [[
use a running browser (http://127.0.0.1:PORT, ws://...,
or unix:PATH of a private background browser)]],
      man = [[Hosts that are not loopback are refused.]] },
    { opt = "--tab", arg = "TEXT", text = [[
use the open page whose ID starts with TEXT or whose URL
or title contains it (the most recently used of several)]],
      man = [[A note on stderr names the one taken and the others; with a URL, the page navigates there.]] },
    { opt = "--new-tab", text = [[open URL in a new tab even if one shows it already]] },
    { opt = "--wait-for", arg = "TOOL", text = [[
first wait until the page offers TOOL (for tools a page
registers later than it settles, see below)]],
      man = [[
It discovers again as the page's documents change. Past the timeout, the
timeout error names the tools the page has, and says when WebMCP is off
while the page's scripts use document.modelContext (the tool's name among
them, or not).]] },
    { opt = "--wait-for-selector", arg = "CSS", text = [[first wait until an element matches CSS]] },
    { opt = "--viewport", arg = "WxH", text = [[
the page's viewport in CSS pixels (default 1280x800 for
a page opened in a headless browser)]],
      man = [[The page's window is resized to give it, in any browser.]] },
    { opt = "--no-settle", text = [[look at a page right after its load event]] },
    { opt = "--headful", text = [[launch a visible Chromium instead of a headless one]] },
    { opt = "--webmcp", text = [[launch it with WebMCP on (the page's WebMCP tools too)]],
      man = [[
Chromium's `--enable-features=WebMCP`: the page's WebMCP tools are listed and
called beside its other tools.]] },
    { opt = "--chromium", arg = "PATH", text = [[the Chromium binary to launch]],
      man = [[
Default: $DEVTOOLS_TOOLS_CHROME, then /usr/lib/chromium/chromium, then
chromium, chromium-browser, google-chrome or google-chrome-stable on PATH.]] },
    { opt = "--timeout", arg = "SECONDS", text = [[deadline of the whole command (default 30)]] },
    { opt = "--quiet", short = "-q", text = [[no progress or notes on stderr]] },
    { opt = "--verbose", text = [[
an error whole: a page's long message, every schema
error, the JavaScript stack]],
      man = [[
Without it, a message longer than 2000 bytes shows its start and "... (N
more bytes)", at most 20 schema errors are listed, and a last line says
that --verbose shows the rest.]] },
    { opt = "--debug", text = [[log the DevTools protocol messages on stderr]],
      man = [[
One line each, cut at 400 bytes, control characters and bidirectional
overrides written as \u escapes.]] },
    { opt = "--help", short = "-h", text = [[this help]] },
    { opt = "--version", text = [[print the version and exit]],
      man = [[The versions of the command, of the library and of Lua.]] },
  },
  -- after the options: which browser and page a command uses
  browser = [[
Without --connect, a browser started by `devtools-tools browser start` is
used when there is one; otherwise a headless Chromium is launched for the
command and closed after it. In a running browser a URL uses the open tab
that shows it (opened for it before), else a new one; without URL or --tab,
the page used last. A URL without scheme is taken as http:// (127.0.0.1:8080).
]],
  browser_man = [[
The tab that shows a URL is found by comparing the URLs with the scheme and
host in lower case, without a default port, the fragment only when the URL
has one; before a new tab, the blank tab the background browser starts
with is used. With a browser the command launches, the page is a blank
one. The command line records the tabs it used, and when, in tabs.json
beside the background browser's record.
]],
  -- when a page has settled
  settle = [[
list, call, describe and screenshot look at a page they opened once it has
settled: its tools unchanged and no request started or answered for 0.1 s,
none in flight but those older than 1 s, no frame still loading, and its
script idle (an idle callback ran); at most 3 s after its load event.
]],
  settle_man = [[
A change of its tools is a devtoolstooldiscovery listener, a frame, a
navigation or WebMCP; a loaded machine is slow to run what a page does with
an answer, hence the idle callback. --wait-for and --wait-for-selector wait
for more, --no-settle for less.

list, call, eval and screenshot need a URL unless --tab, --connect,
--headful or --chromium is given or a background browser is recorded
(`devtools-tools browser start`); otherwise its absence is a usage error.
run never needs one.
]],
}

-- Exit statuses: `short` makes the line of --help, `man` the man page's
-- entry. `command`: the status of that command only.
M.EXIT = {
  { code = 0, short = "success", man = [[Success.]] },
  { code = 1, short = [[an error (stderr: "devtools-tools: CODE: message")]], man = [[
An error, printed as "devtools-tools: CODE: message" where CODE is one of
the library's error codes (tool_not_found, invalid_params, tool_error,
js_error, timeout, launch_failed, connect_failed, disconnected, ...). Text
a page wrote is cleaned (control characters and bidirectional overrides
become ?) and bounded (see --verbose). Also when standard output cannot
take the result (a full disk, a closed descriptor). An error raised in a
run script ends with a line naming the script's line it was raised
through.]] },
  { code = 2, short = "a usage error", man = [[
A usage error (an unknown command or option, a missing or empty option
value, arguments that do not parse, a --connect value that is not an
endpoint). An unknown command is answered with the one it most likely
meant ("unknown command lst; did you mean list?").]] },
  { code = 3, command = "browser status", short = "3 when none runs",
    man = [[browser status only: no background browser runs.]] },
  { code = 128, short = [[+ the signal's number after SIGINT (130), SIGTERM (143) or SIGHUP (129) (the
browser it launched, a tab it was opening, closed first)]],
    man = [[
Plus the signal's number: 130 after Ctrl-C (SIGINT), 143 after SIGTERM,
129 after SIGHUP. What the command opened is closed first (a launched
browser, a tab it opened in a running browser).]] },
}

-- The environment (man page and doc/cli.md only).
M.ENVIRONMENT = {
  { "NO_COLOR", [[When set, no colours on standard error.]] },
  { "COLUMNS", [[
The width tables are cut to (default: the terminal's, when standard output
is one; none otherwise).]] },
  { "DEVTOOLS_TOOLS_CHROME", [[The Chromium binary to launch.]] },
  { "XDG_STATE_HOME", [[
Where the background browser's state file is kept
(devtools-tools/browser.json, mode 0600, and the tabs the command line
used, devtools-tools/tabs.json; default ~/.local/state; a relative path is
ignored).]] },
  { "DEVTOOLS_TOOLS_DEBUG", [[
cdp logs the DevTools protocol messages, as --debug does; mcp logs each
message the MCP server receives and sends (both: cdp,mcp).]] },
  { "DEVTOOLS_TOOLS_BUILD", [[
Run from a source checkout (not an installed copy): the directory, relative
to the checkout, holding the compiled core module (default build/lua5.4
under Lua 5.4, and so on; build/luajit under LuaJIT).]] },
}

-- Examples (man page and doc/cli.md only): {title, lines}; a title
-- introduces the lines after it.
M.EXAMPLES = {
  { nil, [[
devtools-tools list http://127.0.0.1:8080/
devtools-tools list 127.0.0.1:8080
devtools-tools list http://127.0.0.1:8080/ --webmcp --json | jq -r '.[] | .kind + " " + .name'
devtools-tools call http://127.0.0.1:8080/ queryDatabaseTable --help
devtools-tools call http://127.0.0.1:8080/ queryDatabaseTable tableName=orders limit=3
devtools-tools call http://127.0.0.1:8080/ getGlobalState '{"path": "cart.items"}' --compact
devtools-tools browser start
devtools-tools call http://127.0.0.1:8080/ addToCart productId=3 qty=2
devtools-tools eval --tab 8080 'document.title'
devtools-tools screenshot http://127.0.0.1:8080/ shop.jpg --viewport 1440x900
devtools-tools tabs
devtools-tools browser stop
devtools-tools list http://127.0.0.1:8080/ --json | jq -r '.[].tools[].name'
]] },
  { [[
The MCP server, for Claude Code, Codex (~/.codex/config.toml), Neovim's
codecompanion.nvim and mcphub.nvim (~/.config/mcphub/servers.json):
]], [[
claude mcp add shop -- devtools-tools mcp http://127.0.0.1:8080/

[mcp_servers.shop]
command = "devtools-tools"
args = ["mcp", "http://127.0.0.1:8080/"]

require("codecompanion").setup({ mcp = { servers = {
  shop = { cmd = { "devtools-tools", "mcp", "http://127.0.0.1:8080/" } } } } })

{ "mcpServers": { "shop": { "command": "devtools-tools",
    "args": ["mcp", "http://127.0.0.1:8080/"] } } }
]] },
  { [[
Beside chrome-devtools-mcp or Playwright MCP, on one browser and one page
(they click, type and take snapshots; this one serves the page's tools):
]], [[
chromium --headless --remote-debugging-port=9222 --user-data-dir=/tmp/shared &
npx chrome-devtools-mcp@latest --browserUrl http://127.0.0.1:9222
npx @playwright/mcp@latest --cdp-endpoint http://127.0.0.1:9222
devtools-tools mcp --connect http://127.0.0.1:9222 http://127.0.0.1:8080/
]] },
}

M.SEE_ALSO = { "chromium(1)", "jq(1)" }

-- command(name) -> the definition of that command, or nil
local by_name = {}
for _, c in ipairs(M.COMMANDS) do by_name[c.name] = c end
function M.command(name)
  return rawget(by_name, name)
end

-- The commands cli/commands.lua runs (help is answered before them).
M.NAMES = {}
for _, c in ipairs(M.COMMANDS) do
  if not c.builtin then M.NAMES[#M.NAMES + 1] = c.name end
end

-- lists(command) -> the lists of options and forms in its body
function M.lists(c)
  local out = {}
  for _, part in ipairs(c.body or {}) do
    if type(part) == "table" then out[#out + 1] = part end
  end
  return out
end

-- Every option of the command line, once each: {name (without --) ->
-- option}; options of several commands share their name and kind.
function M.options()
  local out = {}
  local function add(o)
    if o.opt then out[o.opt:sub(3)] = out[o.opt:sub(3)] or o end
  end
  for _, o in ipairs(M.COMMON.options) do add(o) end
  for _, c in ipairs(M.COMMANDS) do
    for _, list in ipairs(M.lists(c)) do
      for _, o in ipairs(list) do add(o) end
    end
  end
  return out
end

return M
