// Browser security contracts of the quickjs engine: QuickJS sandboxes in one frame per principal, run inside a real
// page (diagnostics page, browser tests, `tycli diagnostics --browser`); test code, trusted host side.
import { BrowserQuickJsRuntime } from '../quickjs/runtime.js';
import { sandboxCsp } from '../sandbox/runtime.js';
import { TyError } from '../../core/errors.js';
import {
  DEFAULT_LIMITS,
  type CallLimits,
  type CapabilityHandler,
  type SandboxInstance,
} from '../../core/exec/runtime.js';
import type { ToolManifest } from '../../protocol/manifest.js';

interface Contract {
  name: string;
  run(): Promise<string>;
}

let seq = 0;
const denyAll: CapabilityHandler = async (name) => {
  throw new TyError('E_CAPABILITY_DENIED', `${name} denied by the contract harness`);
};
function callOpts(onCapability: CapabilityHandler = denyAll, limits: Partial<CallLimits> = {}) {
  return { signal: new AbortController().signal, onCapability, limits: { ...DEFAULT_LIMITS, ...limits } };
}
function check(cond: unknown, msg: string): asserts cond {
  if (!cond) throw new Error(msg);
}
async function code(p: Promise<unknown>): Promise<TyError> {
  try {
    const v = await p;
    throw new Error(`expected an error, got ${JSON.stringify(v)?.slice(0, 200)}`);
  } catch (e) {
    if (e instanceof TyError) return e;
    throw e;
  }
}
function manifest(source: string): ToolManifest {
  return {
    name: `qprobe${++seq}`,
    description: 'quickjs contract probe',
    parameters: { type: 'object' },
    execution: { kind: 'sandboxed-code', runtime: 'javascript', engine: 'quickjs', source },
  };
}
const rev = () => `bafkreiquickjs${(seq++).toString().padStart(8, '0')}aaaaaaaaaaaaaaa`;
function starter(rt: BrowserQuickJsRuntime, principal = 'origin:contracts') {
  return (source: string, limits: Partial<CallLimits> = {}): Promise<SandboxInstance> =>
    rt.start({ revision: rev(), manifest: manifest(source), limits: { ...DEFAULT_LIMITS, ...limits }, principal });
}
const frameCount = () => document.querySelectorAll('iframe[sandbox]').length;
const log = (level: string, text: string) => console.log(`[quickjs ${level}] ${text.slice(0, 300)}`);

export const QUICKJS_CONTRACTS: Contract[] = [
  {
    name: 'quickjs: one opaque frame per principal holds its sandboxes, under the same CSP (blob: scripts, WebAssembly only)',
    async run() {
      const rt = new BrowserQuickJsRuntime({ onLog: log });
      const before = frameCount();
      const a = starter(rt, 'origin:https://a.example');
      const b = starter(rt, 'origin:https://b.example');
      const src = 'let n = 0;\nexport default async () => ({ n: ++n, origin: typeof location, doc: typeof document })';
      const sbs = [await a(src), await a(src), await a(src), await b(src)];
      try {
        const frames = await rt.frames();
        check(frames.length === 2 && frameCount() - before === 2, `${frames.length} frames for 2 principals`);
        void before;
        check(frames.find((f) => f.principal === 'origin:https://a.example')?.sandboxes === 3, 'a: not 3 sandboxes');
        for (const f of frames) {
          check(f.frame.getAttribute('sandbox') === 'allow-scripts', 'sandbox attribute');
          const meta = f.frame.contentDocument; // opaque origin: not readable from the page
          check(meta === null, 'the frame document is readable from the page');
        }
        const r = (await sbs[0]!.call({}, callOpts())) as Record<string, unknown>;
        const r2 = (await sbs[1]!.call({}, callOpts())) as Record<string, unknown>;
        check(r.n === 1 && r2.n === 1, 'sandboxes share state');
        check(r.doc === 'undefined', `document reachable: ${String(r.doc)}`);
        return `2 frames for 5 sandboxes of 2 principals; frame CSP is the JavaScript engine's: ${sandboxCsp().slice(0, 60)}...`;
      } finally {
        for (const s of sbs) await s.destroy('done');
        rt.close();
      }
    },
  },
  {
    name: 'quickjs: a memory bomb is E_MEMORY_LIMIT; the worker, the frame and a sibling sandbox go on',
    async run() {
      const rt = new BrowserQuickJsRuntime({ onLog: log });
      const start = starter(rt);
      const sibling = await start('let n = 0;\nexport default async () => ++n');
      const bomb = await start(
        'export default async () => { const a = []; while (true) a.push(new Array(1e6).fill(1)); }',
        { memoryMb: 64 },
      );
      try {
        check((await sibling.call({}, callOpts())) === 1, 'sibling');
        const e = await code(bomb.call({}, callOpts()));
        check(e.code === 'E_MEMORY_LIMIT', `bomb: ${e.code}: ${e.message}`);
        check(!bomb.alive && sibling.alive, 'the bomb took its sibling');
        check((await sibling.call({}, callOpts())) === 2, 'sibling lost its state');
        check((await rt.frames()).length === 1, 'the frame is gone');
        return `${e.code}: ${e.message}; sibling kept its state, frame alive`;
      } finally {
        await sibling.destroy('done');
        rt.close();
      }
    },
  },
  {
    name: 'quickjs: an endless loop is E_TIMEOUT; the frame and a sibling sandbox go on; a new sandbox works',
    async run() {
      const rt = new BrowserQuickJsRuntime({ onLog: log });
      const start = starter(rt);
      const sibling = await start('let n = 0;\nexport default async () => ++n');
      const loop = await start('export default async () => { while (true) {} }');
      try {
        await sibling.call({}, callOpts());
        const t0 = performance.now();
        const e = await code(loop.call({}, callOpts(denyAll, { timeoutMs: 1000 })));
        check(e.code === 'E_TIMEOUT', `loop: ${e.code}`);
        check((await sibling.call({}, callOpts())) === 2, 'sibling lost its state');
        const fresh = await start('export default async () => "fresh"');
        check((await fresh.call({}, callOpts())) === 'fresh', 'a new sandbox did not answer');
        await fresh.destroy('done');
        return `E_TIMEOUT after ${Math.round(performance.now() - t0)} ms; sibling kept its state; frame kept`;
      } finally {
        await sibling.destroy('done');
        rt.close();
      }
    },
  },
  {
    name: 'quickjs: js-escape cases (Function constructor, hostile errors, Proxy result and fetch init, 50 MiB result)',
    async run() {
      const rt = new BrowserQuickJsRuntime({ onLog: log });
      const start = starter(rt);
      let caps = 0;
      const countCaps: CapabilityHandler = async (name) => {
        caps++;
        throw new TyError('E_CAPABILITY_DENIED', `${name} denied`);
      };
      const sb =
        await start(`const HOST = 'return typeof process + typeof document + typeof self + typeof postMessage' +
        ' + typeof importScripts';
      export default async (a) => {
        if (a.m === 'fn') { const r = {};
          try { r.a = (function () { return this; }).constructor.constructor(HOST)(); } catch (e) { r.a = 'threw:' + e.name; }
          const g = import('x').catch(() => 0).constructor.constructor('return globalThis')(); r.b = g === globalThis; return r; }
        if (a.m === 'sym') { const e = new Error('x'); e.name = Symbol('s'); throw e; }
        if (a.m === 'proxy')
          return new Proxy({}, { get(t, k) { if (k === 'then') return undefined; throw new Error('trap'); }, ownKeys() { throw 1; } });
        if (a.m === 'init') {
          try { await fetch('https://example.org/', new Proxy({}, { getOwnPropertyDescriptor() { throw 1; } })); return 'sent'; }
          catch (e) { return e.code + ':' + e.name; } }
        if (a.m === 'big') return 'x'.repeat(50 * 1024 * 1024);
        return 'ok'; }`);
      try {
        const fn = (await sb.call({ m: 'fn' }, callOpts())) as { a: string; b: boolean };
        check(fn.a === 'undefined'.repeat(5) && fn.b === true, `Function constructor: ${JSON.stringify(fn)}`);
        const sym = await code(sb.call({ m: 'sym' }, callOpts()));
        check(sym.code === 'E_TOOL_FAILED' && sym.message === 'Error: x', `symbol name: ${sym.message}`);
        const px = await code(sb.call({ m: 'proxy' }, callOpts()));
        check(/not JSON data: a Proxy/.test(px.message), `proxy result: ${px.message}`);
        const init = await sb.call({ m: 'init' }, callOpts(countCaps));
        check(
          init === 'E_INVALID_ARGS:TypeError' && caps === 0,
          `proxy init: ${String(init)}, ${caps} capability calls`,
        );
        const big = await code(sb.call({ m: 'big' }, callOpts()));
        check(big.code === 'E_OUTPUT_LIMIT', `50 MiB: ${big.code}`);
        return `Function: ${fn.a}; errors rebuilt; Proxy refused without traps; 50 MiB: ${big.code}`;
      } finally {
        await sb.destroy('done');
        rt.close();
      }
    },
  },
  {
    name: 'quickjs: deep recursion is a RangeError the tool catches; the worker stack running out first ends only that sandbox',
    async run() {
      const rt = new BrowserQuickJsRuntime({ onLog: log });
      const start = starter(rt);
      const src =
        'let d = 0; function f() { d++; f() }\nexport default async (a) => { d = 0; if (a.json) { let x = [];' +
        ' for (let i = 0; i < 100000; i++) x = [x]; try { JSON.stringify(x) } catch (e) { return [e.name, e.message, d] }' +
        ' return "done" } try { f() } catch (e) { return [e.name, e.message, d] } }';
      const sb = await start(src);
      const deep = await start(src);
      const sib = await start('export default async () => "alive"');
      try {
        const [name, message, depth] = (await sb.call({}, callOpts())) as [string, string, number];
        check(message === 'stack overflow' && depth > 500, `recursion: ${name} ${message} at ${depth}`);
        check(sb.alive, 'a caught stack overflow ended the sandbox');
        // V8 would throw a catchable RangeError here; in the worker its own stack runs out inside QuickJS's native
        // recursion first: that sandbox ends with the RangeError, nothing else does.
        const e = await code(deep.call({ json: true }, callOpts(denyAll, { timeoutMs: 20_000 })));
        check(
          e.code === 'E_TOOL_FAILED' && e.message === 'RangeError: Maximum call stack size exceeded',
          `nested JSON: ${e.code}: ${e.message}`,
        );
        check(!deep.alive && sb.alive, 'the wrong sandbox ended');
        check((await sib.call({}, callOpts())) === 'alive', 'the sibling died with it');
        return `plain recursion caught at depth ${depth}; deeply nested JSON.stringify: ${e.code} ${e.message}, that sandbox discarded; siblings alive`;
      } finally {
        for (const s of [sb, deep, sib]) await s.destroy('done');
        rt.close();
      }
    },
  },
  {
    name: 'quickjs: the QuickJS binary must match the digest compiled into the app: a changed one is E_INTEGRITY, no frame starts',
    async run() {
      const real = window.fetch;
      const before = frameCount();
      // The page's fetch hands over a binary with one byte changed, for this runtime's asset base only.
      window.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
        const url = String(input instanceof Request ? input.url : input);
        if (!url.includes('/quickjs-integrity/')) return real(input, init);
        const res = await real(url.replace('/quickjs-integrity/', '/'), init);
        const bytes = new Uint8Array(await res.arrayBuffer());
        bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) ^ 1;
        return new Response(bytes, { status: 200, headers: { 'content-type': 'application/wasm' } });
      };
      try {
        const rt = new BrowserQuickJsRuntime({ assetBaseUrl: '/quickjs-integrity/' });
        const e = await code(starter(rt)('export default async () => 1'));
        check(e.code === 'E_INTEGRITY', `${e.code}: ${e.message}`);
        check(frameCount() <= before, 'a frame was created');
        return e.message;
      } finally {
        window.fetch = real;
      }
    },
  },
];
