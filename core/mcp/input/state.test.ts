// Unit tests of the bridge's sealed requestState (state.ts): nothing inside readable by the client, every change
// refused, bound to one call, used once, expiring; core, trusted side.
import { describe, expect, it } from 'vitest';
import { RequestStates, b64u, unb64u } from './state.js';

const binding = { principal: 'mcp:x\0s1', server: 'srv', tool: 'report', args: { q: 1 } };
/** The server's own state, with a marker no sealed state may show. */
const UPSTREAM = 'server-secret-state:account=42;step=confirm';

/** Every way a client could read a token: its parts as text, base64url-decoded, and decoded once more. */
function readable(state: string): string {
  const views = [state];
  for (const part of state.split('.')) {
    const bytes = unb64u(part);
    if (bytes === undefined) continue;
    const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
    views.push(text);
    for (const inner of text.split(/[^A-Za-z0-9_-]+/)) {
      const again = unb64u(inner);
      if (again !== undefined) views.push(new TextDecoder('utf-8', { fatal: false }).decode(again));
    }
  }
  return views.join('\n');
}

describe('the bridge requestState', () => {
  it("carries the server's own state and the form shapes, and the client can read neither", async () => {
    const states = new RequestStates();
    const state = await states.mint(binding, { q: 'elicitation/create' }, UPSTREAM, undefined, {
      q: { colour: { t: 'string', e: ['red', 'blue'] } },
    });
    expect(state).toMatch(/^v2\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    const seen = readable(state);
    for (const secret of [UPSTREAM, 'account=42', 'elicitation/create', 'colour', '"u"', 'report', 'srv'])
      expect(seen).not.toContain(secret);
    const opened = await states.open(state, binding);
    expect(opened).toEqual({
      ok: true,
      keys: { q: 'elicitation/create' },
      upstreamState: UPSTREAM,
      forms: { q: { colour: { t: 'string', e: ['red', 'blue'] } } },
    });
  });

  it('two states of the same call differ (random IV and nonce)', async () => {
    const states = new RequestStates();
    const a = await states.mint(binding, { q: 'roots/list' }, UPSTREAM);
    const b = await states.mint(binding, { q: 'roots/list' }, UPSTREAM);
    expect(a).not.toBe(b);
  });

  it('any changed byte, another key, another version or a cut token is refused; the state stays usable once', async () => {
    const states = new RequestStates();
    const state = await states.mint(binding, { q: 'roots/list' }, UPSTREAM);
    const [v, iv, sealed] = state.split('.') as [string, string, string];
    const bytes = unb64u(sealed)!;
    for (const i of [0, Math.floor(bytes.length / 2), bytes.length - 1]) {
      const flipped = Uint8Array.from(bytes);
      flipped[i] = (flipped[i] as number) ^ 1;
      expect(await states.open(`${v}.${iv}.${b64u(flipped)}`, binding)).toEqual({ ok: false, reason: 'mac' });
    }
    const ivBytes = unb64u(iv)!;
    ivBytes[0] = (ivBytes[0] as number) ^ 1;
    expect(await states.open(`${v}.${b64u(ivBytes)}.${sealed}`, binding)).toEqual({ ok: false, reason: 'mac' });
    expect(await new RequestStates().open(state, binding)).toEqual({ ok: false, reason: 'mac' });
    expect(await states.open(`v1.${iv}.${sealed}`, binding)).toEqual({ ok: false, reason: 'malformed' });
    expect(await states.open(`${v}.${iv}`, binding)).toEqual({ ok: false, reason: 'malformed' });
    expect(await states.open(`${v}.${iv}.${sealed}!`, binding)).toEqual({ ok: false, reason: 'malformed' });
    expect(await states.open(42, binding)).toEqual({ ok: false, reason: 'malformed' });
    expect((await states.open(state, binding)).ok).toBe(true);
  });

  it('is bound to the call, taken once, and expires', async () => {
    let now = 1_000_000;
    const states = new RequestStates(() => now, 60_000);
    const state = await states.mint(binding, { q: 'roots/list' }, undefined);
    expect(await states.open(state, { ...binding, args: { q: 2 } })).toEqual({ ok: false, reason: 'bind' });
    expect(await states.open(state, { ...binding, principal: 'mcp:x\0s2' })).toEqual({ ok: false, reason: 'bind' });
    expect((await states.open(state, binding)).ok).toBe(true);
    expect(await states.open(state, binding)).toEqual({ ok: false, reason: 'replayed' });
    const later = await states.mint(binding, { q: 'roots/list' }, undefined);
    now += 60_001;
    expect(await states.open(later, binding)).toEqual({ ok: false, reason: 'expired' });
  });
});
