// The invoker's tracing and observation hooks: nested spans per call and one report per answered call; test side.
import { describe, expect, it } from 'vitest';
import { Invoker, type PoolLike } from './invoke.js';
import { ToolRegistry } from '../revisions/registry.js';
import { Store } from '../store/contract.js';
import { MemoryStoreBackend } from '../store/memory.js';
import type { CallReport, CallTracer, TraceAttributes } from './trace.js';

interface Rec {
  name: string;
  attrs: TraceAttributes;
  parent: string | undefined;
  error?: string;
}

/** A tracer that records spans and their nesting (by the span open when each starts). */
function recorder(): { tracer: CallTracer; spans: Rec[] } {
  const spans: Rec[] = [];
  const open: string[] = [];
  return {
    spans,
    tracer: {
      async span(name, attrs, fn) {
        const rec: Rec = { name, attrs: { ...attrs }, parent: open.at(-1) };
        spans.push(rec);
        open.push(name);
        try {
          return await fn({ set: (a) => Object.assign(rec.attrs, a) });
        } catch (e) {
          rec.error = (e as { code?: string }).code ?? 'error';
          throw e;
        } finally {
          open.pop();
        }
      },
    },
  };
}

const manifest = {
  name: 'fetcher',
  description: 'uses a capability',
  parameters: { type: 'object', properties: {}, additionalProperties: false },
  execution: { kind: 'sandboxed-code', runtime: 'javascript', engine: 'deno', source: 'export default async () => 1' },
};

describe('Invoker tracing and observation', () => {
  it('a call is one tysandbox.call span with the sandbox and each capability use nested in it; the observer gets one report', async () => {
    const registry = new ToolRegistry(new Store(new MemoryStoreBackend()));
    const { revision } = await registry.install(manifest);
    const pool: PoolLike = {
      call: async (_spec, _args, o) => {
        await o.onCapability('storage.get', { key: 'k' }, o.signal).catch(() => undefined);
        return { ok: 1 };
      },
    };
    const { tracer, spans } = recorder();
    const reports: CallReport[] = [];
    const inv = new Invoker({ registry, pool, tracer, observe: (r) => reports.push(r), principal: 'user:alice' });
    expect(await inv.invoke('fetcher', {})).toMatchObject({ ok: true });
    expect(spans.map((s) => [s.name, s.parent])).toEqual([
      ['tysandbox.call', undefined],
      ['tysandbox.sandbox', 'tysandbox.call'],
      ['tysandbox.capability', 'tysandbox.sandbox'],
    ]);
    expect(spans[0]!.attrs).toMatchObject({
      'tysandbox.tool': 'fetcher',
      'tysandbox.principal': 'user:alice',
      'tysandbox.outcome': 'ok',
      'tysandbox.revision': revision,
      'tysandbox.engine': 'deno',
    });
    // the default capability handler refuses: the span says so
    expect(spans[2]).toMatchObject({ attrs: { 'tysandbox.capability': 'storage.get' }, error: 'E_CAPABILITY_DENIED' });
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({ tool: 'fetcher', outcome: 'ok', principal: 'user:alice' });
    expect(reports[0]!.execution).toMatchObject({ kind: 'sandboxed-code', engine: 'deno' });
    expect(reports[0]!.seconds).toBeGreaterThanOrEqual(0);
  });

  it('a refused call is reported with its code, an unknown tool without an execution', async () => {
    const registry = new ToolRegistry(new Store(new MemoryStoreBackend()));
    const reports: CallReport[] = [];
    const inv = new Invoker({ registry, observe: (r) => reports.push(r) });
    await inv.invoke('nothing', {});
    expect(reports).toEqual([expect.objectContaining({ tool: 'nothing', outcome: 'E_UNKNOWN_TOOL' })]);
    expect(reports[0]!.execution).toBeUndefined();
  });

  it('an observer that throws changes nothing for the caller', async () => {
    const registry = new ToolRegistry(new Store(new MemoryStoreBackend()));
    await registry.install(manifest);
    const inv = new Invoker({
      registry,
      pool: { call: async () => 2 },
      observe: () => {
        throw new Error('broken observer');
      },
    });
    expect(await inv.invoke('fetcher', {})).toMatchObject({ ok: true, result: 2 });
  });
});
