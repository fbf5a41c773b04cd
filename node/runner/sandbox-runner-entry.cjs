// Node sandbox entry: the file the Node sandbox process runs (untrusted side, before any tool code); compiles the guest
// runtime (core/guest/: the captured built-ins commons.mjs, the guest core core.mjs, for a Python revision python.mjs)
// and the runner (sandbox-runner.cjs) as one script, with the build's V8 code cache when it was made from exactly
// these bytes.
// Why: Node 20 caches no code of user files, so every sandbox used to parse the files and compile each function it ran
// (about 3-5 ms of CPU per cold start, test/bench/runtime.bench.mjs). The cache (sandbox-runner.cache, written by
// node/runner/build-code-cache.mjs during `npm run build`) is a read-only file of the install, like the runner itself:
// the host grants it for reading only (node/sandbox/engines.ts) and the OS wrapper binds it read-only. It holds a
// copy of the source files it was made from; it is used only when every copy equals its source file byte for byte
// (V8 itself checks only the source length): compared here when this process can read those files, else by the
// host, which then grants the sandbox this entry and the cache alone. V8 ignores it when its version or flags differ
// (another node binary, a non-default memory limit). Any mismatch: the files are compiled as before. A Python
// sandbox (other V8 flags) compiles python.mjs too, never with the cache.
'use strict';

const fs = require('node:fs');
const vm = require('node:vm');

const RUNNER = __dirname + '/sandbox-runner.cjs';
/** The guest runtime's folder in the package (core/guest/), read by its real path. */
const GUEST_DIR = require('node:path').resolve(__dirname, '../../core/guest');
const COMMONS = GUEST_DIR + '/commons.mjs';
const CORE = GUEST_DIR + '/core.mjs';
const PYTHON = GUEST_DIR + '/python.mjs';
/** What python.mjs imports: its memory limit (createPythonLimits), compiled before it. */
const PYTHON_LIMITS = GUEST_DIR + '/python-limits.mjs';
/**
 * The files of the one script, in order, and of the code cache: the captured built-ins first (they must be taken
 * before anything else runs), the guest core, the runner last (it starts everything). node/sandbox/engines.ts
 * (nodeRunnerSources) lists the same.
 */
const SOURCES = [COMMONS, CORE, RUNNER];
/**
 * A Python revision's sandbox (node/python/sandbox.ts PYTHON_RUNNER_FLAG): python-limits.mjs and python.mjs before the
 * runner, no cache.
 */
const PYTHON_SANDBOX = process.argv.some((a) => typeof a === 'string' && a.startsWith('--tysandbox-python='));
const CACHE = __dirname + '/sandbox-runner.cache';
/**
 * First line of a cache file: `MAGIC <bytes of each of SOURCES>\n`, then those files' bytes in that order, then V8's
 * data.
 */
const MAGIC = 'tysandbox-code-cache-2';

/**
 * A guest module (core/guest/*.mjs) as part of a classic script: its imports of sibling guest modules (`import { A, B }
 * from './commons.mjs';`, whose names the script declares before it) become blank lines, so line numbers are kept, and
 * `export ` goes from its declarations, as the browser build does (browser/sandbox/runtime.ts). Plain string searches:
 * this runs at every cold start, where regular expressions over the files cost about 0.3 ms of CPU.
 * test/contracts/guest-globals.test.ts holds the modules to that shape.
 */
function guestScript(text) {
  let out = text;
  for (let at = out.indexOf('\nimport {'); at !== -1; at = out.indexOf('\nimport {', at + 1)) {
    const end = out.indexOf("';", out.indexOf('} from ', at));
    let lines = '';
    for (let nl = out.indexOf('\n', at + 1); nl !== -1 && nl < end; nl = out.indexOf('\n', nl + 1)) lines += '\n';
    out = out.slice(0, at + 1) + lines + out.slice(end + 2);
  }
  return out.replaceAll('\nexport const ', '\nconst ').replaceAll('\nexport function ', '\nfunction ');
}

/**
 * The one script: a function of `require`, `__dirname` and `entryImport` (an `import()` of this file) whose strict body
 * is the files' texts in order, the guest modules as guestScript makes them; the runner's text is unchanged.
 */
function runnerSource(files, texts) {
  let body = '';
  for (let i = 0; i < files.length; i++) body += `${files[i] === RUNNER ? texts[i] : guestScript(texts[i])}\n`;
  return `(function (require, __dirname, entryImport) {'use strict';\n${body}})`;
}

/** A cache file's parts `{ sources: Buffer[] (in SOURCES order), data }`, or undefined when it is not one. */
function cacheParts(cache) {
  const nl = cache.indexOf(10);
  if (nl <= 0 || nl > 100) return undefined;
  const head = cache.latin1Slice(0, nl).split(' ');
  if (head.length !== SOURCES.length + 1 || head[0] !== MAGIC) return undefined;
  const sources = [];
  let at = nl + 1;
  for (let i = 1; i < head.length; i++) {
    const len = Number(head[i]);
    if (!(len > 0) || !Number.isSafeInteger(len)) return undefined;
    sources.push(cache.subarray(at, at + len));
    at += len;
  }
  if (cache.length <= at) return undefined;
  return { sources, data: cache.subarray(at) };
}

/** Whether two lists of Buffers are equal, item by item. */
function sameBytes(a, b) {
  return a.length === b.length && a.every((x, i) => x.equals(b[i]));
}

/** V8's data from `cache` when it was made from exactly `sources` (Buffers in SOURCES order), else undefined. */
function cachedDataFor(cache, sources) {
  const p = cacheParts(cache);
  return p !== undefined && sameBytes(p.sources, sources) ? p.data : undefined;
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
 * Read the files and compile them: `{ script, files, sources, cacheUsed }`. With `withCache` (the default, never for a
 * Python sandbox) and a cache file: where the source files can be read, the cache is used only if its copies equal
 * them; where none can (the host grants a sandbox only this entry and the cache once it has made the same comparison:
 * node/sandbox/engines.ts codeCacheMatches), its copies are the source. `cacheUsed` is false when there was no
 * matching cache or V8 rejected it.
 * @throws Error when a source file can be read neither from the package nor from a cache.
 */
function compileRunner(withCache = true, python = PYTHON_SANDBOX) {
  const files = python ? [COMMONS, CORE, PYTHON_LIMITS, PYTHON, RUNNER] : SOURCES;
  const cache = withCache && !python ? readIfReadable(CACHE) : undefined;
  const parts = cache === undefined ? undefined : cacheParts(cache);
  let sources = files.map(readIfReadable);
  let cachedData;
  if (parts !== undefined) {
    if (sources.every((s) => s === undefined)) sources = parts.sources;
    if (sameBytes(parts.sources, sources)) cachedData = parts.data;
  }
  if (sources.some((s) => s === undefined)) throw new Error('the sandbox runner files cannot be read');
  const script = new vm.Script(
    runnerSource(
      files,
      sources.map((s) => s.utf8Slice()),
    ),
    { filename: RUNNER, ...(cachedData ? { cachedData } : {}) },
  );
  return { script, files, sources, cacheUsed: cachedData !== undefined && script.cachedDataRejected !== true };
}

/** The bytes of a cache file for `compiled` (compileRunner's result without Python, after the script ran). */
function cacheFileBytes(compiled) {
  const { script, files, sources } = compiled;
  if (files.length !== SOURCES.length || files.some((f, i) => f !== SOURCES[i]))
    throw new Error('a code cache holds the files of SOURCES only (no Python guest)');
  return Buffer.concat([
    Buffer.from(`${MAGIC} ${sources.map((s) => s.length).join(' ')}\n`, 'latin1'),
    ...sources,
    script.createCachedData(),
  ]);
}

if (require.main !== module) {
  // Loaded by the cache builder (node/runner/build-code-cache.mjs) or a test, not run as a sandbox.
  module.exports = {
    RUNNER,
    COMMONS,
    CORE,
    PYTHON,
    SOURCES,
    CACHE,
    MAGIC,
    guestScript,
    runnerSource,
    cacheParts,
    cachedDataFor,
    compileRunner,
    cacheFileBytes,
  };
} else {
  compileRunner().script.runInThisContext()(require, __dirname, (url) => import(url));
}
