// devtools_tools: one tool call without element arguments, sent as a
// Runtime.evaluate expression. The Lua side sends the text before ARGS,
// then "groupIndex, toolIndex, name, args, null, group" as JSON
// literals (group: its name, or [name, the tool's description]: see
// runtime.js findTool), then the text after ARGS. A call with new
// arguments is a new source, which V8 compiles:
// so the expression holds no function of its own, only what must be
// compiled (measured on page:call: 13-15 % less time than with the call
// wrapped in an arrow function when the arguments differ from call to
// call, the same when they repeat; Runtime.callFunctionOn compiles its
// arguments too).
// Answers the runtime's JSON envelope text, or undefined when the document
// has no runtime (a new document, or the page removed it): Lua reads that
// as stale. Nothing more than the call, for the same reason.
window.__devtools_tools?.call(ARGS)
