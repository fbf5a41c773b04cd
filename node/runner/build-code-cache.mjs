// Build step (`npm run build`, after tsc): writes node/runner/sandbox-runner.cache, the V8 code cache of the Node
// sandbox runner; trusted side, never run by a sandbox.
// The cache is made by a node process started with the V8 flags of a default sandbox (V8 rejects a cache made under
// other flags) that runs the runner exactly as sandbox-runner-entry.cjs compiles it, serves one load and one call of
// a small tool over its stdio (so the functions of start-up, load and a first call are compiled into it), and writes
// the cache when its input ends. Then a second process checks that the entry accepts it; if not, no cache is left.
// Usage: node node/runner/build-code-cache.mjs            (the child role: --child, internal)
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const ENTRY = `${here}/sandbox-runner-entry.cjs`;
const entry = require(ENTRY);

/**
 * The engine flags of a default JavaScript sandbox without its permission flags and runner path
 * (node/sandbox/runtime.ts).
 */
async function sandboxFlags() {
  const { NodeSandboxRuntime } = await import('../../dist/node/sandbox/runtime.js');
  const { DEFAULT_LIMITS } = await import('../../dist/core/exec/runtime.js');
  const spec = {
    revision: 'bcodecache',
    manifest: {
      name: 'code-cache',
      description: '',
      parameters: {},
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source: '' },
    },
    limits: { ...DEFAULT_LIMITS },
  };
  const cmd = new NodeSandboxRuntime({ engine: 'node' }).command(spec);
  const runnerAt = cmd.args.indexOf(ENTRY);
  if (runnerAt === -1) throw new Error(`the sandbox command line does not run ${ENTRY}`);
  return {
    node: cmd.command,
    flags: cmd.args.slice(0, runnerAt).filter((a) => !/^--(experimental-)?permission$|^--allow-/.test(a)),
  };
}

const TOOL =
  "let n = 0; export default async (args, ctx) => { console.log('code cache', n); return { n: ++n, args, signal: typeof ctx.signal }; }";

async function build() {
  rmSync(entry.CACHE, { force: true });
  const { node, flags } = await sandboxFlags();
  const child = spawn(node, [...flags, fileURLToPath(import.meta.url), '--child'], {
    env: {},
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let buf = '';
  let served = false;
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d) => {
    buf += d;
    for (let nl = buf.indexOf('\n'); nl !== -1; nl = buf.indexOf('\n')) {
      const m = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      if (m.type === 'ready')
        child.stdin.write(`${JSON.stringify({ v: 1, type: 'load', runtime: 'javascript', source: TOOL })}\n`);
      else if (m.type === 'loaded' && m.ok)
        child.stdin.write(`${JSON.stringify({ v: 1, type: 'call', id: 1, args: { q: 'x', k: [1, 2] } })}\n`);
      else if (m.type === 'result' && m.ok) {
        served = true;
        child.stdin.end();
      } else if (m.type !== 'log') {
        child.kill('SIGKILL');
      }
    }
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const { code, signal } = await exited;
  clearTimeout(timer);
  if (!served || code !== 0) {
    rmSync(entry.CACHE, { force: true });
    throw new Error(`building the runner's code cache failed (exit ${code ?? signal}, served ${served})`);
  }
  const check = spawnSync(node, [...flags, fileURLToPath(import.meta.url), '--check'], {
    env: {},
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (check.stdout !== 'used') {
    rmSync(entry.CACHE, { force: true });
    process.stderr.write(
      `the runner's code cache was not accepted by ${node} (${check.stdout || check.stderr}); sandboxes compile the runner without it\n`,
    );
  }
}

if (process.argv[2] === '--child') {
  // The runner in this process, compiled without a cache; the cache is written when the runner exits (input ended).
  const compiled = entry.compileRunner(false);
  const tmp = `${entry.CACHE}.${process.pid}.tmp`;
  let written = false;
  const writeCache = () => {
    if (written) return;
    written = true;
    writeFileSync(tmp, entry.cacheFileBytes(compiled), { mode: 0o644 });
    chmodSync(tmp, 0o644); // readable by a root CLI's sandbox uids whatever the umask, like the runner files
    renameSync(tmp, entry.CACHE);
  };
  process.on('exit', writeCache);
  // The runner ends through the process.reallyExit it captures as it loads (no 'exit' event): that binding is this
  // wrapper, which writes the cache first.
  const reallyExit = process.reallyExit;
  process.reallyExit = (code) => {
    writeCache();
    reallyExit.call(process, code);
  };
  compiled.script.runInThisContext()(createRequire(entry.RUNNER), dirname(entry.RUNNER), (url) => import(url));
} else if (process.argv[2] === '--check') {
  process.stdout.write(entry.compileRunner().cacheUsed ? 'used' : 'unused');
} else {
  try {
    await build();
  } catch (e) {
    // Never fails the build: sandboxes then compile the runner from its files.
    rmSync(entry.CACHE, { force: true });
    process.stderr.write(`no code cache for the Node sandbox runner: ${e instanceof Error ? e.message : String(e)}\n`);
  }
}
