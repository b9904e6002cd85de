// The reference, chrome-devtools-mcp, driven through the official MCP SDK
// client on a browser someone else runs (spec/e2e/mcp_shared_spec.lua):
//   node mcp_shared.mjs CACHE_DIR BROWSER_URL
// starts `chrome-devtools-mcp --browserUrl BROWSER_URL` and then reads one
// command a line on stdin, answering each with one JSON line on stdout:
//   {"do":"navigate","url":U}   navigate_page to U
//   {"do":"click","text":T}     take_snapshot, then click the element whose line holds T
//   {"do":"list3p"}             list_3p_developer_tools (the page's tools, as the reference sees them)
//   {"do":"quit"}               closes the client (and the reference with it)
// Each answer is {"ok":true,"text":...} or {"ok":false,"error":...}.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const [dir, browserUrl] = process.argv.slice(2);
const require = createRequire(join(dir, 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const textOf = (r) => (r.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

const transport = new StdioClientTransport({
  command: 'node',
  args: [join(dir, 'node_modules/chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js'),
    '--browserUrl', browserUrl, '--categoryExperimentalThirdParty=true', '--no-page-id-routing',
    '--usage-statistics=false', '--performance-crux=false'],
  env: { ...process.env, CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS: '1', CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS: '1' },
  stderr: 'pipe',
});
let stderr = '';
transport.stderr?.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
const client = new Client({ name: 'devtools-tools-shared-spec', version: '1' });

const call = async (name, args) => {
  const r = await client.callTool({ name, arguments: args });
  const text = textOf(r);
  if (r.isError) throw new Error(name + ': ' + text);
  return text;
};

const commands = {
  navigate: async (c) => call('navigate_page', { type: 'url', url: c.url }),
  click: async (c) => {
    const snap = await call('take_snapshot', {});
    const line = snap.split('\n').find((l) => l.includes(c.text));
    const uid = line && (line.match(/uid=(\S+)/) || [])[1];
    if (!uid) throw new Error('no element with ' + JSON.stringify(c.text) + ' in the snapshot:\n' + snap.slice(0, 2000));
    return call('click', { uid });
  },
  list3p: async () => call('list_3p_developer_tools', {}),
};

try {
  await client.connect(transport);
  say({ ok: true, text: 'connected' });
} catch (e) {
  say({ ok: false, error: String(e && e.stack || e), stderr });
  process.exit(1);
}
const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  let c;
  try { c = JSON.parse(line); } catch { say({ ok: false, error: 'not JSON: ' + line }); continue; }
  if (c.do === 'quit') break;
  const fn = commands[c.do];
  if (!fn) { say({ ok: false, error: 'unknown command ' + c.do }); continue; }
  try { say({ ok: true, text: await fn(c) }); } catch (e) { say({ ok: false, error: String(e && e.message || e), stderr }); }
}
await client.close().catch(() => {});
say({ ok: true, text: 'closed' });
process.exit(0);
