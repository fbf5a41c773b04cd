// Browser security contracts, run inside a real page (diagnostics page, browser tests, `tycli diagnostics --browser`);
// test code, trusted host side.
import { BrowserSandboxRuntime, isTrustedHello, openSandboxFrame, sandboxCsp } from '../sandbox/runtime.js';
import { IdbStoreBackend } from '../store.js';
import { PYODIDE_MANIFEST } from '../python/pyodide-manifest.js';
import { DialogAskChannel } from '../ask/dialog.js';
import { createBrowserHost } from '../host.js';
import { BrowserFetchTransport } from '../fetch.js';
import { openHostPopup, POPUP_CONTENT_CSP } from '../popup.js';
import type { Gate, GateRequest } from '../../core/exec/runtime.js';
import { TyError } from '../../core/errors.js';
import { SandboxPool } from '../../core/exec/pool.js';
import {
  DEFAULT_LIMITS,
  type CallLimits,
  type CapabilityHandler,
  type SandboxInstance,
} from '../../core/exec/runtime.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import { runStoreContract } from '../../core/store/contract-suite.js';
import { bundledContract } from './bundled-contract.js';
import { QUICKJS_CONTRACTS } from './quickjs-contracts.js';
import {
  PYTHON_ESCAPE_SOURCE,
  pythonEscapeChecks,
  type PythonProbeArgs,
} from '../../core/diagnostics/python-probes.js';

/** One row of the cross-host table. */
export interface ContractRow {
  name: string;
  host: 'browser';
  ok: boolean;
  detail: string;
}
interface Contract {
  name: string;
  run(): Promise<string>;
}

let revCounter = 0;
/** Tool console output goes to the page console (the driver shows it when a contract fails). */
const sandboxLog = (level: string, text: string) => console.log(`[sandbox ${level}] ${text.slice(0, 500)}`);
function manifest(source: string): ToolManifest {
  return {
    name: 'probe',
    description: 'contract probe',
    parameters: { type: 'object' },
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
  };
}
const FAKE_REV = () => `bafkreiprobe${(revCounter++).toString().padStart(8, '0')}aaaaaaaaaaaaaaaa`;

/** Beacon URL on the serving host: the test server counts every request that reaches it. */
export function beacon(tag: string): string {
  return `${location.origin}/beacon/${encodeURIComponent(tag)}`;
}

function check(cond: unknown, msg: string): asserts cond {
  if (!cond) throw new Error(msg);
}

async function start(
  source: string,
  opts: { frameScript?: string } = {},
): Promise<SandboxInstance & { frame: HTMLIFrameElement; closedReason: TyError | undefined }> {
  const rt = new BrowserSandboxRuntime(opts.frameScript ? { testFrameScript: opts.frameScript } : {});
  return (await rt.start({ revision: FAKE_REV(), manifest: manifest(source), limits: DEFAULT_LIMITS })) as never;
}

const denyAll: CapabilityHandler = async (name) => {
  throw new TyError('E_CAPABILITY_DENIED', `${name} denied by the contract harness`);
};
function callOpts(onCapability: CapabilityHandler = denyAll, limits: Partial<CallLimits> = {}) {
  return { signal: new AbortController().signal, onCapability, limits: { ...DEFAULT_LIMITS, ...limits } };
}
async function expectCode(p: Promise<unknown>, code: string): Promise<TyError> {
  try {
    const v = await p;
    throw new Error(`expected ${code}, got a value ${JSON.stringify(v)?.slice(0, 200)}`);
  } catch (e) {
    if (!(e instanceof TyError)) throw new Error(`expected TyError ${code}, got ${String(e)}`);
    if (e.code !== code) throw new Error(`expected ${code}, got ${e.code}: ${e.message}`);
    return e;
  }
}
/** The built-in dialogs on screen (each in the shadow root of a <tysandbox-question> element). */
function questionDialogs(): HTMLDialogElement[] {
  return Array.from(document.querySelectorAll('tysandbox-question')).flatMap((h) =>
    Array.from(h.shadowRoot?.querySelectorAll<HTMLDialogElement>('dialog[data-tysandbox-question]') ?? []),
  );
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function waitFor(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/**
 * A bare sandbox frame (the runtime's own sandbox-frame.html, CSP and sandbox flags) running `workerSource`
 * instead of the bootstrap, so the CSP is tested alone, without the JavaScript lock-down. Resolves with the
 * first message the worker posts on its port.
 */
async function rawFrameProbe(workerSource: string, timeoutMs = 15_000): Promise<unknown> {
  const sf = await openSandboxFrame({ workerSource, timeoutMs });
  try {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('raw frame probe timed out')), timeoutMs);
      sf.port.onmessage = (m) => {
        clearTimeout(timer);
        resolve(m.data);
      };
    });
  } finally {
    sf.remove();
  }
}

/** An inline srcdoc frame WITHOUT any CSP (controls only: proves the probes can succeed). */
function controlSrcdoc(token: string, workerSource: string): string {
  const boot =
    `(() => { const ch = new MessageChannel(); const u = URL.createObjectURL(new Blob([${JSON.stringify(workerSource).replace(/</g, '\\u003c')}], ` +
    `{ type: 'text/javascript' })); const w = new Worker(u); w.postMessage(null, [ch.port2]); parent.postMessage({ ` +
    `token: ${JSON.stringify(token)} }, '*', [ch.port1]); })();`;
  return `<!doctype html><html><body><script>${boot}</script></body></html>`;
}

const WORKER_PROBES = `
  const out = {};
  const tryIt = async (name, fn) => { try { const v = await fn(); out[name] = 'allowed:' + String(v).slice(0, 80); } catch (e) { out[name] = 'blocked:' + (e && e.name); } };
  const B = (t) => BEACON + t;
  await tryIt('fetch', () => fetch(B('fetch')).then((r) => r.status));
  await tryIt('WebSocket', () => new Promise((res, rej) => { const w = new WebSocket(B('ws').replace('http', 'ws')); w.onopen = () => res('open'); w.onerror = () => rej(new Error('ws error')); }));
  await tryIt('importScripts', () => { importScripts(B('importScripts')); return 'loaded'; });
  await tryIt('EventSource', () => new Promise((res, rej) => { const s = new EventSource(B('es')); s.onopen = () => res('open'); s.onerror = () => { s.close(); rej(new Error('es error')); }; }));
  await tryIt('Worker', () => new Promise((res, rej) => {
    const u = URL.createObjectURL(new Blob(['fetch(' + JSON.stringify(B('nested-worker')) + ').then(() => postMessage("fetched"), (e) => postMessage("blocked:" + e.name))'], {
    type: 'text/javascript' })); const w = new Worker(u);
    w.onmessage = (m) => (String(m.data).startsWith('blocked') ? rej(new Error(m.data)) : res(m.data));
    w.onerror = () => rej(new Error('worker error')); }));
  await tryIt('SharedWorker', () => { new SharedWorker(URL.createObjectURL(new Blob([''], { type: 'text/javascript' }))); return 'made'; });
  await tryIt('indexedDB', () => new Promise((res, rej) => { const r = indexedDB.open('x'); r.onsuccess = () => res('opened'); r.onerror = () => rej(new Error('idb error')); }));
  await tryIt('caches', () => caches.open('x').then(() => 'opened'));
  await tryIt('XMLHttpRequest', () => new Promise((res, rej) => { const x = new XMLHttpRequest();
    x.open('GET', B('xhr')); x.onload = () => res(x.status); x.onerror = () => rej(new Error('xhr error'));
    x.send(); }));
  await tryIt('dynamic import', () => import(B('import.js')).then(() => 'imported'));
  await tryIt('open', () => self.open('https://example.org/'));
`;

const contracts: Contract[] = [
  bundledContract,
  {
    name: 'sandbox frame: sandbox attribute is exactly allow-scripts; its document carries the CSP',
    async run() {
      const sb = await start('export default async () => 1');
      try {
        const attr = sb.frame.getAttribute('sandbox');
        check(attr === 'allow-scripts', `sandbox attribute is ${JSON.stringify(attr)}`);
        check(
          sb.frame.sandbox.length === 1 && sb.frame.sandbox.contains('allow-scripts'),
          'token list is not exactly allow-scripts',
        );
        const doc = await (await fetch(sb.frame.src.split('#')[0]!)).text();
        check(
          doc.includes(`content="${sandboxCsp()}"`) && /connect-src 'none'/.test(doc) && /default-src 'none'/.test(doc),
          'CSP missing from the frame document',
        );
        return `sandbox="${attr}"`;
      } finally {
        await sb.destroy('done');
      }
    },
  },
  {
    name: 'worker: network, storage and worker constructors are removed or blocked; fetch is the mediated one',
    async run() {
      const seen: string[] = [];
      const onCap: CapabilityHandler = async (name, params) => {
        seen.push(`${name}:${(params as { url?: string }).url ?? ''}`);
        throw new TyError('E_CAPABILITY_DENIED', 'denied by harness');
      };
      const sb = await start(
        `export default async ({ BEACON }, ctx) => { ${WORKER_PROBES}; out.same = String(fetch === ctx.fetch); return out; }`,
      );
      try {
        const out = (await sb.call({ BEACON: beacon('worker-') }, callOpts(onCap))) as Record<string, string>;
        const allowed = Object.entries(out).filter(([k, v]) => k !== 'same' && !v.startsWith('blocked'));
        check(allowed.length === 0, `reachable: ${JSON.stringify(allowed)}`);
        check(out.same === 'true', 'global fetch is not ctx.fetch');
        check(
          seen.length === 1 && seen[0] === `fetch:${beacon('worker-')}fetch`,
          `mediated fetch not used exactly once: ${JSON.stringify(seen)}`,
        );
        return Object.entries(out)
          .map(([k, v]) => `${k}=${v}`)
          .join(', ');
      } finally {
        await sb.destroy('done');
      }
    },
  },
  {
    name: 'worker: CSP alone (no JavaScript lock-down) blocks every network path',
    async run() {
      const src = `const BEACON = ${JSON.stringify(beacon('csp-'))}; onmessage = async (ev) => { const port = ev.ports[0]; ${WORKER_PROBES}; port.postMessage(out); };`;
      const out = (await rawFrameProbe(src)) as Record<string, string>;
      const allowed = Object.entries(out).filter(([, v]) => !v.startsWith('blocked'));
      check(allowed.length === 0, `reachable with CSP alone: ${JSON.stringify(allowed)}`);
      return Object.entries(out)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ');
    },
  },
  {
    name: 'control: the same fetch probe in a sandboxed frame without the CSP does reach the beacon server (the probe can fail)',
    async run() {
      const token = 'control' + Math.random().toString(16).slice(2);
      const src =
        `onmessage = async (ev) => { const port = ev.ports[0]; try { const r = await fetch(${JSON.stringify(beacon('control-fetch'))}); ` +
        `port.postMessage('allowed:' + r.status); } catch (e) { port.postMessage('blocked:' + e.name); ` +
        `} };`;
      const doc = controlSrcdoc(token, src);
      check(!doc.includes('Content-Security-Policy'), 'CSP still present in the control frame');
      const frame = document.createElement('iframe');
      frame.setAttribute('sandbox', 'allow-scripts');
      frame.srcdoc = doc;
      try {
        const got = await new Promise<unknown>((resolve, reject) => {
          const t = setTimeout(() => reject(new Error('control frame timed out')), 10_000);
          const on = (ev: MessageEvent) => {
            if (ev.source !== frame.contentWindow || ev.ports.length !== 1) return;
            window.removeEventListener('message', on);
            ev.ports[0]!.onmessage = (m) => {
              clearTimeout(t);
              resolve(m.data);
            };
          };
          window.addEventListener('message', on);
          document.body.appendChild(frame);
        });
        check(got === 'allowed:204', `without the CSP the probe got ${String(got)}`);
        return String(got);
      } finally {
        frame.remove();
      }
    },
  },
  {
    name: 'origin is "null" (opaque) in the sandbox frame and in its worker',
    async run() {
      const sb = await start(
        'export default async () => ({ origin: self.origin, href: String(self.location.href).slice(0, 5) })',
      );
      try {
        const w = (await sb.call({}, callOpts())) as { origin: string; href: string };
        check(w.origin === 'null', `worker origin ${w.origin}`);
        check(w.href === 'blob:', `worker location ${w.href}`);
      } finally {
        await sb.destroy('done');
      }
      const frameOrigin = await rawFrameProbe(`onmessage = (ev) => ev.ports[0].postMessage(self.origin);`);
      check(frameOrigin === 'null', `raw worker origin ${String(frameOrigin)}`);
      // the frame's own origin, reported by a script inside the frame
      const got = await new Promise<string>((resolve, reject) => {
        const frame = document.createElement('iframe');
        frame.setAttribute('sandbox', 'allow-scripts');
        frame.src = `/sandbox-frame.html#t=t&o=${encodeURIComponent(location.origin)}`;
        // the frame's hello hands over its ports; booting it with a probe script makes it report its own origin
        const onHello = (ev: MessageEvent) => {
          if (ev.source !== frame.contentWindow || ev.ports.length !== 2) return;
          window.removeEventListener('message', onHello);
          ev.ports[1]!.postMessage({
            type: 'boot',
            workerSource: '',
            extraScript: `parent.postMessage({ frameOrigin: self.origin }, '*')`,
          });
        };
        window.addEventListener('message', onHello);
        const t = setTimeout(() => reject(new Error('no report from the frame')), 10_000);
        const on = (ev: MessageEvent) => {
          if (
            ev.source !== frame.contentWindow ||
            typeof (ev.data as { frameOrigin?: unknown })?.frameOrigin !== 'string'
          )
            return;
          clearTimeout(t);
          window.removeEventListener('message', on);
          frame.remove();
          resolve((ev.data as { frameOrigin: string }).frameOrigin);
        };
        window.addEventListener('message', on);
        document.body.appendChild(frame);
      });
      check(got === 'null', `frame origin ${got}`);
      return 'worker origin null, frame origin null';
    },
  },
  {
    name: 'frame: top navigation and window.open are blocked; a self-navigation is noticed and the sandbox destroyed',
    async run() {
      const reports: unknown[] = [];
      const on = (ev: MessageEvent) => {
        if ((ev.data as { navProbe?: unknown })?.navProbe) reports.push(ev.data);
      };
      window.addEventListener('message', on);
      const before = location.href;
      const frameScript = `
        const r = { navProbe: true };
        try { top.location = ${JSON.stringify(beacon('top-nav'))}; r.top = 'allowed'; } catch (e) { r.top = 'blocked:' + e.name; }
        try { const w = window.open(${JSON.stringify(beacon('popup'))}); r.open = w ? 'allowed' : 'blocked:null'; } catch (e) { r.open = 'blocked:' + e.name; }
        parent.postMessage(r, '*');
        setTimeout(() => { location = 'https://example.org/'; }, 300);`;
      const sb = await start('export default async () => 1', { frameScript });
      try {
        await waitFor(() => !sb.alive, 15_000, 'the sandbox to be destroyed after navigating');
        check(
          sb.closedReason?.code === 'E_SANDBOX_FAILED' && /navigated/.test(sb.closedReason.message),
          `closed for ${sb.closedReason?.message}`,
        );
        check(!sb.frame.isConnected, 'the frame is still in the document');
        await expectCode(sb.call({}, callOpts()), 'E_SANDBOX_FAILED');
        await waitFor(() => reports.length > 0, 5000, 'the frame report');
        const r = reports[0] as { top: string; open: string };
        check(r.top.startsWith('blocked') && r.open.startsWith('blocked'), `frame report ${JSON.stringify(r)}`);
        check(location.href === before, 'the host page navigated');
        return `top=${r.top}, open=${r.open}, self-navigation -> destroyed`;
      } finally {
        window.removeEventListener('message', on);
        await sb.destroy('done');
      }
    },
  },
  {
    name: 'host: messages from other windows (fake handshakes, forged ports) are ignored',
    async run() {
      // A foreign sandboxed frame and the page itself both post forged hellos carrying ports that answer
      // every protocol message with a forged result; the real sandbox must still answer.
      const forger = `
        const forge = () => { const ch = new MessageChannel();
          ch.port1.onmessage = (ev) => { const m = ev.data; if (m && m.type === 'call') ch.port1.postMessage({
            v: 1, type: 'result', id: m.id, ok: true, json: '"forged"' });
            if (m && m.type === 'load') ch.port1.postMessage({ v: 1, type: 'loaded', ok: true }); };
          ch.port1.postMessage({ v: 1, type: 'ready', runtime: 'forged' });
          parent.postMessage({ type: 'tysandbox-hello', token: 'guess' }, '*', [ch.port2]); };
        for (let i = 0; i < 50; i++) setTimeout(forge, i * 10);`;
      const foreign = document.createElement('iframe');
      foreign.setAttribute('sandbox', 'allow-scripts');
      foreign.srcdoc = `<script>${forger}</script>`;
      document.body.appendChild(foreign);
      const pageForge = setInterval(() => {
        const ch = new MessageChannel();
        ch.port1.onmessage = (ev) => {
          const m = ev.data as { type?: string; id?: number };
          if (m?.type === 'call') ch.port1.postMessage({ v: 1, type: 'result', id: m.id, ok: true, json: '"forged"' });
        };
        window.postMessage({ type: 'tysandbox-hello', token: 'guess' }, '*', [ch.port2]);
      }, 5);
      try {
        for (let i = 0; i < 3; i++) {
          const sb = await start('export default async () => "genuine"');
          try {
            const v = await sb.call({}, callOpts());
            check(v === 'genuine', `got ${JSON.stringify(v)}`);
          } finally {
            await sb.destroy('done');
          }
        }
        // The check itself, with the right token: only the exact frame window with one port passes.
        const ch = new MessageChannel();
        const ch2 = new MessageChannel();
        const hello = { type: 'tysandbox-hello', token: 'T' };
        const fw = foreign.contentWindow!;
        const ev = (source: MessageEventSource | null, data: unknown, ports: MessagePort[]) =>
          new MessageEvent('message', { source, data, ports });
        const two = [ch.port1, ch2.port1];
        check(isTrustedHello(ev(fw, hello, two), fw, 'T'), 'the genuine hello was refused');
        check(!isTrustedHello(ev(window, hello, two), fw, 'T'), 'accepted a hello from the host window itself');
        check(!isTrustedHello(ev(null, hello, two), fw, 'T'), 'accepted a hello without a source');
        check(!isTrustedHello(ev(fw, { ...hello, token: 'U' }, two), fw, 'T'), 'accepted a wrong token');
        check(
          !isTrustedHello(ev(fw, hello, []), fw, 'T') && !isTrustedHello(ev(fw, hello, [ch.port1]), fw, 'T'),
          'accepted a hello without exactly two ports',
        );
        check(!isTrustedHello(ev(fw, hello, two), null, 'T'), 'accepted a hello for a frame without a window');
        return 'three sandboxes answered genuinely while forged hellos were posted; the source/token/port check refuses each forgery';
      } finally {
        clearInterval(pageForge);
        foreign.remove();
      }
    },
  },
  {
    name: 'js-escape: Function constructor from a tool value cannot reach a host process or host global',
    async run() {
      const sb = await start(`export default async () => {
        const r = {};
        try { r.a = typeof (function () { return this; }).constructor.constructor('return process')(); } catch (e) { r.a = 'threw:' + e.name; }
        try { const g = import('x').catch(() => 0).constructor.constructor('return globalThis')(); r.b = g === globalThis ? 'own-global' : 'other'; } catch (e) { r.b = 'threw:' + e.name; }
        r.process = typeof process; r.document = typeof document; r.parent = typeof parent; r.top = typeof top; r.opener = typeof opener;
        return r; }`);
      try {
        const r = (await sb.call({}, callOpts())) as Record<string, string>;
        check(r.a === 'undefined' || r.a!.startsWith('threw'), `process reached: ${r.a}`);
        check(r.b === 'own-global' || r.b!.startsWith('threw'), `global: ${r.b}`);
        for (const k of ['process', 'document', 'parent', 'top', 'opener'])
          check(r[k] === 'undefined', `${k} is ${r[k]}`);
        return JSON.stringify(r);
      } finally {
        await sb.destroy('done');
      }
    },
  },
  {
    name: 'js-escape: hostile errors (prepareStackTrace, Symbol name) are rebuilt as plain {name, message}',
    async run() {
      const sb = await start(`export default async (args, ctx) => {
        Error.prepareStackTrace = (e, frames) => frames.map((f) => f.getThis());
        await ctx.fetch('https://example.org/').catch(() => 0);
        const e = new Error('x'); e.name = Symbol('s');
        if (args.mode === 'throw') throw e;
        if (args.mode === 'throw-stack') { const s = new Error('with stack'); void s.stack; throw s; }
        return e; }`);
      try {
        const a = await expectCode(sb.call({ mode: 'throw' }, callOpts()), 'E_TOOL_FAILED');
        const b = await expectCode(sb.call({ mode: 'return' }, callOpts()), 'E_TOOL_FAILED');
        const c = await expectCode(sb.call({ mode: 'throw-stack' }, callOpts()), 'E_TOOL_FAILED');
        for (const e of [a, b, c]) {
          check(e instanceof TyError && typeof e.message === 'string', 'not a host TyError');
          check(!/blob:|https?:\/\//.test(e.message), `message carries a location: ${e.message}`);
        }
        check(sb.alive, 'the sandbox died on a hostile error');
        return `throw: ${a.message}; return: ${b.message.slice(0, 60)}; stack: ${c.message}`;
      } finally {
        await sb.destroy('done');
      }
    },
  },
  {
    name: 'js-escape: a Proxy result or a Proxy fetch init fails inside the sandbox; no trap runs on the host',
    async run() {
      let capCalls = 0;
      const sb = await start(`export default async (args, ctx) => {
        if (args.mode === 'result') return new Proxy({}, { get() { throw new Error('trap'); }, ownKeys() { throw 1; } });
        try { await fetch('https://example.org/', new Proxy({}, { getOwnPropertyDescriptor() { throw 1; } })); return 'no error'; }
        catch (e) { return e.code + ':' + e.name; } }`);
      try {
        const r = await expectCode(sb.call({ mode: 'result' }, callOpts()), 'E_TOOL_FAILED');
        const f = await sb.call(
          { mode: 'init' },
          callOpts(async () => {
            capCalls++;
            return null;
          }),
        );
        check(f === 'E_INVALID_ARGS:TypeError', `fetch with a Proxy init gave ${JSON.stringify(f)}`);
        check(capCalls === 0, 'the proxy init reached the capability handler');
        return `result: ${r.message.slice(0, 80)}; fetch init: ${String(f)}`;
      } finally {
        await sb.destroy('done');
      }
    },
  },
  {
    name: 'js-escape: an endless loop is stopped at the time limit, the frame and worker are destroyed, a new sandbox works',
    async run() {
      const src = 'export default async (a) => { if (a.spin) { while (true) {} } return "fresh"; }';
      const sb = await start(src);
      await expectCode(sb.call({ spin: true }, callOpts(denyAll, { timeoutMs: 1000 })), 'E_TIMEOUT');
      check(!sb.alive && !sb.frame.isConnected, 'the sandbox survived its timeout');
      const again = await start(src);
      try {
        check((await again.call({}, callOpts())) === 'fresh', 'the next sandbox did not answer');
      } finally {
        await again.destroy('done');
      }
      return 'E_TIMEOUT, frame removed, fresh sandbox answers';
    },
  },
  {
    name: 'js-escape: a 50 MiB result is refused with E_OUTPUT_LIMIT, never truncated',
    async run() {
      const sb = await start(`export default async () => 'x'.repeat(50 * 1024 * 1024)`);
      try {
        const e = await expectCode(sb.call({}, callOpts()), 'E_OUTPUT_LIMIT');
        return e.message;
      } finally {
        await sb.destroy('done');
      }
    },
  },
  {
    name: 'lifecycle: calls to one sandbox are serialized; abort destroys it with E_ABORTED',
    async run() {
      const sb = await start(
        `let running = 0, max = 0; export default async (a) => { running++; max = Math.max(max, running); ` +
          `await new Promise((r) => setTimeout(r, 30)); running--; if (a.hang) await new Promise(() => ` +
          `{}); return max; }`,
      );
      const results = await Promise.all([1, 2, 3, 4].map(() => sb.call({}, callOpts())));
      check(
        results.every((m) => m === 1),
        `calls overlapped: ${JSON.stringify(results)}`,
      );
      const ac = new AbortController();
      const p = sb.call({ hang: true }, { ...callOpts(), signal: ac.signal });
      setTimeout(() => ac.abort(), 100);
      await expectCode(p, 'E_ABORTED');
      check(!sb.alive && !sb.frame.isConnected, 'the sandbox survived the abort');
      // A worker that ends itself, or a frame removed by other page code, fails the call at once (not at the timeout).
      const quitter = await start('export default async () => typeof self.close');
      try {
        check((await quitter.call({}, callOpts())) === 'undefined', 'the worker can still close itself');
      } finally {
        await quitter.destroy('done');
      }
      const removed = await start('export default async () => new Promise(() => {})');
      const pr = removed.call({}, callOpts(denyAll, { timeoutMs: 20_000 }));
      setTimeout(() => removed.frame.remove(), 50);
      await expectCode(pr, 'E_SANDBOX_FAILED');
      return 'max concurrency 1; abort -> E_ABORTED, destroyed; no self.close; frame removal -> E_SANDBOX_FAILED at once';
    },
  },
  {
    name: 'lifecycle (core pool): retained per revision, fresh after timeout, replaced on revision change, disposable mode leaves nothing',
    async run() {
      const frames = () => document.querySelectorAll('iframe[sandbox]').length;
      const base = frames();
      const src = (tag: string) =>
        `let n = 0; export default async (a) => { if (a.spin) { while (true) {} } if (a.fail) throw new Error('boom'); n++; return '${tag}:' + n; }`;
      const spec = (rev: string, tag: string, timeoutMs = 60_000) => ({
        revision: rev,
        manifest: { ...manifest(src(tag)), name: 'pooled' },
        limits: { ...DEFAULT_LIMITS, timeoutMs },
      });
      const pool = new SandboxPool({ runtime: new BrowserSandboxRuntime() });
      const o = { onCapability: denyAll };
      const revA = FAKE_REV();
      const revB = FAKE_REV();
      try {
        check((await pool.call(spec(revA, 'A'), {}, o)) === 'A:1', 'first call');
        check((await pool.call(spec(revA, 'A'), {}, o)) === 'A:2', 'retained sandbox kept its state');
        await expectCode(pool.call(spec(revA, 'A'), { fail: true }, o), 'E_TOOL_FAILED');
        check((await pool.call(spec(revA, 'A'), {}, o)) === 'A:3', 'a tool error retired the sandbox');
        check(frames() === base + 1, `expected one frame, found ${frames() - base}`);
        await expectCode(pool.call(spec(revA, 'A', 800), { spin: true }, o), 'E_TIMEOUT');
        check(frames() === base, 'the timed-out frame was not removed');
        check((await pool.call(spec(revA, 'A'), {}, o)) === 'A:1', 'no fresh sandbox after the timeout');
        check((await pool.call(spec(revB, 'B'), {}, o)) === 'B:1', 'new revision');
        await waitFor(
          () => frames() === base + 1 && pool.peek(revA) === undefined,
          5000,
          'the old revision to be destroyed',
        );
        const disp = new SandboxPool({ runtime: new BrowserSandboxRuntime(), mode: 'disposable' });
        const d = [await disp.call(spec(revA, 'D'), {}, o), await disp.call(spec(revA, 'D'), {}, o)];
        check(d[0] === 'D:1' && d[1] === 'D:1', `disposable calls shared state: ${JSON.stringify(d)}`);
        await disp.shutdown();
        check(frames() === base + 1, 'disposable sandboxes left frames behind');
        return 'retained A:1,A:2; timeout -> fresh; revision change destroys old; disposable fresh each call';
      } finally {
        await pool.shutdown();
      }
    },
  },
  {
    name: 'python: Pyodide computes in the worker; its own network paths fail and pyfetch goes through the mediated fetch; a loop is stopped',
    async run() {
      const seen: string[] = [];
      const source = [
        'import sys',
        'async def main(args, ctx):',
        '    if args.get("spin"):',
        '        while True:',
        '            pass',
        '    out = {"sum": sum(range(101)), "version": sys.version.split()[0]}',
        '    import js',
        '    out["js_globals"] = [n for n in ["XMLHttpRequest", "WebSocket", "importScripts", "indexedDB", "caches", "Worker", "EventSource", "document"] if hasattr(js, n)]',
        '    await ctx.storage.set("k", {"a": [1, 2], "b": None})',
        '    def attempt(name, fn):',
        '        try:',
        '            fn()',
        '            out[name] = "allowed"',
        '        except BaseException as e:',
        '            out[name] = "blocked:" + type(e).__name__',
        '    from pyodide.http import open_url',
        '    attempt("open_url", lambda: open_url(args["beacon"] + "open_url"))',
        '    import urllib.request',
        '    attempt("urllib", lambda: urllib.request.urlopen(args["beacon"] + "urllib"))',
        '    import socket',
        '    attempt("socket", lambda: socket.create_connection(("127.0.0.1", 80), timeout=1))',
        '    try:',
        '        from pyodide.http import pyfetch',
        '        await pyfetch(args["beacon"] + "pyfetch")',
        '        out["pyfetch"] = "allowed"',
        '    except BaseException as e:',
        '        out["pyfetch"] = "blocked:" + type(e).__name__',
        '    try:',
        '        await ctx.fetch(args["beacon"] + "ctx")',
        '        out["ctx_fetch"] = "allowed"',
        '    except CapabilityError as e:',
        '        out["ctx_fetch"] = "blocked:" + e.code',
        '    try:',
        '        import pyodide_js',
        '        await pyodide_js.loadPackage("micropip")',
        '        import micropip',
        '        out["loadPackage"] = "allowed"',
        '    except BaseException as e:',
        '        out["loadPackage"] = "blocked:" + type(e).__name__',
        '    return out',
      ].join('\n');
      const rt = new BrowserSandboxRuntime({ pyodide: PYODIDE_MANIFEST, onLog: sandboxLog });
      const sb = (await rt.start({
        revision: FAKE_REV(),
        manifest: { ...manifest(source), execution: { kind: 'sandboxed-code', runtime: 'python', source } },
        limits: DEFAULT_LIMITS,
      })) as SandboxInstance & { frame: HTMLIFrameElement };
      try {
        let stored: unknown;
        const out = (await sb.call(
          { beacon: beacon('py-') },
          callOpts(async (name, params) => {
            seen.push(`${name}:${(params as { url?: string }).url ?? ''}`);
            if (name === 'storage.set') {
              stored = params;
              return null;
            }
            throw new TyError('E_CAPABILITY_DENIED', 'denied by harness');
          }),
        )) as Record<string, unknown>;
        check(out.sum === 5050, `computation: ${JSON.stringify(out)}`);
        check(
          Array.isArray(out.js_globals) && out.js_globals.length === 0,
          `js exposes ${JSON.stringify(out.js_globals)}`,
        );
        for (const k of ['open_url', 'urllib', 'socket', 'pyfetch', 'loadPackage'])
          check(String(out[k]).startsWith('blocked'), `${k}: ${String(out[k])}`);
        check(out.ctx_fetch === 'blocked:E_CAPABILITY_DENIED', `ctx.fetch: ${String(out.ctx_fetch)}`);
        check(
          seen.length === 3 && seen[1] === `fetch:${beacon('py-')}pyfetch` && seen[2] === `fetch:${beacon('py-')}ctx`,
          `mediated fetch calls: ${JSON.stringify(seen)}`,
        );
        check(
          JSON.stringify(stored) === '{"key":"k","value":{"a":[1,2],"b":null}}',
          `storage.set from Python sent ${JSON.stringify(stored)}`,
        );
        await expectCode(sb.call({ spin: true }, callOpts(denyAll, { timeoutMs: 1500 })), 'E_TIMEOUT');
        check(!sb.alive && !sb.frame.isConnected, 'the Python sandbox survived its timeout');
        return JSON.stringify(out) + '; endless loop -> E_TIMEOUT, destroyed';
      } finally {
        await sb.destroy('done');
      }
    },
  },
  {
    name: 'python: escape cases fail closed (import js, js.process, constructor.constructor, pyodide_js._api, os.system, subprocess, socket)',
    async run() {
      const rt = new BrowserSandboxRuntime({ pyodide: PYODIDE_MANIFEST, onLog: sandboxLog });
      const source = PYTHON_ESCAPE_SOURCE;
      const sb = await rt.start({
        revision: FAKE_REV(),
        manifest: { ...manifest(source), execution: { kind: 'sandboxed-code', runtime: 'python', source } },
        limits: DEFAULT_LIMITS,
      });
      try {
        const args: PythonProbeArgs = {
          port: Number(location.port) || 80,
          canary: `canary-${Math.random().toString(36).slice(2)}`,
          canaryFile: '/etc/hostname',
        };
        const out = await sb.call(args, callOpts(denyAll));
        const checks = pythonEscapeChecks(out);
        const failed = checks.filter((c) => !c[0]);
        check(failed.length === 0, failed.map((c) => `${c[1]}: ${c[2]}`).join('; '));
        return checks.map((c) => `${c[1]}: ${c[2]}`).join('; ');
      } finally {
        await sb.destroy('done');
      }
    },
  },
  {
    name: 'python: the in-memory file system and module state are reset between calls unless retainState',
    async run() {
      const source = [
        'import os',
        'counter = 0',
        'def main(args, ctx):',
        '    global counter',
        '    counter += 1',
        '    existed = os.path.exists("/tmp/marker") or os.path.exists("marker")',
        '    open("/tmp/marker", "w").write("x")',
        '    open("marker", "w").write("x")',
        '    return {"existed": existed, "counter": counter}',
      ].join('\n');
      const results: unknown[] = [];
      for (const retainState of [false, true]) {
        const rt = new BrowserSandboxRuntime({ pyodide: PYODIDE_MANIFEST, onLog: sandboxLog });
        const sb = await rt.start({
          revision: FAKE_REV(),
          manifest: {
            ...manifest(source),
            execution: { kind: 'sandboxed-code', runtime: 'python', source, retainState },
          },
          limits: DEFAULT_LIMITS,
        });
        try {
          results.push([await sb.call({}, callOpts()), await sb.call({}, callOpts())]);
        } finally {
          await sb.destroy('done');
        }
      }
      const want = [
        [
          { existed: false, counter: 1 },
          { existed: false, counter: 1 },
        ],
        [
          { existed: false, counter: 1 },
          { existed: true, counter: 2 },
        ],
      ];
      check(JSON.stringify(results) === JSON.stringify(want), `got ${JSON.stringify(results)}`);
      return 'reset: fresh each call; retainState: kept';
    },
  },
  {
    name: 'python: a Pyodide file that does not match its built-in digest is refused with E_INTEGRITY before any worker starts',
    async run() {
      const bad = {
        ...PYODIDE_MANIFEST,
        files: {
          ...PYODIDE_MANIFEST.files,
          'pyodide-lock.json': { ...PYODIDE_MANIFEST.files['pyodide-lock.json']!, sha256: '0'.repeat(64) },
        },
      };
      const before = document.querySelectorAll('iframe').length;
      const rt = new BrowserSandboxRuntime({ pyodide: bad });
      const src = 'def main(args, ctx):\n    return 1';
      const pySpec = {
        revision: FAKE_REV(),
        manifest: {
          ...manifest(src),
          execution: { kind: 'sandboxed-code' as const, runtime: 'python' as const, source: src },
        },
        limits: DEFAULT_LIMITS,
      };
      const e = await expectCode(rt.start(pySpec), 'E_INTEGRITY');
      check(document.querySelectorAll('iframe').length === before, 'a frame was created');
      await expectCode(new BrowserSandboxRuntime().start(pySpec), 'E_SANDBOX_UNAVAILABLE');
      const nativeSpec = {
        ...pySpec,
        manifest: { ...pySpec.manifest, execution: { kind: 'trusted-native' as const, entry: 'x' } },
      };
      await expectCode(new BrowserSandboxRuntime().start(nativeSpec), 'E_SANDBOX_UNAVAILABLE');
      return e.message;
    },
  },
  {
    name: 'ask dialog: shows the sanitized question with server hints, one at a time; Deny has focus; abort removes it',
    async run() {
      const ch = new DialogAskChannel();
      check(ch.live() === true, 'a visible page is not live');
      const hostile = 'Allow fetch?\u202e\u200bgnp.exe\u001b[2J';
      const ac = new AbortController();
      const first = ch.ask(
        {
          id: 'q1',
          title: hostile,
          details: ['tool: probe', 'x'.repeat(700)],
          hints: { readOnlyHint: true, destructiveHint: false },
          scopes: ['once', 'session'],
        },
        ac.signal,
      );
      const second = ch.ask({ id: 'q2', title: 'Second?', details: [] }, new AbortController().signal);
      await waitFor(() => questionDialogs().length === 1, 3000, 'the first dialog');
      const d1 = ch.current!;
      const text = d1.textContent ?? '';
      check(!/[\u202e\u200b\u001b]/.test(text), 'invisible or control characters reached the dialog');
      check(
        text.includes('\\u202e') || text.includes('\\u{202e}'),
        `bidi override not shown as an escape: ${text.slice(0, 120)}`,
      );
      check(/readOnlyHint/.test(text) && /never skip/.test(text), 'server hints missing');
      check(/\[cut: \d+ more characters\]/.test(text), 'long line not cut with a marker');
      check(
        d1.querySelector('h2')!.innerHTML ===
          d1.querySelector('h2')!.textContent!.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'),
        'markup in the title',
      );
      const focused = (d1.getRootNode() as ShadowRoot).activeElement;
      check(focused?.textContent === 'Deny', `focus on ${focused?.textContent}`);
      check(questionDialogs().length === 1, 'two questions shown at once');
      (
        Array.from(d1.querySelectorAll('button')).find(
          (b) => b.textContent === 'Allow for this session',
        ) as HTMLButtonElement
      ).click();
      const a1 = await first;
      check(
        JSON.stringify(a1) === JSON.stringify({ allow: true, scope: 'session', channel: 'browser-dialog' }),
        `first answer ${JSON.stringify(a1)}`,
      );
      await waitFor(() => ch.current !== undefined && ch.current !== d1, 3000, 'the second dialog');
      check(!d1.isConnected, 'the first dialog was not removed');
      const labels = Array.from(ch.current!.querySelectorAll('button')).map((b) => b.textContent);
      check(JSON.stringify(labels) === '["Deny","Allow once"]', `default scopes offered ${JSON.stringify(labels)}`);
      ch.current!.dispatchEvent(new Event('cancel', { cancelable: true }));
      const a2 = await second;
      check(a2?.allow === false, 'closing the dialog did not deny');
      const ac3 = new AbortController();
      const third = ch.ask({ id: 'q3', title: 'Third?', details: [] }, ac3.signal);
      await waitFor(() => ch.current !== undefined, 3000, 'the third dialog');
      ac3.abort();
      check((await third) === undefined && questionDialogs().length === 0, 'abort did not remove the dialog');
      ac.abort();
      return 'sanitized, hints shown, serialized, deny on close, abort removes';
    },
  },
  {
    name: 'popups: only trusted host tools, only after the gate allows popup(target); exact https origin; custom HTML in an opaque frame',
    async run() {
      const asked: GateRequest[] = [];
      let allow = true;
      const gate: Gate = {
        async run(req, execute) {
          asked.push(req);
          return { value: await execute() };
        },
        async authorize(req) {
          asked.push(req);
          if (!allow) throw new TyError('E_CAPABILITY_DENIED', 'popup denied');
        },
      };
      const opened: string[] = [];
      const fakeOpen = (u: string) => {
        opened.push(u);
        return null;
      };
      const native: ToolManifest = {
        name: 'host',
        description: '',
        parameters: { type: 'object' },
        execution: { kind: 'trusted-native', entry: 'host' },
      };
      const base = { principal: 'browser:app', toolName: 'host', revision: FAKE_REV(), manifest: native };
      await expectCode(
        openHostPopup(
          gate,
          { ...base, manifest: manifest('export default async () => 1'), kind: 'origin', url: 'https://example.org/' },
          { open: fakeOpen },
        ),
        'E_CAPABILITY_DENIED',
      );
      check(asked.length === 0 && opened.length === 0, 'a sandboxed tool reached the gate or opened a window');
      for (const url of [
        'http://example.org/',
        'https://user:pw@example.org/',
        'javascript:alert(1)',
        'data:text/html,x',
      ]) {
        await expectCode(
          openHostPopup(gate, { ...base, kind: 'origin', url }, { open: fakeOpen }),
          'E_CAPABILITY_DENIED',
        );
      }
      check(asked.length === 0 && opened.length === 0, 'a bad url reached the gate or opened a window');
      await openHostPopup(
        gate,
        { ...base, kind: 'origin', url: 'https://Example.ORG:443/path?q=1' },
        { open: fakeOpen },
      );
      check(
        (asked.length as number) === 1 && asked[0]!.kind === 'popup' && asked[0]!.target === 'https://example.org',
        `gate asked ${JSON.stringify(asked)}`,
      );
      check((opened.length as number) === 1, 'origin popup not opened');
      allow = false;
      await expectCode(
        openHostPopup(gate, { ...base, kind: 'custom-html', html: '<p>x</p>' }, { open: fakeOpen }),
        'E_CAPABILITY_DENIED',
      );
      check((opened.length as number) === 1, 'a denied popup opened a window');
      allow = true;
      const p = await openHostPopup(gate, { ...base, kind: 'custom-html', html: '<p id="x">hello</p>' });
      try {
        check(p.window !== null, 'no window');
        const frame = p.window!.document.querySelector('iframe')!;
        check(
          frame.getAttribute('sandbox') === 'allow-scripts',
          `popup frame sandbox ${frame.getAttribute('sandbox')}`,
        );
        check(
          frame.srcdoc.includes(POPUP_CONTENT_CSP.replace(/'/g, "'")) && frame.srcdoc.includes('hello'),
          'content or CSP missing',
        );
        check(asked[asked.length - 1]!.target === 'custom-html', 'custom-html target not asked');
      } finally {
        p.close();
      }
      return 'sandboxed tool refused; bad urls refused before the gate; exact origin asked; denial opens nothing; custom HTML framed';
    },
  },
  {
    name: 'host end to end: registry on IndexedDB, arguments checked first, mediated fetch refuses bad targets, the gate asks in the dialog, audit kept',
    async run() {
      const host = await createBrowserHost({
        dbName: `ty-e2e-${Date.now().toString(36)}`,
        rules: [{ scope: 'session', allow: ['fetch(read:https://allowed.invalid)'] }],
        askWaitMs: 10_000,
      });
      const frames = () => document.querySelectorAll('iframe[sandbox]').length;
      const base = frames();
      try {
        const source = `export default async ({ url }) => { try { const r = await fetch(url); return 'status:' + r.status; } catch (e) { return String(e.code || e.name); } }`;
        const m: ToolManifest = {
          name: 'fetcher',
          description: 'e2e',
          parameters: {
            type: 'object',
            properties: { url: { type: 'string' } },
            required: ['url'],
            additionalProperties: false,
          },
          execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
          capabilities: {
            fetch: [
              { origin: 'https://allowed.invalid', access: 'read' },
              { origin: 'https://asked.invalid', access: 'read' },
            ],
          },
        };
        const { revision, activated } = await host.registry.install(m);
        check(activated, 'first install not activated');
        const bad = await host.invoker.invoke('fetcher', { url: 1 });
        check(!bad.ok && bad.error.code === 'E_INVALID_ARGS', `bad args: ${JSON.stringify(bad)}`);
        check(frames() === base, 'a sandbox started for invalid arguments');
        const run = async (url: string) => {
          const r = await host.invoker.invoke('fetcher', { url });
          check(r.ok && r.revision === revision, `invoke failed: ${JSON.stringify(r)}`);
          return r.ok ? String(r.result) : '';
        };
        const scheme = await run(beacon('e2e-http'));
        check(scheme === 'E_FETCH_SCHEME', `http: ${scheme}`);
        const target = await run('https://127.0.0.1/');
        check(target === 'E_FETCH_TARGET', `loopback: ${target}`);
        const meta = await run('https://169.254.169.254/latest/meta-data/');
        check(meta === 'E_FETCH_TARGET', `metadata: ${meta}`);
        const allowed = await run('https://allowed.invalid/');
        check(allowed === 'E_FETCH_FAILED', `allowed origin (no such host): ${allowed}`);
        const answered = run('https://asked.invalid/');
        await waitFor(() => questionDialogs().length > 0, 8000, 'the permission question');
        const dlg = questionDialogs()[0]!;
        check(/asked\.invalid/.test(dlg.textContent ?? ''), `question text: ${dlg.textContent}`);
        (Array.from(dlg.querySelectorAll('button')).find((b) => b.textContent === 'Deny') as HTMLButtonElement).click();
        const denied = await answered;
        check(denied === 'E_CAPABILITY_DENIED', `denied: ${denied}`);
        const { entries } = await host.store.readJsonl<Record<string, unknown>>('audit');
        check(entries.length >= 5, `audit has ${entries.length} records`);
        check(!JSON.stringify(entries).includes('meta-data'), 'the audit log holds call arguments');
        return `bad args refused before start; http ${scheme}; loopback ${target}; metadata ${meta}; allowed ${allowed}; asked -> Deny -> ${denied}; ${entries.length} audit records`;
      } finally {
        await host.close();
      }
    },
  },
  {
    name: 'fetch transport: no cookies or referrer sent, redirects refused, the size cap is enforced while streaming',
    async run() {
      // biome-ignore lint/suspicious/noDocumentCookie: an ambient cookie no sandboxed request may carry
      document.cookie = 'tyambient=secret-cookie; path=/; SameSite=Lax';
      const t = new BrowserFetchTransport();
      const signal = new AbortController().signal;
      const lim = { timeoutMs: 10_000, maxBytes: 1024 * 1024 };
      const echo = await t.request({ url: `${location.origin}/fixture/echo`, method: 'GET', headers: [] }, lim, signal);
      const seen = JSON.parse(atob(echo.body)) as { cookie: string | null; referer: string | null };
      check(document.cookie.includes('tyambient'), 'the control cookie was not set in the page');
      check(seen.cookie === null && seen.referer === null, `ambient credentials sent: ${JSON.stringify(seen)}`);
      await expectCode(
        t.request({ url: `${location.origin}/fixture/redirect`, method: 'GET', headers: [] }, lim, signal),
        'E_FETCH_FAILED',
      );
      await expectCode(
        t.request({ url: `${location.origin}/pyodide/pyodide.asm.wasm`, method: 'GET', headers: [] }, lim, signal),
        'E_FETCH_TOO_LARGE',
      );
      const ac = new AbortController();
      ac.abort();
      await expectCode(
        t.request({ url: `${location.origin}/fixture/echo`, method: 'GET', headers: [] }, lim, ac.signal),
        'E_ABORTED',
      );
      // biome-ignore lint/suspicious/noDocumentCookie: an ambient cookie no sandboxed request may carry
      document.cookie = 'tyambient=; path=/; max-age=0';
      return 'no cookie/referrer; redirect -> E_FETCH_FAILED; 9 MB over a 1 MiB cap -> E_FETCH_TOO_LARGE; abort -> E_ABORTED';
    },
  },
  {
    name: 'capabilities: ctx.storage/getSecret requests reach the host handler as plain data; refusals carry a stable code',
    async run() {
      const seen: unknown[] = [];
      const sb = await start(
        `export default async (a, ctx) => { await ctx.storage.set('k', { n: 1 }); const v = await ctx.storage.get('k'); ` +
          `let s; try { await ctx.getSecret('TOKEN'); } catch (e) { s = e.code; } return { v, s }; }`,
      );
      try {
        const r = await sb.call(
          {},
          callOpts(async (name, params) => {
            seen.push([name, params]);
            if (name === 'storage.get') return { n: 1 };
            if (name === 'getSecret') throw new TyError('E_SECRET_DENIED', 'no');
            return null;
          }),
        );
        check(JSON.stringify(r) === '{"v":{"n":1},"s":"E_SECRET_DENIED"}', `got ${JSON.stringify(r)}`);
        check(
          JSON.stringify(seen) ===
            '[["storage.set",{"key":"k","value":{"n":1}}],["storage.get",{"key":"k"}],["getSecret",{"name":"TOKEN"}]]',
          `seen ${JSON.stringify(seen)}`,
        );
        return JSON.stringify(r);
      } finally {
        await sb.destroy('done');
      }
    },
  },
  {
    // Same guest code as the Node and Deno sandboxes (core/guest/core.mjs); here in the real worker.
    name: "fetch (worker): URL credentials are E_FETCH_CREDENTIALS; the tool's own AbortSignal cancels the host request",
    async run() {
      const names: string[] = [];
      let entered!: () => void;
      let aborted!: () => void;
      const fetchEntered = new Promise<void>((r) => (entered = r));
      const fetchAborted = new Promise<void>((r) => (aborted = r));
      const sb = await start(`export default async (a, ctx) => {
        let cred; try { await fetch('https://u:p@example.org/'); cred = 'sent'; } catch (e) { cred = e.code; }
        const ac = new AbortController();
        const p = fetch('https://example.org/slow', { signal: ac.signal });
        p.catch(() => {});
        await ctx.storage.get('entered');
        ac.abort();
        let ab; try { await p; ab = 'resolved'; } catch (e) { ab = e.name + ':' + e.code; }
        await ctx.storage.get('aborted');
        return { cred, ab };
      }`);
      try {
        const r = await sb.call(
          {},
          callOpts(
            async (name, params, signal) => {
              names.push(name);
              if (name === 'fetch') {
                entered();
                return new Promise((_, reject) =>
                  signal.addEventListener(
                    'abort',
                    () => {
                      aborted();
                      reject(new TyError('E_ABORTED', 'cancelled'));
                    },
                    { once: true },
                  ),
                );
              }
              const key = (params as { key?: string }).key;
              if (key === 'entered') await fetchEntered;
              // never resolves (call timeout) unless the host request was cancelled
              if (key === 'aborted') await fetchAborted;
              return null;
            },
            { timeoutMs: 10_000 },
          ),
        );
        check(
          JSON.stringify(r) === '{"cred":"E_FETCH_CREDENTIALS","ab":"AbortError:E_ABORTED"}',
          `got ${JSON.stringify(r)}`,
        );
        check(
          JSON.stringify(names) === '["fetch","storage.get","storage.get"]',
          `capability requests ${JSON.stringify(names)} (the credentials URL must not reach the host)`,
        );
        return JSON.stringify(r);
      } finally {
        await sb.destroy('done');
      }
    },
  },
  ...QUICKJS_CONTRACTS,
];

/** Store contract rows against the page's real IndexedDB. */
async function storeRows(filter?: (name: string) => boolean): Promise<ContractRow[]> {
  let n = 0;
  const opened: IdbStoreBackend[] = [];
  const stamp = Date.now().toString(36);
  try {
    const rows = await runStoreContract(
      async () => {
        const b = await IdbStoreBackend.open({ name: `ty-contract-${stamp}-${n++}` });
        opened.push(b);
        return b;
      },
      filter ? (name) => filter(`store (IndexedDB): ${name}`) : undefined,
    );
    return rows.map((r) => ({ ...r, name: `store (IndexedDB): ${r.name}`, host: 'browser' as const }));
  } finally {
    for (const b of opened) b.close();
  }
}

/** Names of every browser contract (sandbox contracts; store contracts are prefixed `store (IndexedDB): `). */
export function contractNames(): string[] {
  return contracts.map((c) => c.name);
}

/**
 * Run the browser contracts in this page, one after another. `filter` is a substring (case-insensitive) of
 * the contract name. Never throws: a failure is a row with ok=false.
 */
export async function runBrowserContracts(opts: { filter?: string } = {}): Promise<ContractRow[]> {
  const f = opts.filter?.toLowerCase();
  const match = (name: string) => !f || name.toLowerCase().includes(f);
  const rows: ContractRow[] = [];
  for (const c of contracts) {
    if (!match(c.name)) continue;
    try {
      rows.push({ name: c.name, host: 'browser', ok: true, detail: (await c.run()) ?? 'ok' });
    } catch (e) {
      rows.push({ name: c.name, host: 'browser', ok: false, detail: e instanceof Error ? e.message : String(e) });
    }
  }
  rows.push(...(await storeRows(match)));
  return rows;
}
