// Node sandbox entry: the file the Node sandbox process runs (untrusted side, before any tool code); compiles the runner (sandbox-runner.cjs) and the guest core (guest-core.mjs) as one script, with the build's V8 code cache when it was made from exactly these bytes.
// Why: Node 20 caches no code of user files, so every sandbox used to parse both files and compile each function it
// ran (about 3-5 ms of CPU per cold start, test/bench/runtime.bench.mjs). The cache (sandbox-runner.cache, written by
// node/runner/build-code-cache.mjs during `npm run build`) is a read-only file of the install, like the runner itself:
// the host grants it for reading only (node/sandbox-engines.ts) and the OS wrapper binds it read-only. It holds a
// copy of the two source files it was made from; it is used only when both copies equal the files read here byte for
// byte (V8 itself checks only the source length), and V8 ignores it when its version or flags differ (another node
// binary, a non-default memory limit). Any mismatch or read error: the files are compiled as before.
'use strict';

const fs = require('node:fs');
const vm = require('node:vm');

const RUNNER = __dirname + '/sandbox-runner.cjs';
const CORE = __dirname + '/guest-core.mjs';
const CACHE = __dirname + '/sandbox-runner.cache';
/** First line of a cache file: `MAGIC <runner bytes> <core bytes>\n`, then the runner's bytes, the core's, V8's data. */
const MAGIC = 'tysandbox-code-cache-1';
const EXPORT_DECL = 'export function createGuest(';

/**
 * The one script: a function of `require`, `__dirname` and `entryImport` (an `import()` of this file) whose body is the runner followed by the guest core with
 * its one `export` removed (as the browser build embeds it). Line numbers of the runner's own code are kept.
 */
function runnerSource(runner, core) {
  const at = core.indexOf(EXPORT_DECL);
  if (at === -1) throw new Error('guest-core.mjs without createGuest');
  return `(function (require, __dirname, entryImport) {${runner}\n${core.slice(0, at)}${core.slice(at + 'export '.length)}\n})`;
}

/** V8's data from `cache` when it was made from exactly `runner` and `core` (Buffers), else undefined. */
function cachedDataFor(cache, runner, core) {
  const nl = cache.indexOf(10);
  if (nl <= 0 || nl > 100) return undefined;
  const head = cache.latin1Slice(0, nl).split(' ');
  if (head.length !== 3 || head[0] !== MAGIC || Number(head[1]) !== runner.length || Number(head[2]) !== core.length) return undefined;
  const r0 = nl + 1;
  const c0 = r0 + runner.length;
  const d0 = c0 + core.length;
  if (cache.length <= d0 || !cache.subarray(r0, c0).equals(runner) || !cache.subarray(c0, d0).equals(core)) return undefined;
  return cache.subarray(d0);
}

/**
 * Read the two files (and the cache, unless `withCache` is false) and compile them: `{ script, runner, core, cacheUsed }`.
 * `cacheUsed` is false when there was no matching cache or V8 rejected it.
 */
function compileRunner(withCache = true) {
  const runner = fs.readFileSync(RUNNER);
  const core = fs.readFileSync(CORE);
  let cachedData;
  if (withCache) {
    try {
      cachedData = cachedDataFor(fs.readFileSync(CACHE), runner, core);
    } catch {
      /* no cache (or not readable here): compile */
    }
  }
  const script = new vm.Script(runnerSource(runner.utf8Slice(), core.utf8Slice()), { filename: RUNNER, ...(cachedData ? { cachedData } : {}) });
  return { script, runner, core, cacheUsed: cachedData !== undefined && script.cachedDataRejected !== true };
}

/** The bytes of a cache file for `compiled` (compileRunner's result, after the script ran). */
function cacheFileBytes(compiled) {
  const { script, runner, core } = compiled;
  return Buffer.concat([Buffer.from(`${MAGIC} ${runner.length} ${core.length}\n`, 'latin1'), runner, core, script.createCachedData()]);
}

if (require.main !== module) {
  // Loaded by the cache builder (node/runner/build-code-cache.mjs) or a test, not run as a sandbox.
  module.exports = { RUNNER, CORE, CACHE, MAGIC, runnerSource, cachedDataFor, compileRunner, cacheFileBytes };
  return;
}
compileRunner().script.runInThisContext()(require, __dirname, (url) => import(url));
