// One file-store write on a home, for the power-loss tests (test/faults/power-loss.test.ts); test side (a host process
// under test, on dist/).
// Usage: node store-child.mjs HOME OP, OP one of: put (an entry in a new namespace), append (a short log line),
// append-long (a line longer than PIPE_BUF, the locked path), secret (a secret in a new config folder).
// Prints {"ok":true,"op":OP} once the write resolved (reported done).
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const dist = (p) => import(pathToFileURL(join(ROOT, 'dist', p)).href);
const [home, op] = process.argv.slice(2);
const { FileStoreBackend } = await dist('node/store/file-store.js');
const store = new FileStoreBackend(join(home, 'store'));
if (op === 'put') await store.put('objects', 'entry', new TextEncoder().encode('{"durable":true}'));
else if (op === 'append') await store.append('audit', '{"durable":true}');
else if (op === 'append-long') await store.append('audit', JSON.stringify({ durable: true, pad: 'x'.repeat(5000) }));
else if (op === 'secret') {
  const { SecretsFile } = await dist('node/store/secrets.js');
  await new SecretsFile(join(home, 'config', 'secrets.json')).set('TOK', 'a-durable-secret');
} else throw new Error(`unknown op ${op}`);
process.stdout.write(`${JSON.stringify({ ok: true, op })}\n`);
