// tools/differential/results.js: what a generated tool returns, as the
// JavaScript source of an expression the page evaluates at each call: every
// kind of value a tool may return (primitives, -0, NaN, BigInt, Symbol,
// undefined, Date, Map, Set, typed arrays, class instances, getters, toJSON,
// cycles through objects and through arrays, DOM elements, deep nesting),
// alone or nested in objects and arrays.
//
// What it must never do: make a value that differs from call to call (a
// date of now, a random number): both sides call the same tool and compare
// what they got.
'use strict';

const LEAVES = [
  [6, () => '42'], [2, () => '-0'], [2, () => 'NaN'], [1, () => 'Infinity'], [1, () => '-Infinity'],
  [2, () => '1.5'], [1, () => '2 ** 53 + 2'], [1, () => '1e21'], [1, () => '5e-324'], [1, () => '-1e-7'],
  [3, () => 'true'], [2, () => 'null'], [3, () => 'undefined'],
  [5, (r) => JSON.stringify(r.pick(['text', '', 'héllo', '😀', 'line\nbreak', '\u0000', 'quote"', '<Circular reference>', 'a\u2028b']))],
  [1, () => '"\\ud800 lone"'],
  [2, () => '12345678901234567890n'], [1, () => '-5n'],
  [2, () => 'Symbol("s")'], [1, () => 'Symbol()'], [1, () => 'Symbol.iterator'],
  [3, () => 'new Date(0)'], [2, () => 'new Map([[1, { a: 1 }]])'], [2, () => 'new Set([1, 2])'],
  [2, () => 'new Uint8Array([1, 2, 3])'], [1, () => 'new Float64Array(2)'], [1, () => 'new ArrayBuffer(8)'],
  [1, () => '/re/g'], [1, () => 'new Error("an error value")'], [1, () => 'Promise.resolve(1)'],
  [1, () => 'new WeakMap()'], [1, () => 'new Number(5)'], [1, () => 'new String("s")'],
  [3, () => 'new Point(1, 2)'], [1, () => 'new (class {})()'], [1, () => 'new (class extends Point {})(3, 4)'],
  [1, () => 'Object.create({ inherited: 1 })'], [1, () => 'Object.create(Point.prototype)'],
  [1, () => 'Object.assign(Object.create(null), { bare: 1 })'],
  [2, () => '() => 1'], [1, () => 'function named() {}'], [1, () => 'class K {}'], [1, () => 'async () => 1'],
  [1, () => 'document'], [1, () => 'document.createTextNode("t")'], [1, () => 'window'],
  [1, () => 'document.querySelectorAll("div")'], [1, () => 'document.body.childNodes'],
];

// elementTags: the data-diff tags of the page's elements (some in the
// document, some detached, one SVG).
function genResult(r, elementTags, depth = 0, tags = new Set(), opts = {}) {
  const leaf = depth >= 3 || r.chance(depth === 0 ? 0.25 : 0.45);
  if (leaf) {
    if (elementTags.length && r.chance(0.08)) {
      tags.add('element');
      return 'el(' + JSON.stringify(r.pick(elementTags)) + ')';
    }
    return r.weighted(LEAVES.map(([w, f]) => [w, f]))(r);
  }
  const sub = () => genResult(r, elementTags, depth + 1, tags, opts);
  const kind = r.weighted([
    [8, 'object'], [6, 'array'], [1, 'getter'], [1, 'toJSON'], [1, 'cycleObject'], [1, 'cycleArray'],
    [1, 'cycleBoth'], [1, 'shared'], [1, 'nullProto'], [opts.shallow ? 0 : 1, 'deep'], [opts.shallow ? 0 : 0.3, 'veryDeep'], [0.5, 'bigArray'],
    [0.5, 'holes'], [0.5, 'arrayProps'], [0.5, 'proxy'], [0.5, 'frozen'], [0.3, 'protoKey'], [0.5, 'oddKeys'],
    [0.3, 'throwingGetter'], [0.5, 'elements'],
  ]);
  switch (kind) {
    case 'object': {
      const keys = r.shuffle(['a', 'b', 'count', 'items', 'state', 'nested', 'v', 'ok']).slice(0, r.int(0, 4));
      return '{ ' + keys.map((k) => k + ': ' + sub()).join(', ') + ' }';
    }
    case 'array': {
      const n = r.int(0, 4);
      const parts = [];
      for (let i = 0; i < n; i++) parts.push(sub());
      return '[' + parts.join(', ') + ']';
    }
    case 'getter': return '{ get g() { return ' + sub() + '; }, plain: 1 }';
    case 'toJSON': return '{ a: ' + sub() + ', toJSON() { return "replaced by toJSON"; } }';
    case 'cycleObject': return '(() => { const o = { a: ' + sub() + ' }; o.self = o; return o; })()';
    case 'cycleArray': return '(() => { const a = [' + sub() + ']; a.push(a); return a; })()';
    case 'cycleBoth': return '(() => { const o = { list: [1] }; o.list.push(o); o.list.push([o.list]); return o; })()';
    case 'shared': return '(() => { const s = ' + sub() + '; return { a: s, b: [s, s] }; })()';
    case 'nullProto': return 'Object.assign(Object.create(null), { a: ' + sub() + ' })';
    case 'deep': return 'deep(' + r.int(5, 80) + ', ' + sub() + ')';
    case 'veryDeep': tags.add('deep'); return 'deep(' + r.int(520, 700) + ', 1)';
    case 'bigArray': return 'Array.from({ length: ' + r.pick([100, 1000, 3000]) + ' }, (_, i) => i % 7 ? i : { i })';
    case 'holes': return '[1, , 3, , ]';
    case 'arrayProps': return 'Object.assign([1, 2], { extra: 1 })';
    case 'proxy': return 'new Proxy({ a: ' + sub() + ' }, {})';
    case 'frozen': return 'Object.freeze({ a: ' + sub() + ', b: [1] })';
    case 'protoKey': tags.add('protoKey'); return 'JSON.parse(\'{"__proto__": {"x": 1}, "b": 2}\')';
    case 'oddKeys': return '{ "": 1, "é": 2, "10": 3, "2": 4, "with space": 5, "__defineGetter__": 6 }';
    case 'throwingGetter': return '{ ok: 1, get bad() { throw new Error("DIFF-GETTER in a result"); } }';
    case 'elements': {
      if (!elementTags.length) return '[]';
      tags.add('element');
      const n = r.int(1, 3);
      const parts = [];
      for (let i = 0; i < n; i++) parts.push('el(' + JSON.stringify(r.pick(elementTags)) + ')');
      return '{ els: [' + parts.join(', ') + '], first: ' + parts[0] + ' }';
    }
  }
  return 'null';
}

// A tool's execute function, as source: how it answers (at once, a
// promise, a timer) and what (a value, its own arguments, an exception).
function genExecute(r, elementTags, id, opts = {}) {
  const tags = new Set();
  const how = r.weighted([[8, 'sync'], [4, 'async'], [1, 'timer'], [0.7, 'throws'], [0.3, 'throwsString'],
    [0.5, 'rejects'], [0.3, 'rejectsObject']]);
  const value = () => {
    const v = genResult(r, elementTags, 0, tags, opts);
    return r.chance(0.3) ? '{ received: args, value: ' + v + ' }' : v;
  };
  let src;
  switch (how) {
    case 'sync': src = '(args) => (' + value() + ')'; break;
    case 'async': src = 'async (args) => { await null; return ' + value() + '; }'; break;
    case 'timer': src = '(args) => new Promise((resolve) => setTimeout(() => resolve(' + value() + '), 0))'; break;
    case 'throws': src = '() => { throw new Error("DIFF-THROW ' + id + '"); }'; break;
    case 'throwsString': src = '() => { throw "DIFF-THROW string ' + id + '"; }'; break;
    case 'rejects': src = 'async () => { throw new TypeError("DIFF-THROW async ' + id + '"); }'; break;
    case 'rejectsObject': src = '() => Promise.reject({ code: 7, reason: "DIFF-THROW object ' + id + '" })'; break;
  }
  return { src, tags: Array.from(tags), how };
}

module.exports = { genResult, genExecute };
