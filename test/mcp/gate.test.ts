// Bridged MCP calls through the real PermissionGate: deny rules and the pause beat a server's own --allow/--ask none,
// hooks run, every call audited; test side.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  PermissionGate,
  StoreDecisions,
  type GateConfig,
  type HookResult,
  type HookRunner,
  type HookSpec,
} from '../../core/policy/gate.js';
import { compilePolicy, type RuleSet } from '../../core/policy/permissions.js';
import { StoreAuditLog, type AuditRecord } from '../../core/audit/trail.js';
import { PauseTracker } from '../../core/policy/pause.js';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import { Invoker } from '../../core/exec/invoke.js';
import { ToolRegistry } from '../../core/revisions/registry.js';
import { createMcpExternal, type ExternalCaller } from '../../node/mcp/external.js';
import { saveNamespace } from '../../node/mcp/namespaces.js';
import { SERVER_RULE_SCOPE } from '../../node/mcp/bridge.js';
import { EVERYTHING, FIXTURE, addNodeServer, connect, tempHome, type Connected } from './helpers.js';

class Hooks implements HookRunner {
  inputs: { hook: HookSpec; input: string }[] = [];
  constructor(public result: (hook: HookSpec) => HookResult) {}
  async run(hook: HookSpec, input: string): Promise<HookResult> {
    this.inputs.push({ hook, input });
    return this.result(hook);
  }
}
const hook = (event: HookSpec['event'], matcher = '*'): HookSpec => ({
  event,
  matcher,
  command: 'x',
  timeoutMs: 1000,
  scope: 'user',
  index: 0,
});

let home: string;
let cleanup: () => Promise<void>;
let conn: Connected | undefined;
let external: ExternalCaller | undefined;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
});
afterEach(async () => {
  await conn?.close();
  conn = undefined;
  await external?.close();
  external = undefined;
  await cleanup();
});

/**
 * A real gate over a memory store; no asker (a question is refused at once), as `tycli mcp serve` without a terminal.
 */
function realGate(
  opts: { sets?: RuleSet[]; hooks?: GateConfig['hooks']; runner?: HookRunner; maxRefusals?: number } = {},
) {
  const store = new Store(new MemoryStoreBackend());
  const audit = new StoreAuditLog(store);
  const pause = new PauseTracker(store, { maxRefusals: opts.maxRefusals ?? 10, windowMs: 60_000 });
  const config: GateConfig = { policy: compilePolicy(opts.sets ?? []) };
  if (opts.hooks) config.hooks = opts.hooks;
  const deps: ConstructorParameters<typeof PermissionGate>[0] = {
    config: () => config,
    audit,
    pause,
    decisions: new StoreDecisions(store),
  };
  if (opts.runner) deps.hooks = opts.runner;
  return { gate: new PermissionGate(deps), audit, pause };
}

async function entries(a: StoreAuditLog): Promise<AuditRecord[]> {
  return (await a.read()).entries;
}

async function refusal(p: Promise<unknown>): Promise<{ code: number; message: string; stable?: string }> {
  try {
    await p;
  } catch (e) {
    const x = e as { code: number; message: string; data?: { code?: string } };
    return { code: x.code, message: x.message, stable: x.data?.code };
  }
  throw new Error('expected a refusal');
}

/** Tool names the fixture server `fx` has seen called in this client session (its `received` tool). */
async function seenByServer(c: Connected): Promise<string[]> {
  const r = (await c.client.callTool({ name: 'fx__received', arguments: {} })) as {
    content: { type: string; text: string }[];
  };
  const got = JSON.parse(r.content[0]!.text) as { received: { method: string; name?: string }[] };
  return got.received.filter((m) => m.method === 'tools/call').map((m) => m.name ?? '');
}

describe('bridged tools/call through gate.run', () => {
  it('a deny rule (user settings) beats --ask none; the call is audited as denied and never forwarded', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    const { gate, audit } = realGate({ sets: [{ scope: 'user', deny: ['mcp(fx/search)'] }] });
    conn = await connect({ home, sandbox: 'g', gate });
    const r = await refusal(conn.client.callTool({ name: 'fx__search', arguments: { q: 'x' } }));
    // a refusal by the gate has its own JSON-RPC code (-32010), never the SDK's request timeout (-32001)
    expect([r.code, r.stable]).toEqual([-32010, 'E_CAPABILITY_DENIED']);
    expect(r.message).toContain('mcp(fx/search)');
    const denied = (await entries(audit)).filter((e) => e.tool === 'fx__search');
    expect(denied).toHaveLength(1);
    expect(denied[0]).toMatchObject({
      decision: 'deny',
      list: 'deny',
      rule: 'mcp(fx/search)',
      scope: 'user',
      outcome: 'denied',
      target: 'fx/search',
      principal: 'mcp:g',
    });
    expect(await seenByServer(conn)).not.toContain('search');
  });

  it('a deny rule (flags, as `mcp serve --deny`) beats --allow TOOL; a wildcard deny covers the whole server', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { allow: ['search', 'received'] });
    const { gate, audit } = realGate({ sets: [{ scope: 'flags', deny: ['mcp(fx/*)'] }] });
    conn = await connect({ home, sandbox: 'g', gate });
    expect((await refusal(conn.client.callTool({ name: 'fx__search', arguments: { q: 'x' } }))).stable).toBe(
      'E_CAPABILITY_DENIED',
    );
    expect((await refusal(conn.client.callTool({ name: 'fx__received', arguments: {} }))).stable).toBe(
      'E_CAPABILITY_DENIED',
    );
    const recs = await entries(audit);
    expect(recs.map((e) => [e.tool, e.decision, e.rule, e.scope])).toEqual([
      ['fx__search', 'deny', 'mcp(fx/*)', 'flags'],
      ['fx__received', 'deny', 'mcp(fx/*)', 'flags'],
    ]);
  });

  it('a call allowed by the server rule is audited as allowed, naming the server rule and its scope', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { allow: ['search'] });
    await addNodeServer(home, 'fy', FIXTURE, [], { ask: 'none' });
    const { gate, audit } = realGate();
    conn = await connect({ home, sandbox: 'g', gate });
    const a = await conn.client.callTool({ name: 'fx__search', arguments: { q: 'x' } });
    expect(JSON.stringify(a)).toContain('found x');
    await conn.client.callTool({ name: 'fy__search', arguments: { q: 'y' } });
    // not covered by fx's --allow: asked, and with no one to ask, refused (also audited)
    expect((await refusal(conn.client.callTool({ name: 'fx__received', arguments: {} }))).stable).toBe(
      'E_CAPABILITY_DENIED',
    );
    const recs = await entries(audit);
    expect(recs.map((e) => [e.tool, e.decision, e.list, e.rule, e.scope, e.outcome])).toEqual([
      ['fx__search', 'allow', 'allow', 'fx: --allow search', SERVER_RULE_SCOPE, 'ok'],
      ['fy__search', 'allow', 'allow', 'fy: --ask none', SERVER_RULE_SCOPE, 'ok'],
      ['fx__received', 'deny', 'person', 'no channel to ask on', 'none', 'denied'],
    ]);
  });

  it('an alwaysAsk rule still asks for a call the server rule allows (no one to ask: refused)', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    const { gate, audit } = realGate({ sets: [{ scope: 'project', alwaysAsk: ['mcp(fx/search)'] }] });
    conn = await connect({ home, sandbox: 'g', gate });
    const r = await refusal(conn.client.callTool({ name: 'fx__search', arguments: { q: 'x' } }));
    expect(r.stable).toBe('E_CAPABILITY_DENIED');
    expect(r.message).toContain('alwaysAsk');
    expect((await entries(audit))[0]).toMatchObject({ decision: 'deny', list: 'person' });
  });

  it('a preToolUse hook exiting 2 blocks the call with its reason; other exits fail closed; postToolUse adds feedback', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    let pre: HookResult = { exitCode: 2, stdout: '', stderr: 'no searching today', timedOut: false };
    const runner = new Hooks((h) =>
      h.event === 'preToolUse' ? pre : { exitCode: 0, stdout: 'checked by post hook', stderr: '', timedOut: false },
    );
    const { gate, audit } = realGate({
      hooks: { preToolUse: [hook('preToolUse', 'mcp(fx/*)')], postToolUse: [hook('postToolUse', 'mcp(fx/*)')] },
      runner,
    });
    conn = await connect({ home, sandbox: 'g', gate });
    const blocked = await refusal(conn.client.callTool({ name: 'fx__search', arguments: { q: 'x' } }));
    expect([blocked.code, blocked.stable]).toEqual([-32010, 'E_HOOK_BLOCKED']);
    expect(blocked.message).toContain('no searching today');
    // the hook got the call's arguments
    expect(JSON.parse(runner.inputs[0]!.input)).toMatchObject({
      event: 'preToolUse',
      kind: 'mcp',
      target: 'fx/search',
      input: { arguments: { q: 'x' } },
    });
    pre = { exitCode: 1, stdout: '', stderr: '', timedOut: false };
    expect((await refusal(conn.client.callTool({ name: 'fx__search', arguments: { q: 'y' } }))).stable).toBe(
      'E_HOOK_FAILED',
    );
    pre = { exitCode: 0, stdout: '', stderr: '', timedOut: false };
    const ok = (await conn.client.callTool({ name: 'fx__search', arguments: { q: 'z' } })) as {
      content: { type: string; text: string }[];
    };
    expect(ok.content.map((c) => c.text)).toEqual(
      expect.arrayContaining([expect.stringContaining('found z'), '[hook] checked by post hook']),
    );
    expect((await entries(audit)).map((e) => [e.outcome, e.code])).toEqual([
      ['blocked', 'E_HOOK_BLOCKED'],
      ['hook-failed', 'E_HOOK_FAILED'],
      ['ok', undefined],
    ]);
    expect((await seenByServer(conn)).filter((n) => n === 'search')).toHaveLength(1);
  });

  it('a paused tool is refused even when the server rule allows it, and the refusal is audited', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    const { gate, audit, pause } = realGate({ maxRefusals: 1 });
    await pause.recordRefusal('fx__search');
    conn = await connect({ home, sandbox: 'g', gate });
    const r = await refusal(conn.client.callTool({ name: 'fx__search', arguments: { q: 'x' } }));
    expect([r.code, r.stable]).toEqual([-32010, 'E_PAUSED']);
    expect((await entries(audit))[0]).toMatchObject({ tool: 'fx__search', outcome: 'paused', code: 'E_PAUSED' });
    // another tool of the same server is not paused
    expect(JSON.stringify(await conn.client.callTool({ name: 'fx__received', arguments: {} }))).toContain('received');
  });

  it('namespace calls (the SDK path): a deny rule beats each provider’s --ask none, nothing is forwarded; a pre-hook blocks', async () => {
    await addNodeServer(home, 'fa', FIXTURE, [], { ask: 'none', env: { FX_VARIANT: 'a' } });
    await addNodeServer(home, 'fb', FIXTURE, [], { ask: 'none', env: { FX_VARIANT: 'b' } });
    await saveNamespace(home, {
      v: 1,
      name: 'code',
      actions: [
        {
          name: 'lookup',
          access: 'read',
          broadcast: true,
          targets: [
            { kind: 'a', server: 'fa', tool: 'search' },
            { kind: 'b', server: 'fb', tool: 'search' },
          ],
        },
      ],
    });
    const { gate, audit } = realGate({ sets: [{ scope: 'user', deny: ['mcp(fb/search)'] }] });
    conn = await connect({ home, sandbox: 'g', gate });
    const r = await refusal(conn.client.callTool({ name: 'code__lookup', arguments: { q: 'x' } }));
    expect(r.stable).toBe('E_CAPABILITY_DENIED');
    const recs = await entries(audit);
    expect(recs.find((e) => e.tool === 'fb__search')).toMatchObject({ decision: 'deny', rule: 'mcp(fb/search)' });
    // fa's step was allowed by its server rule but nothing ran: its record is an error, not ok
    expect(recs.find((e) => e.tool === 'fa__search')).toMatchObject({
      decision: 'allow',
      rule: 'fa: --ask none',
      outcome: 'error',
    });

    const runner = new Hooks(() => ({ exitCode: 2, stdout: '', stderr: 'namespace blocked', timedOut: false }));
    const g2 = realGate({ hooks: { preToolUse: [hook('preToolUse', 'mcp(fa/*)')] }, runner });
    await conn.close();
    conn = await connect({ home, sandbox: 'g', gate: g2.gate });
    const b = await refusal(conn.client.callTool({ name: 'code__lookup', arguments: { q: 'x' } }));
    expect(b.stable).toBe('E_HOOK_BLOCKED');
    expect(b.message).toContain('namespace blocked');
  });

  it('external-service revisions: a deny rule beats the server’s --ask none and is audited', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    const registry = new ToolRegistry(new Store(new MemoryStoreBackend()));
    await registry.install({
      name: 'ext-search',
      description: 'search',
      parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
      execution: { kind: 'external-service', serviceId: 'fx', tool: 'search' },
    });
    const { gate, audit } = realGate({ sets: [{ scope: 'user', deny: ['mcp(fx/search)'] }] });
    external = createMcpExternal(home, { gate });
    const inv = new Invoker({ registry, gate, external });
    expect(await inv.invoke('ext-search', { q: 'x' })).toMatchObject({
      ok: false,
      error: { code: 'E_CAPABILITY_DENIED' },
    });
    expect((await entries(audit)).find((e) => e.kind === 'mcp')).toMatchObject({
      decision: 'deny',
      rule: 'mcp(fx/search)',
      target: 'fx/search',
      outcome: 'denied',
    });
  });
});

describe('bridged resources/read and prompts/get through the gate', () => {
  it('a deny rule beats --ask none for resources and prompts; a pre-hook can block a read; both audited', async () => {
    await addNodeServer(home, 'everything', EVERYTHING, ['stdio'], { ask: 'none' });
    const runner = new Hooks(() => ({ exitCode: 2, stdout: '', stderr: 'no reading', timedOut: false }));
    const { gate, audit } = realGate({
      sets: [{ scope: 'user', deny: ['mcp-prompt(everything/*)'] }],
      hooks: { preToolUse: [hook('preToolUse', 'mcp-resource(*)')] },
      runner,
    });
    conn = await connect({ home, sandbox: 'g', gate });
    const res = (await conn.client.listResources()).resources[0];
    const prompt = (await conn.client.listPrompts()).prompts[0];
    expect(res).toBeDefined();
    expect(prompt).toBeDefined();
    const r = await refusal(conn.client.readResource({ uri: res!.uri }));
    expect(r.stable).toBe('E_HOOK_BLOCKED');
    expect(r.message).toContain('no reading');
    const p = await refusal(conn.client.getPrompt({ name: prompt!.name, arguments: {} }));
    expect(p.stable).toBe('E_CAPABILITY_DENIED');
    expect((await entries(audit)).map((e) => [e.kind, e.decision, e.rule, e.outcome])).toEqual([
      ['mcp-resource', 'deny', 'preToolUse hook #1 (user settings)', 'blocked'],
      ['mcp-prompt', 'deny', 'mcp-prompt(everything/*)', 'denied'],
    ]);
  }, 20_000);
});
