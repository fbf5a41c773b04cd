// Build step (run by node/cli/build-bundle.mjs): writes dist/cli/tycli.cjs.cache, the V8 code cache of the bundled
// command line; trusted side.
// The cache is made after a representative `tycli run` (the csv-stats example in a temporary home, bubblewrap on,
// else with --sandbox off where bubblewrap cannot run), so it holds the functions such a run compiles, not only the
// top level; where no run works it holds the top level. Written atomically (a temp file renamed over the old one),
// with a header binding it to the bundle's bytes and this node (bin/bundle-loader.mjs checks it). Exits non-zero
// without a cache on any failure; the build goes on without one.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUNDLE, CACHE, ID_PREFIX, MAGIC, loadBundle, runtimeId, sha256 } from '../../bin/bundle-loader.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const self = fileURLToPath(import.meta.url);

/** Writes the cache file for `data` (V8 cache bytes) atomically. */
function writeCache(data) {
  const st = statSync(BUNDLE);
  const bundle = readFileSync(BUNDLE);
  if (bundle.length !== st.size) throw new Error(`${BUNDLE} changed while the cache was made`);
  const id = bundle.latin1Slice(bundle.length - ID_PREFIX.length - 65).slice(ID_PREFIX.length, -1);
  if (!/^[0-9a-f]{64}$/.test(id)) throw new Error(`${BUNDLE} has no id line (node/cli/build-bundle.mjs writes it)`);
  const header = Buffer.from(
    JSON.stringify({
      bundlePath: BUNDLE,
      bundleSize: st.size,
      bundleSha256: id,
      bundleMtimeMs: st.mtimeMs,
      cacheSize: data.length,
      cacheSha256: sha256(data),
      ...runtimeId(),
    }),
    'latin1',
  );
  const len = Buffer.alloc(4);
  len.writeUInt32LE(header.length);
  const tmp = `${CACHE}.${process.pid}.tmp`;
  writeFileSync(tmp, Buffer.concat([Buffer.from(MAGIC, 'latin1'), len, header, data]));
  renameSync(tmp, CACHE);
}

const mode = process.argv[2];
if (mode === '--run' || mode === '--top-level') {
  // Child: compile without a cache, run (or only evaluate the top level), then serialize what V8 compiled.
  const b = loadBundle({ cache: false });
  if (!b) process.exit(4);
  if (mode === '--run') {
    const code = await b.exports.main(process.argv.slice(3), { signals: false });
    if (code !== 0) process.exit(3);
  }
  writeCache(b.script.createCachedData());
  process.exit(0);
} else if (mode === '--check') {
  // Child: does this node take the cache? ('used'; 'rejected' when V8 refuses it, e.g. other flags)
  process.stdout.write(loadBundle()?.cache ?? 'no-bundle');
  process.exit(0);
}

if (!existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing`);
rmSync(CACHE, { force: true });
const dir = mkdtempSync(join(tmpdir(), 'tycli-code-cache-'));
// A plain environment, no NODE_OPTIONS: V8 takes a cache only under the flags it was made with.
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, TYCLI_HOME: join(dir, 'home') };
const node = (args) =>
  spawnSync(process.execPath, args, {
    env,
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
    timeout: 60_000,
  });
try {
  const ex = join(root, 'tools', 'examples');
  const runArgs = existsSync(join(ex, 'data', 'sales.csv'))
    ? [
        'run',
        'csv-stats',
        '--arg-file',
        `csv=${join(ex, 'data', 'sales.csv')}`,
        '--args',
        `@${join(ex, 'args-csv-stats.json')}`,
      ]
    : ['run', 'csv-stats', '--args', '{"csv":"a,b\\n1,2\\n"}'];
  const added = node([
    join(root, 'bin', 'tycli.mjs'),
    'tool',
    'add',
    join(root, 'tools', 'csv-stats', 'manifest.json'),
  ]);
  let how = 'top level only';
  if (added.status === 0) {
    for (const sandbox of ['required', 'off']) {
      // one run first (the home's one-time sandbox probe), then the run the cache is taken from
      node([join(root, 'bin', 'tycli.mjs'), '--sandbox', sandbox, ...runArgs]);
      if (node([self, '--run', '--sandbox', sandbox, ...runArgs]).status === 0) {
        how = `after a \`tycli run csv-stats\` (--sandbox ${sandbox})`;
        break;
      }
    }
  }
  if (how === 'top level only') {
    const top = node([self, '--top-level']);
    if (top.status !== 0) throw new Error(`top-level cache failed: ${top.stderr.slice(0, 400)}`);
  }
  const check = node([self, '--check']);
  if (check.stdout !== 'used') {
    rmSync(CACHE, { force: true });
    throw new Error(`the new cache is not used by this node (${check.stdout || check.stderr.slice(0, 400)})`);
  }
  process.stdout.write(`dist/cli/tycli.cjs.cache: ${statSync(CACHE).size} bytes, ${how}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
