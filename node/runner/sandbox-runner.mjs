// Deno sandbox runner: runs INSIDE the Deno sandbox subprocess (untrusted side); the stdio (NDJSON) adapter of
// core/guest/core.mjs for Deno.
// Engine-specific parts only: stdio framing, stdout capture, uncaught-error logging, Proxy detection and how tool
// source is evaluated. The protocol, capabilities, mediated fetch and plain-data copies live in core/guest/core.mjs,
// shared with the Node runner (sandbox-runner.cjs) and the browser worker; the built-ins all of them use are captured
// once in core/guest/commons.mjs, which this module imports first. Deno itself runs without any permission; under the
// OS wrapper this runner and the guest files it imports are the only project files bound into the sandbox
// (node/sandbox/engines.ts runnerFiles).
import {
  ArrayPrototypePush,
  atobFn,
  encodeURIComponentFn,
  FunctionPrototypeBind,
  globalObject,
  JSONParse,
  JSONStringify,
  PromiseAll,
  ReflectApply,
  ReflectDefineProperty,
  ReflectGetOwnPropertyDescriptor,
  ReflectGetPrototypeOf,
  StringPrototypeCharCodeAt,
  StringPrototypeSlice,
  TextDecoderCtor,
  TextDecoderPrototypeDecode,
  TextEncoderCtor,
  TextEncoderPrototypeEncode,
  TypedArrayPrototypeGetLength,
  TypedArrayPrototypeIndexOf,
  TypedArrayPrototypeSet,
  TypedArrayPrototypeSubarray,
  Uint8ArrayCtor,
  uncurryThis,
} from '../../core/guest/commons.mjs';
import { createGuest } from '../../core/guest/core.mjs';

// ---- what only Deno has (captured before any tool code runs) -----------------------------------------------------
const G = globalObject;
const importModule = (url) => import(url);
const encoder = new TextEncoderCtor();
const decoder = new TextDecoderCtor('utf-8');

/**
 * Proxy detection without running traps: Deno's core op (free); else node:util types.isProxy (Deno's node:util
 * costs ~15 ms of start-up, so it is the fallback). Without either, proxies go through the descriptor walk, which
 * runs their traps only here in the sandbox and copies plain data out.
 */
let isProxy;
/** Deno's internal core, when this Deno exposes it (captured before tool code runs). */
let core;
try {
  core = G.Deno[G.Deno.internal].core;
  if (core && typeof core.isProxy === 'function') isProxy = FunctionPrototypeBind(core.isProxy, core);
} catch {
  /* no core op */
}
if (isProxy === undefined) {
  try {
    const fn = (await importModule('node:util')).types?.isProxy;
    if (typeof fn === 'function') isProxy = fn;
  } catch {
    /* no node:util: descriptor walk only */
  }
}

// ---- output: one write per message --------------------------------------------------------------------------
let guestWrite; // tool code writing to stdout: becomes log lines (set once the guest exists)
const out = G.Deno.stdout;
const writeSync = ReflectGetPrototypeOf(out).writeSync;
function writeLine(line) {
  let bytes = TextEncoderPrototypeEncode(encoder, line);
  while (TypedArrayPrototypeGetLength(bytes) > 0) {
    const n = ReflectApply(writeSync, out, [bytes]);
    bytes = TypedArrayPrototypeSubarray(bytes, n);
  }
}
// Channel watch: tool code that closes stdout ends the sandbox (stderr mark, exit CHANNEL_LOST), checked with an empty
// write as a message arrives at an idle sandbox (tool code may have run since: a timer it left) and every
// CHANNEL_CHECK_MS while tool code works for the host (its module loading, a call in flight: the guest's onBusy; an
// unreferenced timer that stops at its first tick with no work, so an idle sandbox wakes for nothing): under bubblewrap
// the wrapper holds copies of the channel, so the host would not see it close. Without permissions Deno cannot open a
// file that could take the closed descriptor's place.
const CHANNEL_LOST = 86;
const CHANNEL_LOST_MARK = 'tysandbox: the sandbox channel was closed or replaced';
const CHANNEL_CHECK_MS = 200;
const EMPTY = new Uint8ArrayCtor(0);
const exitNow = FunctionPrototypeBind(G.Deno.exit, G.Deno);
const checkChannel = () => {
  try {
    ReflectApply(writeSync, out, [EMPTY]);
  } catch {
    try {
      G.Deno.stderr.writeSync(encoder.encode(`\n${CHANNEL_LOST_MARK}\n`));
    } catch {
      /* closed */
    }
    exitNow(CHANNEL_LOST);
  }
};
// Deno 2's global setInterval returns a Node-style Timeout: its first use loads Deno's Node timers, about 10-15 ms of
// CPU (40-70 ms of wall time on a loaded machine). core.createSystemInterval is the unreferenced interval Deno's own
// modules use, without that load (cancelled with core.cancelTimer); the globals are the fallback for a Deno without
// them. All captured now, before tool code runs.
const systemInterval =
  core && typeof core.createSystemInterval === 'function' && typeof core.cancelTimer === 'function'
    ? {
        start: FunctionPrototypeBind(core.createSystemInterval, core),
        stop: FunctionPrototypeBind(core.cancelTimer, core),
      }
    : undefined;
const setIntervalFn = G.setInterval;
const clearIntervalFn = G.clearInterval;
const unrefTimerFn = FunctionPrototypeBind(G.Deno.unrefTimer, G.Deno);
let busyNow = false;
let watchTimer;
/** The periodic check: armed when work starts, it stops itself at its first tick with no work (no timer per call). */
function watchTick() {
  checkChannel();
  if (busyNow || watchTimer === undefined) return;
  const t = watchTimer;
  watchTimer = undefined;
  if (systemInterval) systemInterval.stop(t);
  else clearIntervalFn(t);
}
function onBusy(busy) {
  busyNow = busy;
  if (!busy || watchTimer !== undefined) return;
  if (systemInterval) watchTimer = systemInterval.start(watchTick, CHANNEL_CHECK_MS);
  else unrefTimerFn((watchTimer = setIntervalFn(watchTick, CHANNEL_CHECK_MS)));
}
// Guest writes to stdout become log lines instead of corrupting the protocol stream.
ReflectDefineProperty(out, 'writeSync', {
  value: (b) => {
    guestWrite(decodeGuest(b));
    return TypedArrayPrototypeGetLength(b);
  },
  configurable: true,
  writable: true,
});
ReflectDefineProperty(out, 'write', {
  value: async (b) => {
    guestWrite(decodeGuest(b));
    return TypedArrayPrototypeGetLength(b);
  },
  configurable: true,
  writable: true,
});
function decodeGuest(b) {
  try {
    return TextDecoderPrototypeDecode(decoder, b);
  } catch {
    return '[unprintable]';
  }
}

// A Python revision's sandbox gets its asset spec as one argument (node/python/sandbox.ts); Pyodide loads on `load`.
const PY_FLAG = '--tysandbox-python=';
const pyArg = G.Deno.args.find((a) => typeof a === 'string' && a.startsWith(PY_FLAG));
let python;

const guest = createGuest({
  send: (msg) => writeLine(JSONStringify(msg) + '\n'),
  onBusy,
  importSource: (source) => importModule('data:text/javascript;charset=utf-8,' + encodeURIComponentFn(source)),
  ...(isProxy ? { isProxy } : {}),
  // Deno 2 loads its fetch classes on first access of lazy global getters, like Node (about 7-10 ms of CPU at start-up
  // here): the guest core captures the getters now and the classes on first use. Deno versions that have them as
  // plain values in the snapshot get their prototype methods captured now.
  eagerFetchClasses: ReflectGetOwnPropertyDescriptor(G, 'Request')?.get === undefined,
  ...(pyArg === undefined
    ? {}
    : { loadRuntime: (runtime, source) => python.loadRuntime(runtime, source), fromGuest: (v) => python.fromGuest(v) }),
});
const { log, describe } = guest;
guestWrite = (text) => log('info', text);
if (pyArg !== undefined) {
  const [{ createPythonGuest }, vm] = await PromiseAll([
    import('../../core/guest/python.mjs'),
    importModule('node:vm'),
  ]);
  const readFileSync = FunctionPrototypeBind(G.Deno.readFileSync, G.Deno);
  const subtle = G.crypto.subtle;
  const digest = uncurryThis(ReflectGetPrototypeOf(subtle).digest);
  const specText = atobFn(StringPrototypeSlice(pyArg, PY_FLAG.length));
  const specBytes = new Uint8ArrayCtor(specText.length);
  for (let i = 0; i < specText.length; i++) specBytes[i] = StringPrototypeCharCodeAt(specText, i);
  const HEX = '0123456789abcdef';
  python = createPythonGuest({
    spec: JSONParse(TextDecoderPrototypeDecode(new TextDecoderCtor('utf-8'), specBytes)),
    readFile: (p) => readFileSync(p),
    sha256Hex: async (bytes) => {
      const d = new Uint8ArrayCtor(await digest(subtle, 'SHA-256', bytes));
      let hex = '';
      for (let i = 0; i < d.length; i++) hex += HEX[d[i] >> 4] + HEX[d[i] & 15];
      return hex;
    },
    // No importModuleDynamically: an import() anywhere in Pyodide's code fails
    // (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING).
    compileScript: (source, filename) => vm.runInThisContext(source, { filename }),
    hostGlobals: [
      'Deno',
      'process',
      'Buffer',
      'global',
      'require',
      'module',
      'exports',
      '__filename',
      '__dirname',
      'setImmediate',
      'clearImmediate',
      'caches',
      'localStorage',
      'sessionStorage',
    ],
    guest,
  });
}

// A stray rejection or exception in tool code is logged, not a crash of the whole sandbox.
G.addEventListener('unhandledrejection', (ev) => {
  ev.preventDefault();
  log('error', `unhandled rejection: ${describe(ev.reason)}`);
});
G.addEventListener('error', (ev) => {
  ev.preventDefault();
  log('error', `uncaught exception: ${describe(ev.error)}`);
});

// ---- input: NDJSON lines -> guest.line (dispatch lives in core/guest/core.mjs) --------------------------------------
// Framing on bytes, as the Node runner does: newlines found natively, a spanning line's bytes joined once, each whole
// line decoded once (a newline byte never occurs inside a UTF-8 sequence).
const onLine = guest.line;
let parts = [];
let partsLen = 0;
/** `chunk` is a view of the read buffer, overwritten by the next read: a partial line is copied out. */
function onBytes(chunk) {
  // a message to an idle sandbox: the channel as tool code may have left it meanwhile (while busy, the watch checks)
  if (!busyNow) checkChannel();
  const len = TypedArrayPrototypeGetLength(chunk);
  let start = 0;
  let nl;
  while ((nl = TypedArrayPrototypeIndexOf(chunk, 10, start)) !== -1) {
    let bytes = TypedArrayPrototypeSubarray(chunk, start, nl);
    if (parts.length > 0) {
      const whole = new Uint8ArrayCtor(partsLen + TypedArrayPrototypeGetLength(bytes));
      let at = 0;
      for (let i = 0; i < parts.length; i++)
        TypedArrayPrototypeSet(whole, parts[i], at), (at += TypedArrayPrototypeGetLength(parts[i]));
      TypedArrayPrototypeSet(whole, bytes, at);
      bytes = whole;
      parts = [];
      partsLen = 0;
    }
    if (TypedArrayPrototypeGetLength(bytes) > 0) onLine(TextDecoderPrototypeDecode(decoder, bytes));
    start = nl + 1;
  }
  if (start < len) {
    const rest = new Uint8ArrayCtor(len - start); // a copy: the read buffer is reused
    TypedArrayPrototypeSet(rest, TypedArrayPrototypeSubarray(chunk, start), 0);
    ArrayPrototypePush(parts, rest);
    partsLen += TypedArrayPrototypeGetLength(rest);
  }
}

const exitFn = FunctionPrototypeBind(G.Deno.exit, G.Deno);
// Deno.stdin.read straight into one buffer: 0-10% less per warm call than stdin.readable's stream reader in A/B runs
// (test/bench/runtime.bench.mjs). The method is captured now, before tool code could replace it.
const stdin = G.Deno.stdin;
const stdinRead = ReflectGetPrototypeOf(stdin).read;
(async () => {
  const buf = new Uint8ArrayCtor(256 * 1024);
  for (;;) {
    const n = await ReflectApply(stdinRead, stdin, [buf]);
    if (n === null) break;
    onBytes(TypedArrayPrototypeSubarray(buf, 0, n));
  }
  exitFn(0); // end of input: the host is gone
})();

writeLine(JSONStringify({ v: 1, type: 'ready', runtime: 'deno', version: `deno ${G.Deno.version.deno}` }) + '\n');
