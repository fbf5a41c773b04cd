// Vite build options for the browser library, the diagnostics page and the Pyodide assets (vite.config.ts and the
// browser test driver use them); build time, trusted side.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));

/** Output folder of the browser build, relative to the repository root. */
export const BROWSER_OUT_DIR = 'dist/browser';

/** The sandbox frame's document and bootstrap script (served from the host's assetBaseUrl). */
export const FRAME_FILES = ['sandbox-frame.html', 'sandbox-frame.js'];

/** The one Pyodide asset manifest both hosts verify against (sha-256 and size of each file), in the repository. */
export const PYODIDE_MANIFEST_FILE = fileURLToPath(new URL('../../core/pyodide-manifest.json', import.meta.url));
/** The Pyodide files the Python runtime needs (no packages: stdlib only), in manifest order. */
export const PYODIDE_FILES = [
  'pyodide.mjs',
  'pyodide.asm.mjs',
  'pyodide.asm.wasm',
  'python_stdlib.zip',
  'pyodide-lock.json',
];
export const PYODIDE_MANIFEST_ID = 'virtual:tysandbox/pyodide-manifest';

/**
 * Hash the installed `pyodide` package's files into a manifest `{ version, files: { [name]: { sha256, bytes } } }`.
 * `npm run pyodide-manifest` writes it to core/pyodide-manifest.json after a reviewed Pyodide upgrade.
 */
export async function hashPyodidePackage() {
  const require = createRequire(import.meta.url);
  const dir = dirname(require.resolve('pyodide/package.json'));
  const version = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')).version;
  const files = {};
  for (const f of PYODIDE_FILES) {
    const bytes = await readFile(join(dir, f));
    files[f] = { sha256: createHash('sha256').update(bytes).digest('hex'), bytes: bytes.length };
  }
  return { version, files };
}

/**
 * Vite plugin: emits the sandbox frame (sandbox-frame.html and sandbox-frame.js) at `<outDir>/` and compiles the
 * build's `base` in as the host's default assetBaseUrl (`__TYSANDBOX_ASSET_BASE__`). It also checks the Pyodide files
 * in node_modules/pyodide against core/pyodide-manifest.json (the build
 * fails on any difference), copies them into `<outDir>/pyodide/` and compiles the manifest's digests into the
 * JavaScript bundle as the module `virtual:tysandbox/pyodide-manifest` (`{ version, base, files: { [name]:
 * { sha256, bytes } } }`). The digests travel inside the app's own code, so a server that swaps an asset cannot
 * also swap the digest the host checks it against; the command line checks the same manifest (node/python-assets.ts).
 */
export function pyodideAssetsPlugin() {
  const require = createRequire(import.meta.url);
  const dir = dirname(require.resolve('pyodide/package.json'));
  let base = '/';
  let version = 'unknown';
  /** @type {Map<string, Buffer>} */
  const files = new Map();
  /** @type {Map<string, Buffer>} */
  const frameFiles = new Map();
  return {
    name: 'tysandbox-pyodide-assets',
    apply: 'build',
    config(c) {
      // The default assetBaseUrl of the browser host (browser/sandbox/runtime.ts defaultAssetBase).
      return { define: { __TYSANDBOX_ASSET_BASE__: JSON.stringify(c.base || '/') } };
    },
    configResolved(config) {
      base = config.base || '/';
    },
    async buildStart() {
      const manifest = JSON.parse(await readFile(PYODIDE_MANIFEST_FILE, 'utf8'));
      version = manifest.version;
      for (const f of PYODIDE_FILES) {
        const bytes = await readFile(join(dir, f));
        const want = manifest.files[f];
        const got = createHash('sha256').update(bytes).digest('hex');
        if (!want || want.sha256 !== got || want.bytes !== bytes.length) {
          throw new Error(
            `node_modules/pyodide/${f} does not match core/pyodide-manifest.json (sha-256 ${got}); after a reviewed Pyodide upgrade run npm run pyodide-manifest`,
          );
        }
        files.set(f, bytes);
      }
      for (const f of FRAME_FILES) frameFiles.set(f, await readFile(join(HERE, '..', 'sandbox', f)));
    },
    resolveId(id) {
      return id === PYODIDE_MANIFEST_ID ? '\0' + PYODIDE_MANIFEST_ID : undefined;
    },
    load(id) {
      if (id !== '\0' + PYODIDE_MANIFEST_ID) return undefined;
      const out = {};
      for (const [name, bytes] of files)
        out[name] = { sha256: createHash('sha256').update(bytes).digest('hex'), bytes: bytes.length };
      return `export default ${JSON.stringify({ version, base: `${base}pyodide/`, files: out })};`;
    },
    generateBundle() {
      for (const [name, bytes] of files) this.emitFile({ type: 'asset', fileName: `pyodide/${name}`, source: bytes });
      for (const [name, bytes] of frameFiles) this.emitFile({ type: 'asset', fileName: name, source: bytes });
    },
  };
}

/**
 * Vite wraps each dynamic import in a `__vitePreload` helper it declares in the chunk; an app that bundles the
 * library with vite again declares its own and the build fails ("`__vitePreload` has already been declared").
 * Renamed in the library's output, the two never meet.
 */
function renamePreloadHelper() {
  return {
    name: 'tysandbox-rename-preload-helper',
    renderChunk: (code) =>
      code.includes('__vitePreload')
        ? { code: code.replaceAll('__vitePreload', '__tysandboxPreload'), map: null }
        : null,
  };
}

/**
 * The code reaches zod only as the namespace `z` (`import { z } from 'zod'`). Once zod sits in a chunk of its own
 * (it is shared by the host and the lazily loaded chunks), that chunk must export the whole namespace object, so
 * every member stays (zod's JSON Schema conversions, locales and the rest, about 590 KiB). Here `zod` resolves,
 * for the project's own modules, to an object of exactly the members they name (`z.NAME`, read from the sources
 * under core/, protocol/ and browser/ at build time), so the rest is dropped. A source that uses `z` other than as
 * `z.NAME` keeps zod whole. node/cli/build-bundle.mjs does the same for the command line's bundle.
 * Source: the Rollup/Rolldown plugin hooks resolveId and load.
 */
function zodUsedMembers() {
  const root = join(HERE, '..', '..');
  const names = new Set();
  let bare = false;
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'node_modules' && e.name !== 'dist') walk(p);
      } else if (/\.ts$/.test(e.name) && !/\.test\.ts$/.test(e.name)) {
        const text = readFileSync(p, 'utf8');
        if (!/from ['"]zod['"]/.test(text)) continue;
        // `import type { z }` (Biome's form when z is used only in types) brings nothing at run time
        if (!/import (?:type )?\{ z \} from ['"]zod['"]/.test(text)) bare = true;
        for (const m of text.matchAll(/(?<![\w$.])z\s*\.\s*([A-Za-z_$][\w$]*)/g)) names.add(m[1]);
        const rest = text
          .replace(/import (?:type )?\{ z \} from ['"]zod['"];?/g, '')
          .replace(/(?<![\w$.])z\s*\.\s*[A-Za-z_$]/g, '');
        if (
          /(?<![\w$.-])z(?![\w$])/.test(
            rest.replace(/\/\/.*$|\/\*[\s\S]*?\*\/|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`/gm, ''),
          )
        )
          bare = true;
      }
    }
  };
  for (const d of ['core', 'protocol', 'browser']) walk(join(root, d));
  return bare ? undefined : [...names].sort();
}

const ZOD_EXTERNAL = join(HERE, '..', '..', 'node_modules', 'zod', 'v4', 'classic', 'external.js');

export function zodUsedOnly() {
  const ID = '\0tysandbox:zod-used';
  let names;
  return {
    name: 'tysandbox-zod-used-members',
    apply: 'build',
    enforce: 'pre',
    async buildStart() {
      const used = zodUsedMembers();
      // type-only names (z.infer, z.ZodType) have no value at run time: keep what zod's module exports
      const all = used ? await import(pathToFileURL(ZOD_EXTERNAL).href) : undefined;
      names = used && all ? used.filter((n) => n in all) : undefined;
    },
    resolveId(source, importer) {
      if (source !== 'zod' || !importer || /[\\/]node_modules[\\/]/.test(importer)) return null;
      return names ? ID : null;
    },
    load(id) {
      if (id !== ID) return null;
      return `import * as all from ${JSON.stringify(ZOD_EXTERNAL)};\nexport const z = Object.freeze({ ${names.map((n) => `${n}: all.${n}`).join(', ')} });\nexport default z;\n`;
    },
  };
}

/**
 * Three entries: `browser/index.ts` (the library, exports kept), `browser/diagnostics/index.html` (the page
 * that runs the browser security contracts) and `browser/app/index.html` (the web chat app, served by `tycli app`).
 * Target ES2022, not minified, so the embedded worker bootstrap
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
      input: {
        index: 'browser/index.ts',
        diagnostics: 'browser/diagnostics/index.html',
        app: 'browser/app/index.html',
      },
      preserveEntrySignatures: 'strict',
      output: {
        entryFileNames: '[name].js',
        chunkFileNames: 'assets/[name]-[hash].js',
        plugins: [renamePreloadHelper()],
        // browser/zod-jitless.ts rides in the chunk of zod's core (its configuration object), so zod is jitless as
        // soon as that chunk is evaluated, before any chunk that builds schemas (they all import it), whatever order
        // the other chunks load in. Only those two modules are grouped: the rest of zod stays tree-shaken where used.
        codeSplitting: {
          groups: [
            {
              name: 'zod-core',
              test: /[\\/]node_modules[\\/]zod[\\/]v4[\\/]core[\\/]core\.js$|[\\/]browser[\\/]zod-jitless\.ts$/,
            },
          ],
        },
      },
    },
  };
}
