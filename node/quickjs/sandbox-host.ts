// The QuickJS sandbox host process: one per principal, under the same OS sandbox as a node sandbox (bubblewrap or
// Seatbelt, empty environment, Node's permission model, no network), holding that principal's QuickJS sandboxes, each
// its own WebAssembly instance; sandbox side. Built into one file, dist/quickjs/sandbox-host.cjs
// (node/quickjs/build.mjs), which is both the main thread and its worker threads.
//
// Main thread: reads the tysandbox host's lines on stdin (`<sid> <json>` protocol messages, `!<json>` control messages:
// core/quickjs/control.ts), hands each sandbox's messages to the worker thread holding it and writes what sandboxes
// send to stdout the same way. It runs no tool code, holds no secret and reaches no store: capabilities go back to
// the tysandbox host as protocol messages (core/exec/channel.ts). End of stdin ends the process.
// Worker threads (at most --workers, created as sandboxes need them): run the sandboxes (core/quickjs/instance.ts),
// each sandbox staying on one thread; different threads run at once, so a busy tool holds up only the sandboxes on
// its thread, and at most until its deadline. Each thread has a stack of --stack-mb MiB, far more than QuickJS's own
// limit needs, so deep recursion ends in QuickJS's catchable error rather than in the thread's.
// A `destroy` sets the sandbox's flag in a SharedArrayBuffer the interrupt handler polls: running code stops at once.
// Code inside one native operation QuickJS does not interrupt (a JSON.stringify of a deeply nested value is quadratic
// in its depth) can hold its thread past that: a sandbox not gone STUCK_MS after its destroy takes its thread down
// (Worker.terminate stops even WebAssembly), and the other sandboxes on that thread end with E_SANDBOX_FAILED.
import { readFileSync } from 'node:fs';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { toSandboxHost, type FromSandboxHost } from '../../core/quickjs/control.js';
import { DEFAULT_STACK_BYTES, QuickJsEngine, type QuickJsSandbox } from '../../core/quickjs/instance.js';
import { SpareSandboxes } from '../../core/quickjs/spare.js';
import { prepareQuickJsWasm, type QuickJsWasmInfo } from '../../core/quickjs/wasm.js';

/** The guest script (core/quickjs/guest-script.ts), compiled in by node/quickjs/build.mjs. */
declare const __TYSANDBOX_QUICKJS_GUEST__: string;

/** Most sandboxes one process holds at once (interrupt flag slots). */
const MAX_SLOTS = 16384;
/** How long a destroyed sandbox's thread may take to let it go before the thread is stopped, ms. */
const STUCK_MS = 2000;

/** Main thread -> worker. */
type ToWorker =
  | { t: 'create'; sid: number; slot: number; memoryMb: number; stackBytes: number }
  | { t: 'msg'; sid: number; text: string }
  | { t: 'deadline'; sid: number; ms: number }
  | { t: 'destroy'; sid: number };
/** Worker -> main thread. */
type FromWorker =
  | { t: 'up' }
  | { t: 'msg'; sid: number; text: string }
  | { t: 'died'; sid: number; code: string; message: string; name?: string }
  | { t: 'held'; sid: number; bytes: number }
  | { t: 'gone'; sid: number };

interface WorkerInit {
  module: WebAssembly.Module;
  info: Pick<QuickJsWasmInfo, 'minPages' | 'maxPages' | 'stackTop'>;
  flags: SharedArrayBuffer;
}

// Nothing may print to stdout but the protocol (a worker's console writes to the main thread's stdout too).
for (const k of ['log', 'info', 'debug', 'warn'] as const) console[k] = (...a: unknown[]) => console.error(...a);

if (isMainThread) void main();
else worker(workerData as WorkerInit);

function arg(name: string): string | undefined {
  const p = `--${name}=`;
  return process.argv.find((a) => a.startsWith(p))?.slice(p.length);
}

async function main(): Promise<void> {
  const wasmPath = arg('wasm');
  const maxWorkers = Math.max(1, Math.min(64, Number(arg('workers') ?? 2) || 2));
  const stackMb = Math.max(4, Math.min(1024, Number(arg('stack-mb') ?? 64) || 64));
  const heapMb = Math.max(32, Math.min(4096, Number(arg('thread-heap-mb') ?? 256) || 256));
  const out = (line: string) => process.stdout.write(line);
  const control = (m: FromSandboxHost) => out(`!${JSON.stringify(m)}\n`);
  if (!wasmPath) {
    process.stderr.write('tysandbox quickjs host: --wasm=PATH is required\n');
    process.exit(2);
  }
  const info = await prepareQuickJsWasm(new Uint8Array(readFileSync(wasmPath)));
  const module = await WebAssembly.compile(info.bytes as Uint8Array<ArrayBuffer>);
  const flags = new SharedArrayBuffer(MAX_SLOTS * 4);
  const flagView = new Int32Array(flags);
  const freeSlots: number[] = [];
  for (let i = MAX_SLOTS - 1; i >= 0; i--) freeSlots.push(i);

  type W = { worker: Worker; count: number; sids: Set<number>; up: Promise<void> };
  const workers: W[] = [];
  const where = new Map<number, { w: W; slot: number }>();
  const init: WorkerInit = {
    module,
    info: { minPages: info.minPages, maxPages: info.maxPages, stackTop: info.stackTop },
    flags,
  };
  const spawnWorker = (): W => {
    const worker = new Worker(__filename, {
      workerData: init,
      resourceLimits: { stackSizeMb: stackMb, maxOldGenerationSizeMb: heapMb },
      stdout: false,
    });
    let up!: () => void;
    const w: W = { worker, count: 0, sids: new Set(), up: new Promise<void>((r) => (up = r)) };
    worker.on('message', (m: FromWorker) => {
      if (m.t === 'up') up();
      else if (m.t === 'msg') {
        if (where.has(m.sid)) out(`${m.sid} ${m.text}\n`);
      } else if (m.t === 'died') {
        if (where.has(m.sid)) {
          const d: FromSandboxHost = { op: 'died', sid: m.sid, code: m.code as 'E_TIMEOUT', message: m.message };
          if (m.name !== undefined) d.name = m.name;
          control(d);
        }
      } else if (m.t === 'held') {
        if (where.has(m.sid)) control({ op: 'held', sid: m.sid, bytes: m.bytes });
      } else if (m.t === 'gone') release(m.sid);
    });
    // A worker that fails takes its sandboxes with it; the others go on.
    const lost = (why: string) => {
      const i = workers.indexOf(w);
      if (i === -1) return;
      workers.splice(i, 1);
      up();
      for (const sid of [...w.sids]) {
        control({ op: 'died', sid, code: 'E_SANDBOX_FAILED', message: `the sandbox thread ${why}` });
        release(sid);
      }
    };
    lostBy.set(w, lost);
    worker.on('error', (e) => lost(`failed (${e instanceof Error ? e.name : 'error'})`));
    worker.on('exit', (code) => lost(`exited (${code})`));
    workers.push(w);
    return w;
  };
  const lostBy = new Map<W, (why: string) => void>();
  /** Stop a thread that did not let a destroyed sandbox go (see the file comment). */
  const stuck = (sid: number, w: W) => {
    if (where.get(sid)?.w !== w) return;
    lostBy.get(w)?.(`was stopped: sandbox ${sid} ran past its end inside one native operation`);
    void w.worker.terminate();
  };
  const release = (sid: number) => {
    const p = where.get(sid);
    if (!p) return;
    where.delete(sid);
    p.w.count--;
    p.w.sids.delete(sid);
    freeSlots.push(p.slot);
  };
  const pick = (): W => {
    let best: W | undefined;
    for (const w of workers) if (!best || w.count < best.count) best = w;
    return !best || (best.count > 0 && workers.length < maxWorkers) ? spawnWorker() : best;
  };
  const post = (sid: number, m: ToWorker) => where.get(sid)?.w.worker.postMessage(m);

  const onLine = (line: string) => {
    if (line.length === 0) return;
    if (line.charCodeAt(0) === 33 /* ! */) {
      let v: unknown;
      try {
        v = JSON.parse(line.slice(1));
      } catch {
        return;
      }
      const c = toSandboxHost(v);
      if (!c) return;
      if (c.op === 'create') {
        if (where.has(c.sid)) return;
        const slot = freeSlots.pop();
        if (slot === undefined) {
          control({ op: 'died', sid: c.sid, code: 'E_SANDBOX_FAILED', message: 'too many sandboxes in one process' });
          return;
        }
        Atomics.store(flagView, slot, 0);
        const w = pick();
        w.count++;
        w.sids.add(c.sid);
        where.set(c.sid, { w, slot });
        const stackBytes = c.stackKb !== undefined ? c.stackKb * 1024 : DEFAULT_STACK_BYTES;
        post(c.sid, { t: 'create', sid: c.sid, slot, memoryMb: c.memoryMb, stackBytes });
      } else if (c.op === 'deadline') post(c.sid, { t: 'deadline', sid: c.sid, ms: c.ms });
      else {
        const p = where.get(c.sid);
        if (!p) return;
        Atomics.store(flagView, p.slot, 1);
        post(c.sid, { t: 'destroy', sid: c.sid });
        setTimeout(() => stuck(c.sid, p.w), STUCK_MS).unref();
      }
      return;
    }
    const sp = line.indexOf(' ');
    const sid = Number(line.slice(0, sp));
    if (sp > 0 && where.has(sid)) post(sid, { t: 'msg', sid, text: line.slice(sp + 1) });
  };

  // stdin: newline-delimited; a line spanning chunks is joined once.
  let parts: string[] = [];
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk: string) => {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf('\n', start);
      if (nl === -1) break;
      let line = chunk.slice(start, nl);
      if (parts.length > 0) {
        parts.push(line);
        line = parts.join('');
        parts = [];
      }
      onLine(line);
      start = nl + 1;
    }
    if (start < chunk.length) parts.push(chunk.slice(start));
  });
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  // Every thread is started now, while the first sandbox's revision is still being resolved on the host.
  for (let i = 0; i < maxWorkers; i++) spawnWorker();
  await Promise.all(workers.map((w) => w.up));
  control({ op: 'hello', version: 'QuickJS 2025-09-13', workers: maxWorkers });
}

function worker(init: WorkerInit): void {
  const port = parentPort!;
  const flags = new Int32Array(init.flags);
  const engine = new QuickJsEngine({ module: init.module, info: init.info, guestScript: __TYSANDBOX_QUICKJS_GUEST__ });
  // A started sandbox waits for the thread's next revision (core/quickjs/spare.ts): most of a cold start is done idle.
  const spares = new SpareSandboxes(engine);
  const sandboxes = new Map<number, QuickJsSandbox>();
  /** Messages for sandboxes still being created. */
  const waiting = new Map<number, ToWorker[]>();
  const send = (m: FromWorker) => port.postMessage(m);
  const create = async (m: Extract<ToWorker, { t: 'create' }>) => {
    waiting.set(m.sid, []);
    let sb: QuickJsSandbox | undefined;
    let gone = false;
    const finish = () => {
      if (gone) return;
      gone = true;
      sandboxes.delete(m.sid);
      waiting.delete(m.sid);
      stops.delete(m.sid);
      send({ t: 'gone', sid: m.sid });
    };
    try {
      sb = await spares.create({
        memoryMb: m.memoryMb,
        stackBytes: m.stackBytes,
        onMessage: (text) => send({ t: 'msg', sid: m.sid, text }),
        onDeath: (d) => {
          const out: FromWorker = { t: 'died', sid: m.sid, code: d.code, message: d.message };
          if (d.name !== undefined) out.name = d.name;
          send(out);
          finish();
        },
        interruptRequested: () => Atomics.load(flags, m.slot) !== 0,
        onHeld: (bytes) => send({ t: 'held', sid: m.sid, bytes }),
      });
    } catch (e) {
      send({
        t: 'died',
        sid: m.sid,
        code: 'E_SANDBOX_FAILED',
        message: `the QuickJS sandbox could not start (${e instanceof Error ? e.message.slice(0, 200) : 'error'})`,
      });
      finish();
      return;
    }
    spares.later(m.memoryMb, m.stackBytes);
    if (gone) return;
    sandboxes.set(m.sid, sb);
    const stopSb = sb;
    stops.set(m.sid, () => {
      stopSb.destroy();
      finish();
    });
    const queued = waiting.get(m.sid) ?? [];
    waiting.delete(m.sid);
    for (const q of queued) handle(q);
  };
  const stops = new Map<number, () => void>();
  const handle = (m: ToWorker) => {
    spares.busy();
    if (m.t === 'create') {
      void create(m);
      return;
    }
    const q = waiting.get(m.sid);
    if (q) {
      q.push(m);
      return;
    }
    const sb = sandboxes.get(m.sid);
    if (m.t === 'destroy') {
      stops.get(m.sid)?.();
      stops.delete(m.sid);
      return;
    }
    if (!sb) return;
    if (m.t === 'msg') sb.deliver(m.text);
    else sb.setDeadline(m.ms);
  };
  port.on('message', handle);
  port.postMessage({ t: 'up' } satisfies FromWorker);
}
