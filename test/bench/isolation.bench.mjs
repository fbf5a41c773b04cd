// Benchmark: what the OS sandbox (bubblewrap) adds to cold starts and warm calls of the Node and Deno sandboxes; test side.
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';

/** Load the compiled modules (npm run build); fall back to the TypeScript sources through tsx. */
async function load() {
  const names = ['node/sandbox', 'node/os-sandbox/posture', 'node/os-sandbox/probe', 'core/runtime'];
  try {
    if (process.env.TY_BENCH_SOURCES) throw new Error('sources requested');
    const mods = await Promise.all(names.map((n) => import(`../../dist/${n}.js`)));
    return { ...Object.assign({}, ...mods), from: 'dist' };
  } catch {
    const { tsImport } = await import('tsx/esm/api');
    const mods = [];
    for (const n of names) mods.push(await tsImport(`../../${n}.ts`, import.meta.url));
    return { ...Object.assign({}, ...mods), from: 'sources (tsx)' };
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const round = (x) => Math.round(x * 100) / 100;

/** Spawn and wait for exit; ms. */
function timedSpawn(command, args, env = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const c = spawn(command, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    c.stderr.on('data', (d) => (err += d));
    c.once('error', reject);
    c.once('exit', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${command} exited ${code}: ${err.slice(0, 300)}`))));
  });
}

const SOURCE = 'let n = 0; export default async (args) => ({ n: ++n, echo: args })';

function spec(mod, engine) {
  return {
    revision: `bisolationbench${engine}`,
    manifest: { name: 'bench', description: '', parameters: {}, execution: { kind: 'sandboxed-code', runtime: 'javascript', source: SOURCE, engine } },
    limits: { ...mod.DEFAULT_LIMITS },
  };
}
const callOpts = (mod) => ({ signal: new AbortController().signal, limits: { ...mod.DEFAULT_LIMITS }, onCapability: async () => { throw new Error('none'); } });

/** Cold start: start + first call + destroy, ms. */
async function cold(mod, engine, wrap) {
  const rt = new mod.NodeSandboxRuntime(wrap ? { engine, wrap } : { engine });
  const t0 = performance.now();
  const inst = await rt.start(spec(mod, engine));
  await inst.call({ q: 1 }, callOpts(mod));
  const ms = performance.now() - t0;
  await inst.destroy('bench');
  return ms;
}

/** Warm calls on one retained sandbox: median ms per call. */
async function warm(mod, engine, wrap, n) {
  const rt = new mod.NodeSandboxRuntime(wrap ? { engine, wrap } : { engine });
  const inst = await rt.start(spec(mod, engine));
  try {
    for (let i = 0; i < 5; i++) await inst.call({ q: i }, callOpts(mod));
    const xs = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      await inst.call({ q: i }, callOpts(mod));
      xs.push(performance.now() - t0);
    }
    return median(xs);
  } finally {
    await inst.destroy('bench');
  }
}

export async function run() {
  const mod = await load();
  const probe = await mod.probeSandbox();
  const notes = [`modules from ${mod.from}`, `backend: ${probe.backend} ${probe.version ?? ''} ${probe.available ? 'available' : `UNAVAILABLE: ${probe.reason}`}`];
  if (!probe.available) return { title: 'OS isolation overhead (bubblewrap)', rows: [], notes: [...notes, 'no backend here: nothing measured'] };
  if (probe.dropTo) notes.push(`the CLI runs as root, so sandboxes run as uid ${probe.dropTo.uid} via setpriv (included in the times)`);
  const plan = mod.planIsolation('required', probe);
  const wrap = plan.wrap;
  const node = process.execPath;
  const deno = mod.resolveDeno();
  const COLD = 9;
  const WARM = 40;
  const rows = [];

  // Bare spawns, interleaved so machine load hits both sides alike.
  const w = wrap({ command: node, args: ['-e', '0'], env: {}, readOnlyPaths: [], writablePaths: [] });
  const bare = [];
  const wrapped = [];
  for (let i = 0; i < COLD; i++) {
    bare.push(await timedSpawn(node, ['-e', '0']));
    wrapped.push(await timedSpawn(w.command, w.args, w.env));
  }
  const base = median(bare);
  rows.push({ name: 'node -e 0 inside bwrap (spawn to exit)', value: round(median(wrapped)), unit: 'ms', baseline: 'env -i node -e 0', baselineValue: round(base), ratio: round(median(wrapped) / base), target: '<= 1.15x' });

  for (const engine of ['node', ...(deno ? ['deno'] : [])]) {
    const c0 = [];
    const c1 = [];
    for (let i = 0; i < COLD; i++) {
      c0.push(await cold(mod, engine, undefined));
      c1.push(await cold(mod, engine, wrap));
    }
    const a = median(c0);
    const b = median(c1);
    rows.push({ name: `${engine} sandbox cold start (start + first call), bwrap`, value: round(b), unit: 'ms', baseline: `${engine} sandbox without bwrap`, baselineValue: round(a), ratio: round(b / a), target: '<= 1.15x' });
    rows.push({ name: `${engine} sandbox cold start, bwrap, vs bare spawn`, value: round(b), unit: 'ms', baseline: 'env -i node -e 0', baselineValue: round(base), ratio: round(b / base), target: '' });
    const w0 = await warm(mod, engine, undefined, WARM);
    const w1 = await warm(mod, engine, wrap, WARM);
    rows.push({ name: `${engine} warm call, bwrap`, value: round(w1), unit: 'ms', baseline: `${engine} warm call without bwrap`, baselineValue: round(w0), ratio: round(w1 / w0), target: '<= 1.1x' });
  }
  notes.push(`medians of ${COLD} cold runs and ${WARM} warm calls; with and without bwrap interleaved`, 'bwrap cost is namespace setup, bind mounts and setpriv/prlimit execs at spawn; a warm call crosses only the stdio pipe, so it should not differ');
  return { title: 'OS isolation overhead (bubblewrap)', rows, notes };
}
