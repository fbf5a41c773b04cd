// `tycli store copy`: a file store copied into PostgreSQL whole, verified, or not at all; test side (a private
// cluster).
import { afterAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store } from '../../../core/store/contract.js';
import { ToolRegistry } from '../../../core/revisions/registry.js';
import { StoreAuditLog } from '../../../core/audit/trail.js';
import { usePostgres } from '../../../test/helpers/postgres.js';
import { FileStoreBackend } from '../file-store.js';
import { SecretsFile } from '../secrets.js';
import { PgStoreBackend } from './backend.js';
import { copyFileStore } from './copy.js';
import { PgSecrets, loadStoreKey } from './secrets.js';

const cluster = usePostgres();
const tmp = mkdtempSync(join(tmpdir(), 'ty-copy-'));
const opened: PgStoreBackend[] = [];
afterAll(async () => {
  await Promise.all(opened.map((b) => b.close()));
  rmSync(tmp, { recursive: true, force: true });
});
let n = 0;

async function fileStore(): Promise<{ root: string; store: Store; secrets: SecretsFile; revisions: string[] }> {
  const root = join(tmp, `home${n++}`, 'store');
  const store = new Store(new FileStoreBackend(root));
  const reg = new ToolRegistry(store);
  const revisions: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await reg.install({
      name: i < 2 ? 'double' : 'triple',
      description: `v${i}`,
      parameters: { type: 'object', properties: {}, additionalProperties: false },
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source: `export default async () => ${i};` },
    });
    revisions.push(r.revision);
  }
  const audit = new StoreAuditLog(store);
  for (let i = 0; i < 1200; i++)
    await store.appendJsonl('audit', { v: 1, n: i, text: `line ${i} with "quotes" and unicode é` });
  void audit;
  await store.putJson('tool-storage', revisions[0]!, { kv: { a: 1 } });
  const secrets = new SecretsFile(join(tmp, `secrets${n++}.json`));
  await secrets.set('WEATHER_TOKEN', 'w-secret-value');
  return { root, store, secrets, revisions };
}
async function key() {
  const p = join(tmp, `key${n++}`);
  writeFileSync(p, randomBytes(32));
  chmodSync(p, 0o600);
  return loadStoreKey(p);
}

describe('copyFileStore', () => {
  it('copies every namespace, log line (in order) and secret; PostgreSQL then serves the same store', async () => {
    const src = await fileStore();
    const url = await cluster.pg.createDatabase();
    const k = await key();
    const report = await copyFileStore({ from: src.root, to: url, secrets: src.secrets, key: k });
    expect(report.objects).toBe(3);
    expect(report.namespaces).toMatchObject({ objects: 3, bindings: 2, 'tool-storage': 1 });
    expect(report.logs).toEqual({ audit: 1200 });
    expect(report.secrets).toBe(1);
    const b = await PgStoreBackend.open(url);
    opened.push(b);
    const pg = new Store(b);
    const reg = new ToolRegistry(pg);
    expect((await reg.resolve('double')).revision).toBe(src.revisions[0]);
    expect((await reg.resolve(`triple@${src.revisions[2]}`)).manifest.description).toBe('v2');
    expect(await b.readLog('audit')).toEqual(await new FileStoreBackend(src.root).readLog('audit'));
    expect(await new PgSecrets(b.pool, k).get('WEATHER_TOKEN')).toBe('w-secret-value');
  });

  it('refuses a database that already holds a store, changing nothing', async () => {
    const src = await fileStore();
    const url = await cluster.pg.createDatabase();
    const k = await key();
    await copyFileStore({ from: src.root, to: url, secrets: src.secrets, key: k });
    await expect(copyFileStore({ from: src.root, to: url, secrets: src.secrets, key: k })).rejects.toMatchObject({
      code: 'E_USAGE',
      message: expect.stringContaining('already holds a store'),
    });
    const b = await PgStoreBackend.open(url);
    opened.push(b);
    expect((await b.readLog('audit')).length).toBe(1200);
  });

  it('a source object altered on disk stops the copy with E_INTEGRITY and leaves the database empty', async () => {
    const src = await fileStore();
    await src.store.backend.put('objects', src.revisions[1]!, new TextEncoder().encode('{"tampered":true}'));
    const url = await cluster.pg.createDatabase();
    await expect(
      copyFileStore({ from: src.root, to: url, secrets: src.secrets, key: await key() }),
    ).rejects.toMatchObject({ code: 'E_INTEGRITY', data: { objects: [src.revisions[1]] } });
    // checked before anything is created: not even the schema
    expect(cluster.pg.psql("SELECT to_regclass('tycli_entries') IS NULL", new URL(url).pathname.slice(1))).toBe('t');
  });

  it('secrets without a store key are refused before anything is written', async () => {
    const src = await fileStore();
    const url = await cluster.pg.createDatabase();
    await expect(copyFileStore({ from: src.root, to: url, secrets: src.secrets })).rejects.toMatchObject({
      code: 'E_USAGE',
      message: expect.stringContaining('TYCLI_STORE_KEY_FILE'),
    });
  });
});
