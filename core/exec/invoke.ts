// One tool call end to end (resolve -> validate -> gate -> execute -> check result); core, trusted side.
import type { ErrorCode } from '../../protocol/errors.js';
import { checkFrames, mapFrames, type ToolFrame } from './stack.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import type { CapabilityName } from '../../protocol/wire.js';
import { canonicalParts, joinParts } from '../revisions/canonical.js';
import { utf8Length, type ByteLength } from './bytes.js';
import { TyError, toTyError } from '../errors.js';
import type { ToolRegistry } from '../revisions/registry.js';
import {
  DEFAULT_LIMITS,
  DURABLE_INTENT,
  NEVER_ABORTED,
  type CallLimits,
  type CapabilityHandler,
  type Gate,
  type GateRequest,
  type IntentRecord,
  type Principal,
  type SandboxSpec,
} from './runtime.js';
import { ArgValidator } from '../schema/validate.js';
import { applyDefaults, type ToolSettings } from '../revisions/settings.js';
import { NO_TRACE, type CallReport, type CallTracer } from './trace.js';
import type { RefusalCounter } from '../audit/refusals.js';

/** Who a call runs as: the exact revision plus the acting principal. Capability handlers key on this. */
export interface ToolIdentity {
  name: string;
  revision: string;
  manifest: ToolManifest;
  principal: Principal;
}

/** The part of the sandbox pool (core/exec/pool.ts) the invoker uses. */
export interface PoolLike {
  /** @throws TyError E_TIMEOUT, E_OUTPUT_LIMIT, E_TOOL_FAILED, E_ABORTED, E_MEMORY_LIMIT, E_SANDBOX_FAILED, ... */
  call(
    spec: SandboxSpec,
    args: unknown,
    opts: {
      signal: AbortSignal;
      onCapability: CapabilityHandler;
      disposable?: boolean;
      limits: CallLimits;
      argsJson?: string;
      argsParts?: readonly string[];
      /** Told once the call message was handed to the sandbox (CallOptions.onSent). */
      onSent?: () => void;
    },
  ): Promise<unknown>;
}

/** The context a trusted-native function receives. */
export interface NativeContext {
  signal: AbortSignal;
  identity: ToolIdentity;
  capability: CapabilityHandler;
  /** The call's settings values (defaults applied); `{}` for a revision without settings. */
  settings: Record<string, unknown>;
}

/**
 * A call's outcome. On failure `error.data` holds host-neutral facts of a host refusal (the rule that would allow it,
 * the paused name, ...), or for E_TOOL_FAILED `{ origin: 'tool' | 'server' }` when the message is the tool's (or its
 * MCP server's) own text rather than the host's.
 */
export type InvokeResult =
  | { ok: true; revision: string; result: unknown; feedback?: string[]; settingsRevision?: string }
  | {
      ok: false;
      revision?: string;
      error: { code: ErrorCode; message: string; frames?: ToolFrame[]; data?: Record<string, unknown> };
    };

export interface InvokerOptions {
  registry: ToolRegistry;
  /**
   * Settings revisions of tool revisions (core/revisions/settings.ts); without it a revision with a settings schema
   * runs with the schema's defaults only.
   */
  settings?: Pick<ToolSettings, 'forCall'>;
  /** Runs sandboxed-code revisions; without one they fail with E_SANDBOX_UNAVAILABLE. */
  pool?: PoolLike;
  /** Permission gate; default allows every tool call (capabilities are still denied by default). */
  gate?: Gate;
  validator?: ArgValidator;
  /** Capability handler per call identity; default refuses every capability with E_CAPABILITY_DENIED. */
  capabilities?: (identity: ToolIdentity) => CapabilityHandler;
  /** Bridge for external-service revisions (e.g. MCP); default fails with E_TOOL_FAILED. */
  external?: (identity: ToolIdentity, args: unknown, signal: AbortSignal) => Promise<unknown>;
  /** Host defaults where the manifest asks for nothing (default DEFAULT_LIMITS). */
  defaultLimits?: CallLimits;
  /** Host maxima every request is clamped to (default 10 min, 16 MiB, 2048 MiB). */
  maxLimits?: CallLimits;
  /** Default principal (default `app`). */
  principal?: Principal;
  /** Largest serialized arguments accepted, bytes (default 8 MiB). */
  maxArgsBytes?: number;
  /** UTF-8 byte length of a text (default core/exec/bytes.ts utf8Length; Node passes Buffer.byteLength). */
  byteLength?: ByteLength;
  /**
   * Admission control: most calls in flight on this host at once (running or waiting for their turn), default
   * DEFAULT_MAX_QUEUED_CALLS. A call beyond it is refused at once with E_BUSY; nothing of it has started.
   */
  maxQueuedCalls?: number;
  /** Traces each call (`tysandbox.call`, `tysandbox.sandbox`, `tysandbox.capability` spans); default none. */
  tracer?: CallTracer;
  /** Told of every answered call, refusals included (metrics); must not throw. */
  observe?: (report: CallReport) => void;
  /**
   * Counts each admission refusal (E_BUSY) for the audit, in aggregate per principal and second
   * (core/audit/refusals.ts RefusalTally); counting never waits and never fails the refusal.
   */
  refusals?: RefusalCounter;
}

/** Default bound on calls in flight per host (InvokerOptions.maxQueuedCalls). */
export const DEFAULT_MAX_QUEUED_CALLS = 1024;

export interface InvokeOptions {
  signal?: AbortSignal;
  /** Fresh sandbox for this call only. */
  disposable?: boolean;
  /** Per-call timeout, ms; clamped to the host maximum. */
  timeoutMs?: number;
  principal?: Principal;
  /** CLI: canonical folders for the OS sandbox. */
  folders?: SandboxSpec['folders'];
  /** A task's pinned settings revision (must belong to the resolved tool revision); default: the current one. */
  settingsRevision?: string;
}

export const MAX_LIMITS: CallLimits = { timeoutMs: 600_000, outputBytes: 16 * 1024 * 1024, memoryMb: 2048 };

const denyAll: CapabilityHandler = async (name: CapabilityName) => {
  throw new TyError('E_CAPABILITY_DENIED', `${name}: capabilities are not enabled`);
};

/**
 * Effective limits: the manifest's request (else the host default), then a per-call timeout, each clamped to the host
 * maximum.
 */
export function effectiveLimits(
  manifest: ToolManifest,
  defaults: CallLimits,
  max: CallLimits,
  timeoutMs?: number,
): CallLimits {
  const m = manifest.limits ?? {};
  return {
    timeoutMs: Math.min(timeoutMs ?? m.timeoutMs ?? defaults.timeoutMs, max.timeoutMs),
    outputBytes: Math.min(m.outputBytes ?? defaults.outputBytes, max.outputBytes),
    memoryMb: Math.min(m.memoryMb ?? defaults.memoryMb, max.memoryMb),
  };
}

/**
 * A limit error names the manifest field that raises the limit and its current value (and the host's maximum),
 * e.g. `...; the limit is the manifest's limits.outputBytes (now 2097152 bytes; at most 16777216)`.
 */
function limitMessage(err: TyError, limits: CallLimits | undefined, max: CallLimits): string {
  if (!limits) return err.message;
  if (err.code === 'E_OUTPUT_LIMIT')
    return `${err.message}; the limit is the manifest's limits.outputBytes (now ${limits.outputBytes} bytes; at most ${max.outputBytes})`;
  if (err.code === 'E_MEMORY_LIMIT')
    return `${err.message}; the limit is the manifest's limits.memoryMb (now ${limits.memoryMb} MiB; at most ${max.memoryMb})`;
  return err.message;
}

/**
 * Runs one call end to end and returns a decision object; never throws for tool or input faults.
 * Order: registry.resolve (E_UNKNOWN_TOOL, E_INTEGRITY) -> arguments are JSON data within the size cap
 * and match the revision's parameters (E_INVALID_ARGS; nothing has started yet) -> gate.run (permission,
 * asking, hooks) -> execute by execution kind (pool / native / external bridge) -> result checked:
 * JSON data, at most `outputBytes` serialized (E_OUTPUT_LIMIT), matching `outputSchema` when present.
 * When the tool fails by letting a capability refusal of this call propagate (E_TOOL_FAILED whose
 * `data.toolCode` equals the code the host refused with), the host's refusal is reported instead; a code
 * merely claimed by the tool is never promoted. The promotion and the result checks run inside the gate's
 * execute step, so the audit record carries the same code the caller gets. The question shown to a person
 * carries the arguments as one JSON line (`GateRequest.preview`; the gate withholds known secret values).
 */
export class Invoker {
  readonly #o: InvokerOptions;
  readonly #validator: ArgValidator;
  readonly #max: number;
  #inFlight = 0;
  /** Per tool name: settles when the latest call of that name has joined its sandbox's queue (or failed before). */
  readonly #order = new Map<string, Promise<void>>();
  constructor(opts: InvokerOptions) {
    this.#o = opts;
    this.#validator = opts.validator ?? new ArgValidator();
    this.#max = opts.maxQueuedCalls ?? DEFAULT_MAX_QUEUED_CALLS;
    if (!Number.isSafeInteger(this.#max) || this.#max < 1)
      throw new TyError('E_USAGE', 'maxQueuedCalls must be a positive integer');
  }

  /** Calls in flight now (admitted, not yet answered). */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * Calls of one tool name reach their sandbox in the order `invoke` was called (FIFO): each call does its
   * resolve, validation and gate steps after the previous call of that name has joined the sandbox's queue
   * (core/exec/pool.ts serializes from there) or ended. A call waiting for a person's answer holds later calls
   * of the same tool behind it. Beyond `maxQueuedCalls` calls in flight, a call is refused with E_BUSY (and counted in
   * `refusals`, audited in aggregate).
   */
  async invoke(ref: string, args: unknown, opts: InvokeOptions = {}): Promise<InvokeResult> {
    const key = ref.split('@')[0] ?? ref;
    const observe = this.#o.observe;
    if (!observe && !this.#o.tracer) return this.#admitted(ref, key, args, opts);
    const t0 = performance.now();
    const principal = opts.principal ?? this.#o.principal ?? 'app';
    let execution: ToolManifest['execution'] | undefined;
    const r = await (this.#o.tracer ?? NO_TRACE).span(
      'tysandbox.call',
      { 'tysandbox.tool': key, 'tysandbox.principal': principal },
      async (span) => {
        const out = await this.#admitted(ref, key, args, opts, (m) => {
          execution = m.execution;
          span.set(executionAttributes(m));
        });
        span.set(
          out.ok
            ? { 'tysandbox.outcome': 'ok', 'tysandbox.revision': out.revision }
            : { 'tysandbox.outcome': out.error.code, ...(out.revision ? { 'tysandbox.revision': out.revision } : {}) },
        );
        return out;
      },
    );
    try {
      observe?.({
        tool: key,
        ...(execution ? { execution } : {}),
        outcome: r.ok ? 'ok' : r.error.code,
        seconds: (performance.now() - t0) / 1000,
        principal,
      });
    } catch {
      /* an observer's failure is its own */
    }
    return r;
  }

  async #admitted(
    ref: string,
    key: string,
    args: unknown,
    opts: InvokeOptions,
    resolved?: (m: ToolManifest) => void,
  ): Promise<InvokeResult> {
    if (this.#inFlight >= this.#max) {
      this.#o.refusals?.refused({
        principal: opts.principal ?? this.#o.principal ?? 'app',
        reason: `admission limit: ${this.#max} calls in flight on this host`,
        tool: ref.split('@')[0] ?? ref,
      });
      return {
        ok: false,
        error: {
          code: 'E_BUSY',
          message: `the host has ${this.#max} calls in flight (its admission limit); retry later`,
        },
      };
    }
    this.#inFlight++;
    const prev = this.#order.get(key);
    let joined!: () => void;
    const mine = new Promise<void>((r) => (joined = r));
    this.#order.set(key, mine);
    try {
      if (prev) await prev;
      return await this.#invoke(ref, args, opts, joined, resolved);
    } finally {
      joined();
      if (this.#order.get(key) === mine) this.#order.delete(key);
      this.#inFlight--;
    }
  }

  async #invoke(
    ref: string,
    args: unknown,
    opts: InvokeOptions,
    joined: () => void,
    resolved?: (m: ToolManifest) => void,
  ): Promise<InvokeResult> {
    let revision: string | undefined;
    let manifest: ToolManifest | undefined;
    let limitsUsed: CallLimits | undefined;
    let refused: TyError | undefined;
    try {
      if (opts.signal?.aborted) throw new TyError('E_ABORTED', 'the call was cancelled');
      const tool = await this.#o.registry.resolve(ref);
      revision = tool.revision;
      manifest = tool.manifest;
      resolved?.(tool.manifest);
      // canonicalized once: the text measured here, previewed in a question and sent to the sandbox (in pieces)
      const argsParts = canonicalParts(args, 'E_INVALID_ARGS');
      const argsJson = joinParts(argsParts);
      const maxArgs = this.#o.maxArgsBytes ?? 8 * 1024 * 1024;
      if (argsBytesOver(argsParts, maxArgs, this.#o.byteLength ?? utf8Length))
        throw new TyError('E_INVALID_ARGS', `arguments exceed ${maxArgs} bytes`);
      this.#validator.validate(tool.revision, tool.manifest.parameters, args);
      // The settings this call runs with: the pinned or current settings revision, re-validated, defaults applied.
      let settingsRevision: string | undefined;
      let settings: Record<string, unknown> | undefined;
      if (tool.manifest.settings && this.#o.settings) {
        const s = await this.#o.settings.forCall(tool, opts.settingsRevision);
        settingsRevision = s.settingsRevision;
        settings = s.effective;
      } else if (opts.settingsRevision !== undefined) {
        throw new TyError(
          'E_INVALID_SETTINGS',
          `${tool.name}@${tool.revision} has no settings revision ${opts.settingsRevision} on this host`,
        );
      } else if (tool.manifest.settings) settings = applyDefaults(tool.manifest.settings, {});

      const identity: ToolIdentity = {
        name: tool.name,
        revision: tool.revision,
        manifest: tool.manifest,
        principal: opts.principal ?? this.#o.principal ?? 'app',
      };
      const limits = effectiveLimits(
        tool.manifest,
        this.#o.defaultLimits ?? DEFAULT_LIMITS,
        this.#o.maxLimits ?? MAX_LIMITS,
        opts.timeoutMs,
      );
      limitsUsed = limits;
      // made on the call's first capability request (most calls make none)
      let handler: CapabilityHandler | undefined;
      let intent: IntentRecord = DURABLE_INTENT;
      const tracer = this.#o.tracer;
      // Every capability request waits until the call's intent record is durable (no effect without its durable
      // audit record); the host's own refusals are remembered, so an uncaught one is reported with its code (never a
      // tool's claim).
      const onCapability: CapabilityHandler = async (name, params, signal) => {
        try {
          await intent.durable;
          const h = (handler ??= this.#o.capabilities?.(identity) ?? denyAll);
          return tracer
            ? await tracer.span('tysandbox.capability', { 'tysandbox.capability': name }, () => h(name, params, signal))
            : await h(name, params, signal);
        } catch (e) {
          refused = toTyError(e, 'E_CAPABILITY_DENIED');
          throw e;
        }
      };
      const req: GateRequest = {
        principal: identity.principal,
        kind: 'tool',
        toolName: tool.name,
        revision: tool.revision,
        hookPayload: { arguments: args },
        preview: `arguments: ${argsJson}`,
      };
      // Everything that decides the caller's outcome happens inside `execute`, so the gate's audit record and
      // post-hooks see the same code the caller gets: the host's refusal when the tool let one propagate, and
      // result checks (E_OUTPUT_LIMIT, outputSchema).
      const execute = async (started: IntentRecord = DURABLE_INTENT): Promise<unknown> => {
        intent = started;
        let value: unknown;
        try {
          const run = () =>
            this.#execute(identity, args, argsJson, argsParts, limits, onCapability, opts, joined, started, settings);
          value = tracer
            ? await tracer.span('tysandbox.sandbox', executionAttributes(tool.manifest), run)
            : await run();
        } catch (e) {
          const err = toTyError(e, 'E_TOOL_FAILED');
          // The tool let a capability refusal propagate: report the host's refusal (code and message).
          if (err.code === 'E_TOOL_FAILED' && refused && err.data?.toolCode === refused.code)
            throw new TyError(
              refused.code,
              `${refused.message} (the tool did not handle this error from the host)`,
              refused.data,
            );
          throw e;
        }
        const result = this.#checkResult(value, limits);
        if (tool.manifest.outputSchema)
          this.#validator.validateResult(tool.revision, tool.manifest.outputSchema, result);
        return result;
      };
      const { value: result, feedback } = this.#o.gate
        ? await this.#o.gate.run(req, execute)
        : { value: await execute(), feedback: undefined };
      const ok: InvokeResult & { ok: true } = feedback?.length
        ? { ok: true, revision: tool.revision, result, feedback }
        : { ok: true, revision: tool.revision, result };
      if (settingsRevision !== undefined) ok.settingsRevision = settingsRevision;
      return ok;
    } catch (e) {
      const err = toTyError(e, 'E_TOOL_FAILED');
      const error: { code: ErrorCode; message: string; frames?: ToolFrame[]; data?: Record<string, unknown> } = {
        code: err.code,
        message: limitMessage(err, limitsUsed, this.#o.maxLimits ?? MAX_LIMITS),
      };
      // The tool's own frames, mapped to its source files through the revision's source map (never host frames).
      const raw = err.code === 'E_TOOL_FAILED' && manifest ? checkFrames(err.data?.frames) : undefined;
      const frames = raw && manifest ? mapFrames(manifest, raw) : [];
      if (frames.length > 0) error.frames = frames;
      // host-neutral facts of a host refusal (the rule that would allow it, the paused name, ...): each host renders
      // its own hint
      if (err.data !== undefined && err.code !== 'E_TOOL_FAILED') error.data = err.data;
      // the message is text the tool (or an MCP server) wrote, not the host: hosts show it apart from their own lines
      if (err.code === 'E_TOOL_FAILED' && (err.data?.origin === 'tool' || err.data?.origin === 'server'))
        error.data = { origin: err.data.origin };
      return revision === undefined ? { ok: false, error } : { ok: false, revision, error };
    }
  }

  /**
   * `joined` is called once the call holds its place in the sandbox's queue (pool.call enqueues synchronously).
   * Sandboxed code runs at once, its intent record's fsync begun as its call message leaves (the sandbox reaches
   * nothing but through `onCapability`, which waits for it); native code and a bridged service's call have effects
   * of their own, so they start only once the intent record is durable.
   */
  async #execute(
    identity: ToolIdentity,
    args: unknown,
    argsJson: string,
    argsParts: readonly string[],
    limits: CallLimits,
    onCapability: CapabilityHandler,
    opts: InvokeOptions,
    joined: () => void,
    intent: IntentRecord,
    settings?: Record<string, unknown>,
  ): Promise<unknown> {
    const exec = identity.manifest.execution;
    const signal = opts.signal ?? NEVER_ABORTED;
    switch (exec.kind) {
      case 'sandboxed-code': {
        if (!this.#o.pool) throw new TyError('E_SANDBOX_UNAVAILABLE', 'no sandbox runtime is configured on this host');
        const spec: SandboxSpec = opts.folders
          ? { revision: identity.revision, manifest: identity.manifest, limits, folders: opts.folders }
          : { revision: identity.revision, manifest: identity.manifest, limits };
        if (settings) spec.settings = settings;
        spec.principal = identity.principal;
        const running = this.#o.pool.call(spec, args, {
          signal,
          onCapability,
          disposable: opts.disposable ?? false,
          limits,
          argsJson,
          argsParts,
          // alone on this host: the fsync may run on this thread while the tool runs in its sandbox
          onSent: () => intent.begin(this.#inFlight === 1),
        });
        joined();
        return running;
      }
      case 'trusted-native': {
        joined();
        intent.begin(this.#inFlight === 1);
        await intent.durable;
        const fn = this.#o.registry.getNative(identity.revision);
        if (!fn)
          throw new TyError(
            'E_TOOL_FAILED',
            `no native implementation is registered for ${identity.name}@${identity.revision} in this application`,
          );
        return withTimeout(limits.timeoutMs, signal, (s) =>
          fn(args, { signal: s, identity, capability: onCapability, settings: settings ?? {} } satisfies NativeContext),
        );
      }
      case 'external-service': {
        joined();
        intent.begin(this.#inFlight === 1);
        await intent.durable;
        const bridge = this.#o.external;
        if (!bridge)
          throw new TyError('E_TOOL_FAILED', `no bridge configured for the external service "${exec.serviceId}"`);
        return withTimeout(limits.timeoutMs, signal, (s) => bridge(identity, args, s));
      }
    }
  }

  #checkResult(value: unknown, limits: CallLimits): unknown {
    let json: string | undefined;
    try {
      json = JSON.stringify(value === undefined ? null : value);
    } catch {
      throw new TyError('E_TOOL_FAILED', 'the tool returned a value that is not JSON data');
    }
    if (json === undefined) throw new TyError('E_TOOL_FAILED', 'the tool returned a value that is not JSON data');
    // counted only when it could be over
    const bytes = json.length * 3 > limits.outputBytes ? (this.#o.byteLength ?? utf8Length)(json) : 0;
    if (bytes > limits.outputBytes)
      throw new TyError(
        'E_OUTPUT_LIMIT',
        `the result is ${bytes} bytes, over the limit of ${limits.outputBytes} bytes`,
      );
    return JSON.parse(json) as unknown;
  }
}

/** Span attributes of a revision's execution: its kind, runtime and engine. */
function executionAttributes(m: ToolManifest): Record<string, string> {
  const e = m.execution;
  const out: Record<string, string> = { 'tysandbox.execution': e.kind };
  if (e.kind === 'sandboxed-code') {
    out['tysandbox.runtime'] = e.runtime;
    if (e.engine) out['tysandbox.engine'] = e.engine;
  }
  return out;
}

/**
 * True when the UTF-8 text of `parts` (the canonical arguments, in pieces) is longer than `max` bytes. A UTF-16 code
 * unit is 1 to 3 bytes of UTF-8 (a surrogate pair 4 for 2), so bytes are counted only when the length leaves it open,
 * and piece by piece: the pieces are flat strings, their concatenation a rope that counting would flatten (a copy).
 */
function argsBytesOver(parts: readonly string[], max: number, byteLength: ByteLength): boolean {
  let units = 0;
  for (const p of parts) units += p.length;
  if (units > max) return true;
  if (units * 3 <= max) return false;
  let bytes = 0;
  for (const p of parts) bytes += byteLength(p);
  return bytes > max;
}

/** Run `fn` with a signal aborted after `ms` or when `outer` aborts; E_TIMEOUT / E_ABORTED win the race. */
async function withTimeout<T>(ms: number, outer: AbortSignal, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ac = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  const stop = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new TyError('E_TIMEOUT', `the call did not finish within ${ms} ms`));
      ac.abort();
    }, ms);
    onAbort = () => {
      reject(new TyError('E_ABORTED', 'the call was cancelled'));
      ac.abort();
    };
    if (outer.aborted) onAbort();
    else outer.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([fn(ac.signal), stop]);
  } finally {
    clearTimeout(timer);
    if (onAbort) outer.removeEventListener('abort', onAbort);
  }
}
