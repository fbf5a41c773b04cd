// Node sandbox entry: the file the Node sandbox process runs (untrusted side, before any tool code); compiles the
// runner (sandbox-runner.cjs) and the guest core (core/guest/core.mjs) as one script, with the build's V8 code cache
// when it was made from exactly these bytes.
// Why: Node 20 caches no code of user files, so every sandbox used to parse both files and compile each function it
// ran (about 3-5 ms of CPU per cold start, test/bench/runtime.bench.mjs). The cache (sandbox-runner.cache, written by
// node/runner/build-code-cache.mjs during `npm run build`) is a read-only file of the install, like the runner itself:
// the host grants it for reading only (node/sandbox/engines.ts) and the OS wrapper binds it read-only. It holds a
// copy of the two source files it was made from; it is used only when both copies equal the source files byte for
// byte (V8 itself checks only the source length): compared here when this process can read those files, else by the
// host, which then grants the sandbox this entry and the cache alone. V8 ignores it when its version or flags differ
// (another node binary, a non-default memory limit). Any mismatch: the files are compiled as before.
'use strict';

const fs = require('node:fs');
const vm = require('node:vm');

const RUNNER = __dirname + '/sandbox-runner.cjs';
/** The guest runtime's folder in the package (core/guest/), read by its real path. */
const GUEST_DIR = require('node:path').resolve(__dirname, '../../core/guest');
const CORE = GUEST_DIR + '/core.mjs';
const CACHE = __dirname + '/sandbox-runner.cache';
/**
 * First line of a cache file: `MAGIC <runner bytes> <core bytes>\n`, then the runner's bytes, the core's, V8's data.
 */
const MAGIC = 'tysandbox-code-cache-1';
const EXPORT_DECL = 'export function createGuest(';

/**
 * The one script: a function of `require`, `__dirname` and `entryImport` (an `import()` of this file) whose body is
 * the runner followed by the guest core with its one `export` removed (as the browser build embeds it). Line numbers
 * of the runner's own code are kept.
 */
function runnerSource(runner, core) {
  const at = core.indexOf(EXPORT_DECL);
  if (at === -1) throw new Error('core/guest/core.mjs without createGuest');
  return `(function (require, __dirname, entryImport) {${runner}\n${core.slice(0, at)}${core.slice(at + 'export '.length)}\n})`;
}

/** A cache file's parts `{ runner, core, data }` (Buffers), or undefined when it is not one. */
function cacheParts(cache) {
  const nl = cache.indexOf(10);
  if (nl <= 0 || nl > 100) return undefined;
  const head = cache.latin1Slice(0, nl).split(' ');
  const rLen = Number(head[1]);
  const cLen = Number(head[2]);
  if (head.length !== 3 || head[0] !== MAGIC || !(rLen > 0) || !(cLen > 0)) return undefined;
  const r0 = nl + 1;
  const c0 = r0 + rLen;
  const d0 = c0 + cLen;
  if (cache.length <= d0) return undefined;
  return { runner: cache.subarray(r0, c0), core: cache.subarray(c0, d0), data: cache.subarray(d0) };
}

/** V8's data from `cache` when it was made from exactly `runner` and `core` (Buffers), else undefined. */
function cachedDataFor(cache, runner, core) {
  const p = cacheParts(cache);
  return p?.runner.equals(runner) && p.core.equals(core) ? p.data : undefined;
}

/** A file's bytes, or undefined where this process may not read it (not granted, not bound into the sandbox). */
function readIfReadable(path) {
  try {
    return fs.readFileSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Read the files and compile them: `{ script, runner, core, cacheUsed }`. With `withCache` (the default) and a cache
 * file: where the two source files can be read, the cache is used only if its copies equal them; where they cannot
 * (the host grants a sandbox only this entry and the cache once it has made the same comparison:
 * node/sandbox/engines.ts
 * codeCacheMatches), its copies are the source. `cacheUsed` is false when there was no matching cache or V8 rejected
 * it.
 */
function compileRunner(withCache = true) {
  const cache = withCache ? readIfReadable(CACHE) : undefined;
  const parts = cache === undefined ? undefined : cacheParts(cache);
  let runner = readIfReadable(RUNNER);
  let core = readIfReadable(CORE);
  let cachedData;
  if (parts !== undefined) {
    if (runner === undefined && core === undefined) ({ runner, core } = parts);
    if (runner !== undefined && core !== undefined && parts.runner.equals(runner) && parts.core.equals(core))
      cachedData = parts.data;
  }
  if (runner === undefined || core === undefined) throw new Error('the sandbox runner files cannot be read');
  const script = new vm.Script(runnerSource(runner.utf8Slice(), core.utf8Slice()), {
    filename: RUNNER,
    ...(cachedData ? { cachedData } : {}),
  });
  return { script, runner, core, cacheUsed: cachedData !== undefined && script.cachedDataRejected !== true };
}

/** The bytes of a cache file for `compiled` (compileRunner's result, after the script ran). */
function cacheFileBytes(compiled) {
  const { script, runner, core } = compiled;
  return Buffer.concat([
    Buffer.from(`${MAGIC} ${runner.length} ${core.length}\n`, 'latin1'),
    runner,
    core,
    script.createCachedData(),
  ]);
}

if (require.main !== module) {
  // Loaded by the cache builder (node/runner/build-code-cache.mjs) or a test, not run as a sandbox.
  module.exports = {
    RUNNER,
    CORE,
    CACHE,
    MAGIC,
    runnerSource,
    cacheParts,
    cachedDataFor,
    compileRunner,
    cacheFileBytes,
  };
} else {
  compileRunner().script.runInThisContext()(require, __dirname, (url) => import(url));
}
