// Tests of a sandbox process started ahead of its call (NodeSandboxRuntime.prestart) with real node subprocesses; test
// side.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { NodeSandboxRuntime } from './runtime.js';
import { TyError } from '../../core/errors.js';
import { DEFAULT_LIMITS, type CallOptions, type SandboxSpec } from '../../core/exec/runtime.js';
import type { ToolManifest } from '../../protocol/manifest.js';

let seq = 0;
function spec(source: string, limits = DEFAULT_LIMITS): SandboxSpec {
  const manifest: ToolManifest = {
    name: 'pre',
    description: '',
    parameters: {},
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
  };
  return { revision: `bpre${++seq}`, manifest, limits: { ...limits } };
}
const opts = (): CallOptions => ({
  signal: new AbortController().signal,
  limits: { ...DEFAULT_LIMITS },
  onCapability: async (name) => {
    throw new TyError('E_CAPABILITY_DENIED', `${name} denied`);
  },
});
/** Children of this process (their pids), from /proc; zombies (exited, not reaped) only with `zombies`. */
function childPids(zombies = false): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(f[1]) === process.pid && (zombies || f[0] !== 'Z')) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out;
}
async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('prestarted sandbox process', () => {
  it('start() adopts the prestarted process for the same command line, and the call runs in it', async () => {
    const rt = new NodeSandboxRuntime({ engine: 'node' });
    const before = new Set(childPids());
    const s = spec('export default async (a) => ({ pid: process.pid, a })');
    rt.prestart(s);
    const spare = childPids().filter((p) => !before.has(p));
    expect(spare.length).toBe(1);
    const inst = await rt.start(s);
    try {
      expect(inst.pid).toBe(spare[0]);
      expect(await inst.call({ x: 1 }, opts())).toEqual({ pid: expect.any(Number), a: { x: 1 } });
      expect(childPids().filter((p) => !before.has(p))).toEqual(spare);
    } finally {
      await inst.destroy('test');
    }
  });

  it('a start() for another command line (other limits) kills the spare and spawns its own', async () => {
    const rt = new NodeSandboxRuntime({ engine: 'node' });
    const before = new Set(childPids());
    rt.prestart(spec('export default async () => 1'));
    const spare = childPids().filter((p) => !before.has(p));
    expect(spare.length).toBe(1);
    const inst = await rt.start(
      spec('export default async () => 2', { ...DEFAULT_LIMITS, memoryMb: DEFAULT_LIMITS.memoryMb * 2 }),
    );
    try {
      expect(inst.pid).not.toBe(spare[0]);
      expect(await inst.call({}, opts())).toBe(2);
      await until(() => !childPids().includes(spare[0]!));
    } finally {
      await inst.destroy('test');
    }
  });

  it('discardSpare kills a spare no call adopted and returns once it is reaped; a second prestart while one waits starts nothing', async () => {
    const rt = new NodeSandboxRuntime({ engine: 'node' });
    const before = new Set(childPids());
    const s = spec('export default async () => 1');
    rt.prestart(s);
    rt.prestart(s);
    const spare = childPids().filter((p) => !before.has(p));
    expect(spare.length).toBe(1);
    await rt.discardSpare();
    // reaped: not even a zombie is left (childPids counts zombies of this process too)
    expect(childPids(true).filter((p) => !before.has(p))).toEqual([]);
    await rt.discardSpare(); // idempotent
  });

  it('deno: start() adopts the prestarted process; neither it nor a discarded spare writes a DENO_DIR', async () => {
    const denoDirs = () => readdirSync(tmpdir()).filter((n) => n.startsWith(`tysandbox-deno-${process.pid}-`));
    const rt = new NodeSandboxRuntime({ engine: 'deno' });
    const before = new Set(childPids());
    const dirsBefore = new Set(denoDirs());
    const s = spec('export default async (a) => ({ deno: typeof Deno === "object", a })');
    rt.prestart(s);
    const spare = childPids().filter((p) => !before.has(p));
    expect(spare.length).toBe(1);
    expect(denoDirs().filter((d) => !dirsBefore.has(d))).toEqual([]);
    const inst = await rt.start(s);
    expect(inst.pid).toBe(spare[0]);
    expect(await inst.call({ x: 1 }, opts())).toEqual({ deno: true, a: { x: 1 } });
    await inst.destroy('test');
    expect(denoDirs().filter((d) => !dirsBefore.has(d))).toEqual([]);
    rt.prestart(s);
    expect(denoDirs().filter((d) => !dirsBefore.has(d))).toEqual([]);
    await rt.discardSpare();
    expect(denoDirs().filter((d) => !dirsBefore.has(d))).toEqual([]);
    expect(childPids(true).filter((p) => !before.has(p))).toEqual([]);
  });

  it('prestarts nothing for a revision with granted folders or a Python revision', async () => {
    const before = new Set(childPids());
    const folders = { ...spec('export default async () => 1'), folders: [{ path: '/tmp', access: 'read' as const }] };
    new NodeSandboxRuntime({ engine: 'node' }).prestart(folders);
    const py = spec('def main(a): return 1');
    py.manifest = {
      ...py.manifest,
      execution: { kind: 'sandboxed-code', runtime: 'python', source: 'def main(a): return 1' },
    };
    new NodeSandboxRuntime({ engine: 'node' }).prestart(py);
    expect(childPids().filter((p) => !before.has(p))).toEqual([]);
  });

  it('a spare that died before its call is not adopted: start() spawns a fresh process', async () => {
    const rt = new NodeSandboxRuntime({ engine: 'node' });
    const before = new Set(childPids());
    const s = spec('export default async () => 3');
    rt.prestart(s);
    const spare = childPids().filter((p) => !before.has(p));
    process.kill(spare[0]!, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 200));
    const inst = await rt.start(s);
    try {
      expect(inst.pid).not.toBe(spare[0]);
      expect(await inst.call({}, opts())).toBe(3);
    } finally {
      await inst.destroy('test');
    }
  });
});
