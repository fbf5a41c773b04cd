// Worker adapter: runs INSIDE the sandbox Blob worker (untrusted side, opaque origin); the MessagePort adapter of node/runner/guest-core.mjs.
// Not a standalone script: browser/sandbox.ts builds the worker source as one strict classic script, guest-core.mjs
// (its `export` removed) followed by this file, so `createGuest` is in scope. Only what differs from the Node and
// Deno sandboxes lives here: the MessagePort handshake, Blob-URL module loading, the wider lock-down (storage,
// service workers, self.close) and Python through Pyodide. Built-ins are captured before tool code loads. It is not
// the security boundary: the host validates every message, and the frame's CSP plus the opaque origin hold the
// network and storage lines.

// ---- primordials this adapter needs ------------------------------------------------------------------------
const G = globalThis;
const ReflectApply = Reflect.apply;
const uncurry = (fn) => (self, ...args) => ReflectApply(fn, self, args);
const { ownKeys: ReflectOwnKeys, getPrototypeOf: ReflectGetPrototypeOf, getOwnPropertyDescriptor: ReflectGetOwnPropertyDescriptor,
  defineProperty: ReflectDefineProperty, deleteProperty: ReflectDeleteProperty } = Reflect;
const JSONStringify = JSON.stringify;
const JSONParse = JSON.parse;
const ObjectCreate = Object.create;
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
// else (the worker has no network at all); afterwards `fetch` is the mediated one again.
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


// ---- the guest core -----------------------------------------------------------------------------------------
const guest = createGuest({
  send: (msg) => { if (port !== undefined) PortPostMessage(port, msg); },
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
    await initPython();
    pySource = source;
    return runPython;
  },
  fromGuest: fromPy,
  // The frame's CSP (connect-src 'none', ...) and the opaque origin already make these fail; removing them makes
  // the failure immediate and uniform. self.close() would end the worker silently (the host then only learns at
  // the timeout).
  removeGlobals: ['importScripts', 'indexedDB', 'caches', 'IDBFactory', 'CacheStorage', 'FileSystemHandle', 'Notification',
    'RTCDataChannel', 'ServiceWorker', 'ServiceWorkerContainer', 'close'],
  eagerFetchClasses: true,
});
const { log, describe, toolError, toWireError, mediatedFetch } = guest;

EventTargetAddEventListener(G, 'unhandledrejection', (ev) => { ev.preventDefault(); log('error', `unhandled rejection: ${describe(ev.reason)}`); });
EventTargetAddEventListener(G, 'error', (ev) => { ev.preventDefault(); log('error', `uncaught exception: ${describe(ev.error)}`); });

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
  if (msg !== null && typeof msg === 'object' && msg.tysandbox === 'python-assets' && guest.loadState === 'none' && pyAssets === undefined) {
    const files = msg.files;
    if (files !== null && typeof files === 'object') {
      pyAssets = ObjectCreate(null);
      for (const k of ReflectOwnKeys(files)) if (typeof k === 'string') pyAssets[k] = files[k];
      pyRetain = msg.retainState === true;
    }
    return;
  }
  guest.handle(msg);
}

// ---- handshake: the frame hands over exactly one port, once ----------------------------------------------
const onFirst = (ev) => {
  if (port !== undefined) return;
  const p = ev.ports && ev.ports[0];
  if (!p) return;
  port = p;
  EventTargetRemoveEventListener(G, 'message', onFirst);
  port.onmessage = onPortMessage;
  PortStart(port);
  const ua = nav && nav.userAgent;
  PortPostMessage(port, { v: 1, type: 'ready', runtime: 'browser-worker', version: StringPrototypeSlice(typeof ua === 'string' ? ua : '', 0, 64) });
};
EventTargetAddEventListener(G, 'message', onFirst);
