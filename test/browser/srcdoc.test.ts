// srcdoc mode in Chromium: createBrowserHost({ sandbox: { frame: 'srcdoc' } }) runs tools under the page CSP
// docs/browser.md gives (no sandbox-frame.html fetched), and a page CSP that forbids it fails the call at once with
// E_SANDBOX_UNAVAILABLE naming the directive; test code, trusted side.
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import {
  CHROMIUM_PATH,
  REPO_ROOT,
  srcdocBootstrapHash,
  srcdocPageCsp,
} from '../../node/diagnostics/browser-driver.mjs';
import { openApp, useAppBrowser } from './app-page.js';

const haveChromium = existsSync(CHROMIUM_PATH);
type Ty = typeof import('../../browser/index.js');

const JS = {
  name: 'hi',
  description: 'd',
  parameters: { type: 'object' },
  execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async () => "hi from srcdoc"' },
};
const PY = {
  name: 'py',
  description: 'd',
  parameters: { type: 'object' },
  execution: { kind: 'sandboxed-code', runtime: 'python', source: 'def main(args, ctx):\n    return 6 * 7\n' },
};

/** In the page: a srcdoc host runs `manifest`; the call's outcome and how long it took, ms. */
async function run(page: Page, manifest: unknown): Promise<{ r: unknown; ms: number }> {
  return page.evaluate(async (m) => {
    const ty = (window as unknown as { ty: Ty }).ty;
    const host = await ty.createBrowserHost({
      dbName: `srcdoc-${Math.random().toString(36).slice(2)}`,
      dialog: false,
      sandbox: { frame: 'srcdoc', pyodide: ty.PYODIDE_MANIFEST, pyodideBaseUrl: '/pyodide/' },
    });
    await host.registry.install(m);
    const t0 = performance.now();
    const r = await host.invoke((m as { name: string }).name, {});
    const ms = performance.now() - t0;
    await host.close();
    return { r, ms };
  }, manifest);
}

describe.skipIf(!haveChromium)('srcdoc mode (browser/sandbox/srcdoc.ts)', () => {
  const browser = useAppBrowser();

  it('docs/browser.md gives the bootstrap hash of this build', () => {
    expect(readFileSync(join(REPO_ROOT, 'docs/browser.md'), 'utf8')).toContain(srcdocPageCsp());
  });

  it('runs JavaScript and Python tools under the documented page CSP, without fetching sandbox-frame.html', async () => {
    const app = await openApp({ browser: browser(), pageCsp: srcdocPageCsp() });
    try {
      expect((await run(app.page, JS)).r).toMatchObject({ ok: true, result: 'hi from srcdoc' });
      expect((await run(app.page, PY)).r).toMatchObject({ ok: true, result: 42 });
      expect(app.requests.some((r) => r.includes('sandbox-frame'))).toBe(false);
    } finally {
      await app.close();
    }
  }, 240_000);

  it('a page CSP that forbids it: E_SANDBOX_UNAVAILABLE naming the directive, at once', async () => {
    const hash = srcdocBootstrapHash();
    const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    const cases: [string, unknown, RegExp][] = [
      // the default strict page policy: no Blob worker
      [
        "default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; base-uri 'none'",
        JS,
        /directive worker-src forbids the srcdoc sandbox frame: it needs blob: in worker-src/,
      ],
      // Blob workers allowed, not Blob scripts (the tool module)
      [
        `default-src 'self'; script-src 'self' ${hash}; worker-src blob:`,
        JS,
        /directive script-src-elem .*blob: in script-src/,
      ],
      // Blob workers and scripts, not the bootstrap's hash
      [
        "default-src 'self'; script-src 'self' blob:; worker-src blob:",
        JS,
        new RegExp(`directive script-src .*${esc(hash)}`),
      ],
      // the documented policy, on a page that requires Trusted Types (the frame and its worker would inherit it)
      [
        `${srcdocPageCsp()}; require-trusted-types-for 'script'; trusted-types tysandbox`,
        JS,
        /directive require-trusted-types-for forbids the srcdoc sandbox frame: .*use the default frame mode/,
      ],
      // everything but WebAssembly, for Python
      [
        `default-src 'self'; script-src 'self' ${hash} blob:; worker-src blob:`,
        PY,
        /directive script-src .*'wasm-unsafe-eval'/,
      ],
    ];
    for (const [csp, manifest, want] of cases) {
      const app = await openApp({ browser: browser(), pageCsp: csp });
      try {
        const { r, ms } = await run(app.page, manifest);
        expect(r, csp).toMatchObject({ ok: false, error: { code: 'E_SANDBOX_UNAVAILABLE' } });
        expect((r as { error: { message: string } }).error.message, csp).toMatch(want);
        // at once: long before the 30 s start budget (a generous bound, not a timing claim)
        expect(ms, csp).toBeLessThan(10_000);
      } finally {
        await app.close();
      }
    }
  }, 240_000);
});
