---@meta devtools_tools
-- LuaLS annotations of devtools_tools' public API: what editors complete
-- and check. This file is never loaded: it lives outside lua/, so neither
-- require() nor Neovim's runtimepath loader can reach it. Point LuaLS at
-- the plugin directory (workspace.library) to use it.
-- It is also the source of the API reference in doc/*.md: `make docs`
-- writes the reference there from these annotations (tools/docs.lua), and
-- spec/unit/docs_spec.lua checks that what is written is current and that
-- every public function of the library is annotated here. Errors and
-- timeouts: doc/errors.md.

---@alias devtools_tools.ErrorCode
---| "bad_argument"   # a call was given arguments of the wrong kind, or an option it does not know
---| "launch_failed"  # Chromium is missing or died at start-up (the message names what was tried, with its output)
---| "connect_failed" # a refused connection, a non-loopback host without `allow_remote`, a failed handshake (an HTTP status such as 401 is in the message and `details.status`), a TLS certificate that does not verify, a WebDriver session that cannot be made, a page's host name that does not resolve (`navigate`, `new_page`: "the host name x was not found (DNS: net::ERR_NAME_NOT_RESOLVED)"; other errors of a navigation are `protocol_error`)
---| "tool_not_found" # `Tool <name> not found`; `details.available` lists the names the page has, `details.nearest` the closest one, `details.skipped` the groups and frames discovery left out and why
---| "invalid_params" # `Invalid parameters for tool <name>: ...`: the arguments failed the tool's inputSchema, nothing was sent; `details` lists one SchemaError per failure
---| "tool_error"     # the tool threw or rejected; `details.message`, `details.stack`
---| "js_error"       # an `evaluate` expression threw; `details.stack`
---| "timeout"        # the call did not finish within its timeout (the message says which part ran out; a WebDriver browser's `close`: its session's DELETE got no answer, so the session may still be alive)
---| "stale"          # a Tool or Element from a document that is gone (nothing ran; `page:call` looks for the tool again, once)
---| "navigated"      # the frame's document went away during the call: the tool may have run, and is never run a second time
---| "disconnected"   # the browser or page went away (a renderer crash: "the page crashed")
---| "protocol_error" # the browser answered with an error or something unreadable (a websocket frame declaring more than 2^40 bytes ends the connection: later calls are `disconnected`); a WebDriver endpoint's session id no URL can carry, or a CDP endpoint of its that is no URL
---| "too_large"      # a message over the transport's limit (256 MiB), a screenshot over 2^28 pixels, a response body over `history.body` (the browser did not keep it)
---| "cancelled"      # the task's wait was cancelled (`task:cancel()`)

---Every failure the library raises; `tostring(err)` reads well.
---@class devtools_tools.Error
---@field code devtools_tools.ErrorCode
---@field message string
---@field tool? string the tool's name, where one is involved
---@field details? any e.g. a list of devtools_tools.SchemaError for invalid_params

---One problem found by schema validation.
---@class devtools_tools.SchemaError
---@field path string JSON pointer into the arguments, "" for the whole value
---@field keyword string the JSON Schema keyword that failed
---@field message string
---@field schema_path? string
---@field received? string the failing value rendered short (additionalProperties: the extra property's)
---@field allowed? string for enum and const: what was allowed, rendered short
---@field property? string required: the missing property; additionalProperties: the extra one

---Options of every call that may wait.
---@class devtools_tools.CallOpts
---@field timeout? number seconds, one deadline for all the call's work; default: the browser's timeout

---Options of dt.launch.
---@class devtools_tools.LaunchOpts
---@field executable? string Chromium binary (default: $DEVTOOLS_TOOLS_CHROME, then /usr/lib/chromium/chromium, then chromium, chromium-browser, google-chrome, google-chrome-stable on PATH); "" is a bad_argument
---@field headless? boolean default true
---@field args? string[] extra command-line flags; an --enable-features= or --disable-features= among them is merged into the one dt.launch passes, as Chromium reads only the last
---@field user_data_dir? string default: a fresh temporary profile, removed on close; "" is a bad_argument
---@field timeout? number default deadline of every call, seconds (30)
---@field webmcp? boolean turn Chromium's WebMCP on (--enable-features=WebMCP, merged with args'); default false
---@field history? devtools_tools.History
---@field detached? boolean a Chromium that outlives us, on a debugging port on 127.0.0.1 (see dt.stop_detached)
---@field port? integer detached: its debugging port (default 0: any free one)
---@field socket? string detached: no port; a holder serves it on a Unix socket at this absolute path, to this user only
---@field on_record? fun(record: devtools_tools.DetachedRecord) detached: called at each step of the start ({starting = true, profile, executable} before Chromium starts, then with its pid, then the whole record)

---What a detached launch records: enough for another process to end it.
---@class devtools_tools.DetachedRecord
---@field profile string its user data directory
---@field executable string
---@field headless boolean
---@field webmcp boolean launched with WebMCP on
---@field pid? integer once it started
---@field endpoint? string ws://127.0.0.1:PORT/devtools/browser/<id>, or unix:PATH (private), once it answers
---@field port? integer
---@field socket? string the holder's Unix socket (private); pid is then the holder's
---@field starting? boolean true until it answers

---Options of dt.connect (and dt.webdriver, for both its endpoints).
---@class devtools_tools.ConnectOpts
---@field allow_remote? boolean accept a non-loopback host
---@field timeout? number seconds (30)
---@field headers? table<string, string> name = value, sent on every request and the websocket handshake
---@field ca_file? string PEM file of the CA that signed the server's certificate
---@field insecure? boolean accept any certificate (no chain or name check)
---@field history? devtools_tools.History

---What each page keeps of its console and network records, and what the
---browser keeps of response bodies for response_body.
---@class devtools_tools.History
---@field console? integer console records kept (1000)
---@field requests? integer request records kept (1000)
---@field bytes? integer bytes of page text each of the two rings holds at most (16 MiB); the oldest records go first, the newest stays whatever its size
---@field bodies? integer bytes of the page's response bodies the browser keeps in all (128 MiB, or body if that is more)
---@field body? integer bytes of one response's body the browser keeps at most (64 MiB; larger: too_large); over bodies is a bad_argument

---@class devtools_tools.Location
---@field url? string
---@field line? integer 0-based
---@field column? integer 0-based
---@field function? string

---A console message, an uncaught exception or a browser log entry.
---@class devtools_tools.ConsoleMessage
---@field seq integer position, for opts.since
---@field level "debug"|"info"|"warning"|"error"
---@field type string console method, "exception", "entry" (browser log), "dialog", "listener_error"
---@field source? string
---@field text string
---@field args any[] the arguments as JSON values
---@field location? devtools_tools.Location
---@field frame? string frame id
---@field exception? {message: string, stack?: string}
---@field dialog? devtools_tools.Dialog set for type "dialog"
---@field time number core.now() seconds when it was recorded

---A JavaScript dialog; answered as it opens (doc/api.md, "Events and dialogs").
---@class devtools_tools.Dialog
---@field type string "alert", "confirm", "prompt" or "beforeunload"
---@field message string
---@field default_prompt? string
---@field url? string
---@field frame? string frame id
---@field answer? boolean|string what it was answered with (set once the listeners ran)

---A network request of the page.
---@class devtools_tools.Request
---@field seq integer position, for opts.since
---@field id string CDP request id
---@field method string
---@field url string
---@field type? string resource type (Document, Fetch, Script, ...)
---@field status? integer
---@field status_text? string
---@field mime_type? string
---@field failed? string the browser's reason, e.g. net::ERR_CONNECTION_REFUSED
---@field canceled? boolean a failed request that was cancelled (e.g. its document went away)
---@field dropped? boolean fell out of the history while in flight: it will never finish
---@field frame? string frame id
---@field initiator {type?: string, url?: string, line?: integer}
---@field timing {start?: number, response?: number, finished?: number, duration?: number} seconds
---@field sizes {transferred: integer, body: integer} bytes
---@field done boolean

---@class devtools_tools.Observed
---@field requests devtools_tools.Request[]
---@field console devtools_tools.ConsoleMessage[]
---@field since integer
---@field complete boolean false when the page did not answer after fn by the deadline (busy)

---@class devtools_tools.ScreenshotOpts
---@field path? string also write the image there
---@field full_page? boolean the whole document, not the viewport
---@field element? string|devtools_tools.Element a CSS selector or an Element
---@field base64? boolean return the image as base64 text (as Chromium sent it), not bytes
---@field format? "png"|"jpeg"|"webp" default "png"
---@field quality? integer 0-100, jpeg and webp only
---@field timeout? number

---@class devtools_tools.WebDriverInfo
---@field url string the WebDriver endpoint
---@field session_id string
---@field capabilities table what the endpoint answered
---@field cdp string the CDP endpoint attached to

---@class devtools_tools.CallManyOpts: devtools_tools.CallOpts
---@field errors? "raise"|"return" "return": failed entries hold their devtools_tools.Error

---@class devtools_tools.Frame
---@field id string
---@field url string
---@field origin string

---@class devtools_tools.PageInfo
---@field id string target id, for Browser:attach
---@field url string
---@field title string
---@field attached boolean

---@class devtools_tools.Version
---@field product string
---@field protocolVersion string
---@field revision string
---@field userAgent string
---@field jsVersion string

---A running browser, launched or connected.
---@class devtools_tools.Browser
---@field executable? string the binary a launched browser runs
---@field timeout number default deadline of every call, seconds
---@field webdriver? devtools_tools.WebDriverInfo set by dt.webdriver
---@field detached? devtools_tools.DetachedRecord set by dt.launch{detached = true}
local Browser = {}
---True while the browser may still answer; false and why once it cannot. Never waits.
---@return boolean alive
---@return string|nil why
function Browser:alive() end
---@param opts? devtools_tools.CallOpts
---@return devtools_tools.Version
function Browser:version(opts) end
---Targets of type page.
---@param opts? devtools_tools.CallOpts
---@return devtools_tools.PageInfo[]
function Browser:pages(opts) end
---A new page, navigated to url (its load awaited).
---@param url? string
---@param opts? devtools_tools.CallOpts
---@return devtools_tools.Page
function Browser:new_page(url, opts) end
---@param target_id string
---@param opts? devtools_tools.CallOpts
---@return devtools_tools.Page
function Browser:attach(target_id, opts) end
---"page": fn(page) for each Page the browser holds now, at once, and for each it
---attaches later (new_page before it navigates, attach); fn must not wait.
---@param event "page"
---@param fn fun(page: devtools_tools.Page)
---@return fun(): boolean remove
function Browser:on(event, fn) end
---A launched browser exits (killed when opts.timeout, 5 s, has passed; its temporary profile
---removed); a connected one is disconnected. Idempotent. A WebDriver session's browser then
---raises (timeout, connect_failed) when the session's DELETE got no answer: it may still be alive.
---@param opts? {timeout?: number}
function Browser:close(opts) end
---A raw CDP command on the browser target; a CDP error is a protocol_error.
---@param method string
---@param params? table
---@param opts? devtools_tools.CallOpts
---@return table
function Browser:cdp(method, params, opts) end

---One page target.
---@class devtools_tools.Page
---@field url string
---@field target_id string the id Browser:pages() lists and Browser:attach takes
local Page = {}
---Navigates and waits for the new document's load event.
---@param url string
---@param opts? devtools_tools.CallOpts
---@return devtools_tools.Page
function Page:navigate(url, opts) end
---@param opts? {timeout?: number, ignore_cache?: boolean}
---@return devtools_tools.Page
function Page:reload(opts) end
---Runs JavaScript in the main frame; promises are awaited; the value comes back as JSON data.
---opts.context: an execution context id (default: the main frame's); opts.session: the CDP
---session id to send it on (default: the page's). opts.elements: DOM elements in the value
---come back as Elements (by value they are {}), the value written as JSON.stringify writes it.
---opts.repl: read as the DevTools console reads it (top-level await, `let` declared again);
---a promise the code ends with is then not awaited.
---@param expression string
---@param opts? {timeout?: number, context?: integer, session?: string, elements?: boolean, repl?: boolean}
---@return any
function Page:evaluate(expression, opts) end
---Fresh discovery in every frame.
---@param opts? devtools_tools.CallOpts
---@return devtools_tools.ToolGroup[] groups
---@return string[] warnings
function Page:discover(opts) end
---Cached discovery while no frame changed document.
---@param opts? devtools_tools.CallOpts
---@return devtools_tools.ToolGroup[] groups
---@return string[] warnings
function Page:tool_groups(opts) end
---The first tool of that name: the main frame first, then frames in document order.
---@param name string
---@param opts? devtools_tools.CallOpts
---@return devtools_tools.Tool|nil
function Page:tool(name, opts) end
---The tool once the page offers it (discovers again as its tools change and
---as its activity quietens); raises `timeout` when the deadline passes first,
---with details.webmcp = {enabled, uses, named} (what its scripts say of WebMCP).
---@param name string
---@param opts? devtools_tools.CallOpts
---@return devtools_tools.Tool
function Page:wait_for_tool(name, opts) end
---Waits until the page is ready to be looked at (tools and network quiet,
---no frame loading, its main thread caught up); false when opts.max (3 s)
---or opts.timeout came first.
---@param opts? {timeout?: number, quiet?: number, max?: number, long?: number}
---@return boolean
function Page:settle(opts) end
---True once the CSS selector matches an element of the main frame's
---document; raises `timeout`, or `js_error` for a selector the page cannot read.
---@param css string
---@param opts? devtools_tools.CallOpts
---@return boolean
function Page:wait_for_selector(css, opts) end
---Makes the viewport width x height CSS pixels (through the window's bounds).
---@param width integer
---@param height integer
---@param opts? devtools_tools.CallOpts
function Page:set_viewport(width, height, opts) end
---A tool by name, or a Tool of this page (one whose call did not run - its
---document gone, the page's tools changed - is called once more as the tool
---the page holds now under its name).
---@param name string|devtools_tools.Tool
---@param args? table named arguments (a JSON object)
---@param opts? devtools_tools.CallOpts
---@return any
function Page:call(name, args, opts) end
---Pipelined calls: every request is written before the first reply is read.
---@param list {[1]: string|devtools_tools.Tool, [2]: table?}[]
---@param opts? devtools_tools.CallManyOpts
---@return table results in order, with field n
function Page:call_many(list, opts) end
---Closes the tab; calls other tasks still wait for on the page fail at once with disconnected.
---@param opts? devtools_tools.CallOpts
function Page:close(opts) end
---@param opts? {since?: integer|table, level?: string|string[], timeout?: number}
---@return devtools_tools.ConsoleMessage[]
function Page:console_messages(opts) end
---@param opts? {since?: integer|table, url?: string|fun(url: string): boolean, timeout?: number}
---@return devtools_tools.Request[]
function Page:network_requests(opts) end
---The body of a finished request (waits for it to finish).
---@param request devtools_tools.Request
---@param opts? devtools_tools.CallOpts
---@return string body
---@return string|nil mime_type
function Page:response_body(request, opts) end
---A position in the page's records: what comes after has a greater seq.
---@return integer
function Page:mark() end
---Runs fn; returns what happened during it, then fn's results.
---@param fn function
---@param opts? {timeout?: number, settle?: number}
---@return devtools_tools.Observed
---@return any ...
function Page:observe(fn, opts) end
---Calls fn for each event of that kind (doc/api.md, "Events and dialogs").
---"call": fn(devtools_tools.CallRecord) as each tool call of the page
---(page:call, tool:call, each entry of call_many) ends.
---@param event "console"|"request"|"response"|"navigated"|"crashed"|"dialog"|"tools_changed"|"call"
---@param fn function gets the record or event table; must not wait; a "dialog" listener may return the answer
---@return fun(): boolean remove
function Page:on(event, fn) end

---What page:on("call") is told.
---@class devtools_tools.CallRecord
---@field name string the name called
---@field tool? devtools_tools.Tool nil when no tool of that name was found
---@field args any
---@field ok boolean
---@field result any
---@field error? devtools_tools.Error
---@field ms number from the call's start
---@field batch? integer the call_many it was an entry of (one number per call_many of the page)
---@field index? integer its entry's position there
---@param event string a CDP event, e.g. "Network.requestWillBeSent"
---@param fn fun(params: table, session_id: string)
---@return fun(): boolean remove
function Page:on_cdp(event, fn) end
---A raw CDP command on the page's session; a CDP error is a protocol_error.
---@param method string
---@param params? table
---@param opts? devtools_tools.CallOpts
---@return table
function Page:cdp(method, params, opts) end
---An image (PNG, JPEG or WebP) of the viewport, the whole page or one element.
---@param opts? devtools_tools.ScreenshotOpts
---@return string image
function Page:screenshot(opts) end
---Waits until pred() holds (asked at once and after each message the page's
---connection reads, so page:on listeners hear its events meanwhile), or the
---timeout (false). Raises disconnected when the page or browser goes away.
---@param pred fun(): boolean
---@param opts? devtools_tools.CallOpts
---@return boolean
function Page:wait_until(pred, opts) end

---The tools one listener registered in one frame.
---@class devtools_tools.ToolGroup
---@field name string
---@field kind "devtools"|"webmcp"
---@field description? string
---@field tools devtools_tools.Tool[]
---@field frame devtools_tools.Frame
local ToolGroup = {}
---@param name string
---@return devtools_tools.Tool|nil
function ToolGroup:tool(name) end

---A tool of a page; call it like a function: tool(args).
---@class devtools_tools.Tool
---@field name string
---@field description string
---@field input_schema table JSON Schema draft-07
---@field group devtools_tools.ToolGroup
---@field kind "devtools"|"webmcp"
---@field annotations? table WebMCP annotations (readOnly, ...)
---@field backend_node_id? integer a declarative WebMCP form's node
---@overload fun(args?: table, opts?: devtools_tools.CallOpts): any
local Tool = {}
---@param args? table
---@param opts? devtools_tools.CallOpts
---@return any
function Tool:call(args, opts) end
---Checks args against inputSchema; nothing is sent.
---@param args? table
---@return boolean ok
---@return devtools_tools.Error|nil err an invalid_params error
function Tool:validate(args) end

---A DOM element a tool returned; pass it back as an argument.
---@class devtools_tools.Element
---@field backend_node_id integer
---@field description string e.g. "div#cart"
---@field text string the start of its text content (at most 80 characters)
---@field frame devtools_tools.Frame

---A function running as a coroutine on the loop of dt.use_loop.
---@class devtools_tools.Task
---@field done boolean
local Task = {}
---What the task's function returned, or raises its error. Inside another
---task it suspends that task; outside, it runs the loop until the task ends.
---@param timeout? number seconds (then a `timeout` error; the task goes on)
---@return any
function Task:wait(timeout) end
---Makes the task's pending wait, and every later one, raise `cancelled`.
---@return boolean running true if the task had not ended
function Task:cancel() end

---@class devtools_tools.base.json
---@field null lightuserdata JSON null (equal to cjson.null)
---@field array_mt table the metatable of decoded arrays
---@field object_mt table the metatable of decoded empty objects
local json = {}
---NaN and infinities become null, as JSON.stringify writes them; finite = true refuses them;
---replace_surrogates = true writes a lone surrogate as U+FFFD (not "\ud800", which strict readers refuse).
---@param value any
---@param opts? {max_depth?: integer, finite?: boolean, replace_surrogates?: boolean}
---@return string
function json.encode(value, opts) end
---nil when s is UTF-8 (no overlong form, no surrogate, nothing past U+10FFFF),
---else the byte offset of the first byte that is not.
---@param s string
---@return integer|nil
function json.utf8_error(s) end
---@param text string
---@param opts? {max_depth?: integer}
---@return any
function json.decode(text, opts) end
---@generic T: table
---@param t? T
---@return T
function json.array(t) end
---What the encoder makes of a table: "empty" is a plain {} (sent as {});
---nil for a value that is not a table.
---@param t any
---@return "array"|"object"|"empty"|nil
function json.kind(t) end

---@class devtools_tools
---@field _VERSION string
---@field null lightuserdata JSON null
---@field array_mt table
---@field json devtools_tools.base.json
---@field Error table the metatable of devtools_tools.Error
---@field Task table the metatable of devtools_tools.Task
local dt = {}
---Starts headless Chromium over --remote-debugging-pipe.
---@param opts? devtools_tools.LaunchOpts
---@return devtools_tools.Browser
function dt.launch(opts) end
---Attaches to a running browser: http(s)://host:port, ws(s)://host:port/devtools/browser/<id>,
---or unix:/path of a private background browser (served by this user only).
---@param url string
---@param opts? devtools_tools.ConnectOpts
---@return devtools_tools.Browser
function dt.connect(url, opts) end
---A WebDriver session's browser (Selenium Grid 4, chromedriver), attached over CDP;
---closing it deletes the session. opts.timeout defaults to 60.
---@param url string http(s)://host:port[/path] of the WebDriver endpoint
---@param capabilities? table sent as capabilities.alwaysMatch (default: headless Chrome)
---@param opts? devtools_tools.ConnectOpts
---@return devtools_tools.Browser
function dt.webdriver(url, capabilities, opts) end
---True for a dt.Error (err.code, err.message, err.tool, err.details).
---@param x any
---@return boolean
function dt.is_error(x) end
---True for an Element a tool returned.
---@param x any
---@return boolean
function dt.is_element(x) end
---Marks t to be sent as a JSON array (dt.array{} is sent as []).
---@generic T: table
---@param t? T
---@return T
function dt.array(t) end
---The loop new tasks run on: a luv-compatible module (vim.uv, vim.loop,
---require "luv"), a driver table of one's own (doc/api.md, "Plugging in
---another loop"), or nil for the built-in poll loop again.
---@param loop? table
---@return table driver
function dt.use_loop(loop) end
---Runs fn(...) as a task, at once until its first wait; library calls inside
---it yield to the loop instead of blocking. on_done runs on the loop after it ends (never inside async).
---A task:wait() from a loop callback (on_done, a luv timer) that would have to turn
---the loop raises bad_argument: Neovim cannot wait there.
---@param fn fun(...): any
---@param on_done? fun(ok: boolean, result_or_err: any, ...)
---@param ... any arguments of fn
---@return devtools_tools.Task
function dt.async(fn, on_done, ...) end
---Waits for several tasks; their results in order (the first failure is raised once all ended).
---@param tasks devtools_tools.Task[]
---@param timeout? number seconds
---@return any[]
function dt.wait_all(tasks, timeout) end
---Suspends the running task for seconds (blocks outside a task, reading the open browsers'
---connections meanwhile: a page's new frames go on).
---@param seconds number
function dt.sleep(seconds) end
---The task running now, or nil outside tasks.
---@return devtools_tools.Task|nil
function dt.current_task() end
---"cdp" writes every CDP message to stderr; false or nil stops.
---@param what? "cdp"|false
function dt.debug(what) end
---Seconds on the monotonic clock every deadline of the library is on.
---@return number
function dt.now() end
---Seconds from now to an absolute deadline (on dt.now()'s clock), never below 0.
---@param deadline number
---@return number
function dt.left(deadline) end
---A dt.Error, not raised.
---@param code devtools_tools.ErrorCode
---@param message string
---@param fields? {tool?: string, details?: any}
---@return devtools_tools.Error
function dt.new_error(code, message, fields) end
---Whether descriptor fd (0, 1 or 2) is a terminal.
---@param fd integer
---@return boolean
function dt.isatty(fd) end
---The size of the terminal descriptor fd (0, 1 or 2) is: columns, rows; nil when it is none.
---@param fd integer
---@return integer|nil columns
---@return integer|nil rows
function dt.term_size(fd) end
---The one default timeout, in seconds (30).
dt.TIMEOUT = 30
---The one cleaner of page text: has(s), hidden(cp), clean(s, rep, bad?).
---@type {has: fun(s: string): boolean, hidden: fun(cp: integer): boolean, clean: fun(s: string, rep: fun(cp: integer): string|nil, bad?: fun(b: integer): string|nil): string}
dt.controls = nil
---True when DEVTOOLS_TOOLS_DEBUG names that log ("cdp", "mcp").
---@param what string
---@return boolean
function dt.debugging(what) end
---Called first in a module's main chunk: keeps LuaJIT's trace compiler out of that module's
---functions on the builds that miscompile pairs(); a no-op elsewhere.
function dt.nojit() end
---Ends a detached browser: its process group, any process still naming its profile; removes
---the profile (only one of ours). opts.timeout: 5 s.
---@param record devtools_tools.DetachedRecord
---@param opts? {timeout?: number}
function dt.stop_detached(record, opts) end
---One detached browser shared by several processes, recorded in the file at path; without
---path, the one `devtools-tools browser start` records (dt.state_dir() .. "/browser.json").
---Private (a Unix socket beside the record) unless started with a port; its
---directory and files are checked for owner and mode before use.
---@param path? string
---@return devtools_tools.Background
function dt.background(path) end
---Where the front ends keep their state: $XDG_STATE_HOME/devtools-tools, else
---~/.local/state/devtools-tools; nil with neither XDG_STATE_HOME nor HOME set.
---@return string|nil
function dt.state_dir() end
---The driver new tasks run on (the built-in poll loop unless dt.use_loop chose
---another): watch/modify/unwatch/timer/cancel, and step on the built-in loop.
---@return table driver
function dt.loop() end
---The bytes fd holds now (at most max and 64 KiB; "" when none yet); never
---waits nor changes the descriptor's flags. nil, why at the end of the input.
---@param fd integer
---@param max? integer
---@return string|nil bytes
---@return string|nil why
function dt.fd_read(fd, max) end
---Writes what fits now of s from byte from (default 1): how many bytes went
---(0: none fit). nil, why when the reader is gone (no SIGPIPE).
---@param fd integer
---@param s string
---@param from? integer
---@return integer|nil n
---@return string|nil why
function dt.fd_write(fd, s, from) end

---Records the tool calls of a page (or of every page of a browser), its
---navigations, and with opts.observe console and network summaries (never
---headers; bodies with opts.bodies), to a trace: JSON Lines, each line
---written whole as it happens. dest: a file name (created or emptied) or a
---handle with write (and flush), which stays yours.
---@param target devtools_tools.Page|devtools_tools.Browser
---@param dest string|file*|{write: function}
---@param opts? {limit?: integer, observe?: boolean, bodies?: boolean, timeout?: number}
---@return devtools_tools.Recorder
function dt.record(target, dest, opts) end
---The terminal fd (0, 1 or 2) gives each key as it is typed (no echo;
---Ctrl-C, Ctrl-Z as bytes); mode:restore() puts it back.
---@param fd integer
---@return {restore: fun(self)}|nil mode
---@return string|nil why
function dt.term_raw(fd) end
---A file of a front end's private state written whole, mode 0600, its
---directories made (0700).
---@param path string absolute
---@param text string
---@return true|nil ok
---@return string|nil why
function dt.write_state(path, text) end

---@class devtools_tools.Recorder
---@field calls integer calls written so far
---@field path? string
local Recorder = {}
---Ends the trace (an "end" line); true, or nil and why a write failed.
---@return true|nil
---@return string|nil why
function Recorder:stop() end

---A trace as read: header {format, version, url, browser, time, limit, ...},
---events (each {type = "call"|"navigate"|"console"|"network"|"end", ...}), calls.
---@class devtools_tools.Trace
---@field header table
---@field events table[]
---@field calls table[] {call, tool, kind, group, origin, args|args_digest, result|result_digest|error, ms, batch?, index?}
---@field name string

---A difference a replay found: kind "value" (path, recorded, new), "digest",
---"missing_tool", "refused" (message, error), "error_instead" (error),
---"result_instead" (recorded, new), "error_changed" (recorded, error),
---"unreplayable" (message), "navigation" (url, error).
---@class devtools_tools.Difference
---@field call? integer
---@field tool? string
---@field kind string
---@field path? string a JSON pointer
---@field recorded any
---@field new any
---@field message? string
---@field error? devtools_tools.Error

---@class devtools_tools.ReplayReport
---@field calls integer
---@field navigations integer
---@field differences devtools_tools.Difference[]
---@field differing_calls integer
---@field updated devtools_tools.Trace the trace with the new outcomes (dt.trace.write)

---@class devtools_tools.trace
---@field ABSENT table stands for "no value there" in a difference
---@field FORMAT string "devtools-tools-trace"
---@field VERSION integer the newest format version read
---@field LIMIT integer 1 MiB: a value whose JSON is longer is kept as {sha256, bytes}
local trace = {}
---Reads a trace; a file cut in the middle of a line, of another format or of a
---newer version raises bad_argument naming the file and the line.
---@param path string
---@return devtools_tools.Trace
function trace.read(path) end
---@param text string
---@param name? string
---@return devtools_tools.Trace
function trace.parse(text, name) end
---Writes a trace whole, in place of path at once.
---@param t devtools_tools.Trace
---@param path string
function trace.write(t, path) end
---Makes the trace's calls again on page (navigated to opts.url or the recorded
---URL first, unless opts.navigate is false), with its navigations, comparing
---each outcome. opts.ignore: JSON pointers ("*" one segment); opts.timeout:
---each call's; opts.on_difference(d): told as each is found; opts.tool_wait:
---seconds a call waits for a tool the page does not have yet (2).
---@param page devtools_tools.Page
---@param t devtools_tools.Trace
---@param opts? {ignore?: string[], url?: string, timeout?: number, on_difference?: fun(d: devtools_tools.Difference), tool_wait?: number, navigate?: boolean}
---@return devtools_tools.ReplayReport
function trace.replay(page, t, opts) end
---A Lua recipe making the trace's calls in order, for `devtools-tools run`.
---@param t devtools_tools.Trace
---@return string
function trace.lua(t) end
---The differences of two JSON values, as {path, recorded, new}.
---@param recorded any
---@param new any
---@param ignore? function from trace.ignorer
---@return {path: string, recorded: any, new: any}[]
function trace.diff(recorded, new, ignore) end
---@param pointers string[]
---@return function|nil
function trace.ignorer(pointers) end
dt.trace = trace

---For a program that owns its process (never the library's own doing): from now on
---each of names is caught once (a second one of a kind has its default action).
---opts.raise: the main thread's Lua code also raises "interrupted!", as for Ctrl-C.
---@param names ("TERM"|"HUP"|"INT")[]
---@param opts? {raise?: boolean}
---@return devtools_tools.Signals
function dt.catch_signals(names, opts) end

---@class devtools_tools.Signals
local Signals = {}
---A descriptor that is readable once a signal was caught (watch it on dt.loop()).
---@return integer
function Signals:fd() end
---The oldest caught signal not taken yet.
---@return "TERM"|"HUP"|"INT"|nil
function Signals:take() end
---The dispositions from before.
function Signals:release() end

---@class devtools_tools.Background
---@field path string the record file
local Background = {}
---"none", "starting", "running", "gone" (and the record), or "unreadable", nil, why.
---@return string state
---@return devtools_tools.DetachedRecord|nil record
---@return string|nil why
function Background:status() end
---The running browser (started false), or a new one after ending a stale record.
---port: Chromium's own TCP port on 127.0.0.1 (0: any) instead of the private socket.
---@param opts? {executable?: string, headless?: boolean, args?: string[], webmcp?: boolean, port?: integer, timeout?: number}
---@return devtools_tools.DetachedRecord record
---@return boolean started
function Background:start(opts) end
---Ends the recorded browser, removes its profile and the record; nil when there was none.
---@param opts? {timeout?: number}
---@return devtools_tools.DetachedRecord|nil
function Background:stop(opts) end
---The running browser, connected (connect_failed with details.state when none runs).
---@param opts? {timeout?: number, history?: devtools_tools.History}
---@return devtools_tools.Browser
function Background:connect(opts) end
---A front end's own file beside the record (checked; nil when there is none).
---@param name string
---@return string|nil
function Background:read(name) end
---Writes a front end's own file beside the record, whole and 0600; false when
---there is no state directory yet.
---@param name string
---@param text string
---@return boolean
function Background:write(name, text) end

---@class devtools_tools.schema
local schema = {}
---The check: check(value, deadline?) (deadline in core.now() seconds;
---past it, `timeout`).
---@param s table|boolean a JSON Schema draft-07
---@param opts? {loader?: table|fun(uri: string): table, deadline?: number}
---@return fun(value: any, deadline?: number): boolean, devtools_tools.SchemaError[]?
function schema.compile(s, opts) end
---Compiles once per schema table (without opts) and checks value.
---@param s table|boolean
---@param value any
---@param opts? {loader?: table|fun(uri: string): table, deadline?: number}
---@return boolean ok
---@return devtools_tools.SchemaError[]? errors
function schema.validate(s, value, opts) end
---value, or a copy in which every empty plain table the schema says is an
---array carries dt.array_mt (sent as []); the caller's tables are never changed.
---@param check fun(value: any, deadline?: number): boolean, devtools_tools.SchemaError[]?
---@param value any
---@param deadline? number core.now() seconds
---@return any
function schema.shape(check, value, deadline) end
---One line per error (20 at most, each cut at 300 characters): path, message, what was received.
---@param errs devtools_tools.SchemaError[]
---@param sep? string
---@return string
function schema.format_errors(errs, sep) end
---The node a local $ref names in the schema root, read as the validator
---reads pointers (ajv 6's); nil when there is none.
---@param root table|boolean
---@param ref string
---@return any
function schema.local_target(root, ref) end
---True for an Element (accepted where a schema accepts an object).
---@param x any
---@return boolean
function schema.is_element(x) end

---Options of the Neovim plugin; all optional.
---@class devtools_tools.nvim.Options
---@field executable? string Chromium binary for :DevTools launch
---@field headless? boolean default true
---@field timeout? number seconds, default 30
---@field connect? string endpoint of :DevTools connect without an argument
---@field keymaps? false|{open_tool?: string|false} tool list mappings (default <CR>)

---@class devtools_tools.nvim.Status
---@field busy boolean a command is running
---@field doing? string what it is doing
---@field url? string the page's URL
---@field browser? string

---The Neovim plugin, require("devtools_tools.nvim").
---@class devtools_tools.nvim
local nvim = {}
---Records the options (the library loads on the first command); lazy.nvim's
---`opts` arrive here as require(main).setup(opts).
---@param opts? devtools_tools.nvim.Options
---@return devtools_tools.nvim
function nvim.setup(opts) end
---Runs ":DevTools <line>".
---@param line string
function nvim.command(line) end
---@param arglead string
---@param cmdline string
---@return string[]
function nvim.complete(arglead, cmdline) end
---@return devtools_tools.nvim.Status
function nvim.status() end
---@return devtools_tools.nvim.Options
function nvim.options() end
---The argument buffer of a tool: a JSON skeleton of its inputSchema, its enums'
---allowed values in `//` lines above; given: arguments to show in it.
---@param tool devtools_tools.Tool
---@param given? table
---@return integer|nil bufnr
function nvim.open_args(tool, given) end
---Offers the tools of groups (default: the last discovery) with vim.ui.select;
---the one chosen opens its argument buffer (:DevTools tools).
---@param groups? devtools_tools.ToolGroup[]
function nvim.pick(groups) end
---A statusline component: "" with no browser, "DevTools: <host>" with one,
---"DevTools: <what it does>..." while a command runs. Literal text (use it
---in %{...}); never waits, never raises.
---@return string
function nvim.statusline() end
---@param value any
---@param title? string
---@return integer bufnr
function nvim.show_result(value, title) end
---Opens the argument buffer of the tool on the cursor's line of the tool list
---(keymaps.open_tool, <CR> by default, maps it); a line without a tool only warns.
---@return integer|nil bufnr
function nvim.open_tool_under_cursor() end
---A failure as the plugin reports it: "devtools_tools: <code>: <message>"; an
---invalid_params error adds one line per failure (path: message (keyword));
---anything that is not a devtools_tools.Error is reported as an internal error.
---@param err any
---@return string
function nvim.format_error(err) end

---The MCP server (require "devtools_tools.mcp"): a page's tools served to AI agents.
---@class devtools_tools.mcp
---@field VERSIONS string[] the protocol versions served, newest first
local mcp = {}

---What the MCP server is served on: a table with these methods (stdio's is mcp.stdio()).
---@class devtools_tools.McpTransport
---@field start fun(self, handlers: {message: fun(text: string), close: fun(why: string), too_long?: fun(limit: integer)}) handlers.message(text) for each message received, handlers.close(why) once when the peer is gone
---@field send fun(self, text: string): boolean? one JSON-RPC message; never waits
---@field close? fun(self)
---@field pending? fun(self): integer bytes not written yet

---Options of mcp.serve.
---@class devtools_tools.McpOpts
---@field page devtools_tools.Page the page whose tools are served
---@field browser? devtools_tools.Browser reported on when it dies
---@field allow_eval? boolean serve devtools.evaluate
---@field webmcp? boolean the browser has WebMCP on (said in the instructions)
---@field timeout? number seconds each call may take (30)
---@field log? fun(line: string)|false warnings; default stderr
---@field debug? boolean log every message (default: DEVTOOLS_TOOLS_DEBUG holds "mcp")
---@field on_close? fun(why: string) the transport closed and the server stopped

---@class devtools_tools.McpServer
local McpServer = {}
---Stops: requests under way cancelled, subscriptions ended, transport closed.
---@param why? string
function McpServer:close(why) end
---Turns dt.loop() until the server stopped (its input ended).
function McpServer:run() end
---The MCP names of the page tools served now.
---@return string[]
function McpServer:tools() end

---Serves the page's tools on the transport; returns at once.
---@param transport devtools_tools.McpTransport
---@param opts devtools_tools.McpOpts
---@return devtools_tools.McpServer
function mcp.serve(transport, opts) end
---The stdio transport: newline-delimited messages on fds 0 and 1.
---@param opts? {input?: integer, output?: integer, loop?: table} defaults: input 0, output 1, loop dt.loop()
---@return devtools_tools.McpTransport
function mcp.stdio(opts) end
---Whether the server can be started on url (http and https with a host as a browser reads one,
---file:, about:, data:): one that can never work is refused at start, not retried.
---@param url string
---@return true|nil ok
---@return string? why
function mcp.check_url(url) end
---Whether host is one allow_navigate takes.
---@param host string
---@return true|nil ok
---@return string? why
function mcp.check_host(host) end

return dt
