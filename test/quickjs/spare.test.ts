// Spare QuickJS sandboxes (core/quickjs/spare.ts): started ahead, given out once, only for their own limits, with the
// boot messages, deaths and memory reports going to the owner that claimed them; test side (real QuickJS WebAssembly).
import { describe, expect, it } from 'vitest';
import type { QuickJsDeath, QuickJsEngine, QuickJsSandboxOptions } from '../../core/quickjs/instance.js';
import { SpareSandboxes } from '../../core/quickjs/spare.js';
import { localEngine } from '../helpers/quickjs-local.js';

const STACK = 128 * 1024;
const tick = () => new Promise((r) => setTimeout(r, 20));

/** The test process's engine, counting the sandboxes it really creates (a spare given out is not one). */
async function counting(): Promise<{ engine: QuickJsEngine; created: () => number }> {
  const eng = await localEngine();
  let n = 0;
  const engine = {
    create: (o: QuickJsSandboxOptions) => {
      n++;
      return eng.create(o);
    },
  } as unknown as QuickJsEngine;
  return { engine, created: () => n };
}

/** Sandbox options recording what the sandbox sends. */
function owner(memoryMb = 16) {
  const seen = { messages: [] as string[], deaths: [] as QuickJsDeath[], held: [] as number[] };
  const opts: QuickJsSandboxOptions = {
    memoryMb,
    stackBytes: STACK,
    onMessage: (t) => seen.messages.push(t),
    onDeath: (d) => seen.deaths.push(d),
    onHeld: (b) => seen.held.push(b),
  };
  return { opts, seen };
}

describe('spare QuickJS sandboxes', () => {
  it('a spare goes to one owner only, with its ready message and what it holds; the next create starts anew', async () => {
    const { engine, created } = await counting();
    const spares = new SpareSandboxes(engine);
    await spares.prepare(16, STACK);
    expect(created()).toBe(1);
    const a = owner();
    const b = owner();
    const sa = await spares.create(a.opts);
    expect(created()).toBe(1); // the spare
    const sb = await spares.create(b.opts);
    expect(created()).toBe(2); // a new one: the spare went to `a` only
    expect(sa).not.toBe(sb);
    for (const s of [a.seen, b.seen]) {
      expect(s.messages.map((t) => (JSON.parse(t) as { type: string }).type)).toEqual(['ready']);
      expect(s.held.length).toBeGreaterThan(0);
      expect(s.held.at(-1)).toBeGreaterThan(0);
    }
    sa.destroy();
    sb.destroy();
  });

  it('a spare of other limits is not given out: its linear memory maximum belongs to its own limit', async () => {
    const { engine, created } = await counting();
    const spares = new SpareSandboxes(engine);
    await spares.prepare(16, STACK);
    const big = owner(64);
    const sb = await spares.create(big.opts);
    expect(sb.memoryMb).toBe(64);
    expect(created()).toBe(2);
    // the 16 MiB spare is still there for a 16 MiB sandbox
    const small = owner(16);
    const ss = await spares.create(small.opts);
    expect(ss.memoryMb).toBe(16);
    expect(created()).toBe(2);
    sb.destroy();
    ss.destroy();
    spares.discard();
  });

  it('a claimed spare reports its death and its messages to its owner, not to the spare bookkeeping', async () => {
    const { engine, created } = await counting();
    const spares = new SpareSandboxes(engine);
    await spares.prepare(16, STACK);
    const o = owner();
    const sb = await spares.create(o.opts);
    expect(created()).toBe(1);
    // a memory bomb inside the claimed spare: the owner hears E_MEMORY_LIMIT
    sb.setDeadline(20_000);
    sb.deliver(
      JSON.stringify({
        v: 1,
        type: 'load',
        runtime: 'javascript',
        source: 'export default async () => { const a = []; while (true) a.push(new Array(1e6).fill(1)); }',
      }),
    );
    for (let i = 0; i < 200 && !o.seen.messages.some((t) => t.includes('"loaded"')); i++) await tick();
    expect(o.seen.messages.map((t) => (JSON.parse(t) as { type: string }).type)).toEqual(['ready', 'loaded']);
    sb.setDeadline(20_000);
    sb.deliver(JSON.stringify({ v: 1, type: 'call', id: 1, args: {} }));
    for (let i = 0; i < 1000 && o.seen.deaths.length === 0; i++) await tick();
    expect(o.seen.deaths.map((d) => d.code)).toEqual(['E_MEMORY_LIMIT']);
    expect(sb.alive).toBe(false);
    // growth was reported to the owner as it happened
    expect(Math.max(...o.seen.held)).toBeGreaterThan(8 * 1024 * 1024);
  });

  it('a spare that died before it was claimed is never given out', async () => {
    const { engine, created } = await counting();
    const spares = new SpareSandboxes(engine);
    await spares.prepare(16, STACK);
    const first = owner();
    const s1 = await spares.create(first.opts);
    // the owner's sandbox s1 is the spare; a new spare is started, then ended from outside as a fault would end it
    await spares.prepare(16, STACK);
    expect(created()).toBe(2);
    spares.discard();
    const o = owner();
    const s2 = await spares.create(o.opts);
    expect(created()).toBe(3);
    expect(s2.alive).toBe(true);
    expect(s2).not.toBe(s1);
    s1.destroy();
    s2.destroy();
  });

  it('later() starts a spare only after the thread has been idle, and busy() postpones it', async () => {
    const { engine, created } = await counting();
    const spares = new SpareSandboxes(engine);
    spares.later(16, STACK);
    spares.busy();
    expect(created()).toBe(0);
    // a create before the idle delay has passed makes its own sandbox; the due spare stays due
    const o = owner();
    const s1 = await spares.create(o.opts);
    expect(created()).toBe(1);
    for (let i = 0; i < 500 && created() < 2; i++) await tick();
    expect(created()).toBe(2);
    // its start has begun; give it generously long to finish (a sandbox starts in milliseconds)
    for (let i = 0; i < 50; i++) await tick();
    const o2 = owner();
    const s2 = await spares.create(o2.opts);
    expect(created()).toBe(2);
    expect(s2).not.toBe(s1);
    expect(o2.seen.messages.map((t) => (JSON.parse(t) as { type: string }).type)).toEqual(['ready']);
    s1.destroy();
    s2.destroy();
    spares.discard();
  });
});
