// One quickjs revision, two hosts: the same revision id and the same results from tycli's host (a QuickJS sandbox in
// the principal's sandbox host process, bubblewrap required) and from the browser host in Chromium (a QuickJS sandbox
// in the principal's frame worker), for every example tool and a capability probe; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { PassThrough } from 'node:stream';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseManifest } from '../../core/manifest/parse.js';
import { createNodeHost } from '../../node/host/host.js';
import { loadManifestFile } from '../../node/manifest/file.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import {
  CHROMIUM_PATH,
  buildBrowserApp,
  launchChromium,
  openDiagnostics,
  serveDir,
} from '../../node/diagnostics/browser-driver.mjs';

const ROOT = resolve(import.meta.dirname, '..', '..');
let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'tysandbox-qjs-cross-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** An example tool's manifest as tool add stores it, on the quickjs engine. */
async function quickjs(path: string): Promise<ToolManifest> {
  const doc = (await loadManifestFile(join(ROOT, path))) as { execution: Record<string, unknown> };
  doc.execution.engine = 'quickjs';
  return parseManifest(doc);
}
const data = (f: string) => readFile(join(ROOT, 'tools', 'examples', 'data', f), 'utf8');

describe.runIf(existsSync(CHROMIUM_PATH))('the same quickjs revision on the command line and in the browser', () => {
  it('gets the same revision ids and the same results on both hosts (example tools, storage, refusals, errors)', async () => {
    const probe: ToolManifest = parseManifest({
      name: 'qprobe',
      description: 'storage across calls, refusal codes, a tool error',
      parameters: { type: 'object' },
      execution: {
        kind: 'sandboxed-code',
        runtime: 'javascript',
        engine: 'quickjs',
        source: `export default async (a, ctx) => {
  if (a.fail) throw Object.assign(new TypeError('asked to fail'), { code: 'E_ASKED' });
  const previous = await ctx.storage.get('last');
  await ctx.storage.set('last', a);
  const refused = [];
  for (const f of [() => ctx.getSecret('NOT_GRANTED'), () => fetch('http://example.com/'), () => fetch('https://127.0.0.1/')])
    try { await f(); refused.push('allowed'); } catch (e) { refused.push(e.code); }
  const u = new URL('https://example.com/a/../b?x=1&y=ä#h'); u.searchParams.append('z', '2 3');
  const words = [...new Intl.Segmenter('en', { granularity: 'word' }).segment('Hello, wide world!')].filter((s) => s.isWordLike);
  return { previous, refused, url: u.href, n: new Intl.NumberFormat('en-US').format(1234567.5), words: words.length };
};`,
      },
      capabilities: {
        storage: {},
        secrets: ['NOT_GRANTED'],
        fetch: [{ origin: 'https://example.com', access: 'read' }],
      },
    });
    const cases: [ToolManifest, unknown[]][] = [
      [await quickjs('tools/csv-stats/manifest.json'), [{ csv: await data('sales.csv'), top: 2 }, { csv: 'a\n"x' }]],
      [
        await quickjs('tools/json-reshape/manifest.json'),
        [{ json: await data('people.json'), pick: ['name.last'] }, { json: '[' }],
      ],
      [await quickjs('tools/text-stats/manifest.json'), [{ text: await data('article.txt'), top: 5 }]],
      [await quickjs('tools/examples/multi-file/manifest.json'), [{ value: 2, from: 'mi', to: 'km' }]],
      [probe, [{ n: 1 }, { n: 2 }, { fail: true }]],
    ];
    // Command line: the host tycli builds, OS sandbox required.
    const host = await createNodeHost({
      home: join(tmp, 'home'),
      globals: { sandbox: 'required', allow: [], deny: [] },
      io: { stdout: new PassThrough(), stderr: new PassThrough(), stdin: new PassThrough(), interactive: false },
      python: false,
      env: {},
      cwd: tmp,
    });
    const cli: { revision: string; results: unknown[] }[] = [];
    try {
      for (const [m, calls] of cases) {
        const { revision } = await host.registry.install(m);
        const results: unknown[] = [];
        for (const args of calls) results.push(await host.invoker.invoke(m.name, args));
        cli.push({ revision, results });
      }
    } finally {
      await host.close();
    }
    // Browser: the same manifests through the browser host in Chromium.
    const out = await buildBrowserApp({ outDir: join(tmp, 'browser') });
    const server = await serveDir(out);
    const browser = await launchChromium();
    const web: { revision: string; results: unknown[] }[] = [];
    try {
      const { page } = await openDiagnostics(browser, server.origin);
      for (const [m, calls] of cases)
        web.push(
          (await page.evaluate(([mm, cc]) => window.tyInvokeManifest(mm, cc), [m, calls] as const)) as (typeof web)[0],
        );
    } finally {
      await browser.close();
      await server.close();
    }
    expect(server.beacons).toEqual([]);
    for (let i = 0; i < cases.length; i++) {
      expect(web[i]!.revision, cases[i]![0].name).toBe(cli[i]!.revision);
      expect(web[i]!.results, cases[i]![0].name).toEqual(cli[i]!.results);
    }
    expect(cli[4]!.results[1]).toMatchObject({
      ok: true,
      result: { previous: { n: 1 }, refused: ['E_SECRET_DENIED', 'E_FETCH_SCHEME', 'E_FETCH_TARGET'], words: 3 },
    });
    expect(cli[4]!.results[2]).toMatchObject({
      ok: false,
      error: { code: 'E_TOOL_FAILED', message: 'TypeError: asked to fail' },
    });
    expect(cli[0]!.results[0]).toMatchObject({ ok: true });
  }, 600_000);
});
