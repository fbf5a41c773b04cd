// The Node host assembled in named steps: open the store, offer the built-in python tool, build the pool (prestarting
// `tycli run`'s sandbox), wire the gate and capabilities, bridge MCP servers, then the invoker; Node host, trusted
// side.
import { join } from 'node:path';
import { Store } from '../../core/store/contract.js';
import type { Asker } from '../../core/ask/router.js';
import { Invoker, MAX_LIMITS, effectiveLimits, type InvokerOptions } from '../../core/exec/invoke.js';
import { TyError } from '../../core/errors.js';
import { DEFAULT_LIMITS, type Gate } from '../../core/exec/runtime.js';
import type { StoreBackend } from '../../core/store/contract.js';
import { openTycliStore, type OpenedStore } from '../store/open.js';
import { tycliPaths, type TycliPaths } from '../store/paths.js';
import { settleAppenders } from '../store/append.js';
import type { ExternalCaller } from '../mcp/external.js';
import { HostToolRegistry } from './builtin-tools.js';
import { ToolSettings } from '../../core/revisions/settings.js';
import { StoreAuditLog } from '../../core/audit/trail.js';
import { RefusalTally } from '../../core/audit/refusals.js';
import { ChangeAudit } from '../../core/audit/change.js';
import { hostIdentity } from '../process/identity.js';
import { withholdTokens } from '../../core/capabilities/withhold.js';
import type { LoadedSettings } from '../settings/load.js';
import { python3OnPath, pythonToolManifest } from '../python/native-tool.js';
import { PROBE_CACHE_FILE, buildPool, type HostPool } from './pool.js';
import { idleBound, memoryBudget, queueBound, type NodeHostOptions } from './options.js';
import { wireGateAndCapabilities, type Wiring } from './wiring.js';
import { pythonNative } from './builtin-python.js';

export interface NodeHost {
  paths: TycliPaths;
  store: Store;
  /** Which store (files or PostgreSQL), its secrets, instance session, audit liveness and waiting questions. */
  opened: OpenedStore;
  registry: HostToolRegistry;
  invoker: Invoker;
  /** Per-tool settings revisions (core/revisions/settings.ts); every change audited. */
  settings: ToolSettings;
  /** The permission gate calls pass (absent when opened without runtimes and no gate was given). */
  gate: Gate | undefined;
  /** Live figures for metrics: sandboxes alive, calls admitted and not yet answered, questions waiting for a person. */
  gauges: { sandboxesAlive(): number; queueDepth(): number; asksPending(): number };
  /**
   * Admission refusals (E_BUSY) of this host's invoker, and of the front ends that share it (the registration
   * protocol), audited in aggregate per principal and second; written out by close() at the latest.
   */
  refusals: RefusalTally;
  /**
   * Audits a person's changes outside calls (tool add, activate, remove, gc; secret set, grant, revoke, delete) as an
   * intent record before and a completion record after, like the calls the gate audits.
   */
  changes: ChangeAudit;
  /** Destroy every sandbox this host started. Idempotent. */
  close(): Promise<void>;
}

/**
 * Assemble the Node host. Creates `<home>` and `<home>/store` (0700). When `startSandboxes` is not false
 * (the commands that run tools), also: settings (user/project/local files + --allow/--deny/--mode flags,
 * node/settings/load.ts) -> asker (terminal + waiting-question store) -> PermissionGate with audit, pause and
 * decisions -> capability handler per call identity (mediated fetch over NodeFetchTransport, per-revision
 * storage, secrets broker, invocation lookup, subtasks) -> MCP bridge for external-service tools -> sandbox
 * pool. Each can be replaced by an option. The registry is a HostToolRegistry: when a `python3` is on PATH
 * (cheap check, no process started) it offers the built-in native `python` tool in memory (offerPython).
 * @throws TyError E_INVALID_SETTINGS (a settings file), E_USAGE (a bad flag rule),
 *   E_SANDBOX_UNAVAILABLE (`--sandbox required` and no working OS sandbox).
 */
export async function createNodeHost(opts: NodeHostOptions): Promise<NodeHost> {
  const host = await openStore(opts);
  const invokerOpts: InvokerOptions = {
    registry: host.registry,
    settings: host.toolSettings,
    principal: opts.principal ?? 'cli:user',
    maxQueuedCalls: queueBound(opts),
    ...(opts.tracer ? { tracer: opts.tracer } : {}),
    ...(opts.observe ? { observe: opts.observe } : {}),
    byteLength: utf8Bytes,
    refusals: host.refusals,
  };
  await offerPython(host);
  if (host.running) Object.assign(invokerOpts, await startRuntimes(host));
  else {
    if (opts.gate) invokerOpts.gate = opts.gate;
    if (opts.capabilities) invokerOpts.capabilities = opts.capabilities;
    if (opts.pool) invokerOpts.pool = opts.pool;
  }
  if (opts.external) invokerOpts.external = opts.external;
  return hostOf(host, new Invoker(invokerOpts), invokerOpts.gate);
}

/**
 * What the assembly steps share: the options, the opened store with its registry and tool settings, what to close
 * with the host, and the settings files and the asker, each loaded once on first need (the pool, the gate wiring and
 * the python tool may ask for both at once).
 */
class HostAssembly {
  readonly env: NodeJS.ProcessEnv;
  /** False for a host opened without runtimes (opts.startSandboxes false). */
  readonly running: boolean;
  readonly registry: HostToolRegistry;
  readonly toolSettings: ToolSettings;
  readonly refusals: RefusalTally;
  readonly changes: ChangeAudit;
  /** Secret values known to the host once its gate is wired (node/host/wiring.ts); none before. */
  withheld: () => string[] = () => [];
  /** Run, all at once, by the host's close(). */
  readonly closers: (() => Promise<void>)[] = [];
  /** Run after `closers` (the store: sandboxes and calls first). */
  readonly lastClosers: (() => Promise<void>)[] = [];
  #settings: Promise<LoadedSettings> | undefined;
  #asker: Promise<Asker> | undefined;
  /** The asker once made (for its pending count), and the pool once built (for its sandboxes). */
  madeAsker: Asker | undefined;
  pool: { aliveCount(): number } | undefined;

  readonly backend: StoreBackend;
  readonly store: Store;

  constructor(
    readonly opts: NodeHostOptions,
    readonly paths: TycliPaths,
    readonly opened: OpenedStore,
  ) {
    this.backend = opened.backend;
    this.store = new Store(opened.backend);
    this.env = opts.env ?? process.env;
    this.running = opts.startSandboxes !== false;
    this.registry = new HostToolRegistry(this.store);
    const audit = new StoreAuditLog(this.store);
    this.toolSettings = new ToolSettings(this.store, { audit, hostId: hostIdentity() });
    this.refusals = new RefusalTally(audit);
    this.changes = new ChangeAudit(audit, { hostId: hostIdentity() });
    if (opts.asker) this.#asker = Promise.resolve(opts.asker);
  }

  /**
   * The settings files merged with the flags (node/settings/load.ts), loaded once. Each warning about a project or
   * local file that weakens isolation or policy is written to stderr, one line each (paths made inert).
   * @throws TyError E_INVALID_SETTINGS, E_USAGE (a bad flag rule)
   */
  settings(): Promise<LoadedSettings> {
    this.#settings ??= this.loadSettings();
    return this.#settings;
  }

  /**
   * Load the settings files merged with the flags now (a reload: the gate of a long-lived host follows edits), each
   * warning written to stderr as at start. @throws TyError E_INVALID_SETTINGS, E_USAGE (a bad flag rule)
   */
  loadSettings(): Promise<LoadedSettings> {
    return (async () => {
      const { loadSettings } = await import('../settings/load.js');
      const g = this.opts.globals ?? {};
      const loaded = await loadSettings({
        home: this.paths.home,
        cwd: this.opts.cwd ?? process.cwd(),
        flags: { allow: g.allow ?? [], deny: g.deny ?? [], mode: g.mode },
      });
      const io = this.opts.io;
      if (io && loaded.warnings.length > 0) {
        const { sanitizeInline } = await import('../../core/ask/text.js');
        for (const w of loaded.warnings) io.stderr.write(`${sanitizeInline(w)}\n`);
      }
      return loaded;
    })();
  }

  /** opts.asker, else the terminal, desktop dialog and waiting-question store (node/ask/channels.ts), made once. */
  asker(): Promise<Asker> {
    this.#asker ??= (async () => {
      const { createNodeAsker } = await import('../ask/channels.js');
      const loaded = await this.settings();
      const made = createNodeAsker({
        home: this.paths.home,
        questions: await this.opened.questions(),
        askWaitMs: loaded.askWaitMs,
        terminal: true,
        dialog: loaded.askDialog,
        env: this.env,
      });
      this.madeAsker = made;
      return made;
    })();
    return this.#asker;
  }
}

/**
 * Step 1: the store (opts.store, else node/store/open.ts openTycliStore: `<home>/store`, 0700, or PostgreSQL by
 * TYCLI_STORE / store.url), the registry and tool settings. A store opened here is closed with the host, after
 * everything else.
 * @throws TyError E_USAGE (a bad store URL), E_STORE (the database unreachable or its schema to migrate)
 */
async function openStore(opts: NodeHostOptions): Promise<HostAssembly> {
  const paths = tycliPaths(opts.home);
  const opened = opts.store ?? (await openTycliStore({ home: opts.home, env: opts.env ?? process.env }));
  // What a tool logs is its own text: known secret values are withheld from it (as whole tokens) before any front end
  // (tycli run --logs, the protocol's $/log) sees it.
  const onToolLog = opts.onToolLog;
  let host: HostAssembly | undefined;
  const own: NodeHostOptions = onToolLog
    ? { ...opts, onToolLog: (rev, level, text) => onToolLog(rev, level, withholdTokens(text, host?.withheld() ?? [])) }
    : opts;
  host = new HostAssembly(own, paths, opened);
  if (!opts.store) host.lastClosers.push(() => opened.close());
  // a host that runs calls registers itself (PostgreSQL): its `started` records read as interrupted once it is gone,
  // and its questions wait while it lives
  if (host.running && opened.kind === 'postgres') {
    try {
      await opened.session();
    } catch (e) {
      if (!opts.store) await opened.close();
      throw e;
    }
  }
  return host;
}

/**
 * Step 2: the built-in `python` tool (node/host/builtin-python.ts), held in memory by the registry: offered unless
 * opts.python is false, when given an interpreter or when a python3 is on PATH (a cheap check, no process started).
 * A host opened without runtimes lists it and refuses to run it.
 */
async function offerPython(host: HostAssembly): Promise<void> {
  const { opts, env } = host;
  if (opts.python === false || (opts.python === undefined && !python3OnPath(env))) return;
  const fn = host.running
    ? pythonNative({
        opts,
        env,
        python: opts.python,
        settings: () => host.settings(),
        asker: () => host.asker(),
        revision: () => pythonRevision,
        record: (r) => new StoreAuditLog(host.store).append(r),
      })
    : async () => {
        throw new TyError('E_SANDBOX_UNAVAILABLE', 'this host was opened without runtimes');
      };
  const pythonRevision = await host.registry.addBuiltin(pythonToolManifest(), fn);
}

/**
 * Step 3, for a host that runs tools: the pool (opts.pool, else openPool) and the gate and capabilities (opts.gate and
 * opts.capabilities, else wireGateAndCapabilities), then the MCP bridge (opts.external, else mcpExternal). The pool
 * is built first, so that a prestarted sandbox (prestartSandbox) is spawned before the wiring's modules load on the
 * one host thread, and boots meanwhile. A failure of either closes what the other opened; a wiring failure is
 * reported first, as when the wiring came first.
 */
async function startRuntimes(
  host: HostAssembly,
): Promise<Pick<InvokerOptions, 'gate' | 'capabilities' | 'external' | 'pool'>> {
  const { opts } = host;
  const wiring = !opts.gate || !opts.capabilities;
  const poolP = opts.pool ? undefined : openPool(host, wiring);
  const wiredP = wiring
    ? (async (): Promise<Wiring> => {
        await poolP?.catch(() => undefined);
        return wireGateAndCapabilities({
          opts,
          paths: host.paths,
          store: host.store,
          opened: host.opened,
          registry: host.registry,
          settings: await host.settings(),
          reloadSettings: () => host.loadSettings(),
          asker: await host.asker(),
          toolSettings: host.toolSettings,
        });
      })()
    : undefined;
  const [wired, pool] = await Promise.allSettled([wiredP, poolP]);
  if (wired.status === 'rejected' || pool.status === 'rejected') {
    await Promise.allSettled([
      wired.status === 'fulfilled' ? wired.value?.close() : undefined,
      pool.status === 'fulfilled' ? pool.value?.close() : undefined,
    ]);
    throw wired.status === 'rejected' ? wired.reason : (pool as PromiseRejectedResult).reason;
  }
  const parts: Pick<InvokerOptions, 'gate' | 'capabilities' | 'external' | 'pool'> = {
    gate: opts.gate ?? wired.value?.gate,
    capabilities: opts.capabilities ?? wired.value?.capabilities,
  };
  if (wired.value) {
    host.closers.push(wired.value.close);
    host.withheld = wired.value.withheld;
  }
  if (!opts.external) {
    const bridge = mcpExternal(host.paths.home, parts.gate);
    parts.external = bridge.external;
    host.closers.push(bridge.close);
  }
  if (opts.pool) parts.pool = opts.pool;
  else if (pool.value) {
    const built = pool.value;
    host.pool = built;
    host.closers.push(() => built.close());
    parts.pool = built;
  }
  return parts;
}

/**
 * The sandbox pool (node/host/pool.ts) under the posture: --sandbox, else the settings' `sandbox` (when the wiring
 * loads them anyway), else `auto`; then prestartSandbox.
 * @throws TyError E_SANDBOX_UNAVAILABLE (`required` and no working OS sandbox), E_USAGE (a bad memory budget)
 */
async function openPool(host: HostAssembly, wiring: boolean): Promise<HostPool> {
  const { opts } = host;
  const posture = opts.globals?.sandbox ?? (wiring ? (await host.settings()).sandbox : undefined) ?? 'auto';
  const probeCache = join(host.paths.state, PROBE_CACHE_FILE);
  const pool = await buildPool(opts, posture, host.store, probeCache, memoryBudget(opts), idleBound(opts));
  await prestartSandbox(host, pool);
  return pool;
}

/**
 * The prestart of `tycli run` (opts.prestart), all of it but its ordering (startRuntimes builds the pool first): the
 * revision the call will resolve to (re-hashed on read, then kept verified for the call's own resolve) and the call's
 * limits decide the sandbox's command line; the pool's runtime spawns that sandbox empty (the bare runner: no tool
 * code, arguments, secrets or grants; node/sandbox/runtime.ts prestart) while the call is resolved, validated, gated
 * and its intent audited. The call adopts it when its sandbox has exactly that command line; the pool's close() kills
 * and reaps it otherwise, refusals included. An unknown name or another kind of tool starts nothing: the call
 * reports it.
 */
async function prestartSandbox(host: HostAssembly, pool: HostPool): Promise<void> {
  const want = host.opts.prestart;
  if (!want) return;
  const tool = await host.registry.resolve(want.tool).catch(() => undefined);
  if (tool?.manifest.execution.kind !== 'sandboxed-code') return;
  pool.prestart({
    revision: tool.revision,
    manifest: tool.manifest,
    limits: effectiveLimits(tool.manifest, DEFAULT_LIMITS, MAX_LIMITS, want.timeoutMs),
    // the quickjs engine starts the principal's sandbox host process, which the call's sandbox then joins
    principal: host.opts.principal ?? 'cli:user',
  });
}

/**
 * The MCP bridge (node/mcp/external.ts) for external-service revisions, under `gate`, loaded on first use. A revision
 * that the page embedding the browser app executes (transport "parent") is refused: there is no such page here.
 */
function mcpExternal(
  home: string,
  gate: Gate | undefined,
): { external: NonNullable<InvokerOptions['external']>; close(): Promise<void> } {
  let ext: ExternalCaller | undefined;
  return {
    external: async (identity, args, signal) => {
      const exec = identity.manifest.execution;
      if (exec.kind === 'external-service' && exec.transport === 'parent') {
        throw new TyError(
          'E_SANDBOX_UNAVAILABLE',
          `${identity.name} is executed by the page embedding the browser app (execution.transport "parent"); the command line has no such page`,
        );
      }
      if (!ext) {
        const { createMcpExternal } = await import('../mcp/external.js');
        ext = createMcpExternal(home, { gate });
      }
      return ext(identity, args, signal);
    },
    close: async () => ext?.close(),
  };
}

/** Node's native UTF-8 byte count (the argument and result caps' measure). */
const utf8Bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/**
 * Step 4: the NodeHost over the assembled parts; close() runs every closer at once, the first time only, then makes
 * the audit records still waiting for their group commit (the last calls' completion records) durable.
 */
function hostOf(host: HostAssembly, invoker: Invoker, gate: Gate | undefined): NodeHost {
  let closed = false;
  return {
    paths: host.paths,
    store: host.store,
    opened: host.opened,
    registry: host.registry,
    invoker,
    settings: host.toolSettings,
    gate,
    gauges: {
      sandboxesAlive: () => host.pool?.aliveCount() ?? 0,
      queueDepth: () => invoker.inFlight,
      asksPending: () => (host.madeAsker as { pending?: number } | undefined)?.pending ?? 0,
    },
    refusals: host.refusals,
    changes: host.changes,
    async close() {
      if (closed) return;
      closed = true;
      // the refusal tally is written before the store closes
      await Promise.allSettled([...host.closers.map((c) => c()), host.refusals.flush()]);
      await settleAppenders();
      await Promise.allSettled(host.lastClosers.map((c) => c()));
    },
  };
}
