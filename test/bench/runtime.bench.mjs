// Benchmark: CLI sandbox runtime (node and deno subprocesses) cold start, warm call and throughput vs bare baselines; test side.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';

/** Load the compiled modules (npm run build); fall back to the TypeScript sources through tsx. */
async function load() {
  try {
    if (process.env.TY_BENCH_SOURCES) throw new Error('sources requested');
    const sandbox = await import('../../dist/node/sandbox.js');
    const runtime = await import('../../dist/core/runtime.js');
    return { ...sandbox, ...runtime, from: 'dist' };
  } catch {
    const { tsImport } = await import('tsx/esm/api');
    const sandbox = await tsImport('../../node/sandbox.ts', import.meta.url);
    const runtime = await tsImport('../../core/runtime.ts', import.meta.url);
    return { ...sandbox, ...runtime, from: 'sources (tsx)' };
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

/** Spawn `command args` with an empty environment and wait for it to exit; ms. */
function bareSpawn(command, args) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const c = spawn(command, args, { env: {}, stdio: ['ignore', 'ignore', 'ignore'] });
    c.once('error', reject);
    c.once('exit', () => resolve(performance.now() - t0));
  });
}

const SOURCE = 'let n = 0; export default async (args) => ({ n: ++n, echo: args })';
const ARGS = { q: 'hello', k: 3 };

function spec(mod, i) {
  return {
    revision: `bbench${i}`,
    manifest: { name: 'bench', description: '', parameters: {}, execution: { kind: 'sandboxed-code', runtime: 'javascript', source: SOURCE } },
    limits: { ...mod.DEFAULT_LIMITS },
  };
}
const opts = (mod) => ({
  signal: new AbortController().signal,
  onCapability: async () => {
    throw new Error('no capabilities in this benchmark');
  },
  limits: { ...mod.DEFAULT_LIMITS },
});

/**
 * Cold sandbox (start + first call) and bare spawn, interleaved run by run so machine load hits both alike.
 * @returns {{ cold: number, base: number }} medians, ms
 */
async function coldPair(mod, engine, command, baseArgs, n) {
  const rt = new mod.NodeSandboxRuntime({ engine });
  // one warm-up of each (permission-flag probe, page cache)
  const w = await rt.start(spec(mod, 'warm'));
  await w.destroy('warm-up');
  await bareSpawn(command, baseArgs);
  const cold = [];
  const base = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const inst = await rt.start(spec(mod, i));
    await inst.call(ARGS, opts(mod));
    cold.push(performance.now() - t0);
    await inst.destroy('bench');
    base.push(await bareSpawn(command, baseArgs));
  }
  return { cold: median(cold), base: median(base) };
}

/** Two bare node spawns interleaved; medians, ms. */
async function coldPairSpawn(argsA, argsB, n) {
  const a = [];
  const b = [];
  await bareSpawn(process.execPath, argsA);
  for (let i = 0; i < n; i++) {
    a.push(await bareSpawn(process.execPath, argsA));
    b.push(await bareSpawn(process.execPath, argsB));
  }
  return { cold: median(a), base: median(b) };
}

/** A retained sandbox as a round-tripper: `rt()` is one call; `close()` destroys it. */
async function sandboxTripper(mod, engine) {
  const rt = new mod.NodeSandboxRuntime({ engine });
  const inst = await rt.start(spec(mod, `warm-${engine}`));
  const o = opts(mod);
  return { rt: () => inst.call(ARGS, o), close: () => inst.destroy('bench') };
}

/** A bare worker_threads echo (postMessage there and back): the cheapest in-host isolation boundary. */
function workerTripper() {
  const w = new Worker("const { parentPort } = require('node:worker_threads'); parentPort.on('message', (m) => parentPort.postMessage(m));", { eval: true });
  return { rt: () => new Promise((r) => { w.once('message', r); w.postMessage(ARGS); }), close: () => w.terminate() };
}

/** NDJSON lines through a bare echo subprocess: the transport floor of any subprocess sandbox. */
function echoTripper() {
  const c = spawn(process.execPath, ['-e', "process.stdin.setEncoding('utf8');let b='';process.stdin.on('data',d=>{b+=d;let i;while((i=b.indexOf('\\n'))>=0){const l=b.slice(0,i);b=b.slice(i+1);process.stdout.write(l+'\\n');}})"], { env: {}, stdio: ['pipe', 'pipe', 'ignore'] });
  let waiting;
  c.stdout.on('data', () => {
    const w = waiting;
    waiting = undefined;
    w?.();
  });
  const line = JSON.stringify({ v: 1, type: 'call', id: 1, args: ARGS }) + '\n';
  return { rt: () => new Promise((r) => { waiting = r; c.stdin.write(line); }), close: () => c.kill('SIGKILL') };
}

/**
 * Warm round trips, interleaved call by call across all trippers so machine load hits each alike; then
 * sequential throughput per tripper.
 * @returns {Record<string, { warm: number, perSecond: number }>} median ms, calls/s
 */
async function warmAll(trippers, n, throughputCalls) {
  const names = Object.keys(trippers);
  const samples = Object.fromEntries(names.map((k) => [k, []]));
  for (const k of names) for (let i = 0; i < 50; i++) await trippers[k].rt();
  for (let i = 0; i < n; i++) {
    for (const k of names) {
      const t0 = performance.now();
      await trippers[k].rt();
      samples[k].push(performance.now() - t0);
    }
  }
  const out = {};
  for (const k of names) {
    const t0 = performance.now();
    for (let i = 0; i < throughputCalls; i++) await trippers[k].rt();
    out[k] = { warm: median(samples[k]), perSecond: throughputCalls / ((performance.now() - t0) / 1000) };
  }
  return out;
}

const round = (x, d = 3) => Number(x.toFixed(d));

/** @returns {Promise<{title: string, rows: object[], notes: string[]}>} */
export async function run({ coldRuns = 21, warmRuns = 1000, throughputCalls = 2000 } = {}) {
  const mod = await load();
  const deno = mod.resolveDeno();
  const rows = [];
  const notes = [
    `modules loaded from ${mod.from}; medians; cold = spawn + handshake + load + first call; baselines spawn with an empty environment (env -i) like the sandbox`,
    'sandbox and baseline runs are interleaved run by run (cold) and call by call (warm), so machine load affects both alike',
    'the Node runner is CommonJS with fd I/O (node/runner/sandbox-runner.cjs): an ES-module entry alone costs about 6 ms, building process.stdout/stdin streams about 4 ms, on a ~30 ms bare start',
  ];
  const engines = [['node', process.execPath, ['-e', '0']]];
  if (deno) engines.push(['deno', deno, ['eval', '0']]);
  else notes.push('deno binary not found: deno rows skipped');

  // Floor: what any Node subprocess that loads ES-module tool code pays.
  const dir = mkdtempSync(join(tmpdir(), 'tysandbox-bench-'));
  try {
    const esm = join(dir, 'floor.mjs');
    writeFileSync(esm, "await import('data:text/javascript,export default 1'); process.exit(0);\n");
    const perm = process.allowedNodeEnvironmentFlags.has('--permission') ? '--permission' : '--experimental-permission';
    const { cold: floor, base } = await coldPairSpawn([perm, '--no-warnings', `--allow-fs-read=${esm}`, esm], ['-e', '0'], coldRuns);
    rows.push({ name: 'floor: node (permission model) importing one data: ES module, then exit', value: round(floor, 1), unit: 'ms', baseline: 'env -i node -e 0', baselineValue: round(base, 1), ratio: round(floor / base, 2) });
    // The Node runner's own shape: a CommonJS entry (no ES-module loader until the tool's module), fd 1 written directly.
    const cjs = join(dir, 'floor.cjs');
    writeFileSync(cjs, "require('node:fs').writeSync(1, '');\nimport('data:text/javascript,export default 1').then(() => process.exit(0));\n");
    const c = await coldPairSpawn([perm, '--no-warnings', `--allow-fs-read=${cjs}`, cjs], ['-e', '0'], coldRuns);
    rows.push({ name: 'floor: node (permission model), CommonJS entry importing one data: ES module, then exit', value: round(c.cold, 1), unit: 'ms', baseline: 'env -i node -e 0', baselineValue: round(c.base, 1), ratio: round(c.cold / c.base, 2) });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  for (const [engine, cmd, baseArgs] of engines) {
    const { cold, base } = await coldPair(mod, engine, cmd, baseArgs, coldRuns);
    rows.push({ name: `${engine}: cold call (spawn + load + first call)`, value: round(cold, 1), unit: 'ms', baseline: `env -i ${engine === 'node' ? 'node -e 0' : 'deno eval 0'}`, baselineValue: round(base, 1), ratio: round(cold / base, 2), target: '<= 1.3x' });
  }

  const trippers = { worker: workerTripper(), echo: echoTripper() };
  for (const [engine] of engines) trippers[engine] = await sandboxTripper(mod, engine);
  let warm;
  try {
    warm = await warmAll(trippers, warmRuns, throughputCalls);
  } finally {
    await Promise.all(Object.values(trippers).map((t) => t.close()));
  }
  const w = warm.worker;
  rows.push({ name: 'floor: NDJSON round trip through a bare echo subprocess', value: round(warm.echo.warm), unit: 'ms', baseline: 'worker_threads postMessage round trip', baselineValue: round(w.warm), ratio: round(warm.echo.warm / w.warm, 2) });
  for (const [engine] of engines) {
    const r = warm[engine];
    rows.push({ name: `${engine}: warm call on a retained sandbox`, value: round(r.warm), unit: 'ms', baseline: 'worker_threads postMessage round trip', baselineValue: round(w.warm), ratio: round(r.warm / w.warm, 2), target: '<= 3x' });
    rows.push({ name: `${engine}: warm call vs the subprocess transport floor`, value: round(r.warm), unit: 'ms', baseline: 'bare echo subprocess round trip', baselineValue: round(warm.echo.warm), ratio: round(r.warm / warm.echo.warm, 2) });
    rows.push({ name: `${engine}: calls per second, one retained sandbox`, value: Math.round(r.perSecond), unit: 'calls/s', baseline: 'worker_threads round trips per second', baselineValue: Math.round(w.perSecond), ratio: round(r.perSecond / w.perSecond, 2) });
  }
  return { title: 'Sandbox runtime (CLI subprocesses)', rows, notes };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await run();
  console.log(JSON.stringify(r, null, 2));
}
