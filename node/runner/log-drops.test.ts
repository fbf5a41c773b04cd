// The guest's log rate limit tells every drop before the call's result, with the real Node, Deno and Python runners;
// trusted side.
import { afterAll, describe, expect, it } from 'vitest';
import { NodeSandboxRuntime, resolveDeno, type NodeSandboxInstance } from '../sandbox/runtime.js';
import { DEFAULT_LIMITS, type CallOptions, type SandboxSpec } from '../../core/exec/runtime.js';

const TOTAL = 200_000;
const JS = `export default async (a) => { for (let i = 0; i < a.n; i++) console.log('line', i); return 'done'; }`;
const PY = `def main(a, ctx):\n    for i in range(a["n"]):\n        print("line", i)\n    return "done"\n`;
let seq = 0;
function spec(runtime: 'javascript' | 'python', source: string): SandboxSpec {
  return {
    revision: `blogdrops${++seq}`,
    manifest: {
      name: 'chatty',
      description: '',
      parameters: {},
      execution: { kind: 'sandboxed-code', runtime, source },
    },
    limits: { ...DEFAULT_LIMITS, timeoutMs: 120_000 },
  };
}
const opts = (): CallOptions => ({
  signal: new AbortController().signal,
  onCapability: async () => {
    throw new Error('unused');
  },
  limits: { ...DEFAULT_LIMITS, timeoutMs: 120_000 },
});

const started: NodeSandboxInstance[] = [];
afterAll(async () => {
  await Promise.all(started.map((i) => i.destroy('test end')));
});

/** What the host was told by the time the result came: lines shown and the counts of the drop notices. */
async function run(engine: 'node' | 'deno', runtime: 'javascript' | 'python', n: number) {
  const logs: { level: string; text: string }[] = [];
  const inst = await new NodeSandboxRuntime({ engine, onLog: (_r, level, text) => logs.push({ level, text }) }).start(
    spec(runtime, runtime === 'python' ? PY : JS),
  );
  started.push(inst);
  const result = await inst.call({ n }, opts());
  const seen = [...logs]; // only what arrived before the result
  const shown = seen.filter((l) => l.level === 'info' && l.text.startsWith('line ')).length;
  const notices = seen
    .flatMap((l) => /^\[(\d+) log messages dropped: rate limit\]$/.exec(l.text) ?? [])
    .filter((_, i) => i % 2 === 1)
    .map(Number);
  return { result, shown, notices, seen, inst };
}

const engines: ('node' | 'deno')[] = ['node', ...(resolveDeno() ? (['deno'] as const) : [])];

describe.each(engines)('%s runner: log drops', (engine) => {
  it('a call that logs 200,000 lines and returns reports every dropped line before its result', async () => {
    const { result, shown, notices, seen } = await run(engine, 'javascript', TOTAL);
    expect(result).toBe('done');
    expect(shown).toBeGreaterThanOrEqual(200);
    expect(shown).toBeLessThan(TOTAL);
    expect(notices.length).toBeGreaterThanOrEqual(1);
    // nothing lost without saying so: every line is either shown or counted in a notice
    expect(shown + notices.reduce((a, b) => a + b, 0)).toBe(TOTAL);
    // the last thing before the result is the notice of the last window's drops
    expect(seen.at(-1)?.text).toMatch(/log messages dropped: rate limit/);
  });

  it('a call under the limit sends no notice', async () => {
    const { shown, notices } = await run(engine, 'javascript', 50);
    expect(shown).toBe(50);
    expect(notices).toEqual([]);
  });
});

describe('python runner (Pyodide): log drops', () => {
  it('print() beyond the rate limit is reported before the result', async () => {
    const n = 5000;
    const { result, shown, notices } = await run('node', 'python', n);
    expect(result).toBe('done');
    expect(notices.length).toBeGreaterThanOrEqual(1);
    expect(shown + notices.reduce((a, b) => a + b, 0)).toBe(n);
  }, 120_000);
});
