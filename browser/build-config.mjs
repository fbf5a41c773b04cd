// Vite build options for the browser library, the diagnostics page and the Pyodide assets (vite.config.ts and the browser test driver use them); build time, trusted side.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** Output folder of the browser build, relative to the repository root. */
export const BROWSER_OUT_DIR = 'dist/browser';

/** The Pyodide files the browser Python runtime needs (no packages: stdlib only). */
export const PYODIDE_FILES = ['pyodide.mjs', 'pyodide.asm.mjs', 'pyodide.asm.wasm', 'python_stdlib.zip', 'pyodide-lock.json'];
export const PYODIDE_MANIFEST_ID = 'virtual:tysandbox/pyodide-manifest';

/**
 * Vite plugin: copies the Pyodide files from node_modules/pyodide into `<outDir>/pyodide/` and compiles their
 * sha-256 digests into the JavaScript bundle as the module `virtual:tysandbox/pyodide-manifest`
 * (`{ version, base, files: { [name]: { sha256, bytes } } }`). The digests travel inside the app's own code,
 * so a server that swaps an asset cannot also swap the digest the host checks it against.
 */
export function pyodideAssetsPlugin() {
  const require = createRequire(import.meta.url);
  const dir = dirname(require.resolve('pyodide/package.json'));
  let base = '/';
  let version = 'unknown';
  /** @type {Map<string, Buffer>} */
  const files = new Map();
  return {
    name: 'tysandbox-pyodide-assets',
    apply: 'build',
    configResolved(config) {
      base = config.base || '/';
    },
    async buildStart() {
      version = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')).version;
      for (const f of PYODIDE_FILES) files.set(f, await readFile(join(dir, f)));
    },
    resolveId(id) {
      return id === PYODIDE_MANIFEST_ID ? '\0' + PYODIDE_MANIFEST_ID : undefined;
    },
    load(id) {
      if (id !== '\0' + PYODIDE_MANIFEST_ID) return undefined;
      const out = {};
      for (const [name, bytes] of files) out[name] = { sha256: createHash('sha256').update(bytes).digest('hex'), bytes: bytes.length };
      return `export default ${JSON.stringify({ version, base: `${base}pyodide/`, files: out })};`;
    },
    generateBundle() {
      for (const [name, bytes] of files) this.emitFile({ type: 'asset', fileName: `pyodide/${name}`, source: bytes });
    },
  };
}

/**
 * Three entries: `browser/index.ts` (the library, exports kept), `test/browser/diagnostics.html` (the page
 * that runs the browser security contracts) and `browser/app/index.html` (the web chat app, served by `tycli app`). Target ES2022, not minified, so the embedded worker bootstrap
 * text stays as written.
 * @param {string} [outDir]
 */
export function browserBuildOptions(outDir = BROWSER_OUT_DIR) {
  return {
    outDir,
    emptyOutDir: true,
    target: 'es2022',
    minify: false,
    sourcemap: false,
    modulePreload: false,
    rolldownOptions: {
      input: { index: 'browser/index.ts', diagnostics: 'test/browser/diagnostics.html', app: 'browser/app/index.html' },
      preserveEntrySignatures: 'strict',
      output: { entryFileNames: '[name].js', chunkFileNames: 'assets/[name]-[hash].js' },
    },
  };
}
