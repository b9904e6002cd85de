// bench/mcp_client.mjs: the MCP rows of `make bench` through one client,
// the official MCP TypeScript SDK's (as an agent's host runs it):
//   node bench/mcp_client.mjs PLAN.json
// PLAN: {sdk, servers: {NAME: {command, args, env, setup: [{name, arguments}],
// call: {name, arguments}, expect}}, warmup, block, blocks, list_changed:
// {server, rounds, add, remove}, memory: {server, calls, marks}}.
// Every server is started at once; blocks of `block` tools/call requests go
// to each in turn (so noise on a shared machine hits all alike), each
// request timed from the call to its answer. Prints one JSON object:
// {calls: {NAME: [seconds...]}, list_changed: [seconds...], memory:
// [{calls, rss_kib}]} and closes every server (stdin's end).
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
