// Worker adapter: runs INSIDE the sandbox Blob worker (untrusted side, opaque origin); the MessagePort adapter of
// core/guest/core.mjs.
// Not a standalone script: browser/sandbox/runtime.ts builds the worker source as one strict classic script,
// core/guest/commons.mjs (the captured built-ins: every ReflectApply, StringPrototypeSlice, ... below),
// core/guest/core.mjs and core/guest/python.mjs (their imports and `export`s removed), then this file, so the captured
// built-ins, `createGuest` and `createPythonGuest` are in scope. Only what differs from the Node and Deno sandboxes
// lives here: the MessagePort handshake, Blob-URL module loading, the wider lock-down (storage, service workers,
// self.close) and Python through Pyodide. It is not the security boundary: the host validates every message, and the
// frame's CSP plus the opaque origin hold the network and storage lines.

// ---- what only the worker has (captured before any tool code runs) -------------------------------------------
const G = globalObject;
const BlobCtor = G.Blob;
const RequestCtor = getRequest();
const ResponseCtor = getResponse();
const RequestUrl = uncurryGetter(RequestCtor.prototype, 'url');
const PortPostMessage = uncurryThis(MessagePort.prototype.postMessage);
const PortStart = uncurryThis(MessagePort.prototype.start);
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
let pyMemoryMb; // limits.memoryMb: Pyodide's memory and in-memory files together (core/guest/python-limits.mjs)
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
      lockFileContents: TextDecoderPrototypeDecode(new TextDecoderCtor(), pyAssets['pyodide-lock.json']),
    });
  } finally {
    ReflectDefineProperty(G, 'fetch', { value: mediatedFetch, configurable: true, writable: true, enumerable: true });
    for (let i = 0; i < urls.length; i++) URLRevokeObjectURL(urls[i]);
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
    python = createPythonGuest({
      guest,
      start: startPyodide,
      retainState: pyRetain,
      packages: pyPackages,
      memoryMb: pyMemoryMb,
    });
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

EventTargetPrototypeAddEventListener(G, 'unhandledrejection', (ev) => {
  ev.preventDefault();
  log('error', `unhandled rejection: ${describe(ev.reason)}`);
});
EventTargetPrototypeAddEventListener(G, 'error', (ev) => {
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
      const names = ReflectOwnKeys(files);
      for (let i = 0; i < names.length; i++) if (typeof names[i] === 'string') pyAssets[names[i]] = files[names[i]];
      pyRetain = msg.retainState === true;
      if (typeof msg.memoryMb === 'number' && msg.memoryMb > 0) pyMemoryMb = msg.memoryMb;
      // Wheels the host fetched from the app's asset folder and checked by sha-256.
      const list = ArrayIsArray(msg.packages) ? msg.packages : [];
      for (let i = 0; i < list.length; i++) {
        const p = list[i];
        if (p !== null && typeof p === 'object' && typeof p.file === 'string' && p.bytes instanceof ArrayBufferCtor)
          ArrayPrototypePush(pyPackages, { file: p.file, bytes: new Uint8ArrayCtor(p.bytes) });
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
  EventTargetPrototypeRemoveEventListener(G, 'message', onFirst);
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
EventTargetPrototypeAddEventListener(G, 'message', onFirst);
