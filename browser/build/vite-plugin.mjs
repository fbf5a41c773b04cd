// Vite plugin for apps using tysandbox/browser: serves (dev) and emits (build) the host's assets, the sandbox frame and
// the Pyodide files, from the installed package; build time, trusted side.
import { readFile, readdir } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.zip': 'application/zip',
};

/**
 * `tysandboxAssets({ dir, python, quickjs })`: the files `createBrowserHost` loads at run time (docs/browser.md
 * "Assets the app serves"): `sandbox-frame.html`, `sandbox-frame.js`, with `python` (default true) `pyodide/*`, and
 * with `quickjs` (default true) `quickjs/emscripten-module.wasm` (whose digests are already compiled into
 * tysandbox/browser). They are emitted under `<outDir>/<dir>` at build and served from `<base><dir>` by the dev server.
 * Pass the same folder to the host: `createBrowserHost({ sandbox: { assetBaseUrl: '/<dir>' } })` (default `dir` is
 * '', the root, which is also the host's default assetBaseUrl).
 * @param {{ dir?: string, python?: boolean, quickjs?: boolean, from?: string }} [opts] `from`: the folder holding the
 *   built assets
 *   (default: this package's dist/browser).
 */
export function tysandboxAssets(opts = {}) {
  const from = opts.from ?? fileURLToPath(new URL('../../dist/browser/', import.meta.url));
  const dir = (opts.dir ?? '').replace(/^\/+|\/+$/g, '');
  const prefix = dir ? `${dir}/` : '';
  /** @returns {Promise<string[]>} paths relative to `from` */
  const list = async () => {
    const out = ['sandbox-frame.html', 'sandbox-frame.js'];
    if (opts.python !== false) for (const f of await readdir(join(from, 'pyodide'))) out.push(`pyodide/${f}`);
    if (opts.quickjs !== false) out.push('quickjs/emscripten-module.wasm');
    return out;
  };
  let base = '/';
  return {
    name: 'tysandbox-assets',
    configResolved(config) {
      base = config.base || '/';
    },
    configureServer(server) {
      server.middlewares.use(async (req, res, next) => {
        const path = decodeURIComponent((req.url ?? '/').split('?')[0] ?? '/');
        const start = `${base}${prefix}`;
        if (!path.startsWith(start)) return next();
        const rel = path.slice(start.length);
        if (!(await list()).includes(rel)) return next();
        res.setHeader('content-type', TYPES[extname(rel)] ?? 'application/octet-stream');
        res.end(await readFile(join(from, rel)));
      });
    },
    async generateBundle() {
      for (const rel of await list())
        this.emitFile({ type: 'asset', fileName: `${prefix}${rel}`, source: await readFile(join(from, rel)) });
    },
  };
}
