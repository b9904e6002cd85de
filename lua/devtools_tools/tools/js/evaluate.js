// devtools_tools: the value of page:evaluate{elements = true}, `this` (the
// expression's value, an object), as JSON text in which each DOM element
// is a marker under `key`, {key: its index, description, text}, described
// as a tool's result describes one (runtime.js, installed here if the
// document has none yet). Answers [text, element 0, element 1, ...]; Lua
// asks for the elements' node ids and makes them Element objects.
// JSON.stringify's rules apply (toJSON, undefined dropped); a cycle throws.
function (key, maxDepth, installRuntime) {
  const rt = window.__devtools_tools || installRuntime(maxDepth);
  const els = [];
  const text = JSON.stringify(this, function (k, v) {
    if (typeof Element !== 'undefined' && v instanceof Element) {
      const d = rt.describe(v);
      const m = Object.create(null);
      m[key] = els.length;
      m.description = d[0];
      m.text = d[1];
      els.push(v);
      return m;
    }
    return v;
  });
  return [text === undefined ? 'null' : text].concat(els);
}
