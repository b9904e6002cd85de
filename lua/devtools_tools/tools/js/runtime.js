// devtools_tools page runtime: installed once per document (by discover.js,
// through the discovery call), kept off enumeration as
// window.__devtools_tools. It runs tools, post-processes their results the
// way Chrome DevTools for agents does, and hands DOM elements to Lua.
//
// What it must never do: trust page data to be what it claims (a page
// object is copied key by key into a prototype-less object, so "__proto__"
// stays data, and cannot pass for one of our element references), or throw
// out of call()/batch() for a tool's failure (failures are envelopes).
//
// The file is one function expression; Lua calls it with the depth limit.
(function installDevtoolsToolsRuntime(maxDepth) {
  'use strict';
  const KEY = '__devtools_tools';
  if (window[KEY]) return window[KEY];
  // The key Lua uses to mark an element passed as an argument.
  const EL_IN = '\u0000dt-element';
  // The key marking an element in a result: random per document, so page
  // data cannot forge one (it is named in the envelope).
  const randomPart = () => {
    const a = new Uint32Array(4);
    crypto.getRandomValues(a);
    return Array.from(a, (x) => x.toString(36)).join('');
  };
  const EL_OUT = '\u0000dt-element:' + randomPart();
  const MAX_DEPTH = maxDepth;
  // What calls wait with, taken now, when the runtime is installed: a page
  // that replaces Promise's methods or fakes its timers later cannot keep
  // call_many from answering with what settled (its time limit was the
  // page's setTimeout: under fake timers every entry was "did not
  // settle"). Fake timers installed before (sinon's, jest's, by a page
  // under test) replaced setTimeout already: the limit is also an
  // AbortSignal.timeout, a timer of the browser's that they leave alone.
  const apply = Reflect.apply;
  const Promise_ = Promise;
  const resolveWith = Promise.resolve;
  const then = Promise.prototype.then;
  const later = setTimeout;
  const Signal = typeof AbortSignal === 'function' ? AbortSignal : undefined;
  const signalAfter = Signal && Signal.timeout;
  const listen = EventTarget.prototype.addEventListener;
  const stringify = JSON.stringify;
  const isArray = Array.isArray;
  const keysOf = Object.keys;

  // What crosses the wire is what CDP's returnByValue would send, as the
  // reference returns results: no toJSON is ever called. JSON.stringify
  // calls one wherever an object or array inherits it (Prototype.js 1.6
  // gives Array.prototype one that makes arrays strings), so where the
  // page defined one, our own values are written by hand (they are
  // prototype-less objects, arrays and primitives: see processResult).
  const inheritsToJSON = () => 'toJSON' in Array.prototype;   // (Object.prototype's too)
  const writeJSON = (v) => {
    if (v === null || typeof v !== 'object') return stringify(v);   // (a primitive: no toJSON)
    if (isArray(v)) {
      let s = '[';
      for (let i = 0; i < v.length; i++) {
        const x = v[i];
        s += (i ? ',' : '') + (x === undefined || typeof x === 'function' || typeof x === 'symbol' ? 'null' : writeJSON(x));
      }
      return s + ']';
    }
    const keys = keysOf(v);
    let s = '{';
    let first = true;
    for (let i = 0; i < keys.length; i++) {
      const x = v[keys[i]];
      if (x === undefined || typeof x === 'function' || typeof x === 'symbol') continue;
      s += (first ? '' : ',') + stringify(keys[i]) + ':' + writeJSON(x);
      first = false;
    }
    return s + '}';
  };
  // JSON text of one of our values (an envelope, a processed result).
  const text = (v) => (inheritsToJSON() ? writeJSON(v) : stringify(v));
  const settle = (value, onValue, onError) => apply(then, apply(resolveWith, Promise_, [value]), [onValue, onError]);
  // The page's clock for call_many's absolute deadline: performance.now
  // as the browser has it (the prototype's, on the performance object of
  // now), which fake timers that replace performance.now leave alone; none
  // when the page replaced the performance object itself.
  const perf = typeof performance === 'object' ? performance : undefined;
  const perfNow = typeof Performance === 'function' ? Performance.prototype.now : undefined;
  const clock = () => {
    try { const t = apply(perfNow, perf, []); return typeof t === 'number' && t === t ? t : undefined; } catch (_) { return undefined; }
  };

  const describeEl = (el) => {
    let d = (el.localName || el.nodeName || 'element').toLowerCase();
    if (el.id) d += '#' + el.id;
    if (el.classList) for (const c of Array.from(el.classList).slice(0, 3)) d += '.' + c;
    return d;
  };

  // The start of an element's text (white space collapsed), for a person
  // or an agent told which element came back.
  const shortText = (el) => {
    let t;
    try { t = el.textContent; } catch (_) { return ''; }
    if (typeof t !== 'string') return '';
    t = t.slice(0, 400).replace(/\s+/g, ' ').trim();
    return t.length > 80 ? t.slice(0, 79) + '\u2026' : t;
  };

  const errInfo = (e) => {
    let message;
    if (e instanceof Error || (e !== null && typeof e === 'object' && 'message' in e)) message = String(e.message);
    else if (e !== null && typeof e === 'object') { try { message = JSON.stringify(e); } catch (_) { message = String(e); } }
    else message = String(e);
    return { message, name: (e && typeof e === 'object' && e.name) ? String(e.name) : undefined,
             stack: (e && typeof e === 'object' && typeof e.stack === 'string') ? e.stack : undefined };
  };

  // The reference's post-processing, plus BigInt, Symbol and a depth limit.
  // `path` holds the objects and arrays being walked: meeting one of them
  // again, through an object or an array, is a cycle.
  const processResult = (value, stashed) => {
    const path = [];
    const walk = (data, depth) => {
      if (depth > MAX_DEPTH) return '<Max depth>';
      if (typeof Element !== 'undefined' && data instanceof Element) {
        stashed.push(data);
        const ref = Object.create(null);
        ref[EL_OUT] = stashed.length - 1;
        ref.description = describeEl(data);
        ref.text = shortText(data);
        return ref;
      }
      if (data !== null && typeof data === 'object') {
        if (path.includes(data)) return '<Circular reference>';
        if (Array.isArray(data)) {
          path.push(data);
          const out = new Array(data.length);
          for (let i = 0; i < data.length; i++) out[i] = walk(data[i], depth + 1);
          path.pop();
          return out;
        }
        const proto = Object.getPrototypeOf(data);
        if (proto !== Object.prototype && proto !== null) {
          const ctor = data.constructor;
          // (as the reference writes it: an anonymous class is an Object)
          return '<' + ((ctor && ctor.name) || 'Object') + ' instance>';
        }
        path.push(data);
        const out = Object.create(null);   // so a key "__proto__" stays data
        for (const [k, v] of Object.entries(data)) out[k] = walk(v, depth + 1);
        path.pop();
        return out;
      }
      if (typeof data === 'function') return '<Function object>';
      if (typeof data === 'bigint') return data.toString() + 'n';
      if (typeof data === 'symbol') return data.toString();
      return data;
    };
    return walk(value, 0);
  };

  // Is the value already what processResult would make of it (plain
  // objects, arrays and JSON primitives, no cycles, not too deep)? Then
  // JSON.stringify gives the same text without building a copy.
  const isPlain = (value) => {
    const path = [];
    const ok = (data, depth) => {
      const t = typeof data;
      if (t === 'string' || t === 'number' || t === 'boolean' || t === 'undefined' || data === null) return true;
      if (t !== 'object' || depth >= MAX_DEPTH) return false;
      if (Array.isArray(data)) {
        if (Object.getPrototypeOf(data) !== Array.prototype || path.includes(data)) return false;
        path.push(data);
        for (let i = 0; i < data.length; i++) if (!ok(data[i], depth + 1)) return false;
        path.pop();
        return true;
      }
      if (Object.getPrototypeOf(data) !== Object.prototype || path.includes(data)) return false;
      path.push(data);
      for (const k in data) {
        if (!Object.prototype.hasOwnProperty.call(data, k)) continue;
        if (k === '__proto__' || !ok(data[k], depth + 1)) return false;
      }
      path.pop();
      return true;
    };
    return ok(value, 0);
  };

  // Puts the elements passed as extra arguments back where Lua left markers.
  const restore = (v, els, depth) => {
    if (depth > MAX_DEPTH || v === null || typeof v !== 'object') return v;
    if (Array.isArray(v)) { for (let i = 0; i < v.length; i++) v[i] = restore(v[i], els, depth + 1); return v; }
    if (Object.prototype.hasOwnProperty.call(v, EL_IN)) return els[v[EL_IN]];
    for (const k of Object.keys(v)) v[k] = restore(v[k], els, depth + 1);
    return v;
  };

  // The tool at the indexes discovery gave, if it still has that name in a
  // group of that name; else the first of that name in a group of that name
  // (a later discovery may have put other groups before it). Never one of
  // another group: two groups may each have a tool of one name.
  // The tool a call names: at its place (group gi, tool ti) if the group
  // there has its group's name, else the first of that name in a group of
  // that name. `group` is the group's name, or [name, the tool's
  // description]: then only a tool so described will do (group names are
  // not unique, and another task's discovery may have put a group of the
  // same name, with another tool of the same name, before it).
  const findTool = (gi, ti, name, group) => {
    const groups = window.__dtmcp && window.__dtmcp.toolGroups;
    if (!Array.isArray(groups)) return undefined;
    const described = group !== null && typeof group === 'object';
    const gname = described ? group[0] : group;
    const desc = described ? group[1] : undefined;
    const ours = (g) => g && (gname === undefined || g.name === gname) && Array.isArray(g.tools);
    const it = (t) => t && t.name === name && (!described || t.description === desc);
    const g = groups[gi];
    if (ours(g) && it(g.tools[ti])) return g.tools[ti];
    for (const grp of groups) {
      const t = ours(grp) && grp.tools.find(it);
      if (t) return t;
    }
    return undefined;
  };

  const failed = (kind, e) => text({ error: Object.assign({ kind }, errInfo(e)) });

  // Elements a result holds wait here under a key the envelope names
  // ("k"), until Lua takes them. Requests carry no per-call id: identical
  // calls stay identical messages (Chromium answers those measurably faster).
  // What Lua never takes (its call gave up) is dropped a unit at a time,
  // the oldest first, once more than STASH_UNITS are kept: a unit is one
  // call's elements, or one batch's, however many entries it has, and a
  // batch still running is never dropped (its first entries' elements were
  // dropped while its 65th filled the stash: a call_many of 100 Elements
  // got 36 of them back as plain tables).
  const STASH_UNITS = 64;
  const stash = new Map();         // key -> { els, unit }
  const units = new Map();         // unit -> true, oldest first; unit: { keys: Set, open }
  const newUnit = (open) => ({ keys: new Set(), open });
  const drop = (unit) => {
    for (const k of unit.keys) stash.delete(k);
    units.delete(unit);
  };
  let stashKey = 0;
  const keep = (els, unit) => {
    stashKey += 1;
    if (!units.has(unit)) {
      units.set(unit, true);
      for (const u of units.keys()) {
        if (units.size <= STASH_UNITS) break;
        if (!u.open && u !== unit) drop(u);
      }
    }
    unit.keys.add(stashKey);
    stash.set(stashKey, { els, unit });
    return stashKey;
  };
  const finish = (value, unit) => {
    const stashed = [];
    let json;
    try { json = isPlain(value) && !inheritsToJSON() ? stringify(value) : text(processResult(value, stashed)); }
    catch (e) { return failed('result', e); }
    let head = '{"n":0';
    if (stashed.length) {
      const key = keep(stashed, unit || newUnit(false));
      head = '{"n":' + stashed.length + ',"k":' + key + ',"e":' + stringify(EL_OUT);
    }
    return json === undefined ? head + '}' : head + ',"v":' + json + '}';
  };

  // Has the page changed its tools since the last discovery? A single-page
  // app swaps a view's devtoolstooldiscovery listener when its router
  // moves (React's effect cleanup on history.pushState or a hash change),
  // or answers the event with the tools of its current route: the groups
  // the last discovery published hold the unmounted view's functions. So
  // the listeners added to or removed from window are counted (js/watch.js,
  // installed before this file by the same call), and the document's URL
  // is noted; a call made after either changed, before a discovery saw it,
  // answers "changed" instead of running anything, and Lua discovers again.
  const counted = () => { try { return window.__devtools_tools_watch.changes; } catch (_) { return 0; } };
  let seen = { changes: 0, href: undefined };
  const href = () => { try { return location.href; } catch (_) { return undefined; } };
  const changed = () => counted() !== seen.changes || href() !== seen.href;

  const rt = {
    // What a discovery publishes is the page's tools as of now (js/discover.js).
    discovered() { seen = { changes: counted(), href: href() }; },
    // The page's clock (ms), for Lua to place call_many's deadline on it.
    now() { return clock(); },
    // Like the reference's `await tool.execute(args)`, but a tool that
    // answers synchronously is answered without a trip through promises.
    // unit: the stash unit of the batch it is part of (see keep).
    call(gi, ti, name, args, els, group, unit) {
      if (changed()) {
        return '{"error":{"kind":"changed","message":"the page\'s tools changed since they were discovered"}}';
      }
      const tool = findTool(gi, ti, name, group);
      if (!tool) {
        const gname = group !== null && typeof group === 'object' ? group[0] : group;
        return text({ error: { kind: 'not_found', message: 'Tool ' + name + ' not found'
          + (gname === undefined ? '' : ' in group ' + stringify(gname) + ' (the page\'s groups changed)') } });
      }
      if (els && els.length) args = restore(args, els, 0);   // none: a call by expression
      let value;
      try { value = tool.execute(args); }
      catch (e) { return failed('tool', e); }
      if (value !== null && (typeof value === 'object' || typeof value === 'function')) {
        let then;
        try { then = value.then; } catch (e) { return failed('tool', e); }
        if (typeof then === 'function') {
          return settle(value, (v) => finish(v, unit), (e) => failed('tool', e));
        }
      }
      return finish(value, unit);
    },
    // Several calls in one round trip (call_many). Answers an array of
    // envelopes once all settled; with a time limit, what has not settled
    // by then is answered with a "pending" envelope, so the calls that did
    // finish keep their results. The limit is `until`, a time of the
    // page's clock (rt.now): the batch may start late, after the page was
    // busy, and must still answer before the caller's deadline; without a
    // clock, limitMs from when it starts (negative: no limit).
    batch(specs, els, limitMs, until) {
      if (limitMs >= 0 && typeof until === 'number') {
        const t = clock();
        if (t !== undefined) limitMs = until > t ? until - t : 0;
      }
      const out = new Array(specs.length);
      const unit = newUnit(true);          // its entries' elements, kept until it answers
      let waiting = 0;
      let answer = null;                   // answers the batch once all settled
      const settled = () => { waiting -= 1; if (waiting === 0 && answer) answer(); };
      specs.forEach((s, i) => {
        let r;
        try { r = rt.call(s[0], s[1], s[2], typeof s[3] === 'string' ? JSON.parse(s[3]) : s[3], els.slice(s[4], s[4] + s[5]), s[6], unit); }
        catch (e) { r = failed('tool', e); }
        if (typeof r === 'string') out[i] = r;
        else {
          waiting += 1;
          apply(then, r, [(v) => { out[i] = v; settled(); }, settled]);
        }
      });
      const join = () => {
        unit.open = false;                 // (then Lua takes them, as a call's)
        if (unit.keys.size === 0) units.delete(unit);
        for (let i = 0; i < out.length; i++) {
          if (out[i] === undefined) out[i] = '{"error":{"kind":"pending","message":"did not settle"}}';
        }
        return '[' + out.join(',') + ']';
      };
      if (waiting === 0) return join();
      return new Promise_((resolve) => {
        let done = false;
        answer = () => { if (!done) { done = true; resolve(join()); } };
        if (limitMs >= 0) {
          try { apply(later, window, [answer, limitMs]); } catch (_) { /* the signal's then */ }
          try { apply(listen, apply(signalAfter, Signal, [limitMs]), ['abort', answer]); } catch (_) { /* the timer's */ }
        }
      });
    },
    // An element as a result shows it: [description, the start of its text]
    // (page:evaluate{elements = true}: js/evaluate.js).
    describe(el) {
      return [describeEl(el), shortText(el)];
    },
    take(key) {
      const s = stash.get(key);
      if (!s) return [];
      stash.delete(key);
      s.unit.keys.delete(key);
      if (s.unit.keys.size === 0 && !s.unit.open) units.delete(s.unit);
      return s.els;
    },
  };
  Object.defineProperty(window, KEY, { value: rt, enumerable: false, configurable: true });
  return rt;
})
