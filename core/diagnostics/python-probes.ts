// The Python escape probe (a Python tool source) and its verdicts, shared by the CLI contracts and the browser harness;
// trusted side (the source runs sandboxed).
// Pure module: no node:* imports, so the browser diagnostics bundle can import it too.

/**
 * Arguments of the probe: `port` of a loopback TCP listener the host watches, `canary` a value planted in the host's
 * environment and files.
 */
export interface PythonProbeArgs {
  port: number;
  canary: string;
  canaryFile: string;
}

/**
 * Python tool source trying every known way out of Pyodide: `import js` host globals (process, require, Deno, ...),
 * js.process, Function through `constructor.constructor`, js.eval, Pyodide's internals (`pyodide_js._api`:
 * loadBinaryFile, node sockets, package install), os.system, subprocess, a socket to a loopback listener, host
 * files and the host's environment. Each attempt reports `blocked:<ExceptionType>` or `allowed:<what it got>`.
 */
export const PYTHON_ESCAPE_SOURCE = [
  'import os, sys',
  'HOST_GLOBALS = ["process", "require", "Deno", "global", "module", "exports", "__filename", "__dirname", "importScripts", "XMLHttpRequest", "WebSocket", "Worker", "indexedDB", "caches"]',
  'async def main(args, ctx):',
  '    out = {}',
  '    import js',
  '    out["js_host_globals"] = [n for n in HOST_GLOBALS if hasattr(js, n)]',
  '    def attempt(name, fn):',
  '        try:',
  '            r = fn()',
  '            out[name] = "allowed:" + str(r)[:120]',
  '        except BaseException as e:',
  '            out[name] = "blocked:" + type(e).__name__',
  '    async def aattempt(name, fn):',
  '        try:',
  '            r = await fn()',
  '            out[name] = "allowed:" + str(r)[:120]',
  '        except BaseException as e:',
  '            out[name] = "blocked:" + type(e).__name__',
  '    attempt("js.process", lambda: js.process.versions.node)',
  '    attempt("js.globalThis.process", lambda: getattr(js.globalThis, "process").env)',
  '    attempt("constructor.constructor", lambda: js.constructor.constructor("return typeof process")())',
  '    attempt("js.eval", lambda: js.eval("typeof process"))',
  '    attempt("js.Function", lambda: js.Function.new("return 1")())',
  '    import pyodide_js',
  '    api = pyodide_js._api',
  '    await aattempt("_api.loadBinaryFile(file:)", lambda: api.loadBinaryFile("file://" + args["canaryFile"]))',
  '    await aattempt("_api.loadBinaryFile(asset)", lambda: api.loadBinaryFile("pyodide-lock.json"))',
  '    async def node_sockets():',
  '        r = api.initializeNodeSockFS()',
  '        return (await r) if hasattr(r, "__await__") else r',
  '    await aattempt("_api.initializeNodeSockFS", node_sockets)',
  '    try:',
  '        await pyodide_js.loadPackage("micropip")',
  '    except BaseException:',
  '        pass',
  '    def import_micropip():',
  '        import micropip',
  '        return micropip',
  '    attempt("pyodide_js.loadPackage", import_micropip)',
  '    rc = os.system("echo escaped > /tmp/py-escape")',
  '    out["os.system"] = "blocked:exit " + str(rc) if rc != 0 else "allowed:exit 0"',
  '    def run_subprocess():',
  '        import subprocess',
  '        return subprocess.run(["id"], capture_output=True).stdout',
  '    attempt("subprocess", run_subprocess)',
  '    def connect():',
  '        import socket',
  '        s = socket.create_connection(("127.0.0.1", args["port"]), timeout=2)',
  '        s.sendall(b"x")',
  '        return s',
  '    attempt("socket", connect)',
  '    attempt("host file", lambda: open(args["canaryFile"]).read())',
  '    attempt("/proc/self/environ", lambda: open("/proc/self/environ").read())',
  '    out["environ_has_canary"] = any(args["canary"] in (k + "=" + v) for k, v in os.environ.items())',
  '    out["platform"] = sys.platform',
  '    return out',
].join('\n');

/** Checks `[ok, name, seen]` over the probe's result; every check must hold on every host. */
export function pythonEscapeChecks(value: unknown): [boolean, string, string][] {
  const out: [boolean, string, string][] = [];
  if (value === null || typeof value !== 'object') return [[false, 'probe result', JSON.stringify(value)]];
  const v = value as Record<string, unknown>;
  const globals = v.js_host_globals;
  out.push([
    Array.isArray(globals) && globals.length === 0,
    'import js reaches no host global (process, require, Deno, ...)',
    JSON.stringify(globals),
  ]);
  for (const k of [
    'js.process',
    'js.globalThis.process',
    'constructor.constructor',
    'js.eval',
    'js.Function',
    '_api.loadBinaryFile(file:)',
    '_api.loadBinaryFile(asset)',
    '_api.initializeNodeSockFS',
    'pyodide_js.loadPackage',
    'os.system',
    'subprocess',
    'socket',
    'host file',
    '/proc/self/environ',
  ]) {
    const seen = typeof v[k] === 'string' ? (v[k] as string) : JSON.stringify(v[k]);
    out.push([seen.startsWith('blocked:'), `${k} fails closed`, seen]);
  }
  out.push([
    v.environ_has_canary === false,
    "the host's environment is not in os.environ",
    String(v.environ_has_canary),
  ]);
  out.push([v.platform === 'emscripten', 'runs in Pyodide (emscripten)', String(v.platform)]);
  return out;
}
