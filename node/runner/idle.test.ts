// Tests of the runners at rest (node/runner/sandbox-runner.cjs, sandbox-runner.mjs): an idle retained sandbox wakes
// for nothing, and a channel that tool code closed while idle still fails the next call at once; trusted side.
import { readFileSync, readdirSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { TyError } from '../../core/errors.js';
import { DEFAULT_LIMITS, type CallOptions, type SandboxSpec } from '../../core/exec/runtime.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import { NodeSandboxRuntime, type NodeSandboxInstance } from '../sandbox/runtime.js';

let seq = 0;
function spec(source: string): SandboxSpec {
  const manifest: ToolManifest = {
    name: 'idle',
    description: '',
    parameters: {},
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
  };
  return { revision: `bidle${++seq}`, manifest, limits: { ...DEFAULT_LIMITS } };
}
const opts = (): CallOptions => ({
  signal: new AbortController().signal,
  onCapability: async (name) => {
    throw new TyError('E_CAPABILITY_DENIED', `${name} denied`);
  },
  limits: { ...DEFAULT_LIMITS },
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Times the kernel put any thread of `pid` on a CPU (the third field of each thread's schedstat), summed. */
function runCount(pid: number): number {
  let n = 0;
  for (const t of readdirSync(`/proc/${pid}/task`))
    n += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').trim().split(' ')[2]);
  return n;
}

const started: NodeSandboxInstance[] = [];
afterAll(async () => {
  await Promise.all(started.map((i) => i.destroy('test end')));
});

describe.each(['node', 'deno'] as const)('%s runner at rest', (engine) => {
  it('an idle retained sandbox is never scheduled: no timer, no heartbeat between calls', async () => {
    const inst = await new NodeSandboxRuntime({ engine }).start(spec('export default async (a) => a;'));
    started.push(inst);
    for (let i = 0; i < 5; i++) expect(await inst.call({ i }, opts())).toEqual({ i });
    await sleep(600); // the channel watch's last tick after the last call (200 ms), then nothing
    const before = runCount(inst.pid);
    await sleep(2000);
    // 10 wake-ups in these 2 s when the runner checked its channel every 200 ms whatever it was doing
    expect(runCount(inst.pid) - before).toBe(0);
    expect(await inst.call({ i: 9 }, opts())).toEqual({ i: 9 }); // and it still answers at once
  }, 30_000);

  const closers =
    engine === 'node'
      ? [
          ['fd 1', "const fs = await import('node:fs'); fs.closeSync(1);"],
          ['fd 0', "const fs = await import('node:fs'); fs.closeSync(0);"],
        ]
      : [['stdout', 'Deno.stdout.close();']];
  it.each(closers)(
    'tool code that closes %s from a timer while the sandbox is idle fails the next call with E_SANDBOX_FAILED, not at its timeout',
    async (_what, close) => {
      const source = `export default async (a) => { if (a.arm) setTimeout(async () => { ${close} }, 50); return 1; };`;
      const inst = await new NodeSandboxRuntime({ engine }).start(spec(source));
      started.push(inst);
      expect(await inst.call({ arm: true }, opts())).toBe(1);
      await sleep(400); // the timer fired while no call was in flight: no watch ran then
      const o = opts();
      o.limits.timeoutMs = 60_000;
      const err = await inst.call({}, o).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'E_SANDBOX_FAILED' });
      expect(String((err as Error).message)).toMatch(/channel|exited|killed/);
    },
    30_000,
  );
});
