// Worker adapter: runs INSIDE the sandbox Blob worker (untrusted side, opaque origin); the MessagePort adapter of
// core/guest/core.mjs.
// Not a standalone script: browser/sandbox/runtime.ts builds the worker source as one strict classic script,
// core/guest/core.mjs
// and core/guest/python.mjs (their `export`s removed) followed by this file, so `createGuest` and
// `createPythonGuest` are in scope. Only what differs from the Node and
// Deno sandboxes lives here: the MessagePort handshake, Blob-URL module loading, the wider lock-down (storage,
// service workers, self.close) and Python through Pyodide. Built-ins are captured before tool code loads. It is not
// the security boundary: the host validates every message, and the frame's CSP plus the opaque origin hold the
// network and storage lines.

// ---- primordials this adapter needs ------------------------------------------------------------------------
const G = globalThis;
const ReflectApply = Reflect.apply;
const uncurry =
  (fn) =>
  (self, ...args) =>
    ReflectApply(fn, self, args);
const {
  ownKeys: ReflectOwnKeys,
  getPrototypeOf: ReflectGetPrototypeOf,
  getOwnPropertyDescriptor: ReflectGetOwnPropertyDescriptor,
  defineProperty: ReflectDefineProperty,
  deleteProperty: ReflectDeleteProperty,
} = Reflect;
const ObjectCreate = Object.create;
const ArrayIsArray = Array.isArray;
const ObjectPrototype = Object.prototype;
const StringCtor = String;
const StringPrototypeSlice = uncurry(String.prototype.slice);
const ArrayPrototypePush = uncurry(Array.prototype.push);
const TypeErrorCtor = TypeError;
const EventTargetAddEventListener = uncurry(EventTarget.prototype.addEventListener);
const EventTargetRemoveEventListener = uncurry(EventTarget.prototype.removeEventListener);
const TextDecoderCtor = TextDecoder;
const BlobCtor = G.Blob;
const URLCreateObjectURL = URL.createObjectURL;
const URLRevokeObjectURL = URL.revokeObjectURL;
const RequestCtor = G.Request;
const ResponseCtor = G.Response;
const RequestUrl = uncurry(ReflectGetOwnPropertyDescriptor(RequestCtor.prototype, 'url').get);
const PortPostMessage = uncurry(MessagePort.prototype.postMessage);
const PortStart = uncurry(MessagePort.prototype.start);
const importModule = (url) => import(url);

let port; // the MessagePort to the host, set once by the frame's first message

// ---- Python (Pyodide) ------------------------------------------------------------------------------
// The host sends the verified Pyodide files once, before `load` (pre-protocol message on the same port).
// They are turned into Blob URLs here; during start-up only, `fetch` serves exactly those files and nothing
// else (the worker has no network at all); afterwards `fetch` is the mediated one again. Everything after the start
// (JSON in and out, the Python `ctx`, resets between calls) is core/guest/python.mjs, as on the command line.
const PY_BASE = 'https://pyodide.invalid/';
let pyAssets;
let pyRetain = false;
const pyPackages = [];
let python; // createPythonGuest(...) once the assets arrived
async function startPyodide(common) {
  const urls = [];
  const blobUrl = (name) => {
    const u = URLCreateObjectURL(new BlobCtor([pyAssets[name]], { type: 'text/javascript' }));
    ArrayPrototypePush(urls, u);
    return u;
  };
  const startupFetch = async (input) => {
    const url =
      typeof input === 'string' ? input : input instanceof RequestCtor ? RequestUrl(input) : StringCtor(input);
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
    return await mod.loadPyodide({
      ...common,
      indexURL: PY_BASE,
      stdLibURL: PY_BASE + 'python_stdlib.zip',
      createPyodideModule: asm.default,
      lockFileContents: new TextDecoderCtor().decode(pyAssets['pyodide-lock.json']),
    });
  } finally {
    ReflectDefineProperty(G, 'fetch', { value: mediatedFetch, configurable: true, writable: true, enumerable: true });
    for (const u of urls) URLRevokeObjectURL(u);
  }
}

// ---- the guest core -----------------------------------------------------------------------------------------
const guest = createGuest({
  send: (msg) => {
    if (port !== undefined) PortPostMessage(port, msg);
  },
  /** Tool JavaScript runs as a module from a Blob URL created here (CSP: script-src blob:), revoked right after. */
  importSource: async (source) => {
    const url = URLCreateObjectURL(new BlobCtor([source], { type: 'text/javascript' }));
    try {
      return await importModule(url);
    } finally {
      URLRevokeObjectURL(url);
    }
  },
  loadRuntime: async (runtime, source) => {
    if (runtime !== 'python') return undefined;
    if (pyAssets === undefined) throw toolError('E_SANDBOX_UNAVAILABLE', 'the Python runtime files were not provided');
    python = createPythonGuest({ guest, start: startPyodide, retainState: pyRetain, packages: pyPackages });
    return python.loadRuntime(runtime, source);
  },
  fromGuest: (v) => (python === undefined ? v : python.fromGuest(v)),
  // The frame's CSP (connect-src 'none', ...) and the opaque origin already make these fail; removing them makes
  // the failure immediate and uniform. self.close() would end the worker silently (the host then only learns at
  // the timeout).
  removeGlobals: [
    'importScripts',
    'indexedDB',
    'caches',
    'IDBFactory',
    'CacheStorage',
    'FileSystemHandle',
    'Notification',
    'RTCDataChannel',
    'ServiceWorker',
    'ServiceWorkerContainer',
    'close',
  ],
  eagerFetchClasses: true,
});
const { log, describe, toolError, mediatedFetch } = guest;

EventTargetAddEventListener(G, 'unhandledrejection', (ev) => {
  ev.preventDefault();
  log('error', `unhandled rejection: ${describe(ev.reason)}`);
});
EventTargetAddEventListener(G, 'error', (ev) => {
  ev.preventDefault();
  log('error', `uncaught exception: ${describe(ev.error)}`);
});

const nav = G.navigator;
if (nav) {
  for (const name of ['storage', 'serviceWorker', 'locks', 'sendBeacon']) {
    for (let o = nav; o !== null && o !== ObjectPrototype; o = ReflectGetPrototypeOf(o)) {
      if (ReflectGetOwnPropertyDescriptor(o, name) !== undefined) ReflectDeleteProperty(o, name);
    }
  }
}

// ---- port messages -> guest.handle -------------------------------------------------------------------------
function onPortMessage(ev) {
  const msg = ev.data;
  if (
    msg !== null &&
    typeof msg === 'object' &&
    msg.tysandbox === 'python-assets' &&
    guest.loadState === 'none' &&
    pyAssets === undefined
  ) {
    const files = msg.files;
    if (files !== null && typeof files === 'object') {
      pyAssets = ObjectCreate(null);
      for (const k of ReflectOwnKeys(files)) if (typeof k === 'string') pyAssets[k] = files[k];
      pyRetain = msg.retainState === true;
      // Wheels the host fetched from the app's asset folder and checked by sha-256.
      const list = ArrayIsArray(msg.packages) ? msg.packages : [];
      for (let i = 0; i < list.length; i++) {
        const p = list[i];
        if (p !== null && typeof p === 'object' && typeof p.file === 'string' && p.bytes instanceof ArrayBuffer)
          ArrayPrototypePush(pyPackages, { file: p.file, bytes: new Uint8Array(p.bytes) });
      }
    }
    return;
  }
  guest.handle(msg);
}

// ---- handshake: the frame hands over exactly one port, once ----------------------------------------------
const onFirst = (ev) => {
  if (port !== undefined) return;
  const p = ev.ports?.[0];
  if (!p) return;
  port = p;
  EventTargetRemoveEventListener(G, 'message', onFirst);
  port.onmessage = onPortMessage;
  PortStart(port);
  const ua = nav?.userAgent;
  PortPostMessage(port, {
    v: 1,
    type: 'ready',
    runtime: 'browser-worker',
    version: StringPrototypeSlice(typeof ua === 'string' ? ua : '', 0, 64),
  });
};
EventTargetAddEventListener(G, 'message', onFirst);
