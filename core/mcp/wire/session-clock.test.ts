// SessionClock: idle expiry and least-recently-used eviction that never picks a session with a request in flight; core
// unit test.
import { describe, expect, it } from 'vitest';
import { SessionClock } from './session-clock.js';

describe('SessionClock', () => {
  it('expires idle sessions, evicts the least recently used one, and never one with a request in flight', () => {
    let now = 0;
    const c = new SessionClock<string>(1000, () => now);
    c.add('a', 'A');
    now = 10;
    c.add('b', 'B');
    now = 20;
    const endA = c.begin('a');
    expect(c.evictable()).toBe('b');
    now = 5000;
    expect(c.expired()).toEqual(['b']);
    expect(c.nextCheckMs()).toBe(0);
    endA();
    expect(c.evictable()).toBe('b');
    now = 5500;
    expect(c.nextCheckMs()).toBe(0);
    c.remove('b');
    expect(c.expired()).toEqual([]);
    expect(c.nextCheckMs()).toBe(500);
    now = 6000;
    expect(c.expired()).toEqual(['a']);
    endA(); // a second end call changes nothing
    expect(c.evictable()).toBe('a');
  });

  it("evicts among the sessions a filter accepts (one principal's own), or none when it accepts none idle", () => {
    let now = 0;
    const c = new SessionClock<{ owner: string }>(1000, () => now);
    c.add('bob-1', { owner: 'bob' });
    now = 10;
    c.add('alice-1', { owner: 'alice' });
    now = 20;
    c.add('alice-2', { owner: 'alice' });
    expect(c.evictable()).toBe('bob-1');
    expect(c.evictable((v) => v.owner === 'alice')).toBe('alice-1');
    c.begin('alice-1');
    expect(c.evictable((v) => v.owner === 'alice')).toBe('alice-2');
    c.begin('alice-2');
    expect(c.evictable((v) => v.owner === 'alice')).toBeUndefined();
  });
});
