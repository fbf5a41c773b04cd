// Guest core: the sandbox side of protocol v1 (protocol/wire.ts); runs INSIDE every sandbox (untrusted side).
// The one implementation on every host, transport-free.
// Used by node/runner/sandbox-runner.cjs and sandbox-runner.mjs (Node and Deno subprocesses, NDJSON on stdio) and by
// browser/sandbox/worker-bootstrap.js (Blob worker, MessagePort). Every built-in it uses comes from commons.mjs,
// captured before tool code loads, so ordinary tampering by tool code cannot bend the bridge. It is not the security
// boundary: the host validates every message and the process / worker (plus the OS wrapper or the frame's CSP) is the
// isolation.
// Form: plain JavaScript, one import (the captured built-ins of ./commons.mjs, by name) and one export (the createGuest
// function declaration): the Node entry and the browser build put commons.mjs and this file into one classic script,
// the import and the `export` removed.
import {
  ArrayIsArray,
  ArrayPrototype,
  ArrayPrototypeJoin,
  ArrayPrototypePush,
  DateNow,
  ErrorCtor,
  ErrorPrototype,
  EventTargetPrototypeAddEventListener,
  getAbortController,
  getAbortSignal,
  getHeaders,
  getRequest,
  getResponse,
  globalObject,
  JSONParse,
  JSONStringify,
  MapCtor,
  MapPrototypeDelete,
  MapPrototypeGet,
  MapPrototypeHas,
  MapPrototypeSet,
  MathMin,
  NumberCtor,
  NumberIsFinite,
  ObjectCreate,
  ObjectFreeze,
  ObjectPrototype,
  PromiseCtor,
  PromiseReject,
  ReflectApply,
  ReflectDefineProperty,
  ReflectDeleteProperty,
  ReflectGetOwnPropertyDescriptor,
  ReflectGetPrototypeOf,
  ReflectOwnKeys,
  ReflectSetPrototypeOf,
  RegExpPrototypeExec,
  SetCtor,
  SetPrototypeAdd,
  SetPrototypeDelete,
  SetPrototypeHas,
  StringCtor,
  StringFromCharCode,
  StringPrototypeCharCodeAt,
  StringPrototypeEndsWith,
  StringPrototypeIndexOf,
  StringPrototypeSlice,
  StringPrototypeSplit,
  StringPrototypeStartsWith,
  TypedArrayPrototypeGetLength,
  TypedArrayPrototypeSubarray,
  TypeErrorCtor,
  TypeErrorPrototype,
  Uint8ArrayCtor,
  URLCtor,
  URLPrototypeGetPassword,
  URLPrototypeGetUsername,
  atobFn,
  btoaFn,
  uncurryGetter,
  uncurryThis,
} from './commons.mjs';

/**
 * Install the sandbox side: console -> log messages, the mediated `fetch` (global and ctx.fetch), network globals
 * removed, and the message handler for `load`, `call` and `cap-reply`.
 * @param {object} host engine hooks:
 *   - `send(msg)`: deliver one sandbox->host message (a null-prototype object of JSON data);
 *   - `importSource(source)`: evaluate tool JavaScript as an ES module, resolve to its namespace;
 *   - `isProxy(v)` (optional): Proxy detection without running traps (Node's util.types.isProxy, Deno's core op);
 *   - `loadRuntime(runtime, source)` (optional): load a non-JavaScript tool (Python in the browser); resolves to the
 *     tool function `(args, ctx) => result`, or undefined when the runtime is not supported here;
 *   - `fromGuest(v)` (optional): convert a value passed to a ctx.* method to JSON data first (Pyodide proxies);
 *   - `removeGlobals` (optional): names removed from the global object and its prototypes in addition to the
 *     network and worker constructors;
 *   - `eagerFetchClasses` (optional): capture Request/Response/Headers prototype methods now rather than on the
 *     first fetch (where loading them costs nothing: Deno's snapshot, browsers).
 *   - `onBusy(busy)` (optional): told `true` when tool code starts running on the host's behalf (the module loading,
 *     the first call in flight) and `false` when the last such work ended: an adapter keeps its periodic checks to
 *     those times, so an idle sandbox wakes for nothing.
 * @returns {{ handle(msg): void, feed(text): void, line(text): void, log(level, text): void, describe(v): string,
 *   toolError(code, message, Ctor?): Error,
 *   toWireError(e): object, mediatedFetch: Function, loadState: string }} `handle` takes one parsed host->sandbox
 *   message; unknown types are ignored (fail closed: nothing runs).
 */
export function createGuest(host) {
  'use strict';
  const G = globalObject;
  // AbortController / AbortSignal: Node defines them as lazy global getters that load a module on first access (about
  // 0.5-1 ms of a cold start); commons.mjs holds those getters, and the classes' methods are captured on first use (a
  // call's ctx.signal, a fetch with a signal), as for the fetch classes below. Plain values (browsers, Deno) now.
  let abortApi;
  function abortClasses() {
    if (abortApi !== undefined) return abortApi;
    const AbortControllerCtor = getAbortController();
    abortApi = nullProto({
      AbortControllerCtor,
      AbortControllerAbort: uncurryThis(AbortControllerCtor.prototype.abort),
      abortSignalGetter: ReflectGetOwnPropertyDescriptor(AbortControllerCtor.prototype, 'signal').get,
      AbortSignalAborted: uncurryGetter(getAbortSignal().prototype, 'aborted'),
    });
    return abortApi;
  }
  if (ReflectGetOwnPropertyDescriptor(G, 'AbortController')?.get === undefined) abortClasses();
  const hostSend = host.send;
  const isProxy = typeof host.isProxy === 'function' ? host.isProxy : () => false;
  const fromGuest = typeof host.fromGuest === 'function' ? host.fromGuest : (v) => v;
  const MAX_DEPTH = 256;
  const LOG_TEXT_MAX = 8000;
  const LOG_PER_SECOND = 200;
  function nullProto(o) {
    ReflectSetPrototypeOf(o, null);
    return o;
  }
  function send(msg) {
    hostSend(nullProto(msg));
  }

  // ---- fetch classes ----------------------------------------------------------------------------------
  // Node (undici, ~20 ms) and Deno 2 (~7-10 ms) load them on first access of a lazy global getter. The getters are the
  // engine's own closures, captured by commons.mjs, so tool code cannot substitute the classes; their prototype
  // methods are captured on first use (tool code that patches them before its first fetch only fools its own
  // requests; the host validates every request anyway). Where they are plain values (browsers) they are captured now
  // (eagerFetchClasses).

  let web;
  function webClasses() {
    if (web !== undefined) return web;
    const RequestCtor = getRequest();
    const HeadersCtor = getHeaders();
    const rp = RequestCtor.prototype;
    web = nullProto({
      RequestCtor,
      ResponseCtor: getResponse(),
      HeadersCtor,
      RequestUrl: uncurryGetter(rp, 'url'),
      RequestMethod: uncurryGetter(rp, 'method'),
      RequestHeaders: uncurryGetter(rp, 'headers'),
      RequestSignal: uncurryGetter(rp, 'signal'),
      RequestArrayBuffer: uncurryThis(rp.arrayBuffer),
      HeadersForEach: uncurryThis(HeadersCtor.prototype.forEach),
    });
    return web;
  }

  if (host.eagerFetchClasses === true) webClasses();

  // ---- console -> log messages (rate and size capped) ---------------------------------------------------
  let logWindow = 0;
  let logCount = 0;
  let logDropped = 0;
  /** Say how many log messages the rate limit dropped since the last notice (none: nothing sent). */
  function reportDropped() {
    if (logDropped === 0) return;
    const n = logDropped;
    logDropped = 0;
    logCount++;
    send({ v: 1, type: 'log', level: 'warn', text: `[${n} log messages dropped: rate limit]` });
  }
  function log(level, text) {
    const now = DateNow();
    if (now - logWindow >= 1000) {
      logWindow = now;
      logCount = 0;
      reportDropped();
    }
    if (logCount >= LOG_PER_SECOND) {
      logDropped++;
      return;
    }
    logCount++;
    if (text.length > LOG_TEXT_MAX) text = StringPrototypeSlice(text, 0, LOG_TEXT_MAX) + '...[truncated]';
    send({ v: 1, type: 'log', level, text });
  }
  function describe(v) {
    try {
      if (typeof v === 'string') return v;
      if (typeof v === 'object' && v !== null) {
        if (v instanceof ErrorCtor) {
          let text = `${safeString(v.name)}: ${safeString(v.message)}`;
          const frames = toolFrames(v);
          for (let i = 0; frames !== undefined && i < frames.length; i++) {
            const f = frames[i];
            text += `\n    at ${f.fn !== undefined ? `${f.fn} (${TOOL_URL}:${f.line}:${f.column})` : `${TOOL_URL}:${f.line}:${f.column}`}`;
          }
          return text;
        }
        const s = JSONStringify(v);
        return typeof s === 'string' ? s : StringCtor(v);
      }
      return StringCtor(v);
    } catch {
      return '[unprintable]';
    }
  }
  function safeString(v) {
    try {
      return typeof v === 'string' ? v : StringCtor(v);
    } catch {
      return '[unprintable]';
    }
  }

  // ---- errors ---------------------------------------------------------------------------------------------
  const CODE_RE = /^E_[A-Z0-9_]{1,60}$/;
  // The tool's module is loaded with this sourceURL (core/exec/stack.ts TOOL_MODULE_URL), so its frames are told from
  // the host's. Deno prints the data: URL instead, shortened in the middle; its tail still ends with the comment.
  const TOOL_URL = 'tysandbox:///tool.js';
  const TOOL_URL_TAIL = '%2F%2F%2Ftool.js';
  const FRAME_RE = /^\s*at (?:(.{1,200}?) \()?(.{1,100000}?):(\d{1,9}):(\d{1,9})\)?$/;
  const FRAME_FN_RE = /^[\w$.<>\][ -]{1,128}$/;
  /**
   * The frames of an error's stack that are the tool's own code, `{fn?, line, column}` (at most 32); never the host's.
   */
  function toolFrames(e) {
    let st;
    try {
      st = e.stack;
    } catch {
      return undefined;
    }
    if (typeof st !== 'string') return undefined;
    const out = [];
    const lines = StringPrototypeSplit(StringPrototypeSlice(st, 0, 200000), '\n');
    for (let i = 0; i < lines.length && out.length < 32; i++) {
      const m = RegExpPrototypeExec(FRAME_RE, lines[i]);
      if (m === null) continue;
      const url = m[2];
      if (url !== TOOL_URL && !(StringPrototypeStartsWith(url, 'data:') && StringPrototypeEndsWith(url, TOOL_URL_TAIL)))
        continue;
      const f = nullProto({ line: NumberCtor(m[3]), column: NumberCtor(m[4]) });
      if (m[1] !== undefined && RegExpPrototypeExec(FRAME_FN_RE, m[1]) !== null) f.fn = m[1];
      ArrayPrototypePush(out, f);
    }
    return out.length > 0 ? out : undefined;
  }
  /**
   * An Error for tool code: own `message`, `code` and a `stack` without any frame or path. Built from the captured
   * prototype rather than the constructor, so no guest `Error.prepareStackTrace` hook ever runs inside the bridge
   * (Node formats stacks eagerly at construction).
   */
  function toolError(code, message, Ctor = ErrorCtor) {
    const isType = Ctor === TypeErrorCtor;
    const e = ObjectCreate(isType ? TypeErrorPrototype : ErrorPrototype);
    ReflectDefineProperty(e, 'message', { value: message, configurable: true, writable: true });
    ReflectDefineProperty(e, 'code', { value: code, enumerable: true, configurable: true, writable: true });
    ReflectDefineProperty(e, 'stack', {
      value: `${isType ? 'TypeError' : 'Error'}: ${message}`,
      configurable: true,
      writable: true,
    });
    return e;
  }
  /**
   * Rebuild anything thrown as a plain wire error `{code, message, data: {name, code?}}`; hostile values never escape.
   */
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
    if ((typeof e === 'object' && e !== null) || typeof e === 'function') {
      const frames = toolFrames(e);
      if (frames !== undefined) data.frames = frames;
    }
    return nullProto({
      code: 'E_TOOL_FAILED',
      message: StringPrototypeSlice(message === '' ? name : `${name}: ${message}`, 0, 4000),
      data,
    });
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
    if (SetPrototypeHas(stack, value)) notData(path, 'a cycle');
    if (depth > MAX_DEPTH) notData(path, `nesting deeper than ${MAX_DEPTH}`);
    const proto = ReflectGetPrototypeOf(value);
    SetPrototypeAdd(stack, value);
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
          ReflectDefineProperty(out, i, {
            value: c === undefined ? null : c,
            enumerable: true,
            writable: true,
            configurable: true,
          });
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
        if (c !== undefined)
          ReflectDefineProperty(out, k, { value: c, enumerable: true, writable: true, configurable: true });
      }
      return out;
    } finally {
      SetPrototypeDelete(stack, value);
    }
  }
  function toJsonText(value) {
    const c = plainCopy(value, '$', new SetCtor(), 0);
    return JSONStringify(c === undefined ? null : c);
  }

  // ---- capabilities ---------------------------------------------------------------------------------------
  const pendingCaps = new MapCtor(); // cap id -> { resolve, reject }
  const activeCalls = new MapCtor(); // call id -> true while running
  let nextCapId = 1;
  let currentCall;

  /**
   * Send one capability request; resolves with the host's value. With `signal` (a tool's AbortSignal), an abort
   * rejects at once with an AbortError (code E_ABORTED) and sends `cap-cancel`, so the host aborts the request.
   */
  function capRequest(callId, name, params, signal) {
    if (callId === undefined || !MapPrototypeHas(activeCalls, callId)) {
      return PromiseReject(toolError('E_CAPABILITY_DENIED', `${name}: no tool call in progress`));
    }
    if (signal !== undefined && signalAborted(signal)) return PromiseReject(abortError());
    let copy;
    try {
      copy = plainCopy(params, 'params', new SetCtor(), 0);
    } catch (e) {
      return PromiseReject(e);
    }
    const id = nextCapId++;
    return new PromiseCtor((resolve, reject) => {
      MapPrototypeSet(pendingCaps, id, { resolve, reject });
      send({ v: 1, type: 'cap', id, callId, name, params: copy === undefined ? null : copy });
      if (signal !== undefined) {
        onAbort(signal, () => {
          if (!MapPrototypeHas(pendingCaps, id)) return;
          MapPrototypeDelete(pendingCaps, id);
          send({ v: 1, type: 'cap-cancel', id });
          reject(abortError());
        });
      }
    });
  }
  /** The error a tool sees when its own AbortSignal cancels a request: name AbortError, code E_ABORTED (no stack). */
  function abortError() {
    const e = toolError('E_ABORTED', 'The operation was aborted.');
    ReflectDefineProperty(e, 'name', { value: 'AbortError', configurable: true, writable: true });
    return e;
  }
  /**
   * True if `signal` is an aborted AbortSignal; false for anything else (a non-signal is ignored like a missing one).
   */
  function signalAborted(signal) {
    try {
      return abortClasses().AbortSignalAborted(signal);
    } catch {
      return false;
    }
  }
  function onAbort(signal, fn) {
    try {
      EventTargetPrototypeAddEventListener(signal, 'abort', fn, { once: true });
    } catch {
      /* not an AbortSignal */
    }
  }

  function bytesToBase64(bytes) {
    let s = '';
    const n = TypedArrayPrototypeGetLength(bytes);
    for (let i = 0; i < n; i += 0x8000)
      s += ReflectApply(StringFromCharCode, undefined, TypedArrayPrototypeSubarray(bytes, i, MathMin(i + 0x8000, n)));
    return btoaFn(s);
  }
  function base64ToBytes(b64) {
    const s = atobFn(b64);
    const out = new Uint8ArrayCtor(s.length);
    for (let i = 0; i < s.length; i++) out[i] = StringPrototypeCharCodeAt(s, i);
    return out;
  }
  const NULL_BODY_STATUS = nullProto({ 101: true, 103: true, 204: true, 205: true, 304: true });

  const INIT_KEYS = [
    'method',
    'headers',
    'body',
    'signal',
    'redirect',
    'credentials',
    'mode',
    'cache',
    'referrer',
    'referrerPolicy',
    'integrity',
    'keepalive',
    'priority',
    'duplex',
    'window',
  ];
  /**
   * A shallow copy of a fetch init through own data descriptors only: a Proxy (refused outright where the engine can
   * tell) or a getter fails here, in the sandbox, never later inside Request or on the host.
   */
  function copyInit(init) {
    if (init === undefined || init === null) return undefined;
    if (typeof init !== 'object' || isProxy(init))
      throw toolError('E_INVALID_ARGS', 'fetch: init must be a plain object', TypeErrorCtor);
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

  /**
   * The fetch input as a Request (kept) or its URL text (stringified once). A URL with user:password is refused
   * here with E_FETCH_CREDENTIALS, the same code the host's check gives (core/capabilities/fetch/mediated.ts), on every
   * engine
   * (WHATWG Request throws a plain TypeError for it in Node and browsers, Deno accepts it).
   */
  function requestTarget(input, RequestUrl) {
    let text;
    try {
      text = RequestUrl(input);
      return input;
    } catch {
      /* not a Request */
    }
    try {
      text = StringCtor(input);
    } catch (e) {
      throw toolError('E_INVALID_ARGS', `fetch: invalid request: ${toWireError(e).message}`, TypeErrorCtor);
    }
    let url;
    try {
      url = new URLCtor(text);
    } catch {
      return text; // relative or malformed: the Request constructor decides
    }
    if (URLPrototypeGetUsername(url) !== '' || URLPrototypeGetPassword(url) !== '') {
      throw toolError(
        'E_FETCH_CREDENTIALS',
        'URLs with credentials (user:password@) are refused; send credentials in a header',
        TypeErrorCtor,
      );
    }
    return text;
  }
  /** The one mediated fetch: global `fetch` and `ctx.fetch` are this same function (WHATWG fetch signature). */
  async function mediatedFetch(input, init) {
    const callId = currentCall;
    const {
      RequestCtor,
      ResponseCtor,
      HeadersCtor,
      RequestUrl,
      RequestMethod,
      RequestHeaders,
      RequestSignal,
      RequestArrayBuffer,
      HeadersForEach,
    } = webClasses();
    const initCopy = copyInit(init);
    const target = requestTarget(input, RequestUrl);
    let req;
    try {
      req = new RequestCtor(target, initCopy);
    } catch (e) {
      throw toolError('E_INVALID_ARGS', `fetch: invalid request: ${toWireError(e).message}`, TypeErrorCtor);
    }
    const headers = [];
    HeadersForEach(RequestHeaders(req), (v, k) => {
      ArrayPrototypePush(headers, nullProto([k, v]));
    });
    const method = RequestMethod(req);
    const params = nullProto({ url: RequestUrl(req), method, headers: nullProto(headers) });
    if (method !== 'GET' && method !== 'HEAD') {
      const buf = await RequestArrayBuffer(req);
      if (buf.byteLength > 0) params.body = bytesToBase64(new Uint8ArrayCtor(buf));
    }
    // The request's own signal follows init.signal or the input Request's signal (WHATWG fetch).
    const r = await capRequest(callId, 'fetch', params, RequestSignal(req));
    if (r === null || typeof r !== 'object' || typeof r.status !== 'number' || typeof r.body !== 'string') {
      throw toolError('E_FETCH_FAILED', 'fetch: malformed response from host');
    }
    const status = r.status;
    if (status < 200 || status > 599) throw toolError('E_FETCH_FAILED', `fetch: unsupported status ${status}`);
    const body = NULL_BODY_STATUS[status] ? null : base64ToBytes(r.body);
    const res = new ResponseCtor(body, {
      status,
      statusText: typeof r.statusText === 'string' ? r.statusText : '',
      headers: new HeadersCtor(r.headers),
    });
    ReflectDefineProperty(res, 'url', {
      value: typeof r.url === 'string' ? r.url : '',
      enumerable: true,
      configurable: true,
    });
    return res;
  }

  // ---- ctx.progress -> progress messages (the host coalesces them too; this spares the channel) ------------
  const PROGRESS_EVERY_MS = 50;
  const PROGRESS_TEXT_MAX = 200;
  /** Per call: when its last report left, and the latest one held back since (sent when the call ends). */
  const progressState = new MapCtor();
  function progressMessage(callId, fraction, message) {
    const msg = { v: 1, type: 'progress', callId, fraction: fraction === 0 ? 0 : fraction };
    if (typeof message === 'string') msg.message = StringPrototypeSlice(message, 0, PROGRESS_TEXT_MAX);
    return msg;
  }
  /**
   * ctx.progress(fraction, message?): the call `callId` is `fraction` (0..1) done. At most one message per 50 ms per
   * call leaves the sandbox; a report held back is replaced by the next one, and the last one held back is sent when
   * the call ends (before its result). After the call ended it does nothing.
   * @throws TypeError when fraction is not a number from 0 to 1 or message is neither a string nor undefined.
   */
  function reportProgress(callId, fraction, message) {
    if (typeof fraction !== 'number' || !(fraction >= 0 && fraction <= 1))
      throw new TypeErrorCtor('ctx.progress(fraction, message): fraction must be a number from 0 to 1');
    if (message !== undefined && message !== null && typeof message !== 'string')
      throw new TypeErrorCtor('ctx.progress(fraction, message): message must be a string');
    if (!MapPrototypeHas(activeCalls, callId)) return;
    const now = DateNow();
    let st = MapPrototypeGet(progressState, callId);
    if (st === undefined) MapPrototypeSet(progressState, callId, (st = nullProto({ at: -Infinity, held: undefined })));
    if (now - st.at < PROGRESS_EVERY_MS) {
      st.held = progressMessage(callId, fraction, message);
      return;
    }
    st.at = now;
    st.held = undefined;
    send(progressMessage(callId, fraction, message));
  }
  /** The call ended: send its last held-back report, and forget it. */
  function endProgress(callId) {
    const st = MapPrototypeGet(progressState, callId);
    if (st === undefined) return;
    MapPrototypeDelete(progressState, callId);
    if (st.held !== undefined) send(st.held);
  }

  /** The call's settings (host-sent JSON data) as a deeply frozen object; `{}` when the host sent none. */
  function frozenSettings(v, depth) {
    if (v === null || typeof v !== 'object' || depth > 64) return v;
    const keys = ReflectOwnKeys(v);
    for (let i = 0; i < keys.length; i++) frozenSettings(v[keys[i]], depth + 1);
    return ObjectFreeze(v);
  }
  /**
   * ctx for one call: every method is a capability request tied to that call's id; `signal` is created on first
   * access; `settings` is the tool revision's settings values for this call (frozen data, defaults applied).
   */
  function makeCtx(callId, getSignal, settings) {
    const req = (name, params) => {
      try {
        return capRequest(callId, name, params());
      } catch (e) {
        return PromiseReject(e);
      }
    };
    const ctx = {
      fetch: mediatedFetch,
      createSubtasksResult: (drafts) => req('createSubtasksResult', () => fromGuest(drafts)),
      resolveInvocation: (name) => req('resolveInvocation', () => ({ name: fromGuest(name) })),
      storage: ObjectFreeze({
        get: (key) => req('storage.get', () => ({ key: fromGuest(key) })),
        set: (key, value) => req('storage.set', () => ({ key: fromGuest(key), value: fromGuest(value) })),
        delete: (key) => req('storage.delete', () => ({ key: fromGuest(key) })),
        list: (prefix) =>
          req('storage.list', () => (prefix === undefined || prefix === null ? {} : { prefix: fromGuest(prefix) })),
      }),
      getSecret: (name) => req('getSecret', () => ({ name: fromGuest(name) })),
      progress: (fraction, message) => reportProgress(callId, fromGuest(fraction), fromGuest(message)),
      settings: frozenSettings(
        settings !== null && typeof settings === 'object' && !ArrayIsArray(settings) ? settings : {},
        0,
      ),
    };
    // Created on first access (an AbortController per call costs more than a small call).
    ReflectDefineProperty(ctx, 'signal', { get: getSignal, enumerable: true, configurable: false });
    return ObjectFreeze(ctx);
  }

  // ---- console --------------------------------------------------------------------------------------------
  const LEVELS = nullProto({
    debug: 'debug',
    trace: 'debug',
    log: 'info',
    info: 'info',
    dir: 'info',
    table: 'info',
    warn: 'warn',
    error: 'error',
    assert: 'error',
  });
  const consoleObj = G.console;
  const levelNames = ReflectOwnKeys(LEVELS);
  for (let k = 0; k < levelNames.length; k++) {
    const key = levelNames[k];
    const level = LEVELS[key];
    ReflectDefineProperty(consoleObj, key, {
      value: (...args) => {
        const parts = [];
        let i = 0;
        if (key === 'assert') {
          if (args[0]) return;
          ArrayPrototypePush(parts, 'Assertion failed');
          i = 1;
        }
        for (; i < args.length && parts.length < 64; i++) ArrayPrototypePush(parts, describe(args[i]));
        log(level, ArrayPrototypeJoin(parts, ' '));
      },
      configurable: true,
      writable: true,
    });
  }

  // ---- lock-down: network and worker constructors removed; `fetch` is the mediated one -----------------------
  // Removed from the global object and every prototype on its chain, so they cannot be recovered with
  // Object.getOwnPropertyDescriptor(WorkerGlobalScope.prototype, ...). Where a name cannot be deleted it is pinned
  // to undefined; where even that fails, the engine's permissions / the frame's CSP still deny it.
  const REMOVE = [
    'WebSocket',
    'WebSocketStream',
    'EventSource',
    'XMLHttpRequest',
    'WebTransport',
    'RTCPeerConnection',
    'Worker',
    'SharedWorker',
    'BroadcastChannel',
  ];
  const extra = ArrayIsArray(host.removeGlobals) ? host.removeGlobals : [];
  for (let i = 0; i < extra.length; i++) if (typeof extra[i] === 'string') ArrayPrototypePush(REMOVE, extra[i]);
  for (let o = G; o !== null && o !== ObjectPrototype; o = ReflectGetPrototypeOf(o)) {
    for (let i = 0; i < REMOVE.length; i++) {
      const name = REMOVE[i];
      if (ReflectGetOwnPropertyDescriptor(o, name) === undefined) continue;
      if (!ReflectDeleteProperty(o, name)) {
        try {
          ReflectDefineProperty(o, name, { value: undefined, configurable: false, writable: false });
        } catch {
          /* see above */
        }
      }
    }
  }
  ReflectDefineProperty(G, 'fetch', { value: mediatedFetch, configurable: true, writable: true, enumerable: true });

  // ---- message handling (null-prototype dispatch; unknown types fail closed) -----------------------------
  let toolFn;
  let loadState = 'none'; // none | loading | loaded | failed
  // Work in progress for the host (the module's load, calls in flight): the adapter is told when it starts and ends.
  let busyWith = 0;
  const onBusy = typeof host.onBusy === 'function' ? host.onBusy : undefined;
  const busy = () => {
    if (busyWith++ === 0 && onBusy) onBusy(true);
  };
  const idle = () => {
    if (--busyWith === 0 && onBusy) onBusy(false);
  };

  const handlers = nullProto({
    async load(msg) {
      if (loadState !== 'none' || typeof msg.source !== 'string') {
        send({
          v: 1,
          type: 'loaded',
          ok: false,
          error: { code: 'E_PROTOCOL', message: 'load refused: already loaded or no source' },
        });
        return;
      }
      loadState = 'loading';
      busy();
      try {
        let fn;
        if (msg.runtime === 'javascript') {
          const mod = await host.importSource(`${msg.source}\n//# sourceURL=${TOOL_URL}`);
          fn = mod.default;
          if (typeof fn !== 'function')
            throw toolError('E_TOOL_FAILED', 'the tool module has no default export function');
        } else {
          fn = typeof host.loadRuntime === 'function' ? await host.loadRuntime(msg.runtime, msg.source) : undefined;
          if (fn === undefined) {
            loadState = 'failed';
            send({
              v: 1,
              type: 'loaded',
              ok: false,
              error: {
                code: 'E_SANDBOX_FAILED',
                message: `this sandbox does not run ${safeString(msg.runtime)} tools`,
              },
            });
            return;
          }
        }
        toolFn = fn;
        loadState = 'loaded';
        reportDropped(); // drops of the module's top-level code
        send({ v: 1, type: 'loaded', ok: true });
      } catch (e) {
        loadState = 'failed';
        reportDropped();
        send({ v: 1, type: 'loaded', ok: false, error: toWireError(e) });
      } finally {
        idle();
      }
    },
    async call(msg) {
      const id = msg.id;
      if (typeof id !== 'number' || MapPrototypeHas(activeCalls, id)) return;
      if (loadState !== 'loaded') {
        send({ v: 1, type: 'result', id, ok: false, error: { code: 'E_TOOL_FAILED', message: 'tool not loaded' } });
        return;
      }
      let ac;
      let ended = false;
      const getSignal = () => {
        if (ac === undefined) {
          ac = new (abortClasses().AbortControllerCtor)();
          if (ended) abortClasses().AbortControllerAbort(ac);
        }
        return ReflectApply(abortClasses().abortSignalGetter, ac, []);
      };
      MapPrototypeSet(activeCalls, id, true);
      currentCall = id;
      busy();
      let out;
      try {
        const value = await ReflectApply(toolFn, undefined, [msg.args, makeCtx(id, getSignal, msg.settings)]);
        out = { v: 1, type: 'result', id, ok: true, json: toJsonText(value) };
      } catch (e) {
        out = { v: 1, type: 'result', id, ok: false, error: toWireError(e) };
      }
      endProgress(id);
      MapPrototypeDelete(activeCalls, id);
      if (currentCall === id) currentCall = undefined;
      ended = true;
      if (ac !== undefined) {
        try {
          abortClasses().AbortControllerAbort(ac);
        } catch {
          /* guest listeners threw: ignore */
        }
      }
      // drops inside the last window are told now, before the result, not by a later log call that may never come
      reportDropped();
      try {
        send(out);
      } finally {
        idle();
      }
    },
    'cap-reply'(msg) {
      const p = MapPrototypeGet(pendingCaps, msg.id);
      if (p === undefined) return; // unknown, or cancelled by the tool
      MapPrototypeDelete(pendingCaps, msg.id);
      if (msg.ok === true) p.resolve(msg.value);
      else {
        const err = msg.error;
        const code =
          err && typeof err.code === 'string' && RegExpPrototypeExec(CODE_RE, err.code) !== null
            ? err.code
            : 'E_CAPABILITY_DENIED';
        const message = err && typeof err.message === 'string' ? err.message : 'capability refused';
        p.reject(toolError(code, message));
      }
    },
  });

  /** Dispatch one parsed host->sandbox message; anything that is not a v1 message of a known type is ignored. */
  function handle(msg) {
    if (msg === null || typeof msg !== 'object' || msg.v !== 1 || typeof msg.type !== 'string') return;
    const h = handlers[msg.type];
    if (typeof h !== 'function') return;
    h(msg);
  }

  // NDJSON framing for the stdio adapters (Node, Deno): pieces of a line not yet terminated; each chunk is
  // scanned once (a large cap-reply arrives in many chunks). A line that is not JSON is ignored.
  let pendingParts = [];
  function onLine(line) {
    if (line.length === 0) return;
    let msg;
    try {
      msg = JSONParse(line);
    } catch {
      return;
    }
    handle(msg);
  }
  /**
   * Feed decoded text from a byte stream of newline-delimited JSON messages (`line(text)`: one whole line, without its
   * newline).
   */
  function feed(text) {
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

  /**
   * Tell the host which part of the running call runs now (`module`: a Python module's top-level code; `main`), so a
   * time limit reached names it (protocol/wire.ts PhaseMessageSchema). Nothing outside a call.
   */
  function phase(name) {
    if (currentCall !== undefined && MapPrototypeHas(activeCalls, currentCall))
      send({ v: 1, type: 'phase', id: currentCall, phase: name });
  }

  return ObjectFreeze({
    handle,
    feed,
    line: onLine,
    log,
    describe,
    toolError,
    toWireError,
    mediatedFetch,
    phase,
    get loadState() {
      return loadState;
    },
  });
}
