// Every capability use the manifest does not request leaves its own deny audit record, in every mode; test side.
import { describe, expect, it } from 'vitest';
import type { ToolManifest } from '../../protocol/manifest.js';
import type { CapabilityName } from '../../protocol/wire.js';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import { StoreAuditLog } from '../../core/audit/trail.js';
import { PermissionGate, StoreDecisions } from '../../core/policy/gate.js';
import { PauseTracker } from '../../core/policy/pause.js';
import { compilePolicy } from '../../core/policy/permissions.js';
import { ToolRegistry } from '../../core/revisions/registry.js';
import { capabilityFactory, createCapabilityHandler } from '../../core/capabilities/handler.js';
import type { CallerIdentity, FetchTransport } from '../../core/capabilities/fetch/mediated.js';
import { TyError } from '../../core/errors.js';

const never = new AbortController().signal;
const CANARY = 'canary-arg-7731';

async function world(mode: 'strict' | 'standard' | 'unrestricted') {
  const store = new Store(new MemoryStoreBackend());
  const audit = new StoreAuditLog(store);
  const gate = new PermissionGate({
    config: () => ({
      policy: compilePolicy([
        { scope: 'user', mode, allow: ['fetch(read:https://example.com)', 'fetch(write:https://api.example.com)'] },
      ]),
    }),
    audit,
    pause: new PauseTracker(store, { maxRefusals: 100, windowMs: 60_000 }),
    decisions: new StoreDecisions(store),
  });
  const registry = new ToolRegistry(store);
  const sent: unknown[] = [];
  const transport: FetchTransport = {
    request: async (r) => (sent.push(r), { status: 200, statusText: 'OK', headers: [], body: '', url: r.url }),
  };
  const factory = capabilityFactory({ store, registry, gate, transport });
  const m: ToolManifest = {
    name: 'fetcher',
    description: 'declares nothing',
    parameters: { type: 'object' },
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async () => 1' },
  };
  const r = await registry.install(m);
  const id: CallerIdentity = { name: m.name, revision: r.revision, manifest: r.manifest, principal: 'test:user' };
  return { handler: factory(id), audit, sent, id };
}

async function refusal(p: Promise<unknown>): Promise<TyError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(TyError);
  return e as TyError;
}

describe('undeclared capability uses are audited', () => {
  it.each(['strict', 'standard', 'unrestricted'] as const)(
    'mode %s: fetch, storage, subtasks and resolveInvocation outside the manifest each leave a deny record naming the manifest, without argument values',
    async (mode) => {
      const w = await world(mode);
      const uses: [CapabilityName, unknown, string, string | undefined, string | undefined][] = [
        ['fetch', { url: `https://example.com/?q=${CANARY}` }, 'fetch', 'https://example.com', 'read'],
        [
          'fetch',
          { url: 'https://api.example.com/x', method: 'POST', body: btoa(CANARY) },
          'fetch',
          'https://api.example.com',
          'write',
        ],
        ['storage.get', { key: CANARY }, 'storage', 'get', 'read'],
        ['storage.set', { key: CANARY, value: CANARY }, 'storage', 'set', 'write'],
        ['storage.delete', { key: CANARY }, 'storage', 'delete', 'write'],
        ['storage.list', { prefix: CANARY }, 'storage', 'list', 'read'],
        ['createSubtasksResult', [{ tool: CANARY, args: {} }], 'subtasks', 'createSubtasksResult', 'write'],
        ['resolveInvocation', { name: 'other-tool' }, 'resolve', 'other-tool', 'read'],
      ];
      for (const [cap, params] of uses) {
        const e = await refusal(w.handler(cap, params, never));
        expect(e.code, `${cap}: ${e.message}`).toBe('E_CAPABILITY_DENIED');
        expect(e.message).toMatch(/does not (declare|request|list)/);
      }
      expect(w.sent).toHaveLength(0);
      const { entries } = await w.audit.read();
      expect(entries.map((r) => [r.kind, r.target, r.access])).toEqual(
        uses.map(([, , kind, target, access]) => [kind, target, access]),
      );
      for (const r of entries) {
        expect(r).toMatchObject({
          decision: 'deny',
          list: 'manifest',
          rule: 'manifest upper bound',
          outcome: 'denied',
          code: 'E_CAPABILITY_DENIED',
          tool: 'fetcher',
          revision: w.id.revision,
        });
      }
      expect(JSON.stringify(entries)).not.toContain(CANARY);
      expect(JSON.stringify(entries)).not.toContain(btoa(CANARY));
    },
  );

  it('an undeclared secret is audited as a manifest refusal, never with a value', async () => {
    const store = new Store(new MemoryStoreBackend());
    const audit = new StoreAuditLog(store);
    const gate = new PermissionGate({
      config: () => ({ policy: compilePolicy([]) }),
      audit,
      pause: new PauseTracker(store),
      decisions: new StoreDecisions(store),
    });
    const registry = new ToolRegistry(store);
    const values = {
      get: async () => CANARY,
      set: async () => {},
      delete: async () => true,
      names: async () => ['TOKEN'],
    };
    const factory = capabilityFactory({
      store,
      registry,
      gate,
      transport: {
        request: async () => {
          throw new Error('unused');
        },
      },
      secretValues: values,
    });
    const r = await registry.install({
      name: 'sec',
      description: 'x',
      parameters: { type: 'object' },
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async () => 2' },
    });
    const h = factory({ name: 'sec', revision: r.revision, manifest: r.manifest, principal: 'test:user' });
    expect((await refusal(h('getSecret', { name: 'TOKEN' }, never))).code).toBe('E_SECRET_DENIED');
    const { entries } = await audit.read();
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      kind: 'secret',
      target: 'TOKEN',
      decision: 'deny',
      list: 'manifest',
      outcome: 'denied',
    });
    expect(JSON.stringify(entries)).not.toContain(CANARY);
  });

  it('on a host without a secret store an undeclared secret is still an audited manifest refusal', async () => {
    const w = await world('unrestricted');
    const e = await refusal(w.handler('getSecret', { name: 'API_TOKEN' }, never));
    expect(e.code).toBe('E_SECRET_DENIED');
    expect(e.message).toContain('is not declared');
    const { entries } = await w.audit.read();
    expect(entries).toEqual([
      expect.objectContaining({
        kind: 'secret',
        target: 'API_TOKEN',
        access: 'read',
        decision: 'deny',
        list: 'manifest',
        outcome: 'denied',
      }),
    ]);
  });

  it('a declared use this host does not offer at all (no storage, registry, subtask compiler or secret broker) leaves its own deny record, list host, in every mode', async () => {
    for (const mode of ['strict', 'standard', 'unrestricted'] as const) {
      const store = new Store(new MemoryStoreBackend());
      const audit = new StoreAuditLog(store);
      const gate = new PermissionGate({
        config: () => ({ policy: compilePolicy([{ scope: 'user', mode }]) }),
        audit,
        pause: new PauseTracker(store, { maxRefusals: 100, windowMs: 60_000 }),
        decisions: new StoreDecisions(store),
      });
      const manifest: ToolManifest = {
        name: 'wants-all',
        description: 'declares every capability',
        parameters: { type: 'object' },
        execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async () => 1' },
        capabilities: { storage: {}, subtasks: true, resolveInvocation: ['other'], secrets: ['TOKEN'] },
      };
      const identity: CallerIdentity = {
        name: manifest.name,
        revision: 'bagaaiera-host-test',
        manifest,
        principal: 'test:user',
      };
      const h = createCapabilityHandler({ identity, gate, fetch: async () => ({ status: 200 }) as never });
      const uses: [CapabilityName, unknown, string, string, string, string][] = [
        ['storage.get', { key: CANARY }, 'storage', 'get', 'read', 'E_CAPABILITY_DENIED'],
        ['storage.set', { key: CANARY, value: CANARY }, 'storage', 'set', 'write', 'E_CAPABILITY_DENIED'],
        ['storage.delete', { key: CANARY }, 'storage', 'delete', 'write', 'E_CAPABILITY_DENIED'],
        ['storage.list', { prefix: CANARY }, 'storage', 'list', 'read', 'E_CAPABILITY_DENIED'],
        [
          'createSubtasksResult',
          [{ tool: CANARY, args: {} }],
          'subtasks',
          'createSubtasksResult',
          'write',
          'E_CAPABILITY_DENIED',
        ],
        ['resolveInvocation', { name: 'other' }, 'resolve', 'other', 'read', 'E_CAPABILITY_DENIED'],
        ['getSecret', { name: 'TOKEN' }, 'secret', 'TOKEN', 'read', 'E_SECRET_DENIED'],
      ];
      for (const [cap, params, , , , code] of uses) {
        const e = await refusal(h(cap, params, never));
        expect(e.code, `${mode} ${cap}: ${e.message}`).toBe(code);
        expect(e.message).toContain('not available on this host');
      }
      const { entries } = await audit.read();
      expect(entries.map((r) => [r.kind, r.target, r.access, r.code])).toEqual(
        uses.map(([, , kind, target, access, code]) => [
          kind,
          target,
          access,
          code === 'E_SECRET_DENIED' ? 'E_CAPABILITY_DENIED' : code,
        ]),
      );
      for (const r of entries)
        expect(r, mode).toMatchObject({
          decision: 'deny',
          list: 'host',
          rule: 'not available on this host',
          outcome: 'denied',
          tool: 'wants-all',
        });
      expect(JSON.stringify(entries)).not.toContain(CANARY);
    }
  });
});
