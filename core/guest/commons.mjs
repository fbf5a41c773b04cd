// Captured built-ins of the guest runtime, read before any tool code; runs INSIDE every sandbox (untrusted side).
// Every intrinsic the code inside a sandbox uses is read once, when this module loads.
// Why: tool code shares the realm with the guest runtime and may replace any global or prototype method
// (Array.prototype.push, JSON.parse, ...). The guest core (core.mjs), the Python guest (python.mjs) and the hosts'
// entry points use these bindings only, taken before tool code exists, so such tampering cannot bend the bridge
// (after endo's ses src/commons.js and Node's and Deno's primordials). It is not the security boundary: the host
// validates every message, and the process or worker (with the OS wrapper or the frame's CSP) is the isolation.
// Rules, checked by test/contracts/guest-globals.test.ts:
// - only this module's top level reads globals; no function of the guest runtime or of an entry point reads one;
// - an entry point captures only what is its host's alone (process, Buffer, Deno, MessagePort, Blob, timers, ...);
// - Node and Deno load some classes on first access of a global getter (AbortController, Request, ...): those are
//   captured as that getter (globalGetter), so loading them costs nothing until a tool needs them.
// Form: `export const` declarations only, no import. Deno imports it; the Node entry
// (node/runner/sandbox-runner-entry.cjs) and the browser build (browser/sandbox/runtime.ts) put it first in the one
// classic script they compile, its `export`s removed, so these names are in scope of everything after it. The
// bindings are constants; the functions made here (uncurried methods, getters) are never handed to tool code, so they
// are not frozen (that cost about 0.1 ms of CPU at every cold start).

/** The global object, as the engine made it. */
export const globalObject = globalThis;

// ---- Reflect, Object, Function ----------------------------------------------------------------------------------
export const {
  apply: ReflectApply,
  defineProperty: ReflectDefineProperty,
  deleteProperty: ReflectDeleteProperty,
  getOwnPropertyDescriptor: ReflectGetOwnPropertyDescriptor,
  getPrototypeOf: ReflectGetPrototypeOf,
  ownKeys: ReflectOwnKeys,
  setPrototypeOf: ReflectSetPrototypeOf,
} = Reflect;
export const { create: ObjectCreate, freeze: ObjectFreeze, prototype: ObjectPrototype } = Object;
/**
 * A method as a plain function of its receiver: `uncurryThis(Array.prototype.push)(list, x)` is `list.push(x)` with
 * the push captured now.
 */
export const uncurryThis =
  (fn) =>
  (self, ...args) =>
    ReflectApply(fn, self, args);
/** The getter of `proto[name]` as a function of the receiver (`uncurryGetter(URL.prototype, 'username')(url)`). */
export const uncurryGetter = (proto, name) => uncurryThis(ReflectGetOwnPropertyDescriptor(proto, name).get);
export const FunctionPrototypeBind = uncurryThis(Function.prototype.bind);

// ---- values, text and collections -------------------------------------------------------------------------------
export const { parse: JSONParse, stringify: JSONStringify } = JSON;
export const NumberCtor = Number;
export const NumberIsFinite = Number.isFinite;
export const MathMin = Math.min;
export const MathCeil = Math.ceil;
export const DateNow = Date.now;
export const SymbolHasInstance = Symbol.hasInstance;
export const StringCtor = String;
export const StringFromCharCode = String.fromCharCode;
export const StringPrototypeCharCodeAt = uncurryThis(String.prototype.charCodeAt);
export const StringPrototypeEndsWith = uncurryThis(String.prototype.endsWith);
export const StringPrototypeIndexOf = uncurryThis(String.prototype.indexOf);
export const StringPrototypeLastIndexOf = uncurryThis(String.prototype.lastIndexOf);
export const StringPrototypeSlice = uncurryThis(String.prototype.slice);
export const StringPrototypeSplit = uncurryThis(String.prototype.split);
export const StringPrototypeStartsWith = uncurryThis(String.prototype.startsWith);
export const StringPrototypeTrim = uncurryThis(String.prototype.trim);
export const RegExpPrototypeExec = uncurryThis(RegExp.prototype.exec);
export const encodeURIComponentFn = encodeURIComponent;
export const ArrayPrototype = Array.prototype;
export const ArrayIsArray = Array.isArray;
export const ArrayPrototypeJoin = uncurryThis(Array.prototype.join);
export const ArrayPrototypePush = uncurryThis(Array.prototype.push);
export const MapCtor = Map;
export const MapPrototypeDelete = uncurryThis(Map.prototype.delete);
export const MapPrototypeGet = uncurryThis(Map.prototype.get);
export const MapPrototypeHas = uncurryThis(Map.prototype.has);
export const MapPrototypeSet = uncurryThis(Map.prototype.set);
export const SetCtor = Set;
export const SetPrototypeAdd = uncurryThis(Set.prototype.add);
export const SetPrototypeDelete = uncurryThis(Set.prototype.delete);
export const SetPrototypeHas = uncurryThis(Set.prototype.has);
export const PromiseCtor = Promise;
export const PromiseAll = FunctionPrototypeBind(Promise.all, Promise);
export const PromiseReject = FunctionPrototypeBind(Promise.reject, Promise);
export const ErrorCtor = Error;
export const ErrorPrototype = Error.prototype;
export const TypeErrorCtor = TypeError;
export const TypeErrorPrototype = TypeError.prototype;
export const RangeErrorCtor = RangeError;

// ---- bytes ------------------------------------------------------------------------------------------------------
export const ArrayBufferCtor = ArrayBuffer;
export const ArrayBufferPrototypeGetByteLength = uncurryGetter(ArrayBuffer.prototype, 'byteLength');
export const Uint8ArrayCtor = Uint8Array;
export const TypedArrayPrototype = ReflectGetPrototypeOf(Uint8Array.prototype);
export const TypedArrayPrototypeGetLength = uncurryGetter(TypedArrayPrototype, 'length');
export const TypedArrayPrototypeIndexOf = uncurryThis(TypedArrayPrototype.indexOf);
export const TypedArrayPrototypeSet = uncurryThis(TypedArrayPrototype.set);
export const TypedArrayPrototypeSubarray = uncurryThis(TypedArrayPrototype.subarray);
export const TextDecoderCtor = TextDecoder;
export const TextDecoderPrototypeDecode = uncurryThis(TextDecoder.prototype.decode);
export const TextEncoderCtor = TextEncoder;
export const TextEncoderPrototypeEncode = uncurryThis(TextEncoder.prototype.encode);
export const atobFn = atob;
export const btoaFn = btoa;

// ---- WebAssembly: the Python guest caps Pyodide's memory growth (core/guest/python-limits.mjs) ---------------------
// Absent where the guest runs inside QuickJS (core/quickjs/: no WebAssembly there, and no Python): undefined then.
export const WebAssemblyMemoryPrototype =
  typeof WebAssembly === 'object' && WebAssembly !== null ? WebAssembly.Memory.prototype : undefined;
export const WebAssemblyMemoryPrototypeGrow =
  WebAssemblyMemoryPrototype === undefined ? undefined : uncurryThis(WebAssemblyMemoryPrototype.grow);
export const WebAssemblyMemoryPrototypeGetBuffer =
  WebAssemblyMemoryPrototype === undefined ? undefined : uncurryGetter(WebAssemblyMemoryPrototype, 'buffer');

// ---- web platform (present on every host) -----------------------------------------------------------------------
export const EventTargetPrototypeAddEventListener = uncurryThis(EventTarget.prototype.addEventListener);
export const EventTargetPrototypeRemoveEventListener = uncurryThis(EventTarget.prototype.removeEventListener);
export const URLCtor = URL;
export const URLCreateObjectURL = URL.createObjectURL;
export const URLRevokeObjectURL = URL.revokeObjectURL;
export const URLPrototypeGetPassword = uncurryGetter(URL.prototype, 'password');
export const URLPrototypeGetUsername = uncurryGetter(URL.prototype, 'username');

/**
 * A function returning the engine's own `globalThis[name]`: where the engine defines it as a lazy getter (Node's
 * AbortController and fetch classes, Deno 2's fetch classes: 1-20 ms to load), that getter, captured now and run on
 * the first call; else the value it has now; `() => undefined` where there is none. Reading the descriptor runs
 * nothing.
 */
export const globalGetter = (name) => {
  const d = ReflectGetOwnPropertyDescriptor(globalObject, name);
  if (d === undefined) return () => undefined;
  if (d.get !== undefined) return FunctionPrototypeBind(d.get, globalObject);
  const value = d.value;
  return () => value;
};
export const getAbortController = globalGetter('AbortController');
export const getAbortSignal = globalGetter('AbortSignal');
export const getHeaders = globalGetter('Headers');
export const getRequest = globalGetter('Request');
export const getResponse = globalGetter('Response');
