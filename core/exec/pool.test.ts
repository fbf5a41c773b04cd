// Unit tests for SandboxPool (core/exec/pool.ts) against a scripted fake runtime; trusted side.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MEMORY_CHECK_MS, NEAR_LIMIT_SHARE, SandboxPool } from './pool.js';
import { TyError } from '../errors.js';
import {
  DEFAULT_LIMITS,
  type CallOptions,
  type SandboxInstance,
  type SandboxRuntime,
  type SandboxSpec,
} from './runtime.js';
import type { ToolManifest } from '../../protocol/manifest.js';

type Behaviour = (args: unknown, opts: CallOptions, inst: FakeInstance) => Promise<unknown>;

class FakeInstance implements SandboxInstance {
  static seq = 0;
  readonly n = ++FakeInstance.seq;
  alive = true;
  destroyed: string | undefined;
  state = 0;
  running = 0;
  maxRunning = 0;
  #kill: (() => void)[] = [];
  constructor(
    readonly revision: string,
    readonly behaviour: Behaviour,
  ) {}
  async call(args: unknown, opts: CallOptions): Promise<unknown> {
    if (!this.alive) throw new TyError('E_SANDBOX_FAILED', 'dead');
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    try {
      return await Promise.race([
        this.behaviour(args, opts, this),
        new Promise((_, rej) => this.#kill.push(() => rej(new TyError('E_SANDBOX_FAILED', 'destroyed')))),
      ]);
    } finally {
      this.running--;
    }
  }
  async destroy(reason: string): Promise<void> {
    if (this.destroyed === undefined) this.destroyed = reason;
    this.alive = false;
    for (const k of this.#kill.splice(0)) k();
  }
}

class FakeRuntime implements SandboxRuntime {
  readonly name = 'fake';
  started: FakeInstance[] = [];
  constructor(public behaviour: Behaviour) {}
  async start(spec: SandboxSpec): Promise<SandboxInstance> {
    const i = new FakeInstance(spec.revision, this.behaviour);
    this.started.push(i);
    return i;
  }
}

function manifest(name = 'tool'): ToolManifest {
  return {
    name,
    description: '',
    parameters: {},
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'x' },
  };
}
function spec(revision: string, name = 'tool', limits = DEFAULT_LIMITS): SandboxSpec {
  return { revision, manifest: manifest(name), limits: { ...limits } };
}
const onCapability = async () => {
  throw new TyError('E_CAPABILITY_DENIED', 'none');
};
const counter: Behaviour = async (_a, _o, inst) => ++inst.state;
const tick = () => new Promise((r) => setImmediate(r));

let pool: SandboxPool | undefined;
afterEach(async () => {
  await pool?.shutdown();
  pool = undefined;
});

describe('SandboxPool retained mode', () => {
  it('reuses one sandbox per revision and keeps its state', async () => {
    const rt = new FakeRuntime(counter);
    pool = new SandboxPool({ runtime: rt });
    expect(await pool.call(spec('rev-a'), {}, { onCapability })).toBe(1);
    expect(await pool.call(spec('rev-a'), {}, { onCapability })).toBe(2);
    expect(rt.started).toHaveLength(1);
  });

  it('hands the canonical arguments text and its pieces to the sandbox, retained and disposable alike', async () => {
    const seen: CallOptions[] = [];
    const rt = new FakeRuntime(async (_a, o) => (seen.push(o), 1));
    pool = new SandboxPool({ runtime: rt });
    const argsParts = ['{"s":"', 'long', '"}'];
    await pool.call(spec('b1'), { s: 'long' }, { onCapability, argsJson: '{"s":"long"}', argsParts });
    await pool.call(spec('b1'), { s: 'long' }, { onCapability, argsJson: '{"s":"long"}', argsParts, disposable: true });
    await pool.call(spec('b1'), {}, { onCapability });
    expect(seen.map((o) => [o.argsJson, o.argsParts])).toEqual([
      ['{"s":"long"}', argsParts],
      ['{"s":"long"}', argsParts],
      [undefined, undefined],
    ]);
    expect(seen[0]!.argsParts).toBe(argsParts);
  });

  it("hands the caller's onSent to the sandbox's call, retained and disposable alike", async () => {
    const seen: CallOptions[] = [];
    const rt = new FakeRuntime(async (_a, o) => (seen.push(o), 1));
    pool = new SandboxPool({ runtime: rt });
    const onSent = () => {};
    await pool.call(spec('b1'), {}, { onCapability, onSent });
    await pool.call(spec('b1'), {}, { onCapability, onSent, disposable: true });
    await pool.call(spec('b1'), {}, { onCapability });
    expect(seen.map((o) => o.onSent)).toEqual([onSent, onSent, undefined]);
  });

  it('serializes calls to one sandbox', async () => {
    const rt = new FakeRuntime(async (_a, _o, inst) => {
      await tick();
      await tick();
      return inst.running;
    });
    pool = new SandboxPool({ runtime: rt });
    const results = await Promise.all([1, 2, 3, 4].map(() => pool!.call(spec('rev-a'), {}, { onCapability })));
    expect(results).toEqual([1, 1, 1, 1]);
    expect(rt.started[0]!.maxRunning).toBe(1);
  });

  it('a new revision of the same name retires the old sandbox; other names are kept', async () => {
    const rt = new FakeRuntime(counter);
    pool = new SandboxPool({ runtime: rt });
    await pool.call(spec('rev-a'), {}, { onCapability });
    await pool.call(spec('other-1', 'other'), {}, { onCapability });
    await pool.call(spec('rev-b'), {}, { onCapability });
    await tick();
    const [a, other, b] = rt.started;
    expect(a!.destroyed).toBe('revision changed');
    expect(other!.alive).toBe(true);
    expect(b!.alive).toBe(true);
    expect(pool.revisions().sort()).toEqual(['other-1', 'rev-b']);
  });

  it('a revision change lets the old revision finish its running call first', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const rt = new FakeRuntime(async (a) => {
      if (a === 'slow') await gate;
      return a;
    });
    pool = new SandboxPool({ runtime: rt });
    const slow = pool.call(spec('rev-a'), 'slow', { onCapability });
    await tick();
    await pool.call(spec('rev-b'), 'fast', { onCapability });
    expect(rt.started[0]!.destroyed).toBeUndefined();
    release();
    expect(await slow).toBe('slow');
    await tick();
    expect(rt.started[0]!.destroyed).toBe('revision changed');
  });

  it('a different memory limit needs a new sandbox', async () => {
    const rt = new FakeRuntime(counter);
    pool = new SandboxPool({ runtime: rt });
    await pool.call(spec('rev-a'), {}, { onCapability });
    await pool.call(spec('rev-a', 'tool', { ...DEFAULT_LIMITS, memoryMb: 64 }), {}, { onCapability });
    expect(rt.started).toHaveLength(2);
    await tick();
    expect(rt.started[0]!.destroyed).toBeDefined();
  });

  for (const code of ['E_SANDBOX_FAILED', 'E_MEMORY_LIMIT', 'E_PROTOCOL', 'E_OUTPUT_LIMIT'] as const) {
    it(`${code} destroys the sandbox and the next call gets a fresh one`, async () => {
      let fail = true;
      const rt = new FakeRuntime(async (_a, _o, inst) => {
        if (fail) {
          fail = false;
          throw new TyError(code, 'boom');
        }
        return ++inst.state;
      });
      pool = new SandboxPool({ runtime: rt });
      await expect(pool.call(spec('rev-a'), {}, { onCapability })).rejects.toMatchObject({ code });
      expect(rt.started[0]!.destroyed).toBe(code);
      expect(await pool.call(spec('rev-a'), {}, { onCapability })).toBe(1);
      expect(rt.started).toHaveLength(2);
    });
  }

  it('a tool error (E_TOOL_FAILED) keeps the sandbox and its state', async () => {
    const rt = new FakeRuntime(async (a, _o, inst) => {
      inst.state++;
      if (a === 'throw') throw new TyError('E_TOOL_FAILED', 'Error: no');
      return inst.state;
    });
    pool = new SandboxPool({ runtime: rt });
    await expect(pool.call(spec('rev-a'), 'throw', { onCapability })).rejects.toMatchObject({ code: 'E_TOOL_FAILED' });
    expect(await pool.call(spec('rev-a'), 'ok', { onCapability })).toBe(2);
    expect(rt.started).toHaveLength(1);
  });

  it('enforces the time limit itself: E_TIMEOUT, sandbox destroyed, next call fresh', async () => {
    let hang = true;
    const rt = new FakeRuntime(async () => {
      if (hang) {
        hang = false;
        return new Promise(() => {});
      }
      return 'ok';
    });
    pool = new SandboxPool({ runtime: rt });
    await expect(
      pool.call(spec('rev-a', 'tool', { ...DEFAULT_LIMITS, timeoutMs: 30 }), {}, { onCapability }),
    ).rejects.toMatchObject({ code: 'E_TIMEOUT' });
    expect(rt.started[0]!.destroyed).toBe('timeout');
    expect(await pool.call(spec('rev-a', 'tool', { ...DEFAULT_LIMITS, timeoutMs: 30 }), {}, { onCapability })).toBe(
      'ok',
    );
    expect(rt.started).toHaveLength(2);
  });

  it('the module load counts against the call time limit: a start that never ends is E_TIMEOUT at the limit, the late sandbox destroyed', async () => {
    let deliver!: (i: SandboxInstance) => void;
    const late = new FakeInstance('r1', counter);
    let startSignal: AbortSignal | undefined;
    const rt: SandboxRuntime = {
      name: 'hang',
      start: (_s, signal) => {
        startSignal = signal;
        return new Promise((r) => (deliver = r));
      },
    };
    const pool = new SandboxPool({ runtime: rt });
    const e = await pool
      .call(spec('r1', 'tool', { ...DEFAULT_LIMITS, timeoutMs: 50 }), {}, { onCapability })
      .catch((x: TyError) => x);
    expect(e).toMatchObject({ code: 'E_TIMEOUT', message: expect.stringContaining('module loaded') });
    expect(startSignal?.aborted).toBe(true);
    deliver(late);
    await new Promise((r) => setTimeout(r, 0));
    expect(late.destroyed).toBe('start timed out');
  });

  it('a time limit names the part that ran: the Python runtime starting, its module, main(); a JavaScript start or default export', async () => {
    const py = (revision: string, timeoutMs: number): SandboxSpec => ({
      revision,
      manifest: { ...manifest('pytool'), execution: { kind: 'sandboxed-code', runtime: 'python', source: 'x' } },
      limits: { ...DEFAULT_LIMITS, timeoutMs },
    });
    const hangingStart: SandboxRuntime = { name: 'hang', start: () => new Promise(() => {}) };
    const never = () => new Promise<never>(() => {});
    const cases: [SandboxRuntime, SandboxSpec, RegExp, string][] = [
      [
        hangingStart,
        py('p1', 40),
        /while the Python runtime \(Pyodide\) started, before any of the tool's code ran/,
        'start',
      ],
      [new FakeRuntime(never), py('p2', 40), /while its module's top-level code ran/, 'module'],
      [
        new FakeRuntime((_a, o) => {
          o.onPhase?.('main');
          return never();
        }),
        py('p3', 40),
        /while main\(\) ran/,
        'main',
      ],
      [hangingStart, spec('j1', 'tool', { ...DEFAULT_LIMITS, timeoutMs: 40 }), /while its module loaded/, 'start'],
      [
        new FakeRuntime(never),
        spec('j2', 'tool', { ...DEFAULT_LIMITS, timeoutMs: 40 }),
        /while the tool's default export ran/,
        'main',
      ],
    ];
    for (const [rt, sp, message, phase] of cases) {
      const p = new SandboxPool({ runtime: rt });
      const e = await p.call(sp, {}, { onCapability }).catch((x: TyError) => x);
      await p.shutdown();
      expect(e).toMatchObject({ code: 'E_TIMEOUT', message: expect.stringMatching(message) });
      expect((e as TyError).data).toEqual({
        phase,
        runtime: sp.manifest.execution.kind === 'sandboxed-code' ? sp.manifest.execution.runtime : '',
        limitMs: 40,
      });
    }
  });

  it('the time a start took is taken from the call: start + call stay within one limit', async () => {
    const rt: SandboxRuntime = {
      name: 'slow',
      start: async (sp) => {
        await new Promise((r) => setTimeout(r, 40));
        return new FakeInstance(sp.revision, () => new Promise((r) => setTimeout(() => r('late'), 40)));
      },
    };
    const pool = new SandboxPool({ runtime: rt });
    // 40 ms start + 40 ms call > 60 ms limit: fails although each alone fits
    await expect(
      pool.call(spec('r1', 'tool', { ...DEFAULT_LIMITS, timeoutMs: 60 }), {}, { onCapability }),
    ).rejects.toMatchObject({ code: 'E_TIMEOUT' });
  });

  it('abort kills the running sandbox; an aborted queued call never runs', async () => {
    const ran: unknown[] = [];
    const rt = new FakeRuntime(async (a) => {
      ran.push(a);
      return new Promise(() => {});
    });
    pool = new SandboxPool({ runtime: rt });
    const ac1 = new AbortController();
    const ac2 = new AbortController();
    const first = pool.call(spec('rev-a'), 'first', { onCapability, signal: ac1.signal });
    const second = pool.call(spec('rev-a'), 'second', { onCapability, signal: ac2.signal });
    await tick();
    ac2.abort();
    await expect(second).rejects.toMatchObject({ code: 'E_ABORTED' });
    expect(rt.started[0]!.destroyed).toBeUndefined();
    ac1.abort();
    await expect(first).rejects.toMatchObject({ code: 'E_ABORTED' });
    expect(rt.started[0]!.destroyed).toBe('aborted');
    expect(ran).toEqual(['first']);
  });

  it('a call aborted while queued does not let the next queued call overtake the running one', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const rt = new FakeRuntime(async (a, _o, inst) => {
      if (a === 'A') await gate;
      return inst.running;
    });
    pool = new SandboxPool({ runtime: rt });
    const ac = new AbortController();
    const a = pool.call(spec('rev-a'), 'A', { onCapability });
    const b = pool.call(spec('rev-a'), 'B', { onCapability, signal: ac.signal });
    const c = pool.call(spec('rev-a'), 'C', { onCapability });
    await tick();
    ac.abort();
    await expect(b).rejects.toMatchObject({ code: 'E_ABORTED' });
    await tick();
    await tick();
    expect(rt.started[0]!.maxRunning).toBe(1);
    release();
    expect(await a).toBe(1);
    expect(await c).toBe(1);
    expect(rt.started[0]!.maxRunning).toBe(1);
  });

  it('terminate(revision) destroys the sandbox; the running call fails; the next is fresh', async () => {
    const rt = new FakeRuntime(async (a, _o, inst) => (a === 'hang' ? new Promise(() => {}) : ++inst.state));
    pool = new SandboxPool({ runtime: rt });
    await pool.call(spec('rev-a'), {}, { onCapability });
    const hanging = pool.call(spec('rev-a'), 'hang', { onCapability });
    await tick();
    await pool.terminate('rev-a');
    await expect(hanging).rejects.toMatchObject({ code: 'E_SANDBOX_FAILED' });
    expect(rt.started[0]!.destroyed).toBe('terminated');
    expect(await pool.call(spec('rev-a'), {}, { onCapability })).toBe(1);
  });

  it('shutdown destroys everything and refuses later calls', async () => {
    const rt = new FakeRuntime(counter);
    const p = new SandboxPool({ runtime: rt });
    await p.call(spec('a', 'one'), {}, { onCapability });
    await p.call(spec('b', 'two'), {}, { onCapability });
    await p.shutdown();
    expect(rt.started.every((i) => i.destroyed === 'shutdown')).toBe(true);
    await expect(p.call(spec('a', 'one'), {}, { onCapability })).rejects.toMatchObject({
      code: 'E_SANDBOX_UNAVAILABLE',
    });
  });
});

describe('SandboxPool memory budget', () => {
  it('destroys the least recently used idle sandbox before a new one would pass the budget; busy ones are kept', async () => {
    const rt = new FakeRuntime(counter);
    const pool = new SandboxPool({ runtime: rt, memoryBudgetMb: 300, memoryOf: () => 100 });
    for (const n of ['a', 'b', 'c']) await pool.call(spec(`r-${n}`, n), {}, { onCapability });
    await pool.call(spec('r-a', 'a'), {}, { onCapability }); // a is now the most recently used
    expect(pool.retainedMemoryMb()).toBe(300);
    await pool.call(spec('r-d', 'd'), {}, { onCapability });
    expect(pool.retainedMemoryMb()).toBe(300);
    expect(rt.started.find((i) => i.revision === 'r-b')?.destroyed).toBe('memory budget');
    expect(pool.peek('r-a')).toBeDefined();
    expect(pool.peek('r-c')).toBeDefined();
  });

  it('over budget with every sandbox busy, the new one starts; idle ones go once their calls end', async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const rt = new FakeRuntime(async () => {
      await gate;
      return 1;
    });
    const pool = new SandboxPool({ runtime: rt, memoryBudgetMb: 200, memoryOf: () => 100 });
    const calls = ['a', 'b', 'c'].map((n) => pool.call(spec(`r-${n}`, n), {}, { onCapability }));
    await new Promise((r) => setTimeout(r, 0));
    expect(rt.started).toHaveLength(3);
    open();
    await Promise.all(calls);
    await new Promise((r) => setTimeout(r, 0));
    expect(pool.retainedMemoryMb()).toBeLessThanOrEqual(200);
  });
});

describe('SandboxPool limits: maxRetained (LRU) and idle timeout', () => {
  it('keeps at most maxRetained sandboxes, destroying the least recently used idle one first', async () => {
    const rt = new FakeRuntime(counter);
    const evicted: string[] = [];
    const pool = new SandboxPool({ runtime: rt, maxRetained: 2, onEvict: (r, why) => evicted.push(`${r}:${why}`) });
    await pool.call(spec('r-a', 'a'), {}, { onCapability });
    await pool.call(spec('r-b', 'b'), {}, { onCapability });
    await pool.call(spec('r-a', 'a'), {}, { onCapability }); // a is now the most recently used
    await pool.call(spec('r-c', 'c'), {}, { onCapability });
    expect(pool.retainedCount()).toBe(2);
    expect(evicted).toEqual(['r-b:max retained']);
    expect(rt.started.find((i) => i.revision === 'r-b')?.destroyed).toMatch(/at most 2 sandboxes/);
    expect(pool.peek('r-a')).toBeDefined();
    expect(await pool.call(spec('r-a', 'a'), {}, { onCapability })).toBe(3); // state kept: not restarted
    await pool.shutdown();
  });
  it('the default cap is 16', async () => {
    const rt = new FakeRuntime(counter);
    const pool = new SandboxPool({ runtime: rt });
    for (let i = 0; i < 20; i++) await pool.call(spec(`r-${i}`, `t${i}`), {}, { onCapability });
    expect(pool.retainedCount()).toBe(16);
    expect(pool.peek('r-0')).toBeUndefined();
    expect(pool.peek('r-19')).toBeDefined();
    await pool.shutdown();
  });
  it('destroys a sandbox idle for idleMs; a call in between re-arms it; a busy one is never idle', async () => {
    let open!: () => void;
    const hold = new Promise<void>((r) => (open = r));
    const rt = new FakeRuntime(async (a, _o, inst) => (a === 'hold' ? hold.then(() => ++inst.state) : ++inst.state));
    const pool = new SandboxPool({ runtime: rt, idleMs: 1000 });
    await pool.call(spec('r-a', 'a'), {}, { onCapability });
    await new Promise((r) => setTimeout(r, 300));
    await pool.call(spec('r-a', 'a'), {}, { onCapability }); // re-armed
    await new Promise((r) => setTimeout(r, 300));
    expect(pool.peek('r-a')).toBeDefined();
    const busy = pool.call(spec('r-b', 'b'), 'hold', { onCapability });
    for (let i = 0; i < 100 && pool.peek('r-a'); i++) await new Promise((r) => setTimeout(r, 50));
    expect(pool.peek('r-a')).toBeUndefined();
    expect(rt.started.find((i) => i.revision === 'r-a')?.destroyed).toMatch(/idle for 1000 ms/);
    await new Promise((r) => setTimeout(r, 1100));
    expect(pool.peek('r-b')).toBeDefined(); // busy the whole time
    open();
    await busy;
    await pool.shutdown();
  });
});

describe('SandboxPool: a sandbox near its memory limit is not kept', () => {
  /** A runtime whose sandboxes report `mb` MiB held (memoryMb); each call returns the sandbox's own call count. */
  const memoryRuntime = (mb: { value: number }) => {
    const rt = new FakeRuntime(async (_a, _o, inst) => ++inst.state);
    const start = rt.start.bind(rt);
    rt.start = async (s: SandboxSpec) => {
      const i = (await start(s)) as FakeInstance & { memoryMb?: () => number };
      i.memoryMb = () => mb.value;
      return i;
    };
    return rt;
  };

  it('an idle sandbox holding NEAR_LIMIT_SHARE of its charge or more is destroyed MEMORY_CHECK_MS after its call', async () => {
    const mb = { value: 100 };
    const evicted: string[] = [];
    const rt = memoryRuntime(mb);
    pool = new SandboxPool({ runtime: rt, memoryOf: () => 512, onEvict: (r, why) => evicted.push(`${r} ${why}`) });
    expect(await pool.call(spec('r-m'), {}, { onCapability })).toBe(1);
    await new Promise((r) => setTimeout(r, MEMORY_CHECK_MS + 100));
    expect(pool.peek('r-m')).toBeDefined(); // 100 of 512 MiB: kept
    expect(await pool.call(spec('r-m'), {}, { onCapability })).toBe(2);
    mb.value = Math.ceil(NEAR_LIMIT_SHARE * 512); // the tool grabbed what it could and holds it
    await pool.call(spec('r-m'), {}, { onCapability });
    for (let i = 0; i < 40 && pool.peek('r-m'); i++) await new Promise((r) => setTimeout(r, 50));
    expect(pool.peek('r-m')).toBeUndefined();
    expect(evicted).toEqual(['r-m memory limit']);
    expect(rt.started[0]!.destroyed).toMatch(/holds 461 MiB of its 512 MiB limit/);
    expect(await pool.call(spec('r-m'), {}, { onCapability })).toBe(1); // a fresh sandbox
  });

  it('a busy sandbox is never checked (its call may hold memory for a while), and one check timer serves many calls', async () => {
    const mb = { value: 1000 };
    const rt = memoryRuntime(mb);
    let open!: () => void;
    const hold = new Promise<void>((r) => (open = r));
    rt.behaviour = async (a, _o, inst) => (a === 'hold' ? hold.then(() => ++inst.state) : ++inst.state);
    pool = new SandboxPool({ runtime: rt, memoryOf: () => 512 });
    const timers = vi.spyOn(globalThis, 'setTimeout');
    try {
      for (let i = 0; i < 20; i++) await pool.call(spec('r-b'), {}, { onCapability });
      expect(timers.mock.calls.filter((c) => c[1] === MEMORY_CHECK_MS)).toHaveLength(1);
    } finally {
      timers.mockRestore();
    }
    const busy = pool.call(spec('r-b'), 'hold', { onCapability });
    await new Promise((r) => setTimeout(r, MEMORY_CHECK_MS + 200));
    expect(pool.peek('r-b')).toBeDefined(); // busy: never judged
    open();
    await busy;
    for (let i = 0; i < 40 && pool.peek('r-b'); i++) await new Promise((r) => setTimeout(r, 50));
    expect(pool.peek('r-b')).toBeUndefined(); // idle again, and over: gone
  });
});

describe('SandboxPool: per-call work', () => {
  it('a busy sandbox arms its idle timer once, not once per call, and calls without a signal add no abort listener', async () => {
    const rt = new FakeRuntime(async (_a, _o, inst) => ++inst.state);
    const pool = new SandboxPool({ runtime: rt, idleMs: 987_654 });
    await pool.call(spec('r-t', 't'), {}, { onCapability });
    const timers = vi.spyOn(globalThis, 'setTimeout');
    const listen = vi.spyOn(EventTarget.prototype, 'addEventListener');
    try {
      for (let i = 0; i < 50; i++) await pool.call(spec('r-t', 't'), {}, { onCapability });
      // the one armed after the first call still holds
      expect(timers.mock.calls.filter((c) => c[1] === 987_654)).toHaveLength(0);
      expect(listen).not.toHaveBeenCalled();
    } finally {
      timers.mockRestore();
      listen.mockRestore();
    }
    expect(pool.peek('r-t')).toBeDefined();
    await pool.shutdown();
  });
});

describe('SandboxPool: a sandbox found dead before a call was sent', () => {
  it('runs the call once on a fresh sandbox; a failure after sending is not retried', async () => {
    const rt = new FakeRuntime(async (a, _o, inst) => {
      if (rt.started.indexOf(inst) === 1 && a === 'x')
        throw new TyError('E_SANDBOX_FAILED', 'stopped before sending', { notStarted: true });
      if (a === 'boom') throw new TyError('E_SANDBOX_FAILED', 'died while running');
      return ++inst.state;
    });
    const pool = new SandboxPool({ runtime: rt });
    await pool.call(spec('r-a', 'a'), {}, { onCapability });
    await pool.terminate('r-a');
    await pool.call(spec('r-a', 'a'), {}, { onCapability }); // second instance
    expect(await pool.call(spec('r-a', 'a'), 'x', { onCapability })).toBe(1); // refused unsent -> third, fresh
    expect(rt.started).toHaveLength(3);
    await expect(pool.call(spec('r-a', 'a'), 'boom', { onCapability })).rejects.toMatchObject({
      code: 'E_SANDBOX_FAILED',
    });
    expect(rt.started).toHaveLength(3);
    await pool.shutdown();
  });
});

describe('SandboxPool disposable mode', () => {
  it('starts a fresh sandbox per call and destroys it after', async () => {
    const rt = new FakeRuntime(counter);
    pool = new SandboxPool({ runtime: rt, mode: 'disposable' });
    expect(await pool.call(spec('rev-a'), {}, { onCapability })).toBe(1);
    expect(await pool.call(spec('rev-a'), {}, { onCapability })).toBe(1);
    expect(rt.started).toHaveLength(2);
    expect(rt.started.every((i) => i.destroyed === 'disposable call finished')).toBe(true);
  });

  it('per-call disposable override in a retained pool', async () => {
    const rt = new FakeRuntime(counter);
    pool = new SandboxPool({ runtime: rt });
    await pool.call(spec('rev-a'), {}, { onCapability });
    expect(await pool.call(spec('rev-a'), {}, { onCapability, disposable: true })).toBe(1);
    expect(await pool.call(spec('rev-a'), {}, { onCapability })).toBe(2);
  });
});

describe('SandboxPool with a runtime that keeps principals apart (perPrincipal: the quickjs engine)', () => {
  class PerPrincipalRuntime extends FakeRuntime {
    readonly perPrincipal = true;
    principals: (string | undefined)[] = [];
    override async start(s: SandboxSpec): Promise<SandboxInstance> {
      this.principals.push(s.principal);
      return super.start(s);
    }
  }
  const as = (principal: string) => ({ ...spec('rev-a'), principal });

  it('retains one sandbox per revision and principal: state never crosses principals', async () => {
    const rt = new PerPrincipalRuntime(counter);
    pool = new SandboxPool({ runtime: rt });
    expect(await pool.call(as('p:a'), {}, { onCapability })).toBe(1);
    expect(await pool.call(as('p:b'), {}, { onCapability })).toBe(1);
    expect(await pool.call(as('p:a'), {}, { onCapability })).toBe(2);
    expect(rt.principals).toEqual(['p:a', 'p:b']);
    expect(pool.revisions()).toEqual(['rev-a']);
    expect(pool.retainedCount()).toBe(2);
  });

  it('terminate(revision) ends it for every principal; a new revision of the name retires every old one', async () => {
    const rt = new PerPrincipalRuntime(counter);
    pool = new SandboxPool({ runtime: rt });
    await pool.call(as('p:a'), {}, { onCapability });
    await pool.call(as('p:b'), {}, { onCapability });
    await pool.terminate('rev-a');
    expect(rt.started.every((i) => i.destroyed === 'terminated')).toBe(true);
    await pool.call(as('p:a'), {}, { onCapability });
    await pool.call({ ...spec('rev-b'), principal: 'p:b' }, {}, { onCapability });
    await tick();
    expect(rt.started[2]!.destroyed).toBe('revision changed');
  });

  it('a runtime without it keeps one sandbox per revision whoever calls', async () => {
    const rt = new FakeRuntime(counter);
    pool = new SandboxPool({ runtime: rt });
    await pool.call(as('p:a'), {}, { onCapability });
    expect(await pool.call(as('p:b'), {}, { onCapability })).toBe(2);
    expect(rt.started).toHaveLength(1);
  });
});

describe('SandboxPool with a runtime whose sandboxes share a process (sharesProcess: quickjs instances)', () => {
  class SharedRuntime extends FakeRuntime {
    readonly sharesProcess = true;
    held = new Map<string, number>();
    override async start(s: SandboxSpec): Promise<SandboxInstance> {
      const inst = (await super.start(s)) as FakeInstance & { heldMb?: () => number };
      inst.heldMb = () => this.held.get(s.revision) ?? 1;
      return inst;
    }
  }

  it('counts them against maxInstances, apart from maxRetained: 40 stay warm beside 2 process sandboxes', async () => {
    const shared = new SharedRuntime(counter);
    const own = new FakeRuntime(counter);
    const evicted: string[] = [];
    pool = new SandboxPool({
      runtime: (s) => (s.revision.startsWith('q-') ? shared : own),
      maxRetained: 2,
      maxInstances: 40,
      onEvict: (r, why) => evicted.push(`${r}:${why}`),
    });
    for (let i = 0; i < 40; i++) await pool.call(spec(`q-${i}`, `q${i}`), {}, { onCapability });
    for (const n of ['a', 'b']) await pool.call(spec(`r-${n}`, n), {}, { onCapability });
    expect(pool.retainedCount(true)).toBe(40);
    expect(pool.retainedCount()).toBe(2);
    expect(evicted).toEqual([]);
    expect(await pool.call(spec('q-0', 'q0'), {}, { onCapability })).toBe(2); // warm: its state kept
    await pool.call(spec('q-40', 'q40'), {}, { onCapability });
    expect(evicted).toEqual(['q-1:max retained']);
    expect(shared.started[1]!.destroyed).toMatch(/at most 40 sandboxes that share a process/);
    expect(pool.retainedCount()).toBe(2);
  });

  it('charges what each holds against the memory budget, not its start charge', async () => {
    const shared = new SharedRuntime(counter);
    pool = new SandboxPool({ runtime: shared, memoryBudgetMb: 100, memoryOf: () => 2, maxInstances: 1000 });
    for (let i = 0; i < 30; i++) await pool.call(spec(`q-${i}`, `q${i}`), {}, { onCapability });
    expect(pool.retainedMemoryMb()).toBe(30);
    shared.held.set('q-5', 80); // q-5 grew: the next start finds the pool over budget
    await pool.call(spec('q-30', 'q30'), {}, { onCapability });
    expect(pool.retainedMemoryMb()).toBeLessThanOrEqual(100);
    expect(shared.started[0]!.destroyed).toBe('memory budget');
    expect(pool.peek('q-30')).toBeDefined();
  });
});
