// The official MCP TypeScript SDK's client against `devtools-tools mcp`
// (spec/mcp_interop_spec.lua runs it): node mcp_interop.mjs SDK_DIR URL
// starts the server through the SDK's StdioClientTransport, goes through
// initialize, tools/list, calls (a result, isError), a list change, a
// cancelled call and the close, and prints what it saw as one JSON object
// on stdout. Each step's failure is recorded, not thrown, so the spec
// names the step.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';

const [sdkDir, url, bin] = process.argv.slice(2);
const require = createRequire(join(sdkDir, 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { ToolListChangedNotificationSchema } = require('@modelcontextprotocol/sdk/types.js');

const out = { steps: {} };
const step = async (name, fn) => {
  try { out.steps[name] = { ok: true, value: await fn() }; } catch (e) { out.steps[name] = { ok: false, error: String(e && e.stack || e) }; }
};

const transport = new StdioClientTransport({
  command: bin, args: ['mcp', url, '--webmcp', '--allow-eval'], stderr: 'pipe',
  env: { ...process.env },
});
let stderr = '';
transport.stderr?.on('data', (d) => { stderr += d; });
const client = new Client({ name: 'devtools-tools-interop', version: '1.0.0' });
let changed = 0;
let onChange = null;
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changed += 1;
  if (onChange) onChange();
});
const nextChange = (ms) => new Promise((resolve, reject) => {
  const t = setTimeout(() => reject(new Error('no list_changed in ' + ms + ' ms')), ms);
  onChange = () => { clearTimeout(t); onChange = null; resolve(true); };
});

await step('initialize', async () => {
  await client.connect(transport);
  return { version: client.getServerVersion(), capabilities: client.getServerCapabilities(),
    protocol: transport._protocolVersion ?? null, instructions: client.getInstructions() };
});
await step('list', async () => {
  const r = await client.listTools();
  return r.tools.map((t) => ({ name: t.name, type: t.inputSchema.type, annotations: t.annotations ?? null }));
});
await step('call', async () => {
  const r = await client.callTool({ name: 'echo', arguments: { text: 'from node', n: 3 } });
  return { content: r.content, structured: r.structuredContent ?? null, isError: r.isError ?? false };
});
await step('webmcp', async () => {
  const r = await client.callTool({ name: 'add', arguments: { a: 40, b: 2 } });
  return { structured: r.structuredContent ?? null };
});
await step('isError', async () => {
  const r = await client.callTool({ name: 'pick', arguments: { colour: 'pink' } });
  return { isError: r.isError ?? false, text: r.content[0].text };
});
await step('unknown', async () => {
  try {
    await client.callTool({ name: 'no_such_tool', arguments: {} });
    return { threw: false };
  } catch (e) { return { threw: true, code: e.code ?? null, message: e.message }; }
});
await step('list_changed', async () => {
  const waiting = nextChange(10000);
  await client.callTool({ name: 'addGroup', arguments: {} });
  await waiting;
  const r = await client.listTools();
  return { changed, added: r.tools.some((t) => t.name === 'added') };
});
await step('cancel', async () => {
  const ac = new AbortController();
  const started = Date.now();
  const p = client.callTool({ name: 'never', arguments: {} }, undefined, { signal: ac.signal });
  setTimeout(() => ac.abort('the interop spec cancels'), 200);
  let how;
  try { await p; how = 'answered'; } catch (e) { how = 'rejected: ' + e.message; }
  // the server goes on answering
  const after = await client.callTool({ name: 'scalar', arguments: {} });
  return { how, ms: Date.now() - started, after: after.structuredContent ?? null };
});
await step('close', async () => {
  const pid = transport.pid;
  const started = Date.now();
  await client.close();
  // the server exits once stdin ends
  for (let i = 0; i < 300; i++) {
    try { process.kill(pid, 0); } catch { return { pid, ms: Date.now() - started, exited: true }; }
    await new Promise((r) => setTimeout(r, 10));
  }
  return { pid, exited: false };
});
// Started before the app: a server on a port nothing listens on yet
// answers initialize, lists its built-ins, and once the app listens sends
// list_changed; the SDK lists the page's tools then and calls one.
const APP = `<!doctype html><meta charset="utf-8"><title>late app</title><script>
window.addEventListener('devtoolstooldiscovery', (e) => e.respondWith({ name: 'late', tools: [
  { name: 'hello', description: 'Says hello', inputSchema: { type: 'object', properties: { who: { type: 'string' } } },
    execute: ({ who }) => 'hello ' + who },
] }));
</script>`;
const freePort = () => new Promise((resolve) => {
  const s = createNetServer();
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});
let app = null;
await step('start_before_app', async () => {
  const port = await freePort();
  const late = new StdioClientTransport({
    command: bin, args: ['mcp', `http://127.0.0.1:${port}/app.html`], stderr: 'pipe', env: { ...process.env },
  });
  let lateErr = '';
  late.stderr?.on('data', (d) => { lateErr += d; });
  const c2 = new Client({ name: 'devtools-tools-interop-late', version: '1.0.0' });
  let notify = null;
  let changes = 0;
  c2.setNotificationHandler(ToolListChangedNotificationSchema, () => { changes += 1; if (notify) notify(); });
  try {
    const t0 = Date.now();
    await c2.connect(late);
    const initMs = Date.now() - t0;
    const before = (await c2.listTools()).tools.map((t) => t.name);
    const notUp = await c2.callTool({ name: 'hello', arguments: { who: 'early' } });
    const changed = new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('no list_changed in 30 s; stderr: ' + lateErr.slice(-1000))), 30000);
      notify = () => { clearTimeout(t); resolve(true); };
    });
    app = createServer((req, res) => { res.writeHead(200, { 'content-type': 'text/html' }); res.end(APP); });
    await new Promise((resolve) => app.listen(port, '127.0.0.1', resolve));
    await changed;
    const after = (await c2.listTools()).tools.map((t) => t.name);
    const called = await c2.callTool({ name: 'hello', arguments: { who: 'late' } });
    return { initMs, before, notUp: { isError: notUp.isError ?? false, text: notUp.content[0].text },
      changes, after, called: called.structuredContent ?? null };
  } finally {
    await c2.close().catch(() => {});
  }
});
if (app) app.close();
out.stderr = stderr.slice(-4000);
process.stdout.write(JSON.stringify(out) + '\n');
