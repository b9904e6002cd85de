// tools/differential/reference.js: the reference side of the differential
// run. Starts chrome-devtools-mcp (from the cache directory) as an MCP
// server over stdio, through the official MCP TypeScript SDK client, and on
// each planned page calls what an agent calls: navigate_page,
// list_3p_developer_tools, then execute_3p_developer_tool for each planned
// argument set.
//
//   node reference.js PLAN.jsonl BASE_URL OUT.jsonl
//
// Writes one JSON line per page: {index, groups | listError, calls: [{tool,
// params, error | none | value}]}. Element references in a result ({uid})
// are resolved to the element's data-diff attribute through evaluate_script,
// and written {"\u0000element": tag}, as the Lua side writes its Elements.
//
// What it must never do: wait without a bound (each MCP request has a
// timeout), or leave the server and its Chromium running (closed on every
// way out).
'use strict';
const fs = require('fs');
const { cacheRequire, readLines } = require('./lib');

const req = cacheRequire();
const { Client } = req('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = req('@modelcontextprotocol/sdk/client/stdio.js');

const CHROMIUM = process.env.DIFF_CHROMIUM || '/usr/lib/chromium/chromium';
const TIMEOUT = 20000;           // ms per MCP request
const ELEMENT = '\u0000element';

const serverArgs = [
  req.resolve('chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js'),
  '--categoryExperimentalThirdParty=true', '--experimentalStructuredContent',
  '--headless', '--isolated', '--executablePath', CHROMIUM, '--no-page-id-routing',
  '--usage-statistics=false', '--performance-crux=false',
  ...['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-quic'].map((a) => '--chromeArg=' + a),
];

async function main() {
  const [planFile, base, outFile] = process.argv.slice(2);
  const plan = readLines(planFile);
  const out = fs.openSync(outFile, 'w');
  let stderr = '';
  let client = null;
  // The server (and its Chromium), started again if it exits: one page's
  // crash costs that page's calls, not the rest of the run.
  const start = async () => {
    const transport = new StdioClientTransport({
      command: process.execPath, args: serverArgs, stderr: 'pipe',
      env: { ...process.env, CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS: '1', CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS: '1' },
    });
    const c = new Client({ name: 'devtools_tools-differential', version: '1' });
    await c.connect(transport);
    transport.stderr?.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
    return c;
  };
  client = await start();
  let exited = false;
  const spent = {};               // ms per MCP tool, for DIFF_DEBUG
  const call = async (name, args) => {
    if (exited) throw new Error('the reference\'s server exited earlier on this page');
    const t = Date.now();
    try { return await client.callTool({ name, arguments: args }, undefined, { timeout: TIMEOUT }); }
    catch (e) {
      if (/Connection closed|Not connected/.test(e.message)) exited = true;
      throw e;
    }
    finally { spent[name] = (spent[name] || [0, 0]); spent[name][0] += Date.now() - t; spent[name][1]++; }
  };
  const textOf = (res) => (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  try {
    for (const p of plan) {
      const rec = { index: p.index, calls: [] };
      // navigate_page waits 100 ms for the DOM to stay still after the load;
      // a script that navigates once it has returned is waited for up to the
      // load only (about half the time). navigate_page if that did not work.
      const url = base + p.file;
      let nav = await call('evaluate_script', { waitForStableDom: false,
        function: '() => { setTimeout(() => { location.href = ' + JSON.stringify(url) + '; }, 0); }' }).catch((e) => ({ isError: true, content: [{ type: 'text', text: String(e.message) }] }));
      if (nav.isError || !textOf(nav).includes('Page navigated to ' + url)) {
        nav = await call('navigate_page', { type: 'url', url }).catch((e) => ({ isError: true, content: [{ type: 'text', text: String(e.message) }] }));
      }
      if (nav.isError) rec.navError = textOf(nav);
      const tags = new Map();      // uid -> data-diff: a node keeps its uid while the page lives
      const list = await call('list_3p_developer_tools', {}).catch((e) => ({ isError: true, content: [{ type: 'text', text: String(e.message) }] }));
      if (list.isError) rec.listError = list.structuredContent?.errorMessage ?? textOf(list);
      else {
        rec.groups = (list.structuredContent?.thirdPartyDeveloperTools || []).map((g) => ({
          name: g.name, description: g.description ?? null,
          tools: (g.tools || []).map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema })),
        }));
      }
      let previous;                // the last result as the reference gave it (an element: {uid})
      // Resolving a uid (evaluate_script with it as an argument) disposes of
      // the reference's handle for it, and an execute given that uid next
      // fails ("JSHandle is disposed!"): a result the next call takes is
      // resolved after that call.
      let deferred = null;
      const settle = async () => {
        if (!deferred) return;
        const [entry, value] = deferred;
        deferred = null;
        try { entry.value = await resolveElements(value, call, tags); }
        catch (e) { entry.error = 'unreadable result: ' + e.message; delete entry.value; }
      };
      for (const [j, c] of p.calls.entries()) {
        const passesOn = j + 1 < p.calls.length && p.calls[j + 1].params.includes('\\u0000prev');
        const entry = { tool: c.tool, params: c.params };
        let params = c.params;
        if (params.includes('\\u0000prev')) {
          const o = JSON.parse(params);
          for (const k of Object.keys(o)) if (o[k] === '\u0000prev') o[k] = previous;
          params = JSON.stringify(o);
        }
        previous = undefined;
        let res;
        try {
          res = await call('execute_3p_developer_tool', { toolName: c.tool, params });
        } catch (e) {
          entry.error = 'MCP request failed: ' + e.message;
          rec.calls.push(entry);
          await settle();
          continue;
        }
        await settle();
        if (res.isError) {
          entry.error = res.structuredContent?.errorMessage ?? textOf(res).replace(/^Error: /, '');
        } else {
          const text = res.structuredContent?.message ?? textOf(res);
          if (text === 'Tool returned no result.') entry.none = true;
          else {
            try {
              previous = JSON.parse(text);
              entry.value = JSON.parse(text);
              if (passesOn) deferred = [entry, entry.value];
              else entry.value = await resolveElements(entry.value, call, tags);
            } catch (e) {
              entry.error = 'unreadable result: ' + e.message + ': ' + text.slice(0, 200);
            }
          }
        }
        rec.calls.push(entry);
      }
      await settle();
      if (exited) {
        rec.serverExited = true;
        await client.close().catch(() => {});
        client = await start();
        exited = false;
      }
      fs.writeSync(out, JSON.stringify(rec) + '\n');
    }
  } finally {
    fs.closeSync(out);
    await client.close().catch(() => {});
    if (process.env.DIFF_DEBUG) process.stderr.write(stderr + '\n' + JSON.stringify(spent) + '\n');
  }
}

// {uid: "1_5"} -> {"\u0000element": the element's data-diff}; one
// evaluate_script for the uids of a result not seen before on the page
// (tag: uid -> data-diff). A uid the reference could not name
// ("stashed-N") stays as it is.
async function resolveElements(value, call, tag) {
  const uids = [];
  const isRef = (v) => v !== null && typeof v === 'object' && !Array.isArray(v)
    && Object.keys(v).length === 1 && typeof v.uid === 'string';
  (function find(v) {
    if (isRef(v)) { if (!v.uid.startsWith('stashed-')) uids.push(v.uid); return; }
    if (v !== null && typeof v === 'object') for (const k of Object.keys(v)) find(v[k]);
  })(value);
  if (!uids.length) return value;
  const failed = new Map();
  const unique = Array.from(new Set(uids)).filter((u) => !tag.has(u));
  if (unique.length) {
    const res = await call('evaluate_script', { waitForStableDom: false,
      // (one string, not an array: a page may give arrays a toJSON)
      function: '(...els) => els.map((e) => e.getAttribute("data-diff")).join("\\n")', args: unique });
    const text = res.structuredContent?.message ?? (res.content || []).map((c) => c.text).join('\n');
    const m = /```json\n([\s\S]*?)\n```/.exec(text);
    const joined = m ? JSON.parse(m[1]) : null;
    const tagsOf = typeof joined === 'string' ? joined.split('\n') : null;
    if (Array.isArray(tagsOf)) unique.forEach((u, i) => tag.set(u, tagsOf[i]));
    else unique.forEach((u) => { failed.set(u, 'unresolved: ' + text.slice(0, 100)); });
  }
  const replace = (v) => {
    if (isRef(v)) return tag.has(v.uid) || failed.has(v.uid) ? { [ELEMENT]: tag.get(v.uid) ?? failed.get(v.uid) } : v;
    if (Array.isArray(v)) return v.map(replace);
    if (v !== null && typeof v === 'object') {
      const o = {};
      for (const k of Object.keys(v)) Object.defineProperty(o, k, { value: replace(v[k]), enumerable: true, writable: true, configurable: true });
      return o;
    }
    return v;
  };
  return replace(value);
}

main().catch((e) => { console.error('reference driver: ' + (e.stack || e)); process.exit(2); });
