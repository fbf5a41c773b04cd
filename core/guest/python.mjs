// Python guest: Pyodide in every sandbox that runs Python; runs INSIDE the sandbox (untrusted side).
// Node and Deno subprocesses and the browser worker alike; it is set up before any tool code.
// One implementation of the Python side on both hosts: the JSON in and out, the `ctx` tools get (PY_PRELUDE), the
// namespace and in-memory file system reset between calls. Loaded like core/guest/core.mjs: the Node entry compiles
// it with commons.mjs, the guest core and the runner as one script, the Deno runner imports it, the browser build
// embeds it in the worker script. Every built-in it uses comes from commons.mjs.
// On Node and Deno it also starts Pyodide: it verifies the granted Pyodide files by sha-256 against the digests the
// host passed (core/pyodide-manifest.json, the manifest the browser build uses too), evaluates them as classic scripts
// compiled WITHOUT a dynamic-import callback (so no `import()` reached from Python or Pyodide's own loaders loads
// anything), makes Pyodide see a module worker (no NODEFS, no node:* imports, no native sockets) and removes the host's
// own globals (process, require, Deno, ...) from globalThis, so `import js` reaches only the guest's globals. The
// process runs with code generation from strings disallowed (node/python/sandbox.ts), so Function/eval reached from
// Python throw. The wrapper (bubblewrap, the engine's permissions, the frame's CSP) stays the boundary.
// Form: plain JavaScript, two imports (./commons.mjs and ./python-limits.mjs, by name), one export (the
// createPythonGuest function declaration); PY_PRELUDE below is a plain top-level constant, so the file can be compiled
// as part of one script (python-limits.mjs before it).
import {
  ArrayIsArray,
  ArrayPrototypeJoin,
  getRequest,
  getResponse,
  globalObject,
  JSONParse,
  JSONStringify,
  MathCeil,
  ObjectFreeze,
  ObjectPrototype,
  ReflectApply,
  ReflectDefineProperty,
  ReflectDeleteProperty,
  ReflectGetOwnPropertyDescriptor,
  ReflectGetPrototypeOf,
  ReflectOwnKeys,
  RegExpPrototypeExec,
  StringCtor,
  StringPrototypeIndexOf,
  StringPrototypeLastIndexOf,
  StringPrototypeSlice,
  StringPrototypeSplit,
  StringPrototypeTrim,
  SymbolHasInstance,
  TextDecoderCtor,
  TextDecoderPrototypeDecode,
  TypeErrorCtor,
  Uint8ArrayCtor,
  URLCtor,
} from './commons.mjs';
import { createPythonLimits } from './python-limits.mjs';

/**
 * Prepare the Python runtime of one sandbox. Call before tool code exists; returns `loadRuntime` for createGuest.
 * @param {object} h hooks from the adapter; either (Node, Deno) the files to verify and evaluate:
 *   - `spec`: `{ files: { [name]: { sha256, bytes } }, paths: { [name]: absolute path }, retainState: boolean, version,
 *     packages: [{ file, sha256, path }] }` (wheels read and checked here, then installed);
 *   - `readFile(path)`: the file's bytes (Uint8Array), synchronously;
 *   - `sha256Hex(bytes)`: Promise of the lower-case hex sha-256;
 *   - `compileScript(source, filename)`: evaluate a classic script in this realm (vm.runInThisContext, no
 *     importModuleDynamically) and return its completion value;
 *   - `hostGlobals`: names removed from globalThis before Pyodide starts (process, Buffer, Deno, ...);
 *   or (browser worker, whose host verified the files before sending them):
 *   - `start(options)`: Promise of the started Pyodide, given loadPyodide options (stdout, stderr, env, ...);
 *   - `packages`: `[{ file, bytes }]` wheels the host verified by sha-256, installed before the first call;
 *   - `retainState`: keep the namespace and the in-memory file system between calls;
 *   - `memoryMb`: limits.memoryMb (the spec carries it on Node and Deno): Pyodide's memory and in-memory files
 *     together (core/guest/python-limits.mjs);
 *   and in both cases `guest`: the createGuest result (log, toolError, toWireError, mediatedFetch, phase).
 * @returns {{ loadRuntime(runtime, source): Promise<Function|undefined>, fromGuest(v): unknown }}
 */
export function createPythonGuest(h) {
  'use strict';
  const G = globalObject;
  /**
   * The tool module's URL the guest core reads a tool's own frames by (core/exec/stack.ts TOOL_MODULE_URL); Python's
   * are rewritten to it.
   */
  const TOOL_STACK_URL = 'tysandbox:///tool.js';
  const { log, toolError, toWireError, mediatedFetch, phase } = h.guest;
  // Node/Deno: asset files to verify and evaluate; absent when the adapter starts Pyodide itself (h.start)
  const spec = h.spec;
  const PY_BASE = 'https://pyodide.invalid/';
  const FILE_RE = /^[A-Za-z0-9._-]{1,100}$/;
  /** The in-memory folders a tool may write, fresh for each call unless its state is retained. */
  const MEMFS_DIRS = ['/tmp', '/home/pyodide'];

  let py;
  let pyHelpers;
  let pySource;
  let pyNs;
  let mainFn; // the tool's main (kept with its namespace when retained)
  let moduleRunner; // the compiled module body (when it has no top-level await)
  let topLevelAwait; // whether the tool source needs runPythonAsync (decided once)
  const retain = (spec !== undefined ? spec.retainState : h.retainState) === true;
  const limits = createPythonLimits(spec !== undefined ? spec.memoryMb : h.memoryMb);
  /** Pyodide failed fatally (its API refuses every use): every later call fails E_SANDBOX_FAILED, so it is replaced. */
  let fatal = false;

  /** Read and verify every asset before a byte of it is evaluated; E_INTEGRITY on any difference. */
  async function verifiedAssets() {
    const out = { __proto__: null };
    const names = ReflectOwnKeys(spec.files);
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      const want = spec.files[name];
      const path = spec.paths[name];
      if (typeof name !== 'string' || RegExpPrototypeExec(FILE_RE, name) === null || typeof path !== 'string') {
        throw toolError('E_INTEGRITY', 'bad Pyodide asset entry');
      }
      let bytes;
      try {
        bytes = h.readFile(path);
      } catch {
        throw toolError('E_SANDBOX_UNAVAILABLE', `the Python runtime file ${name} could not be read in the sandbox`);
      }
      const got = await h.sha256Hex(bytes);
      if (bytes.byteLength !== want.bytes || got !== want.sha256) {
        throw toolError(
          'E_INTEGRITY',
          `Python runtime file ${name} does not match its sha-256 in the Pyodide manifest; refusing to run it`,
        );
      }
      out[name] = bytes;
    }
    return out;
  }

  /**
   * An ES module file of the pinned Pyodide build as a classic script whose completion value is its exports.
   * pyodide.asm.mjs: one `export default _createPyodideModule`, `import.meta` only as `import.meta.url`; pyodide.mjs:
   * one trailing `export{a as b,...}`.
   * Anything else (another build) is refused rather than guessed at.
   */
  function asScript(name, text) {
    if (name === 'pyodide.asm.mjs') {
      const EXPORT = 'export default _createPyodideModule';
      const at = StringPrototypeLastIndexOf(text, EXPORT);
      if (at === -1 || StringPrototypeIndexOf(text, EXPORT) !== at)
        throw toolError('E_INTEGRITY', 'unsupported Pyodide build (pyodide.asm.mjs)');
      let body = StringPrototypeSlice(text, 0, at) + StringPrototypeSlice(text, at + EXPORT.length);
      const parts = StringPrototypeSplit(body, 'import.meta.url');
      body = ArrayPrototypeJoin(parts, JSONStringify(PY_BASE + 'pyodide.asm.mjs'));
      if (StringPrototypeIndexOf(body, 'import.meta') !== -1)
        throw toolError('E_INTEGRITY', 'unsupported Pyodide build (pyodide.asm.mjs)');
      return `(function () {\n${body}\nreturn _createPyodideModule;\n})()`;
    }
    const m = RegExpPrototypeExec(/export\s*\{([^}]*)\};?\s*(\/\/# sourceMappingURL=[^\n]*)?\s*$/, text);
    if (m === null || StringPrototypeIndexOf(text, 'import.meta') !== -1)
      throw toolError('E_INTEGRITY', 'unsupported Pyodide build (pyodide.mjs)');
    const entries = [];
    const specs = StringPrototypeSplit(m[1], ',');
    for (let i = 0; i < specs.length; i++) {
      const pair = RegExpPrototypeExec(
        /^([A-Za-z_$][\w$]*)(?:\s+as\s+([A-Za-z_$][\w$]*))?$/,
        StringPrototypeTrim(specs[i]),
      );
      if (pair === null) throw toolError('E_INTEGRITY', 'unsupported Pyodide build (pyodide.mjs)');
      entries[entries.length] = `${pair[2] ?? pair[1]}: ${pair[1]}`;
    }
    return `(function () {\n${StringPrototypeSlice(text, 0, m.index)}\nreturn { ${ArrayPrototypeJoin(entries, ', ')} };\n})()`;
  }

  /** Make Pyodide see a module worker, and take the host's own globals away from everything that runs after. */
  function workerScope() {
    // The engine's lazily built globals (Node's Response, Headers, ...) are built now, while what they need exists.
    const own = ReflectOwnKeys(G);
    for (let i = 0; i < own.length; i++) {
      const d = ReflectGetOwnPropertyDescriptor(G, own[i]);
      if (d !== undefined && typeof d.get === 'function')
        try {
          ReflectApply(d.get, G, []);
        } catch {
          /* not ours to build */
        }
    }
    const names = h.hostGlobals;
    for (let i = 0; i < names.length; i++) {
      for (let o = G; o !== null && o !== ObjectPrototype; o = ReflectGetPrototypeOf(o)) {
        if (ReflectGetOwnPropertyDescriptor(o, names[i]) === undefined) continue;
        if (!ReflectDeleteProperty(o, names[i])) {
          try {
            ReflectDefineProperty(o, names[i], { value: undefined, configurable: false, writable: false });
          } catch {
            /* engine-owned */
          }
        }
      }
    }
    function WorkerGlobalScope() {
      throw new TypeErrorCtor('Illegal constructor');
    }
    ReflectDefineProperty(WorkerGlobalScope, SymbolHasInstance, { value: (o) => o === G });
    ReflectDefineProperty(G, 'WorkerGlobalScope', { value: WorkerGlobalScope, configurable: true, writable: true });
    ReflectDefineProperty(G, 'self', { value: G, configurable: true, writable: true });
    ReflectDefineProperty(G, 'location', {
      value: ObjectFreeze(new URLCtor(PY_BASE + 'worker.js')),
      configurable: true,
      writable: true,
    });
  }

  /** Node/Deno: verify the granted files, evaluate them without import(), start Pyodide as in a module worker. */
  async function startFromFiles(common) {
    const assets = await verifiedAssets();
    const dec = new TextDecoderCtor('utf-8');
    const asmText = asScript('pyodide.asm.mjs', TextDecoderPrototypeDecode(dec, assets['pyodide.asm.mjs']));
    const modText = asScript('pyodide.mjs', TextDecoderPrototypeDecode(dec, assets['pyodide.mjs']));
    workerScope(); // before Pyodide's code runs: it detects its environment when evaluated
    const ResponseCtor = getResponse();
    const RequestCtor = getRequest();
    const asm = h.compileScript(asmText, 'pyodide.asm.mjs');
    const mod = h.compileScript(modText, 'pyodide.mjs');
    // During start-up only, `fetch` serves exactly the verified files and nothing else; then the mediated one again.
    const startupFetch = async (input) => {
      const url = typeof input === 'string' ? input : input instanceof RequestCtor ? input.url : StringCtor(input);
      if (StringPrototypeSlice(url, 0, PY_BASE.length) === PY_BASE) {
        const bytes = assets[StringPrototypeSlice(url, PY_BASE.length)];
        if (bytes !== undefined) {
          const type = StringPrototypeSlice(url, -5) === '.wasm' ? 'application/wasm' : 'application/octet-stream';
          return new ResponseCtor(bytes, { status: 200, headers: { 'content-type': type } });
        }
      }
      throw new TypeErrorCtor('no network in the sandbox');
    };
    ReflectDefineProperty(G, 'fetch', { value: startupFetch, configurable: true, writable: true, enumerable: true });
    try {
      return await mod.loadPyodide({
        ...common,
        indexURL: PY_BASE,
        stdLibURL: PY_BASE + 'python_stdlib.zip',
        createPyodideModule: asm,
        lockFileContents: TextDecoderPrototypeDecode(dec, assets['pyodide-lock.json']),
      });
    } finally {
      ReflectDefineProperty(G, 'fetch', { value: mediatedFetch, configurable: true, writable: true, enumerable: true });
    }
  }

  async function initPython() {
    const common = {
      stdout: (t) => log('info', t),
      stderr: (t) => log('warn', t),
      env: { HOME: '/home/pyodide' },
      checkAPIVersion: true,
    };
    limits.install(); // before Pyodide's heap exists: its growth is capped from the first page
    py = spec !== undefined ? await startFromFiles(common) : await h.start(common);
    const FS = py.FS;
    for (let i = 0; i < MEMFS_DIRS.length; i++) {
      const dir = MEMFS_DIRS[i];
      try {
        FS.mkdirTree(dir);
      } catch {
        /* exists */
      }
      FS.mount(FS.filesystems.MEMFS, {}, dir);
    }
    pyHelpers = py.runPython(PY_PRELUDE).toJs();
    // Declared wheels (pure Python), installed into site-packages before the first call; kept across calls.
    const wheels = spec !== undefined ? await verifiedWheels() : (h.packages ?? []);
    for (let i = 0; i < wheels.length; i++) {
      try {
        pyHelpers[5](wheels[i].file, wheels[i].bytes);
      } catch (e) {
        // one line: the installer's own exception (its last traceback line), never the traceback
        throw toolError(
          'E_INVALID_MANIFEST',
          `the wheel ${wheels[i].file} could not be installed: ${lastLine(toWireError(e).message)}`,
        );
      }
    }
    limits.attach(py);
    const used = limits.usedBytes();
    if (limits.limitMb !== undefined && used > limits.limitMb * 1048576)
      throw toolError(
        'E_MEMORY_LIMIT',
        `Python needs ${MathCeil(used / 1048576)} MiB to start (Pyodide and the declared wheels), more than the sandbox's memory limit (limits.memoryMb: ${limits.limitMb} MiB)`,
      );
  }

  /** The last non-empty line of `text`, trimmed: a Python traceback's exception line. */
  function lastLine(text) {
    const lines = StringPrototypeSplit(StringCtor(text), '\n');
    for (let i = lines.length - 1; i >= 0; i--) {
      const l = StringPrototypeTrim(lines[i]);
      if (l !== '') return StringPrototypeSlice(l, 0, 600);
    }
    return 'unknown error';
  }

  /** Node/Deno: read each granted wheel and check its sha-256 before Python sees a byte of it. */
  async function verifiedWheels() {
    const list = spec.packages ?? [];
    const out = [];
    for (let i = 0; i < list.length; i++) {
      const { file, sha256, path } = list[i];
      let bytes;
      try {
        bytes = h.readFile(path);
      } catch {
        throw toolError('E_SANDBOX_UNAVAILABLE', `the wheel ${file} could not be read in the sandbox`);
      }
      if ((await h.sha256Hex(bytes)) !== sha256)
        throw toolError(
          'E_INTEGRITY',
          `the wheel ${file} does not match its sha256 in the manifest; refusing to load it`,
        );
      // a plain view (Pyodide refuses Buffer)
      out[out.length] = { file, bytes: new Uint8ArrayCtor(bytes.buffer, bytes.byteOffset, bytes.byteLength) };
    }
    return out;
  }

  /** Fresh, empty /tmp and /home/pyodide (in-memory) for the next call. */
  function resetFs() {
    const FS = py.FS;
    for (let i = 0; i < MEMFS_DIRS.length; i++) {
      const dir = MEMFS_DIRS[i];
      try {
        FS.unmount(dir);
      } catch {
        /* not mounted */
      }
      FS.mount(FS.filesystems.MEMFS, {}, dir);
    }
    pyHelpers[3]();
    limits.recount();
  }

  /**
   * Run the tool: `main(args, ctx)` (may be async) from a fresh namespace, or the retained one. A call that met the
   * memory limit fails E_MEMORY_LIMIT; one that left Pyodide failed fatally, E_SANDBOX_FAILED (the host then replaces
   * the sandbox: core/exec/channel.ts).
   */
  async function runTool(args, jsCtx) {
    if (fatal) throw toolError('E_SANDBOX_FAILED', 'the Python runtime failed earlier and can no longer be used');
    limits.startCall();
    try {
      return await runToolOnce(args, jsCtx);
    } catch (e) {
      throw limitFailure(e);
    }
  }

  /** Whether `e` says Pyodide failed fatally (its `fatal_error` marks the error; its API then refuses every use). */
  function isFatal(e) {
    if (e === null || (typeof e !== 'object' && typeof e !== 'function')) return false;
    try {
      if (e.pyodide_fatal_error === true) return true;
      const m = e.message;
      return typeof m === 'string' && StringPrototypeIndexOf(m, 'Pyodide already ') !== -1;
    } catch {
      return false;
    }
  }

  /** The error a failed call reports, given the limit and Pyodide's state (runTool). */
  function limitFailure(e) {
    if (isFatal(e)) fatal = true;
    if (limits.hit) {
      let what;
      try {
        what = lastLine(toWireError(e).message);
      } catch {
        what = 'MemoryError';
      }
      return toolError(
        'E_MEMORY_LIMIT',
        `Python reached the sandbox's memory limit (its memory and the files it wrote to its in-memory file system, together): ${what}`,
      );
    }
    if (fatal)
      return toolError(
        'E_SANDBOX_FAILED',
        'the Python runtime (Pyodide) failed fatally during the call; sandbox destroyed',
      );
    return e;
  }

  async function runToolOnce(args, jsCtx) {
    let ns = pyNs;
    try {
      if (ns === undefined) {
        ns = py.globals.get('dict')();
        ns.set('__name__', '__tool__');
        // A module body without top-level await is compiled once and run synchronously in each fresh namespace
        // (runPythonAsync's event-loop turns cost more than a small call); one with it uses runPythonAsync.
        if (topLevelAwait === undefined) {
          topLevelAwait = pyHelpers[4](pySource);
          if (!topLevelAwait) moduleRunner = pyHelpers[6](pySource);
        }
        if (topLevelAwait) await py.runPythonAsync(pySource, { globals: ns });
        else {
          try {
            moduleRunner(ns);
          } catch (e) {
            throw pythonFailure(e);
          }
        }
        if (retain) pyNs = ns;
      }
      if (mainFn === undefined || !retain) mainFn = ns.get('main');
      const main = mainFn;
      if (typeof main !== 'function')
        throw toolError('E_TOOL_FAILED', 'the Python tool defines no function main(args, ctx)');
      const pyArgs = pyHelpers[0](JSONStringify(args === undefined ? null : args));
      const ctx = pyHelpers[2](jsCtx);
      let r;
      try {
        phase('main'); // the host's time limit now names main() (before this: the module's top-level code)
        r = pyHelpers[7](main, pyArgs, ctx);
        // An async main's coroutine is awaited (Pyodide consumes the proxy); its result is a new value.
        if (r !== null && typeof r === 'object' && typeof r.then === 'function') r = await r;
      } catch (e) {
        throw pythonFailure(e);
      } finally {
        destroy(pyArgs);
        destroy(ctx);
      }
      try {
        return JSONParse(pyHelpers[1](r));
      } finally {
        destroy(r);
      }
    } finally {
      if (!retain) {
        destroy(mainFn);
        mainFn = undefined;
        destroy(ns);
        resetFsAfterCall();
      }
    }
  }

  /** resetFs after a call; a Pyodide that failed fatally refuses even this: the call's error reports it. */
  function resetFsAfterCall() {
    try {
      resetFs();
    } catch (e) {
      if (!isFatal(e)) throw e;
      fatal = true;
    }
  }

  /**
   * The error a raising tool reports: `TYPE: message` and the tool's own frames only (innermost first, from the
   * traceback entries of its file), as a JavaScript tool's error is (core/exec/stack.ts maps them to the source file);
   * a CapabilityError keeps its code. Anything else (a fault outside the tool's code) is passed on as it is.
   */
  function pythonFailure(e) {
    let info;
    try {
      const text = pyHelpers[8]();
      info = typeof text === 'string' ? JSONParse(text) : undefined;
    } catch {
      info = undefined;
    }
    if (info === undefined || info === null || typeof info !== 'object') return e;
    const err = toolError(
      typeof info.code === 'string' ? info.code : 'E_TOOL_FAILED',
      typeof info.message === 'string' ? info.message : '',
    );
    if (typeof info.code !== 'string') ReflectDeleteProperty(err, 'code');
    ReflectDefineProperty(err, 'name', {
      value: typeof info.name === 'string' ? info.name : 'Error',
      configurable: true,
      writable: true,
    });
    // Frames in the stack form the guest core reads (the tool module's URL, line and column; core/exec/stack.ts).
    let stack = '';
    const frames = ArrayIsArray(info.frames) ? info.frames : [];
    for (let i = 0; i < frames.length; i++) {
      const f = frames[i];
      if (f && typeof f.line === 'number' && typeof f.column === 'number')
        stack += `\n    at ${typeof f.fn === 'string' ? `${f.fn} (${TOOL_STACK_URL}:${f.line}:${f.column})` : `${TOOL_STACK_URL}:${f.line}:${f.column}`}`;
    }
    ReflectDefineProperty(err, 'stack', {
      value: `${info.name}: ${info.message}${stack}`,
      configurable: true,
      writable: true,
    });
    return err;
  }

  function isPyProxy(v) {
    return v !== null && (typeof v === 'object' || typeof v === 'function') && v instanceof py.ffi.PyProxy;
  }
  /** Release a PyProxy now rather than through the finalizer (which would run between later calls). */
  function destroy(v) {
    if (isPyProxy(v))
      try {
        v.destroy();
      } catch {
        /* already gone */
      }
  }

  /** Python values reaching a JS ctx method directly (dicts, lists) become JSON data through json.dumps. */
  function fromGuest(v) {
    if (py === undefined || v === null || (typeof v !== 'object' && typeof v !== 'function')) return v;
    try {
      if (v instanceof py.ffi.PyProxy) return JSONParse(pyHelpers[1](v));
    } catch (e) {
      throw toolError(
        'E_INVALID_ARGS',
        `a Python value could not be converted to JSON data: ${toWireError(e).message}`,
        TypeErrorCtor,
      );
    }
    return v;
  }

  return ObjectFreeze({
    async loadRuntime(runtime, source) {
      if (runtime !== 'python') return undefined;
      await initPython();
      pySource = source;
      return runTool;
    },
    fromGuest,
  });
}

/**
 * Python run once after Pyodide starts (the same text the browser worker runs): JSON in and out, and the `ctx`
 * tools receive. ctx mirrors the JavaScript one with Python names: `await ctx.storage.get/set/delete/list`,
 * `await ctx.get_secret(name)`, `await ctx.create_subtasks_result(drafts)`, `await ctx.resolve_invocation(name)`,
 * `ctx.progress(fraction, message=None)` (how far the call is, 0..1; not awaited),
 * `ctx.settings` (a dict: the call's settings values, defaults applied), `await ctx.fetch(url, **pyfetch_kwargs)` (the
 * mediated fetch, returning a pyodide.http.FetchResponse; `js.fetch` and
 * `pyodide.http.pyfetch` reach the same mediated fetch). A refused or failed
 * capability raises `CapabilityError` with the same stable `code` a JavaScript tool sees (E_FETCH_TARGET, ...).
 */
const PY_PRELUDE = `
import json as _json
import builtins as _builtins
from js import JSON as _JSON

class CapabilityError(Exception):
    """A capability request was refused or failed; .code is the stable error code (E_CAPABILITY_DENIED, E_FETCH_TARGET, ...)."""
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code

_builtins.CapabilityError = CapabilityError

def _ty_loads(text):
    return _json.loads(text)

def _ty_dumps(value):
    return _json.dumps(value, allow_nan=False, separators=(",", ":"))

def _ty_js(value):
    return _JSON.parse(_ty_dumps(value))

def _ty_py(value):
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return _json.loads(_JSON.stringify(value))

async def _ty_cap(fn, *args, raw=False):
    try:
        value = await fn(*args)
    except Exception as e:
        err = getattr(e, "js_error", e)
        code = getattr(err, "code", None)
        message = getattr(err, "message", None)
        if not isinstance(code, str):
            raise
        raise CapabilityError(code, message if isinstance(message, str) else str(e)) from None
    return value if raw else _ty_py(value)

class _Storage:
    """Per-revision storage: await get(key), set(key, value), delete(key), list(prefix=None)."""
    __slots__ = ("_s",)
    def __init__(self, s):
        self._s = s
    async def get(self, key):
        return await _ty_cap(self._s.get, key)
    async def set(self, key, value):
        return await _ty_cap(self._s.set, key, _ty_js(value))
    async def delete(self, key):
        return await _ty_cap(self._s.delete, key)
    async def list(self, prefix=None):
        return await _ty_cap(self._s.list, prefix)

class Ctx:
    """The capabilities of one call (the JavaScript ctx with Python names); .settings: this call's settings (a dict copy)."""
    __slots__ = ("_c", "storage", "settings")
    def __init__(self, c):
        self._c = c
        self.storage = _Storage(c.storage)
        self.settings = _ty_py(c.settings) if c.settings is not None else {}
    @property
    def signal(self):
        return self._c.signal
    async def fetch(self, url, **kwargs):
        """The mediated fetch with pyfetch's arguments and result (a pyodide.http.FetchResponse); a refusal raises CapabilityError."""
        from pyodide.http import FetchResponse
        from pyodide.ffi import to_js
        from js import Object
        init = to_js(kwargs, dict_converter=Object.fromEntries)
        response = await _ty_cap(self._c.fetch, url, init, raw=True)
        return FetchResponse(url, response)
    async def get_secret(self, name):
        return await _ty_cap(self._c.getSecret, name)
    async def create_subtasks_result(self, drafts):
        return await _ty_cap(self._c.createSubtasksResult, _ty_js(drafts))
    async def resolve_invocation(self, name):
        return await _ty_cap(self._c.resolveInvocation, name)
    def progress(self, fraction, message=None):
        """Report how far this call is: fraction from 0 to 1, an optional message (at most 200 characters kept)."""
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not (0 <= fraction <= 1):
            raise ValueError("ctx.progress(fraction, message): fraction must be a number from 0 to 1")
        if message is not None and not isinstance(message, str):
            raise TypeError("ctx.progress(fraction, message): message must be a string")
        self._c.progress(float(fraction), message)
    getSecret = get_secret
    createSubtasksResult = create_subtasks_result
    resolveInvocation = resolve_invocation

import os as _os
def _ty_home():
    _os.chdir("/home/pyodide")

import ast as _ast
def _ty_top_level_await(source):
    try:
        _ast.parse(source)
        return False
    except SyntaxError:
        return True

def _ty_install_wheel(name, data):
    import io, zipfile, sysconfig, importlib
    z = zipfile.ZipFile(io.BytesIO(data.to_bytes()))
    for n in z.namelist():
        parts = n.split("/")
        if n.startswith("/") or ".." in parts:
            raise ValueError(f"entry {n!r} leaves the install folder")
        if n.lower().endswith((".so", ".pyd", ".dylib", ".dll", ".wasm", ".a")):
            raise ValueError(f"it holds native code ({n}); only pure-Python wheels are supported")
    z.extractall(sysconfig.get_paths()["purelib"])
    importlib.invalidate_caches()

# The file name the tool's code is compiled under: its frames are told from every other frame by it (the host maps
# them to the tool's source file, execution.bundle.entry); nothing else of a traceback leaves the sandbox.
_TY_TOOL_FILE = "tysandbox:///tool.py"
_ty_failure = [None]

def _ty_record_failure(e):
    import traceback
    frames = []
    for fs in traceback.extract_tb(e.__traceback__):
        if fs.filename == _TY_TOOL_FILE and isinstance(fs.lineno, int) and fs.lineno > 0:
            col = getattr(fs, "colno", None)
            frames.append({"fn": str(fs.name)[:128], "line": fs.lineno, "column": col + 1 if isinstance(col, int) and col >= 0 else 1})
    frames.reverse()  # innermost first, as JavaScript stacks are
    code = e.code if isinstance(e, CapabilityError) and isinstance(e.code, str) else None
    try:
        message = str(e)
    except BaseException:
        message = "the exception could not be shown"
    _ty_failure[0] = _json.dumps({"name": type(e).__name__[:128], "message": message[:4000], "frames": frames[:32], "code": code})

def _ty_call(main, args, ctx):
    """main(args, ctx), awaited when it is async; a raised exception is recorded for _ty_take_failure and raised again."""
    import inspect
    _ty_failure[0] = None
    try:
        r = main(args, ctx)
    except BaseException as e:
        _ty_record_failure(e)
        raise
    if not inspect.iscoroutine(r):
        return r
    async def waiter():
        try:
            return await r
        except BaseException as e:
            _ty_record_failure(e)
            raise
    return waiter()

def _ty_take_failure():
    f = _ty_failure[0]
    _ty_failure[0] = None
    return f

def _ty_module_runner(source):
    code = compile(source, _TY_TOOL_FILE, "exec")
    def run(ns):
        _ty_failure[0] = None
        try:
            exec(code, ns)
        except BaseException as e:
            _ty_record_failure(e)
            raise
    return run

(_ty_loads, _ty_dumps, Ctx, _ty_home, _ty_top_level_await, _ty_install_wheel, _ty_module_runner, _ty_call, _ty_take_failure)
`;
