// Build-time pieces of the quickjs engine: the guest script QuickJS sandboxes evaluate, the browser's QuickJS worker
// script, and the vite plugin that compiles that script into the library and emits the QuickJS binary as an asset;
// build time, trusted side. node/quickjs/build.mjs (the command line's sandbox host bundle) uses the same guest script.
import { build, transform } from 'esbuild';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
/** Where the browser host fetches the QuickJS binary from, relative to its assetBaseUrl. */
export const QUICKJS_WASM_ASSET = 'quickjs/emscripten-module.wasm';
/** The virtual module whose default export is the QuickJS worker's classic script (browser/quickjs/runtime.ts). */
export const QUICKJS_WORKER_ID = 'virtual:tysandbox/quickjs-worker';

/** The installed QuickJS binary's path (@jitl/quickjs-wasmfile-release-sync, pinned by package.json). */
export function quickJsWasmFile() {
  return createRequire(import.meta.url).resolve('@jitl/quickjs-wasmfile-release-sync/wasm');
}

/**
 * core/quickjs/guest-script.ts, loaded from its source: esbuild compiles it in memory and it is imported from a data:
 * URL, so the build steps (plain Node) and the sandbox hosts assemble the guest script with the same code.
 */
async function guestScriptModule() {
  const out = await build({
    entryPoints: [join(ROOT, 'core', 'quickjs', 'guest-script.ts')],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    write: false,
    logLevel: 'warning',
  });
  return import(`data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString('base64')}`);
}

/**
 * The guest script as QuickJS sandboxes evaluate it: core/quickjs/guest-script.ts's assembly of the core/guest/ files,
 * comments and whitespace removed (QuickJS parses it once per sandbox; names and behaviour are unchanged).
 * @param {Record<string, string>} [texts] file texts by path under core/guest/ (default: read from there)
 * @returns {Promise<string>}
 */
export async function minifiedGuestScript(texts) {
  const { QUICKJS_GUEST_FILES, guestScript } = await guestScriptModule();
  const t =
    texts ??
    Object.fromEntries(
      QUICKJS_GUEST_FILES.map((f) => [f.path, readFileSync(join(ROOT, 'core', 'guest', f.path), 'utf8')]),
    );
  // minifyWhitespace alone: identifiers, syntax and every runtime behaviour stay as written
  const { code } = await transform(`globalThis.__guest = ${guestScript(t)}`, { minifyWhitespace: true, loader: 'js' });
  const prefix = 'globalThis.__guest=';
  if (!code.startsWith(prefix)) throw new Error('unexpected minifier output for the guest script');
  return code.slice(prefix.length).replace(/;\s*$/, '');
}

/**
 * The browser's QuickJS worker as one classic script: browser/quickjs/worker.ts with core/quickjs/, quickjs-emscripten-
 * core and the variant's browser glue, the guest script compiled in. Minified (it is data to the page: a string the
 * frame turns into a Blob worker).
 * @returns {Promise<string>}
 */
export async function quickJsWorkerSource() {
  const out = await build({
    entryPoints: [join(ROOT, 'browser', 'quickjs', 'worker.ts')],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    write: false,
    minify: true,
    legalComments: 'none',
    logLevel: 'error',
    define: { __TYSANDBOX_QUICKJS_GUEST__: JSON.stringify(await minifiedGuestScript()) },
  });
  return out.outputFiles[0].text;
}

/**
 * Vite plugin: the module `virtual:tysandbox/quickjs-worker` (the worker script, quickJsWorkerSource) for
 * browser/quickjs/runtime.ts, and at build the QuickJS binary emitted as `<outDir>/quickjs/emscripten-module.wasm`
 * (fetched by the browser host and checked against core/quickjs/wasm.ts QUICKJS_WASM_SHA256, which travels in the
 * app's own code). Source: the Rollup/Rolldown plugin hooks resolveId, load and generateBundle.
 */
export function quickJsPlugin() {
  const ID = `\0${QUICKJS_WORKER_ID}`;
  return {
    name: 'tysandbox-quickjs',
    resolveId: (id) => (id === QUICKJS_WORKER_ID ? ID : undefined),
    async load(id) {
      if (id !== ID) return undefined;
      return `export default ${JSON.stringify(await quickJsWorkerSource())};`;
    },
    generateBundle() {
      this.emitFile({ type: 'asset', fileName: QUICKJS_WASM_ASSET, source: readFileSync(quickJsWasmFile()) });
    },
  };
}
