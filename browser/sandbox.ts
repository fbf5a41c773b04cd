// Browser SandboxRuntime: an opaque `sandbox="allow-scripts"` srcdoc iframe whose Blob worker runs the tool; browser host, trusted side.
import GUEST_CORE from '../node/runner/guest-core.mjs?raw';
import WORKER_ADAPTER from './worker-bootstrap.js?raw';
import { SandboxChannel, type ChannelOptions, type SandboxPort } from '../core/channel.js';
import { TyError } from '../core/errors.js';
import type { CallOptions, SandboxInstance, SandboxRuntime, SandboxSpec } from '../core/runtime.js';
import type { HostMessage } from '../protocol/wire.js';
import { loadPyodideAssets, type PyodideAssets, type PyodideManifest } from './python-assets.js';

/**
 * The sandbox frame's Content-Security-Policy (delivered as a meta element in the srcdoc; a Blob worker
 * created there inherits it, CSP Level 3 §4.2 "policy container" of local-scheme workers).
 * Everything is 'none' except: the one inline bootstrap (by nonce), `blob:` scripts and workers (the worker
 * and the tool module are Blob URLs created inside the frame), and WebAssembly compilation (Pyodide).
 */
export function sandboxCsp(nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}' blob: 'wasm-unsafe-eval'`,
    'worker-src blob:',
    "connect-src 'none'",
    "img-src 'none'",
    "media-src 'none'",
    "font-src 'none'",
    "style-src 'none'",
    "object-src 'none'",
    "frame-src 'none'",
    "child-src 'none'",
    "manifest-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
  ].join('; ');
}

const GUEST_EXPORT = 'export function createGuest(';
/**
 * The worker's classic script: the shared guest core (node/runner/guest-core.mjs, the same code the Node and Deno
 * sandboxes run) with its one `export` removed, then the MessagePort adapter (worker-bootstrap.js), in one strict
 * function scope.
 * @throws Error when the core text does not have exactly one `export function createGuest(` and no other
 *   import/export statement (a build-time invariant).
 */
export function workerSource(core: string, adapter: string): string {
  const at = core.indexOf(GUEST_EXPORT);
  if (at === -1 || core.indexOf(GUEST_EXPORT, at + 1) !== -1) throw new Error('guest core must contain exactly one createGuest export');
  const body = core.slice(0, at) + core.slice(at + 'export '.length);
  if (/^\s*(import|export)\b/m.test(body)) throw new Error('guest core must not contain other import/export statements');
  return `(() => {\n'use strict';\n${body}\n${adapter}\n})();\n`;
}
const WORKER_SOURCE = workerSource(GUEST_CORE, WORKER_ADAPTER);

const HELLO = 'tysandbox-hello';

function randomHex(bytes: number): string {
  const b = crypto.getRandomValues(new Uint8Array(bytes));
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

/** Escape text for an HTML attribute or a JSON string inside a <script> element. */
function scriptSafeJson(v: unknown): string {
  return JSON.stringify(v).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}

/**
 * The srcdoc of one sandbox frame: CSP meta, then one inline script that starts the Blob worker, revokes its
 * URL, hands the worker one end of a fresh MessageChannel and posts the other end to the parent with the
 * frame's token. The host accepts that port only from `event.source === iframe.contentWindow`.
 * `extraScript` runs in the frame after the bootstrap (tests only: probes from inside the frame).
 */
export function buildSrcdoc(opts: { nonce: string; token: string; hostOrigin: string; workerSource?: string; extraScript?: string }): string {
  const boot = `(() => {
  const token = ${scriptSafeJson(opts.token)};
  const hostOrigin = ${scriptSafeJson(opts.hostOrigin)};
  const src = ${scriptSafeJson(opts.workerSource ?? WORKER_SOURCE)};
  const ch = new MessageChannel();
  const url = URL.createObjectURL(new Blob([src], { type: 'text/javascript' }));
  let w;
  try { w = new Worker(url, { name: 'tysandbox' }); } finally { URL.revokeObjectURL(url); }
  w.onerror = (e) => { e.preventDefault(); };
  w.postMessage(null, [ch.port2]);
  parent.postMessage({ type: ${scriptSafeJson(HELLO)}, token }, hostOrigin, [ch.port1]);
})();`;
  const extra = opts.extraScript ? `<script nonce="${opts.nonce}">${opts.extraScript.replace(/<\/script/gi, '<\\/script')}</script>` : '';
  return `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${sandboxCsp(opts.nonce)}"><meta name="referrer" content="no-referrer"></head><body><script nonce="${opts.nonce}">${boot}</script>${extra}</body></html>`;
}

/**
 * The handshake check: a window message is the sandbox's hello only if it comes from exactly `frameWindow`
 * (event.source, set by the browser), carries `token`, has type HELLO, and hands over exactly one port.
 */
export function isTrustedHello(ev: MessageEvent, frameWindow: Window | null, token: string): boolean {
  if (frameWindow === null || ev.source !== frameWindow) return false;
  const d: unknown = ev.data;
  if (ev.ports.length !== 1 || typeof d !== 'object' || d === null) return false;
  return (d as { type?: unknown }).type === HELLO && (d as { token?: unknown }).token === token;
}

export interface BrowserSandboxOptions {
  /** Element the hidden frames are appended to (default `document.body`). */
  container?: HTMLElement;
  /** Budget for frame + worker start and tool load, ms (default 30 000; 120 000 for Python, which starts Pyodide). */
  startTimeoutMs?: number;
  /** Receives console output of tool code. */
  onLog?: ChannelOptions['onLog'];
  /**
   * Enables the `python` runtime: the build's Pyodide manifest (browser/pyodide-manifest.ts). The files are
   * fetched from the app's own origin and verified against these digests before a worker sees a byte.
   */
  pyodide?: PyodideManifest;
  /** Tests only (probes from inside the frame): script run in the sandbox frame after the bootstrap. Never set in an app. */
  testFrameScript?: string;
}

/** A started sandbox: one frame, one worker, one SandboxChannel; calls are serialized. */
class BrowserSandboxInstance implements SandboxInstance {
  #queue: Promise<unknown> = Promise.resolve();
  constructor(
    readonly revision: string,
    readonly frame: HTMLIFrameElement,
    readonly channel: SandboxChannel,
  ) {}
  get alive(): boolean {
    return this.channel.alive;
  }
  /** Why the sandbox died, if it did (e.g. E_SANDBOX_FAILED "the sandbox frame navigated"). */
  get closedReason(): TyError | undefined {
    return this.channel.closedReason;
  }
  call(args: unknown, opts: CallOptions): Promise<unknown> {
    const run = this.#queue.then(
      () => this.channel.call(args, opts),
      () => this.channel.call(args, opts),
    );
    this.#queue = run.catch(() => undefined);
    return run;
  }
  async destroy(reason: string): Promise<void> {
    this.channel.fail(new TyError('E_SANDBOX_FAILED', `sandbox destroyed: ${reason.slice(0, 200)}`));
  }
}

/**
 * Starts sandboxes in the current page. Each sandbox is a fresh `<iframe sandbox="allow-scripts">` (opaque
 * origin: no cookies, storage, or DOM access to the app) with a CSP forbidding network, storage, frames and
 * objects; the tool runs in a Blob worker inside it, speaking protocol v1 (core/channel.ts) over the one
 * MessagePort the frame hands over. Destroying a sandbox removes the frame, which terminates its worker
 * (HTML §10.2.4: a dedicated worker's owner document is discarded). A second `load` of the frame (any
 * navigation) destroys it.
 * @throws TyError E_SANDBOX_UNAVAILABLE (no DOM, or an execution the browser host cannot run), E_TIMEOUT,
 *   E_ABORTED, E_TOOL_FAILED (module failed to load), E_SANDBOX_FAILED.
 */
export class BrowserSandboxRuntime implements SandboxRuntime {
  readonly name = 'browser-worker';
  constructor(readonly options: BrowserSandboxOptions = {}) {}

  async start(spec: SandboxSpec, signal?: AbortSignal): Promise<SandboxInstance> {
    const exec = spec.manifest.execution;
    if (exec.kind !== 'sandboxed-code') throw new TyError('E_SANDBOX_UNAVAILABLE', `a ${exec.kind} tool does not run in a sandbox`);
    if (typeof document === 'undefined') throw new TyError('E_SANDBOX_UNAVAILABLE', 'the browser sandbox needs a DOM');
    if (signal?.aborted) throw new TyError('E_ABORTED', 'sandbox start aborted');
    let pyAssets: PyodideAssets | undefined;
    if (exec.runtime === 'python') {
      if (!this.options.pyodide) throw new TyError('E_SANDBOX_UNAVAILABLE', 'the Python runtime is not configured in this app (no Pyodide manifest)');
      pyAssets = await loadPyodideAssets(this.options.pyodide);
    }

    const token = randomHex(16);
    const frame = document.createElement('iframe');
    frame.setAttribute('sandbox', 'allow-scripts');
    frame.setAttribute('aria-hidden', 'true');
    frame.setAttribute('referrerpolicy', 'no-referrer');
    frame.setAttribute('allow', '');
    frame.tabIndex = -1;
    frame.style.cssText = 'position:absolute;width:0;height:0;border:0;visibility:hidden';
    const hostOrigin = location.origin === 'null' ? '*' : location.origin;
    frame.srcdoc = buildSrcdoc({ nonce: randomHex(16), token, hostOrigin, ...(this.options.testFrameScript ? { extraScript: this.options.testFrameScript } : {}) });

    let port: MessagePort | undefined;
    let loads = 0;
    const onWindowMessage = (ev: MessageEvent) => {
      // Only the frame we created, only its first hello, only with our token and exactly one port.
      if (port !== undefined || !isTrustedHello(ev, frame.contentWindow, token)) return;
      port = ev.ports[0]!;
      window.removeEventListener('message', onWindowMessage);
      if (pyAssets) {
        // Pre-protocol: copies of the verified Pyodide files, transferred (the page keeps its cached originals).
        const files: Record<string, ArrayBuffer> = {};
        for (const [k, v] of Object.entries(pyAssets)) files[k] = v.slice(0);
        port.postMessage({ tysandbox: 'python-assets', files, retainState: exec.retainState === true }, Object.values(files));
      }
      port.onmessage = (m) => channel.receive(m.data);
      port.onmessageerror = () => channel.fail(new TyError('E_PROTOCOL', 'a message from the sandbox could not be deserialized'));
    };
    const onLoad = () => {
      if (++loads > 1) channel.fail(new TyError('E_SANDBOX_FAILED', 'the sandbox frame navigated; it was destroyed'));
    };
    const sandboxPort: SandboxPort = {
      send(msg: HostMessage) {
        if (!port) throw new TyError('E_SANDBOX_FAILED', 'the sandbox has not handed over its port');
        port.postMessage(msg);
      },
      close() {
        window.removeEventListener('message', onWindowMessage);
        detached.disconnect();
        frame.removeEventListener('load', onLoad);
        try {
          port?.close();
        } catch {
          /* already closed */
        }
        frame.remove();
      },
    };
    const channel = new SandboxChannel(sandboxPort, this.options.onLog ? { onLog: this.options.onLog } : {});
    // Other page code removing the frame (or an ancestor) kills the worker: fail at once, not at the timeout.
    const detached = new MutationObserver(() => {
      if (!frame.isConnected) channel.fail(new TyError('E_SANDBOX_FAILED', 'the sandbox frame was removed from the page'));
    });
    window.addEventListener('message', onWindowMessage);
    frame.addEventListener('load', onLoad);
    (this.options.container ?? document.body).appendChild(frame);
    detached.observe(document, { childList: true, subtree: true });
    await channel.load(exec.runtime, exec.source, this.options.startTimeoutMs ?? (exec.runtime === 'python' ? 120_000 : 30_000), signal);
    return new BrowserSandboxInstance(spec.revision, frame, channel);
  }
}
