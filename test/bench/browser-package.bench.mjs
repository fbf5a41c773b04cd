// Browser package benchmark: the main chunk's size against its budget (bytes and gzip), and memory per retained sandbox
// in Chromium against a bare page renderer; test side.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { createServer } from 'node:http';
import { buildBrowserApp, launchChromium, serveDir } from '../../node/diagnostics/browser-driver.mjs';

/** Budget of `tysandbox/browser`'s main chunk (index.js with every chunk it imports statically), bytes. */
export const MAIN_CHUNK_BUDGET = 1280 * 1024;
/**
 * Budget of the same, gzip. 320 KiB until issues 29 and 32 put WebMCP, the srcdoc frame mode, protocol 1.1 and the
 * QuickJS host side into the main chunk (325 KiB measured); loading WebMCP and QuickJS on first use would take them
 * out again.
 */
export const MAIN_CHUNK_GZIP_BUDGET = 336 * 1024;
/** Budget of `tysandbox/client` under the `browser` export condition (dist/client/browser.js), gzip bytes. */
export const CLIENT_GZIP_BUDGET = 40 * 1024;
const REPO = resolve(import.meta.dirname, '..', '..');

/** index.js and the closure of its static imports (dynamic imports are loaded on demand, not counted). */
export function mainChunk(out) {
  const seen = new Set();
  const walk = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(
      /^\s*(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|^\s*import\s*['"](\.{1,2}\/[^'"]+)['"]/gm,
    ))
      walk(resolve(dirname(file), m[1] ?? m[2]));
  };
  walk(join(out, 'index.js'));
  const bytes = [...seen].map((f) => readFileSync(f));
  return {
    files: seen.size,
    raw: bytes.reduce((n, b) => n + b.length, 0),
    gzip: bytes.reduce((n, b) => n + gzipSync(b).length, 0),
  };
}

/** RSS of every Chromium renderer process, KiB (from /proc: `--type=renderer` in the command line). */
function rendererRssKb() {
  let total = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmd.includes('chromium') || !cmd.includes('--type=renderer')) continue;
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m) total += Number(m[1]);
    } catch {
      /* gone */
    }
  }
  return total;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function run() {
  const out = await buildBrowserApp({ outDir: 'dist/bench-browser-package' });
  const size = mainChunk(out);
  // the browser build of the typed client (npm run build writes it; run.mjs builds first)
  const client = readFileSync(join(REPO, 'dist', 'client', 'browser.js'));
  const clientGzip = gzipSync(client).length;
  const rows = [
    {
      name: `main chunk (index.js + ${size.files - 1} static chunks)`,
      value: Math.round(size.raw / 1024),
      unit: 'KiB',
      baseline: 'budget',
      baselineValue: MAIN_CHUNK_BUDGET / 1024,
      ratio: Math.round((size.raw / MAIN_CHUNK_BUDGET) * 100) / 100,
      target: '<= 1x',
    },
    {
      name: 'main chunk, gzip',
      value: Math.round(size.gzip / 1024),
      unit: 'KiB',
      baseline: 'budget',
      baselineValue: MAIN_CHUNK_GZIP_BUDGET / 1024,
      ratio: Math.round((size.gzip / MAIN_CHUNK_GZIP_BUDGET) * 100) / 100,
      target: '<= 1x',
    },
    {
      name: `tysandbox/client browser build (dist/client/browser.js, ${(client.length / 1024).toFixed(1)} KiB), gzip`,
      value: Math.round((clientGzip / 1024) * 10) / 10,
      unit: 'KiB',
      baseline: 'budget',
      baselineValue: CLIENT_GZIP_BUDGET / 1024,
      ratio: Math.round((clientGzip / CLIENT_GZIP_BUDGET) * 100) / 100,
      target: '<= 1x',
    },
  ];
  const notes = [
    `The build is not minified (the worker bootstrap text stays as written); an app's own bundler ` +
      `minifies it. Main chunk budget ${MAIN_CHUNK_BUDGET / 1024} KiB (${MAIN_CHUNK_GZIP_BUDGET / 1024} ` +
      `KiB gzip): what an app loads before its first call. Pyodide (about 10 MB) is fetched only for ` +
      `Python, on demand.`,
    `tysandbox/client under the \`browser\` export condition: connectWindow and connectHttp, no node:* import and ` +
      `no zod (esbuild, minified; browser/build/client-bundle.mjs); budget ${CLIENT_GZIP_BUDGET / 1024} KiB gzip.`,
  ];
  const server = await serveDir(out, {
    files: {
      '/bench/page.html': {
        type: 'text/html',
        body: '<!doctype html><html><body><script type="module" src="/bench/page.js"></script></body></html>',
      },
      '/bench/page.js': {
        type: 'text/javascript',
        body: "import * as ty from '/index.js'; window.ty = ty; window.tyReady = true;",
      },
    },
  });
  const frames = await serveDir(out);
  let browser;
  try {
    browser = await launchChromium();
    const page = await browser.newPage();
    await page.goto(`${server.origin}/bench/page.html`);
    await page.waitForFunction(() => window.tyReady === true);
    await page.evaluate(
      async (frameBase) => {
        window.host = await window.ty.createBrowserHost({
          dbName: `bench-${Date.now()}`,
          sandbox: { assetBaseUrl: frameBase },
        });
      },
      `${frames.origin.replace('127.0.0.1', 'localhost')}/`,
    );
    await sleep(1500);
    const before = rendererRssKb();
    const N = 8;
    await page.evaluate(async (n) => {
      for (let i = 0; i < n; i++) {
        await window.host.registry.install({
          name: `t${i}`,
          description: 'd',
          parameters: { type: 'object' },
          execution: { kind: 'sandboxed-code', runtime: 'javascript', source: `export default async () => ${i}` },
        });
        const r = await window.host.invoke(`t${i}`, {});
        if (!r.ok) throw new Error(r.error.message);
      }
    }, N);
    await sleep(1500);
    const after = rendererRssKb();
    const perSandboxMb = (after - before) / N / 1024;
    // baseline: one more bare page (a renderer of its own site) in the same browser
    const bare = await browser.newPage();
    const blank = createServer((_q, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>bare</title>'),
    );
    await new Promise((r) => blank.listen(0, '127.0.0.2', r));
    const b0 = rendererRssKb();
    await bare.goto(`http://127.0.0.2:${blank.address().port}/`); // a site of its own: a renderer of its own
    await sleep(1500);
    blank.close();
    const bareMb = Math.max(1, (rendererRssKb() - b0) / 1024);
    rows.push({
      name: `memory per retained JavaScript sandbox (${N} retained, frame assets on their own site)`,
      value: Math.round(perSandboxMb * 10) / 10,
      unit: 'MiB',
      baseline: 'a bare page renderer',
      baselineValue: Math.round(bareMb * 10) / 10,
      ratio: Math.round((perSandboxMb / bareMb) * 100) / 100,
      target: '',
    });
    notes.push(
      'Memory: growth of the resident set of every Chromium renderer process (from /proc) after starting ' +
        'and keeping N sandboxes, divided by N; the baseline is the growth for one more bare page in ' +
        'the same browser. The pool keeps at most maxRetained (default 16) such sandboxes.',
    );
  } finally {
    await browser?.close();
    await server.close();
    await frames.close();
  }
  return { title: 'Browser package: main chunk size and memory per retained sandbox', rows, notes };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
