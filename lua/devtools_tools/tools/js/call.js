// devtools_tools: one tool call with element arguments. spec is
// [groupIndex, toolIndex, name, args, group] (group: see runtime.js findTool);
// element arguments follow as remote objects. Answers the runtime's JSON
// envelope text; never throws for a tool's failure.
function callDevtoolsTool(spec, ...els) {
  const rt = window.__devtools_tools;
  if (!rt) return '{"error":{"kind":"stale","message":"the tools of this document are gone"}}';
  // Arguments holding a key "__proto__" come as JSON text (see calls.lua).
  const args = typeof spec[3] === 'string' ? JSON.parse(spec[3]) : spec[3];
  return rt.call(spec[0], spec[1], spec[2], args, els, spec[4]);
}
