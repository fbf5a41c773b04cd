// Per-client tokens: shown once, stored as a hash only, revoked and expired ones refused; test side.
import { describe, expect, it } from 'vitest';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import { TOKENS_NS, TokenStore, parseExpiry } from './tokens.js';

describe('TokenStore', () => {
  it('the store keeps only the SHA-256 of a token, never the token or its secret part', async () => {
    const backend = new MemoryStoreBackend();
    const tokens = new TokenStore(new Store(backend));
    const { token, record } = await tokens.create('alice');
    expect(token).toMatch(/^tyt_[a-z2-7]{16}_[A-Za-z0-9_-]{43}$/);
    const stored = new TextDecoder().decode(await backend.get(TOKENS_NS, record.id));
    expect(stored).not.toContain(token);
    expect(stored).not.toContain(token.slice(22));
    expect(JSON.parse(stored)).toMatchObject({ principal: 'alice', hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(await tokens.verify(token)).toEqual({ ok: true, principal: 'user:alice', id: record.id });
  });
  it('a token with one character changed, a malformed one and an unknown id are refused', async () => {
    const tokens = new TokenStore(new Store(new MemoryStoreBackend()));
    const { token } = await tokens.create('alice');
    const flipped = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    expect(await tokens.verify(flipped)).toEqual({ ok: false, reason: 'unknown' });
    expect(await tokens.verify('tyt_short')).toEqual({ ok: false, reason: 'malformed' });
    expect(await tokens.verify(`tyt_${'a'.repeat(16)}_${'b'.repeat(43)}`)).toEqual({ ok: false, reason: 'unknown' });
  });
  it('list shows states without hashes; revoke by id or by the token itself; expiry is checked at use', async () => {
    let now = 1_000_000;
    const tokens = new TokenStore(new Store(new MemoryStoreBackend()), () => now);
    const a = await tokens.create('alice', now + 60_000);
    now += 1;
    const b = await tokens.create('bob');
    await tokens.revoke(b.token);
    now += 120_000;
    const list = await tokens.list();
    expect(list.map((t) => [t.principal, t.state])).toEqual([
      ['alice', 'expired'],
      ['bob', 'revoked'],
    ]);
    for (const t of list) expect(t).not.toHaveProperty('hash');
    expect(await tokens.verify(a.token)).toEqual({ ok: false, reason: 'expired' });
    expect(await tokens.verify(b.token)).toEqual({ ok: false, reason: 'revoked' });
    await expect(tokens.revoke('zzzzzzzzzzzzzzzz')).rejects.toMatchObject({ code: 'E_USAGE' });
  });
  it('principal names are checked; expiry spans and dates parse, the past is refused', async () => {
    const tokens = new TokenStore(new Store(new MemoryStoreBackend()));
    for (const bad of ['', 'has space', ':leading', 'a'.repeat(129), 'quote"d'])
      await expect(tokens.create(bad)).rejects.toMatchObject({ code: 'E_USAGE' });
    expect(parseExpiry('90d', 0)).toBe(90 * 86_400_000);
    expect(parseExpiry('2099-01-01', 0)).toBe(Date.parse('2099-01-01'));
    expect(() => parseExpiry('2000-01-01', Date.now())).toThrow(/in the past/);
    expect(() => parseExpiry('soon', 0)).toThrow(/not a time/);
  });
});
