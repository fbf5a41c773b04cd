// The registration rate, in memory and shared through the store by several instances; test side.
import { describe, expect, it } from 'vitest';
import { Store } from '../store/contract.js';
import { MemoryStoreBackend } from '../store/memory.js';
import { RATE_NS, RegistrationRate, StoreRate } from './limits.js';

describe('registration rate', () => {
  it('in memory: at most max per principal within the window, then room again', () => {
    let now = 1000;
    const r = new RegistrationRate(2, 60_000, () => now);
    expect([r.take('a'), r.take('a'), r.take('a'), r.take('b')]).toEqual([true, true, false, true]);
    now += 60_001;
    expect(r.take('a')).toBe(true);
  });

  it('shared through the store: two instances racing never exceed one budget per principal', async () => {
    let now = 5000;
    const backend = new MemoryStoreBackend();
    const a = new StoreRate(new Store(backend), 5, 60_000, () => now);
    const b = new StoreRate(new Store(backend), 5, 60_000, () => now);
    const got = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? a : b).take('protocol:ide')));
    expect(got.filter(Boolean)).toHaveLength(5);
    expect(await a.take('protocol:other')).toBe(true);
    now += 60_001;
    expect(await b.take('protocol:ide')).toBe(true);
    // one record per principal, keyed by a digest (a principal's text is not a store key)
    const keys = await backend.list(RATE_NS);
    expect(keys).toHaveLength(2);
    for (const k of keys) expect(k).toMatch(/^registration\.[0-9a-f]{32}$/);
  });
});
