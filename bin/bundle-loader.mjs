// Loads the bundled command line (dist/cli/tycli.cjs) through vm.Script with the V8 code cache the build wrote next to
// it; Node host, trusted side.
// Node 20's ES module loader gives modules no code cache, and compiling the command line's modules was the largest
// part of a `tycli run`; one CommonJS bundle compiled with `cachedData` skips most of that (BENCHMARKS.md).
// The cache is host code: it is read only from next to the bundle (dist/cli/, written by `npm run build`), never from a
// path taken from the environment, and is used only when its header binds it to this exact bundle (size, content hash)
// at this path, this node (version, arch, V8) and its payload hash matches; anything else compiles the bundle without
// it.
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Script } from 'node:vm';

/** The bundle and its code cache: fixed paths next to this file, in the package's own dist/. */
export const BUNDLE = fileURLToPath(new URL('../dist/cli/tycli.cjs', import.meta.url));
export const CACHE = `${BUNDLE}.cache`;
/** First bytes of a cache file; the version changes when the header or the wrapper below change. */
export const MAGIC = 'TYCLICC1';
/** The bundle's last line (node/cli/build-bundle.mjs appends it): the SHA-256 of the text before it. */
export const ID_PREFIX = '// tycli-bundle-sha256 ';
const ID_LINE = ID_PREFIX.length + 64 + 1;

/**
 * The bundle file is one function expression (node/cli/build-bundle.mjs writes this opening on its first line and the
 * closing after it): the CommonJS wrapper's parameters plus the bundle's stand-in for import.meta.url and a dynamic
 * import() (vm.Script has none on Node 20 without --experimental-vm-modules).
 */
export const BUNDLE_OPEN = '(function (exports, require, module, __filename, __dirname, __tyImportMetaUrl, _tyimp) {';
export const BUNDLE_CLOSE = '})';

/**
 * The cache header: { bundlePath, bundleSize, bundleSha256, bundleMtimeMs, cacheSize, cacheSha256, node, arch, v8 }.
 * bundlePath: V8 (11.3, Node 20) keeps the file name a cache was made under as the script's name (stack traces,
 * profiles), so a cache made for the bundle at another path (a copied or moved package) is not used there.
 * @typedef {{ bundlePath: string, bundleSize: number, bundleSha256: string, bundleMtimeMs: number, cacheSize: number,
 *   cacheSha256: string, node: string, arch: string, v8: string }} CacheHeader
 */

/** The runtime this process is: a cache from another node, architecture or V8 is not used. */
export function runtimeId() {
  return { node: process.version, arch: process.arch, v8: process.versions.v8 };
}

/** sha256 hex of bytes. */
export const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');

/**
 * Reads dist/cli/tycli.cjs.cache and checks it against the bundle bytes just read.
 * @param {Buffer} bundle the bundle file's bytes
 * @param {number} mtimeMs the bundle's modification time (ms), from the same open file
 * @returns {{ status: 'ok' | 'missing' | 'stale' | 'corrupt', data?: Buffer }} status 'ok' with the V8 cache bytes;
 *   'missing' (no file), 'stale' (made for another bundle, path or runtime), 'corrupt' (truncated, garbage, hash
 * mismatch)
 */
export function readCache(bundle, mtimeMs) {
  let file;
  try {
    file = readFileSync(CACHE);
  } catch {
    return { status: 'missing' };
  }
  try {
    if (file.length < 12 || file.latin1Slice(0, 8) !== MAGIC) return { status: 'corrupt' };
    const hlen = file.readUInt32LE(8);
    if (12 + hlen > file.length) return { status: 'corrupt' };
    /** @type {CacheHeader} */
    const h = JSON.parse(file.latin1Slice(12, 12 + hlen));
    const rt = runtimeId();
    if (h.node !== rt.node || h.arch !== rt.arch || h.v8 !== rt.v8) return { status: 'stale' };
    if (h.bundlePath !== BUNDLE || h.bundleSize !== bundle.length || typeof h.bundleSha256 !== 'string')
      return { status: 'stale' };
    // Fast path: the id line the build wrote into the bundle names the same content and the file has not been touched
    // since (an edit in place changes the mtime). Otherwise (touched, rewritten with the same bytes, edited): hash it.
    const id = bundle.latin1Slice(bundle.length - ID_LINE, bundle.length);
    const fast = id === `${ID_PREFIX}${h.bundleSha256}\n` && h.bundleMtimeMs === mtimeMs;
    if (
      !fast &&
      (id !== `${ID_PREFIX}${h.bundleSha256}\n` ||
        sha256(bundle.subarray(0, bundle.length - ID_LINE)) !== h.bundleSha256)
    )
      return { status: 'stale' };
    const data = file.subarray(12 + hlen);
    if (data.length !== h.cacheSize || sha256(data) !== h.cacheSha256) return { status: 'corrupt' };
    return { status: 'ok', data };
  } catch {
    return { status: 'corrupt' };
  }
}

/**
 * Compiles the bundle text (with the V8 cache bytes if given) and runs its top level.
 * @returns {{ exports: Record<string, unknown>, script: Script, rejected: boolean }} rejected: V8 refused the cache
 *   (it then compiled the source itself)
 */
export function evaluate(text, cachedData) {
  const script = new Script(text, { filename: BUNDLE, ...(cachedData ? { cachedData } : {}) });
  const url = pathToFileURL(BUNDLE).href;
  const module = { exports: {} };
  const req = createRequire(BUNDLE);
  // import() of what the bundle leaves out (ES-only packages, files named at run time), resolved as from the bundle
  const imp = (spec, options) => import(/^\.\.?\//.test(spec) ? new URL(spec, url).href : spec, options);
  script.runInThisContext()(module.exports, req, module, BUNDLE, dirname(BUNDLE), url, imp);
  return { exports: module.exports, script, rejected: cachedData ? script.cachedDataRejected === true : false };
}

/**
 * Loads the bundled command line, with its code cache when one fits.
 * @param {{ cache?: boolean }} [opts] cache: false compiles without the cache (the build's cache generation)
 * @returns {{ exports: Record<string, unknown>, script: Script, cache: 'used' | 'rejected' | 'missing' | 'stale' |
 *   'corrupt' | 'off' } | undefined}
 *   undefined when there is no bundle (a build without the bundle step) or the file is not one
 * node/cli/build-bundle.mjs wrote
 */
export function loadBundle({ cache = true } = {}) {
  let fd;
  try {
    fd = openSync(BUNDLE, 'r');
  } catch (e) {
    if (e && e.code === 'ENOENT') return undefined;
    throw e;
  }
  let bundle;
  let mtimeMs;
  try {
    const st = fstatSync(fd);
    mtimeMs = st.mtimeMs;
    bundle = Buffer.allocUnsafe(st.size);
    for (let off = 0; off < st.size; ) {
      const n = readSync(fd, bundle, off, st.size - off, off);
      if (n === 0) throw Object.assign(new Error(`${BUNDLE} shrank while it was read`), { code: 'E_BUNDLE_CHANGED' });
      off += n;
    }
  } finally {
    closeSync(fd);
  }
  // not a bundle this loader's build step wrote (a dist/ left from an older build): the compiled modules instead
  if (bundle.length < BUNDLE_OPEN.length || bundle.latin1Slice(0, BUNDLE_OPEN.length) !== BUNDLE_OPEN) return undefined;
  const c = cache ? readCache(bundle, mtimeMs) : { status: 'off' };
  // The build checked that the bundle is ASCII (esbuild escapes the rest): one byte per character, read as latin1.
  const ascii = c.status === 'ok';
  const text = ascii ? bundle.latin1Slice(0, bundle.length) : bundle.toString('utf8');
  const r = evaluate(text, c.data);
  return {
    exports: r.exports,
    script: r.script,
    cache: c.status === 'ok' ? (r.rejected ? 'rejected' : 'used') : c.status,
  };
}
