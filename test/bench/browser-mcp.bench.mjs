// Browser MCP benchmark in Debian's Chromium: a remote tools/call through the browser host (core's bridge, gate, audit)
// against a direct SDK client in the same page, both to one loopback SDK server; test side.
import { buildBrowserApp, launchChromium, openDiagnostics, serveDir } from '../../node/diagnostics/browser-driver.mjs';
import { startMcpFixture } from '../browser/mcp-http-fixture.mjs';
import { iqr, pairRatio, spread, summary } from './stats.mjs';

const r3 = (x) => Math.round(x * 1000) / 1000;

/** @returns {Promise<{ title: string, rows: object[], notes: string[] }>} */
export async function run() {
  const out = await buildBrowserApp();
  const server = await serveDir(out);
  const fx = await startMcpFixture({ json: true });
  let browser;
  try {
    browser = await launchChromium();
    const { page } = await openDiagnostics(browser, server.origin);
    const res = await page.evaluate((url) => window.tyBenchMcp({ url, rounds: 11, calls: 30 }), fx.url);
    const b = summary(res.bridged);
    const d = summary(res.direct);
    const pr = pairRatio(res.bridged, res.direct);
    return {
      title: 'Browser host: remote MCP tools/call (Chromium, headless)',
      rows: [
        {
          name: 'bridged tools/call (host.invoker.invoke SERVER__TOOL)',
          value: r3(b.median),
          unit: 'ms',
          spread: spread(b, d),
          baseline: 'direct SDK Client.callTool (@modelcontextprotocol/client, same revision), same page and server',
          baselineValue: r3(d.median),
          ratio: Math.round((b.median / d.median) * 100) / 100,
          ratioSpread: iqr(pr, 2),
          target: '<= 3x',
        },
      ],
      notes: [
        `Each sample is the mean per call of one round of ${res.callsPerRound} sequential calls; ${res.bridged.length} ` +
          `rounds each way, interleaved (a bridged round, then a direct one), so drift hits both alike; ` +
          `ratio p25–p75 is over the per-round pairs.`,
        'The bridged call adds the tool lookup, the argument check against the server schema, the gate ' +
          '(rules, pause, a durable started record and the final audit record in IndexedDB) and the result ' +
          'checks; the server definition allows the tool, so nobody is asked.',
        `Server: the SDK's Streamable HTTP server on loopback (JSON responses), ${fx.url}.`,
      ],
    };
  } finally {
    await browser?.close();
    await fx.close();
    await server.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await run();
  console.log(JSON.stringify(r, null, 2));
}
