// tools/differential/suite.js: checks the reasons in the list of
// JSON-Schema-Test-Suite cases `make conformance` tolerates, against the
// validator the reference uses: the ajv 6 chrome-devtools-mcp 1.11.0
// bundles, as its tools/thirdPartyDeveloper.js makes it (`new ajv()`).
//
//   node suite.js SUITE_DIR TOLERATED      (make conformance-ajv)
//
// A case under "= ajv6: ..." must be one where ajv 6 compiles the schema
// and gives the verdict the suite does not want (the one we give); a case
// under "= ajv6-refuses: ..." one where ajv 6 throws when it compiles the
// schema. Remote documents (SUITE_DIR/remotes) are added to ajv under their
// http://localhost:1234/ URIs; one ajv refuses to add stays out. Prints
// one line per case that does not hold, then a count; exits 1 if any.
//
// What it must never do: reach the network, or change the list.
'use strict';
const fs = require('fs');
const path = require('path');
const { pathToFileURL } = require('url');

const [suite, listFile] = process.argv.slice(2);
if (!suite || !listFile) {
  console.error('usage: node suite.js SUITE_DIR TOLERATED');
  process.exit(2);
}

function walk(dir, out = []) {
  for (const name of fs.readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    if (fs.statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.json')) out.push(p);
  }
  return out;
}

// "FILE: GROUP / CASE" -> "ajv6" | "ajv6-refuses"
function readList(file) {
  const tags = new Map();
  let tag = null;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^= ([a-z0-9-]+): /.exec(line);
    if (m) { tag = m[1]; continue; }
    tags.set(line, tag);
  }
  return tags;
}

async function main() {
  const dir = process.env.DIFF_CACHE;
  if (!dir) throw new Error('DIFF_CACHE is not set (run through make conformance-ajv)');
  const bundle = path.join(dir, 'node_modules/chrome-devtools-mcp/build/src/third_party/index.js');
  const { ajv: Ajv } = await import(pathToFileURL(bundle).href);
  const remotes = path.join(suite, 'remotes');
  const remoteDocs = walk(remotes).map((p) => [
    'http://localhost:1234/' + path.relative(remotes, p).split(path.sep).join('/'),
    JSON.parse(fs.readFileSync(p, 'utf8'))]);
  const tags = readList(listFile);
  const seen = new Set();
  let bad = 0;
  let held = 0;
  const warn = console.warn;
  console.warn = () => {};        // ajv 6 warns of keywords beside a $ref
  for (const folder of ['draft7', 'draft7/optional', 'draft7/optional/format']) {
    const d = path.join(suite, 'tests', folder);
    for (const name of fs.readdirSync(d).filter((f) => f.endsWith('.json')).sort()) {
      for (const group of JSON.parse(fs.readFileSync(path.join(d, name), 'utf8'))) {
        const ajv = new Ajv();
        for (const [uri, doc] of remoteDocs) {
          try { ajv.addSchema(doc, uri); } catch (e) { /* ajv 6 refuses it: it stays out */ }
        }
        let validate = null;
        let thrown = null;
        try { validate = ajv.compile(group.schema); } catch (e) { thrown = e.message; }
        for (const c of group.tests) {
          const key = `${folder}/${name}: ${group.description} / ${c.description}`;
          const tag = tags.get(key);
          if (tag === undefined) continue;
          seen.add(key);
          let why = null;
          if (tag === 'ajv6') {
            if (thrown !== null) why = `ajv 6 refuses the schema (${thrown})`;
            else if (validate(c.data) === c.valid) why = `ajv 6 gives the suite's verdict (${c.valid})`;
          } else if (tag === 'ajv6-refuses') {
            if (thrown === null) why = `ajv 6 compiles the schema (verdict ${validate(c.data)})`;
          } else {
            why = `unknown reason tag "${tag}"`;
          }
          if (why) { bad++; console.log(`  ${key}: listed as ${tag}, but ${why}`); } else held++;
        }
      }
    }
  }
  console.warn = warn;
  for (const key of tags.keys()) {
    if (!seen.has(key)) { bad++; console.log(`  ${key}: names no case of the suite`); }
  }
  console.log(`conformance-ajv: ${held} tolerated cases hold against ajv 6, ${bad} do not`);
  process.exit(bad ? 1 : 0);
}

main().catch((e) => { console.error(e.stack || String(e)); process.exit(2); });
