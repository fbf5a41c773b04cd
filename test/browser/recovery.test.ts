// Recovery from a dead sandbox in real Chromium: a memory bomb kills its renderer; the call fails fast with
// E_SANDBOX_FAILED and sibling tools keep working with fresh sandboxes; test code, trusted side.
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../node/diagnostics/browser-driver.mjs';
import { openApp, useAppBrowser } from './app-page.js';

const haveChromium = existsSync(CHROMIUM_PATH);
type Ty = typeof import('../../browser/index.js');

const tool = (name: string, source: string) => ({
  name,
  description: name,
  parameters: { type: 'object' },
  execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
});
/** Grows its heap without bound (kept reachable), until V8 gives up and the renderer process dies. */
const BOMB = tool(
  'bomb',
  'export default async () => { const keep = []; for (;;) { keep.push(new Array(1 << 20).fill(keep.length)); if (keep.length % 64 === 0) await null; } }',
);
const SIBLING = tool('sibling', 'let n = 0; export default async () => ++n');

describe.skipIf(!haveChromium)('recovery from a dead sandbox (Chromium)', () => {
  // A small heap cap per V8 isolate keeps the memory bomb short on a shared machine; the crash is the same.
  const browser = useAppBrowser(async () => {
    const { chromium } = await import('playwright-core');
    return chromium.launch({
      executablePath: CHROMIUM_PATH,
      args: [...CHROMIUM_ARGS, '--js-flags=--max-old-space-size=256'],
      headless: true,
    });
  });

  it('a memory bomb fails with E_SANDBOX_FAILED within 2 s of its renderer dying; a sibling tool answers again within 2 s; the page lives on', async () => {
    const app = await openApp({ browser: browser(), separateFrameSite: true });
    try {
      // Playwright reports the crash of an out-of-process frame as the page's; the page itself lives on, so it is
      // read through a CDP session of its own from here on.
      let crashAt = 0;
      app.page.on('crash', () => (crashAt = Date.now()));
      const cdp = await app.page.context().newCDPSession(app.page);
      await app.page.evaluate(
        async ({ bomb, sibling, frameBase }) => {
          await new Promise((r) => setTimeout(r, 0));
          const ty = (window as unknown as { ty: Ty }).ty;
          // The frame assets from another site: each sandbox frame runs in a renderer process of that site, apart
          // from the page's, so a tool exhausting memory takes down its frame, not the app.
          const host = await ty.createBrowserHost({
            dbName: `rec-${Math.random().toString(36).slice(2)}`,
            sandbox: { assetBaseUrl: frameBase },
          });
          const w = window as unknown as Record<string, unknown>;
          const destroyed: { tool: string; reason: string; at: number }[] = [];
          host.on('sandbox-destroyed', (e) => destroyed.push({ tool: e.tool, reason: e.reason, at: Date.now() }));
          await host.registry.install(bomb);
          await host.registry.install(sibling);
          const first = await host.invoke('sibling', {});
          const t0 = Date.now();
          w.result = host.invoke('bomb', {}).then(async (boom) => {
            const boomAt = Date.now();
            const boomMs = boomAt - t0;
            const t1 = Date.now();
            const again = await host.invoke('sibling', {});
            const againMs = Date.now() - t1;
            await host.close();
            return {
              first,
              boom,
              boomMs,
              boomAt,
              again,
              againMs,
              destroyed: destroyed.map((d) => ({ tool: d.tool, reason: d.reason, afterBomb: d.at - t0 })),
            };
          });
        },
        { bomb: BOMB, sibling: SIBLING, frameBase: app.frameBase! },
      );
      const got = await cdp.send('Runtime.evaluate', {
        expression: 'window.result',
        awaitPromise: true,
        returnByValue: true,
      });
      const out = got.result.value as {
        first: unknown;
        boom: unknown;
        boomMs: number;
        boomAt: number;
        again: unknown;
        againMs: number;
        destroyed: { tool: string; reason: string }[];
      };
      expect(out.first).toMatchObject({ ok: true, result: 1 });
      expect(out.boom).toMatchObject({ ok: false, error: { code: 'E_SANDBOX_FAILED' } });
      expect(out.boomMs).toBeLessThan(30_000); // the call's own timeout is 60 s
      expect(crashAt).toBeGreaterThan(0); // its renderer really died
      expect(out.boomAt - crashAt).toBeLessThan(2_000);
      expect(out.again).toMatchObject({ ok: true });
      expect(out.againMs).toBeLessThan(2_000);
      const bombGone = out.destroyed.find((d) => d.tool === 'bomb');
      expect(bombGone?.reason).toMatch(/stopped|closed/);
      process.stdout.write(
        `recovery: bomb failed after ${out.boomMs} ms; sibling answered again after ${out.againMs} ms; destroyed ${JSON.stringify(out.destroyed)}\n`,
      );
    } finally {
      await app.close();
    }
  }, 120_000);
});
