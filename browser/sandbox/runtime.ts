// Browser SandboxRuntime: an opaque `sandbox="allow-scripts"` iframe (sandbox-frame.html) whose Blob worker runs the
// tool; browser host, trusted side.
import GUEST_COMMONS from '../../core/guest/commons.mjs?raw';
import GUEST_CORE from '../../core/guest/core.mjs?raw';
import PYTHON_GUEST from '../../core/guest/python.mjs?raw';
import PYTHON_LIMITS from '../../core/guest/python-limits.mjs?raw';
import { mapStackText } from '../../core/exec/stack.js';
import WORKER_ADAPTER from './worker-bootstrap.js?raw';
import { SandboxChannel, type ChannelOptions, type SandboxPort } from '../../core/exec/channel.js';
import { TyError } from '../../core/errors.js';
import type { CallOptions, SandboxInstance, SandboxRuntime, SandboxSpec } from '../../core/exec/runtime.js';
import type { HostMessage } from '../../protocol/wire.js';
import type { HostEvents } from '../events.js';
import { checkSrcdocPolicy, srcdocBlocked, srcdocDocument, srcdocScriptHash } from './srcdoc.js';
import { srcdocForSandboxedFrame } from '../trusted-html.js';
import {
  loadPyodideAssets,
  loadPythonPackages,
  type PyodideAssets,
  type PyodideManifest,
  type PythonProgress,
} from '../python/assets.js';

/** The build's base URL, compiled in by the vite plugin (browser/build/config.mjs); absent outside a vite build. */
declare const __TYSANDBOX_ASSET_BASE__: string | undefined;

/**
 * The sandbox frame's Content-Security-Policy (a meta element in sandbox-frame.html; a Blob worker created there
 * copies it, CSP Level 3 §4.2 "policy container" of local-scheme workers). Everything is 'none' except: scripts
 * from 'self' (only sandbox-frame.js; the bootstrap then adds `script-src blob: 'wasm-unsafe-eval'`, so nothing
 * else from the app's origin can load), `blob:` scripts and workers (the worker and the tool module are Blob URLs
 * created inside the frame), and WebAssembly compilation (Pyodide). The frame is a network document, so it does
 * not inherit the embedding page's CSP (srcdoc, blob: and data: frames do).
 */
export function sandboxCsp(): string {
  return [
    "default-src 'none'",
    "script-src 'self' blob: 'wasm-unsafe-eval'",
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

/** File names of the frame assets, served from the host's `assetBaseUrl` (the vite plugin emits them). */
export const FRAME_HTML = 'sandbox-frame.html';
export const FRAME_SCRIPT = 'sandbox-frame.js';

/** A guest module's import of a sibling guest module, by name: `import { A, B } from './commons.mjs';`. */
const GUEST_IMPORT = /^import \{[^}]*\} from '\.\/[\w-]+\.mjs';$/gm;
/** Any JavaScript import or export statement (PY_PRELUDE's Python `import` lines carry no quotes). */
const MODULE_SYNTAX = /^\s*export\b|^\s*import\s*(?:[\w*{][^'"\n]*\sfrom\s*)?['"]/m;
/** Blank lines in place of the guest-module imports: their names are declared earlier in the same script. */
const dropGuestImports = (text: string): string => text.replace(GUEST_IMPORT, (m) => m.replace(/[^\n]/g, ''));

/**
 * core/guest/commons.mjs as part of the worker's script: its `export const` declarations made plain, so the captured
 * built-ins are names in scope of everything after it.
 * @throws Error when it has no `export const` or any other import/export statement (a build-time invariant).
 */
export function commonsSource(text: string): string {
  const body = text.replace(/^export (?=const )/gm, '');
  if (body === text) throw new Error('the captured built-ins must be `export const` declarations');
  if (MODULE_SYNTAX.test(body))
    throw new Error('the captured built-ins must not contain other import/export statements');
  return body;
}
/**
 * A guest module that exports one function (core/guest/core.mjs: createGuest, python.mjs: createPythonGuest) as part
 * of the worker's script: its imports of sibling guest modules become blank lines (commonsSource comes first) and its
 * one `export` is removed.
 * @throws Error when the text does not have exactly one `export function NAME(` and no other import/export statement
 *   (a build-time invariant).
 */
export function guestModuleSource(text: string, name: string): string {
  const decl = `export function ${name}(`;
  const at = text.indexOf(decl);
  if (at === -1 || text.indexOf(decl, at + 1) !== -1)
    throw new Error(`the guest module must contain exactly one ${name} export`);
  const body = dropGuestImports(text.slice(0, at) + text.slice(at + 'export '.length));
  if (MODULE_SYNTAX.test(body))
    throw new Error(`the guest module of ${name} must not contain other import/export statements`);
  return body;
}
/**
 * The worker's classic script, in one strict function scope: the captured built-ins (core/guest/commons.mjs, first:
 * taken before anything else runs), the guest core (core/guest/core.mjs, the same code the Node and Deno sandboxes run)
 * and the Python guest (core/guest/python-limits.mjs, then core/guest/python.mjs, which uses it) as guest modules,
 * then the adapter (worker-bootstrap.js).
 * @throws Error as commonsSource and guestModuleSource do.
 */
export function workerSource(
  guest: { commons: string; core: string; pythonLimits: string; python: string },
  adapter: string,
): string {
  const parts = [
    commonsSource(guest.commons),
    guestModuleSource(guest.core, 'createGuest'),
    guestModuleSource(guest.pythonLimits, 'createPythonLimits'),
    guestModuleSource(guest.python, 'createPythonGuest'),
    adapter,
  ];
  return `(() => {\n'use strict';\n${parts.join('\n')}\n})();\n`;
}
const WORKER_SOURCE = workerSource(
  { commons: GUEST_COMMONS, core: GUEST_CORE, pythonLimits: PYTHON_LIMITS, python: PYTHON_GUEST },
  WORKER_ADAPTER,
);

const HELLO = 'tysandbox-hello';

function randomHex(bytes: number): string {
  const b = crypto.getRandomValues(new Uint8Array(bytes));
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

/**
 * The handshake check: a window message is the sandbox's hello only if it comes from exactly `frameWindow`
 * (event.source, set by the browser), carries `token`, has type HELLO, and hands over exactly two ports (the
 * worker's protocol port and the frame's control port).
 */
export function isTrustedHello(ev: MessageEvent, frameWindow: Window | null, token: string): boolean {
  if (frameWindow === null || ev.source !== frameWindow) return false;
  const d: unknown = ev.data;
  if (ev.ports.length !== 2 || typeof d !== 'object' || d === null) return false;
  return (d as { type?: unknown }).type === HELLO && (d as { token?: unknown }).token === token;
}

/** Where the sandbox frame's document comes from: the network file sandbox-frame.html, or inline (srcdoc). */
export type SandboxFrameMode = 'network' | 'srcdoc';

let pageFrameMode: SandboxFrameMode = 'network';
/**
 * The frame mode of runtimes that name none, for this page (internal: the diagnostics page runs the security
 * contracts in both modes with it; an app passes `sandbox: { frame }`).
 */
export function setPageFrameMode(mode: SandboxFrameMode): void {
  pageFrameMode = mode;
}
/** The frame mode of runtimes that name none, for this page. */
export function getPageFrameMode(): SandboxFrameMode {
  return pageFrameMode;
}

export interface BrowserSandboxOptions {
  /**
   * `network` (default): the frame is sandbox-frame.html from `assetBaseUrl`, a document with its own policy.
   * `srcdoc`: the frame's document is inline (no files to serve); it inherits the page's CSP, which must allow the
   * bootstrap's hash, Blob workers and modules, and WebAssembly for Python (docs/browser.md "srcdoc mode"); a page
   * whose CSP forbids it gets E_SANDBOX_UNAVAILABLE naming the directive at once.
   */
  frame?: SandboxFrameMode;
  /** Element the hidden frames are appended to (default `document.body`). */
  container?: HTMLElement;
  /**
   * URL of the folder serving the host's assets: sandbox-frame.html, sandbox-frame.js and (Python) pyodide/.
   * Same origin as the page or not; absolute or relative to the page. Default: the build's base (`/`).
   */
  assetBaseUrl?: string;
  /** Budget for frame + worker start and tool load, ms (default 30 000; 120 000 for Python, which starts Pyodide). */
  startTimeoutMs?: number;
  /**
   * Receives console output of tool code (raw text from the sandbox: render it inert), with the revision that wrote it.
   */
  onLog?: (level: Parameters<NonNullable<ChannelOptions['onLog']>>[0], text: string, revision: string) => void;
  /**
   * Enables the `python` runtime: the build's Pyodide manifest (browser/python/pyodide-manifest.ts). The files are
   * fetched from `pyodideBaseUrl` and verified against these digests before a worker sees a byte.
   */
  pyodide?: PyodideManifest;
  /** Folder of the Pyodide files (default: the manifest's base, `<assetBaseUrl>pyodide/`). */
  pyodideBaseUrl?: string;
  /**
   * Folder of the QuickJS binary `emscripten-module.wasm` for `engine: "quickjs"` (default `<assetBaseUrl>quickjs/`).
   * The page fetches it (then checks it against the digest built in): from another origin the server must allow the
   * page's origin (CORS `Access-Control-Allow-Origin`), so with the frame assets on a separate site point this at the
   * page's own.
   */
  quickjsBaseUrl?: string;
  /** Folder of the wheels Python revisions declare in `python.packages` (default `<assetBaseUrl>python-packages/`). */
  pythonPackagesBaseUrl?: string;
  /** Called with Python load progress (fetching and verifying the files). */
  onPythonProgress?: (p: PythonProgress) => void;
  /** Heartbeat to each sandbox frame: a frame that misses one for this long is dead (ms, default 1000). */
  heartbeatMs?: number;
  /**
   * Tests only (probes from inside the frame): script run in the sandbox frame after the bootstrap. Never set in an
   * app.
   */
  testFrameScript?: string;
  /**
   * Receives sandbox-started, sandbox-destroyed, log and python-progress events (createBrowserHost wires its emitter).
   */
  events?: HostEvents;
  /** The host's call id of the call running with `signal` (tool logs carry it). */
  callIdOf?: (signal: AbortSignal) => string | undefined;
}

/** What a started frame hands over: its worker's protocol port and its control port. */
export interface SandboxFrame {
  frame: HTMLIFrameElement;
  port: MessagePort;
  control: MessagePort;
  /** Remove the frame (kills its worker). */
  remove(): void;
  /** Call `cb` when the frame's document loads a second time (any navigation). */
  onNavigate(cb: () => void): void;
}

/** Where the host's assets are by default: the build's base (compiled in by the vite plugin), else `/`. */
export function defaultAssetBase(): string {
  return typeof __TYSANDBOX_ASSET_BASE__ === 'string' ? __TYSANDBOX_ASSET_BASE__ : '/';
}

/** The error for a page CSP directive that forbids the sandbox frame (host-neutral facts, browser-side fix). */
function frameBlocked(directive: string, url: string): TyError {
  return new TyError(
    'E_SANDBOX_UNAVAILABLE',
    `the page's Content-Security-Policy directive ${directive} forbids the sandbox frame ${url.slice(0, 200)}; ` +
      `allow its origin there (e.g. "frame-src 'self'" when the host's assets are served by the app, ` +
      `see docs/browser.md)`,
    { directive },
  );
}

/** The error for the frame's own CSP (a header the server added to sandbox-frame.html) forbidding the worker. */
function frameCspError(directive: string): TyError {
  const d = directive.slice(0, 40);
  return new TyError(
    'E_SANDBOX_UNAVAILABLE',
    `the sandbox frame's Content-Security-Policy directive ${d} forbids its Blob worker; the server ` +
      `must send ${FRAME_HTML} without a CSP header of its own, or with one that allows "worker-src ` +
      `blob:" and "script-src 'self' blob: 'wasm-unsafe-eval'" (see docs/browser.md)`,
    { directive: d },
  );
}

/**
 * Open one sandbox frame: `<iframe sandbox="allow-scripts" src="<assetBaseUrl>sandbox-frame.html#t=TOKEN&o=ORIGIN">`
 * (opaque origin: no cookies, storage or DOM access to the app), wait for its hello (checked by isTrustedHello),
 * and boot its worker with `workerSource`. Fails fast, naming the CSP directive, when the page's CSP forbids the
 * frame (frame-src / child-src / default-src) or the frame's own CSP forbids the Blob worker (worker-src), and when
 * the frame loads but never says hello (assets not served).
 * @throws TyError E_SANDBOX_UNAVAILABLE, E_TIMEOUT, E_ABORTED.
 */
export async function openSandboxFrame(opts: {
  assetBaseUrl?: string;
  container?: HTMLElement;
  workerSource?: string;
  extraScript?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Default: the page's mode (`network` unless the page set another). */
  frame?: SandboxFrameMode;
  /** srcdoc mode: the revision runs Python (its WebAssembly must be allowed too). */
  python?: boolean;
}): Promise<SandboxFrame> {
  const token = randomHex(16);
  const hostOrigin = location.origin === 'null' ? '*' : location.origin;
  if ((opts.frame ?? pageFrameMode) !== 'srcdoc') return openFrame(opts, token, hostOrigin, undefined);
  await checkSrcdocPolicy(opts.python === true);
  return openFrame(opts, token, hostOrigin, await srcdocDocument(token, hostOrigin));
}

function openFrame(
  opts: Parameters<typeof openSandboxFrame>[0],
  token: string,
  hostOrigin: string,
  srcdoc: string | undefined,
): Promise<SandboxFrame> {
  const base = new URL(opts.assetBaseUrl ?? defaultAssetBase(), location.href);
  const url = srcdoc === undefined ? new URL(FRAME_HTML, base).href : 'about:srcdoc';
  const frame = document.createElement('iframe');
  frame.setAttribute('sandbox', 'allow-scripts');
  frame.setAttribute('aria-hidden', 'true');
  frame.setAttribute('referrerpolicy', 'no-referrer');
  frame.setAttribute('allow', '');
  frame.tabIndex = -1;
  frame.style.cssText = 'position:absolute;width:0;height:0;border:0;visibility:hidden';
  // srcdoc: fixed markup, a hex token and a percent-encoded origin (sandbox/srcdoc.ts), parsed by the frame only
  if (srcdoc !== undefined)
    frame.srcdoc = srcdocForSandboxedFrame(srcdoc); // TrustedHTML under the host's policy
  else frame.src = `${url}#t=${token}&o=${encodeURIComponent(hostOrigin)}`;
  return new Promise<SandboxFrame>((resolve, reject) => {
    let done = false;
    let helloSeen = false;
    let helloGrace: ReturnType<typeof setTimeout> | undefined;
    let loads = 0;
    let navigated: (() => void) | undefined;
    const cleanup = () => {
      clearTimeout(timer);
      clearTimeout(helloGrace);
      window.removeEventListener('message', onMessage);
      document.removeEventListener('securitypolicyviolation', onViolation);
      opts.signal?.removeEventListener('abort', onAbort);
    };
    const fail = (e: TyError) => {
      if (done) return;
      done = true;
      cleanup();
      frame.remove();
      reject(e);
    };
    const onViolation = (ev: SecurityPolicyViolationEvent) => {
      const d = ev.effectiveDirective || ev.violatedDirective;
      if (
        (d === 'frame-src' || d === 'child-src' || d === 'default-src') &&
        ev.blockedURI &&
        url.startsWith(ev.blockedURI.split('#')[0]!)
      )
        fail(frameBlocked(d, url));
    };
    const onLoad = () => {
      if (++loads > 1) {
        if (!done) fail(new TyError('E_SANDBOX_FAILED', 'the sandbox frame navigated while it started'));
        navigated?.();
        return;
      }
      // The frame's script posts its hello while the document parses, before `load`; give the message a moment.
      // In srcdoc mode a frame that loaded without a hello had its inline bootstrap refused by the page's policy.
      if (!helloSeen && srcdoc !== undefined)
        helloGrace = setTimeout(() => {
          void srcdocScriptHash().then((h) =>
            fail(srcdocBlocked('script-src', `the bootstrap's hash ${h} in script-src`)),
          );
        }, 200);
      else if (!helloSeen)
        helloGrace = setTimeout(
          () =>
            fail(
              new TyError(
                'E_SANDBOX_UNAVAILABLE',
                `the sandbox frame ${url.slice(0, 200)} loaded but did not start: serve ${FRAME_HTML} and ${FRAME_SCRIPT} ` +
                  `from the host's assetBaseUrl (see docs/browser.md), without a Content-Security-Policy header ` +
                  `that forbids its script`,
              ),
            ),
          2000,
        );
    };
    const onAbort = () => fail(new TyError('E_ABORTED', 'sandbox start aborted'));
    const onMessage = (ev: MessageEvent) => {
      if (done || helloSeen || !isTrustedHello(ev, frame.contentWindow, token)) return;
      helloSeen = true;
      clearTimeout(helloGrace);
      const port = ev.ports[0]!;
      const control = ev.ports[1]!;
      control.onmessage = (m) => {
        const d = m.data as { type?: unknown; directive?: unknown; message?: unknown; blocked?: unknown } | null;
        if (d?.type === 'booted') {
          if (done) return;
          done = true;
          cleanup();
          control.onmessage = null;
          resolve({ frame, port, control, remove: () => frame.remove(), onNavigate: (cb) => (navigated = cb) });
        } else if (d?.type === 'boot-failed' || d?.type === 'csp-violation') {
          fail(frameCspError(typeof d.directive === 'string' && d.directive ? d.directive : 'worker-src'));
        }
      };
      control.postMessage({
        type: 'boot',
        workerSource: opts.workerSource ?? WORKER_SOURCE,
        ...(opts.extraScript !== undefined ? { extraScript: opts.extraScript } : {}),
      });
    };
    const timer = setTimeout(
      () =>
        fail(
          new TyError(
            'E_TIMEOUT',
            `the sandbox frame ${url.slice(0, 200)} did not start within ${opts.timeoutMs ?? 30_000} ms`,
          ),
        ),
      opts.timeoutMs ?? 30_000,
    );
    if (opts.signal?.aborted) return onAbort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    window.addEventListener('message', onMessage);
    document.addEventListener('securitypolicyviolation', onViolation);
    frame.addEventListener('load', onLoad);
    (opts.container ?? document.body).appendChild(frame);
  });
}

/** A started sandbox: one frame, one worker, one SandboxChannel; calls are serialized. */
class BrowserSandboxInstance implements SandboxInstance {
  #queue: Promise<unknown> = Promise.resolve();
  /** The host's call id of the call running now (calls are serialized), for tool logs. */
  currentCall: string | undefined;
  constructor(
    readonly revision: string,
    readonly frame: HTMLIFrameElement,
    readonly channel: SandboxChannel,
    private readonly callIdOf?: (signal: AbortSignal) => string | undefined,
    /** A fresh ping round trip: resolves false when the frame is dead (see BrowserSandboxRuntime #suspect). */
    private readonly verify?: () => Promise<boolean>,
  ) {}
  get alive(): boolean {
    return this.channel.alive;
  }
  /** Why the sandbox died, if it did (e.g. E_SANDBOX_FAILED "the sandbox frame navigated"). */
  get closedReason(): TyError | undefined {
    return this.channel.closedReason;
  }
  call(args: unknown, opts: CallOptions): Promise<unknown> {
    const go = async () => {
      // After another sandbox's renderer died, this one may have died with it: check before sending anything,
      // so the pool can run the call on a fresh sandbox instead (nothing of it ran here).
      if (this.verify && !(await this.verify()))
        throw new TyError(
          'E_SANDBOX_FAILED',
          'the sandbox stopped before this call was sent (its renderer process died)',
          { notStarted: true },
        );
      this.currentCall = this.callIdOf?.(opts.signal);
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
 * Starts sandboxes in the current page. Each sandbox is a fresh frame from openSandboxFrame (opaque origin, its
 * own CSP forbidding network, storage, frames and objects); the tool runs in a Blob worker inside it, speaking
 * protocol v1 (core/exec/channel.ts) over the one MessagePort the frame hands over. Destroying a sandbox removes the
 * frame, which terminates its worker (HTML §10.2.4: a dedicated worker's owner document is discarded). A second
 * `load` of the frame (any navigation) destroys it. A frame that stops answering the heartbeat on its control
 * port (its renderer process died, e.g. a tool exhausted its memory) or whose ports close fails its sandbox
 * within `heartbeatMs` (E_SANDBOX_FAILED); the pool then starts a fresh one on the next call.
 * @throws TyError E_SANDBOX_UNAVAILABLE (no DOM, the page's or the frame's CSP forbids the frame or worker, assets
 *   not served, or an execution the browser host cannot run), E_TIMEOUT, E_ABORTED, E_TOOL_FAILED (module failed
 *   to load), E_SANDBOX_FAILED.
 */
export class BrowserSandboxRuntime implements SandboxRuntime {
  readonly name = 'browser-worker';
  /** Until this time (ms since the epoch) after a sandbox died, the others verify they are alive before a call. */
  #suspectUntil = 0;
  constructor(readonly options: BrowserSandboxOptions = {}) {}

  /** The Pyodide manifest with `pyodideBaseUrl` applied. */
  #pyManifest(): PyodideManifest | undefined {
    const m = this.options.pyodide;
    if (!m) return undefined;
    const base =
      this.options.pyodideBaseUrl ??
      (this.options.assetBaseUrl !== undefined
        ? new URL('pyodide/', new URL(this.options.assetBaseUrl, location.href)).href
        : m.base);
    return { ...m, base };
  }

  /**
   * Fetch and verify the Python runtime's files now (once per page and manifest), so the first Python call does
   * not wait for them. @throws TyError E_SANDBOX_UNAVAILABLE (not configured, fetch failed), E_INTEGRITY.
   */
  async prewarmPython(): Promise<void> {
    const m = this.#pyManifest();
    if (!m)
      throw new TyError(
        'E_SANDBOX_UNAVAILABLE',
        'the Python runtime is not configured in this app (no Pyodide manifest)',
      );
    await loadPyodideAssets(m, undefined, this.options.onPythonProgress);
  }

  async start(spec: SandboxSpec, signal?: AbortSignal): Promise<SandboxInstance> {
    const exec = spec.manifest.execution;
    if (exec.kind !== 'sandboxed-code')
      throw new TyError('E_SANDBOX_UNAVAILABLE', `a ${exec.kind} tool does not run in a sandbox`);
    if (typeof document === 'undefined') throw new TyError('E_SANDBOX_UNAVAILABLE', 'the browser sandbox needs a DOM');
    if (signal?.aborted) throw new TyError('E_ABORTED', 'sandbox start aborted');
    let pyAssets: PyodideAssets | undefined;
    let pyPackages: { file: string; bytes: ArrayBuffer }[] = [];
    if (exec.runtime === 'python') {
      const m = this.#pyManifest();
      if (!m)
        throw new TyError(
          'E_SANDBOX_UNAVAILABLE',
          'the Python runtime is not configured in this app (no Pyodide manifest)',
        );
      pyAssets = await loadPyodideAssets(m, undefined, this.options.onPythonProgress);
      const wanted = spec.manifest.python?.packages ?? [];
      if (wanted.length > 0) {
        const base =
          this.options.pythonPackagesBaseUrl ??
          new URL('python-packages/', new URL(this.options.assetBaseUrl ?? '/', location.href)).href;
        pyPackages = await loadPythonPackages(base, wanted);
      }
    }
    const budget = this.options.startTimeoutMs ?? (exec.runtime === 'python' ? 120_000 : 30_000);
    const sf = await openSandboxFrame({
      frame: this.options.frame ?? pageFrameMode,
      python: exec.runtime === 'python',
      ...(this.options.assetBaseUrl !== undefined ? { assetBaseUrl: this.options.assetBaseUrl } : {}),
      ...(this.options.container ? { container: this.options.container } : {}),
      ...(this.options.testFrameScript ? { extraScript: this.options.testFrameScript } : {}),
      timeoutMs: budget,
      ...(signal ? { signal } : {}),
    });
    const { frame, port, control } = sf;
    sf.onNavigate(() => channel.fail(new TyError('E_SANDBOX_FAILED', 'the sandbox frame navigated; it was destroyed')));
    if (pyAssets) {
      // Pre-protocol: copies of the verified Pyodide files, transferred (the page keeps its cached originals).
      const files: Record<string, ArrayBuffer> = {};
      for (const [k, v] of Object.entries(pyAssets)) files[k] = v.slice(0);
      port.postMessage(
        {
          tysandbox: 'python-assets',
          files,
          packages: pyPackages,
          retainState: exec.retainState === true,
          memoryMb: spec.limits.memoryMb,
        },
        [...Object.values(files), ...pyPackages.map((p) => p.bytes)],
      );
    }
    // Heartbeat: the frame's own thread (never blocked by tool code in the worker) echoes each ping.
    const heartbeatMs = this.options.heartbeatMs ?? 1000;
    let pending: { n: number; at: number } | undefined;
    let n = 0;
    const dead = (why: string) => {
      if (channel.alive) this.#suspectUntil = Date.now() + 10_000; // its renderer may have held other sandboxes too
      channel.fail(new TyError('E_SANDBOX_FAILED', `the sandbox stopped: ${why}`));
    };
    const pongWaiters = new Set<() => void>();
    const verify = async (): Promise<boolean> => {
      if (!channel.alive) return false;
      if (Date.now() > this.#suspectUntil) return true;
      const ping = ++n;
      const ok = await new Promise<boolean>((resolve) => {
        const t = setTimeout(
          () => {
            pongWaiters.delete(done);
            resolve(false);
          },
          Math.min(heartbeatMs, 1000),
        );
        const done = () => {
          clearTimeout(t);
          resolve(true);
        };
        pongWaiters.add(done);
        control.postMessage({ type: 'ping', n: ping });
      });
      if (!ok) dead(`its frame did not answer a check (the renderer process died)`);
      return ok && channel.alive;
    };
    // Until the tool has loaded, a CSP violation or a worker that failed to start is a start failure naming the
    // directive (afterwards a violation is tool code trying something the CSP forbids: nothing to do).
    let violation: string | undefined;
    control.onmessage = (m) => {
      const d = m.data as { type?: unknown; n?: unknown; directive?: unknown } | null;
      if (d?.type === 'pong') {
        if (pending && d.n === pending.n) pending = undefined;
        for (const w of [...pongWaiters]) w();
        pongWaiters.clear();
      } else if (d?.type === 'csp-violation' && !started) {
        violation = typeof d.directive === 'string' && d.directive ? d.directive : 'worker-src';
        if (violation === 'worker-src' || violation === 'script-src' || violation === 'script-src-elem')
          channel.fail(frameCspError(violation));
      } else if (d?.type === 'worker-error' && !started) {
        channel.fail(
          violation
            ? frameCspError(violation)
            : new TyError(
                'E_SANDBOX_UNAVAILABLE',
                'the sandbox worker failed to start (its script was refused or did not parse)',
              ),
        );
      }
    };
    let started = false;
    const beat = setInterval(
      () => {
        const now = Date.now();
        if (pending && now - pending.at > heartbeatMs)
          return dead(
            `its frame did not answer for ${heartbeatMs} ms (the renderer process died, e.g. a tool ran out of memory)`,
          );
        if (!pending) {
          pending = { n: ++n, at: now };
          control.postMessage({ type: 'ping', n: pending.n });
        }
      },
      Math.max(50, Math.floor(heartbeatMs / 4)),
    );
    // Chromium fires `close` on a port whose other end's owner went away (a crashed renderer, a removed frame).
    const onClose = () => dead('its frame closed its ports');
    port.addEventListener('close', onClose);
    control.addEventListener('close', onClose);
    const sandboxPort: SandboxPort = {
      send(msg: HostMessage) {
        port.postMessage(msg);
      },
      close() {
        clearInterval(beat);
        detached.disconnect();
        port.removeEventListener('close', onClose);
        control.removeEventListener('close', onClose);
        for (const p of [port, control]) {
          try {
            p.close();
          } catch {
            /* already closed */
          }
        }
        frame.remove();
      },
    };
    const events = this.options.events;
    const tool = spec.manifest.name;
    let instance: BrowserSandboxInstance | undefined;
    // Stack frames in log lines point at the tool's source files (core/exec/stack.ts), never at the loaded module.
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
    const channel = new SandboxChannel(sandboxPort, {
      onLog,
      onClosed: (reason) => {
        if (started)
          events?.emit('sandbox-destroyed', {
            tool,
            revision: spec.revision,
            reason: reason.message.replace(/^sandbox destroyed: /, ''),
            code: reason.code,
          });
      },
    });
    port.onmessage = (m) => channel.receive(m.data);
    port.onmessageerror = () =>
      channel.fail(new TyError('E_PROTOCOL', 'a message from the sandbox could not be deserialized'));
    // Other page code removing the frame (or an ancestor) kills the worker: fail at once, not at the timeout.
    const detached = new MutationObserver(() => {
      if (!frame.isConnected)
        channel.fail(new TyError('E_SANDBOX_FAILED', 'the sandbox frame was removed from the page'));
    });
    detached.observe(document, { childList: true, subtree: true });
    if (!frame.isConnected)
      channel.fail(new TyError('E_SANDBOX_FAILED', 'the sandbox frame was removed from the page'));
    const t0 = Date.now();
    if (exec.runtime === 'python') this.options.onPythonProgress?.({ phase: 'start', loaded: 0, total: 0 });
    await channel.load(exec.runtime, exec.source, budget, signal);
    started = true;
    instance = new BrowserSandboxInstance(spec.revision, frame, channel, this.options.callIdOf, verify);
    events?.emit('sandbox-started', { tool, revision: spec.revision, runtime: exec.runtime, startMs: Date.now() - t0 });
    return instance;
  }
}
