// Node-side driver for the browser contracts: vite build, loopback static server with a beacon counter, Debian's
// Chromium via playwright-core; test code, trusted side.
// Plain .mjs so `tycli diagnostics --browser` (built with tsc) and the benchmarks can import it without a TS loader.
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { join, normalize, resolve, sep, extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { browserBuildOptions, pyodideAssetsPlugin, zodUsedOnly } from '../../browser/build/config.mjs';
import { quickJsPlugin } from '../../browser/build/quickjs.mjs';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CHROMIUM_PATH = '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.zip': 'application/zip',
};

/**
 * Build the browser library and diagnostics page with vite into `outDir` (default `<repo>/dist/browser`).
 * @param {{ outDir?: string }} [opts]
 * @returns {Promise<string>} the absolute output folder
 */
export async function buildBrowserApp(opts = {}) {
  const outDir = resolve(REPO_ROOT, opts.outDir ?? 'dist/browser');
  const { build } = await import('vite');
  await build({
    root: REPO_ROOT,
    configFile: false,
    logLevel: 'warn',
    build: browserBuildOptions(outDir),
    plugins: [pyodideAssetsPlugin(), zodUsedOnly(), quickJsPlugin()],
  });
  return outDir;
}

/**
 * Serve `dir` on 127.0.0.1 (random port). Requests to `/beacon/...` are recorded in `beacons` and answered 204:
 * a sandbox that reaches the network reaches this server, so an empty list is evidence that nothing left.
 * `opts.headers(path)` adds response headers per path (e.g. a page CSP); `opts.files` serves extra files by path
 * (`{ '/app/index.html': { type, body } }`), checked before `dir`. Every request path is recorded in `requests`.
 * @param {string} dir
 * @param {{ headers?: (path: string) => Record<string, string>, files?: Record<string, { type: string, body: string |
 *   Buffer }> }} [opts]
 * @returns {Promise<{ origin: string, beacons: string[], requests: string[], close(): Promise<void> }>}
 */
export async function serveDir(dir, opts = {}) {
  const requests = [];
  const root = resolve(dir);
  const beacons = [];
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    requests.push(path);
    const extraHeaders = opts.headers?.(path) ?? {};
    const extra = opts.files?.[path];
    if (extra) {
      res.writeHead(200, { 'content-type': extra.type, 'cache-control': 'no-store', ...extraHeaders });
      res.end(extra.body);
      return;
    }
    if (path.startsWith('/beacon/')) {
      beacons.push(path.slice('/beacon/'.length));
      res.writeHead(204, { 'access-control-allow-origin': '*' }).end();
      return;
    }
    // Fixtures for the browser fetch transport: a redirect and a header echo (not counted as beacons).
    if (path === '/fixture/redirect') {
      res.writeHead(302, { location: '/fixture/echo', 'access-control-allow-origin': '*' }).end();
      return;
    }
    if (path === '/fixture/echo') {
      res.writeHead(200, {
        'content-type': 'application/json',
        'access-control-allow-origin': req.headers.origin ?? '*',
        'access-control-allow-credentials': 'true',
      });
      res.end(
        JSON.stringify({
          cookie: req.headers.cookie ?? null,
          authorization: req.headers.authorization ?? null,
          referer: req.headers.referer ?? null,
        }),
      );
      return;
    }
    const file = normalize(join(root, path));
    if (file !== root && !file.startsWith(root + sep)) {
      res.writeHead(403).end();
      return;
    }
    try {
      const s = await stat(file);
      if (!s.isFile()) throw new Error('not a file');
      res.writeHead(200, {
        'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
        'cache-control': 'no-store',
        ...extraHeaders,
      });
      res.end(await readFile(file));
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  const origin = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  return {
    origin,
    beacons,
    requests,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections?.();
        server.close(() => r());
      }),
  };
}

/** Launch Debian's Chromium headless through playwright-core (never a downloaded browser). */
export async function launchChromium() {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
}

/**
 * Open a page of the served build and wait until the harness is ready.
 * @param {any} browser a playwright Browser
 * @param {string} origin
 */
export async function openDiagnostics(browser, origin) {
  const page = await browser.newPage();
  const consoleLines = [];
  page.on('console', (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => consoleLines.push(`pageerror: ${e.message}`));
  await page.goto(`${origin}/browser/diagnostics/index.html`);
  await page.waitForFunction(() => window.tyHarnessReady === true, undefined, { timeout: 30_000 });
  return { page, consoleLines };
}

/**
 * Build, serve on loopback, launch Chromium, run the named browser contracts in the page and close everything.
 * Adds one Node-side row: no request from any sandbox reached the loopback server.
 * @param {{ filter?: string, build?: boolean, outDir?: string }} [opts] filter: case-insensitive substring of a
 *   contract name;
 *   build: false reuses an existing build.
 * @returns {Promise<{ name: string, host: 'browser', ok: boolean, detail: string }[]>}
 * @throws Error when Chromium cannot start (the caller reports the browser host as unavailable).
 */
export async function runBrowserContracts(opts = {}) {
  const outDir = opts.build === false ? resolve(REPO_ROOT, opts.outDir ?? 'dist/browser') : await buildBrowserApp(opts);
  const server = await serveDir(outDir);
  let browser;
  try {
    browser = await launchChromium();
    const { page, consoleLines } = await openDiagnostics(browser, server.origin);
    const rows = await page.evaluate((filter) => window.tyRunContracts(filter ? { filter } : {}), opts.filter ?? '');
    const f = opts.filter?.toLowerCase();
    const beaconRow = 'no request from a sandbox reached the network (loopback beacon server)';
    if (!f || beaconRow.includes(f)) {
      // `control-*` beacons come from the deliberately unprotected control frame; they prove the counter works.
      const leaked = server.beacons.filter((b) => !b.startsWith('control-'));
      const control = server.beacons.length - leaked.length;
      const ranControl = rows.some((r) => r.name.startsWith('control:'));
      const ok = leaked.length === 0 && (!ranControl || control > 0);
      const detail =
        leaked.length > 0
          ? `reached: ${leaked.join(', ')}`
          : ranControl && control === 0
            ? 'the control request never arrived: the counter is not working'
            : `no sandbox requests (control requests counted: ${control})`;
      rows.push({ name: beaconRow, host: 'browser', ok, detail });
    }
    if (rows.some((r) => !r.ok) && consoleLines.length > 0) {
      rows.push({
        name: 'page console (diagnostic output)',
        host: 'browser',
        ok: true,
        detail: consoleLines.slice(-20).join(' | ').slice(0, 2000),
      });
    }
    return rows;
  } finally {
    await browser?.close();
    await server.close();
  }
}
