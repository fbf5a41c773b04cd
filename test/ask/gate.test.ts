// Integration: the real gate with the command line's asker (terminal + waiting-question store); test code, trusted
// side.
import { cliHint } from '../../node/cli/hints.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PermissionGate, StoreDecisions } from '../../core/policy/gate.js';
import { compilePolicy } from '../../core/policy/permissions.js';
import { StoreAuditLog } from '../../core/audit/trail.js';
import { PauseTracker } from '../../core/policy/pause.js';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import { TyError } from '../../core/errors.js';
import type { GateRequest } from '../../core/exec/runtime.js';
import { QuestionStore, questionsDir } from '../../node/ask/store.js';
import { createNodeAsker } from '../../node/ask/channels.js';

const REV = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy';
const base = mkdtempSync(join(tmpdir(), 'ty-ask-gate-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function gateFor(home: string): PermissionGate {
  const store = new Store(new MemoryStoreBackend());
  return new PermissionGate({
    config: () => ({ policy: compilePolicy([]) }),
    audit: new StoreAuditLog(store),
    pause: new PauseTracker(store, { maxRefusals: 100, windowMs: 60_000 }),
    decisions: new StoreDecisions(store),
    // terminal: false stands for "no controlling terminal" (vitest workers have none either); an empty environment
    // for "no desktop session", whatever another test file left in this worker's process.env (DISPLAY, ...).
    asker: createNodeAsker({ home, terminal: false, env: {} }),
  });
}
const fetchReq: GateRequest = {
  principal: 'cli:user',
  kind: 'fetch',
  toolName: 'weather',
  revision: REV,
  target: 'https://api.example.com',
  access: 'read',
  requested: true,
};

describe('gate + CLI asker', () => {
  it('no terminal and nobody watching: a fetch no rule allows is refused at once with E_CAPABILITY_DENIED naming the --allow rule', async () => {
    const home = join(base, 'a');
    const gate = gateFor(home);
    const err = await gate.authorize(fetchReq).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TyError);
    expect((err as TyError).code).toBe('E_CAPABILITY_DENIED');
    // core names the rule (once), the CLI the flag
    expect((err as TyError).message).toContain(
      'the rule that allows it without asking: fetch(read:https://api.example.com)',
    );
    expect(cliHint(err as TyError)).toContain('pass that rule quoted to --allow');
    expect(cliHint(err as TyError)).not.toContain('fetch(read:');
    expect((err as TyError).message).toContain('nobody could be asked');
    expect(await new QuestionStore(questionsDir(home)).list()).toEqual([]);
  });

  it('with a watcher, the question waits in the store, shows its hints, and `yes` lets it through', async () => {
    const home = join(base, 'b');
    const qs = new QuestionStore(questionsDir(home));
    const lock = await qs.holdWatchLock();
    try {
      const gate = gateFor(home);
      const p = gate.authorize({ ...fetchReq, hints: { readOnlyHint: true } });
      let waiting = await qs.list();
      for (let i = 0; i < 400 && waiting.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 10));
        waiting = await qs.list();
      }
      expect(waiting).toHaveLength(1);
      expect(waiting[0]!.hints).toEqual({ readOnlyHint: true });
      expect(await qs.answer(waiting[0]!.id, { allow: true, by: 'test' })).toEqual({ ok: true });
      await expect(p).resolves.toBeUndefined();
    } finally {
      await lock.release();
    }
  });
});
