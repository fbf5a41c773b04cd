// A call waiting for a person's answer sends progress on its token, so a client that resets its timeout on progress
// keeps waiting; test side.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PermissionGate, StoreDecisions } from '../../core/policy/gate.js';
import { compilePolicy } from '../../core/policy/permissions.js';
import { StoreAuditLog } from '../../core/audit/trail.js';
import { PauseTracker } from '../../core/policy/pause.js';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import { AskRouter } from '../../core/ask/router.js';
import type { Answer, AskChannel, Question } from '../../core/exec/runtime.js';
import { FIXTURE, addNodeServer, connect, mcpRefusal, openVia, tempHome, type Connected } from './helpers.js';

let home: string;
let cleanup: () => Promise<void>;
let conn: Connected | undefined;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
});
afterEach(async () => {
  await conn?.close();
  conn = undefined;
  await cleanup();
});

/** A person who answers "yes, once" after `ms`. */
class SlowPerson implements AskChannel {
  readonly name = 'scripted';
  asked: Question[] = [];
  constructor(private readonly ms: number) {}
  live(): boolean {
    return true;
  }
  async ask(q: Question, signal: AbortSignal): Promise<Answer | undefined> {
    this.asked.push(q);
    await new Promise((r, j) => {
      const t = setTimeout(r, this.ms);
      signal.addEventListener('abort', () => (clearTimeout(t), j(new Error('aborted'))), { once: true });
    });
    return { allow: true, scope: 'once', channel: 'scripted' };
  }
}

function gateWith(person: AskChannel): PermissionGate {
  const store = new Store(new MemoryStoreBackend());
  return new PermissionGate({
    config: () => ({ policy: compilePolicy([]) }),
    audit: new StoreAuditLog(store),
    pause: new PauseTracker(store, { maxRefusals: 100, windowMs: 60_000 }),
    decisions: new StoreDecisions(store),
    asker: new AskRouter({ channels: [person], askWaitMs: 30_000 }),
  });
}

describe('progress while a question waits', () => {
  it('over HTTP too: a client whose timeout resets on progress keeps waiting through the question', async () => {
    await addNodeServer(home, 'fx', FIXTURE, []);
    const person = new SlowPerson(7000);
    const c = await openVia('http', {
      home,
      sandbox: 'w',
      gate: gateWith(person),
      waitingProgress: { firstMs: 200, everyMs: 500 },
    });
    try {
      const seen: string[] = [];
      const r = await c.client.callTool({ name: 'fx__search', arguments: { q: 'http' } }, undefined, {
        timeout: 3000,
        resetTimeoutOnProgress: true,
        onprogress: (p) => void seen.push(p.message ?? ''),
      });
      expect(JSON.stringify(r)).toContain('found http');
      expect(seen.length).toBeGreaterThanOrEqual(2);
      expect(new Set(seen)).toEqual(new Set(['waiting for approval of fx/search']));
    } finally {
      await c.close();
    }
  }, 60_000);

  it('a client whose timeout (3 s) resets on progress keeps waiting through a 7 s question; without progress the same call times out', async () => {
    await addNodeServer(home, 'fx', FIXTURE, []);
    const person = new SlowPerson(7000);
    conn = await connect({
      home,
      sandbox: 'w',
      gate: gateWith(person),
      waitingProgress: { firstMs: 200, everyMs: 500 },
    });
    const seen: { progress: number; message?: string }[] = [];
    const r = await conn.client.callTool({ name: 'fx__search', arguments: { q: 'waited' } }, undefined, {
      timeout: 3000,
      resetTimeoutOnProgress: true,
      onprogress: (p) => void seen.push(p),
    });
    expect(JSON.stringify(r)).toContain('found waited');
    expect(person.asked).toHaveLength(1);
    expect(seen.length).toBeGreaterThanOrEqual(5);
    expect(seen.every((p) => p.message === 'waiting for approval of fx/search')).toBe(true);
    expect(seen.map((p) => p.progress)).toEqual(seen.map((_, i) => i + 1));
    // a client without a progress token gets none, and its own timeout ends the wait (the question is withdrawn)
    const slow = new SlowPerson(7000);
    await conn.close();
    conn = await connect({ home, sandbox: 'w', gate: gateWith(slow), waitingProgress: { firstMs: 200, everyMs: 300 } });
    const t = await mcpRefusal(
      conn.client.callTool({ name: 'fx__search', arguments: { q: 'x' } }, undefined, { timeout: 3000 }),
    );
    expect(t.code).toBe(-32001); // the SDK client's own RequestTimeout
    expect(conn.transport.raw.some((m) => (m as { method?: string }).method === 'notifications/progress')).toBe(false);
  }, 60_000);
});
