// ctx.progress in the browser host (Chromium): a JavaScript and a Python tool report how far they are; the host
// passes the reports on (InvokeOptions.onProgress, what `$/progress` stage `progress` carries), coalesced, the last
// one kept; test code, trusted side.
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { CHROMIUM_PATH } from '../../node/diagnostics/browser-driver.mjs';
import { openApp, useAppBrowser } from './app-page.js';

const haveChromium = existsSync(CHROMIUM_PATH);
type Ty = typeof import('../../browser/index.js');
type Seen = { stage: string; fraction?: number; message?: string };

const JS = {
  name: 'busy',
  description: 'reports progress a thousand times',
  parameters: { type: 'object' },
  execution: {
    kind: 'sandboxed-code',
    runtime: 'javascript',
    source:
      'export default async (a, ctx) => { for (let i = 1; i <= 1000; i++) ctx.progress(i / 1000, `step ${i}`); return "ok"; }',
  },
};
const PY = {
  name: 'pybusy',
  description: 'reports progress from Python',
  parameters: { type: 'object' },
  execution: {
    kind: 'sandboxed-code',
    runtime: 'python',
    source: 'def main(args, ctx):\n    ctx.progress(0.5, "half")\n    return 42\n',
  },
};

/** In the page: run `manifest` with onProgress; the result and every report the host passed on. */
async function run(page: Page, manifest: unknown): Promise<{ r: unknown; seen: Seen[] }> {
  return page.evaluate(async (m) => {
    const ty = (window as unknown as { ty: Ty }).ty;
    const host = await ty.createBrowserHost({
      dbName: `progress-${Math.random().toString(36).slice(2)}`,
      dialog: false,
      sandbox: { pyodide: ty.PYODIDE_MANIFEST, pyodideBaseUrl: '/pyodide/' },
    });
    await host.registry.install(m);
    const seen: Seen[] = [];
    const r = await host.invoke((m as { name: string }).name, {}, { onProgress: (p) => seen.push({ ...p }) });
    await host.close();
    return { r, seen };
  }, manifest);
}

describe.skipIf(!haveChromium)('ctx.progress in the browser host', () => {
  const browser = useAppBrowser();

  it('JavaScript: started, then coalesced reports (not one per call), the last one (1, "step 1000") kept', async () => {
    const app = await openApp({ browser: browser() });
    try {
      const { r, seen } = await run(app.page, JS);
      expect(r).toMatchObject({ ok: true, result: 'ok' });
      expect(seen[0]).toEqual({ stage: 'started' });
      const reports = seen.filter((s) => s.stage === 'progress');
      expect(reports.length).toBeGreaterThan(0);
      // rate-limited: a thousand calls in one tight loop leave the sandbox as a handful of reports
      expect(reports.length).toBeLessThan(50);
      expect(reports.at(-1)).toEqual({ stage: 'progress', fraction: 1, message: 'step 1000' });
      const fractions = reports.map((p) => p.fraction!);
      expect([...fractions].sort((a, b) => a - b)).toEqual(fractions);
    } finally {
      await app.close();
    }
  }, 120_000);

  it('Python: ctx.progress(0.5, "half") reaches the host', async () => {
    const app = await openApp({ browser: browser() });
    try {
      const { r, seen } = await run(app.page, PY);
      expect(r).toMatchObject({ ok: true, result: 42 });
      expect(seen).toEqual([{ stage: 'started' }, { stage: 'progress', fraction: 0.5, message: 'half' }]);
    } finally {
      await app.close();
    }
  }, 240_000);
});
