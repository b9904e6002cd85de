// tools/differential/schemas.js: input schemas as applications write them,
// and arguments for them, valid and not.
//
// A tool's arguments are first drawn as an abstract type (an `ast`: string,
// number, object, union, ...; a node may be used twice, as a shared
// constant is). The same type is then written the way one kind of
// application writes it: by hand (inline copies, one shared object,
// `definitions` + `$ref`, `$ref` to `#/properties/...`), by zod 4's
// z.toJSONSchema (draft-7, draft-2020-12, openapi-3.0), or by
// zod-to-json-schema over zod 3 types. Arguments come from the type too, so
// every way of writing it is called with the same kind of values.
//
// What it must never do: predict a verdict. Whether a set of arguments is
// valid is for the two sides to say; the generator only aims at both.
'use strict';

// ---- strings that formats and patterns take or refuse ----------------------
// (ajv 6's "fast" formats: the reference validates with `new Ajv()`)
const FORMATS = {
  'date-time': [['2024-01-02T03:04:05Z', '2021-02-29T10:00:00.5+01:00', '2024-01-02 03:04:05z'], ['yesterday', '2024-01-02', '2024-01-02T25:00:00Z']],
  date: [['2024-02-03', '2021-02-30'], ['2024-1-2', '03/02/2024', '']],
  time: [['10:20:30', '23:59:60Z', '10:20:30.5+01:00'], ['25:00', '10:20', 'noon']],
  email: [['a@b.co', 'first.last+tag@example.org'], ['a@', 'a b@c.d', '@x.y']],
  uri: [['https://x.y/p?q=1', 'urn:isbn:0451450523', 'mailto:a@b.c'], ['not a uri', 'rel/path', '']],
  'uri-reference': [['../x', '#frag', 'https://a.b/'], ['\\\\', 'a b']],
  url: [['http://example.com/', 'https://a.b/c?d=e#f'], ['example.com', 'http//x']],
  uuid: [['123e4567-e89b-12d3-a456-426614174000', '00000000-0000-0000-0000-000000000000'], ['xyz', '123e4567e89b12d3a456426614174000g']],
  ipv4: [['192.168.0.1', '0.0.0.0'], ['256.1.1.1', '1.2.3']],
  ipv6: [['::1', '2001:db8::8a2e:370:7334'], [':::', '12345::']],
  hostname: [['example.com', 'a-b.c'], ['-bad-.com', 'a..b']],
  regex: [['^a+$', '[0-9]{2}'], ['(', '[a-']],
  'json-pointer': [['/a/b', ''], ['a', '/a~2']],
  'relative-json-pointer': [['0/a', '1#'], ['/a', '-1']],
  // formats ajv 6 does not know: it refuses the schema, we ignore the format
  duration: [['P3D', 'PT1H'], ['3 days']],
  int32: [['12'], ['x']],
  color: [['#ff0000'], ['red']],
  binary: [['AAEC'], ['']],
};
const KNOWN_FORMATS = ['date-time', 'date', 'time', 'email', 'uri', 'uri-reference', 'url', 'uuid', 'ipv4', 'ipv6',
  'hostname', 'regex', 'json-pointer', 'relative-json-pointer'];
const UNKNOWN_FORMATS = ['duration', 'int32', 'color', 'binary'];

// ECMA-262 patterns as pages write them, read without flags (new RegExp(p)).
const PATTERNS = [
  ['^[A-Z]{3}-\\d{4}$', ['ABC-1234', 'XYZ-0000'], ['abc-1234', 'ABC1234']],
  ['^\\d+$', ['123', '0'], ['12a', '']],
  ['^[a-z0-9_-]{3,16}$', ['user_1', 'abc'], ['U!', 'ab']],
  ['^#[0-9a-fA-F]{6}$', ['#a0B1c2'], ['#zzz', 'a0B1c2']],
  ['^\\S+$', ['x', 'héllo'], ['a b', '']],
  ['\\p{L}', ['p{L}', 'xp{L}y'], ['é', 'L']],
  ['^.$', ['a', 'é'], ['😀', 'ab']],
  ['^..$', ['😀', 'ab'], ['a']],
  ['[\\u4e00-\\u9fff]', ['中文', 'a中'], ['abc']],
  ['^(?:a|b)*c$', ['abc', 'c'], ['abd']],
  ['^\\w+@\\w+\\.\\w+$', ['a@b.cd'], ['a@b']],
  ['^[^\\s@]+@[^\\s@]+$', ['x@y'], ['x y@z']],
  ['^(?!admin$).*$', ['root', ''], ['admin']],
  ['^\\d{3}\\-\\d{4}$', ['555-1234'], ['5551234']],
  ['a]', ['a]'], ['a']],
  ['^[\\s\\S]{0,10}$', ['short'], ['this is longer than ten']],
  ['^(\\d{1,3}\\.){3}\\d{1,3}$', ['1.2.3.4'], ['1.2.3']],
  ['^\\$?\\d+(\\.\\d{2})?$', ['$12.50', '7'], ['12.5']],
];

const WORDS = ['id', 'name', 'path', 'limit', 'query', 'tableName', 'userId', 'flag', 'items', 'page', 'size',
  'cursor', 'filter', 'sort', 'tags', 'price', 'qty', 'email', 'created', 'state', 'mode', 'level', 'scope',
  'productId', 'quantities', 'options', 'meta', 'x', 'y', 'é', 'naïve', 'with space', 'dash-key', '$special',
  '__proto__', 'constructor', 'toString', 'hasOwnProperty', '0', '10', '', 'ключ', '😀', 'a/b', 'x~y', '50%', 'a%2Fb'];
const SAFE_WORDS = WORDS.filter((w) => !['__proto__', 'constructor', 'toString', 'hasOwnProperty', '', 'a/b', 'x~y', '50%', 'a%2Fb'].includes(w));
const ENUM_STRINGS = ['red', 'green', 'blue', 'new', 'won', 'lost', 'asc', 'desc', 'debug', 'info', 'warn', 'error', 'A', 'a', 'é', ''];
const TEXTS = ['hello', '', 'héllo wörld', '😀 emoji', 'line\nbreak', 'tab\tx', 'quote"s', 'back\\slash', '\u0000nul',
  '\ud800', 'ab\udc00', 'x'.repeat(300), '<b>html</b>', 'null', '0', 'true', 'ﬁ', '\u2028'];

// ---- the abstract type ------------------------------------------------------
// gen(r, depth, pool, opts) -> ast. pool: nodes already made, which a later
// property may use again (a shared constant).
function genAst(r, depth, pool, opts = {}) {
  if (pool.length && depth > 0 && r.chance(opts.shareRate ?? 0.12)) return r.pick(pool);
  const leaf = depth >= (opts.maxDepth ?? 3);
  const kind = r.weighted(leaf
    ? [[5, 'str'], [3, 'num'], [3, 'int'], [2, 'bool'], [2, 'enum'], [1, 'lit'], [1, 'nul']]
    : [[5, 'str'], [3, 'num'], [3, 'int'], [2, 'bool'], [2, 'enum'], [1, 'lit'], [1, 'nul'],
      [4, 'obj'], [3, 'arr'], [1, 'tup'], [2, 'nullable'], [2, 'union'], [1, 'rec'],
      [0.6, 'not'], [0.6, 'cond'], [0.5, 'tree'], [0.8, 'decimal'], [0.5, 'types'], [0.3, 'bool-schema']]);
  let n;
  switch (kind) {
    case 'str': {
      n = { k: 'str' };
      const what = r.weighted([[4, 'plain'], [2, 'format'], [2, 'pattern'], [1, 'both']]);
      if (what === 'format' || what === 'both') {
        n.format = r.chance(opts.unknownFormatRate ?? 0.08) ? r.pick(UNKNOWN_FORMATS) : r.pick(KNOWN_FORMATS);
      }
      if (what === 'pattern' || (what === 'both' && r.chance(0.5))) n.pattern = r.int(0, PATTERNS.length - 1);
      if (what === 'plain' && r.chance(0.5)) {
        n.minLength = r.int(0, 3);
        if (r.chance(0.6)) n.maxLength = n.minLength + r.int(0, 20);
      }
      break;
    }
    case 'num': case 'int': {
      n = { k: kind };
      if (r.chance(0.5)) n.min = r.pick([0, 1, -10, 0.5, -1e9]);
      if (r.chance(0.4)) n.max = (n.min ?? 0) + r.pick([1, 10, 100, 2 ** 31, 0.25]);
      if (r.chance(0.15)) n.exclusive = true;
      if (r.chance(0.1)) n.multipleOf = r.pick([2, 5, 0.5, 0.01]);
      break;
    }
    case 'bool': n = { k: 'bool' }; break;
    case 'nul': n = { k: 'nul' }; break;
    case 'enum': {
      const mixed = r.chance(0.2);
      const values = r.shuffle(ENUM_STRINGS).slice(0, r.int(1, 5));
      if (mixed) values.push(r.pick([1, 2.5, null, true, 0]));
      n = { k: 'enum', values };
      break;
    }
    case 'lit': n = { k: 'lit', value: r.pick(['fixed', 42, true, 'v2', 0]) }; break;
    case 'obj': n = genObject(r, depth, pool, opts); break;
    case 'arr': {
      n = { k: 'arr', items: genAst(r, depth + 1, pool, opts) };
      if (r.chance(0.4)) n.minItems = r.int(0, 2);
      if (r.chance(0.4)) n.maxItems = (n.minItems ?? 0) + r.int(1, 5);
      if (r.chance(0.1)) n.unique = true;
      break;
    }
    case 'tup': {
      const items = [];
      for (let i = r.int(1, 3); i > 0; i--) items.push(genAst(r, depth + 1, pool, opts));
      n = { k: 'tup', items };
      break;
    }
    case 'nullable': n = { k: 'nullable', inner: genAst(r, depth + 1, pool, { ...opts, shareRate: 0 }) }; break;
    case 'union': {
      const options = [];
      for (let i = r.int(2, 3); i > 0; i--) options.push(genAst(r, depth + 1, pool, opts));
      n = { k: 'union', options };
      break;
    }
    case 'rec': n = { k: 'rec', value: genAst(r, depth + 1, pool, opts) }; break;
    case 'not': n = { k: 'not', inner: genAst(r, opts.maxDepth ?? 3, [], opts) }; break;
    case 'cond': n = { k: 'cond', which: r.int(0, CONDITIONALS.length - 1) }; break;
    case 'tree': n = { k: 'tree' }; break;
    case 'decimal': n = { k: 'decimal', multipleOf: r.pick([0.1, 0.01, 0.2, 1e-8, 0.5, 3]) }; break;
    case 'types': n = { k: 'types', types: r.shuffle(['string', 'integer', 'number', 'boolean', 'null', 'array', 'object']).slice(0, r.int(2, 3)) }; break;
    case 'bool-schema': n = { k: 'bool-schema', value: r.chance(0.7) }; break;
  }
  if (n.k === 'lit' && r.chance(0.2)) n.value = r.pick([{ a: 1 }, [1, 'two'], { nested: { x: [] } }]);
  if (n.k === 'enum' && r.chance(0.15)) n.values.push(r.pick([{ a: 1 }, [1, 2], []]));
  if (n.k === 'arr' && r.chance(0.15)) n.contains = r.pick([{ type: 'integer' }, { const: 42 }, { type: 'string', minLength: 2 }]);
  if (r.chance(0.25)) n.description = r.pick(['The id of the row', 'Maximum rows to return', 'Dotted path, e.g. "cart.items"', 'Ünïcödé', 'see https://example.com/docs']);
  if (n.k !== 'obj') pool.push(n);
  return n;
}

function genObject(r, depth, pool, opts) {
  const props = [];
  const names = new Set();
  const count = r.int(depth === 0 ? 1 : 0, depth === 0 ? 5 : 3);
  const words = (opts.oddNames && r.chance(0.3)) ? WORDS : SAFE_WORDS;
  for (let i = 0; i < count; i++) {
    const name = r.pick(words);
    if (names.has(name)) continue;
    names.add(name);
    props.push([name, genAst(r, depth + 1, pool, opts), r.chance(0.5)]);
  }
  const n = { k: 'obj', props };
  n.additional = r.weighted([[4, 'any'], [4, false], [1, 'schema']]);
  if (r.chance(0.08)) n.propertyNames = r.pick([{ pattern: '^[a-z]+$' }, { maxLength: 5 }, { not: { const: 'x' } }, { enum: SAFE_WORDS.slice(0, 12) }]);
  if (r.chance(0.06)) n.patternProperties = r.pick([{ '^x-': { type: 'string' } }, { '^[0-9]+$': { type: 'integer' } }, { 'é': { type: 'boolean' } }]);
  if (r.chance(0.06)) n.minProperties = r.int(0, 2);
  if (r.chance(0.06)) n.maxProperties = r.int(1, 4);
  if (props.length >= 2 && r.chance(0.08)) {
    const [a, b] = [props[0][0], props[1][0]];
    n.dependencies = r.chance(0.5) ? { [a]: [b] } : { [a]: { required: [b] } };
  }
  if (n.additional === 'schema') n.additionalSchema = genAst(r, depth + 1, pool, { ...opts, maxDepth: depth + 1 });
  if (depth > 0) pool.push(n);
  return n;
}

// ---- writing it by hand -----------------------------------------------------
// style: 'inline' (a fresh object at each use), 'shared' (one object per
// shared node, as a constant used twice), 'definitions' (shared nodes as
// definitions and $ref), 'propref' (a second use is a $ref to where the
// first one sits, as zod-to-json-schema writes it).
function plainSchema(ast, style, r) {
  const uses = new Map();
  (function count(n) {
    uses.set(n, (uses.get(n) || 0) + 1);
    if (uses.get(n) > 1) return;
    for (const c of children(n)) count(c);
  })(ast);
  const made = new Map();        // node -> object (shared) or pointer (propref)
  // a pointer's tokens: percent-encoded (ajv's escapeFragment) or as
  // zod-to-json-schema writes them (only ~ and / escaped)
  const encoded = r.chance(0.5);
  const escapePointer = (name) => {
    const t = name.replace(/~/g, '~0').replace(/\//g, '~1');
    return encoded ? encodeURIComponent(t) : t;
  };
  const defs = {};
  let defCount = 0;
  const write = (n, pointer) => {
    const shared = uses.get(n) > 1 && n !== ast;
    if (shared && style === 'shared' && made.has(n)) return made.get(n);
    if (shared && style === 'propref' && made.has(n)) return { $ref: made.get(n) };
    if (shared && style === 'definitions') {
      if (!made.has(n)) {
        const name = 'Def' + (++defCount);
        made.set(n, name);
        defs[name] = null;
        defs[name] = node(n, '#/definitions/' + name);
      }
      const ref = { $ref: '#/definitions/' + made.get(n) };
      if (r.chance(0.2)) ref.description = 'see ' + made.get(n);   // keywords beside $ref (ignored)
      return ref;
    }
    const out = node(n, pointer);
    if (shared && style === 'shared') made.set(n, out);
    if (shared && style === 'propref') made.set(n, pointer);
    return out;
  };
  const node = (n, pointer) => {
    const s = {};
    if (n.description !== undefined && r.chance(0.8)) s.description = n.description;
    switch (n.k) {
      case 'str':
        s.type = 'string';
        if (n.format) s.format = n.format;
        if (n.pattern !== undefined) s.pattern = PATTERNS[n.pattern][0];
        if (n.minLength !== undefined) s.minLength = n.minLength;
        if (n.maxLength !== undefined) s.maxLength = n.maxLength;
        break;
      case 'num': case 'int':
        s.type = n.k === 'int' ? 'integer' : 'number';
        if (n.min !== undefined) s[n.exclusive ? 'exclusiveMinimum' : 'minimum'] = n.min;
        if (n.max !== undefined) s[n.exclusive ? 'exclusiveMaximum' : 'maximum'] = n.max;
        if (n.multipleOf !== undefined) s.multipleOf = n.multipleOf;
        break;
      case 'bool': s.type = 'boolean'; break;
      case 'nul': s.type = 'null'; break;
      case 'enum':
        if (n.values.every((v) => typeof v === 'string') && r.chance(0.5)) s.type = 'string';
        s.enum = n.values.slice();
        break;
      case 'lit': s.const = n.value; break;
      case 'obj': {
        s.type = 'object';
        s.properties = {};
        const req = [];
        for (const [name, c, required] of n.props) {
          const sub = write(c, pointer + '/properties/' + escapePointer(name));
          if (name === '__proto__') Object.defineProperty(s.properties, name, { value: sub, enumerable: true, writable: true, configurable: true });
          else s.properties[name] = sub;
          if (required) req.push(name);
        }
        if (req.length || r.chance(0.2)) s.required = req;
        if (n.additional === false) s.additionalProperties = false;
        else if (n.additional === 'schema') s.additionalProperties = write(n.additionalSchema, pointer + '/additionalProperties');
        break;
      }
      case 'arr':
        s.type = 'array';
        s.items = write(n.items, pointer + '/items');
        if (n.minItems !== undefined) s.minItems = n.minItems;
        if (n.maxItems !== undefined) s.maxItems = n.maxItems;
        if (n.unique) s.uniqueItems = true;
        break;
      case 'tup':
        s.type = 'array';
        s.items = n.items.map((c, i) => write(c, pointer + '/items/' + i));
        s.minItems = n.items.length;
        if (r.chance(0.5)) s.additionalItems = false;
        break;
      case 'nullable': {
        const inner = write(n.inner, pointer + '/anyOf/0');
        if (r.chance(0.3) && inner.type && typeof inner.type === 'string' && !inner.$ref && inner.type !== 'null') {
          return Object.assign({}, inner, { type: [inner.type, 'null'] });
        }
        s.anyOf = [inner, { type: 'null' }];
        break;
      }
      case 'union': {
        const key = r.weighted([[4, 'anyOf'], [1, 'oneOf']]);
        s[key] = n.options.map((c, i) => write(c, pointer + '/' + key + '/' + i));
        break;
      }
      case 'rec':
        s.type = 'object';
        s.additionalProperties = write(n.value, pointer + '/additionalProperties');
        break;
      case 'not': s.not = write(n.inner, pointer + '/not'); break;
      case 'cond': Object.assign(s, JSON.parse(JSON.stringify(CONDITIONALS[n.which][0]))); break;
      case 'tree':
        rootDefs.TreeNode = { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/definitions/TreeNode' } } }, required: ['name'] };
        s.$ref = '#/definitions/TreeNode';
        break;
      case 'decimal': s.type = 'number'; s.multipleOf = n.multipleOf; break;
      case 'types': s.type = n.types.slice(); break;
      case 'bool-schema': return n.value;
    }
    if (n.k === 'obj') {
      if (n.propertyNames) s.propertyNames = n.propertyNames;
      if (n.patternProperties) s.patternProperties = n.patternProperties;
      if (n.minProperties !== undefined) s.minProperties = n.minProperties;
      if (n.maxProperties !== undefined) s.maxProperties = n.maxProperties;
      if (n.dependencies) s.dependencies = n.dependencies;
    }
    if (n.contains) s.contains = n.contains;
    if (r.chance(0.05)) s.title = 'Title';
    if (r.chance(0.04)) s.examples = [null];
    return s;
  };
  const rootDefs = {};
  const root = node(ast, '#');
  if (style === 'definitions' && defCount) root.definitions = defs;
  if (Object.keys(rootDefs).length) root.definitions = Object.assign(root.definitions || {}, rootDefs);
  return root;
}


function children(n) {
  switch (n.k) {
    case 'obj': return n.props.map((p) => p[1]).concat(n.additional === 'schema' ? [n.additionalSchema] : []);
    case 'arr': return [n.items];
    case 'tup': return n.items;
    case 'nullable': return [n.inner];
    case 'union': return n.options;
    case 'rec': return [n.value];
    case 'not': return [n.inner];
    default: return [];
  }
}

// ---- zod 4 and zod-to-json-schema -------------------------------------------
// z: zod 4's `z` (or zod/v3's, v3 = true). One zod schema per node, so a node
// used twice is one zod instance used twice, as an application's constant.
function zodSchema(ast, z, v3) {
  const made = new Map();
  const make = (n) => {
    if (made.has(n)) return made.get(n);
    let s;
    switch (n.k) {
      case 'str': {
        const f = n.format;
        if (f === 'email') s = v3 ? z.string().email() : z.email();
        else if (f === 'uuid') s = v3 ? z.string().uuid() : z.uuid();
        else if (f === 'url' || f === 'uri') s = v3 ? z.string().url() : z.url();
        else if (f === 'date-time') s = v3 ? z.string().datetime() : z.iso.datetime();
        else if (f === 'date') s = v3 ? z.string().date() : z.iso.date();
        else if (f === 'time') s = v3 ? z.string().time() : z.iso.time();
        else if (f === 'ipv4') s = v3 ? z.string().ip({ version: 'v4' }) : z.ipv4();
        else if (f === 'ipv6') s = v3 ? z.string().ip({ version: 'v6' }) : z.ipv6();
        else if (f === 'duration') s = v3 ? z.string().duration() : z.iso.duration();
        else s = z.string();
        if (n.pattern !== undefined) s = s.regex(new RegExp(PATTERNS[n.pattern][0]));
        if (n.minLength !== undefined) s = s.min(n.minLength);
        if (n.maxLength !== undefined) s = s.max(n.maxLength);
        break;
      }
      case 'num': case 'int':
        s = z.number();
        if (n.k === 'int') s = s.int();
        if (n.min !== undefined) s = n.exclusive ? s.gt(n.min) : s.min(n.min);
        if (n.max !== undefined) s = n.exclusive ? s.lt(n.max) : s.max(n.max);
        if (n.multipleOf !== undefined) s = s.multipleOf(n.multipleOf);
        break;
      case 'bool': s = z.boolean(); break;
      case 'nul': s = z.null(); break;
      case 'enum':
        if (n.values.every((v) => typeof v === 'string') && new Set(n.values).size === n.values.length) s = z.enum(n.values);
        else if (n.values.length === 1) s = z.literal(n.values[0]);
        else s = z.union(n.values.map((v) => (v === null ? z.null() : typeof v === 'object' ? z.any() : z.literal(v))));
        break;
      case 'lit': s = n.value !== null && typeof n.value === 'object' ? z.any() : z.literal(n.value); break;
      case 'obj': {
        const shape = {};
        for (const [name, c, required] of n.props) shape[name] = required ? make(c) : make(c).optional();
        s = z.object(shape);
        if (n.additional === 'any') s = v3 ? s.passthrough() : s.loose();
        else if (n.additional === false) s = s.strict();
        else s = s.catchall(make(n.additionalSchema));
        break;
      }
      case 'arr':
        s = z.array(make(n.items));
        if (n.minItems !== undefined) s = s.min(n.minItems);
        if (n.maxItems !== undefined) s = s.max(n.maxItems);
        break;
      case 'tup': s = z.tuple(n.items.map(make)); break;
      case 'nullable': s = make(n.inner).nullable(); break;
      case 'union': s = z.union(n.options.map(make)); break;
      case 'rec': s = z.record(z.string(), make(n.value)); break;
      case 'decimal': s = z.number().multipleOf(n.multipleOf); break;
      case 'types': s = z.union(n.types.map((t) => ({ string: z.string(), integer: z.number().int(), number: z.number(), boolean: z.boolean(),
        null: z.null(), array: z.array(z.any()), object: z.object({}).passthrough() })[t])); break;
      default: s = z.any(); break;      // not, if/then/else, a tree, a boolean schema: not zod's
    }
    if (n.description !== undefined) s = s.describe(n.description);
    made.set(n, s);
    return s;
  };
  return make(ast);
}

// ---- arguments ----------------------------------------------------------------
function genValue(n, r, depth = 0) {
  switch (n.k) {
    case 'str': {
      if (n.format && (n.pattern === undefined || r.chance(0.5))) return r.pick(FORMATS[n.format][0]);
      if (n.pattern !== undefined) return r.pick(PATTERNS[n.pattern][1]);
      let s = r.pick(TEXTS);
      const min = n.minLength ?? 0, max = n.maxLength ?? 40;
      if (s.length > max) s = s.slice(0, max);
      while (s.length < min) s += 'x';
      return s;
    }
    case 'num': case 'int': {
      const lo = n.min ?? -1000, hi = n.max ?? lo + 2000;
      let v = n.k === 'int' ? Math.ceil(lo) + r.int(0, Math.max(0, Math.floor(Math.min(hi - lo, 1000)))) : lo + r.next() * Math.min(hi - lo, 1000);
      if (n.exclusive && v === lo) v = n.k === 'int' ? v + 1 : v + 0.5;
      if (n.multipleOf) v = Math.ceil(v / n.multipleOf) * n.multipleOf;
      if (r.chance(0.1)) v = r.pick(n.k === 'int' ? [0, 1, 2 ** 31, 2 ** 53 + 2, 1e20, -0] : [0, 0.1, 1e-7, 1.5e300, 5e-324, -0]);
      return v;
    }
    case 'bool': return r.chance(0.5);
    case 'nul': return null;
    case 'enum': return r.pick(n.values);
    case 'lit': return n.value;
    case 'obj': {
      const o = {};
      for (const [name, c, required] of n.props) {
        if (required || r.chance(0.5)) setKey(o, name, genValue(c, r, depth + 1));
      }
      if (n.additional === 'any' && r.chance(0.2)) o.extra = r.pick([1, 'x', null, [], {}]);
      if (n.additional === 'schema' && r.chance(0.4)) o.more = genValue(n.additionalSchema, r, depth + 1);
      return o;
    }
    case 'arr': {
      const min = n.minItems ?? 0, max = n.maxItems ?? min + 3;
      const out = [];
      for (let i = r.int(min, max); i > 0; i--) out.push(genValue(n.items, r, depth + 1));
      return out;
    }
    case 'tup': return n.items.map((c) => genValue(c, r, depth + 1));
    case 'nullable': return r.chance(0.3) ? null : genValue(n.inner, r, depth + 1);
    case 'union': return genValue(r.pick(n.options), r, depth + 1);
    case 'rec': {
      const o = {};
      for (let i = r.int(0, 3); i > 0; i--) setKey(o, r.pick(SAFE_WORDS), genValue(n.value, r, depth + 1));
      return o;
    }
    case 'not': return r.pick([1, 'x', null, true, [], {}, 2.5]);
    case 'cond': return r.pick(CONDITIONALS[n.which][1]);
    case 'tree': return genTree(r, 0);
    case 'decimal': return r.pick([0.07, 0.3, 1.1, 0.6, 3, 9, 1e-8 * 3, 0.1 * 3, 4.35, 100]);
    case 'types': return r.pick(n.types.map((t) => ({ string: 's', integer: 7, number: 7.5, boolean: false, null: null, array: [1], object: { k: 1 } })[t]));
    case 'bool-schema': return r.pick([1, 'x', null, {}]);
  }
  return null;
}

function genTree(r, depth) {
  const t = { name: r.pick(TEXTS.slice(0, 5)) };
  if (depth < 3 && r.chance(0.6)) { t.children = []; for (let i = r.int(0, 2); i > 0; i--) t.children.push(genTree(r, depth + 1)); }
  return t;
}

// if/then/else as pages write them, with values each way: [schema, valid, invalid]
const CONDITIONALS = [
  [{ if: { type: 'string' }, then: { minLength: 2 }, else: { type: 'number', minimum: 0 } }, ['ab', 5, 0], ['a', -1, true]],
  [{ type: 'object', properties: { kind: { enum: ['card', 'cash'] } }, required: ['kind'],
    if: { properties: { kind: { const: 'card' } } }, then: { required: ['number'] }, else: { not: { required: ['number'] } } },
    [{ kind: 'card', number: '4111' }, { kind: 'cash' }], [{ kind: 'card' }, { kind: 'cash', number: '1' }, {}]],
  [{ if: { minimum: 10 }, then: { multipleOf: 10 } }, [20, 5, 'x'], [15]],
  [{ then: { const: 1 } }, [2, 'x'], []],
  [{ anyOf: [{ required: ['a'] }, { required: ['b'] }], type: 'object' }, [{ a: 1 }, { b: null }], [{}, { c: 1 }]],
  [{ oneOf: [{ type: 'integer' }, { type: 'number', minimum: 5 }] }, [1, 5.5], [7, 'x']],
  [{ allOf: [{ type: 'string' }, { maxLength: 3 }, { pattern: '^[a-c]*$' }] }, ['abc', ''], ['abcd', 'xyz']],
];

function setKey(o, k, v) {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

// A value the type should refuse: one change at one place.
function breakValue(n, r, v) {
  const wrong = (x) => {
    const t = x === null ? 'null' : Array.isArray(x) ? 'array' : typeof x;
    return r.pick([[1, 2], 'text', 12.5, true, null, {}, [], -0].filter((y) => (y === null ? 'null' : Array.isArray(y) ? 'array' : typeof y) !== t));
  };
  switch (n.k) {
    case 'str':
      if (n.format && r.chance(0.6)) return r.pick(FORMATS[n.format][1]);
      if (n.pattern !== undefined && r.chance(0.6)) return r.pick(PATTERNS[n.pattern][2]);
      if (n.maxLength !== undefined && r.chance(0.5)) return 'y'.repeat(n.maxLength + 1);
      return wrong(v);
    case 'num': case 'int':
      if (n.k === 'int' && r.chance(0.3)) return 1.5;
      if (n.min !== undefined && r.chance(0.5)) return n.exclusive ? n.min : n.min - 1;
      if (n.max !== undefined && r.chance(0.5)) return n.max + (n.exclusive ? 0 : 1);
      if (n.multipleOf && r.chance(0.5)) return n.multipleOf * 1.5 + (n.min ?? 0);
      return r.chance(0.3) ? String(v) : wrong(v);
    case 'enum': return r.chance(0.6) ? 'not-in-enum' : wrong(v);
    case 'lit': return r.chance(0.5) ? 'other' : wrong(v);
    case 'obj': {
      if (v === null || typeof v !== 'object' || Array.isArray(v)) return wrong(v);
      const o = Object.assign({}, v);
      const req = n.props.filter((p) => p[2]);
      const present = n.props.filter((p) => Object.prototype.hasOwnProperty.call(o, p[0]));
      const what = r.weighted([[req.length ? 3 : 0, 'missing'], [n.additional === false ? 3 : 0, 'extra'],
        [present.length ? 4 : 0, 'deep'], [1, 'type']]);
      if (what === 'missing') { delete o[r.pick(req)[0]]; return o; }
      if (what === 'extra') { o.unexpected = 1; return o; }
      if (what === 'deep') {
        const [name, c] = r.pick(present);
        setKey(o, name, breakValue(c, r, o[name]));
        return o;
      }
      return wrong(v);
    }
    case 'arr': {
      if (!Array.isArray(v)) return wrong(v);
      if (n.maxItems !== undefined && r.chance(0.3)) return v.concat(Array(n.maxItems + 1 - v.length).fill(genValue(n.items, r)));
      if (v.length && r.chance(0.6)) { const a = v.slice(); a[r.int(0, a.length - 1)] = breakValue(n.items, r, a[0]); return a; }
      if (n.unique && v.length) return v.concat([v[0]]);
      return wrong(v);
    }
    case 'tup': {
      if (!Array.isArray(v)) return wrong(v);
      const a = v.slice();
      const i = r.int(0, n.items.length - 1);
      a[i] = breakValue(n.items[i], r, a[i]);
      return a;
    }
    case 'nullable': return v === null ? wrong(v) : breakValue(n.inner, r, v);
    case 'union': return r.chance(0.5) ? wrong(v) : { notAnOption: true };
    case 'not': return genValue(n.inner, r);
    case 'cond': return r.pick(CONDITIONALS[n.which][2].length ? CONDITIONALS[n.which][2] : [null]);
    case 'tree': return r.pick([{}, { name: 1 }, { name: 'x', children: [{}] }, { name: 'x', children: [{ name: 'y', children: 'z' }] }]);
    case 'decimal': return r.pick([0.07, 0.3, 1.1, 0.15, 1e-9, 'x']);
    case 'bool-schema': return r.pick([1, 'x']);
    case 'rec': {
      const ks = Object.keys(v || {});
      if (!ks.length) return { k: breakValue(n.value, r, genValue(n.value, r)) };
      const o = Object.assign({}, v);
      o[ks[0]] = breakValue(n.value, r, o[ks[0]]);
      return o;
    }
    default: return wrong(v);
  }
}

// The argument sets of one tool: JSON texts, valid and invalid ones.
function argSets(ast, r) {
  const out = [];
  const valid = r.int(1, 2), invalid = 1;
  for (let i = 0; i < valid; i++) out.push(genValue(ast, r));
  for (let i = 0; i < invalid; i++) out.push(breakValue(ast, r, genValue(ast, r)));
  if (r.chance(0.1)) out.push({});
  if (r.chance(0.05)) out.push(JSON.parse('{"__proto__": {"x": 1}, "a": 1}'));
  return out.map((v) => {
    let text = JSON.stringify(v);
    // numbers JSON.stringify does not write as pages might: 1.0, -0, 1e2
    if (r.chance(0.05)) text = text.replace(/:(\d+)([,}])/, ':$1.0$2');
    if (r.chance(0.03)) text = text.replace(/:(\d+)([,}])/, ':9007199254740993$2');
    if (r.chance(0.03)) text = text.replace(/:(\d+)([,}])/, ':1e2$2');
    if (r.chance(0.02)) text = text.replace(/:(-?[\d.]+)([,}])/, ':1e400$2');   // no double holds it
    if (text === undefined || text[0] !== '{') text = '{}';
    return text;
  });
}

module.exports = { genAst, genObject, plainSchema, zodSchema, argSets, genValue, breakValue, FORMATS, PATTERNS, children };
