// bench/mcp_client.mjs: the MCP rows of `make bench` through one client,
// the official MCP TypeScript SDK's (as an agent's host runs it):
//   node bench/mcp_client.mjs PLAN.json
// PLAN: {sdk, servers: {NAME: {command, args, env, setup: [{name, arguments}],
// call: {name, arguments}, expect}}, warmup, block, blocks, list_changed:
// {server, rounds, add, remove}, memory: {server, calls, marks}, startup:
// {servers: {NAME: {command, args, env, first: "list" | "navigate"}}, url,
// tool, init_rounds, first_rounds}}.
// Every server is started at once; blocks of `block` tools/call requests go
// to each in turn (so noise on a shared machine hits all alike), each
// request timed from the call to its answer. Prints one JSON object:
// {calls: {NAME: [seconds...]}, list_changed: [seconds...], memory:
// [{calls, rss_kib}], startup: {initialize: {NAME: [seconds...]},
// first_tool: {NAME: [seconds...]}}} and closes every server (stdin's end).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const require = createRequire(join(plan.sdk, 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { ToolListChangedNotificationSchema } = require('@modelcontextprotocol/sdk/types.js');

const now = () => Number(process.hrtime.bigint()) / 1e9;
const out = { calls: {}, list_changed: [], memory: [], stderr: {} };
const servers = {};

const rss = (pid) => {
  const m = readFileSync('/proc/' + pid + '/status', 'utf8').match(/VmRSS:\s*(\d+)/);
  return m ? Number(m[1]) : null;
};

try {
  for (const [name, s] of Object.entries(plan.servers)) {
    const transport = new StdioClientTransport({ command: s.command, args: s.args, stderr: 'pipe',
      env: { ...process.env, ...(s.env || {}) } });
    let stderr = '';
    transport.stderr?.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
    const client = new Client({ name: 'devtools-tools-bench', version: '1' });
    const entry = { client, transport, s, changed: null, get stderr() { return stderr; } };
    servers[name] = entry;             // (closed at the end, whatever happens next)
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => { if (entry.changed) entry.changed(now()); });
    await client.connect(transport);
    for (const st of s.setup || []) await client.callTool(st);
    const first = await client.callTool(s.call);
    const text = JSON.stringify(first);
    if (first.isError || (s.expect && !text.includes(s.expect))) throw new Error(name + ': unexpected answer ' + text.slice(0, 400));
    out.calls[name] = [];
  }
  const names = Object.keys(servers);
  const block = async (name, n, into) => {
    const { client, s } = servers[name];
    for (let i = 0; i < n; i++) {
      const t0 = now();
      const r = await client.callTool(s.call);
      const t = now() - t0;
      if (r.isError) throw new Error(name + ': ' + JSON.stringify(r).slice(0, 400));
      if (into) into.push(t);
    }
  };
  for (const name of names) await block(name, plan.warmup);
  for (let b = 0; b < plan.blocks; b++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(b + k) % names.length];
      await block(name, plan.block, out.calls[name]);
    }
  }
  // registration to list_changed: a tool adds a listener (then another removes it)
  if (plan.list_changed) {
    const lc = plan.list_changed;
    const e = servers[lc.server];
    for (let i = 0; i < lc.rounds; i++) {
      for (const step of [lc.add, lc.remove]) {
        const got = new Promise((resolve, reject) => {
          const t = setTimeout(() => reject(new Error('no list_changed within 5 s')), 5000);
          e.changed = (at) => { clearTimeout(t); e.changed = null; resolve(at); };
        });
        const t0 = now();
        await e.client.callTool(step);
        out.list_changed.push((await got) - t0);
        await e.client.listTools();
      }
    }
  }
  // start-up, each server spawned afresh, taking turns: the time from the
  // spawn to initialize answered (the SDK's connect), and to the first
  // list that holds the page's tool (ours: tools/list, then after
  // list_changed if it lacked it; the reference: navigate_page, then
  // list_3p_developer_tools until it names the tool)
  if (plan.startup) {
    const st = plan.startup;
    out.startup = { initialize: {}, first_tool: {} };
    const spawnOne = async (name) => {
      const s = st.servers[name];
      const transport = new StdioClientTransport({ command: s.command, args: s.args, stderr: 'pipe',
        env: { ...process.env, ...(s.env || {}) } });
      const client = new Client({ name: 'devtools-tools-bench-startup', version: '1' });
      let changed = null;
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => { if (changed) changed(); });
      const t0 = now();
      await client.connect(transport);
      return { transport, client, t0, init: now() - t0, onChange: (fn) => { changed = fn; } };
    };
    const firstTool = async (name, e) => {
      const s = st.servers[name];
      const deadline = now() + 60;
      if (s.first === 'list') {
        for (;;) {
          const waiting = new Promise((resolve) => e.onChange(resolve));
          const r = await e.client.listTools();
          if (r.tools.some((t) => t.name === st.tool)) return now() - e.t0;
          if (now() > deadline) throw new Error(name + ': no ' + st.tool + ' listed in 60 s');
          await Promise.race([waiting, new Promise((resolve) => setTimeout(resolve, 5000))]);
        }
      }
      await e.client.callTool({ name: 'navigate_page', arguments: { type: 'url', url: st.url } });
      for (;;) {
        const r = await e.client.callTool({ name: 'list_3p_developer_tools', arguments: {} });
        if (JSON.stringify(r).includes(st.tool)) return now() - e.t0;
        if (now() > deadline) throw new Error(name + ': no ' + st.tool + ' listed in 60 s');
      }
    };
    const names = Object.keys(st.servers);
    for (const name of names) { out.startup.initialize[name] = []; out.startup.first_tool[name] = []; }
    for (let i = 0; i < st.init_rounds; i++) {
      for (let k = 0; k < names.length; k++) {
        const name = names[(i + k) % names.length];
        const e = await spawnOne(name);
        out.startup.initialize[name].push(e.init);
        try { await e.client.close(); } catch (_) { /* gone */ }
      }
    }
    for (let i = 0; i < st.first_rounds; i++) {
      for (let k = 0; k < names.length; k++) {
        const name = names[(i + k) % names.length];
        const e = await spawnOne(name);
        try {
          out.startup.first_tool[name].push(await firstTool(name, e));
        } finally {
          try { await e.client.close(); } catch (_) { /* gone */ }
        }
      }
    }
  }
  // resident memory of a server over many calls
  if (plan.memory) {
    const m = plan.memory;
    const e = servers[m.server];
    const pid = e.transport.pid;
    let done = 0;
    for (const mark of m.marks) {
      await block(m.server, mark - done);
      done = mark;
      out.memory.push({ calls: done, rss_kib: rss(pid) });
    }
  }
} catch (err) {
  out.error = String(err && err.stack || err);
} finally {
  for (const [name, e] of Object.entries(servers)) {
    out.stderr[name] = e.stderr.slice(-2000);
    try { await e.client.close(); } catch (_) { /* gone already */ }
  }
}
process.stdout.write(JSON.stringify(out) + '\n');
process.exit(out.error ? 1 : 0);
