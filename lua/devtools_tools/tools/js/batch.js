// devtools_tools: many tool calls in one round trip (call_many). Each spec
// is [groupIndex, toolIndex, name, args, firstElement, elementCount, group];
// limitMs bounds the wait for calls that do not settle, until (or null)
// is the same bound as a time of the page's clock (runtime.js batch);
// element arguments follow as remote objects. Answers a JSON array of
// envelopes.
function batchDevtoolsTools(specs, limitMs, until, ...els) {
  const rt = window.__devtools_tools;
  if (!rt) return '{"error":{"kind":"stale","message":"the tools of this document are gone"}}';
  return rt.batch(specs, els, limitMs, until);
}
