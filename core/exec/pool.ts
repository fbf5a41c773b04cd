// Sandbox pool: one retained sandbox per immutable revision, calls serialized, retired on failure; host-agnostic core,
// trusted side.
import type { RunProgress } from './progress.js';
import { TyError, toTyError } from '../errors.js';
import type { CallPhase } from '../../protocol/names.js';
import { timeoutError } from './timeouts.js';
import type { ErrorCode } from '../../protocol/errors.js';
import {
  NEVER_ABORTED,
  type CallOptions,
  type CapabilityHandler,
  type SandboxInstance,
  type SandboxRuntime,
  type SandboxSpec,
} from './runtime.js';

/**
 * Errors after which a sandbox is destroyed and the next call gets a fresh one: the runtime boundary failed
 * or its state can no longer be trusted. E_OUTPUT_LIMIT is included: the tool just built a value larger than
 * allowed and may hold it; starting clean is cheaper than reasoning about it. A plain E_TOOL_FAILED (the tool
 * threw) keeps the sandbox and its in-memory state.
 */
export const RETIRING_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'E_TIMEOUT',
  'E_ABORTED',
  'E_SANDBOX_FAILED',
  'E_MEMORY_LIMIT',
  'E_PROTOCOL',
  'E_OUTPUT_LIMIT',
]);

export interface SandboxPoolOptions {
  /** The runtime, or a chooser per spec (e.g. by `manifest.execution.engine`). */
  runtime: SandboxRuntime | ((spec: SandboxSpec) => SandboxRuntime);
  /** `retained` (default): one sandbox per revision, reused. `disposable`: a fresh sandbox per call. */
  mode?: 'retained' | 'disposable';
  /**
   * Host-wide memory budget for retained sandboxes, MiB (default: none). Before a retained sandbox starts, the
   * least recently used idle ones (no call running or queued) are destroyed until the live ones' charges plus the
   * new one fit; when only busy ones are left it starts anyway, and idle ones are destroyed after calls end until
   * the pool is back within budget.
   */
  memoryBudgetMb?: number;
  /** What one sandbox of `spec` may hold, MiB: its charge against the budget (default `spec.limits.memoryMb`). */
  memoryOf?: (spec: SandboxSpec) => number;
  /**
   * Most retained sandboxes alive at once (default 16, DEFAULT_MAX_RETAINED). Starting one more first destroys the
   * least recently used idle one; when every one is busy it starts anyway and the pool shrinks as calls end.
   */
  maxRetained?: number;
  /**
   * Most retained sandboxes alive at once of runtimes whose sandboxes share a process (SandboxRuntime.sharesProcess:
   * quickjs), counted apart from `maxRetained` (default 2048, DEFAULT_MAX_INSTANCES); the same least recently used
   * rule.
   */
  maxInstances?: number;
  /**
   * A retained sandbox idle (no call running or queued) this long is destroyed, ms (default 600 000, 10 minutes; 0:
   * never).
   */
  idleMs?: number;
  /** Told when the pool destroys a sandbox for its limits (`max retained`, `idle`, `memory budget`, `memory limit`). */
  onEvict?: (revision: string, reason: string) => void;
  /**
   * A retained sandbox found holding at least this share of its charge (`memoryOf`) once it has gone idle is not kept
   * (default NEAR_LIMIT_SHARE): it hit, or nearly hit, its memory limit, and tool code that caught the failed
   * allocation would keep holding what it got. Read from SandboxInstance.memoryMb, MEMORY_CHECK_MS after a call ended
   * with none queued.
   */
  nearLimitShare?: number;
}

/** Default share of its memory charge past which an idle retained sandbox is destroyed (SandboxPoolOptions). */
export const NEAR_LIMIT_SHARE = 0.9;
/** How long after its last call a retained sandbox's memory is read, ms (one timer per sandbox at a time). */
export const MEMORY_CHECK_MS = 250;

/** Default cap on retained sandboxes per pool. */
export const DEFAULT_MAX_RETAINED = 16;
/** Default cap on retained sandboxes that share a process (quickjs instances) per pool. */
export const DEFAULT_MAX_INSTANCES = 2048;
/** Default idle time after which a retained sandbox is destroyed, ms (10 minutes). */
export const DEFAULT_IDLE_MS = 600_000;

export interface PoolCallOptions {
  onCapability: CapabilityHandler;
  /** The arguments' canonical JSON text (CallOptions.argsJson), sent as is where the transport carries text. */
  argsJson?: string;
  /** The same text in pieces (CallOptions.argsParts). */
  argsParts?: readonly string[];
  /** Aborting kills the sandbox running this call (E_ABORTED), or drops the call from the queue. */
  signal?: AbortSignal;
  /** Override the pool mode for this call. */
  disposable?: boolean;
  /**
   * `started` when the call is handed to its sandbox (after its turn in the queue and the sandbox's start), then the
   * tool's coalesced `ctx.progress` reports (core/exec/progress.ts).
   */
  onProgress?: (p: RunProgress) => void;
  /** Told once the call message was handed to the sandbox (CallOptions.onSent). */
  onSent?: () => void;
}

interface Entry {
  /** Its key in the pool: the revision, and for runtimes that keep principals apart the principal too. */
  slot: string;
  revision: string;
  name: string;
  /** What the sandbox was started with (runtime, memory, folders); a different key needs a new sandbox. */
  key: string;
  instance: SandboxInstance | undefined;
  queue: Promise<void>;
  /** Removed from the pool: takes no new calls; already queued calls still run. */
  retired: boolean;
  /** Its sandbox was destroyed for good: queued calls fail. */
  killed: boolean;
  /** Calls running or queued. */
  pending: number;
  /** Pool tick of its last finished call (least recently used first). */
  lastUsed: number;
  /** When its last call ended, ms since the epoch (the idle timer measures from here). */
  idleSince: number;
  /** MiB charged against the memory budget while its sandbox lives, until it reports what it holds (heldMb). */
  chargeMb: number;
  /** Its runtime's sandboxes share a process: counted against maxInstances, not maxRetained. */
  shared: boolean;
}

const runtimeIds = new WeakMap<SandboxRuntime, number>();
let nextRuntimeId = 1;
/** A different runtime object (e.g. another OS wrapper), heap cap or folder set needs a different sandbox. */
function specKey(runtime: SandboxRuntime, spec: SandboxSpec): string {
  let id = runtimeIds.get(runtime);
  if (id === undefined) runtimeIds.set(runtime, (id = nextRuntimeId++));
  const base = `${id}\u0000${runtime.name}\u0000${spec.limits.memoryMb}`;
  return spec.folders && spec.folders.length > 0 ? `${base}\u0000${JSON.stringify(spec.folders)}` : base;
}

/**
 * Keeps sandboxes per revision (ARCHITECTURE.md "Sandboxes"). Retained sandboxes are destroyed when: a call
 * for another revision of the same tool name arrives (after the old one's queued calls finish); a call ends
 * with a code in RETIRING_CODES; `terminate(revision)`; `shutdown()`. The pool enforces `spec.limits.timeoutMs`
 * per call (E_TIMEOUT, sandbox killed) in addition to whatever the runtime does; starting a sandbox (module load
 * included) counts against it. The next call after a destroy
 * gets a fresh sandbox.
 */
export class SandboxPool {
  readonly #opts: SandboxPoolOptions;
  readonly #entries = new Map<string, Entry>();
  readonly #disposables = new Set<SandboxInstance>();
  readonly #budget: number;
  readonly #maxRetained: number;
  readonly #maxInstances: number;
  readonly #idleMs: number;
  readonly #idleTimers = new Map<Entry, ReturnType<typeof setTimeout>>();
  readonly #memoryTimers = new Map<Entry, ReturnType<typeof setTimeout>>();
  readonly #nearLimit: number;
  #tick = 0;
  #closed = false;

  constructor(opts: SandboxPoolOptions) {
    this.#opts = opts;
    this.#budget = opts.memoryBudgetMb ?? Number.POSITIVE_INFINITY;
    this.#maxRetained = opts.maxRetained ?? DEFAULT_MAX_RETAINED;
    this.#maxInstances = opts.maxInstances ?? DEFAULT_MAX_INSTANCES;
    this.#idleMs = opts.idleMs ?? DEFAULT_IDLE_MS;
    this.#nearLimit = opts.nearLimitShare ?? NEAR_LIMIT_SHARE;
    for (const [k, v] of [
      ['maxRetained', this.#maxRetained],
      ['maxInstances', this.#maxInstances],
    ] as const)
      if (!Number.isInteger(v) || v < 1)
        throw new TyError('E_INVALID_SETTINGS', `${k} must be a whole number, 1 or more`);
    if (!Number.isInteger(this.#idleMs) || this.#idleMs < 0)
      throw new TyError('E_INVALID_SETTINGS', 'idleMs must be a whole number of ms, 0 or more');
  }

  /** How many retained sandboxes are alive now (`shared`: those that share a process, else the others). */
  retainedCount(shared = false): number {
    let n = 0;
    for (const e of this.#entries.values()) if (e.instance?.alive && e.shared === shared) n++;
    return n;
  }

  /** Sandboxes alive now: the retained ones and the disposable ones running a call. */
  aliveCount(): number {
    let n = this.#disposables.size;
    for (const e of this.#entries.values()) if (e.instance?.alive) n++;
    return n;
  }

  /**
   * Destroy least recently used idle sandboxes (never `keep`) of one kind (`shared`) until `room` more fit under its
   * cap (maxInstances for sandboxes that share a process, else maxRetained).
   */
  async #fitCount(keep: Entry | undefined, room: number, shared: boolean): Promise<void> {
    const cap = shared ? this.#maxInstances : this.#maxRetained;
    const idle = [...this.#entries.values()]
      .filter((x) => x !== keep && x.shared === shared && x.pending === 0 && x.instance?.alive)
      .sort((a, b) => a.lastUsed - b.lastUsed);
    for (const x of idle) {
      if (this.retainedCount(shared) + room <= cap) return;
      this.#opts.onEvict?.(x.revision, 'max retained');
      const what = shared ? 'sandboxes that share a process' : 'sandboxes';
      await this.#retire(x, `the pool keeps at most ${cap} ${what} (least recently used)`, true);
    }
  }

  /**
   * Arm the idle timer of an entry with no call running or queued, unless one is armed: a timer that fires early
   * (calls ran since it was armed) re-arms itself for the time left, so a busy sandbox costs no timer per call.
   */
  #armIdle(e: Entry): void {
    if (this.#idleMs === 0 || e.pending > 0 || !e.instance?.alive || this.#closed || this.#idleTimers.has(e)) return;
    this.#setIdleTimer(e, this.#idleMs);
  }

  #setIdleTimer(e: Entry, ms: number): void {
    const t = setTimeout(() => {
      this.#idleTimers.delete(e);
      // the end of the running call re-arms
      if (e.pending > 0 || !e.instance?.alive || e.retired || this.#closed) return;
      const left = e.idleSince + this.#idleMs - Date.now();
      if (left > 0) return this.#setIdleTimer(e, left);
      this.#opts.onEvict?.(e.revision, 'idle');
      void this.#retire(e, `idle for ${this.#idleMs} ms`, true);
    }, ms);
    (t as { unref?: () => void }).unref?.();
    this.#idleTimers.set(e, t);
  }

  /**
   * Read an entry's memory MEMORY_CHECK_MS after its calls ended (one timer per entry; a busy entry's next call end
   * arms it again): at NEAR_LIMIT_SHARE of its charge or more, the sandbox is destroyed rather than kept.
   */
  #armMemoryCheck(e: Entry): void {
    if (this.#closed || e.pending > 0 || !e.instance?.memoryMb || this.#memoryTimers.has(e)) return;
    const t = setTimeout(() => {
      this.#memoryTimers.delete(e);
      const inst = e.instance;
      if (e.pending > 0 || !inst?.alive || e.retired || this.#closed) return;
      const mb = inst.memoryMb?.();
      if (mb === undefined || mb < this.#nearLimit * e.chargeMb) return;
      this.#opts.onEvict?.(e.revision, 'memory limit');
      void this.#retire(e, `holds ${Math.round(mb)} MiB of its ${e.chargeMb} MiB limit`, true);
    }, MEMORY_CHECK_MS);
    (t as { unref?: () => void }).unref?.();
    this.#memoryTimers.set(e, t);
  }

  #runtimeFor(spec: SandboxSpec): SandboxRuntime {
    const r = this.#opts.runtime;
    return typeof r === 'function' ? r(spec) : r;
  }

  /** The live retained sandbox for a revision, if any (diagnostics and tests; the first principal's, if several). */
  peek(revision: string): SandboxInstance | undefined {
    for (const e of this.#entries.values()) if (e.revision === revision && e.instance?.alive) return e.instance;
    return undefined;
  }
  /** Revisions with a pool entry. */
  revisions(): string[] {
    return [...new Set([...this.#entries.values()].map((e) => e.revision))];
  }

  /**
   * Run one call of `spec.revision` with `args` (already validated JSON data).
   * @throws TyError E_TOOL_FAILED, E_OUTPUT_LIMIT, E_TIMEOUT, E_ABORTED, E_MEMORY_LIMIT, E_SANDBOX_FAILED,
   *   E_SANDBOX_UNAVAILABLE (runtime missing or pool shut down), E_PROTOCOL.
   */
  async call(spec: SandboxSpec, args: unknown, opts: PoolCallOptions): Promise<unknown> {
    if (this.#closed) throw new TyError('E_SANDBOX_UNAVAILABLE', 'the sandbox pool was shut down');
    const signal = opts.signal ?? NEVER_ABORTED;
    if (signal.aborted) throw new TyError('E_ABORTED', 'call aborted before it started');
    const runtime = this.#runtimeFor(spec);
    if (opts.disposable ?? this.#opts.mode === 'disposable')
      return this.#disposable(runtime, spec, args, opts.onCapability, signal, opts);

    // A new revision of the same tool name retires the others (after their queued calls).
    for (const e of this.#entries.values()) {
      if (e.name === spec.manifest.name && e.revision !== spec.revision) this.#retire(e, 'revision changed', false);
    }
    const key = specKey(runtime, spec);
    // A runtime that keeps principals apart (quickjs: one process per principal) retains a sandbox per principal.
    const slot = runtime.perPrincipal ? `${spec.revision}\u0000${spec.principal ?? ''}` : spec.revision;
    let entry = this.#entries.get(slot);
    if (entry && entry.key !== key) {
      this.#retire(entry, 'sandbox settings changed', false);
      entry = undefined;
    }
    if (!entry) {
      entry = {
        slot,
        revision: spec.revision,
        name: spec.manifest.name,
        key,
        instance: undefined,
        queue: Promise.resolve(),
        retired: false,
        killed: false,
        pending: 0,
        lastUsed: 0,
        idleSince: 0,
        chargeMb: this.#opts.memoryOf?.(spec) ?? spec.limits.memoryMb,
        shared: runtime.sharesProcess === true,
      };
      this.#entries.set(slot, entry);
    }
    const e = entry;
    e.pending++; // a call is queued: not idle (an idle timer that fires now finds it pending)
    const turn = e.queue;
    let release!: () => void;
    e.queue = new Promise<void>((r) => (release = r));
    try {
      await waitTurn(turn, signal);
    } catch (err) {
      // Aborted while queued: hand our slot on only when our turn would have come, so calls stay serialized.
      e.pending--;
      void turn.then(release);
      e.idleSince = Date.now();
      this.#armIdle(e);
      throw err;
    }
    try {
      if (this.#closed || e.killed)
        throw new TyError('E_SANDBOX_FAILED', 'the sandbox was destroyed while this call waited');
      return await this.#runRetained(e, runtime, spec, args, opts.onCapability, signal, opts);
    } finally {
      e.pending--;
      e.lastUsed = ++this.#tick;
      e.idleSince = Date.now();
      release();
      if (this.#usedMb() > this.#budget) void this.#fitBudget(undefined, 0);
      if (this.retainedCount(e.shared) > (e.shared ? this.#maxInstances : this.#maxRetained))
        void this.#fitCount(undefined, 0, e.shared);
      this.#armIdle(e);
      this.#armMemoryCheck(e);
    }
  }

  /** MiB charged by the retained sandboxes alive now. */
  retainedMemoryMb(): number {
    return this.#usedMb();
  }

  #usedMb(): number {
    let n = 0;
    for (const e of this.#entries.values()) if (e.instance?.alive) n += e.instance.heldMb?.() ?? e.chargeMb;
    return n;
  }

  /** Destroy least recently used idle sandboxes (never `keep`) until `extraMb` more fits the budget. */
  async #fitBudget(keep: Entry | undefined, extraMb: number): Promise<void> {
    const idle = [...this.#entries.values()]
      .filter((x) => x !== keep && x.pending === 0 && x.instance?.alive)
      .sort((a, b) => a.lastUsed - b.lastUsed);
    for (const x of idle) {
      if (this.#usedMb() + extraMb <= this.#budget) return;
      this.#opts.onEvict?.(x.revision, 'memory budget');
      await this.#retire(x, 'memory budget', true);
    }
  }

  async #runRetained(
    e: Entry,
    runtime: SandboxRuntime,
    spec: SandboxSpec,
    args: unknown,
    onCapability: CapabilityHandler,
    signal: AbortSignal,
    text: ArgsText,
  ): Promise<unknown> {
    const deadline = Date.now() + spec.limits.timeoutMs;
    if (!e.instance?.alive) {
      e.instance = undefined;
      await this.#fitBudget(e, e.chargeMb);
      await this.#fitCount(e, 1, e.shared);
      e.instance = await startWithin(runtime, spec, signal, deadline);
      if (e.killed || this.#closed) {
        await e.instance.destroy('pool closed during start');
        throw new TyError('E_SANDBOX_FAILED', 'the sandbox was destroyed while it started');
      }
    }
    let inst = e.instance;
    try {
      try {
        return await guarded(inst, args, spec, onCapability, signal, deadline, text);
      } catch (first) {
        // The runtime refused before sending anything (its sandbox had died): once, on a fresh sandbox.
        const f = toTyError(first, 'E_SANDBOX_FAILED');
        if (f.code !== 'E_SANDBOX_FAILED' || f.data?.notStarted !== true || e.killed || this.#closed || signal.aborted)
          throw first;
        if (e.instance === inst) e.instance = undefined;
        await inst.destroy('E_SANDBOX_FAILED');
        inst = e.instance = await startWithin(runtime, spec, signal, deadline);
        return await guarded(inst, args, spec, onCapability, signal, deadline, text);
      }
    } catch (err) {
      const t = toTyError(err, 'E_SANDBOX_FAILED');
      if (RETIRING_CODES.has(t.code) || !inst.alive) {
        if (e.instance === inst) e.instance = undefined;
        await inst.destroy(t.code);
      }
      throw t;
    }
  }

  async #disposable(
    runtime: SandboxRuntime,
    spec: SandboxSpec,
    args: unknown,
    onCapability: CapabilityHandler,
    signal: AbortSignal,
    text: ArgsText,
  ): Promise<unknown> {
    const deadline = Date.now() + spec.limits.timeoutMs;
    const inst = await startWithin(runtime, spec, signal, deadline);
    this.#disposables.add(inst);
    try {
      return await guarded(inst, args, spec, onCapability, signal, deadline, text);
    } finally {
      this.#disposables.delete(inst);
      await inst.destroy('disposable call finished');
    }
  }

  #retire(e: Entry, reason: string, now: boolean): Promise<void> {
    e.retired = true;
    const idle = this.#idleTimers.get(e);
    if (idle !== undefined) clearTimeout(idle);
    this.#idleTimers.delete(e);
    const mem = this.#memoryTimers.get(e);
    if (mem !== undefined) clearTimeout(mem);
    this.#memoryTimers.delete(e);
    if (this.#entries.get(e.slot) === e) this.#entries.delete(e.slot);
    const kill = async () => {
      e.killed = true;
      const inst = e.instance;
      e.instance = undefined;
      if (inst) await inst.destroy(reason);
    };
    if (now) return kill();
    // Let calls already queued on the old revision finish first.
    return e.queue.then(kill);
  }

  /** Destroy the retained sandboxes of `revision` now (a call running in one fails with E_SANDBOX_FAILED). */
  async terminate(revision: string): Promise<void> {
    const all = [...this.#entries.values()].filter((e) => e.revision === revision);
    await Promise.all(all.map((e) => this.#retire(e, 'terminated', true)));
  }

  /** Destroy every sandbox; later calls fail with E_SANDBOX_UNAVAILABLE. */
  async shutdown(): Promise<void> {
    this.#closed = true;
    const all: Promise<void>[] = [];
    for (const e of [...this.#entries.values()]) all.push(this.#retire(e, 'shutdown', true));
    for (const d of this.#disposables) all.push(d.destroy('shutdown'));
    await Promise.allSettled(all);
  }
}

/** Resolve when `turn` settles; reject with E_ABORTED if `signal` fires first. */
function waitTurn(turn: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal === NEVER_ABORTED) return turn;
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(new TyError('E_ABORTED', 'call aborted while waiting for the sandbox'));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    void turn.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}

/**
 * Start a sandbox (spawn + module load) within the call's own time limit: the load counts against the call's
 * `timeoutMs` (the runtime's own start budget still applies when smaller). Past `deadline` (ms since the epoch)
 * the start is aborted and the call fails with E_TIMEOUT at once, even if the runtime ignores the abort (a
 * sandbox it still delivers is destroyed).
 */
async function startWithin(
  runtime: SandboxRuntime,
  spec: SandboxSpec,
  signal: AbortSignal,
  deadline: number,
): Promise<SandboxInstance> {
  const ac = new AbortController();
  const onAbort = () => ac.abort();
  if (signal.aborted) ac.abort();
  else signal.addEventListener('abort', onAbort, { once: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = timeoutError(spec.limits.timeoutMs, runtimeOf(spec), 'start');
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        reject(late);
        ac.abort();
      },
      Math.max(0, deadline - Date.now()),
    );
  });
  const starting = runtime.start(spec, ac.signal);
  try {
    return await Promise.race([starting, timeout]);
  } catch (e) {
    if (ac.signal.aborted && !signal.aborted) {
      void starting.then(
        (inst) => inst.destroy('start timed out'),
        () => {},
      );
      throw late;
    }
    throw e;
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
  }
}

/** The runtime a spec's code runs in (`javascript` for anything that is not Python). */
function runtimeOf(spec: SandboxSpec): 'javascript' | 'python' {
  const e = spec.manifest.execution;
  return e.kind === 'sandboxed-code' && e.runtime === 'python' ? 'python' : 'javascript';
}

/** A call's canonical arguments text as the caller gave it, its sent hook and progress listener (PoolCallOptions). */
type ArgsText = Pick<PoolCallOptions, 'argsJson' | 'argsParts' | 'onSent' | 'onProgress'>;

/**
 * Call with the pool's own timeout and abort guard: either kills the sandbox and rejects with a stable code.
 * The time left until `deadline` (ms since the epoch; set before the sandbox started) bounds the call.
 */
function guarded(
  inst: SandboxInstance,
  args: unknown,
  spec: SandboxSpec,
  onCapability: CapabilityHandler,
  signal: AbortSignal,
  deadline: number,
  text: ArgsText,
): Promise<unknown> {
  const full = spec.limits;
  const left = Math.max(1, deadline - Date.now());
  const runtime = runtimeOf(spec);
  // the part of the call running (a Python call starts in its module's top-level code; the sandbox says when main runs)
  let phase: CallPhase = runtime === 'python' ? 'module' : 'main';
  return new Promise<unknown>((resolve, reject) => {
    let settled = false;
    const listen = signal !== NEVER_ABORTED;
    const finish = (f: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (listen) signal.removeEventListener('abort', onAbort);
      f();
    };
    const onAbort = () =>
      finish(() => {
        void inst.destroy('aborted').then(() => reject(new TyError('E_ABORTED', 'call aborted; sandbox destroyed')));
      });
    const timer = setTimeout(
      () =>
        finish(() => {
          void inst.destroy('timeout').then(() => reject(timeoutError(full.timeoutMs, runtime, phase)));
        }),
      left,
    );
    if (listen) signal.addEventListener('abort', onAbort, { once: true });
    const o: CallOptions = { signal, onCapability, limits: full, onPhase: (p) => (phase = p) };
    if (spec.settings) o.settings = spec.settings;
    if (text.argsJson !== undefined) o.argsJson = text.argsJson;
    if (text.argsParts !== undefined) o.argsParts = text.argsParts;
    const onProgress = text.onProgress;
    if (onProgress) {
      o.onProgress = (fraction, message) =>
        onProgress(message === undefined ? { stage: 'progress', fraction } : { stage: 'progress', fraction, message });
      try {
        onProgress({ stage: 'started' });
      } catch {
        /* a listener's failure is its own */
      }
    }
    if (text.onSent !== undefined) o.onSent = text.onSent;
    inst.call(args, o).then(
      (v) => finish(() => resolve(v)),
      (e: unknown) => finish(() => reject(toTyError(e, 'E_SANDBOX_FAILED'))),
    );
  });
}
