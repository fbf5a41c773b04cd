// Host side of the sandbox wire protocol v1 over an abstract port; host-agnostic core, trusted side (reused by node and
// browser hosts).
import { PROTOCOL_VERSION, type CallPhase } from '../../protocol/names.js';
import { sandboxMessage } from './wire-check.js';
import { checkFrames } from './stack.js';
import type { CapabilityName, HostMessage, SandboxMessage } from '../../protocol/wire.js';
import type { WireError } from '../../protocol/errors.js';
import { TyError } from '../errors.js';
import { NEVER_ABORTED, type CallOptions } from './runtime.js';
import { ProgressThrottle } from './progress.js';
import { timeoutError } from './timeouts.js';
import { utf8Length, type ByteLength } from './bytes.js';

/** A transport to one sandbox. `send` must deliver one message (node: one NDJSON line); `close` kills the sandbox. */
export interface SandboxPort {
  send(msg: HostMessage): void;
  /** Optional: deliver one message given as its JSON text (a transport of text lines: sent as is). */
  sendText?(json: string): void;
  /**
   * Optional: deliver one message given as JSON text in pieces, in order (their concatenation is the message). A
   * transport of bytes writes them one after the other (a long piece is encoded once, never joined to the rest).
   */
  sendParts?(parts: readonly string[]): void;
  close(): void;
}

export interface ChannelOptions {
  /** Log lines from tool code (console.*), already size-capped by the schema (8192 chars). */
  onLog?: (level: 'debug' | 'info' | 'warn' | 'error', text: string) => void;
  /** Host-side cap on log messages delivered per call; the rest are dropped (default 1000). */
  maxLogsPerCall?: number;
  /** More log messages than this within one second kills the sandbox with E_PROTOCOL (default 2000). */
  maxLogsPerSecond?: number;
  /** Host-side cap on capability requests in flight at once (default 32); more are refused with E_BUSY. */
  maxCapsInFlight?: number;
  /** Clock for the log-rate window, ms (default Date.now; tests inject one). */
  now?: () => number;
  /** Called once when the channel dies, with the reason (after pending work was rejected). */
  onClosed?: (reason: TyError) => void;
  /** UTF-8 byte length of a result's text (default core/exec/bytes.ts utf8Length; Node passes Buffer.byteLength). */
  byteLength?: ByteLength;
}

interface PendingCall {
  resolve(v: unknown): void;
  reject(e: TyError): void;
  opts: CallOptions;
  /** Created on the first capability request; aborted when the call ends in any way. */
  capAbort: AbortController | undefined;
  /** When this call times out: monotonic ms (performance.now()). */
  deadline: number;
  /** This call's own abort listener, when the channel's shared one listens on another call's signal. */
  onAbort: (() => void) | undefined;
  /** Created on the first progress report of a call with `opts.onProgress`; closed when the call ends. */
  progress?: ProgressThrottle;
  /** The part of the call running now (a `phase` message moves it), named by a time limit reached. */
  phase: CallPhase;
}

const monotonicNow = (): number => performance.now();

/** Node's Timeout keeps the process alive only while referenced; a browser's timer id has neither method. */
function setTimerRef(t: ReturnType<typeof setTimeout>, on: boolean): void {
  const o = t as unknown as { ref?: () => unknown; unref?: () => unknown };
  if (on) o.ref?.();
  else o.unref?.();
}

/** A call message's text up to its arguments' value: `{"v":1,"type":"call","id":N[,"settings":{...}],"args":`. */
function callHead(id: number, settings: Record<string, unknown> | undefined): string {
  return `{"v":${PROTOCOL_VERSION},"type":"call","id":${id}${settings ? `,"settings":${JSON.stringify(settings)}` : ''},"args":`;
}

/**
 * True for a successful `result` message exactly as ResultMessageSchema accepts it: the keys v, type, id, ok and json
 * only, with their types and ranges. Anything else returns false (and goes through the schema), so this accepts only
 * what the schema accepts.
 */
export function plainResult(v: unknown): v is Extract<SandboxMessage, { type: 'result' }> {
  if (v === null || typeof v !== 'object' || Array.isArray(v) || Object.getPrototypeOf(v) !== Object.prototype)
    return false;
  const m = v as Record<string, unknown>;
  let n = 0;
  for (const k in m) {
    if (k !== 'v' && k !== 'type' && k !== 'id' && k !== 'ok' && k !== 'json') return false;
    n++;
  }
  const id = m.id;
  return (
    n === 5 &&
    m.v === PROTOCOL_VERSION &&
    m.type === 'result' &&
    m.ok === true &&
    typeof m.json === 'string' &&
    typeof id === 'number' &&
    Number.isSafeInteger(id) &&
    id >= 0
  );
}

const TOOL_ERROR_NAME = /^[\w$.-]{1,128}$/;
const TOOL_ERROR_CODE = /^E_[A-Z0-9_]{1,60}$/;

/**
 * Rebuild a sandbox-reported error as a host TyError carrying only strings (and the tool's own frames, checked;
 * core/exec/stack.ts). `data.origin` is `tool`: the message is the tool's own text, which hosts show apart from their
 * own lines (the command line prints it under a `tool: ` prefix).
 */
function rebuildToolError(err: WireError | undefined, fallback: string): TyError {
  const message = typeof err?.message === 'string' ? err.message.slice(0, 4096) : fallback;
  const data: Record<string, unknown> = { origin: 'tool' };
  const d = err?.data;
  if (d !== null && typeof d === 'object' && !Array.isArray(d)) {
    const name = (d as Record<string, unknown>).name;
    const code = (d as Record<string, unknown>).code;
    if (typeof name === 'string' && TOOL_ERROR_NAME.test(name)) data.name = name;
    if (typeof code === 'string' && TOOL_ERROR_CODE.test(code)) data.toolCode = code;
    const frames = checkFrames((d as Record<string, unknown>).frames);
    if (frames) data.frames = frames;
  }
  return new TyError('E_TOOL_FAILED', message, data);
}

/**
 * One sandbox's protocol state on the host: handshake (`ready` -> `load` -> `loaded`), calls correlated by
 * id, capability requests dispatched to the call's CapabilityHandler, results size-checked and parsed here.
 * Every incoming message is validated against protocol/wire.ts SandboxMessageSchema (by core/exec/wire-check.ts, which
 * gives
 * the schema's verdict without loading zod); anything unexpected is
 * E_PROTOCOL and kills the sandbox. No guest object ever reaches the host: results arrive as JSON text and
 * are parsed with the host's JSON.parse.
 */
export class SandboxChannel {
  #port: SandboxPort;
  #opts: ChannelOptions;
  #dead: TyError | undefined;
  #ready: {
    promise: Promise<{ runtime: string; version?: string }>;
    resolve: (v: { runtime: string; version?: string }) => void;
    reject: (e: TyError) => void;
  };
  #loaded: { resolve: () => void; reject: (e: TyError) => void } | undefined;
  #loadState: 'none' | 'loading' | 'loaded' = 'none';
  /** The runtime loaded (`load`): a Python call starts in its module's top-level code, a JavaScript one in `main`. */
  #runtime: 'javascript' | 'python' = 'javascript';
  #calls = new Map<number, PendingCall>();
  #caps = new Map<number, AbortController>();
  #nextCallId = 1;
  #logs = 0;
  #logWindow = 0;
  #logWindowCount = 0;

  constructor(port: SandboxPort, opts: ChannelOptions = {}) {
    this.#port = port;
    this.#opts = opts;
    let resolve!: (v: { runtime: string; version?: string }) => void;
    let reject!: (e: TyError) => void;
    const promise = new Promise<{ runtime: string; version?: string }>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    promise.catch(() => {});
    this.#ready = { promise, resolve, reject };
  }

  get alive(): boolean {
    return this.#dead === undefined;
  }
  /** Why the channel died, if it did. */
  get closedReason(): TyError | undefined {
    return this.#dead;
  }
  /** Number of calls in flight (the pool keeps this at most 1). */
  get busy(): number {
    return this.#calls.size;
  }

  /**
   * Wait for `ready`, send `load`, wait for `loaded`.
   * @param timeoutMs startup budget (ms); on expiry E_TIMEOUT and the sandbox is killed.
   * @throws TyError E_TOOL_FAILED (module failed to evaluate / no default export), E_TIMEOUT, E_ABORTED, E_PROTOCOL,
   *   E_SANDBOX_FAILED.
   */
  async load(runtime: 'javascript' | 'python', source: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (this.#dead) throw this.#dead;
    if (this.#loadState !== 'none') throw new TyError('E_PROTOCOL', 'load called twice');
    this.#loadState = 'loading';
    this.#runtime = runtime;
    const timer = setTimeout(
      () => this.fail(new TyError('E_TIMEOUT', `sandbox did not start within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const onAbort = () => this.fail(new TyError('E_ABORTED', 'sandbox start aborted'));
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await this.#ready.promise;
      await new Promise<void>((resolve, reject) => {
        this.#loaded = { resolve, reject };
        this.#send({ v: PROTOCOL_VERSION, type: 'load', runtime, source });
      });
      this.#loadState = 'loaded';
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Run one call. Enforces `opts.limits.timeoutMs` (E_TIMEOUT) and `opts.signal` (E_ABORTED); both kill the
   * sandbox. The result JSON is measured against `opts.limits.outputBytes` (UTF-8 bytes): over the cap is
   * E_OUTPUT_LIMIT, never truncation.
   * @throws TyError E_TOOL_FAILED, E_OUTPUT_LIMIT, E_TIMEOUT, E_ABORTED, E_PROTOCOL, E_SANDBOX_FAILED, E_MEMORY_LIMIT,
   *   E_INVALID_ARGS (args not JSON).
   */
  call(args: unknown, opts: CallOptions): Promise<unknown> {
    if (this.#dead) return Promise.reject(this.#dead);
    if (this.#loadState !== 'loaded')
      return Promise.reject(new TyError('E_PROTOCOL', 'call before the tool was loaded'));
    if (opts.signal.aborted) return Promise.reject(new TyError('E_ABORTED', 'call aborted before it started'));
    const id = this.#nextCallId++;
    const deadline = monotonicNow() + opts.limits.timeoutMs;
    return new Promise<unknown>((resolve, reject) => {
      const pending: PendingCall = {
        resolve: (v) => {
          this.#endCall(id, pending);
          resolve(v);
        },
        reject: (e) => {
          this.#endCall(id, pending);
          reject(e);
        },
        opts,
        capAbort: undefined,
        deadline,
        onAbort: undefined,
        phase: this.#runtime === 'python' ? 'module' : 'main',
      };
      this.#calls.set(id, pending);
      this.#logs = 0;
      this.#watchAbort(pending);
      this.#armDeadline(deadline);
      try {
        const { sendText, sendParts } = this.#port;
        const pieces = opts.argsParts;
        if (pieces !== undefined && pieces.length > 1 && sendParts) {
          // the host's canonical text of `args` in its pieces, spliced in unchanged: a long string goes out as given
          const last = pieces.length - 1;
          const out = [callHead(id, opts.settings) + pieces[0]!];
          for (let i = 1; i < last; i++) out.push(pieces[i]!);
          out.push(pieces[last] + '}');
          sendParts.call(this.#port, out);
        } else if (opts.argsJson !== undefined && sendText) {
          // the host's canonical text of `args`, spliced in unchanged (no second serialization of the arguments)
          sendText.call(this.#port, `${callHead(id, opts.settings)}${opts.argsJson}}`);
        } else
          this.#port.send(
            opts.settings
              ? { v: PROTOCOL_VERSION, type: 'call', id, args, settings: opts.settings }
              : { v: PROTOCOL_VERSION, type: 'call', id, args },
          );
      } catch (e) {
        const p = this.#calls.get(id);
        p?.reject(e instanceof TyError ? e : new TyError('E_INVALID_ARGS', 'arguments are not JSON data'));
        return;
      }
      opts.onSent?.();
    });
  }

  // Per-call timeout and abort without a timer and a listener per call (each cost more than the rest of a small
  // call's host work on a loaded machine: test/bench/runtime.bench.mjs). One timer serves every call's deadline: a
  // call that ends leaves it armed (unreferenced while no call is pending); when it fires it fails the channel for a
  // call past its deadline, else re-arms for the earliest pending one or stops. One shared listener stays on the
  // signal of the latest call while consecutive calls pass the same signal; an abort kills the sandbox only while
  // a call with that signal is pending.

  #deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  /** When the armed timer fires (monotonic ms); Infinity when none is armed. */
  #deadlineAt = Infinity;
  /** The signal the shared abort listener is on. */
  #abortSignal: AbortSignal | undefined;
  readonly #onSharedAbort = (): void => {
    const s = this.#abortSignal;
    this.#abortSignal = undefined;
    for (const c of this.#calls.values()) {
      if (c.opts.signal === s) return this.fail(new TyError('E_ABORTED', 'call aborted; sandbox destroyed'));
    }
  };
  readonly #onDeadline = (): void => {
    this.#deadlineTimer = undefined;
    this.#deadlineAt = Infinity;
    if (this.#dead) return;
    const now = monotonicNow();
    let next = Infinity;
    for (const c of this.#calls.values()) {
      if (c.deadline <= now) return this.fail(timeoutError(c.opts.limits.timeoutMs, this.#runtime, c.phase));
      if (c.deadline < next) next = c.deadline;
    }
    if (next !== Infinity) this.#armDeadline(next);
  };

  #armDeadline(at: number): void {
    if (this.#deadlineTimer !== undefined && this.#deadlineAt <= at) {
      setTimerRef(this.#deadlineTimer, true); // fires first; it re-arms for this call then
      return;
    }
    if (this.#deadlineTimer !== undefined) clearTimeout(this.#deadlineTimer);
    this.#deadlineAt = at;
    this.#deadlineTimer = setTimeout(this.#onDeadline, Math.max(1, Math.ceil(at - monotonicNow())));
  }

  #watchAbort(p: PendingCall): void {
    const s = p.opts.signal;
    if (s === NEVER_ABORTED || s === this.#abortSignal) return;
    const held = this.#abortSignal;
    let inUse = false;
    if (held !== undefined) for (const c of this.#calls.values()) if (c !== p && c.opts.signal === held) inUse = true;
    if (inUse) {
      // another pending call relies on the shared listener: this call gets its own
      p.onAbort = () => this.fail(new TyError('E_ABORTED', 'call aborted; sandbox destroyed'));
      s.addEventListener('abort', p.onAbort, { once: true });
      return;
    }
    held?.removeEventListener('abort', this.#onSharedAbort);
    this.#abortSignal = s;
    s.addEventListener('abort', this.#onSharedAbort, { once: true });
  }

  /** A call settled (once): forget it, end its capability requests; the shared timer and listener stay. */
  #endCall(id: number, p: PendingCall): void {
    if (this.#calls.get(id) !== p) return;
    this.#calls.delete(id);
    p.progress?.close();
    if (p.onAbort) p.opts.signal.removeEventListener('abort', p.onAbort);
    p.capAbort?.abort();
    if (this.#calls.size === 0 && this.#deadlineTimer !== undefined) setTimerRef(this.#deadlineTimer, false);
  }

  /**
   * Feed one message from the sandbox: a JSON text line or an already-structured value (postMessage).
   * Anything that does not validate kills the sandbox with E_PROTOCOL.
   */
  receive(raw: unknown): void {
    if (this.#dead) return;
    let value = raw;
    if (typeof raw === 'string') {
      try {
        value = JSON.parse(raw);
      } catch {
        this.fail(new TyError('E_PROTOCOL', 'sandbox sent a line that is not JSON'));
        return;
      }
    }
    // The common message (a successful result) is checked field by field; everything else as the schema checks it.
    if (plainResult(value)) return SandboxChannel.onResult(this, value);
    const msg = sandboxMessage(value);
    if (msg === undefined) {
      this.fail(new TyError('E_PROTOCOL', 'sandbox sent a message that does not match protocol v1'));
      return;
    }
    const handler = HANDLERS[msg.type] as ((ch: SandboxChannel, m: SandboxMessage) => void) | undefined;
    if (!handler) {
      this.fail(new TyError('E_PROTOCOL', 'unknown message type'));
      return;
    }
    handler(this, msg);
  }

  /**
   * End the channel (transport closed, process died, timeout, abort): reject everything pending, close the port.
   * Idempotent.
   */
  fail(reason: TyError): void {
    if (this.#dead) return;
    this.#dead = reason;
    this.#ready.reject(reason);
    this.#loaded?.reject(reason);
    this.#loaded = undefined;
    for (const c of [...this.#calls.values()]) c.reject(reason);
    if (this.#deadlineTimer !== undefined) clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = undefined;
    this.#abortSignal?.removeEventListener('abort', this.#onSharedAbort);
    this.#abortSignal = undefined;
    for (const a of this.#caps.values()) a.abort();
    this.#caps.clear();
    try {
      this.#port.close();
    } catch {
      /* already closed */
    }
    this.#opts.onClosed?.(reason);
  }

  #send(msg: HostMessage): void {
    if (this.#dead) return;
    try {
      this.#port.send(msg);
    } catch {
      this.fail(new TyError('E_SANDBOX_FAILED', 'could not write to the sandbox'));
    }
  }

  /**
   * A failed call's error as the host reports it. The Python guest runs Pyodide, whose memory limit and fatal failures
   * only it can see: its E_MEMORY_LIMIT (Pyodide's memory and in-memory files reached limits.memoryMb) and
   * E_SANDBOX_FAILED (Pyodide failed fatally) become the host's own codes, so the pool destroys that sandbox
   * (RETIRING_CODES); from a JavaScript sandbox, whose limits the host enforces itself, they stay the tool's
   * E_TOOL_FAILED. Either way the code is the sandbox's claim about itself: it can only fail its own call.
   */
  #sandboxError(e: TyError): TyError {
    const code = e.data?.toolCode;
    if (this.#runtime !== 'python' || (code !== 'E_MEMORY_LIMIT' && code !== 'E_SANDBOX_FAILED')) return e;
    // the wire message is the guest's `Error: message`: the host's own code carries the message alone
    return new TyError(code, e.message.replace(/^Error: /, ''));
  }

  // --- handlers (called through the null-prototype table below) ---
  static onReady(ch: SandboxChannel, m: Extract<SandboxMessage, { type: 'ready' }>): void {
    if (ch.#loadState === 'loaded') return ch.fail(new TyError('E_PROTOCOL', 'ready sent twice'));
    ch.#ready.resolve({ runtime: m.runtime, ...(m.version !== undefined ? { version: m.version } : {}) });
  }
  static onLoaded(ch: SandboxChannel, m: Extract<SandboxMessage, { type: 'loaded' }>): void {
    const l = ch.#loaded;
    if (!l) return ch.fail(new TyError('E_PROTOCOL', 'unexpected loaded message'));
    ch.#loaded = undefined;
    if (m.ok) l.resolve();
    else {
      const err = rebuildToolError(m.error, 'the tool module failed to load');
      l.reject(err);
      ch.fail(err);
    }
  }
  static onResult(ch: SandboxChannel, m: Extract<SandboxMessage, { type: 'result' }>): void {
    const call = ch.#calls.get(m.id);
    if (!call) return ch.fail(new TyError('E_PROTOCOL', 'result for an unknown call'));
    if (!m.ok) return call.reject(ch.#sandboxError(rebuildToolError(m.error, 'the tool failed')));
    if (m.json === undefined) return ch.fail(new TyError('E_PROTOCOL', 'result without json'));
    const cap = call.opts.limits.outputBytes;
    // Cheap bounds first (UTF-16 length <= UTF-8 bytes <= 3 x UTF-16 length), exact count only when it can matter.
    const len = m.json.length;
    if (len > cap || (len * 3 > cap && (ch.#opts.byteLength ?? utf8Length)(m.json) > cap)) {
      const err = new TyError('E_OUTPUT_LIMIT', `tool result exceeds the output limit of ${cap} bytes`);
      call.reject(err);
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(m.json);
    } catch {
      return ch.fail(new TyError('E_PROTOCOL', 'result json does not parse'));
    }
    call.resolve(value);
  }
  static onCap(ch: SandboxChannel, m: Extract<SandboxMessage, { type: 'cap' }>): void {
    const call = ch.#calls.get(m.callId);
    if (ch.#caps.has(m.id)) return ch.fail(new TyError('E_PROTOCOL', 'capability request id reused while in flight'));
    if (!call) {
      ch.#send({
        v: PROTOCOL_VERSION,
        type: 'cap-reply',
        id: m.id,
        ok: false,
        error: { code: 'E_CAPABILITY_DENIED', message: 'no tool call in progress' },
      });
      return;
    }
    if (ch.#caps.size >= (ch.#opts.maxCapsInFlight ?? 32)) {
      ch.#send({
        v: PROTOCOL_VERSION,
        type: 'cap-reply',
        id: m.id,
        ok: false,
        error: { code: 'E_BUSY', message: 'too many capability requests in flight' },
      });
      return;
    }
    const abort = new AbortController();
    const onCallEnd = () => abort.abort();
    call.capAbort ??= new AbortController();
    call.capAbort.signal.addEventListener('abort', onCallEnd, { once: true });
    ch.#caps.set(m.id, abort);
    void ch.#runCap(m.id, m.name, m.params, call, abort, onCallEnd);
  }
  async #runCap(
    id: number,
    name: CapabilityName,
    params: unknown,
    call: PendingCall,
    abort: AbortController,
    onCallEnd: () => void,
  ): Promise<void> {
    let reply: HostMessage;
    try {
      const value = await call.opts.onCapability(name, params, abort.signal);
      reply = { v: PROTOCOL_VERSION, type: 'cap-reply', id, ok: true, value: value === undefined ? null : value };
    } catch (e) {
      // Only a TyError's code and message reach tool code; anything else is a generic refusal (no host detail).
      const error =
        e instanceof TyError
          ? { code: e.code, message: e.message.slice(0, 4096) }
          : { code: 'E_CAPABILITY_DENIED', message: `${name} failed` };
      reply = { v: PROTOCOL_VERSION, type: 'cap-reply', id, ok: false, error };
    } finally {
      call.capAbort?.signal.removeEventListener('abort', onCallEnd);
    }
    if (!this.#caps.has(id)) return; // channel died meanwhile
    this.#caps.delete(id);
    if (this.#dead) return;
    try {
      this.#port.send(reply);
    } catch {
      // the value was not JSON-serializable: the handler's bug, reported to the tool without detail
      this.#send({
        v: PROTOCOL_VERSION,
        type: 'cap-reply',
        id,
        ok: false,
        error: { code: 'E_CAPABILITY_DENIED', message: `${name} returned no JSON data` },
      });
    }
  }
  /**
   * `cap-cancel`: abort the signal the CapabilityHandler got for that request. An id no longer in flight (its reply
   * already sent) is ignored.
   */
  static onCapCancel(ch: SandboxChannel, m: Extract<SandboxMessage, { type: 'cap-cancel' }>): void {
    ch.#caps.get(m.id)?.abort(new TyError('E_ABORTED', 'the tool cancelled the request'));
  }
  /** `phase`: which part of call `id` runs now (PendingCall.phase); a phase for no call in flight is E_PROTOCOL. */
  static onPhase(ch: SandboxChannel, m: Extract<SandboxMessage, { type: 'phase' }>): void {
    const call = ch.#calls.get(m.id);
    if (!call) return ch.fail(new TyError('E_PROTOCOL', 'phase for an unknown call'));
    call.phase = m.phase;
    call.opts.onPhase?.(m.phase);
  }
  static onLog(ch: SandboxChannel, m: Extract<SandboxMessage, { type: 'log' }>): void {
    const cap = ch.#opts.maxLogsPerCall ?? 1000;
    // The sandbox's own rate cap (200/s) can be bypassed by tool code writing to its stdout directly: 10x that is
    // fatal.
    const now = (ch.#opts.now ?? Date.now)();
    if (now - ch.#logWindow >= 1000) {
      ch.#logWindow = now;
      ch.#logWindowCount = 0;
    }
    if (++ch.#logWindowCount > (ch.#opts.maxLogsPerSecond ?? 2000))
      return ch.fail(new TyError('E_PROTOCOL', 'sandbox flooded the host with log messages'));
    if (++ch.#logs > cap) return;
    ch.#opts.onLog?.(m.level, m.text);
  }
  /**
   * `progress`: the tool's report for call `callId`, coalesced (at most one per 100 ms, the latest kept; the one that
   * waits goes out when the call ends, before its result) to the call's `onProgress`. A report for a call that has
   * ended (or never was) is dropped: it is advisory. Reports count toward the same flood limit as log messages.
   */
  static onProgress(ch: SandboxChannel, m: Extract<SandboxMessage, { type: 'progress' }>): void {
    const now = (ch.#opts.now ?? Date.now)();
    if (now - ch.#logWindow >= 1000) {
      ch.#logWindow = now;
      ch.#logWindowCount = 0;
    }
    if (++ch.#logWindowCount > (ch.#opts.maxLogsPerSecond ?? 2000))
      return ch.fail(new TyError('E_PROTOCOL', 'sandbox flooded the host with progress messages'));
    const call = ch.#calls.get(m.callId);
    const fn = call?.opts.onProgress;
    if (!call || !fn) return;
    call.progress ??= new ProgressThrottle((r) => fn(r.fraction, r.message));
    call.progress.push(
      m.message === undefined ? { fraction: m.fraction } : { fraction: m.fraction, message: m.message },
    );
  }
}

/** Null-prototype dispatch: a `type` without an entry fails closed. */
const HANDLERS: Record<string, (ch: SandboxChannel, m: never) => void> = Object.assign(
  Object.create(null) as Record<string, never>,
  {
    ready: SandboxChannel.onReady,
    loaded: SandboxChannel.onLoaded,
    result: SandboxChannel.onResult,
    cap: SandboxChannel.onCap,
    'cap-cancel': SandboxChannel.onCapCancel,
    log: SandboxChannel.onLog,
    progress: SandboxChannel.onProgress,
    phase: SandboxChannel.onPhase,
  },
);
