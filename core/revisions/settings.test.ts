// Unit tests for per-tool settings revisions: ids, binding to a tool revision, task pinning, resolveInvocation, the
// invoker.
import { describe, expect, it } from 'vitest';
import { Store } from '../store/contract.js';
import { MemoryStoreBackend } from '../store/memory.js';
import { ToolRegistry } from './registry.js';
import { ToolSettings, checkSettingsSchema, secretLikeName } from './settings.js';
import { compileDrafts } from './tasks.js';
import { createCapabilityHandler } from '../capabilities/handler.js';
import { Invoker, type PoolLike } from '../exec/invoke.js';
import { TyError } from '../errors.js';
import type { AuditRecord } from '../audit/trail.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import type { SandboxSpec } from '../exec/runtime.js';

const SETTINGS = {
  type: 'object',
  properties: {
    units: { type: 'string', enum: ['metric', 'imperial'], default: 'metric' },
    baseUrl: { type: 'string' },
  },
  additionalProperties: false,
};
const m = (
  name: string,
  source = 'export default async (a, ctx) => ctx.settings;',
  settings: Record<string, unknown> | undefined = SETTINGS,
): ToolManifest => ({
  name,
  description: `${name} tool`,
  parameters: { type: 'object', properties: {}, additionalProperties: true },
  execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
  ...(settings ? { settings } : {}),
});
const code = async (p: Promise<unknown>) =>
  p.then(
    () => 'resolved',
    (e: unknown) => (e instanceof TyError ? e.code : String(e)),
  );

async function setup() {
  const store = new Store(new MemoryStoreBackend());
  const registry = new ToolRegistry(store);
  const audit: AuditRecord[] = [];
  const settings = new ToolSettings(store, { audit: { append: async (r) => void audit.push(r) } });
  const { revision } = await registry.install(m('conv'));
  const tool = await registry.resolve('conv');
  return { store, registry, settings, revision, tool, audit };
}
const who = { principal: 'cli:user', via: 'test' };

describe('settings revisions', () => {
  it('a change is audited ahead: its started record is written before the settings record changes, its completion after', async () => {
    const store = new Store(new MemoryStoreBackend());
    const registry = new ToolRegistry(store);
    await registry.install(m('conv'));
    const tool = await registry.resolve('conv');
    const seen: string[] = [];
    const put = store.backend.put.bind(store.backend);
    store.backend.put = async (ns, key, bytes) => {
      if (ns === 'tool-settings') seen.push('settings record written');
      return put(ns, key, bytes);
    };
    const audit: AuditRecord[] = [];
    const settings = new ToolSettings(store, {
      audit: { append: async (r) => void (audit.push(r), seen.push(`audit ${r.outcome}`)) },
      hostId: 'test:1:2',
    });
    const a = await settings.update(tool, { set: { units: 'imperial' } }, who);
    expect(seen).toEqual(['audit started', 'settings record written', 'audit ok']);
    expect(audit[0]).toMatchObject({
      kind: 'settings',
      target: a.settingsRevision,
      outcome: 'started',
      host: 'test:1:2',
    });
    expect(audit[1]).toMatchObject({
      kind: 'settings',
      target: a.settingsRevision,
      outcome: 'ok',
      call: audit[0]!.call,
    });
    expect(audit[1]!.host).toBeUndefined();
    // the same values again change nothing and audit nothing
    seen.length = 0;
    await settings.update(tool, { set: { units: 'imperial' } }, who);
    expect(seen).toEqual(['settings record written']);
    // a write that fails after the started record: an error completion, and the failure passed on
    store.backend.put = async (ns, key, bytes) => {
      if (ns === 'tool-settings') throw new TyError('E_STORE', 'disk full');
      return put(ns, key, bytes);
    };
    expect(await code(settings.update(tool, { unset: ['units'] }, who))).toBe('E_STORE');
    expect(audit.slice(-2).map((r) => r.outcome)).toEqual(['started', 'error']);
    expect(audit.at(-1)).toMatchObject({ code: 'E_STORE', call: audit.at(-2)!.call });
  });

  it('are content ids over the tool revision and the values: same values, same id; bound to one tool revision', async () => {
    const { registry, settings, tool, audit } = await setup();
    const a = await settings.update(tool, { set: { units: 'imperial' } }, who);
    expect(a.effective).toEqual({ units: 'imperial' });
    const b = await settings.update(tool, { unset: ['units'] }, who);
    expect(b.effective).toEqual({ units: 'metric' });
    const c = await settings.update(tool, { set: { units: 'imperial' } }, who);
    expect(c.settingsRevision).toBe(a.settingsRevision);
    expect(b.settingsRevision).not.toBe(a.settingsRevision);
    expect(await settings.revisionOf('conv', tool.revision)).toBe(a.settingsRevision);
    // each change: an intent record before it is stored, its completion after (same call id)
    expect(audit.map((r) => [r.kind, r.target, r.revision, r.outcome])).toEqual([
      ['settings', a.settingsRevision, tool.revision, 'started'],
      ['settings', a.settingsRevision, tool.revision, 'ok'],
      ['settings', b.settingsRevision, tool.revision, 'started'],
      ['settings', b.settingsRevision, tool.revision, 'ok'],
      ['settings', a.settingsRevision, tool.revision, 'started'],
      ['settings', a.settingsRevision, tool.revision, 'ok'],
    ]);
    expect(audit[0]!.call).toBe(audit[1]!.call);
    expect(JSON.stringify(audit)).not.toContain('imperial');

    // The same values for another tool revision are another settings revision, and never load for the first.
    await registry.install(m('conv', 'export default async () => 2;'));
    const other = (await registry.revisions()).find((r) => r.revision !== tool.revision)!;
    const t2 = await registry.resolve(`conv@${other.revision}`);
    expect(await settings.revisionOf('conv', t2.revision)).toBeUndefined();
    const d = await settings.update(t2, { set: { units: 'imperial' } }, who);
    expect(d.settingsRevision).not.toBe(a.settingsRevision);
    expect(await code(settings.load(d.settingsRevision, tool.revision))).toBe('E_UNKNOWN_TOOL');
    // --from: carried over and re-validated.
    const e = await settings.update(t2, { from: tool, set: { baseUrl: 'https://x.example' } }, who);
    expect(e.values).toEqual({ units: 'imperial', baseUrl: 'https://x.example' });
  });

  it('refuses values the schema does not allow (E_INVALID_SETTINGS naming the field) and a tampered settings revision (E_INTEGRITY)', async () => {
    const { store, settings, tool } = await setup();
    await expect(settings.update(tool, { set: { units: 'kelvin' } }, who)).rejects.toMatchObject({
      code: 'E_INVALID_SETTINGS',
      data: { field: '/units' },
    });
    await expect(settings.update(tool, { set: { colour: 'red' } }, who)).rejects.toMatchObject({
      code: 'E_INVALID_SETTINGS',
    });
    const ok = await settings.update(tool, { set: { units: 'imperial' } }, who);
    const bytes = await store.backend.get('objects', ok.settingsRevision);
    await store.backend.put(
      'objects',
      ok.settingsRevision,
      new TextEncoder().encode(new TextDecoder().decode(bytes).replace('imperial', 'metric!!')),
    );
    expect(await code(settings.forCall(tool))).toBe('E_INTEGRITY');
  });

  it('secret-like names and writeOnly fields are refused in a settings schema, nested too; counts of tokens are not secrets', () => {
    for (const n of [
      'apiKey',
      'API_KEY',
      'x-api-key',
      'githubToken',
      'access_token',
      'password',
      'dbPasswd',
      'clientSecret',
      'privateKey',
      'credentials',
      'auth',
      'cookie',
    ])
      expect(secretLikeName(n), n).toBe(true);
    for (const n of ['units', 'baseUrl', 'maxTokens', 'tokenLimit', 'author', 'keyboardLayout'])
      expect(secretLikeName(n), n).toBe(false);
    expect(() =>
      checkSettingsSchema({
        type: 'object',
        properties: { nested: { type: 'object', properties: { secret: { type: 'string' } } } },
      }),
    ).toThrow(/settings\/properties\/nested\/properties\/secret.*store it as a secret/);
    expect(() =>
      checkSettingsSchema({
        type: 'object',
        properties: { x: { type: 'array', items: { type: 'string', writeOnly: true } } },
      }),
    ).toThrow(/writeOnly/);
    expect(() => checkSettingsSchema({ type: 'string' })).toThrow(/"type": "object"/);
    expect(() =>
      checkSettingsSchema({ type: 'object', properties: { note: { type: 'string', default: 'token' } } }),
    ).not.toThrow();
  });
});

describe('settings are never secrets, whatever the schema (finding 3 of issue 26)', () => {
  const open = [
    { type: 'object', additionalProperties: true },
    { type: 'object', additionalProperties: { type: 'string' } },
    { type: 'object', patternProperties: { '^.*$': { type: 'string' } } },
    { type: 'object' },
    { type: 'object', properties: { nested: { type: 'object' } } },
  ];

  it('a key named like a secret is refused when set, under any schema that lets it through; nothing is stored', async () => {
    for (const schema of open) {
      const store = new Store(new MemoryStoreBackend());
      const registry = new ToolRegistry(store);
      const settings = new ToolSettings(store);
      await registry.install(m('st', undefined, schema));
      const tool = await registry.resolve('st');
      for (const set of [
        { apiKey: 'abc' },
        { pass_word: '1' },
        { ＡＰＩＫＥＹ: 'abc' },
        { 'api\u200bkey': 'abc' },
        { nested: { Authorization: 'Bearer abc' } },
        { nested: { list: [{ client_secret: 'x' }] } },
      ]) {
        if (!schema.properties && 'nested' in set) continue;
        let err: unknown;
        try {
          await settings.update(tool, { set }, who);
        } catch (e) {
          err = e;
        }
        expect(err, `${JSON.stringify(schema)} ${JSON.stringify(set)}`).toBeInstanceOf(TyError);
        expect((err as TyError).code).toBe('E_INVALID_SETTINGS');
        expect((err as TyError).data).toMatchObject({ tool: 'st', secretLike: true });
        // the key is named, the value never
        expect((err as TyError).message).not.toMatch(/abc|Bearer/);
      }
      expect(await settings.history(tool.revision)).toEqual([]);
      // ordinary keys under the same schema still work
      const ok = schema.patternProperties || schema.additionalProperties ? { region: 'eu' } : {};
      await expect(settings.update(tool, { set: ok }, who)).resolves.toMatchObject({ values: ok });
    }
  });

  it('stored values with a secret-named key (written before this check) are refused when a call loads them', async () => {
    const store = new Store(new MemoryStoreBackend());
    const registry = new ToolRegistry(store);
    const settings = new ToolSettings(store);
    await registry.install(m('st', undefined, { type: 'object', additionalProperties: true }));
    const tool = await registry.resolve('st');
    expect(() => settings.validate(tool, { db_password: 'x' })).toThrow(/named like a secret/);
  });

  it('names are compared after NFKC and case folding, without separators or invisible characters', () => {
    for (const n of [
      'ＡＰＩＫＥＹ',
      'ａｐｉ＿ｋｅｙ',
      'API\u200BKEY',
      'Pass word',
      'PAẞWORT_TOKEN',
      'ſecret',
      'client·secret',
    ])
      expect(secretLikeName(n), n).toBe(true);
    for (const n of ['units', 'ｕｎｉｔｓ', 'maxTokens', 'Région']) expect(secretLikeName(n), n).toBe(false);
    expect(() => checkSettingsSchema({ type: 'object', properties: { ＡＰＩＫＥＹ: { type: 'string' } } })).toThrow(
      /named like a secret/,
    );
  });
});

describe('settings and garbage collection', () => {
  it('gc keeps a revision a person stored settings for (reason settings) and removes the same revision without them', async () => {
    const { registry, settings } = await setup();
    const v2 = await registry.install(m('conv', 'export default async () => 2;'));
    const v3 = await registry.install(m('conv', 'export default async () => 3;'));
    await settings.update(await registry.resolve(`conv@${v2.revision}`), { set: { units: 'imperial' } }, who);
    const r = await registry.gc();
    expect(r.removed.map((x) => x.revision)).toEqual([v3.revision]);
    expect(r.kept.find((k) => k.revision === v2.revision)?.reasons).toEqual(['settings']);
  });
});

describe('settings pinned into tasks and calls', () => {
  it('a function-call task is pinned to the settings revision before it is hashed: other settings, other task id', async () => {
    const { registry, settings, tool } = await setup();
    const draft = [
      { role: 'assistant' as const, content: { type: 'functioncall' as const, name: 'conv', arguments: {} } },
    ];
    const [none] = await compileDrafts(draft, { registry, settings });
    expect(none!.content).toEqual({ type: 'functioncall', name: 'conv', arguments: {}, toolRevision: tool.revision });
    const s1 = (await settings.update(tool, { set: { units: 'imperial' } }, who)).settingsRevision;
    const [t1] = await compileDrafts(draft, { registry, settings });
    expect(t1!.content).toMatchObject({ toolRevision: tool.revision, settingsRevision: s1 });
    const s2 = (await settings.update(tool, { set: { units: 'metric' } }, who)).settingsRevision;
    const [t2] = await compileDrafts(draft, { registry, settings });
    expect(t2!.content).toMatchObject({ settingsRevision: s2 });
    expect(new Set([none!.id, t1!.id, t2!.id]).size).toBe(3);
    // A draft may name an earlier settings revision of the same tool revision, never another tool revision's.
    const [again] = await compileDrafts([{ ...draft[0]!, content: { ...draft[0]!.content, settingsRevision: s1 } }], {
      registry,
      settings,
    });
    expect(again!.id).toBe(t1!.id);
    await registry.install(m('conv', 'export default async () => 2;'));
    const other = (await registry.revisions()).find((r) => r.revision !== tool.revision)!;
    const foreign = (
      await settings.update(await registry.resolve(`conv@${other.revision}`), { set: { units: 'imperial' } }, who)
    ).settingsRevision;
    expect(
      await code(
        compileDrafts([{ ...draft[0]!, content: { ...draft[0]!.content, settingsRevision: foreign } }], {
          registry,
          settings,
        }),
      ),
    ).toBe('E_UNPINNED_TASK');
  });

  it('resolveInvocation returns the opaque settings revision, never values', async () => {
    const { registry, settings, tool } = await setup();
    const s1 = (await settings.update(tool, { set: { units: 'imperial' } }, who)).settingsRevision;
    const caller = {
      ...m('caller', 'export default async () => 1;', undefined),
      capabilities: { resolveInvocation: ['conv'] },
    };
    const { revision } = await registry.install(caller);
    const handler = createCapabilityHandler({
      identity: { name: 'caller', revision, manifest: caller, principal: 'app' },
      gate: { run: async (_r, f) => ({ value: await f() }), authorize: async () => undefined },
      fetch: async () => ({ status: 200, statusText: '', headers: [], body: '', url: '' }),
      registry,
      settingsRevisionOf: (n, r) => settings.revisionOf(n, r),
    });
    const r = await handler('resolveInvocation', { name: 'conv' }, new AbortController().signal);
    expect(r).toEqual({ toolRevision: tool.revision, settingsRevision: s1 });
    expect(JSON.stringify(r)).not.toContain('imperial');
  });

  it('the invoker sends the settings (defaults applied) with the call and honours a pinned settings revision', async () => {
    const { registry, settings, tool } = await setup();
    const seen: (Record<string, unknown> | undefined)[] = [];
    const pool: PoolLike = { call: async (spec: SandboxSpec) => (seen.push(spec.settings), 'ok') };
    const invoker = new Invoker({ registry, pool, settings });
    expect(await invoker.invoke('conv', {})).toEqual({ ok: true, revision: tool.revision, result: 'ok' });
    const s1 = (await settings.update(tool, { set: { units: 'imperial', baseUrl: 'https://a.example' } }, who))
      .settingsRevision;
    expect(await invoker.invoke('conv', {})).toMatchObject({ ok: true, settingsRevision: s1 });
    await settings.update(tool, { set: { baseUrl: 'https://b.example' } }, who);
    expect(await invoker.invoke('conv', {}, { settingsRevision: s1 })).toMatchObject({
      ok: true,
      settingsRevision: s1,
    });
    expect(seen).toEqual([
      { units: 'metric' },
      { units: 'imperial', baseUrl: 'https://a.example' },
      { units: 'imperial', baseUrl: 'https://a.example' },
    ]);
    const bad = await invoker.invoke('conv', {}, { settingsRevision: tool.revision });
    expect(bad).toMatchObject({ ok: false, error: { code: 'E_UNKNOWN_TOOL' } });
  });
});
