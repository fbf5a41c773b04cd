// Web events for engines without them (QuickJS): DOMException, Event, EventTarget, AbortController, AbortSignal; runs
// INSIDE the sandbox (untrusted side), before tool code, next to core/guest/core.mjs.
// Constraints: plain JavaScript, no imports, one export (the installer; core/quickjs/guest-script.ts strips it and
// concatenates the guest files into one script). Behaviour follows the DOM Standard (§2 Events, §3 Aborting ongoing
// activities) and WebIDL §2.8.1 (DOMException) as Node implements them, so tool code sees what it sees on the node
// engine. Nothing here reaches the host: it is the tool's own realm.

/**
 * Define DOMException, Event, CustomEvent, EventTarget, AbortController and AbortSignal on `G` (writable,
 * configurable, non-enumerable, as Web IDL globals are).
 * @param {object} G the global object
 * @param {{ setTimer(fn: Function, ms: number): void, reportError(e: unknown): void, now(): number }} env timers for
 *   AbortSignal.timeout (not keeping the sandbox busy), where a listener's exception goes (logged as an uncaught
 *   exception), and a monotonic clock in ms (Event.timeStamp).
 */
export function installEvents(G, env) {
  'use strict';
  const ReflectApply = Reflect.apply;
  const ObjectDefineProperty = Object.defineProperty;
  const ArrayPrototypeSlice = Array.prototype.slice;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const WeakMapCtor = WeakMap;
  const WM = { get: WeakMap.prototype.get, set: WeakMap.prototype.set, has: WeakMap.prototype.has };
  const wmGet = (m, k) => ReflectApply(WM.get, m, [k]);
  const wmSet = (m, k, v) => ReflectApply(WM.set, m, [k, v]);
  const wmHas = (m, k) => ReflectApply(WM.has, m, [k]);
  const define = (o, name, value) =>
    ObjectDefineProperty(o, name, { value, writable: true, configurable: true, enumerable: false });
  /** A TypeError with Node's `code` property (node's internal/errors shape). */
  function nodeTypeError(message, code) {
    const e = new TypeErrorCtor(message);
    ObjectDefineProperty(e, 'code', { value: code, writable: true, configurable: true, enumerable: false });
    return e;
  }

  // ---- DOMException (WebIDL §2.8.1) ------------------------------------------------------------------------
  const LEGACY_CODES = {
    IndexSizeError: 1,
    HierarchyRequestError: 3,
    WrongDocumentError: 4,
    InvalidCharacterError: 5,
    NoModificationAllowedError: 7,
    NotFoundError: 8,
    NotSupportedError: 9,
    InvalidStateError: 11,
    SyntaxError: 12,
    InvalidModificationError: 13,
    NamespaceError: 14,
    InvalidAccessError: 15,
    TypeMismatchError: 17,
    SecurityError: 18,
    NetworkError: 19,
    AbortError: 20,
    URLMismatchError: 21,
    QuotaExceededError: 22,
    TimeoutError: 23,
    InvalidNodeTypeError: 24,
    DataCloneError: 25,
  };
  const domState = new WeakMapCtor();
  class DOMException extends ErrorCtor {
    constructor(message = '', options = 'Error') {
      super();
      let name = 'Error';
      if (options !== null && typeof options === 'object') {
        if ('name' in options) name = `${options.name}`;
        if ('cause' in options) define(this, 'cause', options.cause);
      } else name = `${options}`;
      wmSet(domState, this, { name, message: `${message}` });
      // Error's own `message` property is replaced by the accessor on the prototype (as in Node).
      delete this.message;
      const stack = this.stack;
      if (typeof stack === 'string') define(this, 'stack', `${name}: ${message}\n${stack}`);
    }
    get name() {
      return wmHas(domState, this) ? wmGet(domState, this).name : undefined;
    }
    get message() {
      return wmHas(domState, this) ? wmGet(domState, this).message : undefined;
    }
    get code() {
      if (!wmHas(domState, this)) return undefined;
      return LEGACY_CODES[wmGet(domState, this).name] ?? 0;
    }
    get [Symbol.toStringTag]() {
      return 'DOMException';
    }
  }
  const CONSTANT_NAMES = [
    ['INDEX_SIZE_ERR', 1],
    ['DOMSTRING_SIZE_ERR', 2],
    ['HIERARCHY_REQUEST_ERR', 3],
    ['WRONG_DOCUMENT_ERR', 4],
    ['INVALID_CHARACTER_ERR', 5],
    ['NO_DATA_ALLOWED_ERR', 6],
    ['NO_MODIFICATION_ALLOWED_ERR', 7],
    ['NOT_FOUND_ERR', 8],
    ['NOT_SUPPORTED_ERR', 9],
    ['INUSE_ATTRIBUTE_ERR', 10],
    ['INVALID_STATE_ERR', 11],
    ['SYNTAX_ERR', 12],
    ['INVALID_MODIFICATION_ERR', 13],
    ['NAMESPACE_ERR', 14],
    ['INVALID_ACCESS_ERR', 15],
    ['VALIDATION_ERR', 16],
    ['TYPE_MISMATCH_ERR', 17],
    ['SECURITY_ERR', 18],
    ['NETWORK_ERR', 19],
    ['ABORT_ERR', 20],
    ['URL_MISMATCH_ERR', 21],
    ['QUOTA_EXCEEDED_ERR', 22],
    ['TIMEOUT_ERR', 23],
    ['INVALID_NODE_TYPE_ERR', 24],
    ['DATA_CLONE_ERR', 25],
  ];
  for (const [k, v] of CONSTANT_NAMES) {
    ObjectDefineProperty(DOMException, k, { value: v, enumerable: true });
    ObjectDefineProperty(DOMException.prototype, k, { value: v, enumerable: true });
  }

  // ---- Event (DOM §2.2) ---------------------------------------------------------------------------------------
  const eventState = new WeakMapCtor();
  const ev = (e) => {
    const s = wmGet(eventState, e);
    if (s === undefined) throw new TypeErrorCtor('Illegal invocation');
    return s;
  };
  class Event {
    constructor(type, init = undefined) {
      // biome-ignore lint/complexity/noArguments: Web IDL tells a missing argument from undefined
      if (arguments.length === 0) throw nodeTypeError('The "type" argument must be specified', 'ERR_MISSING_ARGS');
      if (init !== undefined && init !== null && typeof init !== 'object')
        throw nodeTypeError('The "options" argument must be of type object.', 'ERR_INVALID_ARG_TYPE');
      wmSet(eventState, this, {
        type: `${type}`,
        bubbles: !!init?.bubbles,
        cancelable: !!init?.cancelable,
        composed: !!init?.composed,
        defaultPrevented: false,
        stop: false,
        stopImmediate: false,
        target: null,
        currentTarget: null,
        dispatching: false,
        passive: false,
        timeStamp: env.now(),
      });
    }
    get type() {
      return ev(this).type;
    }
    get bubbles() {
      return ev(this).bubbles;
    }
    get cancelable() {
      return ev(this).cancelable;
    }
    get composed() {
      return ev(this).composed;
    }
    get defaultPrevented() {
      const s = ev(this);
      return s.cancelable && s.defaultPrevented;
    }
    get returnValue() {
      return !this.defaultPrevented;
    }
    get isTrusted() {
      return false;
    }
    get timeStamp() {
      return ev(this).timeStamp;
    }
    get target() {
      return ev(this).target;
    }
    get currentTarget() {
      return ev(this).currentTarget;
    }
    get srcElement() {
      return ev(this).target;
    }
    get eventPhase() {
      return ev(this).dispatching ? 2 : 0;
    }
    get cancelBubble() {
      return ev(this).stop;
    }
    set cancelBubble(v) {
      if (v) ev(this).stop = true;
    }
    composedPath() {
      const s = ev(this);
      return s.dispatching && s.currentTarget !== null ? [s.currentTarget] : [];
    }
    preventDefault() {
      const s = ev(this);
      if (!s.passive) s.defaultPrevented = true;
    }
    stopPropagation() {
      ev(this).stop = true;
    }
    stopImmediatePropagation() {
      const s = ev(this);
      s.stop = true;
      s.stopImmediate = true;
    }
    get [Symbol.toStringTag]() {
      return 'Event';
    }
  }
  for (const [k, v] of [
    ['NONE', 0],
    ['CAPTURING_PHASE', 1],
    ['AT_TARGET', 2],
    ['BUBBLING_PHASE', 3],
  ]) {
    ObjectDefineProperty(Event, k, { value: v, enumerable: true });
    ObjectDefineProperty(Event.prototype, k, { value: v, enumerable: true });
  }
  const customDetail = new WeakMapCtor();
  class CustomEvent extends Event {
    constructor(type, init = undefined) {
      // biome-ignore lint/complexity/noArguments: Web IDL tells a missing argument from undefined
      if (arguments.length === 0) throw nodeTypeError('The "type" argument must be specified', 'ERR_MISSING_ARGS');
      super(type, init);
      wmSet(customDetail, this, init?.detail ?? null);
    }
    get detail() {
      return wmGet(customDetail, this);
    }
  }

  // ---- EventTarget (DOM §2.7) ---------------------------------------------------------------------------------
  const listenersOf = new WeakMapCtor(); // target -> Map(type -> [{ callback, capture, once, passive, removed }])
  function flatten(options) {
    if (typeof options === 'boolean') return { capture: options, once: false, passive: false, signal: undefined };
    if (options === null || typeof options !== 'object')
      return { capture: false, once: false, passive: false, signal: undefined };
    return { capture: !!options.capture, once: !!options.once, passive: !!options.passive, signal: options.signal };
  }
  function table(target) {
    let t = wmGet(listenersOf, target);
    if (t === undefined) {
      t = new Map();
      wmSet(listenersOf, target, t);
    }
    return t;
  }
  class EventTarget {
    constructor() {
      table(this);
    }
    addEventListener(type, callback, options = undefined) {
      // biome-ignore lint/complexity/noArguments: Web IDL tells a missing argument from undefined
      if (arguments.length < 2)
        throw nodeTypeError('The "type" and "listener" arguments must be specified', 'ERR_MISSING_ARGS');
      if (callback === null || callback === undefined) return;
      const o = flatten(options);
      if (o.signal !== undefined && signalState(o.signal, false)?.aborted) return;
      const t = table(this);
      const key = `${type}`;
      let list = t.get(key);
      if (list === undefined) t.set(key, (list = []));
      for (const l of list) if (l.callback === callback && l.capture === o.capture) return;
      const entry = { callback, capture: o.capture, once: o.once, passive: o.passive, removed: false };
      list.push(entry);
      if (o.signal !== undefined)
        addAbortAlgorithm(o.signal, () => this.removeEventListener(key, callback, { capture: o.capture }));
    }
    removeEventListener(type, callback, options = undefined) {
      const capture = typeof options === 'boolean' ? options : !!options?.capture;
      const list = table(this).get(`${type}`);
      if (list === undefined) return;
      for (let i = 0; i < list.length; i++) {
        const l = list[i];
        if (l.callback === callback && l.capture === capture) {
          l.removed = true;
          list.splice(i, 1);
          return;
        }
      }
    }
    dispatchEvent(event) {
      const s = wmGet(eventState, event);
      if (s === undefined)
        throw nodeTypeError('The "event" argument must be an instance of Event.', 'ERR_INVALID_ARG_TYPE');
      if (s.dispatching) throw new DOMException('The event is already being dispatched', 'InvalidStateError');
      s.dispatching = true;
      s.target = this;
      s.currentTarget = this;
      const list = table(this).get(s.type);
      if (list !== undefined) {
        for (const l of ReflectApply(ArrayPrototypeSlice, list, [])) {
          if (l.removed) continue;
          if (l.once) this.removeEventListener(s.type, l.callback, { capture: l.capture });
          s.passive = l.passive;
          try {
            const cb = l.callback;
            if (typeof cb === 'function') ReflectApply(cb, this, [event]);
            else if (cb !== null && typeof cb === 'object' && typeof cb.handleEvent === 'function')
              ReflectApply(cb.handleEvent, cb, [event]);
          } catch (e) {
            env.reportError(e);
          }
          s.passive = false;
          if (s.stopImmediate) break;
        }
      }
      s.dispatching = false;
      s.currentTarget = null;
      return !(s.cancelable && s.defaultPrevented);
    }
    get [Symbol.toStringTag]() {
      return 'EventTarget';
    }
  }

  // ---- AbortSignal and AbortController (DOM §3.1, §3.2) ----------------------------------------------------------
  const signals = new WeakMapCtor(); // signal -> { aborted, reason, algorithms, handler }
  let constructing = false;
  function signalState(signal, required = true) {
    const s = signal !== null && typeof signal === 'object' ? wmGet(signals, signal) : undefined;
    if (s === undefined && required)
      throw nodeTypeError('The "signal" argument must be an instance of AbortSignal.', 'ERR_INVALID_ARG_TYPE');
    return s;
  }
  function addAbortAlgorithm(signal, fn) {
    const s = signalState(signal, false);
    if (s !== undefined && !s.aborted) s.algorithms.push(fn);
  }
  function newSignal() {
    constructing = true;
    try {
      return new AbortSignal();
    } finally {
      constructing = false;
    }
  }
  function signalAbort(signal, reason) {
    const s = wmGet(signals, signal);
    if (s.aborted) return;
    s.aborted = true;
    s.reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
    const algorithms = s.algorithms;
    s.algorithms = [];
    for (const fn of algorithms) {
      try {
        fn();
      } catch (e) {
        env.reportError(e);
      }
    }
    signal.dispatchEvent(new Event('abort'));
  }
  class AbortSignal extends EventTarget {
    constructor() {
      if (!constructing) throw nodeTypeError('Illegal constructor', 'ERR_ILLEGAL_CONSTRUCTOR');
      super();
      wmSet(signals, this, { aborted: false, reason: undefined, algorithms: [], handler: null });
    }
    get aborted() {
      return signalState(this).aborted;
    }
    get reason() {
      return signalState(this).reason;
    }
    throwIfAborted() {
      const s = signalState(this);
      if (s.aborted) throw s.reason;
    }
    get onabort() {
      return signalState(this).handler;
    }
    set onabort(fn) {
      const s = signalState(this);
      if (s.handler !== null) this.removeEventListener('abort', s.handler);
      s.handler = typeof fn === 'function' ? fn : null;
      if (s.handler !== null) this.addEventListener('abort', s.handler);
    }
    static abort(reason = undefined) {
      const signal = newSignal();
      signalAbort(signal, reason);
      return signal;
    }
    static timeout(ms) {
      const n = Number(ms);
      if (!(n >= 0 && n <= Number.MAX_SAFE_INTEGER))
        throw nodeTypeError(`The "delay" argument must be >= 0 and <= ${Number.MAX_SAFE_INTEGER}.`, 'ERR_OUT_OF_RANGE');
      const signal = newSignal();
      env.setTimer(
        () => signalAbort(signal, new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
        n,
      );
      return signal;
    }
    static any(list) {
      const signal = newSignal();
      const sources = [];
      for (const x of list) sources.push(x);
      for (const x of sources) {
        const s = signalState(x);
        if (s.aborted) {
          signalAbort(signal, s.reason);
          return signal;
        }
      }
      for (const x of sources) addAbortAlgorithm(x, () => signalAbort(signal, signalState(x).reason));
      return signal;
    }
    get [Symbol.toStringTag]() {
      return 'AbortSignal';
    }
  }
  const controllers = new WeakMapCtor();
  class AbortController {
    constructor() {
      wmSet(controllers, this, newSignal());
    }
    get signal() {
      const s = wmGet(controllers, this);
      if (s === undefined) throw new TypeErrorCtor('Illegal invocation');
      return s;
    }
    abort(reason = undefined) {
      signalAbort(this.signal, reason);
    }
    get [Symbol.toStringTag]() {
      return 'AbortController';
    }
  }

  define(G, 'DOMException', DOMException);
  define(G, 'Event', Event);
  define(G, 'CustomEvent', CustomEvent);
  define(G, 'EventTarget', EventTarget);
  define(G, 'AbortSignal', AbortSignal);
  define(G, 'AbortController', AbortController);
}
