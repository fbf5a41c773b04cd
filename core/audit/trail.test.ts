// Unit tests for the audit log (written as given, refusing, reading, --since parsing) and pause keys; trusted side.
// The record's hand check against its schema: core/audit/record.test.ts.
import { describe, expect, it } from 'vitest';
import { StoreAuditLog, formatAuditRecord, parseSince, type AuditRecord } from './trail.js';
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
  it('writes records as they are given: nothing is searched or replaced (finding 1 of issue 26)', async () => {
    const store = new Store(new MemoryStoreBackend());
    const log = new StoreAuditLog(store);
    const r = rec({ target: 'https://api.example.com', principal: 'mcp:tok123', outcome: 'started' });
    await log.append(r);
    expect(await store.backend.readLog('audit')).toEqual([JSON.stringify(r)]);
  });

  it('refuses a record with fields outside the schema (arguments have no place in it)', async () => {
    const log = new StoreAuditLog(new Store(new MemoryStoreBackend()));
    await expect(log.append({ ...rec(), args: { a: 1 } } as unknown as AuditRecord)).rejects.toMatchObject({
      code: 'E_STORE',
    });
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
    // an aggregate record says how many refusals it stands for
    expect(
      formatAuditRecord(
        rec({
          kind: 'admission',
          decision: 'deny',
          outcome: 'denied',
          code: 'E_BUSY',
          count: 9982,
          tool: '*',
          revision: '*',
          list: 'admission',
          rule: 'admission limit: 1024 calls in flight on this host',
          scope: 'host',
        }),
      ),
    ).toBe(
      '2026-01-01T00:00:00.000Z DENY cli:user * admission: 9982 refused within a second by admission limit: 1024 ' +
        'calls in flight on this host [host] -> denied E_BUSY',
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
