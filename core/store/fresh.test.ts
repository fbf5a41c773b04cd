// Tests of Store.getJsonFresh (core/store/contract.ts): records kept in memory, vouched for by the store's generation
// or the entry's stamp; test side.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { GENERATION_VOUCH_MS, Store, type StoreBackend } from './contract.js';
import { MemoryStoreBackend } from './memory.js';

/** A memory backend whose reads, stamps and generation checks are counted; `stamps` gives each entry a stamp. */
function counted(opts: { stamps?: boolean; generation?: boolean } = {}) {
  const m = new MemoryStoreBackend();
  const n = { reads: 0, stamps: 0, generations: 0 };
  const versions = new Map<string, number>();
  const backend: StoreBackend = {
    get: (ns, k) => (n.reads++, m.get(ns, k)),
    put: async (ns, k, b) => (versions.set(`${ns}/${k}`, (versions.get(`${ns}/${k}`) ?? 0) + 1), m.put(ns, k, b)),
    delete: async (ns, k) => (versions.delete(`${ns}/${k}`), m.delete(ns, k)),
    list: (ns) => m.list(ns),
    append: (l, line) => m.append(l, line),
    readLog: (l) => m.readLog(l),
    withLock: (name, fn) => m.withLock(name, fn),
  };
  if (opts.stamps !== false)
    backend.stamp = (ns, k) => (n.stamps++, versions.has(`${ns}/${k}`) ? `v${versions.get(`${ns}/${k}`)}` : 'absent');
  if (opts.generation !== false) backend.generation = () => (n.generations++, m.generation());
  /** A change that moves the entry's stamp but not the generation (a writer killed before it bumped it). */
  const sneak = async (ns: string, k: string, v: unknown) => {
    versions.set(`${ns}/${k}`, (versions.get(`${ns}/${k}`) ?? 0) + 1);
    const before = m.generation();
    await m.put(ns, k, new TextEncoder().encode(JSON.stringify(v)));
    Object.defineProperty(m, 'generation', { value: () => before, configurable: true });
  };
  return { backend, n, sneak };
}

afterEach(() => vi.useRealTimers());

describe('Store.getJsonFresh', () => {
  it('with a generation: one check of the whole store per read, no entry stamp, no read, absence included', async () => {
    const { backend, n } = counted();
    const store = new Store(backend);
    await store.putJson('bindings', 'a', { v: 1 });
    expect(await store.getJsonFresh('bindings', 'a')).toEqual({ v: 1 });
    expect(await store.getJsonFresh('pause', 'a')).toBeUndefined();
    const before = { ...n };
    for (let i = 0; i < 5; i++) {
      expect(await store.getJsonFresh('bindings', 'a')).toEqual({ v: 1 });
      expect(await store.getJsonFresh('pause', 'a')).toBeUndefined();
    }
    expect(n.reads - before.reads).toBe(0);
    expect(n.stamps - before.stamps).toBe(0);
    expect(n.generations - before.generations).toBe(10);
  });

  it('a write through another Store on the same backend (another process) is seen at the next read', async () => {
    const { backend } = counted();
    const mine = new Store(backend);
    const other = new Store(backend);
    await other.putJson('pause', 't', { paused: false });
    expect(await mine.getJsonFresh('pause', 't')).toEqual({ paused: false });
    await other.putJson('pause', 't', { paused: true });
    expect(await mine.getJsonFresh('pause', 't')).toEqual({ paused: true });
    await other.update('pause', 't', () => undefined);
    expect(await mine.getJsonFresh('pause', 't')).toBeUndefined();
    await other.putJson('pause', 't', { paused: 'again' });
    expect(await mine.getJsonFresh('pause', 't')).toEqual({ paused: 'again' });
  });

  it('a change that did not move the generation is seen within GENERATION_VOUCH_MS, through the entry stamp', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { backend, sneak } = counted();
    const store = new Store(backend);
    await store.putJson('decisions', 'r', { allow: true });
    expect(await store.getJsonFresh('decisions', 'r')).toEqual({ allow: true });
    await sneak('decisions', 'r', { allow: false });
    expect(await store.getJsonFresh('decisions', 'r')).toEqual({ allow: true }); // the generation still vouches
    vi.advanceTimersByTime(GENERATION_VOUCH_MS);
    expect(await store.getJsonFresh('decisions', 'r')).toEqual({ allow: false });
  });

  it('without a generation: the entry stamp is checked on every read (as before); without either: read every time', async () => {
    const s = counted({ generation: false });
    const store = new Store(s.backend);
    await store.putJson('bindings', 'a', { v: 1 });
    await store.getJsonFresh('bindings', 'a');
    const before = { ...s.n };
    await store.getJsonFresh('bindings', 'a');
    expect(s.n.stamps - before.stamps).toBe(1);
    expect(s.n.reads - before.reads).toBe(0);
    const bare = counted({ generation: false, stamps: false });
    const b = new Store(bare.backend);
    await b.putJson('bindings', 'a', { v: 1 });
    await b.getJsonFresh('bindings', 'a');
    await b.getJsonFresh('bindings', 'a');
    expect(bare.n.reads).toBe(2);
  });

  it('kept records are frozen: a caller cannot change what the next caller gets', async () => {
    const { backend } = counted();
    const store = new Store(backend);
    await store.putJson('bindings', 'a', { list: [1] });
    const v = (await store.getJsonFresh<{ list: number[] }>('bindings', 'a'))!;
    expect(() => v.list.push(2)).toThrow();
    expect(await store.getJsonFresh('bindings', 'a')).toEqual({ list: [1] });
  });
});
