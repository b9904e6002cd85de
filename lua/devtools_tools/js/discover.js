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
// What it must never do: let one bad group (invalid, not JSON, nested too
// deep for the wire) spoil the others, or return anything but one JSON text.
//
// The file is one function expression; Lua calls it with the depth limit
// (schemas nested deeper are skipped with a warning).
(function discoverDevtoolsTools(maxDepth) {
  'use strict';
  const fresh = [];            // window.__dtmcp.toolGroups once finished
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
  return new Promise((resolve) => {
    const event = new CustomEvent('devtoolstooldiscovery');
    const groups = [];
    const warnings = [];
    const label = (g) => (g && typeof g.name === 'string') ? ' "' + g.name + '"' : '';
    // Every skipped group is a warning for Lua and a console.error in the
    // page (ours too: a getter that throws, too deep, not JSON); a
    // console.error the page replaced may throw: the warning stays.
    const skip = (g, text, what = 'Invalid toolGroup:') => {
      warnings.push(text);
      try { console.error(what, g); } catch (_) { /* reported to Lua all the same */ }
    };
    const respond = (toolGroup) => {
      if (!window.__dtmcp) window.__dtmcp = {};
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
      groups.push(toolGroup);
    };
    // A group whose reading throws (a getter) is a warning too, not an
    // exception in the page's listener that would lose it silently.
    event.respondWith = (toolGroup) => {
      try { respond(toolGroup); } catch (e) {
        let why;
        try { why = String(e && e.message !== undefined ? e.message : e); } catch (_) { why = 'an exception'; }
        skip(toolGroup, 'Invalid toolGroup: reading it threw: ' + why + '; group skipped');
      }
    };
    const finish = () => {
      if (window.__dtmcp) window.__dtmcp.toolGroups = fresh;   // (made by a group's respondWith)
      const all = fresh;
      const out = [];
      for (const g of groups) {
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
        try { JSON.stringify(desc); out.push(desc); }
        catch (e) { skip(g, 'Invalid toolGroup' + label(g) + ': its schemas are not JSON (' + e.message + '); group skipped'); }
      }
      resolve(JSON.stringify({ groups: out, warnings }));
    };
    window.dispatchEvent(event);
    // Answered synchronously: finish after the microtasks the listeners
    // queued (one answering in a microtask beside them is seen too), else
    // after one setTimeout(0).
    if (groups.length > 0) queueMicrotask(finish); else setTimeout(finish, 0);
  });
})
