// End-to-end tests of the bundled command line's V8 code cache (bin/bundle-loader.mjs, dist/cli/tycli.cjs.cache): built
// dist/cli, copies in temp folders; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { oneLine, runProcess } from './helpers.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CSV = '{"csv":"a,b\\n1,2\\n3,4\\n"}';
let tmp: string;
let seq = 0;

interface Loaded {
  code: number;
  stdout: string;
  stderr: string;
  /** each vm.Script made for the bundle: bytes of cachedData given (0: none) and whether V8 rejected them */
  scripts: { filename: string; cachedData: number; rejected: boolean | null }[];
  /** every path opened or read whole through node:fs */
  opened: string[];
}

/**
 * `node --import <recorder> PKG/bin/tycli.mjs ARGS` in its own home: the recorder wraps vm.Script (what the loader
 * compiled, with which cache, and V8's verdict) and node:fs's openSync/readFileSync (what was read).
 */
async function tycli(pkg: string, home: string, args: string[], env: Record<string, string> = {}): Promise<Loaded> {
  const log = join(tmp, `rec-${++seq}.jsonl`);
  const pre = join(tmp, `rec-${seq}.mjs`);
  writeFileSync(
    pre,
    `import vm from 'node:vm'; import fs from 'node:fs'; import { syncBuiltinESMExports } from 'node:module';
     const append = fs.appendFileSync; const log = (o) => append(${JSON.stringify(log)}, JSON.stringify(o) + '\\n');
     const Orig = vm.Script;
     vm.Script = class Script extends Orig { constructor(code, opts = {}) { super(code, opts); log({ script: {
       filename: opts.filename, cachedData: opts.cachedData ? opts.cachedData.length : 0, rejected: opts.cachedData ? this.cachedDataRejected : null } }); } };
     for (const k of ['openSync', 'readFileSync']) { const orig = fs[k]; fs[k] = function (p, ...r) { if (typeof p === 'string') log({ open: p }); return orig.call(this, p, ...r); }; }
     syncBuiltinESMExports();`,
  );
  const r = await runProcess(
    process.execPath,
    ['--import', pathToFileURL(pre).href, join(pkg, 'bin', 'tycli.mjs'), ...args],
    { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TYCLI_HOME: join(home, 'tycli'), ...env },
    tmp,
  );
  const lines = existsSync(log)
    ? (await readFile(log, 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { script?: Loaded['scripts'][0]; open?: string })
    : [];
  return {
    ...r,
    scripts: lines.flatMap((l) => (l.script ? [l.script] : [])),
    opened: lines.flatMap((l) => (l.open ? [l.open] : [])),
  };
}

/**
 * Points a copied cache's header at the copy's bundle: the header `npm run build` would write there (same bundle bytes,
 * this path), without running the build. Its V8 payload still names the original path, which these tests do not read.
 */
function retarget(pkg: string): void {
  const file = join(pkg, 'dist', 'cli', 'tycli.cjs.cache');
  const buf = readFileSync(file);
  const len = buf.readUInt32LE(8);
  const header = JSON.parse(buf.subarray(12, 12 + len).toString('latin1')) as Record<string, unknown>;
  expect(header.bundlePath).toBe(join(ROOT, 'dist', 'cli', 'tycli.cjs'));
  const h = Buffer.from(JSON.stringify({ ...header, bundlePath: join(pkg, 'dist', 'cli', 'tycli.cjs') }), 'latin1');
  const n = Buffer.alloc(4);
  n.writeUInt32LE(h.length);
  writeFileSync(file, Buffer.concat([buf.subarray(0, 8), n, h, buf.subarray(12 + len)]));
}

/**
 * A copy of the built package (bin/, dist/cli/, the sandbox runner, the guest runtime and the code-cache generator
 * copied; the rest linked) to change freely.
 */
function copyPackage({ retargeted = true } = {}): string {
  const pkg = join(tmp, `pkg-${++seq}`);
  mkdirSync(join(pkg, 'dist'), { recursive: true });
  mkdirSync(join(pkg, 'node', 'cli'), { recursive: true });
  cpSync(join(ROOT, 'bin'), join(pkg, 'bin'), { recursive: true });
  cpSync(join(ROOT, 'dist', 'cli'), join(pkg, 'dist', 'cli'), { recursive: true, preserveTimestamps: true });
  cpSync(join(ROOT, 'node', 'cli', 'build-code-cache.mjs'), join(pkg, 'node', 'cli', 'build-code-cache.mjs'));
  cpSync(join(ROOT, 'package.json'), join(pkg, 'package.json'));
  for (const d of ['node', 'core', 'protocol']) symlinkSync(join(ROOT, 'dist', d), join(pkg, 'dist', d));
  // the sandbox reads it by its real path
  cpSync(join(ROOT, 'node', 'runner'), join(pkg, 'node', 'runner'), { recursive: true });
  // and the guest runtime it compiles
  cpSync(join(ROOT, 'core', 'guest'), join(pkg, 'core', 'guest'), { recursive: true });
  for (const d of ['node_modules', 'tools']) symlinkSync(join(ROOT, d), join(pkg, d));
  if (retargeted) retarget(pkg);
  return pkg;
}

/** A home with csv-stats added (through the package at `pkg`). */
async function homeWithTool(pkg: string): Promise<string> {
  const home = await mkdtemp(join(tmp, 'home-'));
  const r = await tycli(pkg, home, ['tool', 'add', join(ROOT, 'tools', 'csv-stats', 'manifest.json')]);
  expect(r.code, r.stderr).toBe(0);
  return home;
}

const RUN = ['--sandbox', 'off', 'run', 'csv-stats', '--args', CSV, '--json'];
/** The run answered with the csv-stats result. */
function expectRight(r: Loaded): Record<string, unknown> {
  expect(r.code, r.stderr).toBe(0);
  const out = oneLine(r) as Record<string, unknown>;
  expect(out).toMatchObject({
    ok: true,
    result: {
      rows: 2,
      columns: [
        { name: 'a', sum: 4 },
        { name: 'b', sum: 6 },
      ],
    },
  });
  return out;
}
const bundleScript = (r: Loaded, pkg: string) => {
  const s = r.scripts.filter((x) => x.filename === join(pkg, 'dist', 'cli', 'tycli.cjs'));
  expect(s).toHaveLength(1);
  return s[0]!;
};

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'tycli.cjs.cache')))
    throw new Error('dist/cli/tycli.cjs.cache is missing: run `npm run build` before the e2e tests');
  tmp = await mkdtemp(join(tmpdir(), 'tycli-code-cache-'));
});
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('the code cache of the bundled command line', () => {
  it('a fresh build compiles the bundle with its cache and V8 takes it; the bundle resolves the package version like the compiled modules', async () => {
    const home = await homeWithTool(ROOT);
    const r = await tycli(ROOT, home, RUN);
    expectRight(r);
    const s = bundleScript(r, ROOT);
    expect(s.cachedData).toBeGreaterThan(100_000); // the cache of a run, not only the top level
    expect(s.rejected).toBe(false);
    const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
    expect(oneLine(await tycli(ROOT, home, ['--version', '--json']))).toMatchObject({ ok: true, version });
    expect(oneLine(await tycli(ROOT, home, ['--version', '--json'], { TYCLI_UNBUNDLED: '1' }))).toMatchObject({
      ok: true,
      version,
    });
  });

  it('a copy of the package at another path compiles without the cache made for the original path (V8 would keep that path as the script name)', async () => {
    const pkg = copyPackage({ retargeted: false });
    const r = await tycli(pkg, await homeWithTool(pkg), RUN);
    expectRight(r);
    expect(bundleScript(r, pkg)).toMatchObject({ cachedData: 0 });
  });

  it('a bundle whose modification time changed (same bytes, e.g. touched) still uses its cache: the content hash binds it, not the file time', async () => {
    const pkg = copyPackage();
    const later = new Date(Date.now() + 60_000);
    utimesSync(join(pkg, 'dist', 'cli', 'tycli.cjs'), later, later);
    const r = await tycli(pkg, await homeWithTool(pkg), RUN);
    expectRight(r);
    expect(bundleScript(r, pkg)).toMatchObject({ rejected: false });
    expect(bundleScript(r, pkg).cachedData).toBeGreaterThan(0);
  });

  it('a bundle changed after its cache was made (same length, new code on the run path) is compiled without the cache and runs the new code', async () => {
    const pkg = copyPackage();
    const file = join(pkg, 'dist', 'cli', 'tycli.cjs');
    const text = readFileSync(file, 'latin1');
    // `tycli run --json`'s answer, as esbuild writes it in the bundle (indented as deep as the bundle nests it)
    const found = /revision: r\.revision,\n *\.\.\.r\.settingsRevision/.exec(text);
    expect(found?.index).toBeGreaterThan(0);
    const MARK = found![0];
    const at = found!.index;
    writeFileSync(
      file,
      text.slice(0, at) + MARK.replace('revision:', 'revisioN:') + text.slice(at + MARK.length),
      'latin1',
    );
    expect(statSync(file).size).toBe(text.length); // V8 alone (it checks the source length) would take the old cache
    const r = await tycli(pkg, await homeWithTool(pkg), RUN);
    expect(expectRight(r)).toHaveProperty('revisioN');
    expect(bundleScript(r, pkg)).toMatchObject({ cachedData: 0 });
  });

  it('a truncated, garbage or altered cache is ignored: the command compiles from source and gives the right output', async () => {
    const pkg = copyPackage();
    const home = await homeWithTool(pkg);
    const cache = join(pkg, 'dist', 'cli', 'tycli.cjs.cache');
    const good = readFileSync(cache);
    const variants: [string, Buffer][] = [
      ['truncated', good.subarray(0, Math.floor(good.length / 2))],
      ['empty', Buffer.alloc(0)],
      ['garbage', Buffer.from(Array.from({ length: good.length }, (_, i) => (i * 7919) % 251))],
      // header intact, V8 payload altered: V8 does not checksum code caches in release builds, the header's hash does
      ['altered payload', Buffer.from(good).fill(0x5a, good.length - 4096, good.length - 2048)],
    ];
    for (const [what, bytes] of variants) {
      writeFileSync(cache, bytes);
      const r = await tycli(pkg, home, RUN);
      expectRight(r);
      expect(bundleScript(r, pkg), what).toMatchObject({ cachedData: 0 });
    }
    truncateSync(cache, 0);
  });

  it('a cache V8 refuses (made under other V8 flags) is reported rejected by V8 and the command still runs right', async () => {
    const pkg = copyPackage();
    const home = await homeWithTool(pkg);
    const made = spawnSync(
      process.execPath,
      ['--jitless', join(pkg, 'node', 'cli', 'build-code-cache.mjs'), '--top-level'],
      { encoding: 'utf8' },
    );
    expect(made.status, made.stderr).toBe(0);
    const r = await tycli(pkg, home, RUN);
    expectRight(r);
    const s = bundleScript(r, pkg);
    expect(s.cachedData).toBeGreaterThan(0);
    expect(s.rejected).toBe(true);
  });

  it('without the bundle (a build without that step), with a file there the build did not write, or under --enable-source-maps, tycli runs the compiled modules of dist/node/', async () => {
    const pkg = copyPackage();
    const home = await homeWithTool(pkg);
    const mapped = await tycli(pkg, home, RUN, { NODE_OPTIONS: '--enable-source-maps' });
    expectRight(mapped);
    expect(mapped.scripts).toEqual([]);
    // a dist/cli/tycli.cjs this build step did not write (not the loader's function form): not compiled at all
    writeFileSync(join(pkg, 'dist', 'cli', 'tycli.cjs'), 'process.stdout.write("wrong code");\n');
    const other = await tycli(pkg, home, RUN);
    expectRight(other);
    expect(other.scripts).toEqual([]);
    rmSync(join(pkg, 'dist', 'cli'), { recursive: true });
    const r = await tycli(pkg, home, RUN);
    expectRight(r);
    expect(r.scripts).toEqual([]);
  });

  it('where no `tycli run` works at build time (here: no example tool), the build writes a cache of the top level, which is used', async () => {
    const pkg = copyPackage();
    rmSync(join(pkg, 'tools'));
    mkdirSync(join(pkg, 'tools'));
    const made = spawnSync(process.execPath, [join(pkg, 'node', 'cli', 'build-code-cache.mjs')], { encoding: 'utf8' });
    expect(made.status, made.stderr).toBe(0);
    expect(made.stdout).toContain('top level only');
    const r = await tycli(pkg, await homeWithTool(ROOT), ['--version', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const s = bundleScript(r, pkg);
    expect(s.cachedData).toBeGreaterThan(0);
    // no run's functions
    expect(s.cachedData).toBeLessThan(readFileSync(join(ROOT, 'dist', 'cli', 'tycli.cjs.cache')).length);
    expect(s.rejected).toBe(false);
  });

  it('Ctrl-C while the bundle is being compiled ends tycli with exit 130 once it has loaded, before the command runs', async () => {
    const home = await homeWithTool(ROOT);
    const pre = join(tmp, 'sigint-in-load.mjs');
    writeFileSync(
      pre,
      `import vm from 'node:vm'; import { syncBuiltinESMExports } from 'node:module'; const O = vm.Script; ` +
        `vm.Script = class extends O { constructor(c, o) { process.kill(process.pid, 'SIGINT'); super(c, ` +
        `o); } }; syncBuiltinESMExports();`,
    );
    const r = await runProcess(
      process.execPath,
      ['--import', pathToFileURL(pre).href, join(ROOT, 'bin', 'tycli.mjs'), ...RUN],
      { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TYCLI_HOME: join(home, 'tycli') },
      tmp,
    );
    expect(r.code).toBe(130);
    expect(r.stdout).toBe('');
  });

  it('the loader never reads a cache from outside dist/: a cache planted in TYCLI_HOME, HOME, XDG_CACHE_HOME or tmp has no effect', async () => {
    const pkg = copyPackage();
    const home = await homeWithTool(pkg);
    const planted = readFileSync(join(ROOT, 'dist', 'cli', 'tycli.cjs.cache'));
    const xdg = join(home, 'xdg-cache');
    const tmpDir = join(home, 'tmp');
    for (const d of [join(home, 'tycli'), home, xdg, join(xdg, 'tycli'), tmpDir, join(home, '.cache', 'tycli')]) {
      mkdirSync(d, { recursive: true });
      for (const n of ['tycli.cjs.cache', 'code-cache', 'tycli.cache']) writeFileSync(join(d, n), planted);
    }
    // the copy's own cache is gone: anything the loader took would have to come from a planted file
    truncateSync(join(pkg, 'dist', 'cli', 'tycli.cjs.cache'), 0);
    const r = await tycli(pkg, home, RUN, {
      XDG_CACHE_HOME: xdg,
      TMPDIR: tmpDir,
      TYCLI_CODE_CACHE: join(home, 'tycli.cjs.cache'),
    });
    expectRight(r);
    expect(bundleScript(r, pkg)).toMatchObject({ cachedData: 0 });
    // the recorder sees the loader's reads
    expect(r.opened.some((p) => p === join(pkg, 'dist', 'cli', 'tycli.cjs.cache'))).toBe(true);
    // no cache-like file outside the package's own folders (the sandbox runner has its own, in node/runner/)
    expect(
      r.opened.filter((p) => (/\.cache$/.test(p) || basename(p) === 'code-cache') && !p.startsWith(`${pkg}/`)),
    ).toEqual([]);
  });
});
