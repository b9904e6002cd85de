// devtools_tools: one tool call without element arguments, sent as a
// Runtime.evaluate expression: the Lua side writes this function, then
// "(groupIndex, toolIndex, name, args)" with the arguments as JSON
// literals. Identical calls are identical sources, which V8 compiles once;
// evaluating is cheaper for Chromium than Runtime.callFunctionOn with its
// remote-object arguments. Answers the runtime's JSON envelope text.
(gi, ti, name, args) => {
  const rt = window.__devtools_tools;
  if (!rt) return '{"error":{"kind":"stale","message":"the tools of this document are gone"}}';
  return rt.call(gi, ti, name, args, []);
}
