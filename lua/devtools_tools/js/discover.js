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
// What it must never do: let one bad group (invalid, not JSON, nested too
// deep for the wire, by itself or through a toJSON or a getter) spoil the
// others, return anything but one JSON text,
// or not return: `finish` never throws (a window.__dtmcp that the page
// made a number, froze, or gave a getter that throws made it throw, and
// the discovery never settled).
//
// The file is one function expression; Lua calls it with the depth limit
// (schemas nested deeper are skipped with a warning).
(function discoverDevtoolsTools(maxDepth) {
  'use strict';
  const fresh = [];            // window.__dtmcp.toolGroups once finished
  const stringify = JSON.stringify;
  const later = setTimeout;
  // How deep a JSON value nests (a cycle counts as too deep).
  const tooDeep = (value, limit) => {
    const stack = [[value, 0]];
    const seen = new Set();
    while (stack.length) {
      const [v, d] = stack.pop();
      if (v === null || typeof v !== 'object') continue;
      if (d >= limit || seen.has(v)) return true;
      seen.add(v);
      for (const k of Object.keys(v)) stack.push([v[k], d + 1]);
    }
    return false;
  };
  // How deep a JSON text nests (what Lua's decoder counts).
  const textTooDeep = (text, limit) => {
    let depth = 0;
    let inString = false;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (inString) {
        if (c === 92) i++;                          // \ and the character it escapes
        else if (c === 34) inString = false;
      } else if (c === 34) inString = true;
      else if (c === 123 || c === 91) { if (++depth > limit) return true; }
      else if (c === 125 || c === 93) depth--;
    }
    return false;
  };
  // An exception's message, whatever was thrown.
  const reason = (e) => {
    try { return String(e && e.message !== undefined ? e.message : e); } catch (_) { return 'an exception'; }
  };
  return new Promise((resolve) => {
    const event = new CustomEvent('devtoolstooldiscovery');
    const groups = [];
    const warnings = [];
    const label = (g) => {
      try { return (g && typeof g.name === 'string') ? ' "' + g.name + '"' : ''; } catch (_) { return ''; }
    };
    // Every skipped group is a warning for Lua and a console.error in the
    // page (ours too: a getter that throws, too deep, not JSON); a
    // console.error the page replaced may throw: the warning stays.
    const skip = (g, text, what = 'Invalid toolGroup:') => {
      warnings.push(text);
      try { console.error(what, g); } catch (_) { /* reported to Lua all the same */ }
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
      else if (!Array.isArray(toolGroup.tools)) problem = 'tools must be an array';
      if (problem) {
        skip(toolGroup, 'Invalid toolGroup' + label(toolGroup) + ': ' + problem);
        return;
      }
      for (let i = 0; i < toolGroup.tools.length; i++) {
        const tool = toolGroup.tools[i];
        let bad;
        if (tool === null || typeof tool !== 'object') bad = 'is not an object';
        else if (typeof tool.name !== 'string') bad = 'name must be a string';
        else if (typeof tool.description !== 'string') bad = 'description must be a string';
        else if (typeof tool.inputSchema !== 'object') bad = 'inputSchema must be an object';
        else if (typeof tool.execute !== 'function') bad = 'execute must be a function';
        if (bad) {
          skip(tool, 'Invalid tool ' + (tool && typeof tool.name === 'string' ? '"' + tool.name + '"' : '#' + (i + 1))
            + ' in group' + label(toolGroup) + ': ' + bad + '; group skipped', 'Invalid tool:');
          return;
        }
      }
      fresh.push(toolGroup);
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
      groups.push(toolGroup);
    };
    // A group whose reading throws (a getter) is a warning too, not an
    // exception in the page's listener that would lose it silently.
    event.respondWith = (toolGroup) => {
      try { respond(toolGroup); } catch (e) {
        skip(toolGroup, 'Invalid toolGroup: reading it threw: ' + reason(e) + '; group skipped');
      }
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
      const all = fresh;
      const out = [];
      for (const g of groups) {
        if (unusable !== undefined) {    // its tools could not be found by a call
          skip(g, 'Invalid toolGroup' + label(g) + ': window.__dtmcp cannot hold the page\'s tools ('
            + unusable + '); group skipped');
          continue;
        }
        let desc;
        try {
          desc = { index: all.indexOf(g), name: g.name, description: typeof g.description === 'string' ? g.description : undefined,
            tools: g.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema })) };
        } catch (e) {             // a getter that threw the second time it was read
          skip(g, 'Invalid toolGroup' + label(g) + ': reading it threw; group skipped');
          continue;
        }
        const deep = desc.tools.find((t) => tooDeep(t.inputSchema, maxDepth));
        if (deep) {
          skip(g, 'Invalid toolGroup' + label(g) + ': the inputSchema of tool "' + deep.name
            + '" nests deeper than ' + maxDepth + ' levels; group skipped');
          continue;
        }
        let text;
        try { text = stringify(desc); }
        catch (e) {
          skip(g, 'Invalid toolGroup' + label(g) + ': its schemas are not JSON (' + reason(e) + '); group skipped');
          continue;
        }
        // What is sent is measured too: a toJSON or a getter may make it
        // deeper than the object (1200 levels made the whole frame's answer
        // too deep for Lua, and every group of it was lost). The tool is
        // named if its schema alone still says so.
        if (typeof text !== 'string' || textTooDeep(text, maxDepth + 3)) {
          const culprit = desc.tools.find((t) => {
            try { const j = stringify(t.inputSchema); return typeof j === 'string' && textTooDeep(j, maxDepth); }
            catch (_) { return false; }
          });
          skip(g, 'Invalid toolGroup' + label(g) + ': ' + (culprit ? 'the inputSchema of tool "' + culprit.name + '"'
            : 'its JSON') + ' nests deeper than ' + maxDepth + ' levels; group skipped');
          continue;
        }
        out.push(text);
      }
      const w = stringify(warnings);
      if (typeof w !== 'string') return undefined;
      let list = '';
      for (let i = 0; i < out.length; i++) list += (i ? ',' : '') + out[i];
      return '{"groups":[' + list + '],"warnings":' + w + '}';
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
