// Fault suite: calls to one retained sandbox run in the order they were made, under 1,000 concurrent invokes; test
// side.
import { afterAll, describe, expect, it } from 'vitest';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createNodeHost } from '../../node/host/host.js';
import { jsTool, tempDir } from './helpers.js';

let tmp: string | undefined;
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('FIFO per sandbox', () => {
  it('1,000 concurrent calls to one retained sandbox run in invoke order (real gate, audit and file store)', async () => {
    tmp = await tempDir('fifo');
    const host = await createNodeHost({
      home: join(tmp, 'home'),
      globals: { sandbox: 'off', allow: [], deny: [] },
      cwd: tmp,
      python: false,
    });
    try {
      // The sandbox's module state counts calls: each returns the position it ran at.
      await host.registry.install(jsTool('order', 'let n = 0; export default async (a) => ({ i: a.i, at: n++ });'));
      const calls = Array.from({ length: 1000 }, (_, i) => host.invoker.invoke('order', { i }));
      const results = await Promise.all(calls);
      const failed = results.filter((r) => !r.ok);
      expect(failed, JSON.stringify(failed[0])).toHaveLength(0);
      const outOfOrder = results.filter((r, i) => r.ok && (r.result as { at: number }).at !== i).length;
      expect(outOfOrder).toBe(0);
    } finally {
      await host.close();
    }
  });
});
