// Browser SandboxRuntime for `execution.engine: "quickjs"`: one opaque sandbox frame per principal whose Blob worker
// holds that principal's QuickJS sandboxes, each its own WebAssembly instance; browser host, trusted side.
//
// The frame is the JavaScript engine's (browser/sandbox/runtime.ts openSandboxFrame: an opaque
// `sandbox="allow-scripts"` network document with its own CSP, whose only additions over 'none' are blob: workers and
// 'wasm-unsafe-eval'); its worker runs browser/quickjs/worker.ts instead of the JavaScript guest. The QuickJS binary is
// fetched by the page once from `<assetBaseUrl>quickjs/emscripten-module.wasm` (or `quickjsBaseUrl`) and checked
// against the digest compiled into this code (core/quickjs/wasm.ts) before the worker sees a byte. Each sandbox speaks
// protocol v1 over a MessagePort of its own (core/exec/channel.ts checks every message; capabilities are answered for
// the revision started there). A sandbox's memory bomb or endless loop ends that sandbox only (E_MEMORY_LIMIT,
// E_TIMEOUT): the worker, the frame, the page and the other sandboxes go on. A sandbox that does not let go within
// STUCK_MS of its end (one long native operation) takes the frame down with its principal's other sandboxes, as a dead
// frame does (E_SANDBOX_FAILED).
import { SandboxChannel } from '../../core/exec/channel.js';
import { mapStackText } from '../../core/exec/stack.js';
import { TyError } from '../../core/errors.js';
import type { CallOptions, SandboxInstance, SandboxRuntime, SandboxSpec } from '../../core/exec/runtime.js';
import { DEATH_CODES } from '../../core/quickjs/control.js';
import { MIN_MEMORY_MB } from '../../core/quickjs/limits.js';
import { prepareQuickJsWasm, type QuickJsWasmInfo } from '../../core/quickjs/wasm.js';
import type { HostMessage } from '../../protocol/wire.js';
import {
  defaultAssetBase,
  openSandboxFrame,
  type BrowserSandboxOptions,
  type SandboxFrame,
} from '../sandbox/runtime.js';

/** The QuickJS binary, relative to the host's assetBaseUrl (browser/build/quickjs.mjs emits it there). */
export const QUICKJS_WASM_ASSET = 'quickjs/emscripten-module.wasm';
/** Its file name, relative to `quickjsBaseUrl` when that is set. */
const QUICKJS_WASM_FILE = 'emscripten-module.wasm';
/**
 * QuickJS stack limit per sandbox in the browser, KiB. A Chromium worker's own stack is small and WebAssembly frames
 * use several times more of it than QuickJS counts (measured in Chromium: at 128 KiB plain recursion is caught at
 * about 730 frames, at 256 KiB the worker's stack runs out first). Deeper native recursion (a deeply nested
 * JSON.stringify or source text) exhausts the worker's stack instead: that sandbox is discarded with the same
 * RangeError, its siblings go on (the contract "quickjs: deep recursion" checks both).
 */
export const BROWSER_STACK_KB = 128;
/** How long a destroyed sandbox may take to let go before its frame is removed, ms. */
const STUCK_MS = 2000;
/** A frame with no sandbox left is removed after this long, ms. */
const FRAME_IDLE_MS = 60_000;

/** The checked, prepared binary, fetched once per page and base URL. */
const wasmCache = new Map<string, Promise<QuickJsWasmInfo>>();
function loadWasm(url: string): Promise<QuickJsWasmInfo> {
  let p = wasmCache.get(url);
  if (!p) {
    p = (async () => {
      let res: Response;
      try {
        res = await fetch(url, { credentials: 'same-origin' });
      } catch {
        throw new TyError(
          'E_SANDBOX_UNAVAILABLE',
          `the QuickJS binary could not be fetched from ${url.slice(0, 200)} (from another origin its server must allow ` +
            "this page's origin by CORS, or set quickjsBaseUrl to a folder on the page's own origin)",
        );
      }
      if (!res.ok)
        throw new TyError(
          'E_SANDBOX_UNAVAILABLE',
          `the QuickJS binary ${url.slice(0, 200)} answered ${res.status}: serve ${QUICKJS_WASM_ASSET} from the host's assetBaseUrl (docs/browser.md)`,
        );
      try {
        return await prepareQuickJsWasm(new Uint8Array(await res.arrayBuffer()));
      } catch (e) {
        const code = (e as { code?: unknown }).code === 'E_INTEGRITY' ? 'E_INTEGRITY' : 'E_SANDBOX_UNAVAILABLE';
        throw new TyError(code, (e as Error).message);
      }
    })();
    p.catch(() => wasmCache.delete(url));
    wasmCache.set(url, p);
  }
  return p;
}

/** One principal's frame and worker with its sandboxes. */
class QuickJsFrame {
  readonly principal: string;
  readonly sandboxes = new Map<number, BrowserQuickJsInstance>();
  #sf: SandboxFrame;
  #dead: TyError | undefined;
  #beat: ReturnType<typeof setInterval>;
  #idle: ReturnType<typeof setTimeout> | undefined;
  #stuck = new Map<number, ReturnType<typeof setTimeout>>();
  readonly #onGone: (f: QuickJsFrame) => void;

  constructor(principal: string, sf: SandboxFrame, heartbeatMs: number, onGone: (f: QuickJsFrame) => void) {
    this.principal = principal;
    this.#sf = sf;
    this.#onGone = onGone;
    let pending: { n: number; at: number } | undefined;
    let n = 0;
    sf.control.onmessage = (m) => {
      const d = m.data as { type?: unknown; n?: unknown } | null;
      if (d?.type === 'pong' && pending && d.n === pending.n) pending = undefined;
    };
    // The frame's own thread answers pings: a frame that stops (its renderer died) fails every sandbox in it.
    this.#beat = setInterval(
      () => {
        if (pending && Date.now() - pending.at > heartbeatMs)
          return this.fail(
            new TyError('E_SANDBOX_FAILED', `the QuickJS sandbox frame did not answer for ${heartbeatMs} ms`),
          );
        if (!pending) {
          pending = { n: ++n, at: Date.now() };
          sf.control.postMessage({ type: 'ping', n: pending.n });
        }
      },
      Math.max(50, Math.floor(heartbeatMs / 4)),
    );
    sf.onNavigate(() =>
      this.fail(new TyError('E_SANDBOX_FAILED', 'the QuickJS sandbox frame navigated; it was destroyed')),
    );
    sf.port.onmessage = (m) => this.#onControl(m.data);
  }

  get alive(): boolean {
    return this.#dead === undefined;
  }
  /** The frame element. */
  get element(): HTMLIFrameElement {
    return this.#sf.frame;
  }
  post(m: unknown, transfer: Transferable[] = []): void {
    if (!this.#dead) this.#sf.port.postMessage(m, transfer);
  }
  /** Wait for the worker's `up` after `init`. */
  init(wasm: QuickJsWasmInfo, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const t = setTimeout(
        () => reject(new TyError('E_TIMEOUT', `the QuickJS worker did not start within ${timeoutMs} ms`)),
        timeoutMs,
      );
      this.#upWaiter = (e) => {
        clearTimeout(t);
        if (e) reject(e);
        else resolve();
      };
      const bytes = wasm.bytes.slice().buffer;
      this.post(
        { t: 'init', wasm: bytes, info: { minPages: wasm.minPages, maxPages: wasm.maxPages, stackTop: wasm.stackTop } },
        [bytes],
      );
    });
  }
  #upWaiter: ((e?: TyError) => void) | undefined;

  add(sid: number, inst: BrowserQuickJsInstance): void {
    this.sandboxes.set(sid, inst);
    if (this.#idle !== undefined) clearTimeout(this.#idle);
    this.#idle = undefined;
  }
  /** A sandbox ended here: tell the worker, and stop the frame if the worker does not let it go. */
  ended(sid: number): void {
    if (!this.sandboxes.delete(sid) || this.#dead) return;
    this.post({ t: 'destroy', sid });
    this.#stuck.set(
      sid,
      setTimeout(() => {
        this.#stuck.delete(sid);
        this.fail(
          new TyError('E_SANDBOX_FAILED', `the QuickJS sandbox frame was stopped: sandbox ${sid} ran past its end`),
        );
      }, STUCK_MS),
    );
    if (this.sandboxes.size === 0)
      this.#idle = setTimeout(() => {
        if (this.sandboxes.size === 0 && this.#stuck.size === 0) this.fail(new TyError('E_SANDBOX_FAILED', 'idle'));
      }, FRAME_IDLE_MS);
  }

  /** Remove the frame (its worker ends with it) and fail every sandbox in it. */
  fail(reason: TyError): void {
    if (this.#dead) return;
    this.#dead = reason;
    clearInterval(this.#beat);
    if (this.#idle !== undefined) clearTimeout(this.#idle);
    for (const t of this.#stuck.values()) clearTimeout(t);
    this.#upWaiter?.(reason);
    for (const s of [...this.sandboxes.values()]) s.channel.fail(reason);
    this.sandboxes.clear();
    for (const p of [this.#sf.port, this.#sf.control]) {
      try {
        p.close();
      } catch {
        /* closed */
      }
    }
    this.#sf.remove();
    this.#onGone(this);
  }

  #onControl(d: unknown): void {
    if (d === null || typeof d !== 'object') return;
    const m = d as Record<string, unknown>;
    if (m.t === 'up') return this.#upWaiter?.();
    if (m.t === 'init-failed')
      return this.#upWaiter?.(
        new TyError('E_SANDBOX_UNAVAILABLE', 'the QuickJS binary did not compile in the sandbox worker'),
      );
    const sid = m.sid;
    if (typeof sid !== 'number') return;
    if (m.t === 'gone') {
      const t = this.#stuck.get(sid);
      if (t !== undefined) clearTimeout(t);
      this.#stuck.delete(sid);
      return;
    }
    const inst = this.sandboxes.get(sid);
    if (!inst) return;
    if (m.t === 'held') {
      if (typeof m.bytes === 'number' && Number.isSafeInteger(m.bytes) && m.bytes >= 0) inst.held = m.bytes;
      return;
    }
    if (m.t !== 'died') return;
    const code = (DEATH_CODES as readonly unknown[]).includes(m.code)
      ? (m.code as (typeof DEATH_CODES)[number])
      : 'E_SANDBOX_FAILED';
    const message = typeof m.message === 'string' ? m.message.slice(0, 1000) : 'the QuickJS sandbox ended';
    const name = typeof m.name === 'string' && /^[A-Za-z]{1,32}$/.test(m.name) ? m.name : undefined;
    inst.channel.fail(new TyError(code, message, name ? { name } : undefined));
  }
}

/** A QuickJS sandbox of one revision inside its principal's frame; calls serialized. */
class BrowserQuickJsInstance implements SandboxInstance {
  readonly channel: SandboxChannel;
  /** What the sandbox may hold, bytes, as its worker last reported. */
  held = 0;
  #queue: Promise<unknown> = Promise.resolve();
  currentCall: string | undefined;
  constructor(
    readonly revision: string,
    readonly sid: number,
    private readonly frame: QuickJsFrame,
    port: MessagePort,
    onLog: (level: 'debug' | 'info' | 'warn' | 'error', text: string) => void,
    onClosed: (reason: TyError) => void,
    private readonly callIdOf?: (signal: AbortSignal) => string | undefined,
  ) {
    this.channel = new SandboxChannel(
      {
        send: (msg: HostMessage) => port.postMessage(JSON.stringify(msg)),
        sendText: (json: string) => port.postMessage(json),
        close: () => {
          port.onmessage = null;
          port.close();
          frame.ended(sid);
        },
      },
      { onLog, onClosed },
    );
    port.onmessage = (m) => this.channel.receive(m.data);
    port.onmessageerror = () =>
      this.channel.fail(new TyError('E_PROTOCOL', 'a message from the sandbox could not be deserialized'));
  }
  /** MiB the sandbox may hold (SandboxInstance.heldMb): the worker's last report, 1 MiB before any. */
  heldMb(): number {
    return this.held > 0 ? this.held / 1048576 : 1;
  }
  get alive(): boolean {
    return this.channel.alive;
  }
  call(args: unknown, opts: CallOptions): Promise<unknown> {
    const go = () => {
      this.currentCall = this.callIdOf?.(opts.signal);
      this.frame.post({ t: 'deadline', sid: this.sid, ms: Math.max(1, Math.floor(opts.limits.timeoutMs)) });
      return this.channel.call(args, opts).finally(() => (this.currentCall = undefined));
    };
    const run = this.#queue.then(go, go);
    this.#queue = run.catch(() => undefined);
    return run;
  }
  async destroy(reason: string): Promise<void> {
    this.channel.fail(new TyError('E_SANDBOX_FAILED', `sandbox destroyed: ${reason.slice(0, 200)}`));
  }
}

/**
 * Starts QuickJS sandboxes in the current page: one frame per principal (SandboxSpec.principal), many sandboxes per
 * frame. Options are the JavaScript engine's (BrowserSandboxOptions: assetBaseUrl, container, heartbeat, logs,
 * events); `quickJsStackKb` sets the QuickJS stack limit per sandbox (default BROWSER_STACK_KB).
 * @throws TyError E_SANDBOX_UNAVAILABLE (no DOM, the binary not served, not JavaScript), E_INTEGRITY (the binary's
 *   digest differs), E_TIMEOUT, E_ABORTED, E_TOOL_FAILED (module failed to load), E_SANDBOX_FAILED, E_MEMORY_LIMIT.
 */
export class BrowserQuickJsRuntime implements SandboxRuntime {
  readonly name = 'quickjs';
  readonly perPrincipal = true;
  readonly sharesProcess = true;
  readonly #frames = new Map<string, Promise<QuickJsFrame>>();
  #nextSid = 1;
  constructor(readonly options: BrowserSandboxOptions & { quickJsStackKb?: number } = {}) {}

  /** Principals with a live frame, the frame element and how many sandboxes each holds (diagnostics and tests). */
  async frames(): Promise<{ principal: string; frame: HTMLIFrameElement; sandboxes: number }[]> {
    const out: { principal: string; frame: HTMLIFrameElement; sandboxes: number }[] = [];
    for (const p of this.#frames.values()) {
      const f = await p.catch(() => undefined);
      if (f?.alive) out.push({ principal: f.principal, frame: f.element, sandboxes: f.sandboxes.size });
    }
    return out;
  }

  /** Remove every frame of this runtime (their sandboxes fail with E_SANDBOX_FAILED). */
  close(): void {
    for (const p of this.#frames.values())
      void p.then(
        (f) => f.fail(new TyError('E_SANDBOX_FAILED', 'the QuickJS runtime was closed')),
        () => {},
      );
    this.#frames.clear();
  }

  #wasmUrl(): string {
    if (this.options.quickjsBaseUrl !== undefined)
      return new URL(QUICKJS_WASM_FILE, new URL(this.options.quickjsBaseUrl, location.href)).href;
    const base = new URL(this.options.assetBaseUrl ?? defaultAssetBase(), location.href);
    return new URL(QUICKJS_WASM_ASSET, base).href;
  }

  #frame(principal: string, signal: AbortSignal | undefined, budget: number): Promise<QuickJsFrame> {
    const have = this.#frames.get(principal);
    if (have) return have;
    const p = (async () => {
      const wasm = await loadWasm(this.#wasmUrl());
      // the worker script (about 150 KiB) is a chunk of its own, loaded with the first quickjs sandbox of the page
      const { default: workerSource } = await import('virtual:tysandbox/quickjs-worker');
      const sf = await openSandboxFrame({
        ...(this.options.assetBaseUrl !== undefined ? { assetBaseUrl: this.options.assetBaseUrl } : {}),
        ...(this.options.container ? { container: this.options.container } : {}),
        workerSource,
        timeoutMs: budget,
        ...(signal ? { signal } : {}),
      });
      const f = new QuickJsFrame(principal, sf, this.options.heartbeatMs ?? 1000, (gone) => {
        void this.#frames.get(principal)?.then(
          (cur) => cur === gone && this.#frames.delete(principal),
          () => {},
        );
      });
      try {
        await f.init(wasm, budget);
      } catch (e) {
        f.fail(e instanceof TyError ? e : new TyError('E_SANDBOX_FAILED', 'the QuickJS worker did not start'));
        throw e;
      }
      return f;
    })();
    p.catch(() => {
      if (this.#frames.get(principal) === p) this.#frames.delete(principal);
    });
    this.#frames.set(principal, p);
    return p;
  }

  async start(spec: SandboxSpec, signal?: AbortSignal): Promise<SandboxInstance> {
    const exec = spec.manifest.execution;
    if (exec.kind !== 'sandboxed-code' || exec.runtime !== 'javascript')
      throw new TyError('E_SANDBOX_UNAVAILABLE', 'the quickjs engine runs JavaScript tools only');
    if (typeof document === 'undefined') throw new TyError('E_SANDBOX_UNAVAILABLE', 'the browser sandbox needs a DOM');
    if (signal?.aborted) throw new TyError('E_ABORTED', 'sandbox start aborted');
    const budget = this.options.startTimeoutMs ?? 30_000;
    const t0 = Date.now();
    const principal = spec.principal ?? 'browser:app';
    let frame = await this.#frame(principal, signal, budget);
    if (!frame.alive) frame = await this.#frame(principal, signal, budget);
    const sid = this.#nextSid++;
    const { port1, port2 } = new MessageChannel();
    const events = this.options.events;
    const tool = spec.manifest.name;
    let started = false;
    let instance: BrowserQuickJsInstance | undefined;
    const onLog = (level: 'debug' | 'info' | 'warn' | 'error', raw: string) => {
      const text = mapStackText(spec.manifest, raw);
      this.options.onLog?.(level, text, spec.revision);
      events?.emit('log', {
        ...(instance?.currentCall !== undefined ? { callId: instance.currentCall } : {}),
        tool,
        revision: spec.revision,
        level,
        text,
      });
    };
    instance = new BrowserQuickJsInstance(
      spec.revision,
      sid,
      frame,
      port1,
      onLog,
      (reason) => {
        if (started)
          events?.emit('sandbox-destroyed', {
            tool,
            revision: spec.revision,
            reason: reason.message.replace(/^sandbox destroyed: /, ''),
            code: reason.code,
          });
      },
      this.options.callIdOf,
    );
    frame.add(sid, instance);
    const memoryMb = Math.max(MIN_MEMORY_MB, Math.floor(spec.limits.memoryMb));
    const stackBytes = (this.options.quickJsStackKb ?? BROWSER_STACK_KB) * 1024;
    frame.post({ t: 'create', sid, memoryMb, stackBytes }, [port2]);
    frame.post({ t: 'deadline', sid, ms: budget });
    try {
      await instance.channel.load('javascript', exec.source, budget, signal);
    } catch (e) {
      await instance.destroy('start failed');
      throw e;
    }
    started = true;
    events?.emit('sandbox-started', { tool, revision: spec.revision, runtime: 'javascript', startMs: Date.now() - t0 });
    return instance;
  }
}
