// In-page measurements for test/bench/browser.bench.mjs (sandbox cold start, warm call, Pyodide cold load, each with a
// baseline); test code, trusted host side.
import { BrowserSandboxRuntime } from '../sandbox/runtime.js';
import { PYODIDE_MANIFEST } from '../python/pyodide-manifest.js';
import { TyError } from '../../core/errors.js';
import { DEFAULT_LIMITS } from '../../core/exec/runtime.js';
import type { ToolManifest } from '../../protocol/manifest.js';

export interface BenchSample {
  name: string;
  /** Median (warm call: mean over the series), ms. */
  value: number;
  baseline: string;
  /** Median of the baseline, ms. */
  baselineValue: number;
  runs: number;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
const js = (source: string): ToolManifest => ({
  name: 'bench',
  description: '',
  parameters: { type: 'object' },
  execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
});
const deny = async () => {
  throw new TyError('E_CAPABILITY_DENIED', 'bench');
};
const opts = { signal: new AbortController().signal, onCapability: deny, limits: DEFAULT_LIMITS };
let rev = 0;
const REV = () => `bafkreibench${(rev++).toString().padStart(8, '0')}aaaaaaaaaaaaaaaa`;

function plainWorker(src: string): Worker {
  const url = URL.createObjectURL(new Blob([src], { type: 'text/javascript' }));
  try {
    return new Worker(url, { type: 'module' });
  } finally {
    URL.revokeObjectURL(url);
  }
}
function once(w: Worker): Promise<unknown> {
  return new Promise((resolve, reject) => {
    w.onmessage = (m) => resolve(m.data);
    w.onerror = (e) => reject(new Error(e.message));
  });
}

/** Run the browser benchmarks in this page. `pyodideRuns` 0 skips the Pyodide pair. */
export async function runBrowserBench(
  o: { coldRuns?: number; warmRuns?: number; pyodideRuns?: number } = {},
): Promise<BenchSample[]> {
  const coldRuns = o.coldRuns ?? 7;
  const warmRuns = o.warmRuns ?? 300;
  const pyRuns = o.pyodideRuns ?? 2;
  const rt = new BrowserSandboxRuntime({ pyodide: PYODIDE_MANIFEST });
  const out: BenchSample[] = [];

  // Cold start: frame + worker + handshake + tool module loaded, against a plain Blob worker's first message.
  const cold: number[] = [];
  const coldBase: number[] = [];
  for (let i = 0; i < coldRuns; i++) {
    let t = performance.now();
    const sb = await rt.start({
      revision: REV(),
      manifest: js('export default async () => 1'),
      limits: DEFAULT_LIMITS,
    });
    cold.push(performance.now() - t);
    await sb.destroy('bench');
    t = performance.now();
    const w = plainWorker('postMessage("ready")');
    await once(w);
    coldBase.push(performance.now() - t);
    w.terminate();
  }
  out.push({
    name: 'sandbox cold start (frame + worker ready, tool loaded)',
    value: median(cold),
    baseline: 'plain Blob worker first message',
    baselineValue: median(coldBase),
    runs: coldRuns,
  });

  // Warm call round trip through the wire protocol, against a bare postMessage echo.
  const sb = await rt.start({ revision: REV(), manifest: js('export default async (a) => a'), limits: DEFAULT_LIMITS });
  // performance.now() is coarse (100 µs) without cross-origin isolation: time the whole series, report the mean.
  await sb.call({ i: -1 }, opts);
  let t0 = performance.now();
  for (let i = 0; i < warmRuns; i++) await sb.call({ i }, opts);
  const warm = (performance.now() - t0) / warmRuns;
  await sb.destroy('bench');
  const echo = plainWorker('onmessage = (m) => postMessage(m.data)');
  const p0 = once(echo);
  echo.postMessage({ i: -1 });
  await p0;
  t0 = performance.now();
  for (let i = 0; i < warmRuns; i++) {
    const p = once(echo);
    echo.postMessage({ i });
    await p;
  }
  const bare = (performance.now() - t0) / warmRuns;
  echo.terminate();
  out.push({
    name: 'warm call round trip (retained sandbox, mean)',
    value: warm,
    baseline: 'bare postMessage round trip to a plain worker (mean)',
    baselineValue: bare,
    runs: warmRuns,
  });

  if (pyRuns > 0) {
    const src = 'def main(args, ctx):\n    return 1';
    const py: number[] = [];
    const pyBase: number[] = [];
    const base = new URL(PYODIDE_MANIFEST.base, location.href).href;
    for (let i = 0; i < pyRuns; i++) {
      let t = performance.now();
      const s = await rt.start({
        revision: REV(),
        manifest: { ...js(src), execution: { kind: 'sandboxed-code', runtime: 'python', source: src } },
        limits: DEFAULT_LIMITS,
      });
      await s.call({}, opts);
      py.push(performance.now() - t);
      await s.destroy('bench');
      t = performance.now();
      const w = plainWorker(
        `const m = await import(${JSON.stringify(base + 'pyodide.mjs')}); const p = await m.loadPyodide({ indexURL: ${JSON.stringify(base)} }); p.runPython('1'); postMessage('ready');`,
      );
      await once(w);
      pyBase.push(performance.now() - t);
      w.terminate();
    }
    out.push({
      name: 'Pyodide cold load + first call (verified assets, sandboxed)',
      value: median(py),
      baseline: 'loadPyodide in a plain worker from the same server',
      baselineValue: median(pyBase),
      runs: pyRuns,
    });
  }
  return out;
}
