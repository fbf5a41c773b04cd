// Tests of the Node runner's idle collection after large input (node/runner/sandbox-runner.cjs) with real subprocesses;
// trusted side.
import { afterAll, describe, expect, it } from 'vitest';
import { NodeSandboxRuntime, type NodeSandboxInstance } from '../sandbox/runtime.js';
import { DEFAULT_LIMITS, type CallOptions, type SandboxSpec } from '../../core/exec/runtime.js';

// The tool counts the major collections Node reports (PerformanceObserver 'gc' entries, detail.kind 4 = major).
const SOURCE = `const { PerformanceObserver, constants } = await import('node:perf_hooks');
let majors = 0;
new PerformanceObserver((list) => { for (const e of list.getEntries()) if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++; }).observe({ entryTypes: ['gc'] });
export default async (args) => ({ majors, size: args.data.length, gcGlobal: typeof globalThis.gc, gcInScope: typeof gc });`;
let seq = 0;
const spec = (): SandboxSpec => ({
  revision: `bidlegc${++seq}`,
  manifest: {
    name: 'g',
    description: '',
    parameters: {},
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source: SOURCE },
  },
  limits: { ...DEFAULT_LIMITS },
});
const opts = (): CallOptions => ({
  signal: new AbortController().signal,
  onCapability: async () => {
    throw new Error('none');
  },
  limits: { ...DEFAULT_LIMITS },
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Seen = { majors: number; size: number; gcGlobal: string; gcInScope: string };

const started: NodeSandboxInstance[] = [];
afterAll(async () => {
  await Promise.all(started.map((i) => i.destroy('test end')));
});

describe('node runner idle collection', () => {
  it("collects once the input has been quiet after 2 MiB of arguments, long before V8's own memory reducer (8 s and more), and never gives tool code a gc function", async () => {
    const inst = await new NodeSandboxRuntime({ engine: 'node' }).start(spec());
    started.push(inst);
    const before = (await inst.call({ data: 'x' }, opts())) as Seen;
    const big = (await inst.call({ data: 'y'.repeat(2 * 1024 * 1024) }, opts())) as Seen;
    expect(big.size).toBe(2 * 1024 * 1024);
    // Poll with quiet gaps longer than the runner's 200 ms: a major collection shows up within seconds.
    let seen = big;
    const end = Date.now() + 5000;
    while (seen.majors <= big.majors && Date.now() < end) {
      await sleep(500);
      seen = (await inst.call({ data: 'z' }, opts())) as Seen;
    }
    expect(seen.majors).toBeGreaterThan(big.majors);
    for (const s of [before, big, seen]) expect([s.gcGlobal, s.gcInScope]).toEqual(['undefined', 'undefined']);
  });

  it('does not collect after small input only', async () => {
    const inst = await new NodeSandboxRuntime({ engine: 'node' }).start(spec());
    started.push(inst);
    const first = (await inst.call({ data: 'x'.repeat(1000) }, opts())) as Seen;
    for (let i = 0; i < 20; i++) await inst.call({ data: 'x'.repeat(1000) }, opts());
    await sleep(1000);
    const last = (await inst.call({ data: 'x' }, opts())) as Seen;
    expect(last.majors).toBe(first.majors);
  });
});
