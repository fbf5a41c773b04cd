// Sandbox bootstrap: runs INSIDE the sandbox subprocess (untrusted side) under Node or Deno; speaks NDJSON protocol v1 (protocol/wire.ts).
// Self-contained on purpose: it is the only project file the sandbox may read. It captures every built-in it
// uses before tool code loads (primordials, after endo's commons.js / deno's primordials), so ordinary
// tampering by tool code cannot bend the bridge. It is not the security boundary: the host validates every
// message and the subprocess (plus the OS wrapper) is the isolation.

// ---- primordials (captured before any tool code runs) ----------------------------------------------
const G = globalThis;
const ReflectApply = Reflect.apply;
const uncurry = (fn) => (self, ...args) => ReflectApply(fn, self, args);
const { ownKeys: ReflectOwnKeys, getPrototypeOf: ReflectGetPrototypeOf, getOwnPropertyDescriptor: ReflectGetOwnPropertyDescriptor,
  defineProperty: ReflectDefineProperty, deleteProperty: ReflectDeleteProperty, setPrototypeOf: ReflectSetPrototypeOf } = Reflect;
const JSONStringify = JSON.stringify;
const JSONParse = JSON.parse;
const ObjectCreate = Object.create;
const ObjectFreeze = Object.freeze;
const ObjectPrototype = Object.prototype;
const ArrayPrototype = Array.prototype;
const ArrayIsArray = Array.isArray;
const NumberIsFinite = Number.isFinite;
const MathMin = Math.min;
const DateNow = Date.now;
const StringCtor = String;
const StringFromCharCode = String.fromCharCode;
const StringPrototypeSlice = uncurry(String.prototype.slice);
const StringPrototypeIndexOf = uncurry(String.prototype.indexOf);
const StringPrototypeCharCodeAt = uncurry(String.prototype.charCodeAt);
const RegExpPrototypeExec = uncurry(RegExp.prototype.exec);
const ArrayPrototypePush = uncurry(Array.prototype.push);
const ArrayPrototypeJoin = uncurry(Array.prototype.join);
const FunctionPrototypeBind = uncurry(Function.prototype.bind);
const SafeMap = Map;
const MapGet = uncurry(Map.prototype.get);
const MapSet = uncurry(Map.prototype.set);
const MapHas = uncurry(Map.prototype.has);
const MapDelete = uncurry(Map.prototype.delete);
const SafeSet = Set;
const SetAdd = uncurry(Set.prototype.add);
const SetHas = uncurry(Set.prototype.has);
const SetDelete = uncurry(Set.prototype.delete);
const PromiseCtor = Promise;
const PromiseReject = FunctionPrototypeBind(Promise.reject, Promise);
const PromiseThen = uncurry(Promise.prototype.then);
const ErrorCtor = Error;
const TypeErrorCtor = TypeError;
const AbortControllerCtor = AbortController;
const AbortControllerAbort = uncurry(AbortController.prototype.abort);
const abortSignalGetter = ReflectGetOwnPropertyDescriptor(AbortController.prototype, 'signal').get;
const AbortSignalAborted = uncurry(ReflectGetOwnPropertyDescriptor(AbortSignal.prototype, 'aborted').get);
const EventTargetAddEventListener = uncurry(EventTarget.prototype.addEventListener);
const TextEncoderCtor = TextEncoder;
const TextDecoderCtor = TextDecoder;
const encoder = new TextEncoderCtor();
const TextEncoderEncode = uncurry(TextEncoder.prototype.encode);
const decoder = new TextDecoderCtor('utf-8');
const TextDecoderDecode = uncurry(TextDecoder.prototype.decode);
const Uint8ArrayCtor = Uint8Array;
const TypedArrayPrototype = ReflectGetPrototypeOf(Uint8Array.prototype);
const TypedArrayLength = uncurry(ReflectGetOwnPropertyDescriptor(TypedArrayPrototype, 'length').get);
const TypedArraySubarray = uncurry(TypedArrayPrototype.subarray);
const ArrayBufferCtor = ArrayBuffer;
const btoaFn = G.btoa;
const atobFn = G.atob;
const encodeURIComponentFn = encodeURIComponent;
// Fetch classes: Node loads them (undici, ~20 ms) on first access of a lazy global getter. The getters are Node's
// own closures, captured now, so tool code cannot substitute the classes; their prototype methods are captured on
// first use (tool code that patches them before its first fetch only fools its own requests; the host validates
// every request anyway). Deno has them in its snapshot: captured eagerly.
const webGetters = nullProto({});
for (const name of ['Request', 'Response', 'Headers', 'DOMException']) {
  const d = ReflectGetOwnPropertyDescriptor(G, name);
  webGetters[name] = d === undefined ? () => undefined : d.get ? FunctionPrototypeBind(d.get, G) : ((v) => () => v)(d.value);
}
let web;
function webClasses() {
  if (web !== undefined) return web;
  const RequestCtor = webGetters.Request();
  const HeadersCtor = webGetters.Headers();
  const rp = RequestCtor.prototype;
  web = nullProto({
    RequestCtor,
    ResponseCtor: webGetters.Response(),
    HeadersCtor,
    DOMExceptionCtor: webGetters.DOMException(),
    RequestUrl: uncurry(ReflectGetOwnPropertyDescriptor(rp, 'url').get),
    RequestMethod: uncurry(ReflectGetOwnPropertyDescriptor(rp, 'method').get),
    RequestHeaders: uncurry(ReflectGetOwnPropertyDescriptor(rp, 'headers').get),
    RequestArrayBuffer: uncurry(rp.arrayBuffer),
    HeadersForEach: uncurry(HeadersCtor.prototype.forEach),
  });
  return web;
}
const importModule = (url) => import(url);
/** A Node builtin: synchronous process.getBuiltinModule (Node >= 20.16) where present, else dynamic import. */
const builtin = async (name) => {
  const gbm = G.process && typeof G.process.getBuiltinModule === 'function' && !isDenoEarly() ? G.process.getBuiltinModule : undefined;
  if (gbm) return ReflectApply(gbm, G.process, [name]);
  const ns = await importModule(name);
  return ns.default ?? ns;
};
function isDenoEarly() {
  return typeof G.Deno === 'object' && G.Deno !== null;
}
const isDeno = typeof G.Deno === 'object' && G.Deno !== null && typeof G.Deno.version === 'object';
const proc = isDeno ? undefined : G.process;
if (isDeno) webClasses();
const MAX_DEPTH = 256;
const LOG_TEXT_MAX = 8000;
const LOG_PER_SECOND = 200;

/**
 * Proxy detection without running traps: Deno's core op (free) or node:util types.isProxy (Node: cheap; Deno's
 * node:util costs ~15 ms of start-up, so it is the fallback). Without either, proxies go through the descriptor
 * walk, which runs their traps only here in the sandbox and copies plain data out.
 */
let isProxy = () => false;
let denoCore;
try {
  denoCore = isDeno ? G.Deno[G.Deno.internal].core : undefined;
} catch {
  denoCore = undefined;
}
if (denoCore && typeof denoCore.isProxy === 'function') {
  isProxy = FunctionPrototypeBind(denoCore.isProxy, denoCore);
} else {
  try {
    const util = await builtin('node:util');
    const fn = util.types && util.types.isProxy;
    if (typeof fn === 'function') isProxy = fn;
  } catch {
    /* no node:util: descriptor walk only */
  }
}

// ---- output: one write per message ----------------------------------------------------------------------
let writeLine;
let denoStdin;
if (isDeno) {
  const out = G.Deno.stdout;
  const writeSync = ReflectGetPrototypeOf(out).writeSync;
  denoStdin = G.Deno.stdin;
  writeLine = (line) => {
    let bytes = TextEncoderEncode(encoder, line);
    while (TypedArrayLength(bytes) > 0) {
      const n = ReflectApply(writeSync, out, [bytes]);
      bytes = TypedArraySubarray(bytes, n);
    }
  };
  // Guest writes to stdout become log lines instead of corrupting the protocol stream.
  ReflectDefineProperty(out, 'writeSync', { value: (b) => { log('info', decodeGuest(b)); return TypedArrayLength(b); }, configurable: true, writable: true });
  ReflectDefineProperty(out, 'write', { value: async (b) => { log('info', decodeGuest(b)); return TypedArrayLength(b); }, configurable: true, writable: true });
} else {
  const out = proc.stdout;
  const write = out.write;
  writeLine = (line) => { ReflectApply(write, out, [line]); };
  ReflectDefineProperty(out, 'write', {
    value: (chunk, enc, cb) => {
      log('info', typeof chunk === 'string' ? chunk : decodeGuest(chunk));
      if (typeof enc === 'function') enc(); else if (typeof cb === 'function') cb();
      return true;
    },
    configurable: true,
    writable: true,
  });
}
function decodeGuest(b) {
  try { return TextDecoderDecode(decoder, b); } catch { return '[unprintable]'; }
}
function nullProto(o) {
  ReflectSetPrototypeOf(o, null);
  return o;
}
function send(msg) {
  writeLine(JSONStringify(nullProto(msg)) + '\n');
}

// ---- console -> log messages (rate and size capped) ----------------------------------------------------
let logWindow = 0;
let logCount = 0;
let logDropped = 0;
function log(level, text) {
  const now = DateNow();
  if (now - logWindow >= 1000) {
    logWindow = now;
    logCount = 0;
    if (logDropped > 0) {
      const n = logDropped;
      logDropped = 0;
      logCount++;
      send({ v: 1, type: 'log', level: 'warn', text: `[${n} log messages dropped: rate limit]` });
    }
  }
  if (logCount >= LOG_PER_SECOND) { logDropped++; return; }
  logCount++;
  if (text.length > LOG_TEXT_MAX) text = StringPrototypeSlice(text, 0, LOG_TEXT_MAX) + '...[truncated]';
  send({ v: 1, type: 'log', level, text });
}
function describe(v) {
  try {
    if (typeof v === 'string') return v;
    if (typeof v === 'object' && v !== null) {
      if (v instanceof ErrorCtor) return `${safeString(v.name)}: ${safeString(v.message)}`;
      const s = JSONStringify(v);
      return typeof s === 'string' ? s : StringCtor(v);
    }
    return StringCtor(v);
  } catch {
    return '[unprintable]';
  }
}
function safeString(v) {
  try { return typeof v === 'string' ? v : StringCtor(v); } catch { return '[unprintable]'; }
}
const LEVELS = nullProto({ debug: 'debug', trace: 'debug', log: 'info', info: 'info', dir: 'info', table: 'info', warn: 'warn', error: 'error', assert: 'error' });
const consoleObj = G.console;
for (const key of ReflectOwnKeys(LEVELS)) {
  const level = LEVELS[key];
  ReflectDefineProperty(consoleObj, key, {
    value: (...args) => {
      if (key === 'assert') { if (args[0]) return; args = ['Assertion failed', ...args.slice(1)]; }
      const parts = [];
      for (let i = 0; i < args.length && i < 64; i++) ArrayPrototypePush(parts, describe(args[i]));
      log(level, ArrayPrototypeJoin(parts, ' '));
    },
    configurable: true,
    writable: true,
  });
}

// A stray rejection or exception in tool code is logged, not a crash of the whole sandbox.
if (isDeno) {
  G.addEventListener('unhandledrejection', (ev) => { ev.preventDefault(); log('error', `unhandled rejection: ${describe(ev.reason)}`); });
  G.addEventListener('error', (ev) => { ev.preventDefault(); log('error', `uncaught exception: ${describe(ev.error)}`); });
} else {
  proc.on('unhandledRejection', (reason) => { log('error', `unhandled rejection: ${describe(reason)}`); });
  proc.on('uncaughtException', (err) => { log('error', `uncaught exception: ${describe(err)}`); });
}

// ---- errors --------------------------------------------------------------------------------------------
const CODE_RE = /^E_[A-Z0-9_]{1,60}$/;
/**
 * An Error for tool code: own `message`, `code` and a `stack` without any frame or path. Built from the captured
 * prototype rather than the constructor, so no guest `Error.prepareStackTrace` hook ever runs inside the bridge
 * (Node formats stacks eagerly at construction).
 */
const ErrorPrototype = ErrorCtor.prototype;
const TypeErrorPrototype = TypeErrorCtor.prototype;
function toolError(code, message, Ctor = ErrorCtor) {
  const isType = Ctor === TypeErrorCtor;
  const e = ObjectCreate(isType ? TypeErrorPrototype : ErrorPrototype);
  ReflectDefineProperty(e, 'message', { value: message, configurable: true, writable: true });
  ReflectDefineProperty(e, 'code', { value: code, enumerable: true, configurable: true, writable: true });
  ReflectDefineProperty(e, 'stack', { value: `${isType ? 'TypeError' : 'Error'}: ${message}`, configurable: true, writable: true });
  return e;
}
/** Rebuild anything thrown as a plain wire error `{code, message, data: {name, code?}}`; hostile values never escape. */
function toWireError(e) {
  let name = 'Error';
  let message = '';
  let code;
  try {
    if ((typeof e === 'object' && e !== null) || typeof e === 'function') {
      const n = e.name;
      if (typeof n === 'string') name = n;
      const m = e.message;
      if (typeof m === 'string') message = m;
      const c = e.code;
      if (typeof c === 'string' && RegExpPrototypeExec(CODE_RE, c) !== null) code = c;
    } else {
      message = safeString(e);
    }
  } catch {
    message = 'thrown value has unreadable properties';
  }
  name = StringPrototypeSlice(name, 0, 128);
  const data = nullProto({ name });
  if (code !== undefined) data.code = code;
  return nullProto({ code: 'E_TOOL_FAILED', message: StringPrototypeSlice(message === '' ? name : `${name}: ${message}`, 0, 4000), data });
}

// ---- plain-data copy (the only form results and capability params take) ----------------------------------
function notData(path, what) {
  throw toolError('E_TOOL_FAILED', `value is not JSON data: ${what} at ${path}`, TypeErrorCtor);
}
/** Copy `value` into fresh null-prototype objects/arrays of JSON data; returns undefined for `undefined`. */
function plainCopy(value, path, stack, depth) {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (!NumberIsFinite(value)) notData(path, 'a non-finite number');
      return value;
    case 'undefined':
      return undefined;
    case 'bigint':
      return notData(path, 'a BigInt');
    case 'symbol':
      return notData(path, 'a Symbol');
    case 'function':
      return notData(path, 'a function');
  }
  if (value === null) return null;
  if (isProxy(value)) notData(path, 'a Proxy');
  if (SetHas(stack, value)) notData(path, 'a cycle');
  if (depth > MAX_DEPTH) notData(path, `nesting deeper than ${MAX_DEPTH}`);
  const proto = ReflectGetPrototypeOf(value);
  SetAdd(stack, value);
  try {
    if (ArrayIsArray(value)) {
      if (proto !== ArrayPrototype && proto !== null) notData(path, 'an array subclass');
      const lenDesc = ReflectGetOwnPropertyDescriptor(value, 'length');
      const len = lenDesc.value;
      const out = [];
      for (let i = 0; i < len; i++) {
        const d = ReflectGetOwnPropertyDescriptor(value, i);
        if (d !== undefined && !('value' in d)) notData(`${path}[${i}]`, 'an accessor property');
        const c = d === undefined ? undefined : plainCopy(d.value, `${path}[${i}]`, stack, depth + 1);
        ReflectDefineProperty(out, i, { value: c === undefined ? null : c, enumerable: true, writable: true, configurable: true });
      }
      return nullProto(out);
    }
    if (proto !== ObjectPrototype && proto !== null) notData(path, 'an instance of a class');
    const out = ObjectCreate(null);
    const keys = ReflectOwnKeys(value);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      if (typeof k === 'symbol') notData(path, 'a Symbol-keyed property');
      const d = ReflectGetOwnPropertyDescriptor(value, k);
      if (d === undefined || !d.enumerable) continue;
      if (!('value' in d)) notData(`${path}.${k}`, 'an accessor property');
      const c = plainCopy(d.value, `${path}.${k}`, stack, depth + 1);
      if (c !== undefined) ReflectDefineProperty(out, k, { value: c, enumerable: true, writable: true, configurable: true });
    }
    return out;
  } finally {
    SetDelete(stack, value);
  }
}
function toJsonText(value) {
  const c = plainCopy(value, '$', new SafeSet(), 0);
  return JSONStringify(c === undefined ? null : c);
}

// ---- capabilities ---------------------------------------------------------------------------------------
const pendingCaps = new SafeMap(); // cap id -> { resolve, reject }
const activeCalls = new SafeMap(); // call id -> true while running
let nextCapId = 1;
let currentCall;

function capRequest(callId, name, params) {
  if (callId === undefined || !MapHas(activeCalls, callId)) {
    return PromiseReject(toolError('E_CAPABILITY_DENIED', `${name}: no tool call in progress`));
  }
  let copy;
  try {
    copy = plainCopy(params, 'params', new SafeSet(), 0);
  } catch (e) {
    return PromiseReject(e);
  }
  const id = nextCapId++;
  return new PromiseCtor((resolve, reject) => {
    MapSet(pendingCaps, id, { resolve, reject });
    send({ v: 1, type: 'cap', id, callId, name, params: copy === undefined ? null : copy });
  });
}

function bytesToBase64(bytes) {
  let s = '';
  const n = TypedArrayLength(bytes);
  for (let i = 0; i < n; i += 0x8000) s += ReflectApply(StringFromCharCode, undefined, TypedArraySubarray(bytes, i, MathMin(i + 0x8000, n)));
  return btoaFn(s);
}
function base64ToBytes(b64) {
  const s = atobFn(b64);
  const out = new Uint8ArrayCtor(s.length);
  for (let i = 0; i < s.length; i++) out[i] = StringPrototypeCharCodeAt(s, i);
  return out;
}
const NULL_BODY_STATUS = nullProto({ 101: true, 103: true, 204: true, 205: true, 304: true });

/** The one mediated fetch: global `fetch` and `ctx.fetch` are this same function (WHATWG fetch signature). */
async function mediatedFetch(input, init) {
  const callId = currentCall;
  const { RequestCtor, ResponseCtor, HeadersCtor, RequestUrl, RequestMethod, RequestHeaders, RequestArrayBuffer, HeadersForEach } = webClasses();
  if (init !== undefined && init !== null) {
    const p = typeof init === 'object' ? ReflectGetPrototypeOf(init) : undefined;
    if (typeof init !== 'object' || isProxy(init) || (p !== ObjectPrototype && p !== null)) {
      throw toolError('E_INVALID_ARGS', 'fetch: init must be a plain object', TypeErrorCtor);
    }
  }
  let req;
  try {
    req = new RequestCtor(input, init === null ? undefined : init);
  } catch (e) {
    throw toolError('E_INVALID_ARGS', `fetch: invalid request: ${toWireError(e).message}`, TypeErrorCtor);
  }
  const headers = [];
  HeadersForEach(RequestHeaders(req), (v, k) => { ArrayPrototypePush(headers, nullProto([k, v])); });
  const method = RequestMethod(req);
  const params = nullProto({ url: RequestUrl(req), method, headers: nullProto(headers) });
  if (method !== 'GET' && method !== 'HEAD') {
    const buf = await RequestArrayBuffer(req);
    if (buf.byteLength > 0) params.body = bytesToBase64(new Uint8ArrayCtor(buf));
  }
  const signal = init && init.signal;
  const p = capRequest(callId, 'fetch', params);
  const r = await (signal ? raceAbort(p, signal) : p);
  if (r === null || typeof r !== 'object' || typeof r.status !== 'number' || typeof r.body !== 'string') {
    throw toolError('E_FETCH_FAILED', 'fetch: malformed response from host');
  }
  const status = r.status;
  if (status < 200 || status > 599) throw toolError('E_FETCH_FAILED', `fetch: unsupported status ${status}`);
  const body = NULL_BODY_STATUS[status] ? null : base64ToBytes(r.body);
  const res = new ResponseCtor(body, { status, statusText: typeof r.statusText === 'string' ? r.statusText : '', headers: new HeadersCtor(r.headers) });
  ReflectDefineProperty(res, 'url', { value: typeof r.url === 'string' ? r.url : '', enumerable: true, configurable: true });
  return res;
}
function raceAbort(p, signal) {
  return new PromiseCtor((resolve, reject) => {
    const abort = () => {
      const { DOMExceptionCtor } = webClasses();
      const e = DOMExceptionCtor ? new DOMExceptionCtor('The operation was aborted.', 'AbortError') : toolError('E_ABORTED', 'aborted');
      reject(e);
    };
    try {
      if (AbortSignalAborted(signal)) return abort();
      EventTargetAddEventListener(signal, 'abort', abort, { once: true });
    } catch {
      /* not an AbortSignal: ignore it like a missing one */
    }
    PromiseThen(p, resolve, reject);
  });
}

function makeCtx(callId, getSignal) {
  const cap = (name) => (params) => capRequest(callId, name, params);
  const storage = {
    get: (key) => capRequest(callId, 'storage.get', { key }),
    set: (key, value) => capRequest(callId, 'storage.set', { key, value }),
    delete: (key) => capRequest(callId, 'storage.delete', { key }),
    list: (prefix) => capRequest(callId, 'storage.list', prefix === undefined ? {} : { prefix }),
  };
  const ctx = {
    fetch: mediatedFetch,
    createSubtasksResult: cap('createSubtasksResult'),
    resolveInvocation: (name) => capRequest(callId, 'resolveInvocation', { name }),
    storage: ObjectFreeze(storage),
    getSecret: (name) => capRequest(callId, 'getSecret', { name }),
  };
  // Created on first access (an AbortController per call costs more than a small call).
  ReflectDefineProperty(ctx, 'signal', { get: getSignal, enumerable: true, configurable: false });
  return ObjectFreeze(ctx);
}

// ---- Node: signals and priorities of other processes are not covered by the permission model ---------------
// Defence in depth only (the OS wrapper's PID namespace is the real limit): without these stubs tool code could
// signal the host or any process of the same user. process.binding is already denied by the permission model.
if (!isDeno) {
  const denied = (what) => () => { throw toolError('E_CAPABILITY_DENIED', `${what} is not available in the sandbox`); };
  for (const k of ['kill', '_kill']) ReflectDefineProperty(proc, k, { value: denied(`process.${k}`), configurable: false, writable: false });
  const os = await builtin('node:os');
  for (const k of ['setPriority']) ReflectDefineProperty(os, k, { value: denied(`os.${k}`), configurable: false, writable: false, enumerable: true });
  (await builtin('node:module')).syncBuiltinESMExports();
}

// ---- network globals: removed; `fetch` is the mediated one ---------------------------------------------
for (const name of ['WebSocket', 'WebSocketStream', 'EventSource', 'XMLHttpRequest', 'WebTransport', 'RTCPeerConnection', 'Worker', 'SharedWorker', 'BroadcastChannel']) {
  if (!ReflectDeleteProperty(G, name)) {
    try { ReflectDefineProperty(G, name, { value: undefined, configurable: false, writable: false }); } catch { /* non-configurable: the host permissions still deny it */ }
  }
}
ReflectDefineProperty(G, 'fetch', { value: mediatedFetch, configurable: true, writable: true, enumerable: true });

// ---- message handling (null-prototype dispatch; unknown types fail closed) -----------------------------
let toolFn;
let loadState = 'none'; // none | loading | loaded | failed

const handlers = nullProto({
  async load(msg) {
    if (loadState !== 'none' || typeof msg.source !== 'string') {
      send({ v: 1, type: 'loaded', ok: false, error: { code: 'E_PROTOCOL', message: 'load refused: already loaded or no source' } });
      return;
    }
    if (msg.runtime !== 'javascript') {
      loadState = 'failed';
      send({ v: 1, type: 'loaded', ok: false, error: { code: 'E_SANDBOX_FAILED', message: 'this sandbox runs JavaScript only' } });
      return;
    }
    loadState = 'loading';
    try {
      const mod = await importModule('data:text/javascript;charset=utf-8,' + encodeURIComponentFn(msg.source));
      const fn = mod.default;
      if (typeof fn !== 'function') throw toolError('E_TOOL_FAILED', 'the tool module has no default export function');
      toolFn = fn;
      loadState = 'loaded';
      send({ v: 1, type: 'loaded', ok: true });
    } catch (e) {
      loadState = 'failed';
      send({ v: 1, type: 'loaded', ok: false, error: toWireError(e) });
    }
  },
  async call(msg) {
    const id = msg.id;
    if (typeof id !== 'number' || MapHas(activeCalls, id)) return;
    if (loadState !== 'loaded') {
      send({ v: 1, type: 'result', id, ok: false, error: { code: 'E_TOOL_FAILED', message: 'tool not loaded' } });
      return;
    }
    let ac;
    let ended = false;
    const getSignal = () => {
      if (ac === undefined) {
        ac = new AbortControllerCtor();
        if (ended) AbortControllerAbort(ac);
      }
      return ReflectApply(abortSignalGetter, ac, []);
    };
    MapSet(activeCalls, id, true);
    currentCall = id;
    let line;
    try {
      const value = await ReflectApply(toolFn, undefined, [msg.args, makeCtx(id, getSignal)]);
      // Hot path: the message text is built directly (id is a safe integer from the host, json a string).
      line = '{"v":1,"type":"result","id":' + id + ',"ok":true,"json":' + JSONStringify(toJsonText(value)) + '}\n';
    } catch (e) {
      line = JSONStringify(nullProto({ v: 1, type: 'result', id, ok: false, error: toWireError(e) })) + '\n';
    }
    MapDelete(activeCalls, id);
    if (currentCall === id) currentCall = undefined;
    ended = true;
    if (ac !== undefined) {
      try { AbortControllerAbort(ac); } catch { /* guest listeners threw: ignore */ }
    }
    writeLine(line);
  },
  'cap-reply'(msg) {
    const p = MapGet(pendingCaps, msg.id);
    if (p === undefined) return;
    MapDelete(pendingCaps, msg.id);
    if (msg.ok === true) p.resolve(msg.value);
    else {
      const err = msg.error;
      const code = err && typeof err.code === 'string' && RegExpPrototypeExec(CODE_RE, err.code) !== null ? err.code : 'E_CAPABILITY_DENIED';
      const message = err && typeof err.message === 'string' ? err.message : 'capability refused';
      p.reject(toolError(code, message));
    }
  },
});

function onLine(line) {
  if (line.length === 0) return;
  let msg;
  try {
    msg = JSONParse(line);
  } catch {
    return;
  }
  if (msg === null || typeof msg !== 'object' || msg.v !== 1 || typeof msg.type !== 'string') return;
  const h = handlers[msg.type];
  if (typeof h !== 'function') return;
  h(msg);
}

// Pieces of a line not yet terminated; each chunk is scanned once (a large cap-reply arrives in many chunks).
let pendingParts = [];
function onChunk(text) {
  let start = 0;
  let nl;
  while ((nl = StringPrototypeIndexOf(text, '\n', start)) !== -1) {
    let line = StringPrototypeSlice(text, start, nl);
    if (pendingParts.length > 0) {
      ArrayPrototypePush(pendingParts, line);
      line = ArrayPrototypeJoin(pendingParts, '');
      pendingParts = [];
    }
    onLine(line);
    start = nl + 1;
  }
  if (start < text.length) ArrayPrototypePush(pendingParts, StringPrototypeSlice(text, start));
}

const exitFn = isDeno ? FunctionPrototypeBind(G.Deno.exit, G.Deno) : FunctionPrototypeBind(proc.exit, proc);
if (isDeno) {
  const reader = denoStdin.readable.getReader();
  const read = uncurry(ReflectGetPrototypeOf(reader).read);
  (async () => {
    const dec = new TextDecoderCtor('utf-8');
    for (;;) {
      const { value, done } = await read(reader);
      if (done) break;
      onChunk(TextDecoderDecode(dec, value, { stream: true }));
    }
    exitFn(0);
  })();
} else {
  const stdin = proc.stdin;
  stdin.setEncoding('utf8');
  stdin.on('data', onChunk);
  stdin.on('end', () => exitFn(0));
}

const version = isDeno ? `deno ${G.Deno.version.deno}` : `node ${proc.version}`;
send({ v: 1, type: 'ready', runtime: isDeno ? 'deno' : 'node', version });
