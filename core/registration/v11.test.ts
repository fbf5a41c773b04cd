// Unit tests of tysandbox/1.1 in the handler: version negotiation, tool/list pages, tool/listChanged, rpc.discover and
// $/progress stages, with a 1.0 session beside a 1.1 one on one server; trusted side.
import { describe, expect, it } from 'vitest';
import { RegistrationServer, negotiateVersion } from './server.js';
import { ToolRegistry } from '../revisions/registry.js';
import { PermissionGate, StoreDecisions } from '../policy/gate.js';
import { compilePolicy, type RuleSet } from '../policy/permissions.js';
import { StoreAuditLog } from '../audit/trail.js';
import { PauseTracker } from '../policy/pause.js';
import { Store } from '../store/contract.js';
import { MemoryStoreBackend } from '../store/memory.js';
import type { RpcMessage } from './rpc.js';
import type { ProtocolRunner } from './run.js';

const manifest = (k = 2, name = 'double') => ({
  name,
  description: `times ${k}`,
  parameters: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'], additionalProperties: false },
  execution: { kind: 'sandboxed-code', runtime: 'javascript', source: `export default async (a) => a.x * ${k};` },
});

function setup(opts: { sets?: RuleSet[]; run?: ProtocolRunner } = {}) {
  const store = new Store(new MemoryStoreBackend());
  const registry = new ToolRegistry(store);
  const audit = new StoreAuditLog(store);
  const gate = new PermissionGate({
    config: () => ({ policy: compilePolicy(opts.sets ?? [{ scope: 'user', allow: ['registry(*)'] }]) }),
    asker: { ask: async () => ({ allow: false, reason: 'no-channel' }) },
    audit,
    pause: new PauseTracker(store, { maxRefusals: 100, windowMs: 60_000 }),
    decisions: new StoreDecisions(store),
  });
  const server = new RegistrationServer({
    registry,
    gate,
    changeDebounceMs: 1,
    run:
      opts.run ??
      (async (ref, args) => ({ ok: true, revision: ref.split('@')[1]!, result: (args as { x: number }).x * 2 })),
  });
  const connect = (name: string) => {
    const out: RpcMessage[] = [];
    const session = server.connect({ principal: (c) => `protocol:${c.name}`, send: (m) => out.push(m) });
    let id = 0;
    const req = async (method: string, params: unknown): Promise<Record<string, unknown>> => {
      const my = ++id;
      await session.receive(JSON.stringify({ jsonrpc: '2.0', id: my, method, params }), (m) => out.push(m));
      return out.find((m) => (m as { id?: unknown }).id === my) as unknown as Record<string, unknown>;
    };
    const notes = (method: string) =>
      out.filter((m) => (m as { method?: string }).method === method).map((m) => (m as { params: unknown }).params);
    return { session, out, req, notes, name };
  };
  return { store, registry, server, connect, audit };
}

describe('tysandbox/1.1 in the handler', () => {
  it('negotiates: exact versions, a later 1.x answered with 1.1, anything else refused', () => {
    expect(negotiateVersion('tysandbox/1')).toBe('tysandbox/1');
    expect(negotiateVersion('tysandbox/1.1')).toBe('tysandbox/1.1');
    expect(negotiateVersion('tysandbox/1.7')).toBe('tysandbox/1.1');
    expect(negotiateVersion('tysandbox/2')).toBeUndefined();
    expect(negotiateVersion('tysandbox/1.0')).toBeUndefined();
    expect(negotiateVersion('mcp/1.1')).toBeUndefined();
  });

  it('a 1.0 and a 1.1 session side by side: methods, capabilities, tool/list shapes', async () => {
    const t = setup();
    const old = t.connect('old');
    const now = t.connect('new');
    const a = await old.req('initialize', { protocolVersion: 'tysandbox/1', client: { name: 'old', version: '1' } });
    const b = await now.req('initialize', {
      protocolVersion: 'tysandbox/1.1',
      client: { name: 'new', version: '1' },
      capabilities: { notifications: true },
    });
    expect(a.result).toMatchObject({ protocolVersion: 'tysandbox/1' });
    expect((a.result as { methods: string[] }).methods).not.toContain('rpc.discover');
    expect((a.result as Record<string, unknown>).capabilities).toBeUndefined();
    expect(b.result).toMatchObject({
      protocolVersion: 'tysandbox/1.1',
      capabilities: { notifications: ['tool/listChanged'] },
    });
    expect((b.result as { methods: string[] }).methods).toContain('rpc.discover');
    await now.req('tool/add', { manifest: manifest() });
    expect((await old.req('tool/list', {})).result).toEqual([expect.objectContaining({ name: 'double' })]);
    expect((await now.req('tool/list', {})).result).toEqual({ tools: [expect.objectContaining({ name: 'double' })] });
    // a 1.0 session is held to the 1.0 params: no cursor, no capabilities
    expect((await old.req('tool/list', { cursor: 'after:a' })).error).toMatchObject({ code: -32602 });
    const late = t.connect('late');
    expect(
      (
        await late.req('initialize', {
          protocolVersion: 'tysandbox/1',
          client: { name: 'late', version: '1' },
          capabilities: { notifications: true },
        })
      ).error,
    ).toMatchObject({ code: -32602, data: { code: 'E_USAGE', path: 'capabilities' } });
  });

  it('tool/list pages over 250 tools: stable order, every name once, cursors survive changes in between', async () => {
    const t = setup();
    const c = t.connect('pager');
    await c.req('initialize', { protocolVersion: 'tysandbox/1.1', client: { name: 'pager', version: '1' } });
    const names = Array.from({ length: 260 }, (_, i) => `t${String(i).padStart(3, '0')}${i % 2 ? 'B' : 'a'}`);
    for (const [i, n] of names.entries()) await t.registry.install(manifest(i, n));
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const r = (await c.req('tool/list', cursor ? { cursor, limit: 100 } : { limit: 100 })).result as {
        tools: { name: string }[];
        nextCursor?: string;
      };
      seen.push(...r.tools.map((x) => x.name));
      cursor = r.nextCursor;
      pages++;
      if (pages === 1) {
        // between pages: one name before the cursor and one after it appear, one after it goes
        await t.registry.install(manifest(1, 'a_early'));
        await t.registry.install(manifest(1, 'z_late'));
        await t.registry.remove(names[200]!, { approveRemoval: true });
      }
    } while (cursor);
    expect(pages).toBe(3);
    // code-unit order ('B' < 'a'), no duplicates, the late name seen, the early one (before the cursor) not
    const expected = [...names, 'z_late'].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    expect(seen).toEqual(expected); // the removed binding is still listed: its revisions stay, active null
    expect(new Set(seen).size).toBe(seen.length);
    expect((await c.req('tool/list', { cursor: 'bogus' })).error).toMatchObject({
      data: { code: 'E_USAGE', path: 'cursor' },
    });
    expect((await c.req('tool/list', { limit: 501 })).error).toMatchObject({ code: -32602 });
  });

  it('tool/listChanged reaches the sessions that asked, for changes by anyone in the process', async () => {
    const t = setup();
    const sub = t.connect('sub');
    const quiet = t.connect('quiet');
    await sub.req('initialize', {
      protocolVersion: 'tysandbox/1.1',
      client: { name: 'sub', version: '1' },
      capabilities: { notifications: true },
    });
    await quiet.req('initialize', { protocolVersion: 'tysandbox/1.1', client: { name: 'quiet', version: '1' } });
    await t.server.changes.settle(); // the baseline
    await quiet.req('tool/add', { manifest: manifest(2) }); // through the protocol
    await t.server.changes.settle();
    const r2 = await t.registry.install(manifest(3)); // the app's own registry (not through the protocol)
    await t.registry.activate('double', r2.revision, { approveReplacement: true });
    await t.server.changes.settle();
    await t.registry.remove('double', { approveRemoval: true });
    await t.server.changes.settle();
    const changes = sub.notes('tool/listChanged').flatMap((p) => (p as { changes: unknown[] }).changes);
    expect(changes.map((c) => (c as { change: string }).change)).toEqual([
      'added',
      'activated',
      'added',
      'activated',
      'removed',
    ]);
    expect(changes[4]).toMatchObject({ name: 'double', revision: r2.revision });
    expect(quiet.notes('tool/listChanged')).toEqual([]);
    // nothing changed: a poke sends nothing
    const before = sub.out.length;
    t.server.registryChanged();
    await t.server.changes.settle();
    expect(sub.out.length).toBe(before);
  });

  it('a principal that may not read the registry gets no notifications (the refusal audited)', async () => {
    const t = setup({ sets: [{ scope: 'user', allow: ['registry(connect)'], deny: ['registry(read)'] }] });
    const c = t.connect('nosy');
    const r = await c.req('initialize', {
      protocolVersion: 'tysandbox/1.1',
      client: { name: 'nosy', version: '1' },
      capabilities: { notifications: true },
    });
    expect(r.result).toMatchObject({ capabilities: { notifications: [] } });
    expect(c.session.notifies).toBe(false);
  });

  it('rpc.discover answers the OpenRPC document before and after initialize', async () => {
    const t = setup();
    const c = t.connect('d');
    const before = await c.req('rpc.discover', {});
    expect(before.result).toMatchObject({ openrpc: '1.3.2', info: { version: '1.1' } });
    await c.req('initialize', { protocolVersion: 'tysandbox/1.1', client: { name: 'd', version: '1' } });
    const names = ((await c.req('rpc.discover', {})).result as { methods: { name: string }[] }).methods.map(
      (m) => m.name,
    );
    expect(names).toEqual([
      'initialize',
      'tool/add',
      'tool/list',
      'tool/show',
      'tool/activate',
      'tool/remove',
      'tool/run',
      'rpc.discover',
      '$/cancel',
    ]);
    // any other method before initialize is still refused
    expect((await t.connect('e').req('tool/list', {})).error).toMatchObject({ code: -32002 });
  });

  it('$/progress: 1.1 queued, started, progress, done with the outcome; 1.0 resolved and done', async () => {
    const t = setup({
      run: async (ref, args, o) => {
        o.onProgress?.({ stage: 'started' });
        o.onProgress?.({ stage: 'progress', fraction: 0.5, message: 'half' });
        if ((args as { x: number }).x < 0) return { ok: false, error: { code: 'E_TOOL_FAILED', message: 'neg' } };
        return { ok: true, revision: ref.split('@')[1]!, result: 1 };
      },
    });
    const { revision } = await t.registry.install(manifest());
    const now = t.connect('now');
    const old = t.connect('old');
    await now.req('initialize', { protocolVersion: 'tysandbox/1.1', client: { name: 'now', version: '1' } });
    await old.req('initialize', { protocolVersion: 'tysandbox/1', client: { name: 'old', version: '1' } });
    await now.req('tool/run', { ref: 'double', arguments: { x: 1 } });
    await now.req('tool/run', { ref: 'double', arguments: { x: -1 } });
    await old.req('tool/run', { ref: 'double', arguments: { x: 1 } });
    expect(now.notes('$/progress')).toEqual([
      { id: 2, stage: 'queued', revision },
      { id: 2, stage: 'started', revision },
      { id: 2, stage: 'progress', revision, fraction: 0.5, message: 'half' },
      { id: 2, stage: 'done', revision, outcome: 'ok' },
      { id: 3, stage: 'queued', revision },
      { id: 3, stage: 'started', revision },
      { id: 3, stage: 'progress', revision, fraction: 0.5, message: 'half' },
      { id: 3, stage: 'done', revision, outcome: 'error', code: 'E_TOOL_FAILED' },
    ]);
    expect(old.notes('$/progress')).toEqual([
      { id: 2, stage: 'resolved', revision },
      { id: 2, stage: 'done', revision },
    ]);
  });

  it('a cancelled 1.1 run ends with done, outcome cancelled, E_ABORTED', async () => {
    let release!: () => void;
    const t = setup({
      run: async (_ref, _args, o) => {
        o.onProgress?.({ stage: 'started' });
        await new Promise<void>((r) => {
          release = r;
          o.signal.addEventListener('abort', () => r(), { once: true });
        });
        return { ok: false, error: { code: 'E_ABORTED', message: 'call aborted; sandbox destroyed' } };
      },
    });
    await t.registry.install(manifest());
    const c = t.connect('c');
    await c.req('initialize', { protocolVersion: 'tysandbox/1.1', client: { name: 'c', version: '1' } });
    const running = c.req('tool/run', { ref: 'double', arguments: { x: 1 } });
    while (!c.notes('$/progress').some((p) => (p as { stage: string }).stage === 'started'))
      await new Promise((r) => setTimeout(r, 1));
    await c.session.receive({ jsonrpc: '2.0', method: '$/cancel', params: { id: 2 } });
    const answer = await running;
    expect(answer.error).toMatchObject({ data: { code: 'E_ABORTED' } });
    expect(c.notes('$/progress').at(-1)).toMatchObject({ stage: 'done', outcome: 'cancelled', code: 'E_ABORTED' });
    release();
  });
});
