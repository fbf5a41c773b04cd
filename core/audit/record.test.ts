// The audit record's hand parse and type answer as AuditRecordSchema does: the same verdict and output on every JSON
// value, never wider on objects of another prototype, and z.infer of the schema is AuditRecord; trusted side.
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import { auditRecord, isAuditRecord, type AuditRecord } from './record.js';
import { AuditRecordSchema } from './schema.js';
import { NO } from '../schema/hand.js';

const rec = (over: Partial<AuditRecord> = {}): AuditRecord => ({
  v: 1,
  time: '2026-01-01T00:00:00.000Z',
  principal: 'cli:user',
  tool: 'weather',
  revision: 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy',
  kind: 'tool',
  decision: 'allow',
  rule: 'mode standard',
  list: 'mode',
  scope: 'default',
  durationMs: 3,
  outcome: 'ok',
  ...over,
});

const labelOf = (v: unknown): string => JSON.stringify(v)?.slice(0, 160) ?? typeof v;

/** The JSON form of `v` (what a record written to the log reads back as), when it has one. */
function asJson(v: unknown): unknown[] {
  try {
    const text = JSON.stringify(v);
    return text === undefined ? [] : [JSON.parse(text)];
  } catch {
    return [];
  }
}

/** isAuditRecord's verdict is the schema's, and the parse's output is the schema's (same keys in the same order). */
function expectSameAsSchema(v: unknown): boolean {
  const schema = AuditRecordSchema.safeParse(v);
  const hand = auditRecord(v);
  expect(isAuditRecord(v), labelOf(v)).toBe(schema.success);
  expect(hand !== NO, labelOf(v)).toBe(schema.success);
  if (schema.success) {
    expect(hand, labelOf(v)).toEqual(schema.data);
    expect(Object.keys(hand as object), labelOf(v)).toEqual(Object.keys(schema.data));
  }
  return schema.success;
}

describe('AuditRecord', () => {
  it('is the type AuditRecordSchema infers', () => {
    expectTypeOf<z.infer<typeof AuditRecordSchema>>().toEqualTypeOf<AuditRecord>();
  });
});

describe('isAuditRecord (hand check of AuditRecordSchema)', () => {
  it('the field-by-field check of common records accepts only what the schema accepts (the rest goes through the schema)', () => {
    const bases = [
      rec(),
      rec({ outcome: 'started', call: 'c'.repeat(36), host: 'h1' }),
      rec({ kind: 'fetch', target: 'https://a.example', access: 'read', channel: 'terminal' }),
      rec({ outcome: 'error', code: 'E_TOOL_FAILED', call: 'c1' }),
      rec({ kind: 'admission', decision: 'deny', outcome: 'denied', code: 'E_BUSY', count: 9982 }),
      rec({ kind: 'mcp-elicit', elicit: { action: 'accept', fields: ['a', 'token'], secret: ['token'] } }),
      rec({ kind: 'mcp-elicit', elicit: { action: 'refused', fields: [], reason: 'no channel' } }),
    ];
    const odd: unknown[] = [
      undefined,
      null,
      0,
      -0,
      -1,
      1.5,
      NaN,
      Infinity,
      2 ** 53,
      '',
      'x'.repeat(32),
      'x'.repeat(33),
      'x'.repeat(64),
      'x'.repeat(65),
      'x'.repeat(128),
      'x'.repeat(129),
      'x'.repeat(2048),
      'x'.repeat(2049),
      'maybe',
      'read',
      'write',
      'allow',
      'deny',
      'started',
      'accept',
      true,
      {},
      [],
      ['a'],
      Array.from({ length: 65 }, () => 'a'),
      ['x'.repeat(65)],
      [1],
      { action: 'decline', fields: [] },
      { action: 'maybe', fields: [] },
      { action: 'accept', fields: ['a'], extra: 1 },
      { action: 'accept' },
      new Date(0),
      'E_TOOL_FAILED',
      'E_NOT_A_CODE',
      'e_tool_failed',
    ];
    const variants: unknown[] = [...bases];
    for (const b of bases) {
      for (const k of [...Object.keys(AuditRecordSchema.shape), 'args', '__proto__'])
        for (const x of odd) variants.push({ ...b, [k]: x });
      for (const k of Object.keys(b)) {
        const { [k]: _drop, ...rest } = b as Record<string, unknown>;
        variants.push(rest);
      }
      const elicit = b.elicit;
      if (elicit)
        for (const k of ['action', 'fields', 'secret', 'reason', 'extra'])
          for (const x of odd) variants.push({ ...b, elicit: { ...elicit, [k]: x } });
      variants.push(JSON.parse(`{"__proto__": 1, ${JSON.stringify(b).slice(1)}`));
    }
    let accepted = 0;
    let compared = 0;
    // Every variant as the caller builds it (undefined fields kept) and as JSON: the schema's verdict and output.
    for (const v of variants) {
      for (const r of [v, ...asJson(v)]) {
        compared++;
        if (expectSameAsSchema(r)) accepted++;
      }
    }
    for (const b of bases) expect(isAuditRecord(b)).toBe(true);
    expect(compared).toBeGreaterThan(2000);
    expect(accepted).toBeGreaterThan(bases.length * 20);
  });

  it('is never wider than the schema on objects of another prototype (narrower there, by design)', () => {
    class Rec {
      constructor() {
        Object.assign(this, rec());
      }
    }
    const others = [
      Object.assign(Object.create({ args: 1 }), rec()),
      Object.assign(Object.create({ inherited: 1 }), rec()),
      Object.assign(Object.create(null), rec()),
      new Rec(),
      { ...rec(), elicit: Object.assign(Object.create(null), { action: 'accept', fields: ['a'] }) },
    ];
    for (const v of others) {
      if (isAuditRecord(v)) expect(AuditRecordSchema.safeParse(v).success, labelOf(v)).toBe(true);
      expect(isAuditRecord(v), labelOf(v)).toBe(false); // such a record goes through the schema
    }
    expect(AuditRecordSchema.safeParse(Object.assign(Object.create(null), rec())).success).toBe(true);
  });

  it("never passes a record AuditRecordSchema refuses, and passes the gate's per-call records as the schema reads them", () => {
    const long = (n: number) => 'x'.repeat(n);
    const variants: Record<string, unknown>[] = [
      rec(),
      rec({
        target: 'fx/search',
        access: 'read',
        channel: 'tty',
        code: 'E_MCP',
        call: 'c-1',
        host: 'h-1',
        outcome: 'started',
      }),
      { ...rec(), v: 2 },
      { ...rec(), extra: 1 },
      { ...rec(), principal: long(2048) },
      { ...rec(), principal: long(2049) },
      { ...rec(), kind: long(33) },
      { ...rec(), scope: long(64) },
      { ...rec(), scope: long(65) },
      { ...rec(), call: long(65) },
      { ...rec(), host: long(129) },
      { ...rec(), decision: 'maybe' },
      { ...rec(), access: 'exec' },
      { ...rec(), durationMs: -1 },
      { ...rec(), durationMs: Number.NaN },
      { ...rec(), durationMs: Number.POSITIVE_INFINITY },
      { ...rec(), durationMs: '3' },
      { ...rec(), outcome: 'done' },
      { ...rec(), code: 'E_NOPE' },
      { ...rec(), time: 5 },
      { ...rec(), target: 7 },
      { ...rec(), tool: undefined },
      { ...rec(), elicit: { action: 'accept', fields: ['a'] } },
      Object.assign(Object.create({ inherited: 1 }), rec()),
    ];
    for (const r of variants) {
      const schema = AuditRecordSchema.safeParse(r);
      const plain = isAuditRecord(r);
      if (!schema.success) expect(plain, JSON.stringify(r).slice(0, 120)).toBe(false);
      else if (plain) expect(r).toEqual(schema.data);
    }
    // the records the gate writes on every call take the hand check
    expect(isAuditRecord(rec())).toBe(true);
    expect(isAuditRecord(rec({ outcome: 'started', call: 'c', host: 'h', target: 't' }))).toBe(true);
  });
});
