// The CapabilityHandler factory: one caller identity, every capability in protocol/wire.ts CAPABILITY_NAMES; core,
// trusted side.
import { CAPABILITY_NAMES, type CapabilityName } from '../../protocol/names.js';
import type { Task } from '../../protocol/task.js';
import type { CapabilityHandler, Gate } from '../exec/runtime.js';
import type { ToolRegistry } from '../revisions/registry.js';
import { TyError } from '../errors.js';
import type { Store } from '../store/contract.js';
import {
  createMediatedFetch,
  type CallerIdentity,
  type FetchLimits,
  type FetchTransport,
  type MediatedFetch,
} from './fetch/mediated.js';
import { ToolStorage } from './storage.js';
import { SecretBroker, SecretGrants, type SecretValues } from './secrets.js';
import { StoreAuditLog, type AuditSink } from '../audit/trail.js';
import type { ToolSettings } from '../revisions/settings.js';
import { refuseUnavailable, refuseUndeclared } from './refusal.js';

export interface CapabilityDeps {
  /** The exact revision the sandbox was started for (from the host's record, never from a message). */
  identity: CallerIdentity;
  gate: Gate;
  fetch: MediatedFetch;
  storage?: ToolStorage;
  secrets?: Pick<SecretBroker, 'getSecret'>;
  registry?: Pick<ToolRegistry, 'resolve'>;
  /**
   * Compiles drafts into pinned, hashed tasks (core/revisions/tasks.ts compileDrafts bound to the registry and
   * lineage).
   */
  compile?: (drafts: unknown[]) => Promise<Task[]>;
  /** The settings revision of a tool revision, when it has settings. Opaque id only. */
  settingsRevisionOf?: (name: string, revision: string) => Promise<string | undefined>;
}

type Entry = (params: unknown, signal: AbortSignal) => Promise<unknown>;

/** Accept `"x"` or `{[field]: "x"}`: the runner may send either. */
function field(params: unknown, name: string): unknown {
  if (typeof params === 'string') return params;
  if (
    params !== null &&
    typeof params === 'object' &&
    !Array.isArray(params) &&
    Object.prototype.hasOwnProperty.call(params, name)
  ) {
    return (params as Record<string, unknown>)[name];
  }
  return undefined;
}

/**
 * Build the handler a sandbox's capability requests go to. Dispatch is a null-prototype table with one
 * entry per name in CAPABILITY_NAMES; any other name fails closed (E_CAPABILITY_DENIED). Every entry acts
 * for `deps.identity` only.
 *
 * Params per capability: fetch FetchRequestSchema; createSubtasksResult `DraftTask[]` or `{drafts}`;
 * resolveInvocation `name` or `{name}`; storage.get/delete `{key}`; storage.set `{key, value}`;
 * storage.list `{prefix?}`; getSecret `name` or `{name}`.
 */
export function createCapabilityHandler(deps: CapabilityDeps): CapabilityHandler {
  const id = deps.identity;
  const caps = id.manifest.capabilities;
  /**
   * An audited manifest refusal (core/capabilities/refusal.ts): kind, target and access only, never argument values.
   */
  const undeclared = (
    kind: 'storage' | 'subtasks' | 'resolve',
    target: string,
    access: 'read' | 'write',
    message: string,
    signal: AbortSignal,
  ): Promise<never> =>
    refuseUndeclared(
      deps.gate,
      { principal: id.principal, kind, toolName: id.name, revision: id.revision, target, access },
      message,
      signal,
    );
  /** An audited refusal of what this host does not offer (list `host`). */
  const unavailable = (
    kind: 'storage' | 'subtasks' | 'resolve' | 'secret',
    target: string,
    access: 'read' | 'write',
    what: string,
    signal: AbortSignal,
    code?: 'E_SECRET_DENIED',
  ): Promise<never> =>
    refuseUnavailable(
      deps.gate,
      { principal: id.principal, kind, toolName: id.name, revision: id.revision, target, access },
      `${what} ${kind === 'secret' ? 'are' : 'is'} not available on this host`,
      signal,
      code,
    );
  const storageDeclared = async (op: string, access: 'read' | 'write', signal: AbortSignal): Promise<void> => {
    if (!caps?.storage)
      await undeclared(
        'storage',
        op,
        access,
        `${id.name} does not request storage in its manifest (capabilities.storage)`,
        signal,
      );
  };
  const table: Record<CapabilityName, Entry> = Object.assign(Object.create(null) as Record<CapabilityName, Entry>, {
    fetch: (p: unknown, s: AbortSignal) => deps.fetch(id, p, s),

    createSubtasksResult: async (p: unknown, s: AbortSignal) => {
      if (!deps.compile) return unavailable('subtasks', 'createSubtasksResult', 'write', 'createSubtasksResult', s);
      if (caps?.subtasks !== true)
        await undeclared(
          'subtasks',
          'createSubtasksResult',
          'write',
          `${id.name} does not request subtasks in its manifest (capabilities.subtasks)`,
          s,
        );
      const drafts = Array.isArray(p) ? p : field(p, 'drafts');
      if (!Array.isArray(drafts))
        throw new TyError('E_INVALID_TASK', 'createSubtasksResult needs an array of draft tasks');
      return deps.compile(drafts);
    },

    resolveInvocation: async (p: unknown, s: AbortSignal) => {
      const name = field(p, 'name');
      if (typeof name !== 'string') throw new TyError('E_INVALID_ARGS', 'resolveInvocation needs a tool name');
      if (!deps.registry) return unavailable('resolve', name.slice(0, 64), 'read', 'resolveInvocation', s);
      if (!(caps?.resolveInvocation ?? []).includes(name)) {
        await undeclared(
          'resolve',
          name.slice(0, 64),
          'read',
          `${id.name} does not list "${name.slice(0, 64)}" in capabilities.resolveInvocation`,
          s,
        );
      }
      const tool = await deps.registry.resolve(name);
      const settingsRevision = deps.settingsRevisionOf
        ? await deps.settingsRevisionOf(tool.name, tool.revision)
        : undefined;
      // Opaque ids only: never the manifest, never settings values.
      return settingsRevision === undefined
        ? { toolRevision: tool.revision }
        : { toolRevision: tool.revision, settingsRevision };
    },

    'storage.get': async (p: unknown, s: AbortSignal) => {
      if (!deps.storage) return unavailable('storage', 'get', 'read', 'storage', s);
      await storageDeclared('get', 'read', s);
      return deps.storage.get(id, field(p, 'key'));
    },
    'storage.set': async (p: unknown, s: AbortSignal) => {
      if (!deps.storage) return unavailable('storage', 'set', 'write', 'storage', s);
      await storageDeclared('set', 'write', s);
      await deps.storage.set(
        id,
        field(p, 'key'),
        p !== null && typeof p === 'object' ? (p as Record<string, unknown>).value : undefined,
      );
      return null;
    },
    'storage.delete': async (p: unknown, s: AbortSignal) => {
      if (!deps.storage) return unavailable('storage', 'delete', 'write', 'storage', s);
      await storageDeclared('delete', 'write', s);
      return deps.storage.delete(id, field(p, 'key'));
    },
    'storage.list': async (p: unknown, s: AbortSignal) => {
      if (!deps.storage) return unavailable('storage', 'list', 'read', 'storage', s);
      await storageDeclared('list', 'read', s);
      return deps.storage.list(id, p === undefined || p === null ? undefined : field(p, 'prefix'));
    },

    getSecret: async (p: unknown, s: AbortSignal) => {
      if (!deps.secrets) {
        // without a broker (which audits every use itself), an undeclared name is still an audited manifest refusal
        const name = field(p, 'name');
        if (typeof name === 'string' && !(caps?.secrets ?? []).includes(name)) {
          const shown = name.slice(0, 64);
          await refuseUndeclared(
            deps.gate,
            {
              principal: id.principal,
              kind: 'secret',
              toolName: id.name,
              revision: id.revision,
              target: shown,
              access: 'read',
            },
            `secret "${shown}" is not declared in ${id.name}'s manifest (capabilities.secrets)`,
            s,
            'E_SECRET_DENIED',
          );
        }
        return unavailable(
          'secret',
          typeof name === 'string' ? name.slice(0, 64) : '',
          'read',
          'secrets',
          s,
          'E_SECRET_DENIED',
        );
      }
      return deps.secrets.getSecret(id, field(p, 'name'));
    },
  });

  return async (name, params, signal) => {
    if (typeof name !== 'string' || !(CAPABILITY_NAMES as readonly string[]).includes(name)) {
      throw new TyError('E_CAPABILITY_DENIED', `unknown capability "${String(name).slice(0, 64)}"`);
    }
    const entry = table[name];
    if (typeof entry !== 'function') throw new TyError('E_CAPABILITY_DENIED', `unknown capability "${name}"`);
    if (signal.aborted) throw new TyError('E_ABORTED', 'the call was cancelled');
    return entry(params, signal);
  };
}

export interface CapabilityFactoryOptions {
  store: Store;
  registry: ToolRegistry;
  gate: Gate;
  /** The host's network stack (node/fetch.ts NodeFetchTransport on Node). */
  transport: FetchTransport;
  /** Where secret values live (node/store/secrets.ts SecretsFile on Node); absent: secrets are refused. */
  secretValues?: SecretValues;
  fetchLimits?: Partial<FetchLimits>;
  /**
   * Per-tool settings (core/revisions/settings.ts): pins settings revisions in subtasks and answers resolveInvocation.
   */
  settings?: Pick<ToolSettings, 'revisionOf' | 'pin'>;
  settingsRevisionOf?: CapabilityDeps['settingsRevisionOf'];
  /** Where secret uses are audited (default: the store's audit log, core/audit/trail.ts StoreAuditLog). */
  audit?: AuditSink;
}

/**
 * Wire every capability for a host: one mediated fetch, per-revision storage and secret grants in `store`,
 * subtasks compiled against `registry`, every secret use audited (`audit`). Returns the `(identity) =>
 * CapabilityHandler` factory the invoker
 * takes (core/exec/invoke.ts InvokerOptions.capabilities).
 */
export function capabilityFactory(o: CapabilityFactoryOptions): (identity: CallerIdentity) => CapabilityHandler {
  const broker = o.secretValues
    ? new SecretBroker(new SecretGrants(o.store), o.secretValues, { audit: o.audit ?? new StoreAuditLog(o.store) })
    : undefined;
  const fetch = createMediatedFetch({
    gate: o.gate,
    transport: o.transport,
    ...(broker ? { secrets: broker } : {}),
    ...(o.fetchLimits ? { limits: o.fetchLimits } : {}),
  });
  const storage = new ToolStorage(o.store);
  return (identity) =>
    createCapabilityHandler({
      identity,
      gate: o.gate,
      fetch,
      storage,
      registry: o.registry,
      // core/revisions/tasks.ts (and the task schemas) load with the first subtask request, not with every host
      compile: (drafts) =>
        import('../revisions/tasks.js').then(({ compileDrafts }) =>
          compileDrafts(drafts, o.settings ? { registry: o.registry, settings: o.settings } : { registry: o.registry }),
        ),
      ...(broker ? { secrets: broker } : {}),
      ...(o.settingsRevisionOf
        ? { settingsRevisionOf: o.settingsRevisionOf }
        : o.settings
          ? { settingsRevisionOf: (n: string, r: string) => o.settings!.revisionOf(n, r) }
          : {}),
    });
}
