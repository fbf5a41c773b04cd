// Unit tests for the audit log (schema, scrubbing, --since parsing) and pause keys; trusted side.
import { describe, expect, it } from 'vitest';
import { StoreAuditLog, formatAuditRecord, parseSince, plainAuditRecord, scrub, type AuditRecord } from './trail.js';
import { AuditRecordSchema } from './schema.js';
import { PauseTracker, pauseKey } from '../policy/pause.js';
import { KEY_RE, Store } from '../store/contract.js';
import { MemoryStoreBackend } from '../store/memory.js';
import { TyError } from '../errors.js';

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

describe('audit', () => {
  it('withholds known secret values, longest first, in every string field', async () => {
    expect(scrub('a-LONGSECRET-b', ['LONG', 'LONGSECRET'])).toBe('a-<withheld>-b');
    const store = new Store(new MemoryStoreBackend());
    const log = new StoreAuditLog(store, () => ['tok123']);
    await log.append(rec({ target: 'https://tok123.example.com', principal: 'mcp:tok123' }));
    const raw = (await store.backend.readLog('audit')).join('\n');
    expect(raw).not.toContain('tok123');
    expect(raw).toContain('<withheld>');
  });

  it('refuses a record with fields outside the schema (arguments have no place in it)', async () => {
    const log = new StoreAuditLog(new Store(new MemoryStoreBackend()));
    await expect(log.append({ ...rec(), args: { a: 1 } } as unknown as AuditRecord)).rejects.toMatchObject({
      code: 'E_STORE',
    });
  });

  it('the field-by-field check of common records accepts only what the schema accepts (the rest goes through the schema)', () => {
    const bases = [
      rec(),
      rec({ outcome: 'started', call: 'c'.repeat(36), host: 'h1' }),
      rec({ kind: 'fetch', target: 'https://a.example', access: 'read', channel: 'terminal' }),
      rec({ outcome: 'error', code: 'E_TOOL_FAILED', call: 'c1' }),
    ];
    const odd: unknown[] = [
      undefined,
      null,
      -1,
      1.5,
      NaN,
      Infinity,
      '',
      'x'.repeat(65),
      'x'.repeat(2049),
      'maybe',
      'read',
      true,
      {},
      [],
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
    }
    variants.push(Object.assign(Object.create({ args: 1 }), rec()));
    let accepted = 0;
    for (const v of variants) {
      if (!plainAuditRecord(v as Record<string, unknown>)) continue;
      accepted++;
      expect(AuditRecordSchema.safeParse(v).success, JSON.stringify(v)).toBe(true);
    }
    for (const b of bases) expect(plainAuditRecord(b)).toBe(true);
    expect(accepted).toBeGreaterThan(bases.length);
  });

  it('reads with --since and skips torn or foreign lines, counting them', async () => {
    const store = new Store(new MemoryStoreBackend());
    const log = new StoreAuditLog(store);
    await log.append(rec({ time: '2026-01-01T00:00:00.000Z' }));
    await store.backend.append('audit', '{"torn":');
    await store.backend.append('audit', '{"v":1}');
    await log.append(rec({ time: '2026-01-02T00:00:00.000Z', decision: 'deny', outcome: 'denied' }));
    const all = await log.read();
    expect(all.entries).toHaveLength(2);
    expect(all.corrupt).toBe(2);
    const later = await log.read({ since: Date.parse('2026-01-01T12:00:00Z') });
    expect(later.entries.map((e) => e.decision)).toEqual(['deny']);
    expect(formatAuditRecord(later.entries[0]!)).toContain('DENY cli:user weather@');
    // The revision is shown as its short id (digest characters after the CID head), an MCP server's whole.
    const cid = 'bagaaieraudnpizzxp2fdabcdefghijklmnopqrstuvwxyz234567abcdefghijkl';
    expect(formatAuditRecord({ ...later.entries[0]!, revision: cid })).toContain('weather@udnpizzxp2fd call');
    expect(formatAuditRecord({ ...later.entries[0]!, tool: 'everything__echo', revision: 'mcp:everything' })).toContain(
      'everything__echo@mcp:everything call',
    );
  });

  it('parseSince takes ISO times and spans, refuses the rest', () => {
    const now = Date.parse('2026-01-10T00:00:00Z');
    expect(parseSince('2h', now)).toBe(now - 7_200_000);
    expect(parseSince('7d', now)).toBe(now - 7 * 86_400_000);
    expect(parseSince('2026-01-01T00:00:00Z', now)).toBe(Date.parse('2026-01-01T00:00:00Z'));
    for (const bad of ['yesterday', '5', '-1h', '2026-13-45']) expect(() => parseSince(bad, now)).toThrow(TyError);
  });
});

describe('plainAuditRecord at the edges of the schema', () => {
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
      const plain = plainAuditRecord(r);
      if (!schema.success) expect(plain, JSON.stringify(r).slice(0, 120)).toBe(false);
      else if (plain) expect(r).toEqual(schema.data);
    }
    // the records the gate writes on every call take the plain check
    expect(plainAuditRecord(rec())).toBe(true);
    expect(plainAuditRecord(rec({ outcome: 'started', call: 'c', host: 'h', target: 't' }))).toBe(true);
  });
});

describe('pause', () => {
  it('keys are the tool name when safe, hex otherwise, and never collide across the two', () => {
    expect(pauseKey('weather')).toBe('weather');
    expect(pauseKey('files/read')).toMatch(/^x-[0-9a-f]+$/);
    expect(pauseKey('x-41')).not.toBe('x-41');
    expect(pauseKey('x-41')).not.toBe(pauseKey('A'));
    const a = pauseKey(`${'a'.repeat(300)}/1`);
    const b = pauseKey(`${'a'.repeat(300)}/2`);
    expect(a).toMatch(KEY_RE);
    expect(b).toMatch(KEY_RE);
    expect(a).not.toBe(b);
  });

  it('rejects a nonsensical configuration', () => {
    const store = new Store(new MemoryStoreBackend());
    expect(() => new PauseTracker(store, { maxRefusals: 0 })).toThrow(TyError);
    expect(() => new PauseTracker(store, { windowMs: -5 })).toThrow(TyError);
  });
});
