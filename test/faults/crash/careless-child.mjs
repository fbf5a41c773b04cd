// A deliberately careless store writer for the crash harness's self-test: writes an object in place, without a temp
// file or fsync, and reports it done; test side (never product code).
// Usage: node careless-child.mjs HOME. The harness must find it torn (kill/torn modes) and lost (power mode).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const { cidOfBytes } = await import(pathToFileURL(join(ROOT, 'dist', 'core', 'revisions', 'cid.js')).href);
const [home] = process.argv.slice(2);
const bytes = Buffer.from(JSON.stringify({ body: { careless: 'x'.repeat(200) }, domain: 'tysandbox/test/v1' }));
const cid = await cidOfBytes(new Uint8Array(bytes));
mkdirSync(join(home, 'store', 'objects'), { recursive: true });
writeFileSync(join(home, 'store', 'objects', cid), bytes);
process.stdout.write(`${JSON.stringify({ ok: true, object: cid })}\n`);
