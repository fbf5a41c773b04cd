// Unit tests for core/exec/invoke.ts (Invoker order of checks, limits, kinds, result checks); test side.
import { describe, expect, it, vi } from 'vitest';
import { Invoker, effectiveLimits, type PoolLike } from './invoke.js';
import { ToolRegistry } from '../revisions/registry.js';
import { Store } from '../store/contract.js';
import { MemoryStoreBackend } from '../store/memory.js';
import { TyError } from '../errors.js';
import { DEFAULT_LIMITS, type Gate, type GateRequest } from './runtime.js';

const params = { type: 'object', properties: { x: { type: 'number' } }, required: ['x'], additionalProperties: false };
const code = (src = 'export default async (a) => a.x * 2') => ({
  name: 'dbl',
  description: 'double',
  parameters: params,
  execution: { kind: 'sandboxed-code', runtime: 'javascript', source: src },
});

async function setup(extra: Partial<ConstructorParameters<typeof Invoker>[0]> = {}, pool?: PoolLike) {
  const registry = new ToolRegistry(new Store(new MemoryStoreBackend()));
  const p: PoolLike = pool ?? {
    call: vi.fn(async (_spec, args: unknown) => ({ doubled: (args as { x: number }).x * 2 })),
  };
  const inv = new Invoker({ registry, pool: p, ...extra });
  return { registry, pool: p, inv };
}

describe('Invoker: admission control', () => {
  it('beyond maxQueuedCalls in flight a call is refused at once with E_BUSY; the admitted ones complete, then room is made', async () => {
    const gates: (() => void)[] = [];
    const pool: PoolLike = { call: vi.fn(() => new Promise((r) => gates.push(() => r(1)))) };
    const { registry, inv } = await setup({ maxQueuedCalls: 3 }, pool);
    await registry.install(code());
    const first = [1, 2, 3].map((x) => inv.invoke('dbl', { x }));
    const busy = await inv.invoke('dbl', { x: 4 });
    expect(busy).toMatchObject({ ok: false, error: { code: 'E_BUSY' } });
    expect(inv.inFlight).toBe(3);
    await vi.waitFor(() => expect(gates).toHaveLength(3));
    for (const g of gates) g();
    expect((await Promise.all(first)).every((r) => r.ok)).toBe(true);
    expect(inv.inFlight).toBe(0);
    const later = inv.invoke('dbl', { x: 5 });
    await vi.waitFor(() => expect(gates).toHaveLength(4));
    gates[3]!();
    expect(await later).toMatchObject({ ok: true });
  });

  it('calls of one tool join the pool in invoke order even when earlier steps take longer for earlier calls', async () => {
    const order: number[] = [];
    const pool: PoolLike = { call: vi.fn(async (_s, a: unknown) => order.push((a as { x: number }).x)) };
    // A gate whose decision takes longer for earlier calls (as a slow store read would).
    const gate: Gate = {
      authorize: vi.fn(),
      run: async (req, execute) => {
        await new Promise((r) => setTimeout(r, 20 - Number((req.preview ?? '').match(/\d+/)?.[0] ?? 0)));
        return { value: await execute() };
      },
    };
    const { registry, inv } = await setup({ gate }, pool);
    await registry.install(code());
    await Promise.all(Array.from({ length: 10 }, (_, x) => inv.invoke('dbl', { x })));
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});

describe('Invoker', () => {
  it('resolves, validates and runs through the pool with the revision identity and clamped limits', async () => {
    const { registry, pool, inv } = await setup();
    const { revision } = await registry.install({ ...code(), limits: { timeoutMs: 86_400_000 } });
    const r = await inv.invoke('dbl', { x: 21 });
    expect(r).toEqual({ ok: true, revision, result: { doubled: 42 } });
    const call = vi.mocked(pool.call).mock.calls[0]!;
    expect(call[0].revision).toBe(revision);
    expect(call[0].limits.timeoutMs).toBe(600_000);
    expect(call[2].disposable).toBe(false);
    expect(call[1]).toEqual({ x: 21 });
    expect(call[2].argsJson).toBe('{"x":21}'); // the canonical text, validated and measured once, handed on as is
    expect(call[2].argsParts).toEqual(['{"x":21}']);
  });

  it("hands a long string argument to the pool as a canonical piece of its own: the caller's string, not a copy", async () => {
    const { registry, pool, inv } = await setup();
    await registry.install({
      ...code(),
      parameters: { type: 'object', properties: { s: { type: 'string' }, x: { type: 'number' } } },
    });
    const s = 'w'.repeat(64 * 1024);
    await inv.invoke('dbl', { x: 1, s });
    const o = vi.mocked(pool.call).mock.calls[0]![2];
    expect(o.argsParts).toEqual(['{"s":"', s, '","x":1}']);
    expect(o.argsParts![1]).toBe(s);
    expect(o.argsJson).toBe(`{"s":"${s}","x":1}`);
  });

  it('refuses unlisted fields before the gate or the pool is touched', async () => {
    const gate: Gate = { run: vi.fn(), authorize: vi.fn() };
    const { registry, pool, inv } = await setup({ gate });
    const { revision } = await registry.install(code());
    const r = await inv.invoke('dbl', { x: 1, y: 2 });
    expect(r).toMatchObject({ ok: false, revision, error: { code: 'E_INVALID_ARGS' } });
    expect(!r.ok && r.error.message).toContain('"/y"');
    expect(pool.call).not.toHaveBeenCalled();
    expect(gate.run).not.toHaveBeenCalled();
  });

  it.each([
    ['unknown name', 'nope', {}, 'E_UNKNOWN_TOOL'],
    ['malformed ref', 'a b', {}, 'E_UNKNOWN_TOOL'],
    ['non-JSON args', 'dbl', { x: 1, f: () => 1 }, 'E_INVALID_ARGS'],
    ['undefined args', 'dbl', undefined, 'E_INVALID_ARGS'],
  ])('%s -> %s', async (_n, ref, args, want) => {
    const { registry, pool, inv } = await setup();
    await registry.install(code());
    const r = await inv.invoke(ref, args);
    expect(r).toMatchObject({ ok: false, error: { code: want } });
    expect(pool.call).not.toHaveBeenCalled();
  });

  it('caps arguments by size', async () => {
    const { registry, inv } = await setup({ maxArgsBytes: 100 });
    await registry.install({ ...code(), parameters: { type: 'object' } });
    expect(await inv.invoke('dbl', { s: 'x'.repeat(200) })).toMatchObject({
      ok: false,
      error: { code: 'E_INVALID_ARGS' },
    });
  });

  it('caps arguments by their UTF-8 bytes exactly, long string pieces included (counted piece by piece)', async () => {
    const max = 64 * 1024;
    const counted: number[] = [];
    const { registry, inv } = await setup({
      maxArgsBytes: max,
      byteLength: (p) => (counted.push(p.length), Buffer.byteLength(p)),
    });
    await registry.install({ ...code(), parameters: { type: 'object' } });
    const over = { s: 'ж'.repeat(32 * 1024) }; // 32768 units, 65536 bytes of string, plus `{"s":""}`
    expect(await inv.invoke('dbl', over)).toMatchObject({ ok: false, error: { code: 'E_INVALID_ARGS' } });
    expect(counted).toEqual([6, 32 * 1024, 2]); // the pieces, never their joined text
    const fits = { s: 'ж'.repeat(32 * 1024 - 8) }; // 65520 + 8 bytes
    expect(await inv.invoke('dbl', fits)).toMatchObject({ ok: true });
    expect(await inv.invoke('dbl', { s: 'x'.repeat(max) })).toMatchObject({ ok: false }); // units alone decide
    expect(counted).toHaveLength(6);
  });

  it('passes a tool request to the gate and honours its refusal', async () => {
    const seen: GateRequest[] = [];
    const gate: Gate = {
      async run(req) {
        seen.push(req);
        throw new TyError('E_CAPABILITY_DENIED', 'denied by rule');
      },
      async authorize() {},
    };
    const { registry, pool, inv } = await setup({ gate, principal: 'cli:user' });
    const { revision } = await registry.install(code());
    expect(await inv.invoke('dbl', { x: 1 })).toEqual({
      ok: false,
      revision,
      error: { code: 'E_CAPABILITY_DENIED', message: 'denied by rule' },
    });
    expect(seen[0]).toMatchObject({ principal: 'cli:user', kind: 'tool', toolName: 'dbl', revision });
    expect(pool.call).not.toHaveBeenCalled();
  });

  it('denies capabilities by default and gives the handler the call identity when configured', async () => {
    let denied: unknown;
    const pool: PoolLike = {
      call: async (_s, _a, o) => {
        try {
          await o.onCapability('fetch', { url: 'https://x' }, o.signal);
        } catch (e) {
          denied = e;
        }
        return 1;
      },
    };
    const { registry, inv } = await setup({}, pool);
    await registry.install(code());
    await inv.invoke('dbl', { x: 1 });
    expect(denied).toMatchObject({ code: 'E_CAPABILITY_DENIED', message: 'fetch: capabilities are not enabled' });
    const ids: unknown[] = [];
    const { registry: r2, inv: i2 } = await setup(
      {
        capabilities: (id) => {
          ids.push(id);
          return async () => 'ok';
        },
      },
      pool,
    );
    const { revision } = await r2.install(code());
    await i2.invoke('dbl', { x: 1 }, { principal: 'p1' });
    expect(ids[0]).toMatchObject({ name: 'dbl', revision, principal: 'p1' });
  });

  it('a limit error names the manifest field that raises it and its current value', async () => {
    const big: PoolLike = { call: async () => 'y'.repeat(5000) };
    const { registry, inv } = await setup({}, big);
    await registry.install({ ...code(), limits: { outputBytes: 1000 } });
    const r = await inv.invoke('dbl', { x: 1 });
    expect(!r.ok && r.error.message).toMatch(
      /the limit is the manifest's limits\.outputBytes \(now 1000 bytes; at most \d+\)$/,
    );
    const oom: PoolLike = {
      call: async () => {
        throw new TyError('E_MEMORY_LIMIT', 'the node sandbox ran out of its heap limit and was killed');
      },
    };
    const s2 = await setup({}, oom);
    await s2.registry.install({ ...code(), limits: { memoryMb: 64 } });
    const m = await s2.inv.invoke('dbl', { x: 1 });
    expect(m).toMatchObject({ ok: false, error: { code: 'E_MEMORY_LIMIT' } });
    expect(!m.ok && m.error.message).toMatch(
      /killed; the limit is the manifest's limits\.memoryMb \(now 64 MiB; at most \d+\)$/,
    );
  });

  it('checks the result size and JSON-ness', async () => {
    const big: PoolLike = { call: async () => 'y'.repeat(5000) };
    const { registry, inv } = await setup({}, big);
    await registry.install({ ...code(), limits: { outputBytes: 1000 } });
    expect(await inv.invoke('dbl', { x: 1 })).toMatchObject({ ok: false, error: { code: 'E_OUTPUT_LIMIT' } });
    const bad: PoolLike = { call: async () => 10n };
    const s2 = await setup({}, bad);
    await s2.registry.install(code());
    expect(await s2.inv.invoke('dbl', { x: 1 })).toMatchObject({ ok: false, error: { code: 'E_TOOL_FAILED' } });
  });

  it('validates the result against outputSchema', async () => {
    const { registry, inv } = await setup();
    await registry.install({
      ...code(),
      outputSchema: { type: 'object', properties: { doubled: { type: 'string' } } },
    });
    const r = await inv.invoke('dbl', { x: 1 });
    expect(r).toMatchObject({ ok: false, error: { code: 'E_TOOL_FAILED' } });
    expect(!r.ok && r.error.message).toContain('outputSchema');
  });

  it('pinned name@REV keeps the old implementation after the binding moves', async () => {
    const pool: PoolLike = { call: async (spec) => (spec.manifest.execution as { source: string }).source };
    const { registry, inv } = await setup({}, pool);
    const a = await registry.install(code('export default async () => "A"'));
    const b = await registry.install(code('export default async () => "B"'));
    await registry.activate('dbl', b.revision, { approveReplacement: true });
    expect(await inv.invoke('dbl', { x: 1 })).toMatchObject({
      ok: true,
      revision: b.revision,
      result: 'export default async () => "B"',
    });
    expect(await inv.invoke(`dbl@${a.revision}`, { x: 1 })).toMatchObject({
      ok: true,
      revision: a.revision,
      result: 'export default async () => "A"',
    });
  });

  it('runs trusted-native tools via the registry, with a timeout', async () => {
    const { registry, inv } = await setup();
    const native = {
      name: 'nat',
      description: '',
      parameters: params,
      execution: { kind: 'trusted-native', entry: 'n' },
      limits: { timeoutMs: 50 },
    };
    const { revision } = await registry.install(native);
    expect(await inv.invoke('nat', { x: 1 })).toMatchObject({
      ok: false,
      error: { code: 'E_TOOL_FAILED', message: expect.stringContaining('no native implementation') },
    });
    registry.registerNative(revision, async (a) => (a as { x: number }).x + 1);
    expect(await inv.invoke('nat', { x: 1 })).toEqual({ ok: true, revision, result: 2 });
    let aborted = false;
    registry.registerNative(
      revision,
      (_a, ctx) =>
        new Promise((res) =>
          (ctx as { signal: AbortSignal }).signal.addEventListener('abort', () => {
            aborted = true;
            res(0);
          }),
        ),
    );
    expect(await inv.invoke('nat', { x: 1 })).toMatchObject({ ok: false, error: { code: 'E_TIMEOUT' } });
    expect(aborted).toBe(true);
  });

  it('external-service tools need a bridge', async () => {
    const ext = {
      name: 'ext',
      description: '',
      parameters: { type: 'object' },
      execution: { kind: 'external-service', serviceId: 'srv', tool: 't' },
    };
    const s1 = await setup();
    await s1.registry.install(ext);
    expect(await s1.inv.invoke('ext', {})).toMatchObject({
      ok: false,
      error: { code: 'E_TOOL_FAILED', message: expect.stringContaining('no bridge configured') },
    });
    const s2 = await setup({ external: async (id, args) => ({ id: id.name, args }) });
    await s2.registry.install(ext);
    expect(await s2.inv.invoke('ext', { a: 1 })).toMatchObject({ ok: true, result: { id: 'ext', args: { a: 1 } } });
  });

  it('sandboxed code without a pool is E_SANDBOX_UNAVAILABLE; an aborted signal is E_ABORTED', async () => {
    const registry = new ToolRegistry(new Store(new MemoryStoreBackend()));
    await registry.install(code());
    const inv = new Invoker({ registry });
    expect(await inv.invoke('dbl', { x: 1 })).toMatchObject({ ok: false, error: { code: 'E_SANDBOX_UNAVAILABLE' } });
    const ac = new AbortController();
    ac.abort();
    expect(await inv.invoke('dbl', { x: 1 }, { signal: ac.signal })).toMatchObject({
      ok: false,
      error: { code: 'E_ABORTED' },
    });
  });

  it('effectiveLimits clamps to host maxima', () => {
    const m = code() as never;
    expect(effectiveLimits(m, DEFAULT_LIMITS, { timeoutMs: 10, outputBytes: 5, memoryMb: 1 }, 99)).toEqual({
      timeoutMs: 10,
      outputBytes: 5,
      memoryMb: 1,
    });
    expect(effectiveLimits(m, DEFAULT_LIMITS, { timeoutMs: 1e9, outputBytes: 1e9, memoryMb: 1e9 }, 99).timeoutMs).toBe(
      99,
    );
  });
});

describe('Invoker capability refusals', () => {
  const failing = (toolCode: string, callCap: boolean): PoolLike => ({
    call: async (_s, _a, o) => {
      if (callCap) await o.onCapability('fetch', {}, o.signal).catch(() => undefined);
      throw new TyError('E_TOOL_FAILED', 'Error: whatever the tool says', { toolCode });
    },
  });
  it('reports an uncaught host refusal with its own code and message', async () => {
    const { registry, inv } = await setup({}, failing('E_CAPABILITY_DENIED', true));
    await registry.install(code());
    expect(await inv.invoke('dbl', { x: 1 })).toMatchObject({
      ok: false,
      error: {
        code: 'E_CAPABILITY_DENIED',
        message: 'fetch: capabilities are not enabled (the tool did not handle this error from the host)',
      },
    });
  });
  it('never promotes a code the tool only claims', async () => {
    const { registry, inv } = await setup({}, failing('E_CAPABILITY_DENIED', false));
    await registry.install(code());
    expect(await inv.invoke('dbl', { x: 1 })).toMatchObject({ ok: false, error: { code: 'E_TOOL_FAILED' } });
    const s2 = await setup({}, failing('E_FETCH_TARGET', true));
    await s2.registry.install(code());
    expect(await s2.inv.invoke('dbl', { x: 1 })).toMatchObject({ ok: false, error: { code: 'E_TOOL_FAILED' } });
  });
});

describe('Invoker: the intent record (no effect before it is durable)', () => {
  /** A gate that allows every call and hands `execute` an intent record whose fsync settles by hand. */
  const intentGate = () => {
    const log: string[] = [];
    const alone: boolean[] = [];
    let settle!: () => void;
    const durable = new Promise<void>((r) => (settle = r));
    const gate: Gate = {
      authorize: vi.fn(async () => {}),
      run: async (_req, execute) => {
        const value = await execute({ durable, begin: (a) => void (log.push('begin'), alone.push(a === true)) });
        await durable;
        return { value };
      },
    };
    return { gate, log, alone, settle: () => settle() };
  };

  it('sandboxed code runs at once; its capability requests wait until the intent record is durable; the fsync begins when the call is sent', async () => {
    const { gate, log, settle } = intentGate();
    const pool: PoolLike = {
      call: async (_s, _a, o) => {
        log.push('sent');
        o.onSent?.();
        const v = await o.onCapability('fetch', {}, o.signal);
        log.push(`capability answered: ${String(v)}`);
        return 1;
      },
    };
    const { registry, inv } = await setup({ gate, capabilities: () => async () => (log.push('handler'), 'ok') }, pool);
    await registry.install(code());
    const r = inv.invoke('dbl', { x: 1 });
    await vi.waitFor(() => expect(log).toEqual(['sent', 'begin']));
    await new Promise((res) => setTimeout(res, 10));
    expect(log).toEqual(['sent', 'begin']); // the request waits: its handler has not run
    settle();
    expect(await r).toMatchObject({ ok: true, result: 1 });
    expect(log).toEqual(['sent', 'begin', 'handler', 'capability answered: ok']);
  });

  it('says whether the call is alone on its host when it begins the fsync (a sequential caller may sync inline)', async () => {
    const { gate, alone, settle } = intentGate();
    settle();
    const pool: PoolLike = { call: async (_s, _a, o) => (o.onSent?.(), 1) };
    const { registry, inv } = await setup({ gate }, pool);
    await registry.install(code());
    await inv.invoke('dbl', { x: 1 });
    expect(alone).toEqual([true]);
    await Promise.all([inv.invoke('dbl', { x: 1 }), inv.invoke('dbl', { x: 2 })]);
    expect(alone.slice(1)).toContain(false);
  });

  it('native code starts only once the intent record is durable (it has effects of its own)', async () => {
    const { gate, log, settle } = intentGate();
    const { registry, inv } = await setup({ gate });
    const { revision } = await registry.install({
      name: 'nat',
      description: 'n',
      parameters: params,
      execution: { kind: 'trusted-native', entry: 'n' },
    });
    registry.registerNative(revision, async () => (log.push('native ran'), 3));
    const r = inv.invoke('nat', { x: 1 });
    await vi.waitFor(() => expect(log).toEqual(['begin']));
    await new Promise((res) => setTimeout(res, 10));
    expect(log).toEqual(['begin']);
    settle();
    expect(await r).toMatchObject({ ok: true, result: 3 });
    expect(log).toEqual(['begin', 'native ran']);
  });

  it("a bridged service's call is forwarded only once the intent record is durable", async () => {
    const { gate, log, settle } = intentGate();
    const { registry, inv } = await setup({ gate, external: async () => (log.push('forwarded'), 4) });
    await registry.install({
      name: 'ext',
      description: 'e',
      parameters: params,
      execution: { kind: 'external-service', serviceId: 's', tool: 't' },
    });
    const r = inv.invoke('ext', { x: 1 });
    await vi.waitFor(() => expect(log).toEqual(['begin']));
    expect(log).toEqual(['begin']);
    settle();
    expect(await r).toMatchObject({ ok: true, result: 4 });
    expect(log).toEqual(['begin', 'forwarded']);
  });
});
