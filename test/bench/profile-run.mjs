// CPU profile of a whole `tycli run` (node --cpu-prof), summarized by module group and phase, plus a module count; test
// side.
// Usage: node test/bench/profile-run.mjs [--root DIR] [--runs N] [--unbundled] [--json]
//   --unbundled  run the compiled modules (dist/node/cli/main.js) instead of the bundle (TYCLI_UNBUNDLED=1)
//   --root DIR  profile the tysandbox checkout in DIR (built with `npm run build`), e.g. an older commit in a
//               `git worktree add /tmp/old <commit>` to compare before and after; default: this checkout.
// Each run: a fresh TYCLI_HOME with csv-stats added (not profiled), then `tycli run csv-stats` under --cpu-prof with a
// module-load counter preloaded; the caller's environment is kept (NODE_EXTRA_CA_CERTS included), like a user's shell.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { SourceMapConsumer } from 'source-map-js';
import { quantile } from './stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));

/**
 * Group a profile node's script URL into a module group: a package, a dist/ folder, node internals, or a V8
 * pseudo-frame.
 */
export function groupOf(url, functionName, root) {
  if (!url)
    return functionName === '(garbage collector)'
      ? 'V8: garbage collector'
      : functionName === '(program)'
        ? 'V8: (program) compile/parse/native'
        : functionName === '(idle)'
          ? 'idle (waiting: sandbox child, I/O)'
          : `V8: ${functionName}`;
  // node:vm: bin/bundle-loader.mjs compiles the bundled command line through vm.Script (deserializing its code cache)
  if (
    url.startsWith('node:internal/modules/') ||
    url.startsWith('node:internal/vm') ||
    url === 'node:vm' ||
    url === 'node:internal/main/run_main_module'
  )
    return 'node: module loader';
  if (url.startsWith('node:')) return 'node: built-ins';
  let path = url;
  try {
    if (url.startsWith('file:')) path = fileURLToPath(url);
  } catch {
    /* keep the URL */
  }
  const nm = path.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = path.slice(nm + '/node_modules/'.length).split('/');
    return `npm: ${rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (path.startsWith(root + '/')) {
    const rel = path.slice(root.length + 1).split('/');
    if (rel[0] === 'dist')
      return `tysandbox: dist/${rel.slice(1, rel[1] === 'node' && rel.length > 3 ? 3 : 2).join('/')}`;
    return `tysandbox: ${rel.slice(0, 2).join('/')}`;
  }
  return 'other';
}

/**
 * Self time per group of one .cpuprofile, and the phase split: "start-up to main()" (before the first sample whose
 * stack
 * holds the CLI's main), and "main() to exit" (the rest), both in ms of sampled time.
 * "loading" is the sampled time whose stack is inside node's module loader (resolving, compiling, evaluating modules).
 * Frames of the bundled CLI (dist/cli/) are attributed to their original modules through the bundle's source maps.
 * @returns {{ total: number, groups: Record<string, number>, beforeMain: number, afterMain: number, idleAfterMain:
 *   number, loading: number }}
 */
export function summarizeProfile(profile, root) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const maps = new Map();
  /**
   * A frame of the bundled CLI (dist/cli/tycli.cjs, a vm.Script named by its path) mapped to its original file through
   * the bundle's source map.
   */
  const original = (cf) => {
    if (!cf.url.includes('/dist/cli/') || cf.lineNumber < 0) return cf.url;
    let m = maps.get(cf.url);
    if (m === undefined) {
      try {
        const file = cf.url.startsWith('file:') ? fileURLToPath(cf.url) : cf.url;
        m = { c: new SourceMapConsumer(JSON.parse(readFileSync(`${file}.map`, 'utf8'))), dir: dirname(file) };
      } catch {
        m = null;
      }
      maps.set(cf.url, m);
    }
    if (!m) return cf.url;
    const pos = m.c.originalPositionFor({ line: cf.lineNumber + 1, column: cf.columnNumber });
    return pos.source ? pathToFileURL(resolve(m.dir, pos.source)).href : cf.url;
  };
  const groupCache = new Map();
  const groupFor = (n) => {
    let g = groupCache.get(n.id);
    if (g === undefined) groupCache.set(n.id, (g = groupOf(original(n.callFrame), n.callFrame.functionName, root)));
    return g;
  };
  const loaderCache = new Map();
  /** True when the sample's stack runs inside node's module loader (resolving, compiling or evaluating a module). */
  const inLoader = (id) => {
    if (loaderCache.has(id)) return loaderCache.get(id);
    const u = byId.get(id).callFrame.url;
    const p = parent.get(id);
    // node's module loader, or bin/bundle-loader.mjs reading, compiling (vm.Script, with the code cache) and evaluating
    // the bundle's top level
    const v =
      u.startsWith('node:internal/modules/') ||
      u.endsWith('/bin/bundle-loader.mjs') ||
      (p !== undefined && inLoader(p));
    loaderCache.set(id, v);
    return v;
  };
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const inMain = new Map();
  const isMain = (id) => {
    if (inMain.has(id)) return inMain.get(id);
    const n = byId.get(id);
    const own =
      n.callFrame.functionName === 'main' && /\/cli\/main\.js$|\/dist\/cli\/tycli\.(mjs|cjs)$/.test(n.callFrame.url);
    const p = parent.get(id);
    const v = own || (p !== undefined && isMain(p));
    inMain.set(id, v);
    return v;
  };
  const groups = {};
  let total = 0;
  let beforeMain = 0;
  let afterMain = 0;
  let idleAfterMain = 0;
  let loading = 0;
  let mainSeen = false;
  for (let i = 0; i < profile.samples.length; i++) {
    const n = byId.get(profile.samples[i]);
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    const g = groupFor(n);
    groups[g] = (groups[g] ?? 0) + ms;
    total += ms;
    if (inLoader(n.id)) loading += ms;
    if (!mainSeen && isMain(n.id)) mainSeen = true;
    if (mainSeen) {
      afterMain += ms;
      if (g.startsWith('idle')) idleAfterMain += ms;
    } else beforeMain += ms;
  }
  return { total, groups, beforeMain, afterMain, idleAfterMain, loading };
}

/**
 * A preload (--import) that records every ES module the loader loads and every CommonJS module in the require cache.
 */
function counterModule(out) {
  const hooks = `import { appendFileSync } from 'node:fs'; export async function load(url, context, next) { appendFileSync(${JSON.stringify(out)}, url + '\\n'); return next(url, context); }`;
  return [
    "import { register, createRequire } from 'node:module';",
    "import { appendFileSync } from 'node:fs';",
    `register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)});`,
    'const req = createRequire(import.meta.url);',
    `process.on('exit', () => { appendFileSync(${JSON.stringify(out)}, Object.keys(req.cache).map((f) => 'cjs:' + f).join('\\n') + '\\n'); });`,
  ].join('\n');
}

/**
 * A preload (--import) that writes when, in ms since the process started (performance.now()), tycli spawned its
 * sandbox process (`spawn`), sent it the tool's source (`load`) and exited (`exit`): the prestart's overlap.
 */
function timelineModule(out) {
  return [
    "import cp from 'node:child_process'; import { appendFileSync } from 'node:fs'; import { syncBuiltinESMExports } from 'node:module';",
    `const log = (what) => appendFileSync(${JSON.stringify(out)}, what + ' ' + performance.now().toFixed(1) + '\\n');`,
    'const orig = cp.spawn;',
    "cp.spawn = function (...a) { const c = orig.apply(this, a); if (JSON.stringify(a[1] ?? []).includes('sandbox-runner')) " +
      "{ log('spawn'); const w = c.stdin.write; let sent = false; c.stdin.write = function (chunk, " +
      '...r) { if (!sent && String(chunk).includes(\'"type":"load"\')) { sent = true; log(\'load\'); ' +
      '} return w.call(this, chunk, ...r); }; } return c; };',
    'syncBuiltinESMExports();',
    "process.on('exit', () => log('exit'));",
  ].join('\n');
}

/**
 * Count loaded modules (ES and CommonJS, node: built-ins excluded) per group. The bundled command line is no module to
 * node's loaders (bin/bundle-loader.mjs compiles dist/cli/tycli.cjs through vm.Script): counted as one file when its
 * loader was loaded and the run was not TYCLI_UNBUNDLED.
 */
function countModules(lines, root, unbundled) {
  const seen = new Set(lines.filter((l) => l && !l.startsWith('node:') && !l.startsWith('data:')));
  const bundle = join(root, 'dist', 'cli', 'tycli.cjs');
  if (!unbundled && [...seen].some((l) => l.endsWith('/bin/bundle-loader.mjs')) && existsSync(bundle))
    seen.add(`cjs:${bundle}`);
  const groups = {};
  let bytes = 0;
  for (const l of seen) {
    const url = l.startsWith('cjs:') ? pathToFileURL(l.slice(4)).href : l;
    const g = groupOf(url, '', root);
    groups[g] = (groups[g] ?? 0) + 1;
    try {
      bytes += statSync(fileURLToPath(url)).size;
    } catch {
      /* not a file */
    }
  }
  return { total: seen.size, groups, bytes };
}

/**
 * Profile `runs` whole `tycli run csv-stats` processes of the checkout at `root`.
 * @returns {{ runs: number, wallMs: number[], profiles: object[], modules: { total: number, groups: Record<string,
 *   number> }, timelines: { spawn?: number, load?: number, exit?: number }[] }}
 */
export function profileRuns({ root = resolve(here, '..', '..'), runs = 5, env: extraEnv = {} } = {}) {
  const bin = join(root, 'bin', 'tycli.mjs');
  const ex = join(root, 'tools', 'examples');
  const dir = mkdtempSync(join(tmpdir(), 'tysandbox-profile-'));
  const profiles = [];
  const wallMs = [];
  const timelines = [];
  let modules = { total: 0, groups: {} };
  try {
    for (let i = 0; i < runs; i++) {
      const home = mkdtempSync(join(dir, 'home-'));
      const env = { ...process.env, ...extraEnv, TYCLI_HOME: home };
      const add = spawnSync(process.execPath, [bin, 'tool', 'add', join(root, 'tools', 'csv-stats', 'manifest.json')], {
        env,
        encoding: 'utf8',
      });
      if (add.status !== 0) throw new Error(`tool add failed: ${add.stderr}`);
      const profDir = mkdtempSync(join(dir, 'prof-'));
      const countFile = join(dir, `modules-${i}.txt`);
      const pre = join(dir, `count-${i}.mjs`);
      writeFileSync(pre, counterModule(countFile));
      const args = [
        'run',
        'csv-stats',
        '--arg-file',
        `csv=${join(ex, 'data', 'sales.csv')}`,
        '--args',
        `@${join(ex, 'args-csv-stats.json')}`,
      ];
      // Profile without the counter (its hooks thread would be profiled time); count modules in a separate run.
      const t0 = performance.now();
      const r = spawnSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${profDir}`, bin, ...args], {
        env,
        encoding: 'utf8',
      });
      wallMs.push(performance.now() - t0);
      if (r.status !== 0) throw new Error(`tycli run failed (${r.status}): ${r.stderr}`);
      const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
      profiles.push(summarizeProfile(JSON.parse(readFileSync(join(profDir, file), 'utf8')), root));
      if (i === 0) {
        const c = spawnSync(process.execPath, ['--import', pathToFileURL(pre).href, bin, ...args], {
          env,
          encoding: 'utf8',
        });
        if (c.status !== 0) throw new Error(`counted run failed: ${c.stderr}`);
        modules = countModules(readFileSync(countFile, 'utf8').split('\n'), root, env.TYCLI_UNBUNDLED === '1');
      }
      // One more run in this home (the tool added, earlier runs done): when the sandbox was spawned and sent the tool.
      const tlFile = join(dir, `timeline-${i}.txt`);
      const tlPre = join(dir, `timeline-${i}.mjs`);
      writeFileSync(tlPre, timelineModule(tlFile));
      const t = spawnSync(process.execPath, ['--import', pathToFileURL(tlPre).href, bin, ...args], {
        env,
        encoding: 'utf8',
      });
      if (t.status !== 0) throw new Error(`timeline run failed: ${t.stderr}`);
      const marks = Object.fromEntries(
        readFileSync(tlFile, 'utf8')
          .trim()
          .split('\n')
          .map((l) => l.split(' '))
          .map(([k, v]) => [k, Number(v)]),
      );
      timelines.push(marks);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { runs, wallMs, profiles, modules, timelines };
}

/** Medians per group over the runs, largest first: [group, ms][]. */
export function medianGroups(profiles) {
  const names = new Set(profiles.flatMap((p) => Object.keys(p.groups)));
  return [...names]
    .map((g) => [
      g,
      quantile(
        profiles.map((p) => p.groups[g] ?? 0),
        0.5,
      ),
    ])
    .sort((a, b) => b[1] - a[1]);
}

/** Markdown-ready lines: phases, top groups by self time, module counts. */
export function describe(result, top = 12) {
  const med = (k) =>
    quantile(
      result.profiles.map((p) => p[k]),
      0.5,
    );
  const lines = [
    `load average ${os.loadavg()[0].toFixed(2)}; wall ${quantile(result.wallMs, 0.5).toFixed(0)} ` +
      `ms (median of ${result.runs} profiled runs; profiling adds overhead); sampled ${med('total').toFixed(0)} ` +
      `ms: start-up to main() ${med('beforeMain').toFixed(0)} ms, main() to exit ${med('afterMain').toFixed(0)} ` +
      `ms (of which idle, waiting on the sandbox child and I/O, ${med('idleAfterMain').toFixed(0)} ` +
      `ms); inside the module loader (resolve, compile, evaluate) ${med('loading').toFixed(0)} ms`,
    `self time by module group (median ms, share of sampled time): ${medianGroups(result.profiles)
      .slice(0, top)
      .map(([g, ms]) => `${g} ${ms.toFixed(1)} (${((100 * ms) / med('total')).toFixed(0)}%)`)
      .join('; ')}`,
    ...(result.timelines?.length
      ? [
          `timeline of an unprofiled run in the same home (ms since the process started, median of ${result.timelines.length}): sandbox process spawned ${quantile(
            result.timelines.map((t) => t.spawn ?? NaN),
            0.5,
          ).toFixed(0)}, sent the tool's source ${quantile(
            result.timelines.map((t) => t.load ?? NaN),
            0.5,
          ).toFixed(0)}, process exit ${quantile(
            result.timelines.map((t) => t.exit ?? NaN),
            0.5,
          ).toFixed(0)}`,
        ]
      : []),
    `modules loaded (ES + CommonJS, node: built-ins excluded): ${result.modules.total}${result.modules.bytes ? ` (${Math.round(result.modules.bytes / 1024)} KiB of source)` : ''} — ${Object.entries(
      result.modules.groups,
    )
      .sort((a, b) => b[1] - a[1])
      .map(([g, n]) => `${g} ${n}`)
      .join(', ')}`,
  ];
  return lines;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  const opt = (k) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : undefined);
  const root = resolve(opt('--root') ?? join(here, '..', '..'));
  const result = profileRuns({
    root,
    runs: Number(opt('--runs') ?? 5),
    env: argv.includes('--unbundled') ? { TYCLI_UNBUNDLED: '1' } : {},
  });
  if (argv.includes('--json'))
    console.log(JSON.stringify({ medians: medianGroups(result.profiles), ...result }, null, 2));
  else console.log(describe(result, 20).join('\n\n'));
}
