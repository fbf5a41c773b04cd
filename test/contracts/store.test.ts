// Runs the shared StoreBackend contract against every store: memory, IndexedDB (fake-indexeddb), files, PostgreSQL (a
// private cluster); test code, trusted side.
import 'fake-indexeddb/auto';
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StoreBackend } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import { IdbStoreBackend } from '../../browser/store.js';
import { FileStoreBackend } from '../../node/store/file-store.js';
import { STORE_CONTRACT } from '../../core/store/contract-suite.js';
import { PgStoreBackend } from '../../node/store/postgres/backend.js';
import { usePostgres } from '../helpers/postgres.js';

const tmp = mkdtempSync(join(tmpdir(), 'ty-store-contract-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;
const opened: IdbStoreBackend[] = [];
afterAll(() => opened.forEach((b) => b.close()));

const cluster = usePostgres();
const pgOpen: PgStoreBackend[] = [];
afterAll(async () => {
  await Promise.all(pgOpen.map((b) => b.close()));
});
/** A second backend over the same storage: another process's (or another machine's) view of the store. */
const peers = new Map<StoreBackend, () => Promise<StoreBackend>>();

const BACKENDS: [string, () => Promise<StoreBackend>][] = [
  ['MemoryStoreBackend', async () => new MemoryStoreBackend()],
  [
    'IdbStoreBackend (fake-indexeddb)',
    async () => {
      const b = await IdbStoreBackend.open({ name: `contract-${n++}` });
      opened.push(b);
      return b;
    },
  ],
  [
    'FileStoreBackend (a second backend over the same folder as peer)',
    async () => {
      const root = join(tmp, `s${n++}`);
      const b = new FileStoreBackend(root);
      peers.set(b, async () => new FileStoreBackend(root));
      return b;
    },
  ],
  [
    'PgStoreBackend (PostgreSQL, a second connection pool as peer)',
    async () => {
      const url = await cluster.pg.createDatabase();
      const b = await PgStoreBackend.open(url, { migrate: true });
      pgOpen.push(b);
      peers.set(b, async () => {
        const p = await PgStoreBackend.open(url);
        pgOpen.push(p);
        return p;
      });
      return b;
    },
  ],
];

for (const [name, make] of BACKENDS) {
  describe(`store contract: ${name}`, () => {
    for (const c of STORE_CONTRACT)
      it(c.name, async () => {
        const b = await make();
        await c.run(b, await peers.get(b)?.());
      });
  });
}

describe('IdbStoreBackend specifics', () => {
  it('data persists across connections to the same database', async () => {
    const a = await IdbStoreBackend.open({ name: 'persist-check' });
    await a.put('bindings', 'tool', new TextEncoder().encode('rev'));
    await a.append('audit', 'one');
    a.close();
    const b = await IdbStoreBackend.open({ name: 'persist-check' });
    opened.push(b);
    expect(new TextDecoder().decode(await b.get('bindings', 'tool'))).toBe('rev');
    expect(await b.readLog('audit')).toEqual(['one']);
  });
  it('a contract case fails on a backend that breaks it (the contract can fail)', async () => {
    class Lossy extends MemoryStoreBackend {
      override async list(): Promise<string[]> {
        return [];
      }
    }
    const c = STORE_CONTRACT.find((x) => x.name.startsWith('list returns'))!;
    await expect(c.run(new Lossy())).rejects.toThrow(/keys/);
  });
});
