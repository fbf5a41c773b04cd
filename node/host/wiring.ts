// The Node host's default gate and capability wiring: the permission gate over the settings files and flags, mediated
// fetch, storage, secrets and subtasks per call identity; Node host, trusted side.
import type { Asker } from '../../core/ask/router.js';
import { StoreAuditLog } from '../../core/audit/trail.js';
import type { FetchTransport } from '../../core/capabilities/fetch/mediated.js';
import type { ToolIdentity } from '../../core/exec/invoke.js';
import type { CapabilityHandler, Gate } from '../../core/exec/runtime.js';
import type { ToolSettings } from '../../core/revisions/settings.js';
import type { Store } from '../../core/store/contract.js';
import type { LoadedSettings } from '../settings/load.js';
import type { OpenedStore } from '../store/open.js';
import type { TycliPaths } from '../store/paths.js';
import type { HostToolRegistry } from './builtin-tools.js';
import type { NodeHostOptions } from './options.js';

/** What the wiring is built from: the host's options, store, registry and tool settings, its settings and asker. */
export interface WiringInputs {
  opts: NodeHostOptions;
  paths: TycliPaths;
  store: Store;
  opened: OpenedStore;
  registry: HostToolRegistry;
  settings: LoadedSettings;
  /** Loads the settings again (the gate follows edits of the settings files). */
  reloadSettings?: () => Promise<LoadedSettings>;
  asker: Asker;
  toolSettings: ToolSettings;
}

/** The gate, the capability handler factory and what closes them (the fetch transport, if one was built). */
export interface Wiring {
  gate: Gate;
  capabilities: (identity: ToolIdentity) => CapabilityHandler;
  /** The secret values stored when the host opened (knownSecretValues), to withhold from a tool's own text. */
  withheld: () => string[];
  close(): Promise<void>;
}

/**
 * The default gate and capabilities (see createNodeHost): opts.gate, else node/settings/load.ts createNodeGate over
 * the settings and the asker, with the stored secret values withheld from foreign text (previews, hooks); a capability
 * handler per call identity over mediated fetch (undici loaded on the first fetch), per-revision storage, the secrets
 * broker, the registry and subtasks.
 */
export async function wireGateAndCapabilities(inputs: WiringInputs): Promise<Wiring> {
  const { opts, store, opened, registry, settings, asker, toolSettings } = inputs;
  const [
    { createNodeGate },
    { createCapabilityHandler },
    { createMediatedFetch },
    { ToolStorage },
    { SecretBroker, SecretGrants },
  ] = await Promise.all([
    import('../settings/load.js'),
    import('../../core/capabilities/handler.js'),
    import('../../core/capabilities/fetch/mediated.js'),
    import('../../core/capabilities/storage.js'),
    import('../../core/capabilities/secrets.js'),
  ]);
  const cwd = opts.cwd ?? process.cwd();
  // the 0600 secrets file, or sealed rows in PostgreSQL (node/store/open.ts)
  const secretsFile = opened.secrets;
  const withheld = await knownSecretValues(secretsFile);
  // An injected gate is used by the capabilities too, so one session's decisions cover both.
  const gate =
    opts.gate ??
    createNodeGate({
      store,
      settings,
      asker,
      withheld,
      cwd,
      ...(opts.env ? { env: opts.env } : {}),
      ...(opts.tracer ? { tracer: opts.tracer } : {}),
      ...(inputs.reloadSettings ? { reload: inputs.reloadSettings } : {}),
    });
  // Secret uses are audited by the broker itself (core/capabilities/secrets.ts): a grant is already a person's
  // decision, so no question.
  const broker = new SecretBroker(new SecretGrants(store), secretsFile, { audit: new StoreAuditLog(store) });
  const transport = lazyFetchTransport();
  const fetch = createMediatedFetch({ gate, transport, secrets: broker });
  const storage = new ToolStorage(store);
  const capabilities = (identity: ToolIdentity): CapabilityHandler =>
    createCapabilityHandler({
      identity,
      gate,
      fetch,
      storage,
      secrets: broker,
      registry,
      // core/revisions/tasks.ts (and the task schemas) load with the first subtask request
      compile: (drafts) =>
        import('../../core/revisions/tasks.js').then(({ compileDrafts }) =>
          compileDrafts(drafts, { registry, settings: toolSettings }),
        ),
      settingsRevisionOf: (name, revision) => toolSettings.revisionOf(name, revision),
    });
  const close = () => transport.close();
  return { gate, capabilities, withheld, close };
}

/**
 * node/fetch.ts's NodeFetchTransport (undici: about a hundred modules) built on a tool's first fetch request, so a
 * call that never fetches never loads it. `close()` closes it if it was built.
 */
function lazyFetchTransport(): FetchTransport & { close(): Promise<void> } {
  let made: Promise<FetchTransport> | undefined;
  return {
    request(req, limits, signal) {
      made ??= import('../fetch.js').then(({ NodeFetchTransport }) => new NodeFetchTransport());
      return made.then((t) => t.request(req, limits, signal));
    },
    async close() {
      const t = await made?.catch(() => undefined);
      await (t as { close?: () => Promise<void> } | undefined)?.close?.();
    },
  };
}

/**
 * The secret values stored now, as the `withheld` source of a gate: withheld as whole tokens from text the host did
 * not write (question previews, hook input, a tool's own error text; core/capabilities/withhold.ts), never searched for
 * in audit records, which are built from names. Read once per process.
 */
export async function knownSecretValues(secretsFile: {
  names(): Promise<string[]>;
  get(name: string): Promise<string | undefined>;
}): Promise<() => string[]> {
  const known: string[] = [];
  for (const name of await secretsFile.names().catch(() => [] as string[])) {
    const v = await secretsFile.get(name).catch(() => undefined);
    if (v) known.push(v);
  }
  return () => known;
}
