// One QuickJS sandbox: a fresh WebAssembly instance of QuickJS (its own linear memory) running the guest runtime for
// one revision, with exact limits; runs in the QuickJS sandbox host (the CLI's sandbox host process, the browser's
// sandbox worker), sandbox side, next to other revisions' instances of the same principal.
//
// What keeps instances apart: each has its own WebAssembly.Memory, so tool code inside QuickJS can address only that
// memory (WebAssembly's memory safety); only strings and numbers cross between QuickJS and this file (host functions
// below), and protocol messages leave as JSON text checked again by the tysandbox host (core/exec/channel.ts).
// Limits, all enforced here rather than by the OS:
// - memory: the instance's linear memory has a maximum of its static data and stack plus limits.memoryMb (and 1/16
//   for the allocator's own overhead). When QuickJS's allocator cannot grow it further (emscripten's heap resize
//   fails), the allocation fails inside the tool (InternalError "out of memory"), the running code is interrupted at
//   once and the sandbox ends with E_MEMORY_LIMIT. (QuickJS's own JS_SetMemoryLimit cannot count bytes in this build:
//   without malloc_usable_size under emscripten it counts 8 bytes per allocation, so it only stops a single allocation
//   larger than the limit, which ends the same way.)
// - time: an interrupt handler QuickJS polls while it runs ends a call still running at its deadline (E_TIMEOUT); work
//   outside a call (a timer) gets the last call's time limit per turn. Nothing else in the process is stopped.
// - stack: JS_SetMaxStackSize; deep recursion is a RangeError the tool may catch. Should the host engine's own stack
//   run out first (some native recursions use far more of it than of QuickJS's), the instance is discarded and the
//   call fails with the same RangeError (E_TOOL_FAILED).
import RELEASE_SYNC_MODULE from '@jitl/quickjs-wasmfile-release-sync';
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSSyncVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
} from 'quickjs-emscripten-core';
import { IntlBridge, jsonParseError, randomBytes, urlCall } from './host-api.js';
import { GUEST_SCRIPT_NAME } from './guest-script.js';
import { DEFAULT_STACK_BYTES, MIN_MEMORY_MB } from './limits.js';
import { heldBytesOf, maxPagesFor, watchGrowth } from './memory.js';
import type { QuickJsWasmInfo } from './wasm.js';
export { DEFAULT_STACK_BYTES, MIN_MEMORY_MB } from './limits.js';

/**
 * The release-sync variant (quickjs-emscripten's documented minimal setup: quickjs-emscripten-core plus one variant).
 * Its type declarations describe a CommonJS module, whose default import is the exports object; at run time an ES
 * import gives the variant itself.
 */
const RELEASE_SYNC: QuickJSSyncVariant =
  (RELEASE_SYNC_MODULE as unknown as { default?: QuickJSSyncVariant }).default ??
  (RELEASE_SYNC_MODULE as unknown as QuickJSSyncVariant);

/** The module name tool code is loaded under (core/exec/stack.ts TOOL_MODULE_URL; frames are matched on it). */
export const TOOL_MODULE = 'tysandbox:///tool.js';
/** Time the guest runtime may take to start (evaluate itself), ms. */
const BOOT_BUDGET_MS = 10_000;

/** Why a sandbox ended (its `onDeath`): a stable code and a message for people. */
export type QuickJsDeath = {
  code: 'E_MEMORY_LIMIT' | 'E_TIMEOUT' | 'E_TOOL_FAILED' | 'E_SANDBOX_FAILED';
  message: string;
  /** For E_TOOL_FAILED: the error's name as the node engine reports it (RangeError). */
  name?: string;
};

export interface QuickJsSandboxOptions {
  /** QuickJS heap limit, MiB (limits.memoryMb; at least MIN_MEMORY_MB is used). */
  memoryMb: number;
  /** QuickJS stack limit, bytes (default DEFAULT_STACK_BYTES). */
  stackBytes?: number;
  /** One sandbox->host protocol message (JSON text), in order. Called synchronously while the sandbox runs. */
  onMessage(text: string): void;
  /** The sandbox ended; called once, after which nothing more is sent and every method is a no-op. */
  onDeath(death: QuickJsDeath): void;
  /** Polled by the interrupt handler: true stops the running code at once (E_TIMEOUT), e.g. a cross-thread abort. */
  interruptRequested?(): boolean;
  /**
   * What the sandbox may hold, bytes (heldBytesOf): once when it has started, then after each growth of its linear
   * memory. Called synchronously while the sandbox runs.
   */
  onHeld?(bytes: number): void;
}

/** What every sandbox of one engine shares: the compiled module, the guest script and the clock. */
export interface QuickJsEngineOptions {
  /** WebAssembly.Module compiled from QuickJsWasmInfo.bytes. */
  module: WebAssembly.Module;
  info: Pick<QuickJsWasmInfo, 'minPages' | 'maxPages' | 'stackTop'>;
  /** core/quickjs/guest-script.ts guestScript(...). */
  guestScript: string;
  /** Monotonic clock, ms (default performance.now). */
  now?: () => number;
  /** Engine name and version sent in the guest's `ready` (default `QuickJS 2025-09-13`). */
  version?: string;
}

/** Creates QuickJS sandboxes from one compiled module (one per process or worker). */
export class QuickJsEngine {
  readonly #o: QuickJsEngineOptions;
  readonly #intl = new IntlBridge();
  readonly timeOrigin = Date.now();

  constructor(opts: QuickJsEngineOptions) {
    this.#o = opts;
  }

  /**
   * A new sandbox with the guest runtime started; its `ready` message goes to `opts.onMessage` before this resolves.
   * @throws Error when the instance cannot be created (the linear memory or the module instance could not be
   *   allocated) or the guest runtime fails to start.
   */
  async create(opts: QuickJsSandboxOptions): Promise<QuickJsSandbox> {
    const memoryMb = Math.max(MIN_MEMORY_MB, Math.ceil(opts.memoryMb));
    const info = this.#o.info;
    const memory = new WebAssembly.Memory({ initial: info.minPages, maximum: maxPagesFor(info, memoryMb) });
    const stackBytes = opts.stackBytes ?? DEFAULT_STACK_BYTES;
    // opts.onHeld is read at each growth: a spare's options are pointed at its owner's when it is claimed (spare.ts)
    const growth = watchGrowth(memory, (bytes) => opts.onHeld?.(heldBytesOf(info, bytes, stackBytes)));
    const wasmModule = this.#o.module;
    const variant = newVariant(RELEASE_SYNC, {
      wasmMemory: memory,
      emscriptenModule: {
        // Synchronous instantiation from the compiled module: no task hop, no second compile.
        instantiateWasm(imports: WebAssembly.Imports, done: (i: WebAssembly.Instance, m: WebAssembly.Module) => void) {
          const instance = new WebAssembly.Instance(wasmModule, imports);
          done(instance, wasmModule);
          return instance.exports;
        },
        // The sandbox host's stdout is the protocol channel: emscripten prints nowhere.
        print: () => {},
        printErr: () => {},
      } as never,
    });
    const qjs = await newQuickJSWASMModuleFromVariant(variant);
    const sandbox = new QuickJsSandbox(qjs.newRuntime(), memory, growth, memoryMb, opts, {
      guestScript: this.#o.guestScript,
      now: this.#o.now ?? (() => performance.now()),
      timeOrigin: this.timeOrigin,
      version: this.#o.version ?? 'QuickJS 2025-09-13',
      intl: this.#intl,
    });
    opts.onHeld?.(heldBytesOf(info, memory.buffer.byteLength, stackBytes));
    return sandbox;
  }
}

/** A live QuickJS sandbox of one revision. */
export class QuickJsSandbox {
  readonly memoryMb: number;
  #rt: QuickJSRuntime | undefined;
  #ctx: QuickJSContext | undefined;
  #memory: WebAssembly.Memory;
  #opts: QuickJsSandboxOptions;
  #now: () => number;
  #receive: QuickJSHandle | undefined;
  #fire: QuickJSHandle | undefined;
  #dead = false;
  /** Inside a turn (deliveries wait for the running one). */
  #entered = false;
  #queue: string[] = [];
  /** A call or load is running: its deadline applies; otherwise each turn gets #idleMs. */
  #busy = false;
  #deadline = Number.POSITIVE_INFINITY;
  #turnDeadline = Number.POSITIVE_INFINITY;
  #idleMs = 60_000;
  #interrupted = false;
  /** A host function failed in a way that leaves the instance in doubt (the host's own stack ran out). */
  #faulted: QuickJsDeath | undefined;
  #staged: string | undefined;
  #timers = new Map<number, ReturnType<typeof setTimeout>>();
  #growth: { exhausted: boolean };
  /** When the sandbox started on the monotonic clock (the guest's performance.now() counts from here). */
  #startedAt: number;

  /** @internal use QuickJsEngine.create */
  constructor(
    rt: QuickJSRuntime,
    memory: WebAssembly.Memory,
    growth: { exhausted: boolean },
    memoryMb: number,
    opts: QuickJsSandboxOptions,
    shared: { guestScript: string; now: () => number; timeOrigin: number; version: string; intl: IntlBridge },
  ) {
    this.#rt = rt;
    this.#memory = memory;
    this.#growth = growth;
    this.memoryMb = memoryMb;
    this.#opts = opts;
    this.#now = shared.now;
    this.#startedAt = shared.now();
    const limit = memoryMb * 1024 * 1024;
    rt.setMemoryLimit(limit);
    rt.setMaxStackSize(opts.stackBytes ?? DEFAULT_STACK_BYTES);
    rt.setInterruptHandler(() => {
      if (this.#interrupted) return true;
      if (this.#growth.exhausted) {
        this.#faulted ??= this.#outOfMemory();
        this.#interrupted = true;
        return true;
      }
      if (this.#now() > this.#turnDeadline || this.#opts.interruptRequested?.() === true) {
        this.#interrupted = true;
        return true;
      }
      return false;
    });
    rt.setModuleLoader((name) => {
      if (name !== TOOL_MODULE || this.#staged === undefined)
        return { error: new Error(`Cannot find module '${name}'`) };
      const source = this.#staged;
      this.#staged = undefined;
      return source;
    });
    const ctx = rt.newContext();
    this.#ctx = ctx;
    this.#turn(() => this.#boot(ctx, shared), BOOT_BUDGET_MS);
    if (this.#dead) throw new Error('the QuickJS guest runtime failed to start');
  }

  get alive(): boolean {
    return !this.#dead;
  }

  /** A spare sandbox was given to its revision (core/quickjs/spare.ts): its guest's performance.now() starts at 0. */
  claimed(): void {
    this.#startedAt = this.#now();
  }

  /** Bytes of linear memory (its current size). */
  get linearBytes(): number {
    return this.#dead ? 0 : this.#memory.buffer.byteLength;
  }

  #outOfMemory(): QuickJsDeath {
    return {
      code: 'E_MEMORY_LIMIT',
      message: `the tool used up its memory limit (${this.memoryMb} MiB); sandbox discarded`,
    };
  }

  /**
   * The time limit of the call (or load) whose message is delivered next, ms: it runs until `ms` from now, and work
   * outside calls gets `ms` per turn from then on.
   */
  setDeadline(ms: number): void {
    if (this.#dead || !(ms > 0)) return;
    this.#busy = true;
    this.#idleMs = ms;
    this.#deadline = this.#now() + ms;
  }

  /** Deliver one host->sandbox protocol message (JSON text); during a turn it waits for the turn to end. */
  deliver(text: string): void {
    if (this.#dead) return;
    this.#queue.push(text);
    if (this.#entered) return;
    while (this.#queue.length > 0 && !this.#dead) {
      const t = this.#queue.shift()!;
      this.#turn(() => this.#call(this.#receive!, t));
    }
  }

  /** End the sandbox now: its timers stop and its memory is released with the last reference. Idempotent. */
  destroy(): void {
    if (this.#dead) return;
    this.#dead = true;
    this.#release();
  }

  #release(): void {
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#timers.clear();
    this.#queue = [];
    // No dispose(): the whole linear memory goes at once with the last reference (QuickJS's own teardown would walk
    // the heap, and after a fault it may not be consistent).
    this.#receive = undefined;
    this.#fire = undefined;
    this.#ctx = undefined;
    this.#rt = undefined;
  }

  #die(death: QuickJsDeath): void {
    if (this.#dead) return;
    this.#dead = true;
    this.#release();
    this.#opts.onDeath(death);
  }

  /**
   * One turn of the sandbox: `work`, then every pending promise job; afterwards the interrupt, a fault and the
   * memory headroom are checked. `budgetMs` bounds the turn when no call is running.
   */
  #turn(work: () => void, budgetMs?: number): void {
    if (this.#dead) return;
    this.#entered = true;
    this.#turnDeadline = this.#busy ? this.#deadline : this.#now() + (budgetMs ?? this.#idleMs);
    try {
      work();
      const rt = this.#rt;
      while (!this.#dead && rt?.alive && rt.hasPendingJob() && !this.#interrupted && this.#faulted === undefined) {
        const r = rt.executePendingJobs();
        if (r.error) {
          const e = r.error;
          this.#vmError(e);
          e.dispose();
        } else r.dispose();
      }
    } catch (e) {
      // The host engine itself failed inside QuickJS (its stack ran out, a trap): the instance is in doubt.
      this.#faulted ??= hostFault(e);
    } finally {
      this.#entered = false;
    }
    if (this.#dead) return;
    if (this.#growth.exhausted) this.#faulted ??= this.#outOfMemory();
    if (this.#faulted) return this.#die(this.#faulted);
    if (this.#interrupted) {
      this.#die({
        code: 'E_TIMEOUT',
        message: this.#opts.interruptRequested?.()
          ? 'the sandbox was stopped'
          : `tool code ran past its time limit (${this.#idleMs} ms); sandbox discarded`,
      });
    }
  }

  /** A QuickJS exception that escaped to the host: an interrupt or exhausted memory ends the sandbox. */
  #vmError(h: QuickJSHandle): void {
    if (this.#interrupted) return;
    let text = '';
    try {
      const ctx = this.#ctx!;
      const m = ctx.getProp(h, 'message');
      text = ctx.typeof(m) === 'string' ? ctx.getString(m) : '';
      m.dispose();
    } catch {
      /* unreadable: nothing to learn */
    }
    if (text === 'out of memory') this.#faulted ??= this.#outOfMemory();
  }

  #call(fn: QuickJSHandle, text: string): void {
    const ctx = this.#ctx!;
    const s = ctx.newString(text);
    const r = ctx.callFunction(fn, ctx.undefined, s);
    s.dispose();
    if (r.error) {
      this.#vmError(r.error);
      r.error.dispose();
    } else r.value.dispose();
  }

  #boot(
    ctx: QuickJSContext,
    shared: { guestScript: string; timeOrigin: number; version: string; intl: IntlBridge },
  ): void {
    const H = ctx.newObject();
    const fn = (name: string, impl: (...args: unknown[]) => string | number | undefined) => {
      const h = ctx.newFunction(name, (...handles) => {
        try {
          const args = handles.map((x) => {
            const t = ctx.typeof(x);
            return t === 'string' ? ctx.getString(x) : t === 'number' ? ctx.getNumber(x) : undefined;
          });
          const v = impl(...args);
          if (typeof v === 'string') return ctx.newString(v);
          if (typeof v === 'number') return ctx.newNumber(v);
          return undefined;
        } catch (e) {
          this.#faulted ??= hostFault(e);
          return undefined;
        }
      });
      ctx.setProp(H, name, h);
      h.dispose();
    };
    fn('send', (text) => {
      // Nothing leaves once the turn is doomed: interrupted, out of memory or faulted (its end is reported instead).
      if (typeof text !== 'string' || this.#dead || this.#interrupted || this.#growth.exhausted || this.#faulted)
        return undefined;
      // A result or a finished load ends the running call: later turns get the idle budget.
      if (text.startsWith('{"v":1,"type":"result"') || text.startsWith('{"v":1,"type":"loaded"')) this.#busy = false;
      this.#opts.onMessage(text);
      return undefined;
    });
    fn('fatal', (code, message) => {
      if (code === 'E_MEMORY_LIMIT')
        this.#faulted ??= {
          code,
          message: typeof message === 'string' ? message.slice(0, 200) : 'the tool exceeded its memory limit',
        };
      return undefined;
    });
    fn('stageModule', (source) => {
      if (typeof source === 'string') this.#staged = source;
      return undefined;
    });
    fn('timerStart', (id, ms) => {
      if (typeof id !== 'number' || typeof ms !== 'number' || this.#dead) return undefined;
      const old = this.#timers.get(id);
      if (old !== undefined) clearTimeout(old);
      const t = setTimeout(
        () => {
          this.#timers.delete(id);
          if (this.#fire) this.#turn(() => this.#callNumber(this.#fire!, id));
        },
        Math.max(ms, 0),
      );
      this.#timers.set(id, t);
      return undefined;
    });
    fn('timerStop', (id) => {
      if (typeof id !== 'number') return undefined;
      const t = this.#timers.get(id);
      if (t !== undefined) clearTimeout(t);
      this.#timers.delete(id);
      return undefined;
    });
    fn('url', (op, a, b, c) => urlCall(op, a, b, c));
    fn('intl', (request) => shared.intl.call(request));
    fn('random', (n) => randomBytes(n));
    fn('jsonError', (text) => jsonParseError(text));
    fn('now', () => this.#now() - this.#startedAt);
    ctx.setProp(H, 'timeOrigin', ctx.newNumber(shared.timeOrigin));
    const version = ctx.newString(shared.version);
    ctx.setProp(H, 'version', version);
    version.dispose();
    const script = ctx.evalCode(shared.guestScript, GUEST_SCRIPT_NAME);
    if (script.error) {
      script.error.dispose();
      H.dispose();
      this.#faulted = { code: 'E_SANDBOX_FAILED', message: 'the QuickJS guest runtime did not compile' };
      return;
    }
    const started = ctx.callFunction(script.value, ctx.undefined, H);
    script.value.dispose();
    H.dispose();
    if (started.error) {
      started.error.dispose();
      this.#faulted = { code: 'E_SANDBOX_FAILED', message: 'the QuickJS guest runtime did not start' };
      return;
    }
    const api = started.value;
    this.#receive = ctx.getProp(api, 'receive');
    this.#fire = ctx.getProp(api, 'fire');
    api.dispose();
  }

  #callNumber(fn: QuickJSHandle, n: number): void {
    const ctx = this.#ctx!;
    const h = ctx.newNumber(n);
    const r = ctx.callFunction(fn, ctx.undefined, h);
    h.dispose();
    if (r.error) {
      this.#vmError(r.error);
      r.error.dispose();
    } else r.value.dispose();
  }
}

/** What a host-engine failure inside QuickJS means for the call (see the file comment). */
function hostFault(e: unknown): QuickJsDeath {
  if (e instanceof RangeError && /call stack/i.test(e.message))
    return { code: 'E_TOOL_FAILED', message: 'RangeError: Maximum call stack size exceeded', name: 'RangeError' };
  return {
    code: 'E_SANDBOX_FAILED',
    message: `the QuickJS engine failed (${e instanceof Error ? e.name : 'error'}); sandbox discarded`,
  };
}
