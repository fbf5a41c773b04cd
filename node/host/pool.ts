// The Node host's sandbox pool: the OS wrapper from the sandbox probe, one runtime per engine and limits, and the
// runtime's prestart for a given spec; Node host, trusted side.
import { TyError } from '../../core/errors.js';
import type { Store } from '../../core/store/contract.js';
import type { PoolLike } from '../../core/exec/invoke.js';
import type { CallLimits, SandboxRuntime, SandboxSpec } from '../../core/exec/runtime.js';
import type { BwrapOptions } from '../os-sandbox/bwrap.js';
import type { OsLimits } from '../os-sandbox/limits.js';
import type { SpawnWrapper } from '../sandbox/runtime.js';
import type { PoolCallOptions } from '../../core/exec/pool.js';
import type { HostIO, NodeHostOptions } from './options.js';

/**
 * The OS wrapper for one sandbox: its call limits, engine and runtime's stated data need (bytes); or, with `os`, for a
 * process of its own limits (a QuickJS sandbox host: node/os-sandbox/limits.ts quickJsHostLimits).
 */
type WrapFactory = (
  limits: CallLimits,
  sandbox?: { engine: 'node' | 'deno'; minDataBytes?: number },
  os?: OsLimits,
) => SpawnWrapper | undefined;

let warnedNoOsSandbox = false;
/** Call limits the QuickJS sandbox host's wrapper is built for (its OS limits are given whole: quickJsHostLimits). */
const DEFAULT_QUICKJS_LIMITS: CallLimits = { timeoutMs: 60_000, outputBytes: 2 * 1024 * 1024, memoryMb: 256 };
/**
 * In the state folder: the passing sandbox probe and node's permission flag, kept across processes (probe-cache.ts).
 */
export const PROBE_CACHE_FILE = 'sandbox-probe.json';

/**
 * The OS-level wrapper for the posture (`--sandbox`, else settings `sandbox`, else `auto`), from the probe in
 * node/os-sandbox/probe.ts: bubblewrap on Linux, Seatbelt on macOS, with RLIMITs from osLimitsFor.
 * `off`: none. `auto`: none when unavailable, with one warning on stderr saying what that means.
 * `required`: E_SANDBOX_UNAVAILABLE when unavailable (fail closed).
 */
async function osWrapFactory(posture: string, io: HostIO | undefined, cacheFile: string): Promise<WrapFactory> {
  if (posture === 'off') return () => undefined;
  const [{ probeSandbox }, { probeWithCache, seedLibraryLists }] = await Promise.all([
    import('../os-sandbox/probe.js'),
    import('../os-sandbox/probe-cache.js'),
  ]);
  const p = await probeSandbox({ kept: (sys) => probeWithCache(cacheFile, sys) });
  if (p.available && p.backend === 'bwrap' && p.path) {
    const [{ createBwrapWrapper }, { osLimitsFor }] = await Promise.all([
      import('../os-sandbox/bwrap.js'),
      import('../os-sandbox/limits.js'),
    ]);
    seedLibraryLists(cacheFile); // the binaries' library lists from an earlier process: no loader run per binary
    const bwrapPath = p.path;
    return (limits, sandbox, os) => {
      const o: BwrapOptions = { bwrapPath };
      if (p.prlimit) {
        o.prlimitPath = p.prlimit;
        o.limits = os ?? osLimitsFor(limits, {}, sandbox);
      }
      if (p.dropTo) o.dropTo = p.dropTo;
      return createBwrapWrapper(o);
    };
  }
  if (p.available && p.backend === 'seatbelt') {
    const [{ createSeatbeltWrapper }, { osLimitsFor }] = await Promise.all([
      import('../os-sandbox/seatbelt.js'),
      import('../os-sandbox/limits.js'),
    ]);
    return (limits, sandbox, os) => createSeatbeltWrapper({ limits: os ?? osLimitsFor(limits, {}, sandbox) });
  }
  const reason = p.reason ?? `no OS sandbox backend (${p.backend})`;
  if (posture === 'required')
    throw new TyError(
      'E_SANDBOX_UNAVAILABLE',
      `an OS-level sandbox is required (--sandbox required) but unavailable: ${reason}`,
    );
  if (!warnedNoOsSandbox && io) {
    warnedNoOsSandbox = true;
    io.stderr.write(
      `warning: no OS-level sandbox (${reason}); tool code runs under the engine's own permission ` +
        `model only, which does not block network access. Use --sandbox required to refuse instead, ` +
        `or --sandbox off to silence this.\n`,
    );
  }
  return () => undefined;
}

/** The host's pool: calls, the prestart of one sandbox, and close (every sandbox destroyed, a spare killed). */
export interface HostPool extends PoolLike {
  /**
   * Start, empty, the sandbox process `spec` will need (node/sandbox/runtime.ts prestart), for a call to adopt; never
   * throws (a failure leaves the call to start its sandbox as usual). Called by node/host/host.ts prestartSandbox.
   */
  prestart(spec: SandboxSpec): void;
  /** Sandboxes alive now (retained and disposable; core/exec/pool.ts aliveCount), for the gateway's metrics. */
  aliveCount(): number;
  close(): Promise<void>;
}

/**
 * The retained per-revision pool (core/exec/pool.ts) over the runtimes chosen by `execution.engine`, created on first
 * use: Node and Deno subprocesses (one per sandbox), and QuickJS (node/quickjs/runtime.ts: one sandbox host process per
 * principal under the same OS wrapper, its limits those of the whole process). `memoryBudgetMb` bounds the retained
 * sandboxes (MiB), `idleMs` how long one may sit idle (default the pool's).
 */
export async function buildPool(
  opts: NodeHostOptions,
  posture: string,
  store: Store,
  probeCache: string,
  memoryBudgetMb: number,
  idleMs?: number,
): Promise<HostPool> {
  const [
    { NodeSandboxRuntime, rememberPermissionFlag },
    { SandboxPool, DEFAULT_MAX_INSTANCES },
    { dataLimitMb, QUICKJS_START_MB },
    { PYTHON_SANDBOX_NEEDS },
    { permissionFlagCached, forgetProbe, keepLibraryLists },
  ] = await Promise.all([
    import('../sandbox/runtime.js'),
    import('../../core/exec/pool.js'),
    import('../os-sandbox/limits.js'),
    import('../python/sandbox.js'),
    import('../os-sandbox/probe-cache.js'),
  ]);
  // The quickjs engine's runtime: one per host, loaded when a quickjs revision first runs.
  let quickjs: (SandboxRuntime & { close(): void; prestart(s: SandboxSpec): void }) | undefined;
  const quickJsRuntime = async () => {
    if (quickjs) return quickjs;
    const [{ QuickJsSandboxRuntime, THREAD_HEAP_MB }, { quickJsHostLimits }] = await Promise.all([
      import('../quickjs/runtime.js'),
      import('../os-sandbox/limits.js'),
    ]);
    const probe = new QuickJsSandboxRuntime();
    const os = quickJsHostLimits(
      memoryBudgetMb,
      probe.threads + 1,
      THREAD_HEAP_MB,
      opts.maxInstances ?? DEFAULT_MAX_INSTANCES,
    );
    const wrap = wrapFor(DEFAULT_QUICKJS_LIMITS, undefined, os);
    const rt = new QuickJsSandboxRuntime({
      ...(wrap ? { wrap } : {}),
      ...(opts.onToolLog ? { onLog: opts.onToolLog } : {}),
    });
    quickjs = rt;
    return rt;
  };
  // The node permission flag and the OS sandbox probe, both kept across processes in the state folder, found at once.
  const [flag, wrapFor] = await Promise.all([
    permissionFlagCached(probeCache, process.execPath),
    opts.wrap ? ((() => opts.wrap) as WrapFactory) : osWrapFactory(posture, opts.io, probeCache),
  ]);
  rememberPermissionFlag(process.execPath, flag as '--permission' | '--experimental-permission');
  const osWrapped = !opts.wrap && posture !== 'off';
  type HostRuntime = SandboxRuntime & { prestart?(spec: SandboxSpec): void; discardSpare?(): Promise<void> };
  const runtimes = new Map<string, HostRuntime>();
  const engineOf = (spec: SandboxSpec) => {
    const exec = spec.manifest.execution;
    return (exec.kind === 'sandboxed-code' ? exec.engine : undefined) ?? 'node';
  };
  const needs = (spec: SandboxSpec) => {
    const exec = spec.manifest.execution;
    const engine = engineOf(spec) === 'deno' ? 'deno' : 'node';
    const python = exec.kind === 'sandboxed-code' && exec.runtime === 'python';
    return { engine, minDataBytes: python ? PYTHON_SANDBOX_NEEDS.dataBytes : 0 } as const;
  };
  const runtimeFor = (spec: SandboxSpec): HostRuntime => {
    const exec = spec.manifest.execution;
    if (exec.kind !== 'sandboxed-code')
      throw new TyError(
        'E_SANDBOX_UNAVAILABLE',
        'the command line runs sandboxed code (JavaScript, or Python through Pyodide) only',
      );
    if (engineOf(spec) === 'quickjs') return quickJsFacade;
    const sandbox = needs(spec);
    const engine = sandbox.engine;
    // One runtime per engine, runtime and limits, so the OS limits (RLIMITs) follow the revision's limits.
    const key = `${engine}:${exec.runtime}:${spec.limits.memoryMb}:${spec.limits.timeoutMs}`;
    let r = runtimes.get(key);
    if (!r) {
      const wrap = wrapFor(spec.limits, sandbox);
      const rt = new NodeSandboxRuntime({
        engine,
        pythonPackages: (revision, packages) => pythonPackageFiles(store, revision, packages),
        ...(wrap ? { wrap } : {}),
        ...(opts.onToolLog ? { onLog: opts.onToolLog } : {}),
        ...(opts.onStartProgress ? { onStartProgress: opts.onStartProgress } : {}),
      });
      // A sandbox that cannot start under the OS wrapper drops the kept probe, so the next process probes in full.
      r =
        wrap && osWrapped
          ? {
              name: rt.name,
              prestart: (s: SandboxSpec) => rt.prestart(s),
              discardSpare: () => rt.discardSpare(),
              start: (s: SandboxSpec, signal?: AbortSignal) =>
                rt.start(s, signal).catch((e: unknown) => {
                  if (e instanceof TyError && (e.code === 'E_SANDBOX_UNAVAILABLE' || e.code === 'E_SANDBOX_FAILED'))
                    forgetProbe(probeCache);
                  throw e;
                }),
            }
          : rt;
      runtimes.set(key, r);
    }
    return r;
  };
  // The quickjs runtime through a facade: the pool holds one runtime object for it, loaded on first start.
  const quickJsFacade: HostRuntime = {
    name: 'quickjs',
    perPrincipal: true,
    sharesProcess: true,
    prestart: (s: SandboxSpec) =>
      void quickJsRuntime().then(
        (rt) => rt.prestart(s),
        () => {},
      ),
    start: async (s: SandboxSpec, signal?: AbortSignal) =>
      (await quickJsRuntime()).start(s, signal).catch((e: unknown) => {
        if (osWrapped && e instanceof TyError && e.code === 'E_SANDBOX_UNAVAILABLE') forgetProbe(probeCache);
        throw e;
      }),
  };
  const pool = new SandboxPool({
    runtime: runtimeFor,
    memoryBudgetMb,
    ...(opts.maxRetained !== undefined ? { maxRetained: opts.maxRetained } : {}),
    ...(opts.maxInstances !== undefined ? { maxInstances: opts.maxInstances } : {}),
    ...(idleMs !== undefined ? { idleMs } : {}),
    memoryOf: (spec) => {
      if (engineOf(spec) === 'quickjs') return QUICKJS_START_MB;
      const n = needs(spec);
      return dataLimitMb(spec.limits.memoryMb, n.engine, n.minDataBytes);
    },
  });
  return {
    call: (spec, args, o) => {
      const po: PoolCallOptions = { onCapability: o.onCapability, signal: o.signal, disposable: o.disposable ?? false };
      if (o.argsJson !== undefined) po.argsJson = o.argsJson;
      if (o.argsParts !== undefined) po.argsParts = o.argsParts;
      if (o.onSent !== undefined) po.onSent = o.onSent;
      return pool.call(spec, args, po);
    },
    prestart: (spec) => {
      try {
        runtimeFor(spec).prestart?.(spec);
      } catch {
        /* the call starts its sandbox as usual */
      }
    },
    aliveCount: () => pool.aliveCount(),
    close: async () => {
      await Promise.all([...runtimes.values()].map((r) => r.discardSpare?.()));
      await pool.shutdown();
      quickjs?.close();
      if (osWrapped) keepLibraryLists(probeCache);
    },
  };
}

/**
 * The wheels of a Python revision: from the folder recorded when `tycli tool add` installed it (next to its
 * manifest), each checked against its sha-256 (node/python/sandbox.ts resolvePythonPackages).
 * @throws TyError E_SANDBOX_UNAVAILABLE (no folder recorded, a file missing), E_INTEGRITY (a digest differs).
 */
async function pythonPackageFiles(
  store: Store,
  revision: string,
  packages: readonly { file: string; sha256: string }[],
) {
  const { PYTHON_PACKAGES_NS, resolvePythonPackages } = await import('../python/sandbox.js');
  const rec = await store.getJson<{ dir?: unknown }>(PYTHON_PACKAGES_NS, revision);
  if (!rec || typeof rec.dir !== 'string') {
    throw new TyError(
      'E_SANDBOX_UNAVAILABLE',
      'this revision declares Python wheels but was not added from a manifest file here; add it with tycli tool add MANIFEST.json from the folder that holds the wheels',
    );
  }
  return resolvePythonPackages(rec.dir, packages);
}
