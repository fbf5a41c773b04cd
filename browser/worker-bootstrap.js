// Worker bootstrap: runs INSIDE the sandbox Blob worker (untrusted side, opaque origin); speaks protocol v1 (protocol/wire.ts) over the handed MessagePort.
// Embedded as text into the sandbox frame's srcdoc (browser/sandbox.ts) and started as a Blob worker. Self-contained,
// plain JavaScript on purpose. It mirrors node/runner/sandbox-runner.mjs message for message; only the transport
// (a MessagePort instead of NDJSON on stdio) and the network lock-down differ. Built-ins are captured before tool
// code loads (endo's commons.js / deno's primordials). It is not the security boundary: the host validates every
// message, and the frame's CSP plus the opaque origin hold the network and storage lines.
(() => {
  'use strict';
  // ---- primordials ---------------------------------------------------------------------------------
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
  const StringPrototypeCharCodeAt = uncurry(String.prototype.charCodeAt);
  const RegExpPrototypeExec = uncurry(RegExp.prototype.exec);
  const ArrayPrototypePush = uncurry(Array.prototype.push);
  const ArrayPrototypeJoin = uncurry(Array.prototype.join);
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
  const PromiseReject = Promise.reject.bind(Promise);
  const PromiseThen = uncurry(Promise.prototype.then);
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const DOMExceptionCtor = G.DOMException;
  const AbortControllerCtor = AbortController;
  const AbortControllerAbort = uncurry(AbortController.prototype.abort);
  const abortSignalGetter = ReflectGetOwnPropertyDescriptor(AbortController.prototype, 'signal').get;
  const EventTargetAddEventListener = uncurry(EventTarget.prototype.addEventListener);
  const Uint8ArrayCtor = Uint8Array;
  const TypedArrayPrototype = ReflectGetPrototypeOf(Uint8Array.prototype);
  const TypedArrayLength = uncurry(ReflectGetOwnPropertyDescriptor(TypedArrayPrototype, 'length').get);
  const TypedArraySubarray = uncurry(TypedArrayPrototype.subarray);
  const btoaFn = G.btoa;
  const atobFn = G.atob;
  const BlobCtor = G.Blob;
  const URLCreateObjectURL = URL.createObjectURL;
  const URLRevokeObjectURL = URL.revokeObjectURL;
  const RequestCtor = G.Request;
  const ResponseCtor = G.Response;
  const HeadersCtor = G.Headers;
  const RequestUrl = uncurry(ReflectGetOwnPropertyDescriptor(RequestCtor.prototype, 'url').get);
  const RequestMethod = uncurry(ReflectGetOwnPropertyDescriptor(RequestCtor.prototype, 'method').get);
  const RequestHeaders = uncurry(ReflectGetOwnPropertyDescriptor(RequestCtor.prototype, 'headers').get);
  const RequestArrayBuffer = uncurry(RequestCtor.prototype.arrayBuffer);
  const HeadersForEach = uncurry(HeadersCtor.prototype.forEach);
  const PortPostMessage = uncurry(MessagePort.prototype.postMessage);
  const PortStart = uncurry(MessagePort.prototype.start);
  const importModule = (url) => import(url);
  const MAX_DEPTH = 256;
  const LOG_TEXT_MAX = 8000;
  const LOG_PER_SECOND = 200;

  let port; // the MessagePort to the host, set once by the frame's first message
  function nullProto(o) {
    ReflectSetPrototypeOf(o, null);
    return o;
  }
  function send(msg) {
    if (port !== undefined) PortPostMessage(port, nullProto(msg));
  }

  // ---- console -> log messages (rate and size capped) ------------------------------------------------
  let logWindow = 0;
  let logCount = 0;
  function log(level, text) {
    const now = DateNow();
    if (now - logWindow >= 1000) { logWindow = now; logCount = 0; }
    if (logCount >= LOG_PER_SECOND) return;
    logCount++;
    if (text.length > LOG_TEXT_MAX) text = StringPrototypeSlice(text, 0, LOG_TEXT_MAX) + '...[truncated]';
    send({ v: 1, type: 'log', level, text });
  }
  function safeString(v) {
    try { return typeof v === 'string' ? v : StringCtor(v); } catch { return '[unprintable]'; }
  }
  function describe(v) {
    try {
      if (typeof v === 'object' && v !== null) {
        if (v instanceof ErrorCtor) return `${safeString(v.name)}: ${safeString(v.message)}`;
        const s = JSONStringify(v);
        return typeof s === 'string' ? s : safeString(v);
      }
      return safeString(v);
    } catch {
      return '[unprintable]';
    }
  }
  const LEVELS = nullProto({ debug: 'debug', trace: 'debug', log: 'info', info: 'info', dir: 'info', table: 'info', warn: 'warn', error: 'error' });
  for (const key of ReflectOwnKeys(LEVELS)) {
    const level = LEVELS[key];
    ReflectDefineProperty(G.console, key, {
      value: (...args) => {
        const parts = [];
        for (let i = 0; i < args.length && i < 64; i++) ArrayPrototypePush(parts, describe(args[i]));
        log(level, ArrayPrototypeJoin(parts, ' '));
      },
      configurable: true,
      writable: true,
    });
  }
  EventTargetAddEventListener(G, 'unhandledrejection', (ev) => { ev.preventDefault(); log('error', `unhandled rejection: ${describe(ev.reason)}`); });
  EventTargetAddEventListener(G, 'error', (ev) => { ev.preventDefault(); log('error', `uncaught exception: ${describe(ev.error)}`); });

  // ---- errors --------------------------------------------------------------------------------------
  const CODE_RE = /^E_[A-Z0-9_]{1,60}$/;
  function toolError(code, message, Ctor = ErrorCtor) {
    const e = new Ctor(message);
    ReflectDefineProperty(e, 'code', { value: code, enumerable: true, configurable: true, writable: true });
    ReflectDefineProperty(e, 'stack', { value: `${Ctor === TypeErrorCtor ? 'TypeError' : 'Error'}: ${message}`, configurable: true, writable: true });
    return e;
  }
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

  // ---- plain-data copy (results and capability params); traps and getters run only here ------------
  function notData(path, what) {
    throw toolError('E_TOOL_FAILED', `value is not JSON data: ${what} at ${path}`, TypeErrorCtor);
  }
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
    if (SetHas(stack, value)) notData(path, 'a cycle');
    if (depth > MAX_DEPTH) notData(path, `nesting deeper than ${MAX_DEPTH}`);
    const proto = ReflectGetPrototypeOf(value);
    SetAdd(stack, value);
    try {
      if (ArrayIsArray(value)) {
        if (proto !== ArrayPrototype && proto !== null) notData(path, 'an array subclass');
        const len = ReflectGetOwnPropertyDescriptor(value, 'length').value;
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

  // ---- capabilities --------------------------------------------------------------------------------
  const pendingCaps = new SafeMap();
  const activeCalls = new SafeMap();
  let nextCapId = 1;
  let currentCall;

  function capRequest(callId, name, params) {
    if (callId === undefined || !MapHas(activeCalls, callId)) return PromiseReject(toolError('E_CAPABILITY_DENIED', `${name}: no tool call in progress`));
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

  const INIT_KEYS = ['method', 'headers', 'body', 'signal', 'redirect', 'credentials', 'mode', 'cache', 'referrer', 'referrerPolicy',
    'integrity', 'keepalive', 'priority', 'duplex', 'window'];
  /** A shallow copy of a fetch init through own data descriptors only: a Proxy's traps or a getter fail here, in the sandbox. */
  function copyInit(init) {
    if (init === undefined || init === null) return undefined;
    if (typeof init !== 'object') throw toolError('E_INVALID_ARGS', 'fetch: init must be a plain object', TypeErrorCtor);
    try {
      const p = ReflectGetPrototypeOf(init);
      if (p !== ObjectPrototype && p !== null) throw 0;
      const out = ObjectCreate(null);
      const keys = ReflectOwnKeys(init);
      for (let i = 0; i < keys.length; i++) {
        const d = ReflectGetOwnPropertyDescriptor(init, keys[i]);
        if (d === undefined || !('value' in d)) throw 0;
        if (typeof keys[i] === 'string' && d.enumerable) out[keys[i]] = d.value;
      }
      // Every RequestInit member is read through its descriptor too, so a Proxy hiding keys from ownKeys still
      // has its traps run here (and fail here) rather than later inside Request.
      for (let i = 0; i < INIT_KEYS.length; i++) {
        const d = ReflectGetOwnPropertyDescriptor(init, INIT_KEYS[i]);
        if (d === undefined) continue;
        if (!('value' in d)) throw 0;
        out[INIT_KEYS[i]] = d.value;
      }
      return out;
    } catch {
      throw toolError('E_INVALID_ARGS', 'fetch: init must be a plain object with data properties', TypeErrorCtor);
    }
  }

  /** The one mediated fetch: global `fetch` and `ctx.fetch` are this same function (WHATWG fetch signature). */
  async function mediatedFetch(input, init) {
    const callId = currentCall;
    const initCopy = copyInit(init);
    let req;
    try {
      req = new RequestCtor(input, initCopy);
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
    const signal = initCopy && initCopy.signal;
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
      const abort = () => reject(DOMExceptionCtor ? new DOMExceptionCtor('The operation was aborted.', 'AbortError') : toolError('E_ABORTED', 'aborted'));
      try {
        if (signal.aborted) return abort();
        EventTargetAddEventListener(signal, 'abort', abort, { once: true });
      } catch {
        /* not an AbortSignal: ignored like a missing one */
      }
      PromiseThen(p, resolve, reject);
    });
  }
  /** Python values passed to ctx.* (dicts, lists) become JSON data through Python's json.dumps (None -> null); then validated as usual. */
  function fromPy(v) {
    if (py === undefined || v === null || (typeof v !== 'object' && typeof v !== 'function')) return v;
    try {
      if (v instanceof py.ffi.PyProxy) return JSONParse(pyHelpers[1](v));
    } catch (e) {
      throw toolError('E_INVALID_ARGS', `a Python value could not be converted to JSON data: ${toWireError(e).message}`, TypeErrorCtor);
    }
    return v;
  }
  function makeCtx(callId, signal) {
    const req = (name, params) => {
      try {
        return capRequest(callId, name, params());
      } catch (e) {
        return PromiseReject(e);
      }
    };
    return ObjectFreeze({
      fetch: mediatedFetch,
      createSubtasksResult: (drafts) => req('createSubtasksResult', () => fromPy(drafts)),
      resolveInvocation: (name) => req('resolveInvocation', () => ({ name: fromPy(name) })),
      storage: ObjectFreeze({
        get: (key) => req('storage.get', () => ({ key: fromPy(key) })),
        set: (key, value) => req('storage.set', () => ({ key: fromPy(key), value: fromPy(value) })),
        delete: (key) => req('storage.delete', () => ({ key: fromPy(key) })),
        list: (prefix) => req('storage.list', () => (prefix === undefined || prefix === null ? {} : { prefix: fromPy(prefix) })),
      }),
      getSecret: (name) => req('getSecret', () => ({ name: fromPy(name) })),
      signal,
    });
  }

  // ---- lock-down: network, storage and worker constructors removed; `fetch` is the mediated one -----
  // The frame's CSP (connect-src 'none', ...) and the opaque origin already make these fail; removing them
  // makes the failure immediate and uniform. Accessors on prototypes are removed too, so they cannot be
  // recovered with Object.getOwnPropertyDescriptor(WorkerGlobalScope.prototype, ...).
  const REMOVE = ['WebSocket', 'WebSocketStream', 'EventSource', 'XMLHttpRequest', 'WebTransport', 'Worker', 'SharedWorker',
    'BroadcastChannel', 'importScripts', 'indexedDB', 'caches', 'IDBFactory', 'CacheStorage', 'FileSystemHandle', 'Notification',
    'RTCPeerConnection', 'RTCDataChannel', 'ServiceWorker', 'ServiceWorkerContainer',
    // self.close() would end the worker silently; the host then only learns at the timeout.
    'close'];
  for (let o = G; o !== null; o = ReflectGetPrototypeOf(o)) {
    for (const name of REMOVE) {
      if (ReflectGetOwnPropertyDescriptor(o, name) === undefined) continue;
      if (!ReflectDeleteProperty(o, name)) {
        try { ReflectDefineProperty(o, name, { value: undefined, configurable: false, writable: false }); } catch { /* CSP and the opaque origin still hold */ }
      }
    }
    if (o === ObjectPrototype) break;
  }
  const nav = G.navigator;
  if (nav) {
    for (const name of ['storage', 'serviceWorker', 'locks', 'sendBeacon']) {
      for (let o = nav; o !== null && o !== ObjectPrototype; o = ReflectGetPrototypeOf(o)) {
        if (ReflectGetOwnPropertyDescriptor(o, name) !== undefined) ReflectDeleteProperty(o, name);
      }
    }
  }
  ReflectDefineProperty(G, 'fetch', { value: mediatedFetch, configurable: true, writable: true, enumerable: true });

  // ---- Python (Pyodide) ------------------------------------------------------------------------------
  // The host sends the verified Pyodide files once, before `load` (pre-protocol message on the same port).
  // They are turned into Blob URLs here; during start-up only, `fetch` serves exactly those files and nothing
  // else (the worker has no network at all); afterwards `fetch` is the mediated one again.
  const TextDecoderCtor = TextDecoder;
  const PY_BASE = 'https://pyodide.invalid/';
  let pyAssets;
  let pyRetain = false;
  let py;
  let pyNs;
  let pySource;
  let pyHelpers;
  const PY_HELPERS = `
import json as _json
def _ty_loads(text):
    return _json.loads(text)
def _ty_dumps(value):
    return _json.dumps(value, allow_nan=False, separators=(",", ":"))
(_ty_loads, _ty_dumps)
`;
  async function initPython() {
    const urls = [];
    const blobUrl = (name) => {
      const u = URLCreateObjectURL(new BlobCtor([pyAssets[name]], { type: 'text/javascript' }));
      ArrayPrototypePush(urls, u);
      return u;
    };
    const startupFetch = async (input) => {
      const url = typeof input === 'string' ? input : input instanceof RequestCtor ? RequestUrl(input) : StringCtor(input);
      if (StringPrototypeSlice(url, 0, PY_BASE.length) === PY_BASE) {
        const name = StringPrototypeSlice(url, PY_BASE.length);
        const bytes = pyAssets[name];
        if (bytes !== undefined) {
          const type = name === 'pyodide.asm.wasm' ? 'application/wasm' : 'application/octet-stream';
          return new ResponseCtor(bytes, { status: 200, headers: { 'content-type': type } });
        }
      }
      throw new TypeErrorCtor('no network in the sandbox');
    };
    ReflectDefineProperty(G, 'fetch', { value: startupFetch, configurable: true, writable: true, enumerable: true });
    try {
      const asm = await importModule(blobUrl('pyodide.asm.mjs'));
      const mod = await importModule(blobUrl('pyodide.mjs'));
      py = await mod.loadPyodide({
        indexURL: PY_BASE,
        stdLibURL: PY_BASE + 'python_stdlib.zip',
        createPyodideModule: asm.default,
        lockFileContents: new TextDecoderCtor().decode(pyAssets['pyodide-lock.json']),
        stdout: (t) => log('info', t),
        stderr: (t) => log('warn', t),
        env: { HOME: '/home/pyodide' },
        checkAPIVersion: true,
      });
    } finally {
      ReflectDefineProperty(G, 'fetch', { value: mediatedFetch, configurable: true, writable: true, enumerable: true });
      for (const u of urls) URLRevokeObjectURL(u);
    }
    const FS = py.FS;
    for (const dir of ['/tmp', '/home/pyodide']) {
      try { FS.mkdirTree(dir); } catch { /* exists */ }
      FS.mount(FS.filesystems.MEMFS, {}, dir);
    }
    pyHelpers = py.runPython(PY_HELPERS).toJs();
  }
  /** Fresh, empty /tmp and /home/pyodide (in-memory) for the next call. */
  function resetPythonFs() {
    const FS = py.FS;
    for (const dir of ['/tmp', '/home/pyodide']) {
      try { FS.unmount(dir); } catch { /* not mounted */ }
      FS.mount(FS.filesystems.MEMFS, {}, dir);
    }
    py.runPython('import os; os.chdir("/home/pyodide")');
  }
  /** Run the Python tool: `main(args, ctx)` (may be async) from a fresh namespace, or the retained one. */
  async function runPython(args, ctx) {
    let ns = pyNs;
    const fresh = ns === undefined;
    try {
      if (fresh) {
        ns = py.globals.get('dict')();
        ns.set('__name__', '__tool__');
        await py.runPythonAsync(pySource, { globals: ns });
        if (pyRetain) pyNs = ns;
      }
      const main = ns.get('main');
      if (typeof main !== 'function') throw toolError('E_TOOL_FAILED', 'the Python tool defines no function main(args, ctx)');
      const pyArgs = pyHelpers[0](JSONStringify(args === undefined ? null : args));
      let r = main(pyArgs, ctx);
      if (r !== null && typeof r === 'object' && typeof r.then === 'function') r = await r;
      const text = pyHelpers[1](r);
      return JSONParse(text);
    } finally {
      if (!pyRetain) {
        if (ns !== undefined) try { ns.destroy(); } catch { /* already gone */ }
        resetPythonFs();
      }
    }
  }

  // ---- message handling (null-prototype dispatch; unknown types fail closed) ------------------------
  let toolFn;
  let loadState = 'none';
  const handlers = nullProto({
    async load(msg) {
      if (loadState !== 'none' || typeof msg.source !== 'string') {
        send({ v: 1, type: 'loaded', ok: false, error: { code: 'E_PROTOCOL', message: 'load refused: already loaded or no source' } });
        return;
      }
      if (msg.runtime === 'python') {
        if (pyAssets === undefined) {
          loadState = 'failed';
          send({ v: 1, type: 'loaded', ok: false, error: { code: 'E_SANDBOX_UNAVAILABLE', message: 'the Python runtime files were not provided' } });
          return;
        }
        loadState = 'loading';
        try {
          await initPython();
          pySource = msg.source;
          toolFn = runPython;
          loadState = 'loaded';
          send({ v: 1, type: 'loaded', ok: true });
        } catch (e) {
          loadState = 'failed';
          send({ v: 1, type: 'loaded', ok: false, error: toWireError(e) });
        }
        return;
      }
      if (msg.runtime !== 'javascript') {
        loadState = 'failed';
        send({ v: 1, type: 'loaded', ok: false, error: { code: 'E_SANDBOX_FAILED', message: 'unknown runtime' } });
        return;
      }
      loadState = 'loading';
      let url;
      try {
        url = URLCreateObjectURL(new BlobCtor([msg.source], { type: 'text/javascript' }));
        const mod = await importModule(url);
        const fn = mod.default;
        if (typeof fn !== 'function') throw toolError('E_TOOL_FAILED', 'the tool module has no default export function');
        toolFn = fn;
        loadState = 'loaded';
        send({ v: 1, type: 'loaded', ok: true });
      } catch (e) {
        loadState = 'failed';
        send({ v: 1, type: 'loaded', ok: false, error: toWireError(e) });
      } finally {
        if (url !== undefined) URLRevokeObjectURL(url);
      }
    },
    async call(msg) {
      const id = msg.id;
      if (typeof id !== 'number' || MapHas(activeCalls, id)) return;
      if (loadState !== 'loaded') {
        send({ v: 1, type: 'result', id, ok: false, error: { code: 'E_TOOL_FAILED', message: 'tool not loaded' } });
        return;
      }
      const ac = new AbortControllerCtor();
      MapSet(activeCalls, id, ac);
      currentCall = id;
      let out;
      try {
        const value = await ReflectApply(toolFn, undefined, [msg.args, makeCtx(id, ReflectApply(abortSignalGetter, ac, []))]);
        out = { v: 1, type: 'result', id, ok: true, json: toJsonText(value) };
      } catch (e) {
        out = { v: 1, type: 'result', id, ok: false, error: toWireError(e) };
      }
      MapDelete(activeCalls, id);
      if (currentCall === id) currentCall = undefined;
      try { AbortControllerAbort(ac); } catch { /* guest listeners threw */ }
      send(out);
    },
    'cap-reply'(msg) {
      const p = MapGet(pendingCaps, msg.id);
      if (p === undefined) return;
      MapDelete(pendingCaps, msg.id);
      if (msg.ok === true) p.resolve(msg.value);
      else {
        const err = msg.error;
        const code = err && typeof err.code === 'string' && RegExpPrototypeExec(CODE_RE, err.code) !== null ? err.code : 'E_CAPABILITY_DENIED';
        p.reject(toolError(code, err && typeof err.message === 'string' ? err.message : 'capability refused'));
      }
    },
  });
  function onPortMessage(ev) {
    const msg = ev.data;
    if (msg !== null && typeof msg === 'object' && msg.tysandbox === 'python-assets' && loadState === 'none' && pyAssets === undefined) {
      const files = msg.files;
      if (files !== null && typeof files === 'object') {
        pyAssets = ObjectCreate(null);
        for (const k of ReflectOwnKeys(files)) if (typeof k === 'string') pyAssets[k] = files[k];
        pyRetain = msg.retainState === true;
      }
      return;
    }
    if (msg === null || typeof msg !== 'object' || msg.v !== 1 || typeof msg.type !== 'string') return;
    const h = handlers[msg.type];
    if (typeof h === 'function') h(msg);
  }

  // ---- handshake: the frame hands over exactly one port, once ----------------------------------------
  const onFirst = (ev) => {
    if (port !== undefined) return;
    const p = ev.ports && ev.ports[0];
    if (!p) return;
    port = p;
    G.removeEventListener('message', onFirst);
    port.onmessage = onPortMessage;
    PortStart(port);
    send({ v: 1, type: 'ready', runtime: 'browser-worker', version: StringPrototypeSlice(safeString(nav && nav.userAgent), 0, 64) });
  };
  G.addEventListener('message', onFirst);
})();
