// The hand parse of sandbox messages gives SandboxMessageSchema's verdict and output on every message type, key and odd
// value a transport can deliver, and is never wider on the rest; trusted side.
import { describe, expect, it } from 'vitest';
import { SandboxMessageSchema } from '../../protocol/wire.js';
import { WireErrorSchema } from '../../protocol/errors.js';
import { isWireError, sandboxMessage } from './wire-check.js';

const good: Record<string, unknown>[] = [
  { v: 1, type: 'ready', runtime: 'node', version: '20.20.2' },
  { v: 1, type: 'ready', runtime: 'deno' },
  { v: 1, type: 'loaded', ok: true },
  { v: 1, type: 'loaded', ok: false, error: { code: 'E_TOOL_FAILED', message: 'boom', data: { name: 'TypeError' } } },
  { v: 1, type: 'result', id: 3, ok: true, json: '{"a":1}' },
  { v: 1, type: 'result', id: 0, ok: false, error: { code: -32000, message: 'm' } },
  { v: 1, type: 'cap', id: 7, callId: 3, name: 'fetch', params: { url: 'https://a.example' } },
  { v: 1, type: 'cap', id: 7, callId: 3, name: 'storage.get', params: null },
  { v: 1, type: 'cap-cancel', id: 7 },
  { v: 1, type: 'log', level: 'warn', text: 'careful' },
  { v: 1, type: 'progress', callId: 3, fraction: 0.5, message: 'half way' },
  { v: 1, type: 'progress', callId: 0, fraction: 1 },
  { v: 1, type: 'phase', id: 3, phase: 'module' },
  { v: 1, type: 'phase', id: 0, phase: 'main' },
];
/** Values of every kind the fields meet: each type, bounds, non-JSON values a structured message could hold. */
const odd: unknown[] = [
  undefined,
  null,
  true,
  false,
  0,
  -0,
  1,
  -1,
  1.5,
  2 ** 53,
  Number.MAX_SAFE_INTEGER,
  NaN,
  Infinity,
  -Infinity,
  '',
  'x',
  'E_TOOL_FAILED',
  'x'.repeat(64),
  'x'.repeat(65),
  'x'.repeat(200),
  'x'.repeat(201),
  0.5,
  1.0000001,
  -0.1,
  'x'.repeat(4096),
  'x'.repeat(4097),
  'x'.repeat(8192),
  'x'.repeat(8193),
  [],
  [1],
  {},
  { code: 1, message: '' },
  { code: 'x'.repeat(65), message: '' },
  { code: 1.5, message: '' },
  { code: 1, message: '', extra: 1 },
  { message: '' },
  new Date(0),
  new String('ready'),
  Object.create(null),
  'ready',
  'loaded',
  'result',
  'cap',
  'cap-cancel',
  'log',
  'progress',
  'phase',
  'module',
  'main',
  'fetch',
  'getSecret',
  'nope',
  'debug',
  'error',
  2,
  10n,
  Symbol('s'),
  () => 1,
];

const labelOf = (v: unknown): string => {
  try {
    return JSON.stringify(v)?.slice(0, 200) ?? typeof v;
  } catch {
    return typeof v;
  }
};

function variants(): unknown[] {
  const out: unknown[] = [...odd];
  for (const m of good) {
    out.push(m);
    for (const k of [
      ...Object.keys(m),
      'extra',
      '__proto__',
      'args',
      'settings',
      'source',
      'json',
      'error',
      'version',
      'params',
      'fraction',
      'message',
      'callId',
    ]) {
      for (const x of odd) out.push({ ...m, [k]: x });
      const { [k]: _drop, ...rest } = m;
      out.push(rest);
    }
    out.push(JSON.parse(`{"__proto__": 1, ${JSON.stringify(m).slice(1)}`));
    out.push(Object.assign(Object.create(null), m));
    out.push(Object.assign(Object.create({ extra: 1 }), m)); // an inherited enumerable key is an unknown key
    const { v: _v, ...noV } = m;
    out.push(Object.assign(Object.create({ v: 1 }), noV)); // an inherited declared key is read like an own one
    out.push({ ...m, [Symbol('s')]: 1 }); // symbol keys are not looked at
    class Msg {
      constructor() {
        Object.assign(this, m);
      }
    }
    out.push(new Msg());
  }
  return out;
}

/**
 * The forms `v` reaches the host in: a JSON line read with JSON.parse (the Node host) and a structured clone (the
 * browser's postMessage). A symbol or a function reaches it in neither; a class instance, a null prototype or an
 * inherited key arrives as a plain object (own enumerable keys only).
 */
function received(v: unknown): unknown[] {
  const out: unknown[] = [];
  try {
    const text = JSON.stringify(v);
    if (text !== undefined) out.push(JSON.parse(text));
  } catch {
    /* not JSON: a bigint */
  }
  try {
    out.push(structuredClone(v));
  } catch {
    /* not cloneable: a symbol, a function */
  }
  return out;
}

/** Same keys in the same order, same values (the parse rebuilds objects in the schema's key order, as zod does). */
function expectSameOutput(hand: unknown, schema: unknown, label: string): void {
  expect(hand, label).toEqual(schema);
  expect(Object.keys(hand as object), label).toEqual(Object.keys(schema as object));
}

describe('sandboxMessage (hand parse of SandboxMessageSchema)', () => {
  it("gives the schema's verdict on every variant, and returns the message with the schema's values", () => {
    let accepted = 0;
    let compared = 0;
    for (const v of variants()) {
      for (const r of received(v)) {
        compared++;
        const schema = SandboxMessageSchema.safeParse(r);
        const hand = sandboxMessage(r);
        const label = labelOf(r);
        expect(hand !== undefined, label).toBe(schema.success);
        if (schema.success) {
          accepted++;
          expectSameOutput(hand, schema.data, label);
        }
      }
    }
    expect(compared).toBeGreaterThan(1000);
    expect(accepted).toBeGreaterThan(100); // the accepting side is exercised, not only refusals
  });

  it('is never wider than the schema on values no transport delivers (another prototype: narrower there, by design)', () => {
    for (const v of variants()) {
      const hand = sandboxMessage(v);
      if (hand === undefined) continue;
      const schema = SandboxMessageSchema.safeParse(v);
      expect(schema.success, labelOf(v)).toBe(true);
      if (schema.success) expectSameOutput(hand, schema.data, labelOf(v));
    }
    // Deliberately narrower: zod takes any object, the hand parse only Object.prototype ones (what JSON.parse and a
    // structured clone make). Such a message could only come from code in the host's own process.
    class Msg {
      constructor() {
        Object.assign(this, good[0]);
      }
    }
    for (const v of [Object.assign(Object.create(null), good[0]), new Msg()]) {
      expect(SandboxMessageSchema.safeParse(v).success).toBe(true);
      expect(sandboxMessage(v)).toBeUndefined();
    }
  });

  it("isWireError gives WireErrorSchema's verdict", () => {
    for (const v of odd) {
      for (const r of received(v)) expect(isWireError(r), labelOf(r)).toBe(WireErrorSchema.safeParse(r).success);
      if (isWireError(v)) expect(WireErrorSchema.safeParse(v).success, labelOf(v)).toBe(true);
    }
    expect(isWireError({ code: 'E_TOOL_FAILED', message: 'm', data: undefined })).toBe(true);
  });
});
