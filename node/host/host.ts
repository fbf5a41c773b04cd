// The Node host assembled: file store + registry + sandbox runtimes + pool + invoker; Node host, trusted side.
import { join } from 'node:path';
import { Store } from '../../core/store/contract.js';
import type { Asker } from '../../core/ask/router.js';
import {
  DEFAULT_MAX_QUEUED_CALLS,
  Invoker,
  type InvokerOptions,
  type PoolLike,
  type ToolIdentity,
} from '../../core/exec/invoke.js';
import { TyError } from '../../core/errors.js';
import type { CapabilityHandler, Gate } from '../../core/exec/runtime.js';
import type { FetchTransport } from '../../core/capabilities/fetch/mediated.js';
import type { CliIO, GlobalOptions } from '../cli/types.js';
import { FileStoreBackend } from '../store/file-store.js';
import { ensurePrivateDir, tycliPaths, type TycliPaths } from '../store/paths.js';
import type { NodeSandboxRuntimeOptions, SpawnWrapper } from '../sandbox/runtime.js';
import type { ExternalCaller } from '../mcp/external.js';
import { HostToolRegistry } from './builtin-tools.js';
import { ToolSettings } from '../../core/revisions/settings.js';
import { StoreAuditLog, type AuditRecord } from '../../core/audit/trail.js';
import type { LoadedSettings } from '../settings/load.js';
import { python3OnPath, pythonToolManifest, type PythonInfo } from '../python/native-tool.js';
import { PROBE_CACHE_FILE, buildPool } from './pool.js';

export interface NodeHostOptions {
  /** The state root (node/store/paths.ts resolveHome). */
  home: string;
  /** CLI flags: --allow/--deny/--mode feed the gate, --sandbox the OS wrapper posture. */
  globals?: Partial<GlobalOptions>;
  io?: CliIO;
  env?: NodeJS.ProcessEnv;
  /** Working folder: where project settings (.tycli/) are looked for and hooks run (default process.cwd()). */
  cwd?: string;
  /** False for commands that never run code (tool add/list/show): no runtimes are created. Default true. */
  startSandboxes?: boolean;
  /**
   * Permission gate; default: node/settings/load.ts createNodeGate over the settings files and --allow/--deny/--mode.
   */
  gate?: Gate;
  /**
   * Capability handler factory per call identity; default: core/capabilities/handler.ts over mediated fetch, storage,
   * secrets, registry, subtasks.
   */
  capabilities?: (identity: ToolIdentity) => CapabilityHandler;
  /**
   * Bridge for external-service tools; default when running: the MCP bridge (node/mcp/external.ts) under the same gate.
   */
  external?: InvokerOptions['external'];
  /**
   * OS-level wrapper for sandbox processes; when absent, chosen from the posture (--sandbox / settings) by probing
   * node/os-sandbox.
   */
  wrap?: SpawnWrapper;
  /** Use this pool instead of building one (tests, embedders). */
  pool?: PoolLike;
  /** Principal for audit and rules (default `cli:user`). */
  principal?: string;
  /** Receives what tool code writes with console.* (text from the sandbox: make it inert before display). */
  onToolLog?: (revision: string, level: 'debug' | 'info' | 'warn' | 'error', text: string) => void;
  /**
   * Told when a sandbox starts loading Pyodide for a Python revision and when it is done (a terminal progress line).
   */
  onStartProgress?: NodeSandboxRuntimeOptions['onStartProgress'];
  /**
   * Asks a person (the python tool's session approval; the default gate's questions). Default: terminal +
   * waiting-question store.
   */
  asker?: Asker;
  /**
   * The built-in `python` tool (trusted-native, node/python/native-tool.ts): `false` never offers it; a PythonInfo
   * uses that interpreter. Default: offered when a `python3` is on PATH (env), detected on first use.
   */
  python?: PythonInfo | false;
  /**
   * Admission control: most calls in flight on this host at once; beyond it a call gets E_BUSY (core/exec/invoke.ts).
   * Default: $TYCLI_MAX_QUEUED_CALLS (env), else DEFAULT_MAX_QUEUED_CALLS (1024).
   */
  maxQueuedCalls?: number;
  /**
   * Memory budget for the retained sandboxes of this host, MiB: each is charged its data limit (heap cap plus the
   * engine's margin, node/os-sandbox/limits.ts dataLimitMb); past it the least recently used idle ones are
   * destroyed. Default: $TYCLI_MEMORY_BUDGET_MB, else DEFAULT_MEMORY_BUDGET_MB (4096).
   */
  memoryBudgetMb?: number;
  /** Most retained sandboxes at once (core/exec/pool.ts, default 16: the least recently used idle one goes first). */
  maxRetained?: number;
  /** A retained sandbox idle this long is destroyed, ms (core/exec/pool.ts, default 600 000; 0: never). */
  idleMs?: number;
  /**
   * Start the sandbox process of `tool` (NAME or NAME@REV; `timeoutMs` the call's --timeout) while the host is still
   * being assembled and the call resolved, validated, gated and its intent audited (`tycli run`): an empty runner,
   * no tool code, arguments, secrets or grants (node/sandbox/runtime.ts prestart). The call adopts it when its sandbox
   * has
   * exactly that command line; close() kills and reaps it otherwise, refusals included.
   */
  prestart?: { tool: string; timeoutMs?: number };
}

/** Default host-wide memory budget for retained sandboxes, MiB (NodeHostOptions.memoryBudgetMb). */
export const DEFAULT_MEMORY_BUDGET_MB = 4096;

/**
 * `given`, else a positive integer (at most 9 digits) in the environment variable `name`, else `fallback`. @throws
 * TyError E_USAGE
 */
function boundFrom(
  opts: NodeHostOptions,
  given: number | undefined,
  name: string,
  fallback: number,
  what: string,
): number {
  if (given !== undefined) return given;
  const v = (opts.env ?? process.env)[name];
  if (v === undefined || v === '') return fallback;
  if (!/^[1-9]\d{0,8}$/.test(v)) throw new TyError('E_USAGE', `${name} must be a positive integer${what}`);
  return Number(v);
}

/**
 * The pool's memory budget: the option, else $TYCLI_MEMORY_BUDGET_MB, else the default (MiB). @throws TyError E_USAGE
 */
const memoryBudget = (opts: NodeHostOptions): number =>
  boundFrom(opts, opts.memoryBudgetMb, 'TYCLI_MEMORY_BUDGET_MB', DEFAULT_MEMORY_BUDGET_MB, ' (MiB)');

/** The host's admission bound: the option, else $TYCLI_MAX_QUEUED_CALLS, else the default. @throws TyError E_USAGE */
const queueBound = (opts: NodeHostOptions): number =>
  boundFrom(opts, opts.maxQueuedCalls, 'TYCLI_MAX_QUEUED_CALLS', DEFAULT_MAX_QUEUED_CALLS, '');

export interface NodeHost {
  paths: TycliPaths;
  store: Store;
  registry: HostToolRegistry;
  invoker: Invoker;
  /** Per-tool settings revisions (core/revisions/settings.ts); every change audited. */
  settings: ToolSettings;
  /** The permission gate calls pass (absent when opened without runtimes and no gate was given). */
  gate: Gate | undefined;
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
 * (cheap check, no process started) it offers the built-in native `python` tool in memory (see pythonNative).
 * @throws TyError E_INVALID_SETTINGS (a settings file), E_USAGE (a bad flag rule),
 *   E_SANDBOX_UNAVAILABLE (`--sandbox required` and no working OS sandbox).
 */
export async function createNodeHost(opts: NodeHostOptions): Promise<NodeHost> {
  const paths = tycliPaths(opts.home);
  await ensurePrivateDir(paths.home);
  await ensurePrivateDir(paths.store);
  const backend = new FileStoreBackend(paths.store);
  const store = new Store(backend);
  const registry = new HostToolRegistry(store);
  const running = opts.startSandboxes !== false;
  const toolSettings = new ToolSettings(store, { audit: new StoreAuditLog(store) });
  const invokerOpts: InvokerOptions = {
    registry,
    settings: toolSettings,
    principal: opts.principal ?? 'cli:user',
    maxQueuedCalls: queueBound(opts),
  };
  const closers: (() => Promise<void>)[] = [];
  const env = opts.env ?? process.env;
  // Memoized promises: the gate wiring and the pool (built alongside) may ask for both at once.
  let settings: Promise<LoadedSettings> | undefined;
  let asker: Promise<Asker> | undefined = opts.asker ? Promise.resolve(opts.asker) : undefined;
  const loadHostSettings = (): Promise<LoadedSettings> =>
    (settings ??= (async () => {
      const { loadSettings } = await import('../settings/load.js');
      const g = opts.globals ?? {};
      const loaded = await loadSettings({
        home: paths.home,
        cwd: opts.cwd ?? process.cwd(),
        flags: { allow: g.allow ?? [], deny: g.deny ?? [], mode: g.mode },
      });
      // Project/local files that weaken isolation or policy: one line each on stderr, every run (paths made inert).
      if (opts.io && loaded.warnings.length > 0) {
        const { sanitizeInline } = await import('../../core/ask/text.js');
        for (const w of loaded.warnings) opts.io.stderr.write(`${sanitizeInline(w)}\n`);
      }
      return loaded;
    })());
  const hostAsker = (): Promise<Asker> =>
    (asker ??= (async () => {
      const { createNodeAsker } = await import('../ask/channels.js');
      const loaded = await loadHostSettings();
      return createNodeAsker({
        home: paths.home,
        askWaitMs: loaded.askWaitMs,
        terminal: true,
        dialog: loaded.askDialog,
        env,
      });
    })());

  if (opts.python !== false && (opts.python !== undefined || python3OnPath(env))) {
    const python = opts.python === undefined ? undefined : opts.python;
    const fn = running
      ? pythonNative({
          opts,
          env,
          python,
          settings: loadHostSettings,
          asker: hostAsker,
          revision: () => pythonRevision,
          record: (r) => new StoreAuditLog(store).append(r),
        })
      : async () => {
          throw new TyError('E_SANDBOX_UNAVAILABLE', 'this host was opened without runtimes');
        };
    const pythonRevision = await registry.addBuiltin(pythonToolManifest(), fn);
  }

  if (running) {
    let gate = opts.gate;
    let capabilities = opts.capabilities;
    const wiring = !gate || !capabilities;
    // The pool is built before the gate wiring, so that a prestarted sandbox (opts.prestart) boots meanwhile. A failure
    // of either closes what the other opened; a wiring failure is reported first, as when the wiring came first.
    const poolP = opts.pool
      ? undefined
      : (async () => {
          const posture = opts.globals?.sandbox ?? (wiring ? (await loadHostSettings()).sandbox : undefined) ?? 'auto';
          return buildPool(opts, posture, store, join(paths.state, PROBE_CACHE_FILE), registry, memoryBudget(opts));
        })();
    // The wiring's modules load once the pool is built: on the one host thread the prestarted sandbox is spawned first,
    // then boots on its own while they load.
    const wiredP = wiring
      ? (async () => {
          await poolP?.catch(() => undefined);
          return wireGateAndCapabilities(
            opts,
            paths,
            store,
            backend,
            registry,
            await loadHostSettings(),
            await hostAsker(),
            toolSettings,
          );
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
    if (wired.value) {
      gate ??= wired.value.gate;
      capabilities ??= wired.value.capabilities;
      closers.push(wired.value.close);
    }
    invokerOpts.gate = gate;
    invokerOpts.capabilities = capabilities;
    if (!opts.external) {
      // external-service revisions go to the MCP bridge (node/mcp/external.ts), loaded on first use.
      let ext: ExternalCaller | undefined;
      const mcpGate = gate;
      invokerOpts.external = async (identity, args, signal) => {
        const exec = identity.manifest.execution;
        if (exec.kind === 'external-service' && exec.transport === 'parent') {
          throw new TyError(
            'E_SANDBOX_UNAVAILABLE',
            `${identity.name} is executed by the page embedding the browser app (execution.transport "parent"); the command line has no such page`,
          );
        }
        if (!ext) {
          const { createMcpExternal } = await import('../mcp/external.js');
          ext = createMcpExternal(paths.home, { gate: mcpGate });
        }
        return ext(identity, args, signal);
      };
      closers.push(async () => ext?.close());
    }
    if (opts.pool) invokerOpts.pool = opts.pool;
    else if (pool.value) {
      const built = pool.value;
      closers.push(() => built.close());
      invokerOpts.pool = built;
    }
  } else {
    if (opts.gate) invokerOpts.gate = opts.gate;
    if (opts.capabilities) invokerOpts.capabilities = opts.capabilities;
    if (opts.pool) invokerOpts.pool = opts.pool;
  }
  if (opts.external) invokerOpts.external = opts.external;
  const invoker = new Invoker(invokerOpts);
  let closed = false;
  return {
    paths,
    store,
    registry,
    invoker,
    settings: toolSettings,
    gate: invokerOpts.gate,
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled(closers.map((c) => c()));
    },
  };
}

/** The default gate and capability wiring for the command line (see createNodeHost). */
async function wireGateAndCapabilities(
  opts: NodeHostOptions,
  paths: TycliPaths,
  store: Store,
  backend: FileStoreBackend,
  registry: HostToolRegistry,
  settings: LoadedSettings,
  asker: Asker,
  toolSettings: ToolSettings,
) {
  const [
    { createNodeGate },
    { createCapabilityHandler },
    { createMediatedFetch },
    { ToolStorage },
    { SecretBroker, SecretGrants },
    { SecretsFile },
  ] = await Promise.all([
    import('../settings/load.js'),
    import('../../core/capabilities/handler.js'),
    import('../../core/capabilities/fetch/mediated.js'),
    import('../../core/capabilities/storage.js'),
    import('../../core/capabilities/secrets.js'),
    import('../store/secrets.js'),
  ]);
  const cwd = opts.cwd ?? process.cwd();
  const secretsFile = new SecretsFile(paths.secretsFile, (fn) => backend.withLock('secrets-file', fn));
  const withheld = await knownSecretValues(secretsFile);
  // An injected gate is used by the capabilities too, so one session's decisions cover both.
  const gate =
    opts.gate ?? createNodeGate({ store, settings, asker, withheld, cwd, ...(opts.env ? { env: opts.env } : {}) });
  // Secret uses are audited by the broker itself (core/capabilities/secrets.ts): a grant is already a person's
  // decision, so no question.
  const broker = new SecretBroker(new SecretGrants(store), secretsFile, { audit: new StoreAuditLog(store, withheld) });
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
  return { gate, capabilities, close };
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
 * The native function behind the built-in `python` tool. On first call (then kept for the host's life, so
 * one approval covers the session): resolve the posture (--sandbox, else settings, else auto) and plan OS
 * isolation with system libraries (node/os-sandbox planIsolation); find python3 on PATH and, when the
 * sandbox runs as another uid (root CLI -> 65534), switch to a system interpreter that uid can reach
 * (pythonForSandbox); then a PythonTool whose approval follows the `python(*)` rules (deny / allow / ask
 * via the host's asker; mode default otherwise).
 * @throws TyError E_SANDBOX_UNAVAILABLE (required posture without a backend; no interpreter the sandbox
 *   user can reach), E_TOOL_FAILED (python3 does not answer), and PythonTool.run's errors.
 */
function pythonNative(o: {
  opts: NodeHostOptions;
  env: NodeJS.ProcessEnv;
  python: PythonInfo | undefined;
  settings: () => Promise<LoadedSettings>;
  asker: () => Promise<Asker>;
  revision: () => string;
  /** Appends one audit record durably (the approval decision, before any code runs). */
  record: (r: AuditRecord) => Promise<void>;
}): (args: unknown, ctx: unknown) => Promise<unknown> {
  let tool: Promise<import('../python/native-tool.js').PythonTool> | undefined;
  const build = async () => {
    const [
      { PythonTool, detectPython, pythonForSandbox },
      { resolvePosture, planIsolation, warnOnce },
      { probeSandbox },
      { decide },
    ] = await Promise.all([
      import('../python/native-tool.js'),
      import('../os-sandbox/posture.js'),
      import('../os-sandbox/probe.js'),
      import('../../core/policy/permissions.js'),
    ]);
    const settings = await o.settings();
    const posture = resolvePosture(o.opts.globals?.sandbox, settings.sandbox);
    let python = o.python ?? detectPython({ env: o.env });
    if (!python)
      throw new TyError(
        'E_TOOL_FAILED',
        'no working python3 was found on PATH (a python3 file is there but did not answer as Python 3)',
      );
    const options: import('../python/native-tool.js').PythonToolOptions = {
      python,
      asker: await o.asker(),
      policy: () => {
        const d = decide(settings.policy, { kind: 'python', toolName: 'python', revision: o.revision() });
        return { effect: d.effect, rule: d.trace.rule, scope: d.trace.scope };
      },
      // each approval decision leaves its own record (ALLOW / DENY naming the rule or the person), as the gate's do
      onDecision: (d, principal) =>
        o.record({
          v: 1,
          time: new Date().toISOString(),
          principal: principal ?? o.opts.principal ?? 'cli:user',
          tool: 'python',
          revision: o.revision(),
          kind: 'python',
          decision: d.allow ? 'allow' : 'deny',
          rule: d.rule,
          list: d.list,
          scope: d.scope,
          durationMs: 0,
          outcome: d.allow ? 'granted' : 'denied',
          ...(d.allow ? {} : { code: 'E_CAPABILITY_DENIED' as const }),
          ...(d.channel !== undefined ? { channel: d.channel } : {}),
        }),
    };
    if (o.opts.wrap) options.wrap = o.opts.wrap;
    else if (posture !== 'off') {
      const probe = await probeSandbox();
      const plan = planIsolation(posture, probe, { libraries: 'system', runtimes: ['python'] });
      if (plan.warning && o.opts.io) warnOnce(o.opts.io.stderr, plan.warning);
      if (plan.enforced && plan.wrap) {
        options.wrap = plan.wrap;
        if (probe.dropTo) {
          const who = { uid: probe.dropTo.uid, gid: probe.dropTo.gid };
          const chosen = pythonForSandbox(python, who);
          if (chosen.note && o.opts.io) warnOnce(o.opts.io.stderr, chosen.note);
          python = chosen.python;
          options.python = python;
          options.sandboxOwner = who;
        }
      }
    }
    return new PythonTool(options);
  };
  return async (args, ctx) => {
    tool ??= build();
    let t;
    try {
      t = await tool;
    } catch (e) {
      tool = undefined; // try again on the next call (e.g. after the interpreter is installed)
      throw e;
    }
    const signal =
      ctx !== null && typeof ctx === 'object' && (ctx as { signal?: unknown }).signal instanceof AbortSignal
        ? (ctx as { signal: AbortSignal }).signal
        : undefined;
    const principal =
      ctx !== null && typeof ctx === 'object'
        ? (ctx as { identity?: { principal?: unknown } }).identity?.principal
        : undefined;
    return t.run(args, { ...(signal ? { signal } : {}), ...(typeof principal === 'string' ? { principal } : {}) });
  };
}

/**
 * The secret values stored now, as the `withheld` source of a gate and audit log: they are replaced by
 * `<withheld>` in question previews, hook input, audit fields and messages. Read once per process.
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
