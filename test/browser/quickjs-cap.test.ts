// The browser host's cap on retained quickjs sandboxes (BROWSER_MAX_INSTANCES) in real Chromium: more quickjs tools
// than a renderer can hold WebAssembly memories for all answer, the least recently used sandbox going first; and the
// QuickJS binary fetched from quickjsBaseUrl on the page's origin while the frames run on another site; test side.
import { afterAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { CHROMIUM_PATH } from '../../node/diagnostics/browser-driver.mjs';
import { openApp, removeBuild, useAppBrowser } from './app-page.js';

const haveChromium = existsSync(CHROMIUM_PATH);
type Ty = typeof import('../../browser/index.js');

afterAll(() => removeBuild());

describe.skipIf(!haveChromium)('retained quickjs sandboxes in a page (Chromium)', () => {
  const browser = useAppBrowser();

  it('140 quickjs tools all answer: beyond 100 the least recently used sandbox goes, not a call', async () => {
    const app = await openApp({ browser: browser(), separateFrameSite: true });
    try {
      const out = await app.page.evaluate(
        async ({ frameBase, quickjsBaseUrl }) => {
          const ty = (window as unknown as { ty: Ty }).ty;
          const host = await ty.createBrowserHost({
            dbName: `qcap-${Math.random().toString(36).slice(2)}`,
            sandbox: { assetBaseUrl: frameBase, quickjsBaseUrl },
          });
          const N = 140;
          const first: unknown[] = [];
          for (let i = 0; i < N; i++) {
            await host.registry.install({
              name: `c${i}`,
              description: 'counts its calls',
              parameters: { type: 'object' },
              execution: {
                kind: 'sandboxed-code',
                runtime: 'javascript',
                engine: 'quickjs',
                source: `let n = 0; // c${i}\nexport default async () => ++n`,
              },
            });
            first.push(await host.invoke(`c${i}`, {}));
          }
          // the 100 most recent are retained (their second call counts 2); the oldest was destroyed (a fresh 1)
          const recent: unknown[] = [];
          for (let i = N - 100; i < N; i++) recent.push(await host.invoke(`c${i}`, {}));
          const oldest = await host.invoke('c0', {});
          await host.close();
          return { cap: ty.BROWSER_MAX_INSTANCES, first, recent, oldest };
        },
        { frameBase: app.frameBase!, quickjsBaseUrl: `${app.origin}/quickjs/` },
      );
      expect(out.cap).toBe(100);
      expect(out.first.filter((r) => (r as { ok: boolean }).ok === true).length).toBe(140);
      expect(out.first[0]).toMatchObject({ ok: true, result: 1 });
      for (const r of out.recent) expect(r).toMatchObject({ ok: true, result: 2 });
      expect(out.oldest).toMatchObject({ ok: true, result: 1 });
    } finally {
      await app.close();
    }
  }, 300_000);
});
