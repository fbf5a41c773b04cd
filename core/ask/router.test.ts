// Unit tests for the ask router (core/ask/router.ts); test code, trusted side.
import { describe, expect, it } from 'vitest';
import { AskRouter, DEFAULT_ASK_WAIT_MS, MAX_ASK_WAIT_MS, askRefusalError, checkAskWait } from './router.js';
import type { Answer, AskChannel, Question } from '../exec/runtime.js';
import { TyError } from '../errors.js';

/** A channel the test answers by hand. */
class ManualChannel implements AskChannel {
  isLive: boolean | (() => boolean) = true;
  asked: Question[] = [];
  signals: AbortSignal[] = [];
  private resolvers: ((a: Answer | undefined) => void)[] = [];
  constructor(readonly name: string) {}
  live(): boolean {
    return typeof this.isLive === 'function' ? this.isLive() : this.isLive;
  }
  ask(q: Question, signal: AbortSignal): Promise<Answer | undefined> {
    this.asked.push(q);
    this.signals.push(signal);
    return new Promise((resolve) => {
      this.resolvers.push(resolve);
      signal.addEventListener('abort', () => resolve(undefined), { once: true });
    });
  }
  answer(a: Partial<Answer> | undefined | Record<string, unknown>): void {
    const r = this.resolvers.shift();
    if (!r) throw new Error(`${this.name} has no open question`);
    r(a as Answer | undefined);
  }
}

const q = (id: string, extra: Partial<Question> = {}): Question => ({
  id,
  title: `Allow ${id}?`,
  details: [],
  suggestedRule: `fetch(read:https://${id}.example)`,
  ...extra,
});
const tick = () => new Promise((r) => setTimeout(r, 0));
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await tick();
  expect(cond()).toBe(true);
}

describe('AskRouter', () => {
  it('asks every live channel at once; the first answer wins and the others are withdrawn', async () => {
    const a = new ManualChannel('terminal');
    const b = new ManualChannel('store');
    const router = new AskRouter({ channels: [a, b] });
    const p = router.ask(q('one', { scopes: ['once', 'session'] }));
    await until(() => a.asked.length === 1 && b.asked.length === 1);
    b.answer({ allow: true, scope: 'session', channel: 'forged-name' });
    expect(await p).toEqual({ allow: true, scope: 'session', channel: 'store' });
    expect(a.signals[0]!.aborted).toBe(true);
    expect(b.signals[0]!.aborted).toBe(true);
    // A late answer from the withdrawn channel changes nothing.
    expect(() => a.answer({ allow: false })).not.toThrow();
  });

  it('a refusal from any channel is no, naming the channel and the rule', async () => {
    const a = new ManualChannel('terminal');
    const b = new ManualChannel('store');
    const router = new AskRouter({ channels: [a, b] });
    const p = router.ask(q('two'));
    await until(() => a.asked.length === 1);
    a.answer({ allow: false, scope: 'once' });
    expect(await p).toEqual({
      allow: false,
      reason: 'refused',
      channel: 'terminal',
      suggestedRule: 'fetch(read:https://two.example)',
    });
    expect(b.signals[0]!.aborted).toBe(true);
  });

  it('no answer within ask_wait is no, and every channel is withdrawn', async () => {
    const a = new ManualChannel('terminal');
    const router = new AskRouter({ channels: [a], askWaitMs: 25 });
    const out = await router.ask(q('slow'));
    expect(out).toEqual({ allow: false, reason: 'timeout', suggestedRule: 'fetch(read:https://slow.example)' });
    expect(a.signals[0]!.aborted).toBe(true);
  });

  it('with no live channel the question is refused at once and never presented', async () => {
    const a = new ManualChannel('terminal');
    a.isLive = false;
    const b = new ManualChannel('store');
    b.isLive = () => {
      throw new Error('lock check failed');
    };
    const router = new AskRouter({ channels: [a, b], askWaitMs: MAX_ASK_WAIT_MS });
    const out = await router.ask(q('none'));
    expect(out).toMatchObject({
      allow: false,
      reason: 'no-channel',
      suggestedRule: 'fetch(read:https://none.example)',
    });
    expect(a.asked).toHaveLength(0);
    expect(b.asked).toHaveLength(0);
    expect(await new AskRouter().ask(q('empty'))).toMatchObject({ allow: false, reason: 'no-channel' });
  });

  it('a no-channel refusal lists every channel with why it cannot ask; status() reports each', async () => {
    const a = new ManualChannel('terminal');
    a.isLive = false;
    const b: AskChannel = {
      name: 'dialog',
      live: () => false,
      whyNot: () => 'no desktop session\u001b[2J',
      ask: async () => undefined,
    };
    const c: AskChannel = {
      name: 'store',
      live: () => false,
      whyNot: () => {
        throw new Error('x');
      },
      ask: async () => undefined,
    };
    const router = new AskRouter({ channels: [a, b, c] });
    const out = await router.ask(q('none'));
    expect(out).toMatchObject({
      allow: false,
      reason: 'no-channel',
      channels: [
        { name: 'terminal', live: false },
        { name: 'dialog', live: false, detail: 'no desktop session\u001b[2J' },
        { name: 'store', live: false },
      ],
    });
    if (out.allow) throw new Error('unexpected');
    expect(askRefusalError('fetching', out).message).toContain(
      'channels: terminal (not available); dialog (no desktop session\\x1b[2J); store (not available)',
    );
    a.isLive = true;
    expect(await router.status()).toEqual([
      { name: 'terminal', live: true },
      { name: 'dialog', live: false, detail: 'no desktop session\u001b[2J' },
      { name: 'store', live: false },
    ]);
  });

  it('only channels live at that moment are asked', async () => {
    const a = new ManualChannel('terminal');
    const b = new ManualChannel('store');
    b.isLive = false;
    const router = new AskRouter({ channels: [a, b] });
    const p = router.ask(q('x'));
    await until(() => a.asked.length === 1);
    a.answer({ allow: true, scope: 'once' });
    expect(await p).toMatchObject({ allow: true, channel: 'terminal' });
    expect(b.asked).toHaveLength(0);
  });

  it('one question at a time: the second waits its turn, in order', async () => {
    const a = new ManualChannel('terminal');
    const router = new AskRouter({ channels: [a] });
    const p1 = router.ask(q('first'));
    const p2 = router.ask(q('second'));
    const p3 = router.ask(q('third'));
    await until(() => a.asked.length === 1);
    await tick();
    expect(a.asked.map((x) => x.id)).toEqual(['first']);
    expect(router.waiting).toBe(2);
    a.answer({ allow: false });
    expect(await p1).toMatchObject({ allow: false, reason: 'refused' });
    await until(() => a.asked.length === 2);
    expect(a.asked[1]!.id).toBe('second');
    a.answer({ allow: true, scope: 'once' });
    expect(await p2).toMatchObject({ allow: true });
    await until(() => a.asked.length === 3);
    a.answer({ allow: true, scope: 'once' });
    expect(await p3).toMatchObject({ allow: true });
  });

  it('a queued question is refused at once when the channels stop being live', async () => {
    const a = new ManualChannel('terminal');
    const router = new AskRouter({ channels: [a] });
    const p1 = router.ask(q('first'));
    await until(() => a.asked.length === 1);
    a.isLive = false;
    expect(await router.ask(q('second'))).toMatchObject({ allow: false, reason: 'no-channel' });
    a.answer({ allow: true, scope: 'once' });
    expect(await p1).toMatchObject({ allow: true });
    expect(a.asked).toHaveLength(1);
  });

  it('the caller aborting withdraws a presented question, and drops a queued one unasked', async () => {
    const a = new ManualChannel('terminal');
    const router = new AskRouter({ channels: [a] });
    const c1 = new AbortController();
    const c2 = new AbortController();
    const p1 = router.ask(q('first'), c1.signal);
    const p2 = router.ask(q('second'), c2.signal);
    await until(() => a.asked.length === 1);
    c2.abort();
    expect(await p2).toMatchObject({ allow: false, reason: 'aborted' });
    c1.abort();
    expect(await p1).toMatchObject({ allow: false, reason: 'aborted' });
    expect(a.signals[0]!.aborted).toBe(true);
    expect(a.asked).toHaveLength(1);
    const pre = new AbortController();
    pre.abort();
    expect(await router.ask(q('third'), pre.signal)).toMatchObject({ allow: false, reason: 'aborted' });
  });

  it('when every channel gives up without an answer, it is refused at once', async () => {
    const a = new ManualChannel('terminal');
    const thrower: AskChannel = { name: 'broken', live: () => true, ask: () => Promise.reject(new Error('tty gone')) };
    const router = new AskRouter({ channels: [a, thrower], askWaitMs: MAX_ASK_WAIT_MS });
    const p = router.ask(q('gone'));
    await until(() => a.asked.length === 1);
    a.answer(undefined);
    expect(await p).toMatchObject({ allow: false, reason: 'no-channel' });
  });

  it('malformed answers never count as yes', async () => {
    for (const bad of [{ allow: 'yes' }, { allow: 1 }, 'yes', true, null, { allow: { valueOf: () => true } }]) {
      const a = new ManualChannel('terminal');
      const router = new AskRouter({ channels: [a], askWaitMs: 50 });
      const p = router.ask(q('bad'));
      await until(() => a.asked.length === 1);
      a.answer(bad as Record<string, unknown>);
      const out = await p;
      expect(out.allow).toBe(false);
    }
  });

  it('a scope the question did not offer is narrowed to once', async () => {
    const a = new ManualChannel('terminal');
    const router = new AskRouter({ channels: [a] });
    const p = router.ask(q('narrow', { scopes: ['once', 'session'] }));
    await until(() => a.asked.length === 1);
    a.answer({ allow: true, scope: 'permanent' });
    expect(await p).toEqual({ allow: true, scope: 'once', channel: 'terminal' });
  });

  it('server hints never skip asking', async () => {
    const a = new ManualChannel('terminal');
    const router = new AskRouter({ channels: [a], askWaitMs: 25 });
    const out = await router.ask(
      q('hinted', { hints: { readOnlyHint: true, destructiveHint: false, idempotentHint: true } }),
    );
    expect(a.asked).toHaveLength(1);
    expect(out).toMatchObject({ allow: false, reason: 'timeout' });
  });
});

describe('ask_wait and refusal errors', () => {
  it('ask_wait defaults to 2 minutes and is at most 1 day', () => {
    expect(DEFAULT_ASK_WAIT_MS).toBe(120_000);
    expect(checkAskWait(MAX_ASK_WAIT_MS)).toBe(86_400_000);
    for (const bad of [0, -1, 1.5, MAX_ASK_WAIT_MS + 1, Number.NaN, '100']) {
      expect(() => checkAskWait(bad)).toThrowError(expect.objectContaining({ code: 'E_INVALID_SETTINGS' }));
    }
    expect(() => new AskRouter({ askWaitMs: MAX_ASK_WAIT_MS + 1 })).toThrow(TyError);
  });

  it("askRefusalError is E_CAPABILITY_DENIED and names the rule, host-neutral (the hint is the host's)", () => {
    const e = askRefusalError('fetch https://api.example.com', {
      allow: false,
      reason: 'no-channel',
      suggestedRule: 'fetch(read:https://api.example.com)',
    });
    expect(e.code).toBe('E_CAPABILITY_DENIED');
    expect(e.message).toContain('the rule that allows it without asking: fetch(read:https://api.example.com)');
    expect(e.message).not.toMatch(/tycli|--allow/);
    expect(e.data).toMatchObject({ reason: 'no-channel', allowRule: 'fetch(read:https://api.example.com)' });
    expect(e.message).toContain('nobody can answer');
    const t = askRefusalError('x\u001b[2J', { allow: false, reason: 'timeout' });
    expect(t.message).not.toContain('\u001b');
  });
});
