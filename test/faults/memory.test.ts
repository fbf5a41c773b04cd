// Fault suite: memory outside the V8 heap follows limits.memoryMb (heap + the engine's margin); the host's memory
// budget evicts idle sandboxes; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createNodeHost } from '../../node/host/host.js';
import { DATA_MARGIN_MB, dataLimitMb } from '../../node/os-sandbox/limits.js';
import { probeSandbox } from '../../node/os-sandbox/probe.js';
import { jsTool, tempDir } from './helpers.js';

let tmp: string;
beforeAll(async () => {
  tmp = await tempDir('memory');
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

// Holds 32 MiB ArrayBuffers (touched) until an allocation fails; returns how many MiB it held.
const HOG =
  'const held = []; export default async () => { try { for (let i = 0; i < 200; i++) held.push(new Uint8Array(32 << 20).fill(1)); } catch {} return held.length * 32; };';

describe('memory outside the heap', () => {
  it.each([
    ['node', 256],
    ['node', 512],
    ['deno', 256],
  ] as const)(
    'a %s sandbox with limits.memoryMb %i holds ArrayBuffers up to its heap + margin, never more (or is killed at the limit)',
    async (engine, memoryMb) => {
      const probe = await probeSandbox();
      expect(probe.available && probe.prlimit !== undefined, 'needs bubblewrap and prlimit').toBe(true);
      const host = await createNodeHost({
        home: join(tmp, `home-${engine}-${memoryMb}`),
        globals: { allow: [], deny: [] },
        cwd: tmp,
        python: false,
      });
      try {
        const name = `hog-${engine}-${memoryMb}`;
        await host.registry.install(
          jsTool(name, HOG, {
            execution: { kind: 'sandboxed-code', runtime: 'javascript', engine, source: HOG },
            limits: { memoryMb },
          }),
        );
        const r = await host.invoker.invoke(name, {});
        if (!r.ok) {
          // The engine itself may die at the limit (Deno's own allocations near it): killed, never grown past it.
          expect(r.error.code, JSON.stringify(r)).toBe('E_MEMORY_LIMIT');
          return;
        }
        const held = (r as { result: number }).result;
        expect(held).toBeLessThanOrEqual(dataLimitMb(memoryMb, engine));
        expect(held).toBeGreaterThanOrEqual(Math.min(memoryMb, DATA_MARGIN_MB[engine]) / 2);
      } finally {
        await host.close();
      }
    },
  );

  it('a sandbox that hit its memory limit (its tool caught the failed allocation and holds what it got) is not kept', async () => {
    const probe = await probeSandbox();
    expect(probe.available && probe.prlimit !== undefined, 'needs bubblewrap and prlimit').toBe(true);
    const host = await createNodeHost({
      home: join(tmp, 'home-near-limit'),
      globals: { allow: [], deny: [] },
      cwd: tmp,
      python: false,
    });
    try {
      const grab =
        'const held = []; let calls = 0; export default async (a) => { calls++; if (a.grab) try { for (let i = 0; ' +
        'i < 200; i++) held.push(new Uint8Array(32 << 20).fill(1)); } catch {} return { calls, mb: held.length * 32 }; };';
      await host.registry.install(jsTool('grabber', grab));
      const call = async (grab: boolean) => {
        const r = await host.invoker.invoke('grabber', { grab });
        expect(r.ok, JSON.stringify(r)).toBe(true);
        return (r as { result: { calls: number; mb: number } }).result;
      };
      expect(await call(false)).toEqual({ calls: 1, mb: 0 });
      await new Promise((r) => setTimeout(r, 1000));
      expect((await call(false)).calls).toBe(2); // light: kept, with its state
      const grabbed = await call(true);
      expect(grabbed.calls).toBe(3);
      expect(grabbed.mb).toBeGreaterThan(0);
      await new Promise((r) => setTimeout(r, 1500)); // the pool reads an idle sandbox's memory after 250 ms
      expect(await call(false)).toEqual({ calls: 1, mb: 0 }); // a fresh sandbox: the full one was not kept
    } finally {
      await host.close();
    }
  });

  it('the host memory budget destroys the least recently used idle sandbox when a new one would pass it', async () => {
    // Each node sandbox of 256 MiB heap is charged 512 MiB: two fit in 1100, the third evicts the oldest.
    const host = await createNodeHost({
      home: join(tmp, 'home-budget'),
      globals: { sandbox: 'off', allow: [], deny: [] },
      cwd: tmp,
      python: false,
      memoryBudgetMb: 1100,
    });
    try {
      const src = 'let n = 0; export default async () => ++n;';
      for (const t of ['a', 'b', 'c']) await host.registry.install(jsTool(`budget-${t}`, src));
      const calls = async (t: string) => ((await host.invoker.invoke(`budget-${t}`, {})) as { result: number }).result;
      expect(await calls('a')).toBe(1);
      expect(await calls('b')).toBe(1);
      expect(await calls('a')).toBe(2); // kept: state survives
      expect(await calls('c')).toBe(1); // b was the least recently used idle one
      expect(await calls('a')).toBe(3);
      expect(await calls('b')).toBe(1); // started fresh: its state was gone with its sandbox
    } finally {
      await host.close();
    }
  });
});
