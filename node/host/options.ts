// The Node host's options, and the shapes it shares with the front ends that open it (the command line among them);
// Node host, trusted side.
import type { Asker } from '../../core/ask/router.js';
import {
  DEFAULT_MAX_QUEUED_CALLS,
  type InvokerOptions,
  type PoolLike,
  type ToolIdentity,
} from '../../core/exec/invoke.js';
import type { CapabilityHandler, Gate } from '../../core/exec/runtime.js';
import { TyError } from '../../core/errors.js';
import type { PythonInfo } from '../python/native-tool.js';
import type { NodeSandboxRuntimeOptions, SpawnWrapper } from '../sandbox/runtime.js';

/** The streams of the process a host serves: the command line's own, or an embedder's. */
export interface HostIO {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream;
  /** True when stdin and stderr are a terminal a person sits at. */
  interactive: boolean;
}

/** A session's own rules and isolation posture (the command line's --allow, --deny, --mode and --sandbox). */
export interface HostFlags {
  /** Rules of the session scope `flags` (core/policy/permissions.ts grammar); deny wins. */
  allow: string[];
  deny: string[];
  /** Permission mode: strict, standard or unrestricted. */
  mode?: string;
  /** OS isolation posture: auto, required or off. */
  sandbox?: string;
}

export interface NodeHostOptions {
  /** The state root (node/store/paths.ts resolveHome). */
  home: string;
  /** The session's flags: allow, deny and mode feed the gate, sandbox the OS wrapper posture (the CLI's globals). */
  globals?: Partial<HostFlags>;
  /** Where warnings for a person go (stderr): settings that weaken isolation, a missing OS sandbox. */
  io?: HostIO;
  /** The host's environment (default process.env): PATH, the TYCLI_* bounds, a desktop session. Never a sandbox's. */
  env?: NodeJS.ProcessEnv;
  /** Working folder: where project settings (.tycli/) are looked for and hooks run (default process.cwd()). */
  cwd?: string;
  /**
   * The store to use instead of opening one (node/store/open.ts openTycliStore: the file store under `home`, or
   * PostgreSQL by TYCLI_STORE / the user setting store.url). The host does not close a given store.
   */
  store?: import('../store/open.js').OpenedStore;
  /** Traces calls (core/exec/trace.ts; node/gateway/tracing.ts on a gateway): the invoker's and the gate's spans. */
  tracer?: import('../../core/exec/trace.js').CallTracer;
  /** Told of every answered call (metrics). */
  observe?: InvokerOptions['observe'];
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
   * engine's margin, node/os-sandbox/limits.ts dataLimitMb; a quickjs sandbox what it holds); past it the least
   * recently used idle ones are destroyed. Default: $TYCLI_MEMORY_BUDGET_MB, else DEFAULT_MEMORY_BUDGET_MB (4096).
   */
  memoryBudgetMb?: number;
  /** Most retained sandboxes at once (core/exec/pool.ts, default 16: the least recently used idle one goes first). */
  maxRetained?: number;
  /** Most retained quickjs sandboxes at once, counted apart (core/exec/pool.ts maxInstances, default 2048). */
  maxInstances?: number;
  /**
   * A retained sandbox idle this long is destroyed, ms (core/exec/pool.ts, default 600 000; 0: never). Default:
   * $TYCLI_IDLE_MS, else the pool's default.
   */
  idleMs?: number;
  /**
   * Start the sandbox process of `tool` (NAME or NAME@REV; `timeoutMs` the call's --timeout) while the host is still
   * being assembled and the call resolved, validated, gated and its intent audited (`tycli run`): an empty runner,
   * no tool code, arguments, secrets or grants (node/sandbox/runtime.ts prestart). The call adopts it when its sandbox
   * has exactly that command line; close() kills and reaps it otherwise, refusals included (node/host/host.ts
   * prestartSandbox).
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
export const memoryBudget = (opts: NodeHostOptions): number =>
  boundFrom(opts, opts.memoryBudgetMb, 'TYCLI_MEMORY_BUDGET_MB', DEFAULT_MEMORY_BUDGET_MB, ' (MiB)');

/**
 * How long a retained sandbox may sit idle before the pool destroys it, ms: the option, else $TYCLI_IDLE_MS (a
 * long-lived `tycli serve` or `mcp serve` set by its operator), else undefined: the pool's default
 * (core/exec/pool.ts DEFAULT_IDLE_MS, 10 minutes). @throws TyError E_USAGE
 */
export const idleBound = (opts: NodeHostOptions): number | undefined =>
  opts.idleMs ??
  ((opts.env ?? process.env).TYCLI_IDLE_MS ? boundFrom(opts, undefined, 'TYCLI_IDLE_MS', 0, ' (ms)') : undefined);

/** The host's admission bound: the option, else $TYCLI_MAX_QUEUED_CALLS, else the default. @throws TyError E_USAGE */
export const queueBound = (opts: NodeHostOptions): number =>
  boundFrom(opts, opts.maxQueuedCalls, 'TYCLI_MAX_QUEUED_CALLS', DEFAULT_MAX_QUEUED_CALLS, '');
