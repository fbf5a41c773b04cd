// Browser host benchmark in Debian's Chromium: sandbox cold start, warm call and Pyodide cold load, each against a
// baseline; test side.
import { buildBrowserApp, launchChromium, openDiagnostics, serveDir } from '../../node/diagnostics/browser-driver.mjs';

/**
 * @returns {Promise<{ title: string, rows: { name: string, value: number, unit: string, baseline: string,
 * baselineValue: number, ratio: number, target: string }[], notes: string[] }>}
 */
export async function run() {
  const out = await buildBrowserApp();
  const server = await serveDir(out);
  let browser;
  try {
    browser = await launchChromium();
    const { page } = await openDiagnostics(browser, server.origin);
    const samples = await page.evaluate(() => window.tyBench({}));
    const targets = { 'sandbox cold start': '<= 20x', 'warm call': '<= 10x', 'Pyodide cold load': '<= 1.5x' };
    const rows = samples.map((s) => ({
      name: s.name,
      value: Math.round(s.value * 1000) / 1000,
      unit: 'ms',
      baseline: s.baseline,
      baselineValue: Math.round(s.baselineValue * 1000) / 1000,
      ratio: Math.round((s.value / s.baselineValue) * 100) / 100,
      target: Object.entries(targets).find(([k]) => s.name.startsWith(k))?.[1] ?? '',
    }));
    return {
      title: 'Browser host (Chromium, headless)',
      rows,
      notes: [
        'Cold start and Pyodide: medians of 7 and 2 runs; warm call: mean over 300 sequential calls (timer resolution is 100 µs without cross-origin isolation). All in one page of one Chromium run.',
        'Cold start includes creating the srcdoc frame, its CSP, the Blob worker, the MessagePort handshake and importing the tool module.',
        'The sandboxed Pyodide load includes fetching and sha-256-verifying the assets once per page ' +
          '(cached after the first run), copying them into the worker and starting Pyodide there; the ' +
          'baseline loads Pyodide directly from the same loopback server.',
        `Served from ${server.origin}; beacon requests seen: ${server.beacons.length}.`,
      ],
    };
  } finally {
    await browser?.close();
    await server.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await run();
  console.log(JSON.stringify(r, null, 2));
}
