// The QuickJS sandbox worker: runs INSIDE the opaque sandbox frame's Blob worker of one principal (sandbox side),
// holding that principal's QuickJS sandboxes, each its own WebAssembly instance (core/quickjs/instance.ts).
// Bundled with quickjs-emscripten-core and the release-sync variant's browser glue into one classic script by the vite
// plugin (browser/build/config.mjs quickJsWorkerPlugin); the frame starts it like the JavaScript worker
// (browser/sandbox/sandbox-frame.js) and hands it the frame's work port. No tool code runs in this worker's own realm:
// it runs inside QuickJS, which reaches this realm only through the guest's host functions (strings and numbers).
// Control messages on the work port (browser/quickjs/runtime.ts sends them):
//   host -> worker: {t:'init', wasm, info} once; {t:'create', sid, memoryMb, stackBytes} with the sandbox's own
//   MessagePort; {t:'deadline', sid, ms}; {t:'destroy', sid}
//   worker -> host: {t:'up'} once compiled; {t:'died', sid, code, message, name?}; {t:'held', sid, bytes} (what a
//   sandbox may hold: core/quickjs/memory.ts heldBytesOf); {t:'gone', sid}
// Each sandbox's protocol messages travel as JSON text on its own port.
import { QuickJsEngine, type QuickJsSandbox } from '../../core/quickjs/instance.js';
import { SpareSandboxes } from '../../core/quickjs/spare.js';
import type { QuickJsWasmInfo } from '../../core/quickjs/wasm.js';

/** The guest script (core/quickjs/guest-script.ts), compiled in by the vite plugin. */
declare const __TYSANDBOX_QUICKJS_GUEST__: string;

type Control =
  | { t: 'init'; wasm: ArrayBuffer; info: Pick<QuickJsWasmInfo, 'minPages' | 'maxPages' | 'stackTop'> }
  | { t: 'create'; sid: number; memoryMb: number; stackBytes: number }
  | { t: 'deadline'; sid: number; ms: number }
  | { t: 'destroy'; sid: number };

const scope = globalThis as unknown as {
  addEventListener(type: 'message', fn: (ev: MessageEvent) => void): void;
  removeEventListener(type: 'message', fn: (ev: MessageEvent) => void): void;
};
let work: MessagePort | undefined;
let engine: QuickJsEngine | undefined;
/** A started sandbox waiting for the next revision (core/quickjs/spare.ts). */
let spares: SpareSandboxes | undefined;
const sandboxes = new Map<number, { sb: QuickJsSandbox | undefined; port: MessagePort; queue: string[] }>();

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v > 0;
const post = (m: unknown) => work?.postMessage(m);

function gone(sid: number): void {
  const s = sandboxes.get(sid);
  if (!s) return;
  sandboxes.delete(sid);
  s.sb?.destroy();
  s.port.onmessage = null;
  s.port.close();
  post({ t: 'gone', sid });
}

async function create(m: Extract<Control, { t: 'create' }>, port: MessagePort): Promise<void> {
  if (!engine || !spares || sandboxes.has(m.sid)) return;
  const entry: { sb: QuickJsSandbox | undefined; port: MessagePort; queue: string[] } = {
    sb: undefined,
    port,
    queue: [],
  };
  sandboxes.set(m.sid, entry);
  port.onmessage = (ev) => {
    spares?.busy();
    if (typeof ev.data !== 'string') return;
    if (entry.sb) entry.sb.deliver(ev.data);
    else entry.queue.push(ev.data);
  };
  port.start();
  try {
    const sb = await spares.create({
      memoryMb: m.memoryMb,
      stackBytes: m.stackBytes,
      onMessage: (text) => port.postMessage(text),
      onDeath: (d) => {
        post({ t: 'died', sid: m.sid, code: d.code, message: d.message, ...(d.name ? { name: d.name } : {}) });
        gone(m.sid);
      },
      onHeld: (bytes) => post({ t: 'held', sid: m.sid, bytes }),
    });
    if (sandboxes.get(m.sid) !== entry) {
      sb.destroy();
      return;
    }
    entry.sb = sb;
    spares?.later(m.memoryMb, m.stackBytes);
    for (const t of entry.queue.splice(0)) sb.deliver(t);
  } catch (e) {
    post({
      t: 'died',
      sid: m.sid,
      code: 'E_SANDBOX_FAILED',
      message: `the QuickJS sandbox could not start (${e instanceof Error ? e.message.slice(0, 200) : 'error'})`,
    });
    gone(m.sid);
  }
}

function onControl(ev: MessageEvent): void {
  const m = ev.data as Control | null;
  if (m === null || typeof m !== 'object') return;
  if (m.t === 'init') {
    if (engine || !(m.wasm instanceof ArrayBuffer)) return;
    void WebAssembly.compile(m.wasm).then(
      (module) => {
        engine = new QuickJsEngine({ module, info: m.info, guestScript: __TYSANDBOX_QUICKJS_GUEST__ });
        spares = new SpareSandboxes(engine);
        post({ t: 'up' });
      },
      (e: unknown) => post({ t: 'init-failed', message: e instanceof Error ? e.message.slice(0, 300) : 'error' }),
    );
    return;
  }
  if (!isInt(m.sid)) return;
  spares?.busy();
  if (m.t === 'create') {
    const port = ev.ports[0];
    if (port && typeof m.memoryMb === 'number' && typeof m.stackBytes === 'number') void create(m, port);
  } else if (m.t === 'deadline') {
    if (typeof m.ms === 'number') sandboxes.get(m.sid)?.sb?.setDeadline(m.ms);
  } else if (m.t === 'destroy') gone(m.sid);
}

// The frame hands over exactly one port, once (as to the JavaScript worker).
const onFirst = (ev: MessageEvent) => {
  if (work !== undefined) return;
  const p = ev.ports[0];
  if (!p) return;
  work = p;
  scope.removeEventListener('message', onFirst);
  work.onmessage = onControl;
  work.start();
  work.postMessage({ t: 'hello' });
};
scope.addEventListener('message', onFirst);
