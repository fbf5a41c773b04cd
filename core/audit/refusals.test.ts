// Unit tests of admission refusals audited in aggregate (per principal, reason and second) and of changes audited as
// intent and completion records; trusted side.
import { describe, expect, it } from 'vitest';
import { RefusalTally } from './refusals.js';
import { ChangeAudit } from './change.js';
import { foldCalls, type AuditRecord, type AuditSink } from './trail.js';
import { isAuditRecord } from './record.js';
import { Invoker } from '../exec/invoke.js';
import { ToolRegistry } from '../revisions/registry.js';
import { Store } from '../store/contract.js';
import { MemoryStoreBackend } from '../store/memory.js';
import { TyError } from '../errors.js';

const sink = (): AuditSink & { recs: AuditRecord[] } => {
  const recs: AuditRecord[] = [];
  return { recs, append: async (r) => void recs.push(r) };
};

describe('RefusalTally (finding 7 of issue 26)', () => {
  it('a burst of refusals is one record per principal and reason per second, with its count', async () => {
    const s = sink();
    let now = Date.parse('2026-03-04T05:06:07.000Z');
    const tally = new RefusalTally(s, { clock: () => now });
    for (let i = 0; i < 9982; i++) tally.refused({ principal: 'cli:user', reason: 'admission limit: 1024', tool: 'a' });
    for (let i = 0; i < 3; i++)
      tally.refused({ principal: 'protocol:ide', reason: 'admission limit: 1024', tool: 'a' });
    tally.refused({ principal: 'protocol:ide', reason: 'admission limit: 1024', tool: 'b' });
    now += 1500;
    tally.refused({ principal: 'cli:user', reason: 'admission limit: 1024', tool: 'a' });
    await tally.flush();
    expect(s.recs.map((r) => [r.time, r.principal, r.tool, r.count])).toEqual([
      ['2026-03-04T05:06:07.000Z', 'cli:user', 'a', 9982],
      ['2026-03-04T05:06:07.000Z', 'protocol:ide', '*', 4],
      ['2026-03-04T05:06:08.000Z', 'cli:user', 'a', 1],
    ]);
    for (const r of s.recs) {
      expect(isAuditRecord(r)).toBe(true);
      expect(r).toMatchObject({
        kind: 'admission',
        decision: 'deny',
        outcome: 'denied',
        code: 'E_BUSY',
        rule: 'admission limit: 1024',
        revision: '*',
      });
    }
  });

  it('writes a window when it ends, without a flush', async () => {
    const s = sink();
    const tally = new RefusalTally(s, { windowMs: 20 });
    tally.refused({ principal: 'p', reason: 'r' });
    tally.refused({ principal: 'p', reason: 'r' });
    for (let i = 0; i < 200 && s.recs.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(s.recs.map((r) => [r.principal, r.tool, r.count])).toEqual([['p', '*', 2]]);
  });

  it('the Invoker counts every admission refusal; none is left unaudited', async () => {
    const s = sink();
    const tally = new RefusalTally(s);
    const registry = new ToolRegistry(new Store(new MemoryStoreBackend()));
    await registry.install({
      name: 'slow',
      description: 'never answers',
      parameters: { type: 'object' },
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async () => 1;' },
    });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const inv = new Invoker({
      registry,
      maxQueuedCalls: 2,
      refusals: tally,
      pool: { call: async () => held.then(() => 1) },
    });
    const first = [inv.invoke('slow', {}), inv.invoke('slow', {})];
    const refused = await Promise.all(Array.from({ length: 7 }, () => inv.invoke('slow', {}, { principal: 'ide' })));
    expect(refused.every((r) => !r.ok && r.error.code === 'E_BUSY')).toBe(true);
    release();
    await Promise.all(first);
    await tally.flush();
    expect(s.recs.map((r) => [r.principal, r.tool, r.count, r.rule])).toEqual([
      ['ide', 'slow', 7, 'admission limit: 2 calls in flight on this host'],
    ]);
  });
});

describe('ChangeAudit', () => {
  const what = {
    principal: 'cli:user',
    kind: 'registry',
    tool: 'greet',
    revision: 'bagaaiera1',
    target: 'add',
    rule: 'tool add',
  };

  it('writes a started record before the change and its completion after; both fold into one ok entry', async () => {
    const s = sink();
    const seen: number[] = [];
    const audit = new ChangeAudit(s, { newId: () => 'c1', hostId: 'h1' });
    expect(await audit.run(what, async () => (seen.push(s.recs.length), 42))).toBe(42);
    expect(seen).toEqual([1]);
    expect(s.recs.map((r) => [r.outcome, r.call, r.host, r.list, r.scope])).toEqual([
      ['started', 'c1', 'h1', 'person', 'command'],
      ['ok', 'c1', undefined, 'person', 'command'],
    ]);
    expect(foldCalls(s.recs).map((r) => r.outcome)).toEqual(['ok']);
  });

  it('a staged intent record is begun at once (its fsync starts now) and made durable before the change', async () => {
    const recs: AuditRecord[] = [];
    const order: string[] = [];
    const s: AuditSink = {
      append: async (r) => void recs.push(r),
      // like node/store/append.ts: a staged line is durable only once begun (or after a commit nobody starts here)
      stage: async (r) => {
        recs.push(r);
        let done!: () => void;
        const durable = new Promise<void>((res) => (done = res));
        return {
          durable,
          begin: (alone) => {
            order.push(`begin ${alone}`);
            done();
          },
        };
      },
    };
    const audit = new ChangeAudit(s, { newId: () => 'c3' });
    expect(await audit.run(what, async () => (order.push('change'), 7))).toBe(7);
    expect(order).toEqual(['begin true', 'change']);
    expect(recs.map((r) => r.outcome)).toEqual(['started', 'ok']);
  });

  it('a failed change is recorded with its code; an intent that cannot be written stops the change (E_STORE)', async () => {
    const s = sink();
    const audit = new ChangeAudit(s, { newId: () => 'c2' });
    await expect(
      audit.run(what, async () => {
        throw new TyError('E_INVALID_MANIFEST', 'bad');
      }),
    ).rejects.toMatchObject({ code: 'E_INVALID_MANIFEST' });
    expect(s.recs.map((r) => [r.outcome, r.code])).toEqual([
      ['started', undefined],
      ['error', 'E_INVALID_MANIFEST'],
    ]);
    let ran = false;
    const broken = new ChangeAudit({
      append: async () => {
        throw new Error('disk full');
      },
    });
    await expect(broken.run(what, async () => void (ran = true))).rejects.toMatchObject({ code: 'E_STORE' });
    expect(ran).toBe(false);
  });

  it('an interrupted change leaves its intent record, read as interrupted once its host is gone', () => {
    const rec: AuditRecord = {
      v: 1,
      time: '2026-01-01T00:00:00.000Z',
      principal: 'cli:user',
      tool: 'greet',
      revision: 'bagaaiera1',
      kind: 'registry',
      target: 'add',
      decision: 'allow',
      rule: 'tool add',
      list: 'person',
      scope: 'command',
      durationMs: 0,
      outcome: 'started',
      call: 'c3',
      host: 'gone',
    };
    expect(foldCalls([rec], () => false).map((r) => r.outcome)).toEqual(['interrupted']);
  });
});
