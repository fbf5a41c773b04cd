// Timers for engines without them (QuickJS): setTimeout, setInterval, setImmediate and their clear functions, backed
// by the sandbox host's clock; runs INSIDE the sandbox (untrusted side), before tool code.
// Constraints: plain JavaScript, no imports, one export (core/quickjs/guest-script.ts concatenates the guest files).
// Semantics follow Node's timers (the node engine's): delays below 1 ms or above 2^31-1 ms become 1 ms, extra
// arguments are passed to the callback, the returned Timeout object converts to its numeric id, and a callback's
// exception is reported as an uncaught exception (logged) without stopping other timers.

/**
 * Define the timer functions on `G`.
 * @param {object} G the global object
 * @param {{ start(id: number, ms: number): void, stop(id: number): void }} host the sandbox host's timers: `start`
 *   arms timer `id` to fire once after `ms` (-1: as soon as possible, after pending promise jobs); `stop` disarms it.
 *   A firing timer calls the function this installer returns.
 * @param {{ reportError(e: unknown): void }} env where a callback's exception goes.
 * @returns {(id: number) => void} run timer `id`'s callback (called by the host when it fires).
 */
export function installTimers(G, host, env) {
  'use strict';
  const ObjectDefineProperty = Object.defineProperty;
  const ReflectApply = Reflect.apply;
  const TypeErrorCtor = TypeError;
  const hostStart = host.start;
  const hostStop = host.stop;
  const SafeMap = Map;
  const MapGet = Map.prototype.get;
  const MapSet = Map.prototype.set;
  const MapDelete = Map.prototype.delete;
  const active = new SafeMap(); // id -> { fn, args, repeat, ms, handle }
  let nextId = 1;
  const MAX = 2 ** 31 - 1;

  function invalidCallback(cb) {
    const e = new TypeErrorCtor(`The "callback" argument must be of type function. Received ${describe(cb)}`);
    ObjectDefineProperty(e, 'code', { value: 'ERR_INVALID_ARG_TYPE', writable: true, configurable: true });
    return e;
  }
  function describe(v) {
    if (v === null || v === undefined) return `${v}`;
    if (typeof v === 'object') return 'an instance of Object';
    return `type ${typeof v} (${String(v).slice(0, 25)})`;
  }
  function delayOf(ms) {
    const n = Number(ms);
    return n >= 1 && n <= MAX ? Math.trunc(n) : 1;
  }

  class Timeout {
    #id;
    #ref = true;
    constructor(id) {
      this.#id = id;
    }
    ref() {
      this.#ref = true;
      return this;
    }
    unref() {
      this.#ref = false;
      return this;
    }
    hasRef() {
      return this.#ref;
    }
    refresh() {
      const t = ReflectApply(MapGet, active, [this.#id]);
      if (t !== undefined) {
        hostStop(this.#id);
        hostStart(this.#id, t.ms);
      }
      return this;
    }
    close() {
      clear(this.#id);
      return this;
    }
    [Symbol.toPrimitive]() {
      return this.#id;
    }
  }
  class Immediate {
    #id;
    constructor(id) {
      this.#id = id;
    }
    ref() {
      return this;
    }
    unref() {
      return this;
    }
    hasRef() {
      return true;
    }
    [Symbol.toPrimitive]() {
      return this.#id;
    }
  }
  const ids = new WeakMap(); // Timeout/Immediate -> id
  function schedule(fn, args, ms, repeat, Kind) {
    if (typeof fn !== 'function') throw invalidCallback(fn);
    const id = nextId++;
    const handle = new Kind(id);
    ids.set(handle, id);
    ReflectApply(MapSet, active, [id, { fn, args, repeat, ms }]);
    hostStart(id, ms);
    return handle;
  }
  function clear(t) {
    let id;
    if (typeof t === 'number') id = t;
    else if (t !== null && typeof t === 'object' && ids.has(t)) id = ids.get(t);
    else if (typeof t === 'string' && /^\d+$/.test(t)) id = Number(t);
    if (id === undefined || ReflectApply(MapGet, active, [id]) === undefined) return;
    ReflectApply(MapDelete, active, [id]);
    hostStop(id);
  }
  /** A timer fired on the host: run its callback; an interval is armed again first. */
  function fire(id) {
    const t = ReflectApply(MapGet, active, [id]);
    if (t === undefined) return;
    if (t.repeat) hostStart(id, t.ms);
    else ReflectApply(MapDelete, active, [id]);
    try {
      ReflectApply(t.fn, undefined, t.args);
    } catch (e) {
      env.reportError(e);
    }
  }

  const fns = {
    setTimeout: (fn, ms, ...args) => schedule(fn, args, delayOf(ms), false, Timeout),
    setInterval: (fn, ms, ...args) => schedule(fn, args, delayOf(ms), true, Timeout),
    setImmediate: (fn, ...args) => schedule(fn, args, -1, false, Immediate),
    clearTimeout: (t) => clear(t),
    clearInterval: (t) => clear(t),
    clearImmediate: (t) => clear(t),
  };
  for (const name of Object.keys(fns)) {
    const f = fns[name];
    ObjectDefineProperty(f, 'name', { value: name });
    ObjectDefineProperty(G, name, { value: f, writable: true, configurable: true, enumerable: true });
  }
  return fire;
}
