// Small web globals for engines without them (QuickJS): console (the base object core/guest/core.mjs completes),
// queueMicrotask, structuredClone, crypto.getRandomValues / randomUUID and performance; runs INSIDE the sandbox
// (untrusted side), before tool code.
// Constraints: plain JavaScript, no imports, one export (core/quickjs/guest-script.ts concatenates the guest files).
// structuredClone follows HTML §2.7 (StructuredSerialize) for the types QuickJS has; crypto follows WebCrypto §10.1
// (getRandomValues: integer typed arrays, at most 65536 bytes) with random bytes from the sandbox host's CSPRNG.

/**
 * Define console, queueMicrotask, structuredClone, crypto and performance on `G`.
 * @param {object} G the global object (DOMException already defined: core/guest/web/events.mjs)
 * @param {{ random(n: number): string, now(): number, timeOrigin: number }} host `random(n)`: n bytes (1-65536) from
 *   the host's CSPRNG as a string of n characters U+0000-U+00FF; `now()`: ms since `timeOrigin` (monotonic, may be
 *   coarsened by the host); `timeOrigin`: ms since the epoch when the sandbox started.
 * @param {{ reportError(e: unknown): void }} env where a microtask's exception goes.
 */
export function installMisc(G, host, env) {
  'use strict';
  const ObjectDefineProperty = Object.defineProperty;
  const ReflectApply = Reflect.apply;
  const ObjectPrototype = Object.prototype;
  const TypeErrorCtor = TypeError;
  const PromiseResolve = Promise.resolve.bind(Promise);
  const PromiseThen = Promise.prototype.then;
  const DOMExceptionCtor = G.DOMException;
  const hostRandom = host.random;
  const hostNow = host.now;
  const define = (o, name, value, enumerable = false) =>
    ObjectDefineProperty(o, name, { value, writable: true, configurable: true, enumerable });

  // ---- console ------------------------------------------------------------------------------------------------------
  // core/guest/core.mjs replaces log, info, warn, error, debug, trace, dir, table and assert with its log messages;
  // the rest are written through console.log as Node writes them.
  const consoleObj = {};
  const counts = new Map();
  const timers = new Map();
  let indent = 0;
  const out = (text) => consoleObj.log(`${' '.repeat(indent)}${text}`);
  const rest = {
    count(label = 'default') {
      const k = `${label}`;
      const n = (counts.get(k) ?? 0) + 1;
      counts.set(k, n);
      out(`${k}: ${n}`);
    },
    countReset(label = 'default') {
      counts.delete(`${label}`);
    },
    group(...args) {
      if (args.length > 0) consoleObj.log(...args);
      indent += 2;
    },
    groupCollapsed(...args) {
      if (args.length > 0) consoleObj.log(...args);
      indent += 2;
    },
    groupEnd() {
      indent = Math.max(0, indent - 2);
    },
    time(label = 'default') {
      timers.set(`${label}`, hostNow());
    },
    timeEnd(label = 'default') {
      const k = `${label}`;
      const t = timers.get(k);
      if (t === undefined) return;
      timers.delete(k);
      out(`${k}: ${(hostNow() - t).toFixed(3)}ms`);
    },
    timeLog(label = 'default', ...data) {
      const k = `${label}`;
      const t = timers.get(k);
      if (t === undefined) return;
      consoleObj.log(`${k}: ${(hostNow() - t).toFixed(3)}ms`, ...data);
    },
    clear() {},
  };
  for (const k of Object.keys(rest)) define(consoleObj, k, rest[k], true);
  for (const k of ['log', 'info', 'warn', 'error', 'debug', 'trace', 'dir', 'table', 'assert'])
    define(consoleObj, k, () => {}, true);
  define(G, 'console', consoleObj);

  // ---- queueMicrotask -----------------------------------------------------------------------------------------------
  define(
    G,
    'queueMicrotask',
    function queueMicrotask(callback) {
      if (typeof callback !== 'function') {
        const e = new TypeErrorCtor('The "callback" argument must be of type function.');
        define(e, 'code', 'ERR_INVALID_ARG_TYPE');
        throw e;
      }
      ReflectApply(PromiseThen, PromiseResolve(), [
        () => {
          try {
            callback();
          } catch (e) {
            env.reportError(e);
          }
        },
      ]);
    },
    true,
  );

  // ---- structuredClone (HTML §2.7) ----------------------------------------------------------------------------------
  function notCloneable(v) {
    let text;
    try {
      text = typeof v === 'symbol' ? v.toString() : `${v}`;
    } catch {
      text = 'value';
    }
    return new DOMExceptionCtor(`${text} could not be cloned.`, 'DataCloneError');
  }
  const ERROR_NAMES = ['Error', 'EvalError', 'RangeError', 'ReferenceError', 'SyntaxError', 'TypeError', 'URIError'];
  function clone(v, memory) {
    if (v === null || (typeof v !== 'object' && typeof v !== 'function')) {
      if (typeof v === 'symbol') throw notCloneable(v);
      return v;
    }
    if (typeof v === 'function') throw notCloneable(v);
    if (memory.has(v)) return memory.get(v);
    let out;
    const tag = ReflectApply(ObjectPrototype.toString, v, []);
    switch (tag) {
      case '[object Boolean]':
      case '[object Number]':
      case '[object String]':
      case '[object BigInt]':
        out = Object(v.valueOf());
        break;
      case '[object Date]':
        out = new Date(v.getTime());
        break;
      case '[object RegExp]':
        out = new RegExp(v.source, v.flags);
        break;
      case '[object ArrayBuffer]':
        out = v.slice(0);
        break;
      case '[object Map]':
        out = new Map();
        memory.set(v, out);
        for (const [k, x] of v) out.set(clone(k, memory), clone(x, memory));
        return out;
      case '[object Set]':
        out = new Set();
        memory.set(v, out);
        for (const x of v) out.add(clone(x, memory));
        return out;
      case '[object Error]': {
        const name = ERROR_NAMES.includes(v.name) ? v.name : 'Error';
        out = new G[name](v.message);
        memory.set(v, out);
        if ('cause' in v) define(out, 'cause', clone(v.cause, memory));
        if (typeof v.stack === 'string') define(out, 'stack', v.stack);
        return out;
      }
      case '[object Array]': {
        out = new Array(v.length);
        memory.set(v, out);
        for (const k of Object.keys(v)) out[k] = clone(v[k], memory);
        return out;
      }
      case '[object Object]':
        // class instances clone as plain objects of their own enumerable properties, as in HTML's serializer
        out = {};
        memory.set(v, out);
        for (const k of Object.keys(v)) out[k] = clone(v[k], memory);
        return out;
      default:
        if (ArrayBuffer.isView(v)) {
          const buf = clone(v.buffer, memory);
          const C = v.constructor;
          out = C === DataView ? new DataView(buf, v.byteOffset, v.byteLength) : new C(buf, v.byteOffset, v.length);
          break;
        }
        throw notCloneable(v);
    }
    memory.set(v, out);
    return out;
  }
  define(
    G,
    'structuredClone',
    function structuredClone(value, options = undefined) {
      // biome-ignore lint/complexity/noArguments: Web IDL tells a missing argument from undefined
      if (arguments.length === 0) {
        const e = new TypeErrorCtor('The "value" argument must be specified');
        define(e, 'code', 'ERR_MISSING_ARGS');
        throw e;
      }
      void options;
      return clone(value, new Map());
    },
    true,
  );

  // ---- crypto (WebCrypto §10) ---------------------------------------------------------------------------------------
  const INTEGER_ARRAYS = [
    Int8Array,
    Uint8Array,
    Uint8ClampedArray,
    Int16Array,
    Uint16Array,
    Int32Array,
    Uint32Array,
    BigInt64Array,
    BigUint64Array,
  ];
  function getRandomValues(array) {
    if (!INTEGER_ARRAYS.some((C) => array instanceof C))
      throw new DOMExceptionCtor('The data argument must be an integer-type TypedArray', 'TypeMismatchError');
    const n = array.byteLength;
    if (n > 65536) throw new DOMExceptionCtor('The requested length exceeds 65,536 bytes', 'QuotaExceededError');
    if (n === 0) return array;
    const s = hostRandom(n);
    const view = new Uint8Array(array.buffer, array.byteOffset, n);
    for (let i = 0; i < n; i++) view[i] = s.charCodeAt(i);
    return array;
  }
  function randomUUID() {
    const b = getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = '';
    for (let i = 0; i < 16; i++) h += (b[i] + 0x100).toString(16).slice(1);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
  class Crypto {
    getRandomValues(array) {
      return getRandomValues(array);
    }
    randomUUID() {
      return randomUUID();
    }
    get [Symbol.toStringTag]() {
      return 'Crypto';
    }
  }
  define(G, 'Crypto', Crypto);
  ObjectDefineProperty(G, 'crypto', { value: new Crypto(), writable: true, configurable: true, enumerable: true });

  // ---- performance (High Resolution Time) ---------------------------------------------------------------------------
  const timeOrigin = host.timeOrigin;
  class Performance {
    now() {
      return hostNow();
    }
    get timeOrigin() {
      return timeOrigin;
    }
    toJSON() {
      return { timeOrigin };
    }
    get [Symbol.toStringTag]() {
      return 'Performance';
    }
  }
  define(G, 'Performance', Performance);
  ObjectDefineProperty(G, 'performance', {
    value: new Performance(),
    writable: true,
    configurable: true,
    enumerable: true,
  });
}
