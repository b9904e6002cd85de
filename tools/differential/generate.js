// tools/differential/generate.js: writes the generated pages of a
// differential run and its plan (what each driver calls on each page).
//
//   node generate.js SEED FIRST COUNT OUTDIR
//
// Page i is made from (SEED, i) alone, so a page is made again without the
// others. Each page has several `devtoolstooldiscovery` listeners that
// answer at once, in a microtask or after setTimeout(0); groups with random
// names and descriptions; schemas written the ways applications write them
// (schemas.js) and sometimes dressed as application code keeps them
// (shared constants, Vue's reactive proxies, frozen, getters, symbol keys,
// prototype-less objects, ...); results of every kind (results.js); now and
// then an invalid group or tool, a listener that throws or answers twice,
// an iframe with groups of its own, an element passed back as an argument,
// or a page that gives arrays a toJSON as Prototype.js 1.6 did.
//
// Writes OUTDIR/p<i>.html (and p<i>-child.html) and one JSON line per page
// to OUTDIR/plan.jsonl: {index, file, calls: [{tool, params}], tags,
// toolTags}; a params value "\u0000prev" stands for the previous call's
// result (an element), which each driver puts there in its own form.
//
// What it must never do: depend on anything but the seed and the index
// (no clock, no Math.random, no iteration order of a Map that is not ours).
'use strict';
const fs = require('fs');
const path = require('path');
const { rng, cacheRequire } = require('./lib');
const S = require('./schemas');
const { genExecute } = require('./results');

const req = cacheRequire();
const { z } = req('zod');
const z3 = req('zod/v3').z;
const { zodToJsonSchema } = req('zod-to-json-schema');

const SPEC = Symbol('spec');      // how a node is written as page code (see emit)

// ---- writing an object graph as JavaScript ----------------------------------
// Objects reached twice become one constant; a cycle is closed by an
// assignment after both ends exist. A node's SPEC says how the page makes
// it: getters ({getters: [key]}), a getter that throws (throwGetter: key),
// no prototype (nullProto), TypeBox's symbol keys (typebox), undefined
// members (undefinedKey).
function emit(root, prefix) {
  const refs = new Map();
  const onStack = new Set();
  const back = new Set();          // nodes a cycle comes back to, and those it leaves from
  (function count(v, parent) {
    if (v === null || typeof v !== 'object') return;
    refs.set(v, (refs.get(v) || 0) + 1);
    if (onStack.has(v)) { back.add(v); back.add(parent); return; }
    if (refs.get(v) > 1) return;
    onStack.add(v);
    for (const k of Object.keys(v)) count(v[k], v);
    onStack.delete(v);
  })(root, null);
  const decls = [];
  const fixups = [];
  const names = new Map();
  let counter = 0;
  const building = new Set();
  const expr = (v) => {
    if (v === undefined) return 'undefined';
    if (v === null || typeof v !== 'object') {
      if (typeof v === 'number' && Object.is(v, -0)) return '-0';
      return JSON.stringify(v);
    }
    if (names.has(v)) return names.get(v);
    const named = refs.get(v) > 1 || back.has(v);
    if (named) names.set(v, prefix + 's' + (++counter));
    building.add(v);
    const text = literal(v);
    building.delete(v);
    if (!named) return text;
    decls.push('const ' + names.get(v) + ' = ' + text + ';');
    return names.get(v);
  };
  const literal = (v) => {
    const spec = v[SPEC] || {};
    if (Array.isArray(v)) {
      return '[' + v.map((x, i) => {
        if (x !== null && typeof x === 'object' && building.has(x)) { fixups.push([v, String(i), x]); return 'null'; }
        return expr(x);
      }).join(', ') + ']';
    }
    const parts = [];
    for (const k of Object.keys(v)) {
      const x = v[k];
      const key = JSON.stringify(k);
      if (x !== null && typeof x === 'object' && building.has(x)) { fixups.push([v, k, x]); continue; }
      if (spec.getters && spec.getters.includes(k)) parts.push('get ' + key + '() { return ' + expr(x) + '; }');
      else if (k === '__proto__') parts.push('["__proto__"]: ' + expr(x));
      else parts.push(key + ': ' + expr(x));
    }
    if (spec.throwGetter) parts.push('get ' + JSON.stringify(spec.throwGetter) + '() { throw new Error("DIFF-GETTER in a schema"); }');
    if (spec.undefinedKey) parts.push(JSON.stringify(spec.undefinedKey) + ': undefined');
    if (spec.typebox) parts.push('[Symbol.for("TypeBox.Kind")]: ' + JSON.stringify(spec.typebox));
    let text = '{ ' + parts.join(', ') + ' }';
    if (spec.nullProto) text = 'Object.assign(Object.create(null), ' + text + ')';
    if (spec.builder) text = 'new SchemaNode(' + text + ')';
    return text;
  };
  const top = expr(root);
  for (const [obj, key, target] of fixups) {
    decls.push(names.get(obj) + '[' + JSON.stringify(key) + '] = ' + names.get(target) + ';');
  }
  return { decls, top };
}

// ---- dressing a schema as application code keeps it ------------------------
function eachNode(v, f, seen = new Set()) {
  if (v === null || typeof v !== 'object' || seen.has(v)) return;
  seen.add(v);
  f(v);
  for (const k of Object.keys(v)) eachNode(v[k], f, seen);
}

// One object for every pair of JSON-equal sub-objects (what a dereferencing
// tool or a shared constant gives).
function shareEqual(root) {
  const first = new Map();
  const walk = (v) => {
    if (v === null || typeof v !== 'object') return v;
    for (const k of Object.keys(v)) {
      const x = v[k];
      if (x !== null && typeof x === 'object') {
        const key = JSON.stringify(x);
        if (key.length > 12 && first.has(key)) v[k] = first.get(key);
        else { first.set(key, x); walk(x); }
      }
    }
    return v;
  };
  return walk(root);
}

function dress(schema, how, r) {
  switch (how) {
    case 'shareEqual': return shareEqual(schema);
    case 'getters':
      eachNode(schema, (n) => {
        if (!Array.isArray(n) && r.chance(0.3)) {
          const keys = Object.keys(n);
          if (keys.length) n[SPEC] = Object.assign(n[SPEC] || {}, { getters: [r.pick(keys)] });
        }
      });
      return schema;
    case 'typebox':
      eachNode(schema, (n) => { if (!Array.isArray(n)) n[SPEC] = Object.assign(n[SPEC] || {}, { typebox: n.type || 'Unknown' }); });
      return schema;
    case 'nullProto':
      eachNode(schema, (n) => { if (!Array.isArray(n) && r.chance(0.5)) n[SPEC] = Object.assign(n[SPEC] || {}, { nullProto: true }); });
      return schema;
    case 'undefinedKeys':
      eachNode(schema, (n) => { if (!Array.isArray(n) && r.chance(0.3)) n[SPEC] = Object.assign(n[SPEC] || {}, { undefinedKey: 'title' }); });
      return schema;
    case 'throwingGetter': {
      const nodes = [];
      eachNode(schema, (n) => { if (!Array.isArray(n)) nodes.push(n); });
      const n = r.pick(nodes);
      n[SPEC] = Object.assign(n[SPEC] || {}, { throwGetter: 'description' });
      return schema;
    }
    case 'cycle': {
      const nodes = [];
      eachNode(schema, (n) => { if (!Array.isArray(n)) nodes.push(n); });
      r.pick(nodes)['x-parent'] = schema;
      return schema;
    }
    case 'builder':
      // class instances with an enumerable back-reference that toJSON leaves out
      eachNode(schema, (n) => { if (!Array.isArray(n)) n[SPEC] = Object.assign(n[SPEC] || {}, { builder: true }); });
      return schema;
    default: return schema;
  }
}

// Whole schemas that only a hostile or unlucky page writes: deep nesting,
// a long chain of definitions, an acyclic graph that is huge written out.
function oddSchema(r, kind) {
  switch (kind) {
    case 'deepNesting': {
      const depth = r.int(30, 120);
      let s = { type: 'string' };
      for (let i = 0; i < depth; i++) s = r.chance(0.5) ? { type: 'array', items: s } : { type: 'object', properties: { n: s } };
      return { type: 'object', properties: { root: s } };
    }
    case 'veryDeep': {
      // past CDP's 300 levels (the reference's discovery fails: "CBOR:
      // stack limit exceeded"), sometimes past our 512 (we skip the group)
      let s = { type: 'integer' };
      for (let i = r.int(290, 600); i > 0; i--) s = { type: 'array', items: s };
      return { type: 'object', properties: { root: s } };
    }
    case 'refChain': {
      const n = r.int(20, 200);
      const definitions = {};
      for (let i = 0; i < n; i++) {
        definitions['d' + i] = i + 1 < n
          ? { type: 'object', properties: { next: { type: 'array', items: { $ref: '#/definitions/d' + (i + 1) } } } }
          : { type: 'integer' };
      }
      return { type: 'object', properties: { root: { $ref: '#/definitions/d0' } }, definitions };
    }
    case 'exponential': {
      let s = { type: 'integer' };
      for (let i = r.int(6, 12); i > 0; i--) s = { anyOf: [s, s] };
      return { type: 'object', properties: { v: s } };
    }
  }
  return { type: 'object' };
}

// ---- one tool ---------------------------------------------------------------
const TOOL_WORDS = ['get', 'list', 'find', 'set', 'query', 'read', 'dump', 'toggle', 'count', 'inspect'];
const NOUNS = ['Cache', 'State', 'Flags', 'Rows', 'Cart', 'Session', 'Metrics', 'Routes', 'Store', 'Queue', 'Users'];

function genTool(r, idx, elementTags, pageOpts) {
  const tags = [];
  let name = r.pick(TOOL_WORDS) + r.pick(NOUNS) + idx;
  if (r.chance(0.04)) name = r.pick(['__proto__', 'constructor', 'with space', 'ünïcödé', 'toString', '__index']);
  const ast = S.genObject(r, 0, [], { oddNames: r.chance(0.2), unknownFormatRate: 0.05 });
  let schema;
  const writer = r.weighted([[5, 'hand'], [3, 'zod4'], [2, 'zod3'], [0.4, 'odd']]);
  if (writer === 'hand') {
    const style = r.pick(['inline', 'shared', 'definitions', 'propref']);
    schema = S.plainSchema(ast, style, r);
    if (r.chance(0.15)) schema.$schema = 'http://json-schema.org/draft-07/schema#';
    tags.push('hand:' + style);
  } else if (writer === 'zod4') {
    const target = r.pick(['draft-7', 'draft-7', 'draft-2020-12', 'openapi-3.0']);
    const opts = { target, unrepresentable: 'any', reused: r.chance(0.3) ? 'ref' : 'inline', io: r.chance(0.3) ? 'input' : 'output' };
    schema = z.toJSONSchema(S.zodSchema(ast, z, false), opts);
    tags.push('zod4:' + target);
  } else if (writer === 'zod3') {
    const target = r.pick(['jsonSchema7', 'jsonSchema7', 'openApi3']);
    const opts = { target, $refStrategy: r.pick(['root', 'relative', 'none', 'seen']) };
    if (r.chance(0.2)) opts.name = 'Args';
    schema = zodToJsonSchema(S.zodSchema(ast, z3, true), opts);
    tags.push('zod3:' + target + ':' + opts.$refStrategy + (opts.name ? ':named' : ''));
  } else {
    const kind = r.weighted([[3, 'deepNesting'], [3, 'refChain'], [3, 'exponential'], [1, 'veryDeep']]);
    schema = oddSchema(r, kind);
    tags.push('odd:' + kind);
  }
  // (a schema made to test a size or depth limit is left undressed: a
  // Proxy would hide it from the reference)
  const how = writer === 'odd' ? 'plain' : r.weighted([[10, 'plain'], [3, 'shareEqual'], [1, 'getters'], [1, 'typebox'], [1, 'nullProto'],
    [1, 'undefinedKeys'], [1, 'reactive'], [1, 'frozen'], [0.1, 'throwingGetter'], [0.1, 'cycle'], [0.07, 'builder']]);
  schema = dress(schema, how, r);
  if (how !== 'plain') tags.push('dress:' + how);
  const exec = genExecute(r, elementTags, name, pageOpts);
  for (const t of exec.tags) tags.push('result:' + t);
  tags.push('execute:' + exec.how);
  const calls = (writer === 'odd' ? ['{}'] : S.argSets(ast, r)).map((params) => ({ tool: name, params }));
  return { name, description: r.weighted([[6, 'Reads the ' + name], [1, ''], [1, 'Ünïcödé description'], [1, 'Line one.\nLine two.'], [0.3, 'x'.repeat(200)]]),
    schema, how, exec, calls, tags };
}

// A tool or group the page declares wrongly (the reference skips it).
function broken(r) {
  return r.pick([
    ['tool without a description', (t) => { t.descriptionSrc = 'undefined'; }],
    ['tool description a number', (t) => { t.descriptionSrc = '5'; }],
    ['inputSchema null', (t) => { t.schemaSrc = 'null'; }],
    ['inputSchema a string', (t) => { t.schemaSrc = '"{}"'; }],
    ['inputSchema an array', (t) => { t.schemaSrc = '[]'; }],
    ['inputSchema missing', (t) => { t.schemaSrc = 'undefined'; }],
    ['execute not a function', (t) => { t.executeSrc = '"run"'; }],
    ['group name a number', (t, g) => { g.nameSrc = '7'; }],
    ['group description a number', (t, g) => { g.descriptionSrc = '1'; }],
    ['group tools not an array', (t, g) => { g.toolsSrc = '{}'; }],
  ]);
}

// ---- one page ---------------------------------------------------------------
const ELEMENTS_HTML = `<div id="main" class="card big" data-diff="e1">Main <span data-diff="e2">span</span></div>
<button data-diff="e3">Go</button>
<input data-diff="e4" value="x" aria-label="field">
<p data-diff="e5" style="display:none">hidden</p>
<svg data-diff="e6" width="10" height="10"><circle data-diff="e7" r="4"></circle></svg>
<ul><li data-diff="e8">one</li><li data-diff="e9" class="a b c d">two</li></ul>`;
const ELEMENT_TAGS = ['e1', 'e2', 'e3', 'e4', 'e5', 'e6', 'e7', 'e8', 'e9', 'd1'];

const PRELUDE = `'use strict';
const detached = document.createElement('section');
detached.setAttribute('data-diff', 'd1');
const el = (tag) => document.querySelector('[data-diff="' + tag + '"]') || (tag === 'd1' ? detached : null);
const deep = (n, v) => { for (let i = 0; i < n; i++) v = i % 2 ? [v] : { n: v }; return v; };
class Point { constructor(x, y) { this.x = x; this.y = y; } }
class SchemaNode { constructor(fields) { Object.assign(this, fields); this.parent = this; }
  toJSON() { const o = Object.assign({}, this); delete o.parent; return o; } }
const reactive = (() => {   // Vue 3's reactive(): one proxy per object, made lazily
  const cache = new WeakMap();
  const wrap = (t) => {
    if (t === null || typeof t !== 'object') return t;
    let p = cache.get(t);
    if (!p) { p = new Proxy(t, { get: (o, k, rcv) => wrap(Reflect.get(o, k, rcv)) }); cache.set(t, p); }
    return p;
  };
  return wrap;
})();
const freeze = (o) => { if (o && typeof o === 'object' && !Object.isFrozen(o)) { Object.freeze(o); Object.values(o).forEach(freeze); } return o; };
`;

function genPage(seed, index) {
  const r = rng(seed, index);
  const tags = [];
  const toolTags = Object.create(null);
  const calls = [];
  // a page that gives arrays a toJSON (Prototype.js 1.6): its results stay
  // shallow (each level of arrays escapes the one below again: 40 levels
  // made hundreds of megabytes, and the reference's server exited)
  const prototypeJs = r.chance(0.04);
  if (prototypeJs) tags.push('prototype.js');
  const groupCount = r.int(1, 3);
  const groups = [];
  let toolIdx = 0;
  for (let g = 0; g < groupCount; g++) {
    const tools = [];
    for (let t = r.int(1, 3); t > 0; t--) {
      const tool = genTool(r, ++toolIdx, ELEMENT_TAGS, { shallow: prototypeJs });
      if (tools.length && r.chance(0.03)) { tool.name = tools[0].name; tool.calls.forEach((c) => { c.tool = tool.name; }); tags.push('duplicate-name'); }
      tools.push(tool);
    }
    const group = { name: r.pick(['app-debug', 'shop-cart', 'sales', 'store', 'routes', 'ünï-group', 'group with spaces', 'x']) + '-' + g,
      descriptionSrc: JSON.stringify(r.pick(['The app\'s internals', 'Cart state', 'Ünïcödé', 'multi\nline'])), tools };
    if (r.chance(0.15)) group.descriptionSrc = 'undefined';
    if (r.chance(0.05)) group.descriptionSrc = '""';
    if (r.chance(0.06)) {
      const [what, f] = broken(r);
      f(r.pick(tools), group);
      tags.push('broken:' + what);
    }
    groups.push(group);
    for (const t of tools) {
      toolTags[t.name] = (toolTags[t.name] || []).concat(t.tags);
      calls.push(...t.calls);
    }
  }
  // listeners: each answers with some of the groups, at once or later
  const listeners = [];
  let rest = groups.slice();
  while (rest.length) {
    const n = r.int(1, rest.length);
    listeners.push({ timing: r.weighted([[5, 'sync'], [2, 'microtask'], [1, 'promise'], [1, 'await'], [1, 'timeout']]),
      groups: rest.slice(0, n) });
    rest = rest.slice(n);
  }
  if (r.chance(0.1)) listeners.push({ timing: 'sync', groups: [], empty: true });
  if (r.chance(0.05)) listeners.push({ timing: 'sync', groups: [], undefinedGroup: true });
  tags.push('listeners:' + listeners.map((l) => l.timing).join(','));
  const iframe = r.chance(0.06);
  if (iframe) tags.push('iframe');
  // an element passed back: a tool returns one, the next takes it
  // ("x-mcp-type": "HTMLElement"); each driver puts its own element
  // reference where the plan says "\u0000prev" (the previous call's result)
  const elementArgs = r.chance(0.1);
  if (elementArgs) tags.push('element-arguments');

  const out = [PRELUDE];
  // Prototype.js 1.6: an array's JSON is a string (made of its elements' JSON)
  if (prototypeJs) out.push('Array.prototype.toJSON = function () { return "[" + Array.prototype.map.call(this, (v) => JSON.stringify(v)).join(", ") + "]"; };');
  let gi = 0;
  const groupSrc = (g) => {
    const lines = [];
    const toolSrcs = g.tools.map((t, ti) => {
      let schemaSrc = t.schemaSrc;
      if (schemaSrc === undefined) {
        const { decls, top } = emit(t.schema, 'g' + gi + 't' + ti);
        lines.push(...decls);
        schemaSrc = t.how === 'reactive' ? 'reactive(' + top + ')' : t.how === 'frozen' ? 'freeze(' + top + ')' : top;
      }
      const v = 'g' + gi + 't' + ti;
      lines.push('const ' + v + ' = ' + schemaSrc + ';');
      return '{ name: ' + JSON.stringify(t.name) + ', description: ' + (t.descriptionSrc ?? JSON.stringify(t.description))
        + ', inputSchema: ' + v + ', execute: ' + (t.executeSrc ?? t.exec.src) + ' }';
    });
    const src = '{ name: ' + (g.nameSrc ?? JSON.stringify(g.name)) + ', description: ' + g.descriptionSrc
      + ', tools: ' + (g.toolsSrc ?? '[\n    ' + toolSrcs.join(',\n    ') + ']') + ' }';
    gi++;
    return { lines, src };
  };
  if (elementArgs) {
    const tag = r.pick(ELEMENT_TAGS.filter((t) => t !== 'd1'));
    const elSchema = r.pick(['{ "x-mcp-type": "HTMLElement" }', '{ "x-mcp-type": "HTMLElement", "description": "the element" }']);
    out.push('// element arguments');
    out.push('window.addEventListener("devtoolstooldiscovery", (e) => e.respondWith({ name: "elements", description: "pick and read", tools: [');
    out.push('  { name: "pickElement", description: "an element", inputSchema: { type: "object" }, execute: () => el(' + JSON.stringify(tag) + ') },');
    out.push('  { name: "readElement", description: "what the element is", inputSchema: { type: "object", properties: { el: ' + elSchema
      + ', label: { type: "string" } }, required: ["el"] }, execute: ({ el, label }) => ({ tag: el instanceof Element ? el.getAttribute("data-diff") : "not an element: " + JSON.stringify(el), label }) }] }));');
    for (const params of ['{"el":"\\u0000prev"}', '{"el":"\\u0000prev","label":"x"}', '{"el":"\\u0000prev","label":5}', '{"el":{"uid":"nope"}}', '{}']) {
      calls.push({ tool: 'pickElement', params: '{}' }, { tool: 'readElement', params });
    }
    toolTags.pickElement = ['result:element'];
    toolTags.readElement = ['element-argument'];
  }
  listeners.forEach((l, li) => {
    const made = l.groups.map(groupSrc);
    const answer = l.empty ? ['e.respondWith({});'] : l.undefinedGroup ? ['e.respondWith(undefined);']
      : made.map((m) => 'e.respondWith(' + m.src + ');');
    out.push('// listener ' + li + ': ' + l.timing);
    out.push('window.addEventListener("devtoolstooldiscovery", (e) => {');
    for (const m of made) out.push('  ' + m.lines.join('\n  '));
    // now and then a listener that throws after answering, or answers twice
    if (!l.empty && !l.undefinedGroup && r.chance(0.04)) { answer.push('throw new Error("DIFF-LISTENER threw after answering");'); tags.push('listener-throws'); }
    if (made.length && r.chance(0.03)) { answer.push(answer[0]); tags.push('answers-twice'); }
    const body = answer.join('\n  ');
    switch (l.timing) {
      case 'sync': out.push('  ' + body); break;
      case 'microtask': out.push('  queueMicrotask(() => {\n  ' + body + '\n  });'); break;
      case 'promise': out.push('  Promise.resolve().then(() => {\n  ' + body + '\n  });'); break;
      case 'await': out.push('  (async () => { await null;\n  ' + body + '\n  })();'); break;
      case 'timeout': out.push('  setTimeout(() => {\n  ' + body + '\n  }, 0);'); break;
    }
    out.push('});');
  });
  const file = 'p' + index + '.html';
  let html = '<!doctype html>\n<html><head><meta charset="utf-8"><title>differential page ' + index + '</title></head><body>\n'
    + ELEMENTS_HTML + '\n';
  if (iframe) {
    html += '<iframe src="p' + index + '-child.html"></iframe>\n';
  }
  html += '<script>\n// seed ' + seed + ', page ' + index + '\n' + out.join('\n') + '\n</script>\n</body></html>\n';
  const files = { [file]: html };
  if (iframe) {
    // an iframe's own group: the reference does not look in iframes
    const name = 'frameTool' + index;
    files['p' + index + '-child.html'] = '<!doctype html><meta charset="utf-8"><body><script>\n'
      + 'window.addEventListener("devtoolstooldiscovery", (e) => e.respondWith({ name: "in-frame", description: "an iframe\'s group", tools: [\n'
      + '  { name: ' + JSON.stringify(name) + ', description: "in the iframe", inputSchema: { type: "object" }, execute: () => "from the frame" }] }));\n'
      + '</script></body>\n';
    calls.push({ tool: name, params: '{}' });
    toolTags[name] = ['iframe'];
  }
  return { plan: { index, file, calls, tags, toolTags }, files };
}

function main() {
  const [seedText, firstText, countText, outdir] = process.argv.slice(2);
  const seed = Number(seedText) >>> 0;
  const first = Number(firstText), count = Number(countText);
  fs.mkdirSync(outdir, { recursive: true });
  const lines = [];
  for (let i = first; i < first + count; i++) {
    const { plan, files } = genPage(seed, i);
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(outdir, name), text);
    lines.push(JSON.stringify(plan));
  }
  fs.writeFileSync(path.join(outdir, 'plan.jsonl'), lines.join('\n') + '\n');
}

if (require.main === module) main();
module.exports = { genPage };
