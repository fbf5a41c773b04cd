// The crash harness's "audit append" scenario: appends audit records through the file store every way the host does,
// printing each one's id once its append resolved; test side (a host process under test, on dist/).
// Usage: node append-child.mjs HOME TAG
//   group-committed appends (Store.appendJsonl, lines under PIPE_BUF), a staged record made durable by syncLog (the
//   intent record of a call), two appends in flight at once (one fsync for both), and a record longer than PIPE_BUF
//   (written alone under the log's lock, node/store/append.ts appendLine).
// Prints one JSON line per record: {"appended": "<call id>"} after its append (or its syncLog) resolved.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const dist = (p) => import(pathToFileURL(join(ROOT, 'dist', p)).href);
const { FileStoreBackend } = await dist('node/store/file-store.js');
const { Store } = await dist('core/store/contract.js');

const [home, tag = 'a'] = process.argv.slice(2);
const store = new Store(new FileStoreBackend(join(home, 'store')));
let n = 0;
const record = (extra = {}) => ({
  v: 1,
  time: new Date().toISOString(),
  principal: 'cli:user',
  tool: 'crash-harness',
  revision: 'bagaaierab',
  kind: 'tool',
  decision: 'allow',
  rule: 'mode standard',
  list: 'mode',
  scope: 'default',
  durationMs: 0,
  outcome: 'ok',
  call: `${tag}-${process.pid}-${++n}`,
  ...extra,
});
const told = (r) => process.stdout.write(`${JSON.stringify({ appended: r.call })}\n`);

const first = record({ outcome: 'started', host: `crash:${process.pid}:0` });
await store.appendJsonl('audit', first);
told(first);
const staged = record({ outcome: 'started' });
const { durable } = await store.appendJsonlStaged('audit', staged);
await store.syncLog('audit');
await durable;
told(staged);
const pair = [record(), record({ outcome: 'error', code: 'E_TOOL_FAILED' })];
await Promise.all(pair.map((r) => store.appendJsonl('audit', r)));
for (const r of pair) told(r);
// longer than PIPE_BUF: the locked path
const long = record({ target: 't'.repeat(2000), rule: `fetch(read:https://${'r'.repeat(2000)}.example)` });
await store.appendJsonl('audit', long);
told(long);
const last = record();
await store.appendJsonl('audit', last);
told(last);
