// tools/differential/compare.js: compares what the two drivers wrote and
// prints the summary of a differential run.
//
//   node compare.js SEED PLAN.jsonl REFERENCE.jsonl OURS.jsonl
//
// Per page: the same groups (in order, main frame only: iframes are ours
// alone), each with the same tools and the same schemas (ours as the
// reference hands them to its client: an "x-mcp-type": "HTMLElement" node
// made an {uid} object); per planned call the same verdict (a value, no
// value, the tool threw, refused before sending, no such tool) and the same
// value. Objects compare without regard to key order (Lua tables have none);
// elements compare by their data-diff attribute (reference.js and ours.lua
// each read it). A thrown message is compared where the reference has it
// (it reports a thrown string as "" and a thrown object as "Object").
//
// A divergence that doc/page-tools.md lists as deliberate is counted as expected
// (EXPECTED below says how each is recognised); any other fails the run.
// Each is printed with the command that makes its page again.
//
// What it must never do: count a divergence as expected on a guess: each
// rule looks at what the reference said and at what the page was made of.
'use strict';
const { readLines } = require('./lib');

const THROWS = /^execute:(throws|throwsString|rejects|rejectsObject)$/;

// ---- outcomes -----------------------------------------------------------------
// {kind: value|none|threw|refused|not_found|error, value?, message?}
function refOutcome(c, toolTags) {
  if (!c) return { kind: 'missing', message: 'no record' };
  if (c.value !== undefined) return { kind: 'value', value: c.value };
  if (c.none) return { kind: 'none' };
  const m = String(c.error);
  if (/^Invalid parameters for tool /.test(m)) return { kind: 'refused', message: m };
  if (/^Tool .* not found$/s.test(m) || /^No tools found on the page/.test(m)) return { kind: 'not_found', message: m };
  if (/DIFF-(THROW|GETTER)/.test(m)) return { kind: 'threw', message: m };
  if (/^MCP request failed|^unreadable result/.test(m)) return { kind: 'error', message: m };
  // a thrown string ("") or object ("Object") is not named in the message
  if ((m === '' || m === 'Object') && toolTags.some((t) => THROWS.test(t))) return { kind: 'threw', message: m };
  // what ajv 6 says when it cannot compile the schema: the tool is not run
  return { kind: 'refused', message: m, schema: true };
}

function ourOutcome(c) {
  if (!c) return { kind: 'missing', message: 'no record' };
  if (c.value !== undefined) return { kind: 'value', value: c.value };
  if (c.none) return { kind: 'none' };
  const e = c.error || {};
  if (e.code === 'invalid_params') return { kind: 'refused', message: e.message };
  if (e.code === 'tool_error' && / has an invalid inputSchema: /.test(e.message)) return { kind: 'refused', message: e.message, schema: true };
  if (e.code === 'tool_error') return { kind: 'threw', message: e.thrown ?? e.message };
  if (e.code === 'tool_not_found') return { kind: 'not_found', message: e.message };
  return { kind: 'error', message: (e.code || '?') + ': ' + e.message };
}

// ---- comparing values -------------------------------------------------------------
const show = (v) => {
  let s;
  try { s = JSON.stringify(v); } catch (_) { s = String(v); }
  if (s === undefined) s = String(v);
  s = s.replace(/\\u0000element/g, 'element');
  return s.length > 120 ? s.slice(0, 117) + '...' : s;
};
const kindOf = (v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

// The first place where a and b differ: {path, a, b} or null.
function firstDiff(a, b, path = '') {
  if (a === b) return null;
  const ta = kindOf(a), tb = kindOf(b);
  if (ta !== tb) return { path: path || '/', a, b };
  if (ta === 'array') {
    if (a.length !== b.length) return { path: path + '/length', a: a.length, b: b.length };
    for (let i = 0; i < a.length; i++) { const d = firstDiff(a[i], b[i], path + '/' + i); if (d) return d; }
    return null;
  }
  if (ta === 'object') {
    const ka = Object.keys(a).sort(), kb = Object.keys(b).sort();
    for (const k of ka) if (!Object.prototype.hasOwnProperty.call(b, k)) return { path: path + '/' + k, a: a[k], b: '(absent)' };
    for (const k of kb) if (!Object.prototype.hasOwnProperty.call(a, k)) return { path: path + '/' + k, a: '(absent)', b: b[k] };
    for (const k of ka) { const d = firstDiff(a[k], b[k], path + '/' + k); if (d) return d; }
    return null;
  }
  return { path: path || '/', a, b };
}

const contains = (v, pred, depth = 0) => {
  if (pred(v)) return true;
  if (v === null || typeof v !== 'object' || depth > 2000) return false;
  return Object.keys(v).some((k) => contains(v[k], pred, depth + 1));
};

// The reference's schema rewrite (replaceHtmlElementsWithUids), on a copy of ours.
function asReferenceLists(schema) {
  if (schema === null || typeof schema !== 'object') return schema;
  const s = JSON.parse(JSON.stringify(schema));
  const walk = (n) => {
    if (n === null || typeof n !== 'object' || Array.isArray(n)) return;
    if (n['x-mcp-type'] === 'HTMLElement') { n.properties = { uid: { type: 'string' } }; n.required = ['uid']; }
    if (n.properties && typeof n.properties === 'object') for (const k of Object.keys(n.properties)) walk(n.properties[k]);
    if (Array.isArray(n.items)) n.items.forEach(walk); else if (n.items) walk(n.items);
    for (const key of ['anyOf', 'allOf', 'oneOf']) if (Array.isArray(n[key])) n[key].forEach(walk);
  };
  walk(s);
  return s;
}

// ---- what doc/page-tools.md lists as deliberate -------------------------------
// Each: name, and test(x) -> true when a divergence is that one. x: {what:
// 'groups'|'call', page, ref, ours, tags (the page's and its tools'),
// toolTags(name), refSchema(name); for a call: call, refOut, ourOut}.
const HOSTILE = /^(dress:(cycle|throwingGetter|builder)|broken:inputSchema null)$/;
const PROTO_MEMBERS = Object.getOwnPropertyNames(Object.prototype);
const EXPECTED = [
  { name: 'the reference loses every group of a page where one schema has a cycle or a getter that throws, or one inputSchema is null; we skip that group (or tool) with a warning',
    test: (x) => x.tags.some((t) => HOSTILE.test(t))
      && (typeof x.ref.listError === 'string' || (x.ref.groups || []).length === 0)
      && /Internal error|is not iterable|Cannot convert undefined or null to object|^$/.test(x.ref.listError || '')
      && (x.ours.warnings || []).some((w) => /contains itself|threw while it was read|must be an object, got null/.test(w)) },
  { name: 'a schema nested deeper than about 290 levels: CDP stops at 300 levels of JSON and the reference\'s whole discovery fails; we take it up to 512 levels, and skip that group with a warning past them',
    test: (x) => x.tags.includes('odd:veryDeep') && /CBOR: stack limit exceeded/.test(x.ref.listError || '') },
  { name: 'we also search iframes (a tool only an iframe has)',
    test: (x) => x.what === 'call' && x.refOut.kind === 'not_found' && x.toolTags(x.call.tool).includes('iframe')
      && (x.ours.groups || []).some((g) => !g.main && g.tools.some((t) => t.name === x.call.tool)) },
  { name: 'a schema behind a Proxy (Vue\'s reactive()) is {} to the reference (CDP does not read through proxies), so it checks nothing; we read what the proxy gives',
    test: (x) => x.toolTags(x.tool || (x.call && x.call.tool)).includes('dress:reactive')
      && JSON.stringify(x.what === 'groups' ? x.refToolSchema : x.refSchema(x.call.tool)) === '{}'
      && (x.what === 'groups' || x.refOut.kind !== 'refused') },
  { name: 'we take a draft 2020-12 $schema that ajv 6 refuses',
    test: (x) => x.what === 'call' && x.refOut.kind === 'refused' && x.ourOut.kind !== 'refused'
      && /no schema with key or ref "https:\/\/json-schema\.org\/draft\/2020-12\/schema/.test(x.refOut.message) },
  { name: 'we ignore a format ajv 6 does not know',
    test: (x) => x.what === 'call' && x.refOut.kind === 'refused' && x.ourOut.kind !== 'refused'
      && /^unknown format "[^"]*" is used in schema/.test(x.refOut.message) },
  { name: 'ajv 6 gets properties named like members of Object.prototype wrong (an absent "constructor" or "toString" is read as the inherited member, "__proto__" is lost from properties); we read them as any other name',
    test: (x) => x.what === 'call' && (x.refOut.kind === 'refused') !== (x.ourOut.kind === 'refused')
      && (() => {
        const s = x.refSchema(x.call.tool);
        const params = JSON.parse(x.call.params);
        const names = new Set();
        (function walk(n) {
          if (n === null || typeof n !== 'object') return;
          if (n.properties && typeof n.properties === 'object') Object.keys(n.properties).forEach((k) => names.add(k));
          if (Array.isArray(n.required)) n.required.forEach((k) => names.add(k));
          Object.keys(n).forEach((k) => walk(n[k]));
        })(s);
        const own = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
        const touches = (o) => o !== null && typeof o === 'object'
          && (PROTO_MEMBERS.some((m) => names.has(m) && (!own(o, m) || m === '__proto__')) || Object.keys(o).some((k) => touches(o[k])));
        return touches(params);
      })() },
  { name: 'we read a $ref whose pointer holds a character outside the BMP as written (zod-to-json-schema writes one for a property named with an emoji); ajv 6 fails on it ("URI malformed")',
    test: (x) => x.what === 'call' && x.refOut.kind === 'refused' && x.ourOut.kind !== 'refused'
      && x.refOut.message === 'URI malformed' && refsOf(x.refSchema(x.call.tool)).some((ref) => /[\ud800-\udfff]/.test(ref)) },
  { name: 'an empty token in a $ref\'s pointer names the member "" where there is one (the draft-07 suite requires it); ajv 6 skips every empty token',
    test: (x) => x.what === 'call' && (x.refOut.kind === 'refused') !== (x.ourOut.kind === 'refused')
      && refsOf(x.refSchema(x.call.tool)).some((ref) => /#(.*\/)?\/|\/$/.test(ref)) },
  { name: 'a result\'s own "__proto__" member stays data here; the reference\'s copy drops it',
    test: (x) => x.what === 'call' && x.refOut.kind === 'value' && x.ourOut.kind === 'value'
      && x.toolTags(x.call.tool).includes('result:protoKey')
      && firstDiff(x.refOut.value, x.ourOut.value).path.endsWith('/__proto__') },
  { name: 'on a page that gives arrays a toJSON (Prototype.js 1.6), the reference\'s results hold the strings it makes of arrays (or its stack overflows on deep ones); ours hold the arrays',
    test: (x) => x.what === 'call' && x.ourOut.kind === 'value' && x.tags.includes('prototype.js')
      && ((x.refOut.kind === 'value' && (() => { const d = firstDiff(x.refOut.value, x.ourOut.value); return typeof d.a === 'string' && Array.isArray(d.b); })())
        || (x.refOut.kind === 'refused' && x.refOut.message === 'Maximum call stack size exceeded')) },
  { name: 'arguments holding a "__proto__" key reach the tool with that key as data; the reference\'s page gets an object whose prototype the key set',
    test: (x) => x.what === 'call' && x.refOut.kind === x.ourOut.kind && /"__proto__"/.test(x.call.params)
      && (x.refOut.kind !== 'value' || firstDiff(x.refOut.value, x.ourOut.value).path.startsWith('/received')) },
  { name: 'a number no double holds (1e400) in the arguments is refused (bad_argument, or invalid_params where the schema wants an integer); the reference\'s check takes it as Infinity (an integer, to ajv 6), and its page receives null',
    test: (x) => x.what === 'call' && /1e400/.test(x.call.params)
      && (/^bad_argument: .*(JSON can hold|NaN|[Ii]nfinit)/.test(x.ourOut.message || '')
        || (x.ourOut.kind === 'refused' && /must be integer \(got -?inf\)/.test(x.ourOut.message))) },
  { name: 'a result nested deeper than 512 levels is cut with "<Max depth>"',
    test: (x) => x.what === 'call' && x.refOut.kind === 'value' && x.ourOut.kind === 'value'
      && x.toolTags(x.call.tool).includes('result:deep') && contains(x.ourOut.value, (v) => v === '<Max depth>') },
];

// every $ref string in a schema
function refsOf(schema) {
  const out = [];
  (function walk(n) {
    if (n === null || typeof n !== 'object') return;
    if (typeof n.$ref === 'string') out.push(n.$ref);
    for (const k of Object.keys(n)) walk(n[k]);
  })(schema);
  return out;
}

// The differences between the two discoveries of a page, one item each:
// {text, tool?} (tool: the tool it is about).
function discoveryDiffs(ref, our, ourMain) {
  const refGroups = ref.groups || [];
  if (ref.listError !== undefined && our.listError !== undefined) return [];
  if (ref.listError !== undefined) return [{ text: 'the reference\'s discovery failed (' + show(ref.listError) + '); ours found ' + ourMain.length + ' group(s)' }];
  if (our.listError !== undefined) return [{ text: 'our discovery failed (' + show(our.listError) + '); the reference found ' + refGroups.length + ' group(s)' }];
  const names = (gs) => gs.map((g) => g.name);
  if (refGroups.length !== ourMain.length || refGroups.some((g, i) => g.name !== ourMain[i].name)) {
    return [{ text: 'groups: reference ' + show(names(refGroups)) + ', ours ' + show(names(ourMain))
      + (our.warnings && our.warnings.length ? '; our warnings: ' + show(our.warnings) : '') }];
  }
  const out = [];
  for (let i = 0; i < refGroups.length; i++) {
    const a = refGroups[i], b = ourMain[i];
    if ((a.description ?? null) !== (b.description ?? null)) out.push({ text: 'group ' + show(a.name) + ' description: reference ' + show(a.description) + ', ours ' + show(b.description) });
    if (a.tools.length !== b.tools.length || a.tools.some((t, j) => t.name !== b.tools[j].name)) {
      out.push({ text: 'group ' + show(a.name) + ' tools: reference ' + show(a.tools.map((t) => t.name)) + ', ours ' + show(b.tools.map((t) => t.name)) });
      continue;
    }
    for (let j = 0; j < a.tools.length; j++) {
      const ta = a.tools[j], tb = b.tools[j];
      if (ta.description !== tb.description) out.push({ tool: ta.name, refToolSchema: ta.inputSchema, text: 'tool ' + show(ta.name) + ' description: reference ' + show(ta.description) + ', ours ' + show(tb.description) });
      const d = firstDiff(ta.inputSchema, asReferenceLists(tb.inputSchema));
      if (d) out.push({ tool: ta.name, refToolSchema: ta.inputSchema, text: 'tool ' + show(ta.name) + ' inputSchema at ' + d.path + ': reference ' + show(d.a) + ', ours ' + show(d.b) });
    }
  }
  return out;
}

function main() {
  const [seed, planFile, refFile, ourFile] = process.argv.slice(2);
  const plan = readLines(planFile);
  const byIndex = (lines) => new Map(lines.map((l) => [l.index, l]));
  const refs = byIndex(readLines(refFile));
  const ours = byIndex(readLines(ourFile));
  const stats = { pages: 0, refGroups: 0, ourGroups: 0, refTools: 0, ourTools: 0, calls: 0, sent: 0, refused: 0, threw: 0, notFound: 0, consequences: 0 };
  const unexpected = new Map();    // class -> [{page, text}]
  const expected = new Map();      // name -> count
  const note = (cls, p, text) => {
    if (!unexpected.has(cls)) unexpected.set(cls, []);
    unexpected.get(cls).push({ page: p.index, text });
  };
  for (const p of plan) {
    stats.pages++;
    const ref = refs.get(p.index), our = ours.get(p.index);
    if (!ref || !our) { note('driver', p, 'no record from ' + (!ref ? 'the reference' : 'our side')); continue; }
    if (our.driverError) { note('driver', p, 'our driver failed: ' + show(our.driverError)); continue; }
    const tags = p.tags.slice();
    for (const t of Object.values(p.toolTags)) tags.push(...t);
    const refTool = (name) => {
      for (const g of ref.groups || []) for (const t of g.tools) if (t.name === name) return t;
      return undefined;
    };
    const ctx = { page: p, ref, ours: our, tags,
      toolTags: (name) => (Object.prototype.hasOwnProperty.call(p.toolTags, name) ? p.toolTags[name] : []),
      refSchema: (name) => (refTool(name) || {}).inputSchema };
    const isExpected = (x) => {
      const e = EXPECTED.find((rule) => { try { return rule.test(x); } catch (_) { return false; } });
      if (e) expected.set(e.name, (expected.get(e.name) || 0) + 1);
      return !!e;
    };
    // groups and schemas
    const refGroups = ref.groups || [];
    const ourMain = (our.groups || []).filter((g) => g.main);
    stats.refGroups += refGroups.length;
    stats.ourGroups += (our.groups || []).length;
    for (const g of refGroups) stats.refTools += g.tools.length;
    for (const g of our.groups || []) stats.ourTools += g.tools.length;
    const diffs = discoveryDiffs(ref, our, ourMain);
    const groupsDiffer = diffs.some((d) => !d.tool);
    let groupsExpected = true;
    for (const d of diffs) {
      if (isExpected({ ...ctx, what: 'groups', tool: d.tool, refToolSchema: d.refToolSchema })) continue;
      if (!d.tool) groupsExpected = false;
      note('discovery', p, d.text);
    }
    if (ref.serverExited) {
      const j = (ref.calls || []).findIndex((c) => /MCP request failed/.test(c.error || ''));
      note('the reference\'s server exited (its record of the page stops there)', p,
        j >= 0 ? 'during call ' + (j + 1) + ' ' + show(p.calls[j].tool) + ' ' + p.calls[j].params.slice(0, 80) : 'during discovery');
    }
    // calls; one whose tool only one side listed follows from the
    // discovery's divergence and is counted with it
    const listed = (gs) => new Set((gs || []).flatMap((g) => g.tools.map((t) => t.name)));
    const refListed = listed(refGroups), ourListed = listed(ourMain);
    p.calls.forEach((c, j) => {
      stats.calls++;
      if (ref.serverExited && /MCP request failed|server exited/.test((ref.calls[j] || {}).error || '')) return;
      const refOut = refOutcome(ref.calls && ref.calls[j], ctx.toolTags(c.tool));
      const ourOut = ourOutcome(our.calls && our.calls[j]);
      if (refOut.kind === 'value' || refOut.kind === 'none' || refOut.kind === 'threw') stats.sent++;
      else if (refOut.kind === 'refused') stats.refused++;
      else if (refOut.kind === 'not_found') stats.notFound++;
      if (refOut.kind === 'threw') stats.threw++;
      let cls = null, text = null;
      const who = 'call ' + (j + 1) + ' ' + show(c.tool) + ' ' + (c.params.length > 80 ? c.params.slice(0, 77) + '...' : c.params) + ': ';
      const say = (o) => (o.kind === 'none' ? 'no value' : o.message !== undefined ? show(o.message) : show(o.value));
      if (refOut.kind !== ourOut.kind) {
        cls = 'verdict: reference ' + refOut.kind + ', ours ' + ourOut.kind;
        text = who + 'reference ' + say(refOut) + '; ours ' + say(ourOut);
      } else if (refOut.kind === 'value') {
        const d = firstDiff(refOut.value, ourOut.value);
        if (d) { cls = 'value'; text = who + 'at ' + d.path + ': reference ' + show(d.a) + ', ours ' + show(d.b); }
      } else if (refOut.kind === 'threw') {
        if (/DIFF-/.test(refOut.message) && !refOut.message.includes(ourOut.message) && !ourOut.message.includes(refOut.message)) {
          cls = 'thrown message'; text = who + 'reference ' + show(refOut.message) + '; ours ' + show(ourOut.message);
        }
      } else if (refOut.kind === 'error') {
        cls = 'error'; text = who + 'reference ' + show(refOut.message) + '; ours ' + show(ourOut.message);
      }
      if (!cls) return;
      if (groupsDiffer && refListed.has(c.tool) !== ourListed.has(c.tool)) {
        if (groupsExpected) expected.set('(calls of those groups\' tools)', (expected.get('(calls of those groups\' tools)') || 0) + 1);
        else stats.consequences++;
        return;
      }
      if (!isExpected({ ...ctx, what: 'call', call: c, refOut, ourOut })) note(cls, p, text);
    });
  }
  // ---- summary --------------------------------------------------------------
  const out = [];
  out.push('differential: seed ' + seed + ', ' + stats.pages + ' pages');
  out.push('  groups: reference ' + stats.refGroups + ', ours ' + stats.ourGroups + ' (iframes included); tools: reference ' + stats.refTools + ', ours ' + stats.ourTools);
  out.push('  calls: ' + stats.calls + ' (the reference sent ' + stats.sent + ', of which ' + stats.threw + ' threw; refused ' + stats.refused + '; not found ' + stats.notFound + ')');
  let total = 0;
  for (const [, list] of unexpected) total += list.length;
  let expectedTotal = 0;
  for (const [, n] of expected) expectedTotal += n;
  out.push('  expected differences (doc/page-tools.md, "Where devtools_tools and chrome-devtools-mcp differ"): ' + expectedTotal);
  for (const [name, n] of expected) out.push('    ' + n + ' x ' + name);
  out.push('  divergences: ' + total + (stats.consequences ? ' (and ' + stats.consequences + ' calls of tools only one side discovered, counted with their discovery)' : ''));
  for (const [cls, list] of unexpected) {
    const pages = new Set(list.map((d) => d.page));
    out.push('    ' + cls + ': ' + list.length + ' (' + pages.size + ' page(s))');
    for (const d of list.slice(0, Number(process.env.DIFF_SHOW || 4))) {
      out.push('      page ' + d.page + ' (DIFF_SEED=' + seed + ' DIFF_FIRST=' + d.page + ' DIFF_PAGES=1): ' + d.text);
    }
  }
  console.log(out.join('\n'));
  process.exit(total ? 1 : 0);
}

main();
