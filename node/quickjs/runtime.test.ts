// The command line's quickjs engine: real sandbox host processes (one per principal) holding QuickJS sandboxes, with
// and without bubblewrap; trusted side (tests).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxPool } from '../../core/exec/pool.js';
import { DEFAULT_LIMITS, type CapabilityHandler, type SandboxSpec } from '../../core/exec/runtime.js';
import { TyError } from '../../core/errors.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import { rejection } from '../../test/helpers/errors.js';
import { probeSandbox } from '../os-sandbox/probe.js';
import { planIsolation } from '../os-sandbox/posture.js';
import { buildSandboxHost } from './build.mjs';
import { QuickJsSandboxRuntime, type QuickJsInstance } from './runtime.js';

let seq = 0;
function spec(source: string, o: { name?: string; principal?: string; timeoutMs?: number; memoryMb?: number } = {}) {
  const name = o.name ?? `q${++seq}`;
  const manifest: ToolManifest = {
    name,
    description: '',
    parameters: {},
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
  };
  const s: SandboxSpec = {
    revision: `b${name}`,
    manifest,
    limits: {
      ...DEFAULT_LIMITS,
      ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}),
      ...(o.memoryMb ? { memoryMb: o.memoryMb } : {}),
    },
    principal: o.principal ?? 'cli:test',
  };
  return s;
}
const caps: CapabilityHandler = async (name, params) => {
  if (name === 'storage.get') return { key: (params as { key: string }).key, from: 'host' };
  throw new TyError('E_CAPABILITY_DENIED', `${name} denied`);
};
const ADD = 'export default async (a) => a.x + 1';

beforeAll(async () => {
  await buildSandboxHost();
});

describe('quickjs engine on the command line (no OS wrapper)', () => {
  const rt = new QuickJsSandboxRuntime({ workers: 2, idleProcessMs: 0 });
  const pool = new SandboxPool({ runtime: rt, maxRetained: 64 });
  afterAll(async () => {
    await pool.shutdown();
    rt.close();
  });

  it('answers calls and capability requests; sandboxes of one principal share a process, another principal gets its own', async () => {
    const s = spec(`export default async (a, ctx) => ({ y: a.x * 2, got: await ctx.storage.get('k') })`);
    expect(await pool.call(s, { x: 21 }, { onCapability: caps })).toEqual({ y: 42, got: { key: 'k', from: 'host' } });
    await pool.call(spec(ADD), { x: 1 }, { onCapability: caps });
    const mine = rt.processes().filter((p) => p.principal === 'cli:test');
    expect(mine).toHaveLength(1);
    expect(mine[0]!.sandboxes).toBe(2);
    await pool.call(spec(ADD, { principal: 'protocol:other' }), { x: 1 }, { onCapability: caps });
    const other = rt.processes().find((p) => p.principal === 'protocol:other');
    expect(other).toBeDefined();
    expect(other!.pid).not.toBe(mine[0]!.pid);
  });

  it('one revision called by two principals runs in two sandboxes, each in its principal process', async () => {
    const src = 'let n = 0;\nexport default async () => ++n';
    const a = spec(src, { name: 'shared', principal: 'p:a' });
    const b = { ...a, principal: 'p:b' };
    expect(await pool.call(a, {}, { onCapability: caps })).toBe(1);
    expect(await pool.call(b, {}, { onCapability: caps })).toBe(1);
    expect(await pool.call(a, {}, { onCapability: caps })).toBe(2);
  });

  it('an endless loop fails with E_TIMEOUT; a sibling on the other thread answers meanwhile and after', async () => {
    const sib = spec(ADD);
    await pool.call(sib, { x: 0 }, { onCapability: caps });
    const loop = pool.call(
      spec('export default async () => { while (true) {} }', { timeoutMs: 1500 }),
      {},
      { onCapability: caps },
    );
    await new Promise((r) => setTimeout(r, 200));
    const t0 = Date.now();
    expect(await pool.call(sib, { x: 5 }, { onCapability: caps })).toBe(6);
    const during = Date.now() - t0;
    expect((await rejection(loop)).code).toBe('E_TIMEOUT');
    expect(during).toBeLessThan(1500);
    expect(await pool.call(sib, { x: 6 }, { onCapability: caps })).toBe(7);
  });

  it('a memory bomb is E_MEMORY_LIMIT; the process and its other sandboxes go on', async () => {
    const sib = spec(ADD);
    await pool.call(sib, { x: 0 }, { onCapability: caps });
    const pid = rt.processes().find((p) => p.principal === 'cli:test')!.pid;
    const bomb = spec('export default async () => { const a = []; while (true) a.push(new Array(1e6).fill(1)); }', {
      memoryMb: 64,
    });
    expect((await rejection(pool.call(bomb, {}, { onCapability: caps }))).code).toBe('E_MEMORY_LIMIT');
    expect(await pool.call(sib, { x: 1 }, { onCapability: caps })).toBe(2);
    expect(rt.processes().find((p) => p.principal === 'cli:test')!.pid).toBe(pid);
  });

  it('reports what each sandbox holds for the memory budget: its heap and stack limit, more as its memory grows', async () => {
    const s = spec(
      'let keep;\nexport default async (a) => { keep = new Uint8Array(a.mb * 1048576).fill(1); return 1 }',
    );
    await pool.call(s, { mb: 0 }, { onCapability: caps });
    const inst = pool.peek(s.revision) as QuickJsInstance;
    const start = inst.heldMb();
    expect(start).toBeGreaterThan(0.5); // the stack limit (512 KiB) at least
    expect(start).toBeLessThan(4);
    await pool.call(s, { mb: 24 }, { onCapability: caps });
    expect(inst.heldMb()).toBeGreaterThan(start + 20); // the heap had some room already
    expect(inst.heldMb()).toBeLessThan(start + 24 * 1.25 + 2);
  });

  it('deep recursion is a RangeError the tool catches, about 3000 frames deep', async () => {
    const s = spec(
      'let d = 0; function f() { d++; f() }\nexport default async () => { d = 0; try { f() } catch (e) { return [e.message, d] } }',
    );
    const [message, depth] = (await pool.call(s, {}, { onCapability: caps })) as [string, number];
    expect(message).toBe('stack overflow');
    expect(depth).toBeGreaterThan(2000);
  });

  it('a call stuck in one native operation: E_TIMEOUT at its deadline, then its thread is stopped and replaced', async () => {
    const stuck = spec(
      'export default async () => { let a = []; for (let i = 0; i < 100000; i++) a = [a]; JSON.stringify(a); return "done" }',
      { timeoutMs: 400, principal: 'p:stuck' },
    );
    const t0 = Date.now();
    expect((await rejection(pool.call(stuck, {}, { onCapability: caps }))).code).toBe('E_TIMEOUT');
    expect(Date.now() - t0).toBeLessThan(10_000);
    // the principal's process keeps serving new sandboxes
    expect(await pool.call(spec(ADD, { principal: 'p:stuck' }), { x: 2 }, { onCapability: caps })).toBe(3);
  });

  it('a killed sandbox host fails its sandboxes with E_SANDBOX_FAILED and the next call starts a new one', async () => {
    const s = spec(ADD, { principal: 'p:kill' });
    await pool.call(s, { x: 1 }, { onCapability: caps });
    const pid = rt.processes().find((p) => p.principal === 'p:kill')!.pid;
    process.kill(pid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 300));
    expect(await pool.call(s, { x: 1 }, { onCapability: caps })).toBe(2);
    expect(rt.processes().find((p) => p.principal === 'p:kill')!.pid).not.toBe(pid);
  });

  it('refuses Python revisions and folder grants', async () => {
    const py: SandboxSpec = {
      ...spec('def main(a, c): return 1'),
      manifest: {
        name: 'py',
        description: '',
        parameters: {},
        execution: { kind: 'sandboxed-code', runtime: 'python', source: 'def main(a, c): return 1' },
      },
    };
    expect((await rejection(rt.start(py))).code).toBe('E_SANDBOX_UNAVAILABLE');
    const folders = { ...spec(ADD), folders: [{ path: tmpdir(), access: 'read' as const }] };
    expect((await rejection(rt.start(folders))).code).toBe('E_SANDBOX_UNAVAILABLE');
  });
});

describe('a sandbox host that breaks the line protocol', () => {
  it('is killed and its sandboxes fail with E_PROTOCOL', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ty-qjs-'));
    const fake = join(dir, 'fake-host.cjs');
    writeFileSync(
      fake,
      `process.stdout.write('!' + JSON.stringify({ op: 'hello', version: 'x', workers: 1 }) + '\\n');\n` +
        `process.stdin.on('data', () => process.stdout.write('!' + JSON.stringify({ op: 'run', code: 'anything' }) + '\\n'));\n` +
        'setInterval(() => {}, 1000);\n',
    );
    const rt = new QuickJsSandboxRuntime({ hostScript: fake });
    const e = await rejection(rt.start(spec(ADD, { principal: 'p:fake' })));
    expect(e.code).toBe('E_PROTOCOL');
    expect(rt.processes()).toEqual([]);
    rt.close();
  });
});

describe('under bubblewrap', async () => {
  const probe = await probeSandbox();
  it.skipIf(!probe.available || probe.backend !== 'bwrap')(
    'runs sandboxes in a wrapped node process whose environment is empty but for PWD',
    async () => {
      const plan = planIsolation('required', probe);
      process.env.TY_QJS_CANARY = 'canary-value';
      const rt = new QuickJsSandboxRuntime({ wrap: plan.wrap!, workers: 1 });
      const pool = new SandboxPool({ runtime: rt });
      try {
        const inst = (await rt.start(spec(ADD, { principal: 'p:bwrap' }))) as QuickJsInstance;
        expect(inst.alive).toBe(true);
        await inst.destroy('test');
        expect(await pool.call(spec(ADD, { principal: 'p:bwrap' }), { x: 41 }, { onCapability: caps })).toBe(42);
        // The process leader is bwrap; the node process running the bundle, its descendant, has an empty environment.
        const leader = rt.processes().find((p) => p.principal === 'p:bwrap')!.pid;
        const parent = (d: string) => {
          const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
          return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]!;
        };
        const below = (d: string): boolean => {
          for (let p = d, i = 0; p !== '0' && p !== '1' && i < 16; p = parent(p), i++)
            if (Number(p) === leader) return true;
          return false;
        };
        const hosts = readdirSync('/proc').filter((d) => {
          try {
            return (
              /^\d+$/.test(d) && below(d) && readFileSync(`/proc/${d}/cmdline`, 'utf8').startsWith(process.execPath)
            );
          } catch {
            return false;
          }
        });
        expect(hosts.length).toBeGreaterThan(0);
        // bwrap itself sets PWD for the folder it starts in; nothing of this process's environment is there
        for (const d of hosts)
          expect(
            readFileSync(`/proc/${d}/environ`, 'utf8')
              .split('\0')
              .filter((e) => e && !e.startsWith('PWD=')),
          ).toEqual([]);
      } finally {
        delete process.env.TY_QJS_CANARY;
        await pool.shutdown();
        rt.close();
      }
    },
  );
});
