// Benchmark: sandboxed Python (Pyodide in the Node sandbox process) cold and warm calls vs Pyodide used directly in
// Node; test side.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { pairRatio, spread, summary } from './stats.mjs';

/** Load the compiled modules (npm run build); fall back to the TypeScript sources through tsx. */
async function load() {
  try {
    if (process.env.TY_BENCH_SOURCES) throw new Error('sources requested');
    const sandbox = await import('../../dist/node/sandbox/runtime.js');
    const runtime = await import('../../dist/core/exec/runtime.js');
    return { ...sandbox, ...runtime, from: 'dist' };
  } catch {
    const { tsImport } = await import('tsx/esm/api');
    const sandbox = await tsImport('../../node/sandbox.ts', import.meta.url);
    const runtime = await tsImport('../../core/runtime.ts', import.meta.url);
    return { ...sandbox, ...runtime, from: 'sources (tsx)' };
  }
}

const SOURCE = [
  'def main(args, ctx):',
  '    words = args["text"].split()',
  '    return {"n": len(words), "upper": args["text"].upper()}',
].join('\n');
const ARGS = { text: 'the quick brown fox' };

const spec = (mod) => ({
  revision: 'bagaaierapythonbenchaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  manifest: {
    name: 'pybench',
    description: '',
    parameters: {},
    execution: { kind: 'sandboxed-code', runtime: 'python', source: SOURCE },
  },
  limits: { ...mod.DEFAULT_LIMITS, timeoutMs: 120_000 },
});
const opts = (mod) => ({
  signal: new AbortController().signal,
  onCapability: async () => null,
  limits: { ...mod.DEFAULT_LIMITS, timeoutMs: 120_000 },
});

/**
 * The baseline a user would write by hand: a fresh `node` (empty environment) that calls loadPyodide() from the
 * installed package, runs the same source in a fresh namespace and calls main once with JSON in and out.
 */
function baselineScript(pyodideMjs) {
  return `import { loadPyodide } from ${JSON.stringify(pathToFileURL(pyodideMjs).href)};
const py = await loadPyodide({ indexURL: ${JSON.stringify(dirname(pyodideMjs) + '/')} });
const ns = py.globals.get('dict')();
py.runPython(${JSON.stringify(SOURCE)}, { globals: ns });
ns.set('args_json', ${JSON.stringify(JSON.stringify(ARGS))});
const out = py.runPython('import json\\njson.dumps(main(json.loads(args_json), None))', { globals: ns });
process.stdout.write(out + '\\n');
`;
}

/** Spawn the baseline and wait for its one output line; ms. */
function baselineCold(script) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const c = spawn(process.execPath, [script], { env: {}, stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    c.stdout.on('data', (d) => {
      out += String(d);
      if (out.includes('\n')) resolve(performance.now() - t0);
    });
    c.once('error', reject);
    c.once('exit', (code) => {
      if (!out.includes('\n')) reject(new Error(`baseline exited with ${code}`));
    });
  });
}

async function sandboxCold(mod, rt) {
  const t0 = performance.now();
  const sb = await rt.start(spec(mod));
  await sb.call(ARGS, opts(mod));
  const ms = performance.now() - t0;
  await sb.destroy('bench');
  return ms;
}

const round = (x, d = 1) => Number(x.toFixed(d));

export async function run({ coldRuns = 7, warmRuns = 300 } = {}) {
  const mod = await load();
  const req = createRequire(join(mod.packageRoot(), 'package.json'));
  const pyodideMjs = join(dirname(req.resolve('pyodide/package.json')), 'pyodide.mjs');
  const dir = mkdtempSync(join(tmpdir(), 'tysandbox-pybench-'));
  const rows = [];
  const notes = [
    `modules loaded from ${mod.from}; medians of ${coldRuns} cold runs and ${warmRuns} warm calls, sandbox and baseline interleaved run by run (cold) and call by call (warm)`,
    'cold = spawn + Pyodide start + first call; the sandbox also checks every Pyodide file by sha-256 ' +
      '(on the host, cached per file state, and inside the sandbox on the bytes it evaluates) and ' +
      'starts no OS wrapper here (the runtime bench measures the wrapper separately)',
    'baseline cold: a fresh node with an empty environment calling loadPyodide() from the installed package, running the same source and calling main once (JSON in and out)',
    'warm = one call on a retained sandbox: args as JSON over stdio, a fresh namespace for the tool ' +
      'source, main(args, ctx), the result as JSON back, then the in-memory /tmp and home remounted; ' +
      'baseline warm: the same source run in a fresh namespace and main called through runPython with ' +
      'JSON in and out, in this process',
  ];
  try {
    const script = join(dir, 'baseline.mjs');
    writeFileSync(script, baselineScript(pyodideMjs));
    const rt = new mod.NodeSandboxRuntime({ engine: 'node' });
    // Warm-up of both (page cache, the host's digest cache).
    await sandboxCold(mod, rt);
    await baselineCold(script);
    const cold = [];
    const base = [];
    for (let i = 0; i < coldRuns; i++) {
      cold.push(await sandboxCold(mod, rt));
      base.push(await baselineCold(script));
    }
    const c = summary(cold);
    const b = summary(base);
    const cr = pairRatio(cold, base);
    rows.push({
      name: 'python (node sandbox): cold call (spawn + verify + Pyodide start + first call)',
      value: round(c.median),
      unit: 'ms',
      spread: spread(c, b, 1),
      baseline: 'node + loadPyodide() directly + first call',
      baselineValue: round(b.median),
      ratio: round(c.median / b.median, 2),
      ratioSpread: `${cr.p25.toFixed(2)}–${cr.p75.toFixed(2)}`,
      target: '<= 1.2x',
    });

    // Warm: a retained sandbox against Pyodide in this process.
    const { loadPyodide } = await import(pathToFileURL(pyodideMjs).href);
    const py = await loadPyodide({ indexURL: `${dirname(pyodideMjs)}/` });
    py.runPython('import json');
    const direct = () => {
      const ns = py.globals.get('dict')();
      try {
        py.runPython(SOURCE, { globals: ns });
        ns.set('args_json', JSON.stringify(ARGS));
        return JSON.parse(py.runPython('import json\njson.dumps(main(json.loads(args_json), None))', { globals: ns }));
      } finally {
        ns.destroy();
      }
    };
    const sb = await rt.start(spec(mod));
    try {
      const o = opts(mod);
      for (let i = 0; i < 30; i++) {
        await sb.call(ARGS, o);
        direct();
      }
      const warm = [];
      const dwarm = [];
      for (let i = 0; i < warmRuns; i++) {
        let t0 = performance.now();
        await sb.call(ARGS, o);
        warm.push(performance.now() - t0);
        t0 = performance.now();
        direct();
        dwarm.push(performance.now() - t0);
      }
      const w = summary(warm);
      const d = summary(dwarm);
      const wr = pairRatio(warm, dwarm);
      rows.push({
        name: 'python (node sandbox): warm call on the retained sandbox',
        value: round(w.median, 3),
        unit: 'ms',
        spread: spread(w, d, 3),
        baseline: 'runPython round trip in-process (same source, fresh namespace, JSON in and out)',
        baselineValue: round(d.median, 3),
        ratio: round(w.median / d.median, 2),
        ratioSpread: `${wr.p25.toFixed(2)}–${wr.p75.toFixed(2)}`,
        target: '<= 1.5x',
      });
    } finally {
      await sb.destroy('bench');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { title: 'Sandboxed Python (Pyodide in the sandbox process)', rows, notes };
}
