// Node sandbox runner: runs INSIDE the Node sandbox subprocess (untrusted side); the stdio (NDJSON) adapter of
// core/guest/core.mjs for Node.
// CommonJS and file-descriptor I/O on purpose, for start-up time (test/bench/runtime.bench.mjs): a CommonJS entry
// skips the ES-module loader until the tool's own module is imported, and writing fd 1 / reading fd 0 directly skips
// building process.stdout / process.stdin streams at start-up (together about a third of a bare `node -e 0`; input
// moves to the stdin stream only once the sandbox has served a few messages, see below).
// Not a standalone script: the process runs sandbox-runner-entry.cjs, which compiles core/guest/commons.mjs (the
// captured built-ins: every ReflectApply, StringPrototypeSlice, ... below), core/guest/core.mjs (createGuest), for a
// Python revision core/guest/python.mjs (createPythonGuest), then this file, as one script with the build's V8 code
// cache, and passes in `require`, `__dirname` and its own `import()` (entryImport). Under the permission model the
// entry and either the code cache or those files are the only project files the sandbox may read
// (node/sandbox/engines.ts runnerFiles; node/sandbox/runtime.ts grants and binds exactly them). Strict: the entry's
// script is.

// ---- what only Node has (captured before any tool code runs; the built-ins come from core/guest/commons.mjs) -------
const proc = process;
const fs = require('node:fs');
const vm = require('node:vm');
const fsWriteSync = fs.writeSync;
const fsRead = fs.read;
const BufferFrom = Buffer.from;
const BufferAllocUnsafe = Buffer.allocUnsafe;
const BufferSubarray = uncurryThis(Buffer.prototype.subarray);
const BufferIndexOf = uncurryThis(Buffer.prototype.indexOf);
const BufferLatin1Slice = uncurryThis(Buffer.prototype.latin1Slice);
const bufferIsAscii = require('node:buffer').isAscii;
// process.exit looks process.reallyExit up when called, and tool code cannot reach the binding captured here
const exitFn = FunctionPrototypeBind(proc.reallyExit, proc);
// The entry's import(): a script compiled by node:vm has no dynamic-import callback of its own.
const importModule = entryImport;

// A Python revision's sandbox gets its asset spec as one argument (node/python/sandbox.ts); Pyodide loads on `load`
// (the entry then compiled core/guest/python.mjs into this script).
const PY_FLAG = '--tysandbox-python=';
const pyArg = proc.argv.find((a) => typeof a === 'string' && a.startsWith(PY_FLAG));
let python;

// ---- output: one synchronous write per message to fd 1 -------------------------------------------------------
const stdoutDesc = ReflectGetOwnPropertyDescriptor(proc, 'stdout');
// Node's own lazy getter, whatever tool code redefines later
const stdinDesc = ReflectGetOwnPropertyDescriptor(proc, 'stdin');
/** Node's stdout stream (built on first access, then cached by Node). */
const realStdout = () => ReflectApply(stdoutDesc.get, proc, []);
let fallback; // set only if fd 1 ever reports EAGAIN (a non-blocking pipe): then Node's stream, which queues
// ---- channel watch: tool code that closes or replaces fd 0 / fd 1 ends the sandbox (stderr mark, SIGKILL) ---------
// Under bubblewrap the wrapper's own processes hold copies of the channel, so the host would never see it close; the
// runner checks fd 1's identity before each write (where protocol data goes), both descriptors' as a message arrives
// at an idle sandbox (tool code may have run since: a timer it left), and both every CHANNEL_CHECK_MS while tool code
// works for the host (its module loading, a call in flight: the guest's onBusy). An idle sandbox runs no timer: it
// wakes up only for the host's next message.
const CHANNEL_LOST_MARK = 'tysandbox: the sandbox channel was closed or replaced';
const CHANNEL_CHECK_MS = 200;
const rawKill = FunctionPrototypeBind(proc._kill, proc); // process.kill's binding, before the stubs below replace both
const OWN_PID = proc.pid; // captured: process.pid is configurable, and only this process is ever signalled
const SIGKILL = require('node:os').constants.signals.SIGKILL;
const fsFstatSync = fs.fstatSync;
const fdIdentity = (fd) => {
  try {
    const st = fsFstatSync(fd);
    return `${st.dev}:${st.ino}`;
  } catch {
    return undefined;
  }
};
const channelIds = [fdIdentity(0), fdIdentity(1)];
function channelLost() {
  // process.exit would wait for the thread-pool read of fd 0, which may never return: SIGKILL ourselves instead.
  try {
    fsWriteSync(2, `\n${CHANNEL_LOST_MARK}\n`);
  } catch {
    /* stderr closed too */
  }
  rawKill(OWN_PID, SIGKILL);
}
function checkChannel() {
  if (fdIdentity(0) !== channelIds[0] || fdIdentity(1) !== channelIds[1]) channelLost();
}
function checkOutput() {
  if (fdIdentity(1) !== channelIds[1]) channelLost();
}
const setIntervalFn = setInterval;
const clearIntervalFn = clearInterval;
// Timeout's own unref, captured before tool code runs (the watch is armed again after tool code has loaded)
const unrefProbe = setTimeout(() => {}, 0);
const timeoutUnref = unrefProbe.unref;
clearTimeout(unrefProbe);
let busyNow = false;
let watchTimer;
/** The periodic check: armed when work starts, it stops itself at its first tick with no work (no timer per call). */
function watchTick() {
  checkChannel();
  if (!busyNow) {
    clearIntervalFn(watchTimer);
    watchTimer = undefined;
  }
}
function onBusy(busy) {
  busyNow = busy;
  if (busy && watchTimer === undefined) {
    watchTimer = setIntervalFn(watchTick, CHANNEL_CHECK_MS);
    if (typeof timeoutUnref === 'function') ReflectApply(timeoutUnref, watchTimer, []);
  }
}
function writeLine(line) {
  checkOutput();
  if (fallback !== undefined) return void fallback(line);
  const buf = BufferFrom(line, 'utf8');
  let off = 0;
  while (off < buf.length) {
    try {
      off += fsWriteSync(1, buf, off, buf.length - off);
    } catch (e) {
      if (e?.code !== 'EAGAIN') throw e;
      const s = realStdout();
      const write = ReflectGetPrototypeOf(s).write; // the stream's own write, not the guest-facing one below
      fallback = (chunk) => ReflectApply(write, s, [chunk]);
      fallback(BufferSubarray(buf, off));
      return;
    }
  }
}
// Tool code that reaches for process.stdout gets Node's stream whose writes become log lines instead of
// corrupting the protocol stream.
let guestWrite;
let guestStdout;
ReflectDefineProperty(proc, 'stdout', {
  get() {
    if (guestStdout === undefined) {
      guestStdout = realStdout();
      ReflectDefineProperty(guestStdout, 'write', {
        value: (chunk, enc, cb) => {
          let text;
          try {
            text = typeof chunk === 'string' ? chunk : TextDecoderPrototypeDecode(new TextDecoderCtor(), chunk);
          } catch {
            text = '[unprintable]';
          }
          guestWrite(text);
          if (typeof enc === 'function') enc();
          else if (typeof cb === 'function') cb();
          return true;
        },
        configurable: true,
        writable: true,
      });
    }
    return guestStdout;
  },
  configurable: true,
  enumerable: stdoutDesc.enumerable,
});

const guest = createGuest({
  send: (msg) => writeLine(JSONStringify(msg) + '\n'),
  onBusy,
  importSource: (source) => importModule('data:text/javascript;charset=utf-8,' + encodeURIComponentFn(source)),
  // Proxy detection without running traps.
  isProxy: require('node:util').types.isProxy,
  ...(pyArg === undefined
    ? {}
    : { loadRuntime: (runtime, source) => python.loadRuntime(runtime, source), fromGuest: (v) => python.fromGuest(v) }),
});
const { log, describe, toolError } = guest;
guestWrite = (text) => log('info', text);
if (pyArg !== undefined) {
  const createHash = require('node:crypto').createHash;
  python = createPythonGuest({
    spec: JSONParse(BufferFrom(StringPrototypeSlice(pyArg, PY_FLAG.length), 'base64').toString('utf8')),
    readFile: (p) => fs.readFileSync(p),
    sha256Hex: async (bytes) => createHash('sha256').update(bytes).digest('hex'),
    // No importModuleDynamically: an import() anywhere in Pyodide's code fails
    // (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING).
    compileScript: (source, filename) => vm.runInThisContext(source, { filename }),
    // Buffer stays: Node's own Request/Response (undici) look it up as a global. It carries no authority.
    hostGlobals: ['process', 'global', 'require', 'module', 'exports', '__filename', '__dirname'],
    guest,
  });
}

// A stray rejection or exception in tool code is logged, not a crash of the whole sandbox.
proc.on('unhandledRejection', (reason) => {
  log('error', `unhandled rejection: ${describe(reason)}`);
});
proc.on('uncaughtException', (err) => {
  log('error', `uncaught exception: ${describe(err)}`);
});

// ---- input: NDJSON lines from fd 0 -> guest.line (dispatch lives in core/guest/core.mjs)
// ------------------------------
// Framing on bytes: each chunk is scanned for newlines natively; the bytes of a line that spans chunks are kept
// and joined once, and each whole line is decoded once (a 1 MB call arrives in many pipe-sized chunks: no decoding
// per chunk and no second join of the text). A newline byte never occurs inside a UTF-8 sequence, so decoding whole
// lines is exact.
const onLine = guest.line;
let parts = [];
let partsLen = 0;
// After large input (arguments, capability replies: IDLE_GC_BYTES since the last collection) and IDLE_GC_MS without
// input, one full garbage collection gives the young and large-object pages those messages left back to the system
// (V8's own memory reducer takes 10-20 s; a retained sandbox that saw 1 MiB arguments holds about 10 MiB more
// meanwhile:
// test/bench/warm.bench.mjs). The collector comes from a context of its own created while --expose-gc is set, for
// that moment only, so tool code's global object never has `gc`.
const IDLE_GC_BYTES = 1024 * 1024;
const IDLE_GC_MS = 200;
const setTimeoutFn = setTimeout;
const clearTimeoutFn = clearTimeout;
let sinceGc = 0;
let gcTimer;
let collect;
function idleCollect() {
  gcTimer = undefined;
  sinceGc = 0;
  if (collect === undefined) {
    collect = null;
    const v8 = require('node:v8');
    try {
      v8.setFlagsFromString('--expose-gc');
      collect = vm.runInNewContext('gc');
    } catch {
      /* no collector: V8's memory reducer only */
    } finally {
      v8.setFlagsFromString('--no-expose-gc');
    }
  }
  if (typeof collect === 'function') collect();
}
function noteInput(n) {
  sinceGc += n;
  if (sinceGc < IDLE_GC_BYTES) return;
  if (gcTimer !== undefined) clearTimeoutFn(gcTimer);
  gcTimer = setTimeoutFn(idleCollect, IDLE_GC_MS);
  gcTimer.unref();
}
/** `reused`: `chunk` is overwritten by the next read (the thread-pool buffer), so a partial line is copied out. */
function onBytes(chunk, reused) {
  noteInput(chunk.length);
  // a message to an idle sandbox: the channel as tool code may have left it meanwhile (while busy, the watch checks)
  if (!busyNow) checkChannel();
  let start = 0;
  let nl;
  while ((nl = BufferIndexOf(chunk, 10, start)) !== -1) {
    let bytes = BufferSubarray(chunk, start, nl);
    if (parts.length > 0) {
      const whole = BufferAllocUnsafe(partsLen + bytes.length);
      let at = 0;
      for (let i = 0; i < parts.length; i++) TypedArrayPrototypeSet(whole, parts[i], at), (at += parts[i].length);
      TypedArrayPrototypeSet(whole, bytes, at);
      bytes = whole;
      parts = [];
      partsLen = 0;
    }
    // ASCII (most JSON) is its own Latin-1 text: copied straight into a one-byte string, no UTF-8 decoding
    if (bytes.length > 0)
      onLine(
        bufferIsAscii(bytes)
          ? BufferLatin1Slice(bytes, 0, bytes.length)
          : TextDecoderPrototypeDecode((decoder ??= new TextDecoderCtor('utf-8')), bytes),
      );
    start = nl + 1;
  }
  if (start < chunk.length) {
    const rest = BufferSubarray(chunk, start);
    const keep = reused ? BufferFrom(rest) : rest;
    ArrayPrototypePush(parts, keep);
    partsLen += keep.length;
  }
}
// Input starts on libuv's thread pool (fd 0 is a blocking pipe), which needs no stream machinery at start-up. Each
// thread-pool read costs an extra thread hop per message, though (about 40-70 us of a warm call here,
// test/bench/runtime.bench.mjs), so after STREAM_AFTER_READS reads since the tool loaded (calls, capability replies)
// input moves to Node's stdin stream (epoll on the main thread). Building that stream costs about 7-12 ms once,
// synchronously: a message arriving meanwhile waits that long (the bench's "slowest of the next 31 calls" row), which
// is why short bursts on a fresh sandbox never pay it. Should fd 0 be non-blocking (EAGAIN), the stream takes over at
// once. A partial line's bytes are kept across the switch; no read is in flight during the switch, so nothing is
// reordered. End of input (host gone) ends the sandbox.
const STREAM_AFTER_READS = 16;
let readsSinceLoad = 0;
let decoder; // for non-ASCII lines, made on first use (its converter costs about 0.2 ms of a cold start)
const inBuf = BufferAllocUnsafe(256 * 1024);
const setImmediateFn = setImmediate;
function useStream() {
  const stdin = stdinDesc && typeof stdinDesc.get === 'function' ? ReflectApply(stdinDesc.get, proc, []) : proc.stdin;
  stdin.on('data', (chunk) => onBytes(chunk, false));
  stdin.on('end', () => exitFn(0));
}
function readLoop() {
  fsRead(0, inBuf, 0, inBuf.length, null, (err, n) => {
    if (err && err.code === 'EAGAIN') return useStream();
    if (err || n === 0) return exitFn(0);
    onBytes(BufferSubarray(inBuf, 0, n), true);
    // Nothing reads fd 0 until the stream starts (after this turn): what arrives meanwhile waits in the pipe.
    if (guest.loadState === 'loaded' && ++readsSinceLoad >= STREAM_AFTER_READS) setImmediateFn(useStream);
    else readLoop();
  });
}
// `ready` goes out before the first read (whose thread-pool start-up, about 0.5-2 ms, then overlaps with the host's
// reply); the rest below is synchronous, so it completes before any host message is handled (input is only read in
// later turns of the event loop) and overlaps with the host's reply too.
writeLine(JSONStringify({ v: 1, type: 'ready', runtime: 'node', version: StringCtor(`node ${proc.version}`) }) + '\n');
readLoop();
// The ES-module loader, which the tool's module needs anyway, is initialized meanwhile by importing an empty module.
importModule('data:text/javascript,').then(undefined, () => {});

// ---- signals and priorities of other processes are not covered by the permission model ----------------------
// Defence in depth only (the OS wrapper's PID namespace is the real limit): without these stubs tool code could
// signal the host or any process of the same user. process.binding is already denied by the permission model.
const denied = (what) => () => {
  throw toolError('E_CAPABILITY_DENIED', `${what} is not available in the sandbox`);
};
for (const k of ['kill', '_kill'])
  ReflectDefineProperty(proc, k, { value: denied(`process.${k}`), configurable: false, writable: false });
// process.exit / reallyExit from tool code would wait for the pending thread-pool read of fd 0, possibly until the
// call's time limit: the sandbox ends at once instead, its stderr saying which code the tool asked for (the host
// reports it as that exit, node/sandbox/runtime.ts TOOL_EXIT_MARK).
const TOOL_EXIT_MARK = 'tysandbox: the tool ended its sandbox with exit code ';
const toolExit = (code) => {
  const n = typeof code === 'number' ? code & 0xff : 0;
  try {
    fsWriteSync(2, `\n${TOOL_EXIT_MARK}${n}\n`);
  } catch {
    /* stderr closed */
  }
  rawKill(OWN_PID, SIGKILL);
};
for (const k of ['exit', 'reallyExit'])
  ReflectDefineProperty(proc, k, { value: toolExit, configurable: false, writable: false });
const os = require('node:os');
for (const k of ['setPriority'])
  ReflectDefineProperty(os, k, { value: denied(`os.${k}`), configurable: false, writable: false, enumerable: true });
// No syncBuiltinESMExports() needed: a built-in's ES-module facade is made, from its exports as they are then, when an
// ES module first imports it, and no module has imported one yet (the empty module above imports nothing, and loads
// in a later turn); loading node:module for it cost about 0.3-0.5 ms of a cold start.
