// The capability handler: dispatch, fail-closed names, storage, secrets, subtasks, invocation lookup; test side.
import { describe, expect, it } from 'vitest';
import { CAPABILITY_NAMES, type CapabilityName } from '../../protocol/wire.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import type { Gate } from '../../core/exec/runtime.js';
import { TyError } from '../../core/errors.js';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import { ToolRegistry } from '../../core/revisions/registry.js';
import { compileDrafts } from '../../core/revisions/tasks.js';
import { createCapabilityHandler } from '../../core/capabilities/handler.js';
import type { CallerIdentity, MediatedFetch } from '../../core/capabilities/fetch/mediated.js';
import { ToolStorage, DEFAULT_STORAGE_QUOTA } from '../../core/capabilities/storage.js';
import { SecretBroker, SecretGrants, type SecretValues } from '../../core/capabilities/secrets.js';
import { codeOf } from '../helpers/errors.js';

const never = new AbortController().signal;
const gate: Gate = {
  async authorize() {},
  async run() {
    throw new Error('unused');
  },
};

class MemValues implements SecretValues {
  m = new Map<string, string>();
  async get(n: string) {
    return this.m.get(n);
  }
  async set(n: string, v: string) {
    this.m.set(n, v);
  }
  async delete(n: string) {
    return this.m.delete(n);
  }
  async names() {
    return [...this.m.keys()];
  }
}

function manifest(name: string, capabilities: ToolManifest['capabilities'], salt = ''): ToolManifest {
  return {
    name,
    description: `test ${salt}`,
    parameters: { type: 'object' },
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source: `export default async () => 1 // ${salt}` },
    ...(capabilities ? { capabilities } : {}),
  };
}

async function world() {
  const store = new Store(new MemoryStoreBackend());
  const registry = new ToolRegistry(store);
  const storage = new ToolStorage(store);
  const values = new MemValues();
  const grants = new SecretGrants(store);
  const broker = new SecretBroker(grants, values);
  const install = async (m: ToolManifest): Promise<CallerIdentity> => {
    const r = await registry.install(m);
    return { name: m.name, revision: r.revision, manifest: r.manifest, principal: 'test:user' };
  };
  const fetchCalls: unknown[] = [];
  const fetch: MediatedFetch = async (_id, p) => {
    fetchCalls.push(p);
    return { status: 200, statusText: 'OK', headers: [], body: '', url: 'https://api.example.com/' };
  };
  const handler = (identity: CallerIdentity) =>
    createCapabilityHandler({
      identity,
      gate,
      fetch,
      storage,
      secrets: broker,
      registry,
      compile: (drafts) => compileDrafts(drafts, { registry }),
      settingsRevisionOf: async () => undefined,
    });
  return { store, registry, storage, values, grants, broker, install, handler, fetchCalls };
}

describe('dispatch', () => {
  it('fails closed on names outside CAPABILITY_NAMES, including prototype keys', async () => {
    const w = await world();
    const h = w.handler(await w.install(manifest('t', {})));
    for (const bad of [
      'exec',
      'constructor',
      '__proto__',
      'toString',
      'hasOwnProperty',
      'storage',
      'storage.get ',
      '',
    ]) {
      expect(await codeOf(h(bad as CapabilityName, {}, never))).toBe('E_CAPABILITY_DENIED');
    }
  });

  it('has an entry for every capability name', async () => {
    const w = await world();
    const h = w.handler(await w.install(manifest('t', {})));
    for (const name of CAPABILITY_NAMES) {
      // Each is refused for a tool that requested nothing, with a capability-level code (never "unknown").
      const err = await h(
        name,
        name === 'fetch' ? { url: 'https://api.example.com/' } : { key: 'k', name: 'x', value: 1 },
        never,
      ).then(
        () => undefined,
        (e: unknown) => e,
      );
      if (name === 'fetch') expect(err).toBeUndefined();
      else {
        expect(err).toBeInstanceOf(TyError);
        expect((err as TyError).message).not.toMatch(/unknown capability/);
        expect(['E_CAPABILITY_DENIED', 'E_SECRET_DENIED']).toContain((err as TyError).code);
      }
    }
    expect(w.fetchCalls).toHaveLength(1);
  });

  it('refuses once the call is cancelled', async () => {
    const w = await world();
    const h = w.handler(await w.install(manifest('t', { storage: {} })));
    const ac = new AbortController();
    ac.abort();
    expect(await codeOf(h('storage.get', { key: 'a' }, ac.signal))).toBe('E_ABORTED');
  });
});

describe('ctx.storage', () => {
  it('round-trips JSON values per revision: a new revision under the same name starts empty', async () => {
    const w = await world();
    const a = await w.install(manifest('keeper', { storage: {} }, 'v1'));
    const b = await w.install(manifest('keeper', { storage: {} }, 'v2'));
    const ha = w.handler(a);
    const hb = w.handler(b);
    await ha('storage.set', { key: 'count', value: { n: 1, list: [1, 'two'] } }, never);
    await ha('storage.set', { key: 'other', value: 'x' }, never);
    expect(await ha('storage.get', { key: 'count' }, never)).toEqual({ n: 1, list: [1, 'two'] });
    expect(await ha('storage.list', {}, never)).toEqual(['count', 'other']);
    expect(await ha('storage.list', { prefix: 'co' }, never)).toEqual(['count']);
    expect(await hb('storage.get', { key: 'count' }, never)).toBeUndefined();
    expect(await hb('storage.list', {}, never)).toEqual([]);
    expect(await ha('storage.delete', { key: 'count' }, never)).toBe(true);
    expect(await ha('storage.delete', { key: 'count' }, never)).toBe(false);
    expect(await ha('storage.get', { key: 'count' }, never)).toBeUndefined();
  });

  it('persists in the store (a new handler for the same revision sees the data)', async () => {
    const w = await world();
    const a = await w.install(manifest('keeper', { storage: {} }));
    await w.handler(a)('storage.set', { key: 'k', value: 42 }, never);
    expect(await w.handler(a)('storage.get', { key: 'k' }, never)).toBe(42);
    expect(await w.storage.usage(a.revision)).toBeGreaterThan(0);
  });

  it('enforces the quota with E_STORAGE_QUOTA and writes nothing past it', async () => {
    const w = await world();
    const a = await w.install(manifest('keeper', { storage: { quotaBytes: 100 } }));
    const h = w.handler(a);
    await h('storage.set', { key: 'small', value: 'x'.repeat(40) }, never);
    expect(await codeOf(h('storage.set', { key: 'big', value: 'y'.repeat(80) }, never))).toBe('E_STORAGE_QUOTA');
    expect(await h('storage.list', {}, never)).toEqual(['small']);
    // Overwriting with something smaller still works.
    await h('storage.set', { key: 'small', value: 'z' }, never);
    expect(await h('storage.get', { key: 'small' }, never)).toBe('z');
  });

  it('uses the 1 MiB default quota', async () => {
    const w = await world();
    const h = w.handler(await w.install(manifest('keeper', { storage: {} })));
    expect(await codeOf(h('storage.set', { key: 'a', value: 'x'.repeat(DEFAULT_STORAGE_QUOTA) }, never))).toBe(
      'E_STORAGE_QUOTA',
    );
    await h('storage.set', { key: 'a', value: 'x'.repeat(DEFAULT_STORAGE_QUOTA - 100) }, never);
  });

  it('refuses a tool that did not request storage, and bad keys and values', async () => {
    const w = await world();
    const none = w.handler(await w.install(manifest('plain', {})));
    expect(await codeOf(none('storage.set', { key: 'a', value: 1 }, never))).toBe('E_CAPABILITY_DENIED');
    expect(await codeOf(none('storage.get', { key: 'a' }, never))).toBe('E_CAPABILITY_DENIED');
    const h = w.handler(await w.install(manifest('keeper', { storage: {} })));
    expect(await codeOf(h('storage.set', { key: '', value: 1 }, never))).toBe('E_INVALID_ARGS');
    expect(await codeOf(h('storage.set', { key: 'k'.repeat(300), value: 1 }, never))).toBe('E_INVALID_ARGS');
    expect(await codeOf(h('storage.set', { key: 'k' }, never))).toBe('E_INVALID_ARGS');
    expect(await codeOf(h('storage.set', { key: 'k', value: Number.NaN }, never))).toBe('E_INVALID_ARGS');
    expect(await codeOf(h('storage.get', { key: 7 }, never))).toBe('E_INVALID_ARGS');
  });

  it('keeps a __proto__ key as plain data', async () => {
    const w = await world();
    const h = w.handler(await w.install(manifest('keeper', { storage: {} })));
    await h('storage.set', { key: '__proto__', value: { polluted: true } }, never);
    expect(await h('storage.get', { key: '__proto__' }, never)).toEqual({ polluted: true });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(await h('storage.list', {}, never)).toEqual(['__proto__']);
  });
});

describe('ctx.getSecret', () => {
  const VALUE = 'hunter2-secret-value';
  it('works only for the granted revision, without origins, when declared', async () => {
    const w = await world();
    await w.values.set('TOKEN', VALUE);
    const v1 = await w.install(manifest('reader', { secrets: ['TOKEN'] }, 'v1'));
    const v2 = await w.install(manifest('reader', { secrets: ['TOKEN'] }, 'v2'));
    await w.grants.grant('TOKEN', { tool: 'reader', revision: v1.revision, origins: [] });
    expect(await w.handler(v1)('getSecret', { name: 'TOKEN' }, never)).toBe(VALUE);
    const err = await w
      .handler(v2)('getSecret', { name: 'TOKEN' }, never)
      .catch((e: TyError) => e);
    expect((err as TyError).code).toBe('E_SECRET_DENIED');
    expect((err as TyError).message).not.toContain(VALUE);
  });

  it('refuses an undeclared secret even with a grant, and an origin-restricted grant', async () => {
    const w = await world();
    await w.values.set('TOKEN', VALUE);
    const undeclared = await w.install(manifest('reader', {}));
    await w.grants.grant('TOKEN', { tool: 'reader', revision: undeclared.revision, origins: [] });
    expect(await codeOf(w.handler(undeclared)('getSecret', 'TOKEN', never))).toBe('E_SECRET_DENIED');
    const headerOnly = await w.install(manifest('h', { secrets: ['TOKEN'] }));
    await w.grants.grant('TOKEN', { tool: 'h', revision: headerOnly.revision, origins: ['https://api.example.com'] });
    expect(await codeOf(w.handler(headerOnly)('getSecret', 'TOKEN', never))).toBe('E_SECRET_DENIED');
  });

  it('revoking removes access; grants are listed without values', async () => {
    const w = await world();
    await w.values.set('TOKEN', VALUE);
    const v1 = await w.install(manifest('reader', { secrets: ['TOKEN'] }));
    await w.grants.grant('TOKEN', { tool: 'reader', revision: v1.revision, origins: [] });
    expect(JSON.stringify(await w.grants.list())).not.toContain(VALUE);
    expect(await w.grants.revoke('TOKEN', 'reader')).toBe(1);
    expect(await codeOf(w.handler(v1)('getSecret', 'TOKEN', never))).toBe('E_SECRET_DENIED');
  });

  it('substitutes placeholders only with a matching origin grant (wildcards, ports)', async () => {
    const w = await world();
    await w.values.set('K', 'v4lue');
    const id = await w.install(manifest('h', { secrets: ['K'] }));
    await w.grants.grant('K', {
      tool: 'h',
      revision: id.revision,
      origins: ['https://*.example.com', 'https://api.test.dev:8443'],
    });
    expect(await w.broker.substitute(id, 'https://a.example.com', [['x', 'a {{secret:K}} b']])).toEqual([
      ['x', 'a v4lue b'],
    ]);
    expect(await w.broker.substitute(id, 'https://api.test.dev:8443', [['x', '{{secret:K}}']])).toEqual([
      ['x', 'v4lue'],
    ]);
    for (const o of [
      'https://example.com',
      'https://api.test.dev',
      'https://evil-example.com',
      'https://a.example.com.evil.io',
    ]) {
      expect(await codeOf(w.broker.substitute(id, o, [['x', '{{secret:K}}']]))).toBe('E_SECRET_DENIED');
    }
    expect(await codeOf(w.broker.substitute(id, 'https://a.example.com', [['x', '{{secret:K']]))).toBe(
      'E_SECRET_DENIED',
    );
    expect(await codeOf(w.broker.substitute(id, 'https://a.example.com', [['x', '{{secret:UNKNOWN}}']]))).toBe(
      'E_SECRET_DENIED',
    );
  });
});

describe('createSubtasksResult and resolveInvocation', () => {
  it('compiles drafts into pinned, hashed tasks in the trusted core', async () => {
    const w = await world();
    const target = await w.install(manifest('target', {}));
    const parent = await w.install(manifest('parent', { subtasks: true }));
    const tasks = (await w.handler(parent)(
      'createSubtasksResult',
      [
        { role: 'assistant', content: { type: 'message', text: 'plan' } },
        { role: 'assistant', parent: 0, content: { type: 'functioncall', name: 'target', arguments: {} } },
      ],
      never,
    )) as { id: string; parent?: string; content: { toolRevision?: string } }[];
    expect(tasks).toHaveLength(2);
    expect(tasks[1]?.content.toolRevision).toBe(target.revision);
    expect(tasks[1]?.parent).toBe(tasks[0]?.id);
    expect(tasks[0]?.id).toMatch(/^b[a-z2-7]+$/);
  });

  it('a draft that cannot be pinned is an error; a tool without the capability is refused', async () => {
    const w = await world();
    const parent = await w.install(manifest('parent', { subtasks: true }));
    expect(
      await codeOf(
        w.handler(parent)(
          'createSubtasksResult',
          [{ role: 'assistant', content: { type: 'functioncall', name: 'missing', arguments: {} } }],
          never,
        ),
      ),
    ).toBe('E_UNPINNED_TASK');
    expect(await codeOf(w.handler(parent)('createSubtasksResult', { drafts: 'nope' }, never))).toBe('E_INVALID_TASK');
    const plain = await w.install(manifest('plain', {}));
    expect(await codeOf(w.handler(plain)('createSubtasksResult', [], never))).toBe('E_CAPABILITY_DENIED');
  });

  it('resolveInvocation returns only opaque revision ids for a listed name', async () => {
    const w = await world();
    const target = await w.install(manifest('target', { secrets: ['S'] }));
    const caller = await w.install(manifest('caller', { resolveInvocation: ['target', 'absent'] }));
    const r = await w.handler(caller)('resolveInvocation', { name: 'target' }, never);
    expect(r).toEqual({ toolRevision: target.revision });
    expect(await codeOf(w.handler(caller)('resolveInvocation', { name: 'other' }, never))).toBe('E_CAPABILITY_DENIED');
    expect(await codeOf(w.handler(caller)('resolveInvocation', { name: 'absent' }, never))).toBe('E_UNKNOWN_TOOL');
    expect(await codeOf(w.handler(caller)('resolveInvocation', {}, never))).toBe('E_INVALID_ARGS');
  });

  it('includes a settings revision when the host has one, still opaque', async () => {
    const w = await world();
    const target = await w.install(manifest('target', {}));
    const caller = await w.install(manifest('caller', { resolveInvocation: ['target'] }));
    const h = createCapabilityHandler({
      identity: caller,
      gate,
      fetch: async () => {
        throw new Error('unused');
      },
      registry: w.registry,
      settingsRevisionOf: async () => target.revision,
    });
    expect(await h('resolveInvocation', 'target', never)).toEqual({
      toolRevision: target.revision,
      settingsRevision: target.revision,
    });
  });
});
