// tycli's host keeps many quickjs sandboxes warm: they count against the pool's maxInstances, not the 16 process
// sandboxes of maxRetained, and are charged what they hold against the memory budget; test side (real host, real
// sandbox host process under bubblewrap when available).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseManifest } from '../../core/manifest/parse.js';
import { createNodeHost, type NodeHost } from '../../node/host/host.js';
import { probeSandbox } from '../../node/os-sandbox/probe.js';
import { buildSandboxHost } from '../../node/quickjs/build.mjs';

let tmp: string;
let host: NodeHost;
const osWrapped = (await probeSandbox()).available;
const counter = (name: string, engine: 'quickjs' | 'node') =>
  parseManifest({
    name,
    description: 'counts its calls',
    parameters: { type: 'object' },
    execution: {
      kind: 'sandboxed-code',
      runtime: 'javascript',
      engine,
      source: 'let n = 0;\nexport default async () => ++n',
    },
  });

beforeAll(async () => {
  await buildSandboxHost();
  tmp = mkdtempSync(join(tmpdir(), 'tysandbox-qjs-retained-'));
  const sandbox = (await probeSandbox()).available ? 'required' : 'off';
  host = await createNodeHost({
    home: join(tmp, 'home'),
    globals: { sandbox, allow: [], deny: [] },
    io: { stdout: new PassThrough(), stderr: new PassThrough(), stdin: new PassThrough(), interactive: false },
    python: false,
    env: {},
    cwd: tmp,
    memoryBudgetMb: 1200,
  });
}, 120_000);
afterAll(async () => {
  await host?.close();
  rmSync(tmp, { recursive: true, force: true });
});

describe('the host pool with quickjs sandboxes', () => {
  // The budget holds 2 node sandboxes (charged 512 MiB each: heap cap and margin) and 60 quickjs ones charged what they
  // hold (about 2 MiB each); charged at their limits (over 256 MiB each) not even one quickjs sandbox more would fit.
  it('keeps 60 quickjs sandboxes warm beside 2 node ones (more than maxRetained), within a 1200 MiB budget', async () => {
    const names = Array.from({ length: 60 }, (_, i) => `count${i}`);
    for (const n of names) await host.registry.install(counter(n, 'quickjs'));
    for (const n of ['nodeA', 'nodeB']) await host.registry.install(counter(n, 'node'));
    for (const n of [...names, 'nodeA', 'nodeB']) expect(await host.invoker.invoke(n, {})).toMatchObject({ ok: true });
    // Every one answers from the sandbox it started in: none was destroyed and restarted.
    for (const n of [...names, 'nodeA', 'nodeB'])
      expect(await host.invoker.invoke(n, {}), n).toMatchObject({ ok: true, result: 2 });
  }, 300_000);

  // Each sandbox maps its linear memory's untouched 5 MiB stack region writable: RLIMIT_DATA counts it though it takes
  // no RAM. A data limit of only the budget, the threads' heaps and Node (2080 MiB here) stops the process at about 270
  // sandboxes; the limit leaves LINEAR_RESERVE_MB for each sandbox the pool may keep (maxInstances).
  it.skipIf(!osWrapped)(
    'under bubblewrap, 350 quickjs sandboxes stay warm in one sandbox host process whose RLIMIT_DATA counts them',
    async () => {
      const home = mkdtempSync(join(tmpdir(), 'tysandbox-qjs-rlimit-'));
      const h = await createNodeHost({
        home: join(home, 'home'),
        globals: { sandbox: 'required', allow: [], deny: [] },
        io: { stdout: new PassThrough(), stderr: new PassThrough(), stdin: new PassThrough(), interactive: false },
        python: false,
        env: {},
        cwd: home,
        memoryBudgetMb: 800,
        maxInstances: 360,
      });
      try {
        const names = Array.from({ length: 350 }, (_, i) => `many${i}`);
        for (const n of names) await h.registry.install(counter(n, 'quickjs'));
        for (const n of names) expect(await h.invoker.invoke(n, {}), n).toMatchObject({ ok: true, result: 1 });
        // every one answers from the sandbox it started in: none was destroyed, the process never died
        for (const n of names) expect(await h.invoker.invoke(n, {}), n).toMatchObject({ ok: true, result: 2 });
      } finally {
        await h.close();
        rmSync(home, { recursive: true, force: true });
      }
    },
    600_000,
  );
});
