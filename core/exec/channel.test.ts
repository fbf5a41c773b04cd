// Unit tests for the host side of the sandbox wire protocol (core/exec/channel.ts) over a fake port; trusted side.
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { SandboxChannel, plainResult, type SandboxPort } from './channel.js';
import { ResultMessageSchema } from '../../protocol/wire.js';
import { canonicalJson, canonicalParts, joinParts, PART_MIN } from '../revisions/canonical.js';
import { TyError } from '../errors.js';
import type { HostMessage } from '../../protocol/wire.js';
import type { CallOptions, CapabilityHandler } from './runtime.js';
import { DEFAULT_LIMITS } from './runtime.js';

class FakePort implements SandboxPort {
  sent: HostMessage[] = [];
  closed = 0;
  waiters: ((m: HostMessage) => void)[] = [];
  send(msg: HostMessage): void {
    JSON.stringify(msg); // a real port serializes; surface non-JSON here too
    this.sent.push(msg);
    const w = this.waiters.shift();
    w?.(msg);
  }
  close(): void {
    this.closed++;
  }
  next(): Promise<HostMessage> {
    return new Promise((r) => this.waiters.push(r));
  }
}

const deny: CapabilityHandler = async () => {
  throw new TyError('E_CAPABILITY_DENIED', 'no handler');
};
function opts(over: Partial<CallOptions> = {}): CallOptions {
  return { signal: new AbortController().signal, onCapability: deny, limits: { ...DEFAULT_LIMITS }, ...over };
}

/** A channel through `port` (a fresh FakePort by default) with the tool loaded. */
async function loaded(
  port = new FakePort(),
  runtime: 'javascript' | 'python' = 'javascript',
): Promise<{ ch: SandboxChannel; port: FakePort }> {
  const ch = new SandboxChannel(port);
  const p = ch.load(runtime, 'export default async () => 1', 5_000);
  ch.receive(JSON.stringify({ v: 1, type: 'ready', runtime: 'fake' }));
  await Promise.resolve();
  await new Promise((r) => setImmediate(r));
  expect(port.sent[0]).toMatchObject({ type: 'load', runtime });
  ch.receive({ v: 1, type: 'loaded', ok: true });
  await p;
  return { ch, port };
}

/** Start a call and return its promise plus the call id the channel chose. */
async function startCall(ch: SandboxChannel, port: FakePort, o = opts(), args: unknown = {}) {
  const sent = port.next();
  const p = ch.call(args, o);
  p.catch(() => {});
  const m = await sent;
  if (m.type !== 'call') throw new Error('expected a call message');
  return { p, id: m.id };
}

describe('SandboxChannel: the call is sent before onSent (the intent record fsync begins as the tool runs)', () => {
  it('tells onSent once, right after the call message was handed to the port, and not for a call never sent', async () => {
    const { ch, port } = await loaded();
    const seen: string[] = [];
    const o = opts({
      onSent: () => seen.push(`sent after ${port.sent.length} messages, last ${port.sent.at(-1)?.type}`),
    });
    const { p, id } = await startCall(ch, port, o, { x: 1 });
    expect(seen).toEqual(['sent after 2 messages, last call']);
    ch.receive({ v: 1, type: 'result', id, ok: true, json: '1' });
    expect(await p).toBe(1);
    expect(seen).toHaveLength(1);
    // arguments that are not JSON data never leave: no onSent
    const bad = ch.call({ n: 1n }, opts({ onSent: () => seen.push('bad') }));
    await expect(bad).rejects.toMatchObject({ code: 'E_INVALID_ARGS' });
    expect(seen).toHaveLength(1);
  });
});

describe('SandboxChannel handshake', () => {
  it('sends load only after ready and resolves on loaded', async () => {
    const port = new FakePort();
    const ch = new SandboxChannel(port);
    const p = ch.load('javascript', 'src', 5_000);
    await new Promise((r) => setImmediate(r));
    expect(port.sent).toHaveLength(0);
    ch.receive({ v: 1, type: 'ready', runtime: 'fake', version: '1' });
    await new Promise((r) => setImmediate(r));
    expect(port.sent).toEqual([{ v: 1, type: 'load', runtime: 'javascript', source: 'src' }]);
    ch.receive({ v: 1, type: 'loaded', ok: true });
    await expect(p).resolves.toBeUndefined();
    expect(ch.alive).toBe(true);
  });

  it('a failed load is E_TOOL_FAILED and kills the sandbox', async () => {
    const port = new FakePort();
    const ch = new SandboxChannel(port);
    const p = ch.load('javascript', 'src', 5_000);
    ch.receive({ v: 1, type: 'ready', runtime: 'fake' });
    await new Promise((r) => setImmediate(r));
    ch.receive({
      v: 1,
      type: 'loaded',
      ok: false,
      error: { code: 'E_TOOL_FAILED', message: 'SyntaxError: bad', data: { name: 'SyntaxError' } },
    });
    await expect(p).rejects.toMatchObject({ code: 'E_TOOL_FAILED', message: 'SyntaxError: bad' });
    expect(ch.alive).toBe(false);
    expect(port.closed).toBe(1);
  });

  it('no ready within the start budget is E_TIMEOUT', async () => {
    const port = new FakePort();
    const ch = new SandboxChannel(port);
    await expect(ch.load('javascript', 'src', 30)).rejects.toMatchObject({ code: 'E_TIMEOUT' });
    expect(port.closed).toBe(1);
  });

  it('refuses a call before load', async () => {
    const ch = new SandboxChannel(new FakePort());
    await expect(ch.call({}, opts())).rejects.toMatchObject({ code: 'E_PROTOCOL' });
  });
});

describe('SandboxChannel results', () => {
  it('parses the result JSON on the host into plain host objects', async () => {
    const { ch, port } = await loaded();
    const { p, id } = await startCall(ch, port, opts(), { a: 1 });
    expect(port.sent.at(-1)).toEqual({ v: 1, type: 'call', id, args: { a: 1 } });
    ch.receive({ v: 1, type: 'result', id, ok: true, json: '{"x":[1,"two",null],"__proto__":{"polluted":true}}' });
    const v = (await p) as Record<string, unknown>;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(v.x).toEqual([1, 'two', null]);
    // JSON.parse makes __proto__ an own data property; nothing is polluted.
    expect(Object.prototype.hasOwnProperty.call(v, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('measures UTF-8 bytes: over the cap is E_OUTPUT_LIMIT, never truncated', async () => {
    const { ch, port } = await loaded();
    const limits = { ...DEFAULT_LIMITS, outputBytes: 100 };
    // 60 x 'é' = 60 UTF-16 units but 120 UTF-8 bytes (+2 quotes).
    const { p, id } = await startCall(ch, port, opts({ limits }));
    ch.receive({ v: 1, type: 'result', id, ok: true, json: JSON.stringify('é'.repeat(60)) });
    await expect(p).rejects.toMatchObject({ code: 'E_OUTPUT_LIMIT' });
    const ok = await startCall(ch, port, opts({ limits }));
    ch.receive({ v: 1, type: 'result', id: ok.id, ok: true, json: JSON.stringify('é'.repeat(40)) });
    await expect(ok.p).resolves.toBe('é'.repeat(40));
  });

  it('output cap boundaries: exactly the cap passes, one byte over fails, for 1-, 3- and 4-byte UTF-8', async () => {
    const { ch, port } = await loaded();
    const limits = { ...DEFAULT_LIMITS, outputBytes: 101 };
    const cases: [string, boolean][] = [
      ['a'.repeat(99), true], // 101 bytes, 101 units
      ['a'.repeat(100), false],
      ['€'.repeat(33), true], // 2 + 99 bytes, 35 units
      ['€'.repeat(33) + 'a', false],
      ['😀'.repeat(24) + 'abc', true], // 2 + 96 + 3 bytes, 53 units
      ['😀'.repeat(24) + 'abcd', false],
      // lone surrogates count as U+FFFD (3 bytes); JSON.stringify escapes them (6 units each)
      ['\ud800'.repeat(33), true],
    ];
    for (const [text, fits] of cases) {
      const c = await startCall(ch, port, opts({ limits }));
      const json = text.startsWith('\ud800') ? `"${text}"` : JSON.stringify(text);
      ch.receive({ v: 1, type: 'result', id: c.id, ok: true, json });
      if (fits) await expect(c.p).resolves.toBe(text);
      else await expect(c.p).rejects.toMatchObject({ code: 'E_OUTPUT_LIMIT' });
    }
  });

  it('rebuilds tool errors as strings only; odd names are dropped', async () => {
    const { ch, port } = await loaded();
    const a = await startCall(ch, port);
    ch.receive({
      v: 1,
      type: 'result',
      id: a.id,
      ok: false,
      error: {
        code: 'E_TOOL_FAILED',
        message: 'RangeError: x',
        data: { name: 'RangeError', code: 'E_FETCH_TARGET', extra: { deep: 1 } },
      },
    });
    const e = (await a.p.catch((x: unknown) => x)) as TyError;
    expect(e).toBeInstanceOf(TyError);
    expect(e.code).toBe('E_TOOL_FAILED');
    expect(e.data).toEqual({ origin: 'tool', name: 'RangeError', toolCode: 'E_FETCH_TARGET' });
    const b = await startCall(ch, port);
    ch.receive({
      v: 1,
      type: 'result',
      id: b.id,
      ok: false,
      error: { code: 'X', message: 'm', data: { name: 'a\nb\u202e', code: 'lower' } },
    });
    const e2 = (await b.p.catch((x: unknown) => x)) as TyError;
    expect(e2.code).toBe('E_TOOL_FAILED');
    expect(e2.data).toEqual({ origin: 'tool' });
  });
});

describe('SandboxChannel fails closed on protocol violations', () => {
  const bad: [string, unknown][] = [
    ['not JSON', '{"v":1,'],
    ['unknown type', { v: 1, type: 'exec', cmd: 'x' }],
    ['prototype-named type', { v: 1, type: 'constructor' }],
    ['wrong version', { v: 2, type: 'log', level: 'info', text: 'x' }],
    ['extra field', { v: 1, type: 'log', level: 'info', text: 'x', more: 1 }],
    ['unknown capability', { v: 1, type: 'cap', id: 1, callId: 1, name: 'exec', params: {} }],
    ['result for unknown call', { v: 1, type: 'result', id: 999, ok: true, json: '1' }],
    ['result with an extra field', { v: 1, type: 'result', id: 1, ok: true, json: '1', more: 1 }],
    ['result with a fractional id', { v: 1, type: 'result', id: 1.5, ok: true, json: '1' }],
    ['result with a string id', { v: 1, type: 'result', id: '1', ok: true, json: '1' }],
    ['result with json that is not text', { v: 1, type: 'result', id: 1, ok: true, json: { a: 1 } }],
    ['result of another version', { v: '1', type: 'result', id: 1, ok: true, json: '1' }],
    ['non-object', 42],
    // RPC-library style messages (path-walking SET/APPLY, as generic postMessage RPC uses) have no meaning here.
    ['path-walking SET', { id: 'x', type: 'SET', path: ['__proto__', 'polluted'], value: { type: 'RAW', value: 1 } }],
    ['path-walking APPLY', { id: 'y', type: 'APPLY', path: ['constructor', 'constructor'], argumentList: [] }],
  ];
  for (const [label, msg] of bad) {
    it(`${label} -> E_PROTOCOL, pending call rejected, sandbox closed`, async () => {
      const { ch, port } = await loaded();
      const { p } = await startCall(ch, port);
      ch.receive(msg);
      await expect(p).rejects.toMatchObject({ code: 'E_PROTOCOL' });
      expect(ch.alive).toBe(false);
      expect(port.closed).toBe(1);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });
  }

  it('a result json that does not parse is E_PROTOCOL', async () => {
    const { ch, port } = await loaded();
    const { p, id } = await startCall(ch, port);
    ch.receive({ v: 1, type: 'result', id, ok: true, json: '{bad' });
    await expect(p).rejects.toMatchObject({ code: 'E_PROTOCOL' });
  });
});

describe('SandboxChannel fast paths', () => {
  it('the field-by-field result check accepts only messages the protocol schema accepts', () => {
    const base = { v: 1, type: 'result', id: 7, ok: true, json: '{"a":1}' };
    const variants: unknown[] = [base, { ...base, id: 0 }, { ...base, id: Number.MAX_SAFE_INTEGER }];
    const odd = [undefined, null, -1, 1.5, 2 ** 53, '1', true, false, {}, [], 'x', 2, NaN, Infinity];
    for (const k of ['v', 'type', 'id', 'ok', 'json', 'error', 'more', '__proto__'])
      for (const x of odd) variants.push({ ...base, [k]: x });
    for (const k of Object.keys(base)) {
      const { [k]: _drop, ...rest } = base as Record<string, unknown>;
      variants.push(rest);
    }
    variants.push(
      JSON.parse('{"v":1,"type":"result","id":7,"ok":true,"json":"1","__proto__":{"x":1}}'),
      Object.assign(Object.create(null), base),
      [base],
      'text',
      null,
    );
    let accepted = 0;
    for (const m of variants) {
      if (!plainResult(m)) continue;
      accepted++;
      expect(ResultMessageSchema.safeParse(m).success, JSON.stringify(m)).toBe(true);
    }
    expect(accepted).toBeGreaterThanOrEqual(3);
  });

  it('a call with the canonical arguments text goes out as that text, spliced in unchanged (one serialization)', async () => {
    const lines: string[] = [];
    const port = new FakePort();
    (port as SandboxPort).sendText = (json: string) => void lines.push(json);
    const { ch } = await loaded(port);
    const args = { z: 'last', a: ['x', { c: 1, b: 2 }] };
    const argsJson = canonicalJson(args, 'E_INVALID_ARGS');
    const p = ch.call(args, opts({ argsJson, settings: { unit: 'c' } }));
    expect(port.sent.filter((m) => m.type === 'call')).toEqual([]);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.endsWith(`"args":${argsJson}}`)).toBe(true);
    const msg = JSON.parse(lines[0]!) as { id: number };
    expect(msg).toEqual({ v: 1, type: 'call', id: msg.id, settings: { unit: 'c' }, args });
    ch.receive({ v: 1, type: 'result', id: msg.id, ok: true, json: '2' });
    expect(await p).toBe(2);
  });

  it('a call with canonical pieces goes out through sendParts: the long string piece as given, the rest spliced around it', async () => {
    const texts: string[] = [];
    const pieces: (readonly string[])[] = [];
    const port = new FakePort();
    (port as SandboxPort).sendText = (json: string) => void texts.push(json);
    (port as SandboxPort).sendParts = (parts: readonly string[]) => void pieces.push(parts);
    const { ch } = await loaded(port);
    const data = 'q'.repeat(PART_MIN + 5);
    const args = { data, k: 2, more: [data] };
    const argsParts = canonicalParts(args, 'E_INVALID_ARGS');
    const p = ch.call(args, opts({ argsJson: joinParts(argsParts), argsParts, settings: { unit: 'c' } }));
    expect(texts).toEqual([]);
    expect(pieces).toHaveLength(1);
    const sent = pieces[0]!;
    expect(sent).toHaveLength(argsParts.length);
    expect(sent[1]).toBe(data);
    expect(sent[3]).toBe(data);
    const msg = JSON.parse(sent.join('')) as { id: number };
    expect(msg).toEqual({ v: 1, type: 'call', id: msg.id, settings: { unit: 'c' }, args });
    expect(sent.join('').endsWith(`"args":${joinParts(argsParts)}}`)).toBe(true);
    ch.receive({ v: 1, type: 'result', id: msg.id, ok: true, json: '2' });
    expect(await p).toBe(2);
    // arguments in one piece: one text line, as before
    const small = { k: 3 };
    const q = ch.call(
      small,
      opts({ argsJson: canonicalJson(small, 'E_INVALID_ARGS'), argsParts: canonicalParts(small, 'E_INVALID_ARGS') }),
    );
    expect(pieces).toHaveLength(1);
    expect(texts).toHaveLength(1);
    const m2 = JSON.parse(texts[0]!) as { id: number };
    expect(m2).toEqual({ v: 1, type: 'call', id: m2.id, args: small });
    ch.receive({ v: 1, type: 'result', id: m2.id, ok: true, json: '3' });
    expect(await q).toBe(3);
  });
});

describe('SandboxChannel capabilities', () => {
  it('routes cap requests to the call handler with a signal and replies', async () => {
    const { ch, port } = await loaded();
    const seen: unknown[] = [];
    const handler: CapabilityHandler = async (name, params, signal) => {
      seen.push([name, params, signal instanceof AbortSignal]);
      return { status: 200 };
    };
    const { p, id } = await startCall(ch, port, opts({ onCapability: handler }));
    const reply = port.next();
    ch.receive({ v: 1, type: 'cap', id: 7, callId: id, name: 'fetch', params: { url: 'https://a.example/' } });
    expect(await reply).toEqual({ v: 1, type: 'cap-reply', id: 7, ok: true, value: { status: 200 } });
    expect(seen).toEqual([['fetch', { url: 'https://a.example/' }, true]]);
    ch.receive({ v: 1, type: 'result', id, ok: true, json: 'null' });
    await expect(p).resolves.toBeNull();
  });

  it('forwards a TyError code; hides any other error detail (no host paths)', async () => {
    const { ch, port } = await loaded();
    let n = 0;
    const handler: CapabilityHandler = async () => {
      if (n++ === 0) throw new TyError('E_FETCH_TARGET', 'private address refused');
      throw new Error('ENOENT: /home/user/.secret/file at Object.openSync (node:fs:1)');
    };
    const { id } = await startCall(ch, port, opts({ onCapability: handler }));
    let r = port.next();
    ch.receive({ v: 1, type: 'cap', id: 1, callId: id, name: 'fetch', params: {} });
    expect(await r).toEqual({
      v: 1,
      type: 'cap-reply',
      id: 1,
      ok: false,
      error: { code: 'E_FETCH_TARGET', message: 'private address refused' },
    });
    r = port.next();
    ch.receive({ v: 1, type: 'cap', id: 2, callId: id, name: 'getSecret', params: { name: 'x' } });
    const m = await r;
    expect(m).toEqual({
      v: 1,
      type: 'cap-reply',
      id: 2,
      ok: false,
      error: { code: 'E_CAPABILITY_DENIED', message: 'getSecret failed' },
    });
    expect(JSON.stringify(m)).not.toContain('/home/user');
  });

  it('a cap request outside any call is denied and the sandbox stays up', async () => {
    const { ch, port } = await loaded();
    const r = port.next();
    ch.receive({ v: 1, type: 'cap', id: 3, callId: 12345, name: 'storage.get', params: { key: 'k' } });
    expect(await r).toMatchObject({ type: 'cap-reply', id: 3, ok: false, error: { code: 'E_CAPABILITY_DENIED' } });
    expect(ch.alive).toBe(true);
  });

  it('aborts the capability signal when the call ends', async () => {
    const { ch, port } = await loaded();
    let capSignal: AbortSignal | undefined;
    const handler: CapabilityHandler = (_n, _p, signal) => {
      capSignal = signal;
      return new Promise((_, rej) =>
        signal.addEventListener('abort', () => rej(new TyError('E_ABORTED', 'call ended'))),
      );
    };
    const { p, id } = await startCall(ch, port, opts({ onCapability: handler }));
    ch.receive({ v: 1, type: 'cap', id: 1, callId: id, name: 'fetch', params: {} });
    expect(capSignal?.aborted).toBe(false);
    ch.receive({ v: 1, type: 'result', id, ok: true, json: '1' });
    await p;
    expect(capSignal?.aborted).toBe(true);
  });

  it("cap-cancel aborts only that request's signal (E_ABORTED reason); the call and the sandbox go on", async () => {
    const { ch, port } = await loaded();
    const signals = new Map<number, AbortSignal>();
    const handler: CapabilityHandler = (_n, params, signal) => {
      signals.set((params as { n: number }).n, signal);
      return new Promise((_, rej) => signal.addEventListener('abort', () => rej(signal.reason)));
    };
    const { p, id } = await startCall(ch, port, opts({ onCapability: handler }));
    ch.receive({ v: 1, type: 'cap', id: 1, callId: id, name: 'fetch', params: { n: 1 } });
    ch.receive({ v: 1, type: 'cap', id: 2, callId: id, name: 'fetch', params: { n: 2 } });
    const reply = port.next();
    ch.receive({ v: 1, type: 'cap-cancel', id: 1 });
    expect(signals.get(1)?.aborted).toBe(true);
    expect(signals.get(1)?.reason).toMatchObject({ code: 'E_ABORTED' });
    expect(signals.get(2)?.aborted).toBe(false);
    // The handler's rejection still produces a reply (the sandbox ignores it), so the in-flight count stays honest.
    expect(await reply).toMatchObject({ type: 'cap-reply', id: 1, ok: false, error: { code: 'E_ABORTED' } });
    ch.receive({ v: 1, type: 'cap-cancel', id: 99 }); // unknown or already answered: ignored
    expect(ch.alive).toBe(true);
    ch.receive({ v: 1, type: 'result', id, ok: true, json: '7' });
    expect(await p).toBe(7);
    expect(signals.get(2)?.aborted).toBe(true); // call ended
  });

  it('a malformed cap-cancel is E_PROTOCOL', async () => {
    const { ch } = await loaded();
    ch.receive({ v: 1, type: 'cap-cancel', id: 'x' });
    expect(ch.alive).toBe(false);
    expect(ch.closedReason?.code).toBe('E_PROTOCOL');
  });
});

describe('SandboxChannel deadlines and aborts across calls', () => {
  const answer = (ch: SandboxChannel, id: number) => ch.receive({ v: 1, type: 'result', id, ok: true, json: '1' });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const refTimers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

  it('a short call after a long one times out at its own deadline', async () => {
    const { ch, port } = await loaded();
    const long = await startCall(ch, port, opts({ limits: { ...DEFAULT_LIMITS, timeoutMs: 60_000 } }));
    answer(ch, long.id);
    await expect(long.p).resolves.toBe(1);
    const short = await startCall(ch, port, opts({ limits: { ...DEFAULT_LIMITS, timeoutMs: 30 } }));
    await expect(short.p).rejects.toMatchObject({ code: 'E_TIMEOUT' });
    expect(port.closed).toBe(1);
  });

  it("an ended call's deadline never fires on a later call: the timer re-arms for the pending call's own deadline", async () => {
    const { ch, port } = await loaded();
    const quick = await startCall(ch, port, opts({ limits: { ...DEFAULT_LIMITS, timeoutMs: 40 } }));
    answer(ch, quick.id);
    await quick.p;
    const slow = await startCall(ch, port, opts({ limits: { ...DEFAULT_LIMITS, timeoutMs: 10_000 } }));
    await sleep(150); // past the first call's deadline
    expect(ch.alive).toBe(true);
    answer(ch, slow.id);
    await expect(slow.p).resolves.toBe(1);
  });

  it('no timer keeps the process alive while no call is pending; one does while a call is', async () => {
    const { ch, port } = await loaded();
    const before = refTimers();
    const c = await startCall(ch, port, opts({ limits: { ...DEFAULT_LIMITS, timeoutMs: 60_000 } }));
    expect(refTimers()).toBe(before + 1);
    answer(ch, c.id);
    await c.p;
    expect(refTimers()).toBe(before);
    const d = await startCall(ch, port, opts({ limits: { ...DEFAULT_LIMITS, timeoutMs: 60_000 } }));
    expect(refTimers()).toBe(before + 1);
    answer(ch, d.id);
    await d.p;
    expect(refTimers()).toBe(before);
  });

  it('calls on one signal share one listener; an abort after its call ended leaves the sandbox alive, during a call it kills it', async () => {
    const { ch, port } = await loaded();
    const ac = new AbortController();
    for (let i = 0; i < 5; i++) {
      const c = await startCall(ch, port, opts({ signal: ac.signal }));
      answer(ch, c.id);
      await c.p;
    }
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(1);
    const other = new AbortController();
    const c = await startCall(ch, port, opts({ signal: other.signal }));
    answer(ch, c.id);
    await c.p;
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0); // the listener moved to the newer signal
    other.abort();
    expect(ch.alive).toBe(true);
    const ac2 = new AbortController();
    const pending = await startCall(ch, port, opts({ signal: ac2.signal }));
    ac2.abort();
    await expect(pending.p).rejects.toMatchObject({ code: 'E_ABORTED' });
    expect(port.closed).toBe(1);
    expect(getEventListeners(ac2.signal, 'abort')).toHaveLength(0);
  });

  it("concurrent calls with different signals: either signal aborts; the channel's death releases every listener", async () => {
    for (const which of [0, 1]) {
      const { ch, port } = await loaded();
      const acs = [new AbortController(), new AbortController()];
      const a = await startCall(ch, port, opts({ signal: acs[0]!.signal }));
      const b = await startCall(ch, port, opts({ signal: acs[1]!.signal }));
      acs[which]!.abort();
      await expect(a.p).rejects.toMatchObject({ code: 'E_ABORTED' });
      await expect(b.p).rejects.toMatchObject({ code: 'E_ABORTED' });
      for (const x of acs) expect(getEventListeners(x.signal, 'abort')).toHaveLength(0);
    }
  });
});

describe('SandboxChannel call phases', () => {
  it('a Python call starts in its module; a phase message moves it to main, tells the caller, and the limit names it', async () => {
    const { ch, port } = await loaded(new FakePort(), 'python');
    const a = await startCall(ch, port, opts({ limits: { ...DEFAULT_LIMITS, timeoutMs: 30 } }));
    await expect(a.p).rejects.toMatchObject({
      code: 'E_TIMEOUT',
      message: expect.stringContaining("while its module's top-level code ran"),
      data: { phase: 'module', runtime: 'python', limitMs: 30 },
    });
    const { ch: ch2, port: port2 } = await loaded(new FakePort(), 'python');
    const seen: string[] = [];
    const b = await startCall(
      ch2,
      port2,
      opts({ limits: { ...DEFAULT_LIMITS, timeoutMs: 30 }, onPhase: (x) => seen.push(x) }),
    );
    ch2.receive({ v: 1, type: 'phase', id: b.id, phase: 'main' });
    expect(seen).toEqual(['main']);
    await expect(b.p).rejects.toMatchObject({
      code: 'E_TIMEOUT',
      message: expect.stringContaining('while main() ran'),
    });
  });

  it('a phase for no call in flight is E_PROTOCOL and kills the sandbox', async () => {
    const { ch, port } = await loaded(new FakePort(), 'python');
    ch.receive({ v: 1, type: 'phase', id: 99, phase: 'main' });
    expect(ch.alive).toBe(false);
    expect(ch.closedReason).toMatchObject({ code: 'E_PROTOCOL' });
    expect(port.closed).toBe(1);
  });

  it("a Python sandbox's E_MEMORY_LIMIT and E_SANDBOX_FAILED are the host's codes; a JavaScript tool's stay E_TOOL_FAILED", async () => {
    const fail = (code: string) => ({
      code: 'E_TOOL_FAILED',
      message: `Error: m ${code}`,
      data: { name: 'Error', code },
    });
    const { ch, port } = await loaded(new FakePort(), 'python');
    for (const code of ['E_MEMORY_LIMIT', 'E_SANDBOX_FAILED']) {
      const c = await startCall(ch, port);
      ch.receive({ v: 1, type: 'result', id: c.id, ok: false, error: fail(code) });
      expect(await c.p.catch((x: TyError) => x)).toMatchObject({ code, message: `m ${code}` });
    }
    const js = await loaded();
    const c = await startCall(js.ch, js.port);
    js.ch.receive({ v: 1, type: 'result', id: c.id, ok: false, error: fail('E_MEMORY_LIMIT') });
    expect(await c.p.catch((x: TyError) => x)).toMatchObject({
      code: 'E_TOOL_FAILED',
      data: { toolCode: 'E_MEMORY_LIMIT' },
    });
  });
});

describe('SandboxChannel limits', () => {
  it('timeout is E_TIMEOUT and closes the port', async () => {
    const { ch, port } = await loaded();
    const { p } = await startCall(ch, port, opts({ limits: { ...DEFAULT_LIMITS, timeoutMs: 20 } }));
    await expect(p).rejects.toMatchObject({ code: 'E_TIMEOUT' });
    expect(port.closed).toBe(1);
    await expect(ch.call({}, opts())).rejects.toMatchObject({ code: 'E_TIMEOUT' });
  });

  it('abort is E_ABORTED and closes the port', async () => {
    const { ch, port } = await loaded();
    const ac = new AbortController();
    const { p } = await startCall(ch, port, opts({ signal: ac.signal }));
    ac.abort();
    await expect(p).rejects.toMatchObject({ code: 'E_ABORTED' });
    expect(port.closed).toBe(1);
  });

  it('arguments that are not JSON are E_INVALID_ARGS and nothing is sent', async () => {
    const { ch, port } = await loaded();
    const before = port.sent.length;
    await expect(ch.call({ n: 1n }, opts())).rejects.toMatchObject({ code: 'E_INVALID_ARGS' });
    expect(port.sent.length).toBe(before);
  });

  it('caps log messages per call', async () => {
    const port = new FakePort();
    const logs: string[] = [];
    const ch = new SandboxChannel(port, {
      onLog: (_l, t) => logs.push(t),
      maxLogsPerCall: 3,
      maxLogsPerSecond: 20,
      now: () => clock,
    });
    let clock = 5_000;
    for (let i = 0; i < 10; i++) ch.receive({ v: 1, type: 'log', level: 'info', text: String(i) });
    expect(logs).toEqual(['0', '1', '2']);
    expect(ch.alive).toBe(true);
    // the rate window moves on: 10 per window forever is fine
    for (let w = 0; w < 5; w++) {
      clock += 1_000;
      for (let i = 0; i < 10; i++) ch.receive({ v: 1, type: 'log', level: 'info', text: 'slow' });
    }
    expect(ch.alive).toBe(true);
    // a flood far beyond the cap (tool code writing forged log lines to stdout) kills the sandbox
    for (let i = 0; i < 30; i++) ch.receive({ v: 1, type: 'log', level: 'info', text: 'x' });
    expect(ch.alive).toBe(false);
    expect(ch.closedReason?.code).toBe('E_PROTOCOL');
    expect(port.closed).toBe(1);
  });
});
