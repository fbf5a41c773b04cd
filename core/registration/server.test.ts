// Unit tests of the registration protocol handler over an in-memory store and the real gate; trusted side.
import { describe, expect, it } from 'vitest';
import { RegistrationServer } from './server.js';
import { ToolRegistry } from '../revisions/registry.js';
import { PermissionGate, StoreDecisions } from '../policy/gate.js';
import { compilePolicy, type RuleSet } from '../policy/permissions.js';
import { StoreAuditLog } from '../audit/trail.js';
import { PauseTracker } from '../policy/pause.js';
import { Store } from '../store/contract.js';
import { MemoryStoreBackend } from '../store/memory.js';
import type { Asker, AskOutcome } from '../ask/router.js';
import type { Question } from '../exec/runtime.js';
import type { RpcMessage } from './rpc.js';

const manifest = (k = 2, name = 'double') => ({
  name,
  description: `times ${k}`,
  parameters: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'], additionalProperties: false },
  execution: { kind: 'sandboxed-code', runtime: 'javascript', source: `export default async (a) => a.x * ${k};` },
});

function setup(opts: { sets?: RuleSet[]; answer?: (q: Question) => AskOutcome; rate?: number } = {}) {
  const store = new Store(new MemoryStoreBackend());
  const registry = new ToolRegistry(store);
  const pause = new PauseTracker(store, { maxRefusals: 3, windowMs: 60_000 });
  const questions: Question[] = [];
  const asker: Asker = {
    ask: async (q) => (questions.push(q), opts.answer ? opts.answer(q) : { allow: false, reason: 'no-channel' }),
  };
  const gate = new PermissionGate({
    config: () => ({ policy: compilePolicy(opts.sets ?? []) }),
    asker,
    audit: new StoreAuditLog(store),
    pause,
    decisions: new StoreDecisions(store),
  });
  const calls: string[] = [];
  const server = new RegistrationServer({
    registry,
    gate,
    reservedNames: () => ['python'],
    run: async (ref, args, o) => {
      calls.push(`${ref} as ${o.principal}`);
      if (o.signal.aborted) return { ok: false, error: { code: 'E_ABORTED', message: 'cancelled' } };
      return { ok: true, revision: ref.split('@')[1]!, result: (args as { x: number }).x * 2 };
    },
    ...(opts.rate ? { limits: { registrationsPerWindow: opts.rate } } : {}),
  });
  const out: RpcMessage[] = [];
  const session = server.connect({ principal: (c) => `protocol:${c.name}`, send: (m) => out.push(m) });
  let id = 0;
  const req = async (method: string, params: unknown): Promise<Record<string, unknown>> => {
    const my = ++id;
    await session.receive(JSON.stringify({ jsonrpc: '2.0', id: my, method, params }));
    return out.find((m) => (m as { id?: unknown }).id === my) as unknown as Record<string, unknown>;
  };
  return { store, registry, pause, questions, calls, session, out, req, server };
}

const init = { protocolVersion: 'tysandbox/1', client: { name: 'ide', version: '1' } };

describe('RegistrationServer', () => {
  it('refuses a trusted-native manifest and the name of a host built-in in any case; nothing is stored', async () => {
    const t = setup({ sets: [{ scope: 'user', allow: ['registry(add)'] }] });
    await t.req('initialize', init);
    const native = { ...manifest(), name: 'native', execution: { kind: 'trusted-native', entry: 'python' } };
    expect((await t.req('tool/add', { manifest: native })).error).toMatchObject({
      data: { code: 'E_INVALID_MANIFEST', path: 'execution.kind' },
    });
    // an incomplete trusted-native manifest (no entry, no description) gets the same refusal, not a schema complaint
    const bare = { name: 'native', parameters: { type: 'object' }, execution: { kind: 'trusted-native' } };
    expect((await t.req('tool/add', { manifest: bare })).error).toMatchObject({
      data: { code: 'E_INVALID_MANIFEST', path: 'execution.kind' },
    });
    expect((await t.req('tool/add', { manifest: manifest(2, 'python') })).error).toMatchObject({
      data: { code: 'E_INVALID_MANIFEST', path: 'name' },
    });
    // nor a case variant of it (finding 9 of issue 26: `Python` beside the built-in `python`)
    for (const name of ['Python', 'PYTHON', 'pyThon'])
      expect((await t.req('tool/add', { manifest: manifest(2, name) })).error).toMatchObject({
        data: { code: 'E_INVALID_MANIFEST', path: 'name', conflictsWith: 'python' },
      });
    expect(await t.registry.list()).toEqual([]);
    expect((await t.req('tool/add', { manifest: manifest(2) })).result).toMatchObject({
      name: 'double',
      active: true,
      created: true,
    });
  });

  it('refuses refused registrations as pauses of the principal, never of the tool: its calls keep running', async () => {
    const t = setup({ sets: [{ scope: 'user', deny: ['registry(add:protocol:ide)'] }] });
    await t.req('initialize', init);
    for (let i = 0; i < 3; i++)
      expect((await t.req('tool/add', { manifest: manifest(2 + i) })).error).toMatchObject({
        data: { code: 'E_CAPABILITY_DENIED' },
      });
    expect((await t.req('tool/add', { manifest: manifest(9) })).error).toMatchObject({ data: { code: 'E_PAUSED' } });
    expect(await t.pause.paused('registry:protocol:ide')).toBeDefined();
    expect(await t.pause.paused('double')).toBeUndefined();
    await t.registry.install(manifest(2));
    expect((await t.req('tool/run', { ref: 'double', arguments: { x: 1 } })).result).toMatchObject({ result: 2 });
  });

  it('asks the same gate question for moving a binding, with the principal and the replaced revision; a "yes" moves it', async () => {
    const t = setup({ answer: () => ({ allow: true, scope: 'once', channel: 'test' }) });
    await t.req('initialize', init);
    const a = (await t.req('tool/add', { manifest: manifest(2) })).result as { revision: string };
    const b = (await t.req('tool/add', { manifest: manifest(3) })).result as { revision: string; active: boolean };
    expect(b.active).toBe(false);
    expect(t.questions).toEqual([]); // adding asked nobody
    expect((await t.req('tool/activate', { name: 'double', revision: b.revision })).result).toEqual({
      name: 'double',
      revision: b.revision,
      previous: a.revision,
    });
    expect(t.questions).toHaveLength(1);
    expect(t.questions[0]!.title).toBe('Allow protocol:ide to activate the tool binding of double?');
    expect(t.questions[0]!.details).toEqual(
      expect.arrayContaining([
        'principal: protocol:ide',
        `revision: ${b.revision}`,
        `replaces the active revision ${a.revision}`,
      ]),
    );
    expect(t.questions[0]!.suggestedRule).toBe('registry(activate:protocol:ide)');
    expect((await t.registry.resolve('double')).revision).toBe(b.revision);
  });

  it('pins tool/run to the resolved revision and runs it as the client principal; a second initialize and early requests are refused', async () => {
    const t = setup();
    expect((await t.req('tool/list', {})).error).toMatchObject({ code: -32002 });
    await t.req('initialize', init);
    expect((await t.req('initialize', init)).error).toMatchObject({ code: -32600 });
    const a = (await t.req('tool/add', { manifest: manifest(2) })).result as { revision: string };
    await t.req('tool/run', { ref: 'double', arguments: { x: 4 } });
    expect(t.calls).toEqual([`double@${a.revision} as protocol:ide`]);
    const notes = t.out.filter((m) => (m as { method?: string }).method === '$/progress');
    expect(notes.map((m) => (m as { params: { stage: string; id: number } }).params)).toEqual([
      { id: 5, stage: 'resolved', revision: a.revision },
      { id: 5, stage: 'done', revision: a.revision },
    ]);
  });

  it('counts the rate per principal across sessions of one server', async () => {
    const t = setup({ rate: 2 });
    await t.req('initialize', init);
    expect((await t.req('tool/add', { manifest: manifest(2, 'a') })).result).toBeDefined();
    expect((await t.req('tool/add', { manifest: manifest(2, 'b') })).result).toBeDefined();
    expect((await t.req('tool/add', { manifest: manifest(2, 'c') })).error).toMatchObject({ data: { code: 'E_BUSY' } });
    expect((await t.registry.list()).map((x) => x.name)).toEqual(['a', 'b']);
    // a second connection of the same principal shares the count; another principal has its own
    const seen: RpcMessage[] = [];
    for (const name of ['ide', 'other']) {
      const s2 = t.server.connect({ principal: (c) => `protocol:${c.name}`, send: (m) => seen.push(m) });
      await s2.receive({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { ...init, client: { name, version: '1' } },
      });
      await s2.receive({ jsonrpc: '2.0', id: 2, method: 'tool/add', params: { manifest: manifest(2, `d-${name}`) } });
    }
    const adds = seen.filter((m) => (m as { id?: unknown }).id === 2);
    expect(adds.map((m) => ('error' in m ? m.error.data.code : 'ok'))).toEqual(['E_BUSY', 'ok']);
  });
});
