// devtools_tools discovery, point by point as Chrome DevTools for agents
// does it: a new window.__dtmcp.toolGroups, dispatch the
// `devtoolstooldiscovery` event with respondWith, validate each group,
// define window.__dtmcp.executeTool once, wait one setTimeout(0) only when
// nobody answered synchronously (else only for the microtasks queued). Invalid groups are reported with
// console.error and returned to Lua as warnings.
//
// The new list replaces the old one only when the discovery finishes: until
// then calls (of other tasks) find their tools in the old one, and a
// discovery cut short (a timeout, Runtime.terminateExecution) leaves it as
// it was, which is what Lua's cache of tools says.
//
// It runs in the page's main world, as the reference's does (respondWith
// and executeTool must be the page's), so among the page's own globals.
// What it needs of them (setTimeout, JSON) is taken before the event is
// dispatched: a listener that replaces them cannot stop it. The wait for
// the listeners' microtasks is an `await`, the engine's own: a page that
// replaced queueMicrotask cannot stop it either. Globals the page
// replaced before discovery (setTimeout, Promise) are the ones used: Lua
// checks what comes back, and gives up on an iframe that does not answer
// in time (discovery.lua).
//
// What it must never do: let one bad group (invalid, cyclic, nested too
// deep, too large, a getter or Proxy trap that throws while it is read)
// spoil the others, return anything but one JSON text, or not return:
// `finish` never throws (a window.__dtmcp that the page made a number,
// froze, or gave a getter that throws made it throw, and the discovery
// never settled).
//
// What is read of a group is what the reference reads: it returns the
// groups from puppeteer's evaluate, by value (CDP's returnByValue), so
// own enumerable keys, getters run, and no toJSON is ever called (a page
// with Prototype.js's Array.prototype.toJSON has arrays that stringify as
// strings). We write that text ourselves, never through JSON.stringify of
// a page object, and bound it: nesting is counted along the current path
// only (an object shared by two properties is written twice, as the
// reference writes it; only an object inside itself is a cycle), and the
// number of values written per schema and per frame is capped, so a
// schema that shares one sub-schema at every level ({anyOf: [s, s]} 30
// times: 2^30 values written out) is refused in bounded time.
//
// The file is one function expression; Lua calls it with the depth limit
// and the value limit of one schema (a frame may write ten times that).
(function discoverDevtoolsTools(maxDepth, maxValues) {
  'use strict';
  const fresh = [];            // window.__dtmcp.toolGroups once finished
  const quote = JSON.stringify;          // of strings and numbers only: a primitive has no toJSON
  const keysOf = Object.keys;
  const isArray = Array.isArray;
  const finite = Number.isFinite;
  const later = setTimeout;
  const frameValues = maxValues * 10;    // every group of the frame together
  let written = 0;                       // values written for this frame so far
  // Why a schema could not be written: our own type, so nothing a page
  // throws passes for one.
  class Refusal { constructor(why) { this.why = why; } }
  // The JSON text of a value as CDP's returnByValue gives it: objects by
  // their own enumerable keys (getters run; members that are undefined
  // left out), arrays by index (undefined is null), a function as the
  // object it is, numbers that JSON cannot hold as null. A BigInt or a
  // Symbol cannot be returned by value: refused, as a cycle, a nesting
  // deeper than maxDepth, or more than maxValues values are.
  const writeValue = (root) => {
    const path = [];             // the objects from the root to here
    let count = 0;
    const write = (v, depth) => {
      if (++count > maxValues || ++written > frameValues) {
        throw new Refusal(count > maxValues
          ? 'is too large: more than ' + maxValues + ' values once written out (a sub-schema shared by '
            + 'several properties is written once for each)'
          : 'and the rest of the frame\'s tools are too large: more than ' + frameValues
            + ' values once written out');
      }
      if (v === null || v === undefined) return 'null';
      const t = typeof v;
      if (t === 'string') return quote(v);
      if (t === 'boolean') return v ? 'true' : 'false';
      if (t === 'number') return finite(v) ? quote(v) : 'null';
      if (t !== 'object' && t !== 'function') throw new Refusal('holds a ' + t + ', which is not JSON');
      if (depth >= maxDepth) throw new Refusal('nests deeper than ' + maxDepth + ' levels');
      for (let i = 0; i < path.length; i++) {
        if (path[i] === v) throw new Refusal('contains itself (a cycle)');
      }
      path[path.length] = v;
      let s;
      if (isArray(v)) {
        const n = v.length;
        s = '[';
        for (let i = 0; i < n; i++) s += (i ? ',' : '') + write(v[i], depth + 1);
        s += ']';
      } else {
        const keys = keysOf(v);
        s = '{';
        let first = true;
        for (let i = 0; i < keys.length; i++) {
          const x = v[keys[i]];
          if (x === undefined) continue;
          s += (first ? '' : ',') + quote(keys[i]) + ':' + write(x, depth + 1);
          first = false;
        }
        s += '}';
      }
      path.length -= 1;
      return s;
    };
    return write(root, 0);
  };
  // A JSON array of strings, written without the page's Array methods.
  const strings = (list) => {
    let s = '[';
    for (let i = 0; i < list.length; i++) s += (i ? ',' : '') + quote(list[i]);
    return s + ']';
  };
  // An exception's message, whatever was thrown.
  const reason = (e) => {
    try { return String(e && e.message !== undefined ? e.message : e); } catch (_) { return 'an exception'; }
  };
  return new Promise((resolve) => {
    const event = new CustomEvent('devtoolstooldiscovery');
    const groups = [];           // (our arrays grow by index: the page may replace push)
    const warnings = [];
    const skipped = [];          // [group name or null, why], one per warning
    const nameOf = (g) => {
      try { return (g && typeof g.name === 'string') ? g.name : null; } catch (_) { return null; }
    };
    // Every skipped group is a warning for Lua and a console.error in the
    // page (ours too: a getter that throws, a cycle, too deep or large); a
    // console.error the page replaced may throw: the warning stays.
    const skip = (g, name, why, text, what = 'Invalid toolGroup:') => {
      warnings[warnings.length] = text;
      skipped[skipped.length] = [name, why];
      try { console.error(what, g); } catch (_) { /* reported to Lua all the same */ }
    };
    const label = (name) => (name === null ? '' : ' "' + name + '"');
    const skipGroup = (g, why, tail = '; group skipped') => {
      const name = nameOf(g);
      skip(g, name, why, 'Invalid toolGroup' + label(name) + ': ' + why + tail);
    };
    // window.__dtmcp as the reference makes and fills it. One the page made
    // something that cannot hold the tools (a number, a frozen object, a
    // getter that throws) is noted: its groups are skipped when it finishes.
    let unusable;
    const dtmcp = (f) => {
      try { f(); } catch (e) { if (unusable === undefined) unusable = reason(e); }
    };
    const respond = (toolGroup) => {
      dtmcp(() => { if (!window.__dtmcp) window.__dtmcp = {}; });
      let problem;
      if (toolGroup === null || typeof toolGroup !== 'object') problem = 'respondWith needs an object, got ' + (toolGroup === null ? 'null' : typeof toolGroup);
      else if (typeof toolGroup.name !== 'string') problem = 'name must be a string';
      else if (toolGroup.description && typeof toolGroup.description !== 'string') problem = 'description must be a string';
      else if (!isArray(toolGroup.tools)) problem = 'tools must be an array';
      if (problem) {
        skipGroup(toolGroup, problem, '');
        return;
      }
      const name = toolGroup.name;
      for (let i = 0; i < toolGroup.tools.length; i++) {
        const tool = toolGroup.tools[i];
        let bad;
        if (tool === null || typeof tool !== 'object') bad = 'is not an object';
        else if (typeof tool.name !== 'string') bad = 'name must be a string';
        else if (typeof tool.description !== 'string') bad = 'description must be a string';
        // (null is an object to typeof: the reference then fails on it)
        else if (typeof tool.inputSchema !== 'object' || tool.inputSchema === null) {
          bad = 'inputSchema must be an object, got ' + (tool.inputSchema === null ? 'null' : typeof tool.inputSchema);
        } else if (typeof tool.execute !== 'function') bad = 'execute must be a function';
        if (bad) {
          const which = tool && typeof tool.name === 'string' ? '"' + tool.name + '"' : '#' + (i + 1);
          skip(tool, name, 'tool ' + which + ': ' + bad, 'Invalid tool ' + which + ' in group'
            + label(name) + ': ' + bad + '; group skipped', 'Invalid tool:');
          return;
        }
      }
      fresh[fresh.length] = toolGroup;
      dtmcp(() => {
        if (!window.__dtmcp.executeTool) {
          window.__dtmcp.executeTool = async (toolName, args) => {
            if (!window.__dtmcp?.toolGroups || window.__dtmcp.toolGroups.length === 0) {
              throw new Error('No tools found on the page');
            }
            for (const group of window.__dtmcp.toolGroups) {
              const tool = group.tools?.find((t) => t.name === toolName);
              if (tool) return await tool.execute(args);
            }
            throw new Error(`Tool ${toolName} not found`);
          };
        }
      });
      groups[groups.length] = toolGroup;
    };
    // A group whose reading throws (a getter, a revoked Proxy) is a warning
    // too, not an exception in the page's listener that would lose it silently.
    event.respondWith = (toolGroup) => {
      try { respond(toolGroup); } catch (e) {
        skipGroup(toolGroup, 'reading it threw: ' + reason(e));
      }
    };
    // One group's text: {index, name, description?, tools: [{name,
    // description, inputSchema}]}, read again now (a getter may answer
    // otherwise than when respondWith checked it). Throws a Refusal that
    // names the tool whose schema could not be written.
    const describe = (g, index) => {
      const name = g.name;
      const description = g.description;
      const tools = g.tools;
      if (typeof name !== 'string' || !isArray(tools)) throw new Refusal('it changed after respondWith');
      let s = '{"index":' + index + ',"name":' + quote(name);
      if (typeof description === 'string') s += ',"description":' + quote(description);
      s += ',"tools":[';
      for (let i = 0; i < tools.length; i++) {
        const t = tools[i];
        const tname = t.name;
        const tdesc = t.description;
        if (typeof tname !== 'string' || typeof tdesc !== 'string') throw new Refusal('it changed after respondWith');
        let schema;
        try { schema = writeValue(t.inputSchema); } catch (e) {
          throw new Refusal('the inputSchema of tool "' + tname + '" '
            + (e instanceof Refusal ? e.why : 'threw while it was read: ' + reason(e)));
        }
        s += (i ? ',' : '') + '{"name":' + quote(tname) + ',"description":' + quote(tdesc)
          + ',"inputSchema":' + schema + '}';
      }
      return s + ']}';
    };
    // The answer: the groups that could be published and described, with
    // the warnings, as one JSON text.
    const answer = () => {
      dtmcp(() => {                        // (made by a group's respondWith)
        if (window.__dtmcp) {
          window.__dtmcp.toolGroups = fresh;
          if (window.__dtmcp.toolGroups !== fresh) throw new Error('it does not keep toolGroups');
        }
      });
      // calls may run what it published (js/runtime.js: until the page changes its tools)
      try { window.__devtools_tools.discovered(); } catch (_) { /* no runtime: calls answer stale */ }
      let list = '';
      for (let i = 0; i < groups.length; i++) {
        const g = groups[i];            // (at index i of fresh too)
        if (unusable !== undefined) {    // its tools could not be found by a call
          skipGroup(g, 'window.__dtmcp cannot hold the page\'s tools (' + unusable + ')');
          continue;
        }
        let text;
        try { text = describe(g, i); } catch (e) {
          skipGroup(g, e instanceof Refusal ? e.why : 'reading it threw: ' + reason(e));
          continue;
        }
        list += (list === '' ? '' : ',') + text;
      }
      let why = '[';
      for (let i = 0; i < skipped.length; i++) {
        why += (i ? ',' : '') + '[' + (skipped[i][0] === null ? 'null' : quote(skipped[i][0])) + ','
          + quote(skipped[i][1]) + ']';
      }
      // the page's clock as it answers, for Lua to place call_many's deadlines on
      let clock = null;
      try { const t = window.__devtools_tools.now(); if (finite(t)) clock = t; } catch (_) { /* none */ }
      return '{"groups":[' + list + '],"warnings":' + strings(warnings) + ',"skipped":' + why + ']'
        + ',"clock":' + (clock === null ? 'null' : quote(clock)) + '}';
    };
    // Answers once, whatever the page did: a text that is not JSON is
    // Lua's to report.
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      let text;
      try { text = answer(); } catch (e) { /* below */ }
      if (typeof text !== 'string') {
        text = '{"groups":[],"warnings":["discovery could not write its answer (does the page replace JSON.stringify?)"]}';
      }
      resolve(text);
    };
    window.dispatchEvent(event);
    // Answered synchronously: finish after the microtasks the listeners
    // queued (one answering in a microtask beside them is seen too), else
    // after one setTimeout(0).
    if (groups.length > 0) (async () => { await undefined; finish(); })();
    else later(finish, 0);
  });
})
