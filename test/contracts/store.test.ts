// Runs the shared StoreBackend contract against every store: memory, IndexedDB (fake-indexeddb), files; test code,
// trusted side.
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

const tmp = mkdtempSync(join(tmpdir(), 'ty-store-contract-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;
const opened: IdbStoreBackend[] = [];
afterAll(() => opened.forEach((b) => b.close()));

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
  ['FileStoreBackend', async () => new FileStoreBackend(join(tmp, `s${n++}`))],
];

for (const [name, make] of BACKENDS) {
  describe(`store contract: ${name}`, () => {
    for (const c of STORE_CONTRACT) it(c.name, async () => c.run(await make()));
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
