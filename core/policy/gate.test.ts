// Unit tests for the gate pipeline with fake asker, hook runner and clock; trusted side.
import { describe, expect, it, vi } from 'vitest';
import {
  PermissionGate,
  StoreDecisions,
  parseHookDecision,
  type GateConfig,
  type HookResult,
  type HookRunner,
  type HookSpec,
} from './gate.js';
import { compilePolicy, type RuleSet } from './permissions.js';
import { StoreAuditLog, formatAuditRecord, type AuditRecord } from '../audit/trail.js';
import { PauseTracker } from './pause.js';
import { Store } from '../store/contract.js';
import { MemoryStoreBackend } from '../store/memory.js';
import { TyError } from '../errors.js';
import type { Asker, AskOutcome } from '../ask/router.js';
import type { GateRequest, Question } from '../exec/runtime.js';
import { rejection } from '../../test/helpers/errors.js';

const REV = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy';
const REV2 = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku';
const CANARY_ARG = 'canary-arg-7f3a9c';
const CANARY_SECRET = 'sk-canary-secret-91b2e4';

class FakeAsker implements Asker {
  questions: Question[] = [];
  constructor(public answer: (q: Question) => AskOutcome) {}
  async ask(q: Question): Promise<AskOutcome> {
    this.questions.push(q);
    return this.answer(q);
  }
}

class FakeHooks implements HookRunner {
  inputs: { hook: HookSpec; input: string }[] = [];
  constructor(public result: (hook: HookSpec, input: string) => HookResult) {}
  async run(hook: HookSpec, input: string): Promise<HookResult> {
    this.inputs.push({ hook, input });
    return this.result(hook, input);
  }
}

const ok = (stdout = '', stderr = ''): HookResult => ({ exitCode: 0, stdout, stderr, timedOut: false });
const exit = (code: number | null, stderr = '', timedOut = false): HookResult => ({
  exitCode: code,
  stdout: '',
  stderr,
  timedOut,
});

function hook(event: HookSpec['event'], command: string, matcher = '*', index = 0): HookSpec {
  return { event, matcher, command, timeoutMs: 1000, scope: 'user', index };
}

function setup(
  opts: {
    sets?: RuleSet[];
    hooks?: GateConfig['hooks'];
    asker?: Asker;
    runner?: HookRunner;
    store?: Store;
    pause?: { maxRefusals: number; windowMs: number };
    noAsker?: boolean;
  } = {},
) {
  const store = opts.store ?? new Store(new MemoryStoreBackend());
  let now = Date.parse('2026-01-01T00:00:00Z');
  const clock = () => now;
  const audit = new StoreAuditLog(store);
  const pause = new PauseTracker(store, opts.pause ?? { maxRefusals: 10, windowMs: 60_000 }, clock);
  const asker = opts.asker ?? new FakeAsker(() => ({ allow: false, reason: 'timeout' }));
  const config: GateConfig = { policy: compilePolicy(opts.sets ?? []) };
  if (opts.hooks) config.hooks = opts.hooks;
  const deps: ConstructorParameters<typeof PermissionGate>[0] = {
    config: () => config,
    audit,
    pause,
    decisions: new StoreDecisions(store),
    clock,
    withheld: () => [CANARY_SECRET],
  };
  if (!opts.noAsker) deps.asker = asker;
  if (opts.runner) deps.hooks = opts.runner;
  const gate = new PermissionGate(deps);
  return { gate, store, audit, pause, asker, advance: (ms: number) => (now += ms) };
}

const toolReq = (over: Partial<GateRequest> = {}): GateRequest => ({
  principal: 'cli:user',
  kind: 'tool',
  toolName: 'weather',
  revision: REV,
  hookPayload: { city: CANARY_ARG },
  ...over,
});
const fetchReq = (over: Partial<GateRequest> = {}): GateRequest => ({
  principal: 'cli:user',
  kind: 'fetch',
  toolName: 'weather',
  revision: REV,
  target: 'https://api.example.com',
  access: 'read',
  requested: true,
  ...over,
});

async function auditEntries(a: StoreAuditLog): Promise<AuditRecord[]> {
  return (await a.read()).entries;
}

describe('PermissionGate: decisions', () => {
  it('runs an allowed call and records it with the deciding rule', async () => {
    const { gate, audit } = setup();
    let ran = 0;
    const r = await gate.run(toolReq(), async () => ++ran);
    expect(r.value).toBe(1);
    const [rec] = await auditEntries(audit);
    expect(rec).toMatchObject({
      decision: 'allow',
      outcome: 'ok',
      tool: 'weather',
      revision: REV,
      rule: 'mode standard',
      list: 'mode',
      scope: 'default',
      principal: 'cli:user',
    });
  });

  it('a deny rule refuses before anything runs, naming rule and scope', async () => {
    const { gate, audit, asker } = setup({
      sets: [
        { scope: 'project', source: '/secret/host/path/settings.json', deny: ['tool(weather)'] },
        { scope: 'flags', allow: ['tool(*)'] },
      ],
    });
    let ran = false;
    const e = await rejection(gate.run(toolReq(), async () => (ran = true)));
    expect(ran).toBe(false);
    expect(e.code).toBe('E_CAPABILITY_DENIED');
    expect(e.message).toContain('deny rule tool(weather) in project settings');
    expect(e.message).not.toContain('/secret/host/path');
    expect((asker as FakeAsker).questions).toHaveLength(0);
    expect(await auditEntries(audit)).toMatchObject([
      { decision: 'deny', outcome: 'denied', code: 'E_CAPABILITY_DENIED', list: 'deny', scope: 'project' },
    ]);
  });

  it('a capability the manifest did not request is denied without asking, even in unrestricted mode', async () => {
    const { gate, asker } = setup({ sets: [{ scope: 'flags', mode: 'unrestricted', allow: ['fetch(*:*)'] }] });
    const e = await rejection(gate.authorize(fetchReq({ requested: false })));
    expect(e.code).toBe('E_CAPABILITY_DENIED');
    expect(e.message).toContain('manifest');
    expect((asker as FakeAsker).questions).toHaveLength(0);
  });

  it('no answer is a refusal whose message names the rule that lets it through', async () => {
    const { gate, audit } = setup();
    const e = await rejection(gate.authorize(fetchReq({ target: 'https://API.example.com' })));
    expect(e.code).toBe('E_CAPABILITY_DENIED');
    expect(e.message).toContain('the rule that allows it without asking: fetch(read:https://api.example.com)');
    expect(e.message).not.toMatch(/tycli|--allow/);
    expect(e.message).toContain('timeout');
    expect(e.data).toMatchObject({
      suggestedRule: 'fetch(read:https://api.example.com)',
      allowRule: 'fetch(read:https://api.example.com)',
      reason: 'timeout',
    });
    expect(await auditEntries(audit)).toMatchObject([{ decision: 'deny', rule: 'no answer (timeout)' }]);
  });

  it('with no asker every ask is refused at once (no-channel)', async () => {
    const { gate } = setup({ noAsker: true });
    const e = await rejection(gate.authorize(fetchReq()));
    expect(e.message).toContain('nobody could be asked');
  });

  it('an asker that throws is a refusal, never a yes', async () => {
    const asker: Asker = {
      ask: async () => {
        throw new Error('boom');
      },
    };
    const { gate } = setup({ asker });
    expect((await rejection(gate.authorize(fetchReq()))).code).toBe('E_CAPABILITY_DENIED');
  });

  it('a session "yes" covers later identical requests of the same revision only', async () => {
    const asker = new FakeAsker(() => ({ allow: true, scope: 'session', channel: 'terminal' }));
    const { gate, audit } = setup({ asker });
    await gate.authorize(fetchReq());
    await gate.authorize(fetchReq());
    expect(asker.questions).toHaveLength(1);
    expect(asker.questions[0]!.suggestedRule).toBe('fetch(read:https://api.example.com)');
    expect(asker.questions[0]!.scopes).toEqual(['once', 'session', 'permanent']);
    await gate.authorize(fetchReq({ access: 'write' }));
    await gate.authorize(fetchReq({ revision: REV2 }));
    expect(asker.questions).toHaveLength(3);
    const recs = await auditEntries(audit);
    expect(recs[0]).toMatchObject({ list: 'person', channel: 'terminal', outcome: 'granted' });
    expect(recs[1]).toMatchObject({ list: 'remembered', scope: 'session' });
    expect(gate.revokeSession('weather')).toBe(3);
    await gate.authorize(fetchReq());
    expect(asker.questions).toHaveLength(4);
  });

  it('a permanent "yes" is stored per revision, survives a new gate, and is revocable', async () => {
    const asker = new FakeAsker(() => ({ allow: true, scope: 'permanent', channel: 'questions' }));
    const first = setup({ asker });
    await first.gate.authorize(fetchReq());
    const again = new FakeAsker(() => ({ allow: false, reason: 'timeout' }));
    const second = setup({ asker: again, store: first.store });
    await second.gate.authorize(fetchReq());
    expect(again.questions).toHaveLength(0);
    await expect(second.gate.authorize(fetchReq({ revision: REV2 }))).rejects.toThrow(TyError);
    const decisions = new StoreDecisions(first.store);
    expect(await decisions.list()).toHaveLength(1);
    const removed = await decisions.revoke({ tool: 'weather', rule: 'fetch(read:https://api.example.com)' });
    expect(removed).toHaveLength(1);
    const third = setup({ asker: again, store: first.store });
    await expect(third.gate.authorize(fetchReq())).rejects.toMatchObject({ code: 'E_CAPABILITY_DENIED' });
  });

  it('permanent answers and pauses work for MCP identities (non-CID revision labels, long names)', async () => {
    const asker = new FakeAsker(() => ({ allow: true, scope: 'permanent', channel: 'terminal' }));
    const long = `srv__${'t'.repeat(300)}`;
    const mcp: GateRequest = {
      principal: 'mcp:box',
      kind: 'mcp',
      toolName: long,
      revision: 'mcp:srv/x:0123456789abcdef',
      target: 'srv/tool',
      requested: true,
    };
    const first = setup({ asker });
    await first.gate.authorize(mcp);
    const again = new FakeAsker(() => ({ allow: false, reason: 'timeout' }));
    const second = setup({ asker: again, store: first.store, pause: { maxRefusals: 1, windowMs: 60_000 } });
    await second.gate.authorize(mcp);
    expect(again.questions).toHaveLength(0);
    await rejection(second.gate.authorize({ ...mcp, target: 'srv/other' }));
    expect((await rejection(second.gate.authorize(mcp))).code).toBe('E_PAUSED');
    expect(await second.pause.list()).toMatchObject([{ tool: long }]);
  });

  it('alwaysAsk asks every time, offers only "once", and beats allow and unrestricted', async () => {
    const asker = new FakeAsker(() => ({ allow: true, scope: 'permanent', channel: 'terminal' }));
    const { gate, store } = setup({
      asker,
      sets: [
        {
          scope: 'user',
          mode: 'unrestricted',
          allow: ['fetch(*:*)'],
          alwaysAsk: ['fetch(read:https://*.example.com)'],
        },
      ],
    });
    await gate.authorize(fetchReq());
    await gate.authorize(fetchReq());
    expect(asker.questions).toHaveLength(2);
    expect(asker.questions[0]!.scopes).toEqual(['once']);
    expect(asker.questions[0]!.suggestedRule).toBeUndefined();
    expect(await new StoreDecisions(store).list()).toHaveLength(0);
  });

  it('an unanswered alwaysAsk does not suggest an --allow that would not help', async () => {
    const { gate } = setup({ sets: [{ scope: 'user', alwaysAsk: ['fetch(*:*)'] }] });
    const e = await rejection(gate.authorize(fetchReq()));
    expect(e.message).toContain('alwaysAsk rule fetch(*:*)');
    expect(e.message).not.toContain('--allow');
  });

  it('an abort while asking is E_ABORTED and audited', async () => {
    const ctl = new AbortController();
    const asker: Asker = {
      ask: async () => {
        ctl.abort();
        return { allow: false, reason: 'aborted' };
      },
    };
    const { gate, audit } = setup({ asker });
    expect((await rejection(gate.authorize(fetchReq(), ctl.signal))).code).toBe('E_ABORTED');
    expect(await auditEntries(audit)).toMatchObject([{ decision: 'deny', code: 'E_ABORTED' }]);
  });
});

describe('PermissionGate: hooks', () => {
  it('permissionRequest hooks may turn an ask into allow or deny', async () => {
    const runner = new FakeHooks((h) =>
      h.command === 'allow' ? ok('{"decision":"allow"}') : h.command === 'deny' ? exit(2, 'not on weekends') : exit(1),
    );
    const asker = new FakeAsker(() => ({ allow: false, reason: 'timeout' }));
    const allowing = setup({
      asker,
      runner,
      hooks: {
        permissionRequest: [
          hook('permissionRequest', 'broken', '*', 0),
          hook('permissionRequest', 'allow', 'fetch(read:*)', 1),
        ],
      },
    });
    await allowing.gate.authorize(fetchReq());
    expect(asker.questions).toHaveLength(0);
    expect((await auditEntries(allowing.audit))[0]).toMatchObject({
      list: 'hook',
      rule: 'permissionRequest hook #2 (user settings)',
    });
    const denying = setup({ asker, runner, hooks: { permissionRequest: [hook('permissionRequest', 'deny')] } });
    const e = await rejection(denying.gate.authorize(fetchReq()));
    expect(e.message).toContain('not on weekends');
    // payload tells the hook why it was asked
    const payload = JSON.parse(runner.inputs.at(-1)!.input);
    expect(payload).toMatchObject({
      event: 'permissionRequest',
      kind: 'fetch',
      target: 'https://api.example.com',
      suggestedRule: 'fetch(read:https://api.example.com)',
    });
  });

  it('a permissionRequest hook cannot allow an alwaysAsk request', async () => {
    const runner = new FakeHooks(() => ok('{"decision":"allow"}'));
    const asker = new FakeAsker(() => ({ allow: false, reason: 'timeout' }));
    const { gate } = setup({
      asker,
      runner,
      sets: [{ scope: 'user', alwaysAsk: ['fetch(*:*)'] }],
      hooks: { permissionRequest: [hook('permissionRequest', 'x')] },
    });
    await expect(gate.authorize(fetchReq())).rejects.toMatchObject({ code: 'E_CAPABILITY_DENIED' });
    expect(asker.questions).toHaveLength(1);
  });

  it('pre-hooks: exit 0 runs the call, 2 blocks with the reason, anything else fails closed', async () => {
    const results: Record<string, HookResult> = {
      zero: ok(),
      two: exit(2, 'blocked: \u001b[31mno prod\u001b[0m'),
      one: exit(1),
      timeout: exit(null, '', true),
      crash: exit(null),
    };
    for (const [name, res] of Object.entries(results)) {
      const runner = new FakeHooks(() => res);
      const { gate, audit } = setup({ runner, hooks: { preToolUse: [hook('preToolUse', name)] } });
      let ran = false;
      const p = gate.run(toolReq(), async () => (ran = true));
      if (name === 'zero') {
        await p;
        expect(ran).toBe(true);
        continue;
      }
      const e = await rejection(p);
      expect(ran).toBe(false);
      if (name === 'two') {
        expect(e.code).toBe('E_HOOK_BLOCKED');
        expect(e.message).toContain('no prod');
        expect(e.message).not.toContain('\u001b');
        expect((await auditEntries(audit))[0]).toMatchObject({ outcome: 'blocked', code: 'E_HOOK_BLOCKED' });
      } else {
        expect(e.code).toBe('E_HOOK_FAILED');
        if (name === 'timeout') expect(e.message).toContain('timed out');
        expect((await auditEntries(audit))[0]).toMatchObject({ outcome: 'hook-failed', code: 'E_HOOK_FAILED' });
      }
    }
  });

  it('pre-hooks configured on a host without a hook runner fail closed', async () => {
    const { gate } = setup({ hooks: { preToolUse: [hook('preToolUse', 'x')] } });
    await expect(gate.run(toolReq(), async () => 1)).rejects.toMatchObject({ code: 'E_HOOK_FAILED' });
  });

  it('hooks run only when their matcher matches', async () => {
    const runner = new FakeHooks(() => exit(2, 'no'));
    const { gate } = setup({ runner, hooks: { preToolUse: [hook('preToolUse', 'x', 'other_tool')] } });
    expect((await gate.run(toolReq(), async () => 5)).value).toBe(5);
    expect(runner.inputs).toHaveLength(0);
  });

  it('post-hooks cannot block or replace the result; their output is appended as feedback', async () => {
    const runner = new FakeHooks((h) => (h.command === 'note' ? ok('looks fine\n') : exit(2, 'try to block')));
    const { gate } = setup({
      runner,
      hooks: { postToolUse: [hook('postToolUse', 'note', '*', 0), hook('postToolUse', 'block', '*', 1)] },
    });
    const r = await gate.run(toolReq(), async () => ({ temp: 21 }));
    expect(r.value).toEqual({ temp: 21 });
    expect(r.feedback).toEqual(['looks fine', 'postToolUse hook #2 (user settings) exited with 2']);
    const post = JSON.parse(runner.inputs[0]!.input);
    expect(post).toMatchObject({ event: 'postToolUse', outcome: 'ok', result: { temp: 21 } });
  });

  it('parseHookDecision reads only {"decision":"allow"|"deny"}', () => {
    expect(parseHookDecision('{"decision":"allow"}')).toBe('allow');
    expect(parseHookDecision(' {"decision":"deny","reason":"x"}\n')).toBe('deny');
    expect(parseHookDecision('allow')).toBeUndefined();
    expect(parseHookDecision('{"decision":"yes"}')).toBeUndefined();
    expect(parseHookDecision('["allow"]')).toBeUndefined();
  });
});

describe('PermissionGate: canaries never leak', () => {
  it('hook stdin withholds secret values; audit and errors hold neither arguments nor secrets', async () => {
    const runner = new FakeHooks((h) => (h.event === 'preToolUse' ? exit(2, `refusing ${CANARY_SECRET}`) : ok()));
    const { gate, store } = setup({ runner, hooks: { preToolUse: [hook('preToolUse', 'guard')] } });
    const args = { city: CANARY_ARG, token: CANARY_SECRET, nested: [`key=${CANARY_SECRET};`] };
    const e = await rejection(gate.run(toolReq({ hookPayload: args, target: undefined }), async () => 1));
    // The hook sees the arguments (that is its job), but never a secret value.
    const stdin = runner.inputs[0]!.input;
    expect(stdin).toContain(CANARY_ARG);
    expect(stdin).not.toContain(CANARY_SECRET);
    expect(JSON.parse(stdin).input.token).toBe('<withheld>');
    expect(e.message).not.toContain(CANARY_SECRET);
    expect(e.message).toContain('<withheld>');
    expect(JSON.stringify(e.toWire())).not.toContain(CANARY_SECRET);
    // An allowed call that fails with the secret in its own message.
    const ok2 = setup({ store });
    const failed = await rejection(
      ok2.gate.run(toolReq({ hookPayload: args }), async () => {
        throw new TyError('E_TOOL_FAILED', `fail: ${CANARY_SECRET}`);
      }),
    );
    expect(failed.message).toBe('fail: <withheld>');
    const log = (await store.backend.readLog('audit')).join('\n');
    expect(log.length).toBeGreaterThan(0);
    expect(log).not.toContain(CANARY_ARG);
    expect(log).not.toContain(CANARY_SECRET);
  });

  it('audit records are built from names and never searched: one-byte secret values leave every field intact', async () => {
    const values = ['e', 'x', 'ta', '0', 't'];
    const run = async (withheld: string[]) => {
      const store = new Store(new MemoryStoreBackend());
      let now = Date.parse('2026-01-02T03:04:05.060Z');
      let id = 0;
      const gate = new PermissionGate({
        config: () => ({
          policy: compilePolicy([
            { scope: 'user', allow: ['tool(text-stats)', 'fetch(read:https://api.example.com)'] },
          ]),
        }),
        audit: new StoreAuditLog(store),
        pause: new PauseTracker(store),
        decisions: new StoreDecisions(store),
        withheld: () => withheld,
        clock: () => (now += 1000),
        newId: () => `call-0000-${id++}`,
        hostId: 'host-1000-e',
      });
      const req = toolReq({ toolName: 'text-stats', target: undefined });
      await gate.run(req, async () => 1);
      await rejection(
        gate.run(req, async () => {
          throw new TyError('E_TIMEOUT', 'the call did not finish within 1000 ms');
        }),
      );
      await gate.authorize(fetchReq({ toolName: 'text-stats', target: 'https://api.example.com' }));
      await rejection(gate.authorize(fetchReq({ toolName: 'text-stats', target: 'https://other.example.net' })));
      return (await store.backend.readLog('audit')).join('\n');
    };
    const plain = await run([]);
    expect(plain).toContain('"outcome":"started"');
    expect(await run(values)).toBe(plain);
  });

  it('an execution error that echoes a secret value reaches the caller with it withheld', async () => {
    const { gate } = setup();
    const e = await rejection(
      gate.run(toolReq(), async () => {
        throw new TyError('E_TOOL_FAILED', `bad token ${CANARY_SECRET}`, { echoed: CANARY_SECRET });
      }),
    );
    expect(e.code).toBe('E_TOOL_FAILED');
    expect(e.message).toBe('bad token <withheld>');
    expect(JSON.stringify(e.toWire())).not.toContain(CANARY_SECRET);
    const plain = new TyError('E_TIMEOUT', 'slow');
    await expect(
      gate.run(toolReq(), async () => {
        throw plain;
      }),
    ).rejects.toBe(plain);
  });

  it('a JSON-escaped secret is still withheld from hook input', async () => {
    const secret = 'quote"and\\slash-secret';
    const runner = new FakeHooks(() => ok());
    const store = new Store(new MemoryStoreBackend());
    const gate = new PermissionGate({
      config: () => ({ policy: compilePolicy([]), hooks: { preToolUse: [hook('preToolUse', 'x')] } }),
      audit: new StoreAuditLog(store),
      pause: new PauseTracker(store),
      decisions: new StoreDecisions(store),
      hooks: runner,
      withheld: () => [secret],
    });
    await gate.run(toolReq({ hookPayload: { v: secret } }), async () => 1);
    expect(runner.inputs[0]!.input).not.toContain(JSON.stringify(secret).slice(1, -1));
    expect(JSON.parse(runner.inputs[0]!.input).input.v).toBe('<withheld>');
  });
});

describe('PermissionGate: pause and resume', () => {
  it('repeated refusals pause the tool across gates until resumed', async () => {
    const first = setup({
      sets: [{ scope: 'user', deny: ['fetch(*:https://evil.example.com)'] }],
      pause: { maxRefusals: 3, windowMs: 60_000 },
    });
    const evil = fetchReq({ target: 'https://evil.example.com' });
    await rejection(first.gate.authorize(evil));
    first.advance(1000);
    await rejection(first.gate.authorize(evil));
    const third = await rejection(first.gate.authorize(evil));
    expect(third.message).toContain('now paused');
    // An otherwise allowed call of the same tool is now refused, in a new gate over the same store too.
    const second = setup({ store: first.store, pause: { maxRefusals: 3, windowMs: 60_000 } });
    let ran = false;
    const e = await rejection(second.gate.run(toolReq(), async () => (ran = true)));
    expect(e.code).toBe('E_PAUSED');
    expect(e.message).toContain('paused after 3 refusals within 60 s, until a person resumes them');
    expect(e.message).not.toMatch(/tycli/);
    expect(e.data).toEqual({ paused: 'weather' });
    expect(ran).toBe(false);
    // Other tools are not paused.
    expect((await second.gate.run(toolReq({ toolName: 'other' }), async () => 1)).value).toBe(1);
    expect(await second.pause.list()).toMatchObject([{ tool: 'weather', count: 3 }]);
    expect(await second.pause.resume('weather')).toBe(true);
    expect((await second.gate.run(toolReq(), async () => 2)).value).toBe(2);
    const recs = await auditEntries(second.audit);
    expect(recs.some((r) => r.outcome === 'paused' && r.code === 'E_PAUSED')).toBe(true);
  });

  it('refusals outside the window do not add up', async () => {
    const { gate, pause, advance } = setup({
      sets: [{ scope: 'user', deny: ['tool(weather)'] }],
      pause: { maxRefusals: 3, windowMs: 10_000 },
    });
    for (let i = 0; i < 6; i++) {
      await rejection(gate.run(toolReq(), async () => 1));
      advance(6_000);
    }
    expect(await pause.paused('weather')).toBeUndefined();
  });
});

describe('PermissionGate: intent records', () => {
  it('a started record is durable before the call runs; the completion pairs with it; an unfinished call of a dead host reads as interrupted', async () => {
    const store = new Store(new MemoryStoreBackend());
    const audit = new StoreAuditLog(store);
    const gate = new PermissionGate({
      config: () => ({ policy: compilePolicy([]) }),
      audit,
      pause: new PauseTracker(store),
      decisions: new StoreDecisions(store),
      hostId: 'h:1:1',
    });
    let seen: AuditRecord[] = [];
    await gate.run(toolReq(), async () => {
      seen = (await store.readJsonl<AuditRecord>('audit')).entries;
      return 1;
    });
    expect(seen).toMatchObject([{ outcome: 'started', decision: 'allow', host: 'h:1:1', tool: 'weather' }]);
    const raw = (await store.readJsonl<AuditRecord>('audit')).entries;
    expect(raw.map((r) => r.outcome)).toEqual(['started', 'ok']);
    expect(raw[1]!.call).toBe(raw[0]!.call);
    expect(raw[1]!.host).toBeUndefined();
    // folded: one entry per call
    expect((await audit.read()).entries.map((r) => r.outcome)).toEqual(['ok']);

    // A call whose host dies mid-call leaves only its intent record.
    const never = new Promise<number>(() => {});
    void gate.run(toolReq(), () => never);
    await vi.waitFor(async () => expect((await store.readJsonl('audit')).entries).toHaveLength(3));
    expect((await audit.read({ hostAlive: () => true })).entries.map((r) => r.outcome)).toEqual(['ok', 'started']);
    expect((await audit.read({ hostAlive: () => false })).entries.map((r) => r.outcome)).toEqual(['ok', 'interrupted']);
    expect(formatAuditRecord((await audit.read()).entries[1]!)).toContain('-> interrupted');
    // how long an interrupted call ran is unknown: its line names no duration (the started record's is its gate time)
    expect(formatAuditRecord((await audit.read({ hostAlive: () => false })).entries[1]!)).toMatch(
      /-> interrupted \(its host stopped before the call finished\)$/,
    );
  });

  it('a started record that cannot be written keeps the call from running (E_STORE)', async () => {
    const store = new Store(new MemoryStoreBackend());
    let ran = false;
    const gate = new PermissionGate({
      config: () => ({ policy: compilePolicy([]) }),
      audit: {
        append: async (r) => {
          if (r.outcome === 'started') throw new Error('disk full');
        },
      },
      pause: new PauseTracker(store),
      decisions: new StoreDecisions(store),
    });
    expect((await rejection(gate.run(toolReq(), async () => (ran = true)))).code).toBe('E_STORE');
    expect(ran).toBe(false);
  });
});

describe('PermissionGate: staged intent records', () => {
  /** A sink that stages records; each record's fsync settles by hand, and `begin()` calls are counted. */
  const stagedSink = () => {
    const written: AuditRecord[] = [];
    const settles: { resolve: () => void; reject: (e: Error) => void }[] = [];
    const begun: string[] = [];
    const sink = {
      append: async (r: AuditRecord) => void written.push(r),
      stage: async (r: AuditRecord) => {
        written.push(r);
        let settle!: { resolve: () => void; reject: (e: Error) => void };
        const durable = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
        settles.push(settle);
        return { durable, begin: () => void begun.push(r.outcome) };
      },
    };
    /** The fsync of the n-th staged record (0: the intent record). */
    return { sink, written, begun, settle: (n = 0) => settles[n]! };
  };
  const gateOver = (sink: ReturnType<typeof stagedSink>['sink']) => {
    const store = new Store(new MemoryStoreBackend());
    return new PermissionGate({
      config: () => ({ policy: compilePolicy([]) }),
      audit: sink,
      pause: new PauseTracker(store),
      decisions: new StoreDecisions(store),
    });
  };

  it('a staged started record is written before the call runs; the answer waits until it is durable', async () => {
    const { sink, written, settle } = stagedSink();
    const gate = gateOver(sink);
    let ranWith: string[] = [];
    let answered = false;
    const p = gate
      .run(toolReq(), async () => {
        ranWith = written.map((r) => r.outcome);
        return 7;
      })
      .then((r) => ((answered = true), r));
    await vi.waitFor(() => expect(ranWith).toEqual(['started']));
    await new Promise((r) => setTimeout(r, 20));
    expect(answered).toBe(false); // executed, not answered: the intent record is not durable yet
    settle(0).resolve();
    expect(await p).toEqual({ value: 7 });
    expect(written.map((r) => r.outcome)).toEqual(['started', 'ok']);
  });

  it('execute gets the intent record: it runs before the fsync, which it begins; the fsync then overlaps its run', async () => {
    const { sink, begun, settle } = stagedSink();
    const gate = gateOver(sink);
    const steps: string[] = [];
    const p = gate.run(toolReq(), async (intent) => {
      steps.push('running');
      expect(begun).toEqual([]); // nothing asked for the fsync before the call's arguments went out
      intent!.begin(); // the arguments are on their way to the sandbox
      intent!.begin(); // idempotent
      expect(begun).toEqual(['started']);
      void intent!.durable.then(() => steps.push('durable'));
      await new Promise((r) => setTimeout(r, 5));
      steps.push('tool done');
      return 1;
    });
    await vi.waitFor(() => expect(steps).toEqual(['running', 'tool done']));
    settle(0).resolve();
    expect(await p).toEqual({ value: 1 });
    expect(steps).toEqual(['running', 'tool done', 'durable']);
    expect(begun).toEqual(['started']); // the completion record's fsync is never asked for: it joins the next commit
  });

  it('an execute that never begins the fsync still gets it once it settles (the answer is not held by a timer)', async () => {
    const { sink, begun, settle } = stagedSink();
    const gate = gateOver(sink);
    const p = gate.run(toolReq(), async () => 2);
    await vi.waitFor(() => expect(begun).toEqual(['started']));
    settle(0).resolve();
    expect(await p).toEqual({ value: 2 });
  });

  it("the completion record is written before the answer, which does not wait for the completion's own fsync", async () => {
    const { sink, written, settle } = stagedSink();
    const gate = gateOver(sink);
    let answered = false;
    const p = gate.run(toolReq(), async () => 7).then((r) => ((answered = true), r));
    await vi.waitFor(() => expect(written.map((r) => r.outcome)).toEqual(['started', 'ok']));
    expect(answered).toBe(false); // both written; the answer still waits for the intent record's durability
    settle(0).resolve();
    expect(await p).toEqual({ value: 7 });
    // the completion record (staged second) is still waiting for a group commit: the answer did not wait for it
    expect(settle(1)).toBeDefined();
  });

  it('a started record that cannot be made durable fails the call with E_STORE (no answer on an unsynced record)', async () => {
    const { sink, settle } = stagedSink();
    const gate = gateOver(sink);
    const p = gate.run(toolReq(), async () => 7);
    await vi.waitFor(() => expect(settle(0)).toBeDefined());
    settle(0).reject(new Error('EIO'));
    expect((await rejection(p)).code).toBe('E_STORE');
  });

  it('a failing call waits for its durable intent record too, and its completion records the error code', async () => {
    const { sink, written, settle } = stagedSink();
    const gate = gateOver(sink);
    let settled = false;
    const p = rejection(
      gate.run(toolReq(), async () => {
        throw new TyError('E_TOOL_FAILED', 'boom');
      }),
    ).then((e) => ((settled = true), e));
    await vi.waitFor(() => expect(written.map((r) => r.outcome)).toEqual(['started', 'error']));
    await new Promise((r) => setTimeout(r, 10));
    expect(settled).toBe(false);
    settle(0).resolve();
    expect((await p).code).toBe('E_TOOL_FAILED');
    expect(written[1]!.code).toBe('E_TOOL_FAILED');
  });
});

describe('PermissionGate: audit failures', () => {
  it('an audit record that cannot be written fails the call (E_STORE)', async () => {
    const store = new Store(new MemoryStoreBackend());
    const gate = new PermissionGate({
      config: () => ({ policy: compilePolicy([]) }),
      audit: {
        append: async () => {
          throw new Error('disk full at /home/u/.local/share');
        },
      },
      pause: new PauseTracker(store),
      decisions: new StoreDecisions(store),
    });
    const e = await rejection(gate.run(toolReq(), async () => 1));
    expect(e.code).toBe('E_STORE');
    expect(e.message).not.toContain('/home/u');
  });
});

describe('preapproved (a rule from outside settings, e.g. an MCP server definition)', () => {
  const mcpReq = (over: Partial<GateRequest> = {}): GateRequest => ({
    principal: 'mcp:s',
    kind: 'mcp',
    toolName: 'fx__search',
    revision: 'mcp:fx:0123456789abcdef',
    target: 'fx/search',
    requested: true,
    preapproved: { rule: 'fx: --ask none', scope: 'server definition' },
    ...over,
  });

  it('allows without asking and is audited naming the rule and its scope', async () => {
    const asker = new FakeAsker(() => ({ allow: false, reason: 'refused', channel: 't' }));
    const { gate, audit } = setup({ asker });
    expect(await gate.run(mcpReq(), async () => 'ran')).toEqual({ value: 'ran' });
    await gate.authorize(mcpReq());
    expect(asker.questions).toHaveLength(0);
    expect((await auditEntries(audit)).map((e) => [e.decision, e.list, e.rule, e.scope, e.outcome])).toEqual([
      ['allow', 'allow', 'fx: --ask none', 'server definition', 'ok'],
      ['allow', 'allow', 'fx: --ask none', 'server definition', 'granted'],
    ]);
  });

  it('never beats a deny rule of any scope, a remembered "no", nor the manifest bound; each refusal audited', async () => {
    for (const scope of ['flags', 'session', 'local', 'project', 'user'] as const) {
      const { gate, audit } = setup({ sets: [{ scope, deny: ['mcp(fx/*)'] }] });
      let ran = false;
      const e = await rejection(gate.run(mcpReq(), async () => (ran = true)));
      expect(e.code).toBe('E_CAPABILITY_DENIED');
      expect(ran).toBe(false);
      expect((await auditEntries(audit))[0]).toMatchObject({
        decision: 'deny',
        rule: 'mcp(fx/*)',
        scope,
        outcome: 'denied',
      });
    }
    const { gate } = setup();
    expect((await rejection(gate.authorize(mcpReq({ requested: false })))).code).toBe('E_CAPABILITY_DENIED');
  });

  it('an alwaysAsk rule still asks (and a "no" refuses); the pause still refuses first', async () => {
    const asker = new FakeAsker(() => ({ allow: false, reason: 'refused', channel: 't' }));
    const { gate, pause, audit } = setup({
      asker,
      sets: [{ scope: 'user', alwaysAsk: ['mcp(fx/search)'] }],
      pause: { maxRefusals: 1, windowMs: 60_000 },
    });
    expect((await rejection(gate.run(mcpReq(), async () => 1))).code).toBe('E_CAPABILITY_DENIED');
    expect(asker.questions).toHaveLength(1);
    expect(await pause.paused('fx__search')).toBeDefined();
    let ran = false;
    expect(
      (
        await rejection(
          gate.run(
            mcpReq({ preapproved: { rule: 'fx: --allow search', scope: 'server definition' } }),
            async () => (ran = true),
          ),
        )
      ).code,
    ).toBe('E_PAUSED');
    expect(ran).toBe(false);
    expect((await auditEntries(audit)).map((e) => e.outcome)).toEqual(['denied', 'paused']);
  });

  it('pre-hooks still run and can block a preapproved call', async () => {
    const runner = new FakeHooks(() => exit(2, 'not this one'));
    const { gate } = setup({ runner, hooks: { preToolUse: [hook('preToolUse', 'mcp(fx/*)')] } });
    let ran = false;
    const e = await rejection(gate.run(mcpReq(), async () => (ran = true)));
    expect(e.code).toBe('E_HOOK_BLOCKED');
    expect(e.message).toContain('not this one');
    expect(ran).toBe(false);
  });

  it('an allow by mode unrestricted is traced to the preapproved rule; a settings allow rule keeps its own trace', async () => {
    const a = setup({ sets: [{ scope: 'user', mode: 'unrestricted' }] });
    await a.gate.authorize(mcpReq());
    expect((await auditEntries(a.audit))[0]).toMatchObject({ rule: 'fx: --ask none', scope: 'server definition' });
    const b = setup({ sets: [{ scope: 'project', allow: ['mcp(fx/*)'] }] });
    await b.gate.authorize(mcpReq());
    expect((await auditEntries(b.audit))[0]).toMatchObject({ rule: 'mcp(fx/*)', scope: 'project' });
  });
});
