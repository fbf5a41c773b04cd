// The browser host under a strict page CSP (script-src 'self', no unsafe-eval, no unsafe-inline) in real Chromium, and
// clear errors naming the directive that forbids it; test code, trusted side.
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { CHROMIUM_PATH } from '../../node/diagnostics/browser-driver.mjs';
import { openApp, useAppBrowser, STRICT_CSP } from './app-page.js';

const haveChromium = existsSync(CHROMIUM_PATH);

type Outcome = { ok: boolean; result?: unknown; error?: { code: string; message: string }; ms: number };
/** In the page: install `manifest` on a fresh host and invoke it with `args`. */
async function runTool(
  app: Awaited<ReturnType<typeof openApp>>,
  manifest: unknown,
  args: unknown,
  hostOpts: Record<string, unknown> = {},
): Promise<Outcome> {
  return app.page.evaluate(
    async ({ manifest, args, hostOpts }) => {
      const ty = (window as unknown as { ty: typeof import('../../browser/index.js') }).ty;
      // Leave the evaluate call first: code run synchronously inside a DevTools evaluation may skip the CSP eval check.
      await new Promise((r) => setTimeout(r, 0));
      const t0 = performance.now();
      const host = await ty.createBrowserHost({ dbName: `csp-${Math.random().toString(36).slice(2)}`, ...hostOpts });
      try {
        await host.registry.install(manifest);
        const r = await host.invoker.invoke((manifest as { name: string }).name, args);
        return {
          ...(r.ok
            ? { ok: true, result: r.result }
            : { ok: false, error: { code: r.error.code, message: r.error.message } }),
          ms: performance.now() - t0,
        };
      } catch (e) {
        const err = e as { code?: string; message?: string };
        return {
          ok: false,
          error: { code: String(err.code), message: String(err.message) },
          ms: performance.now() - t0,
        };
      } finally {
        await host.close();
      }
    },
    { manifest, args, hostOpts },
  );
}

const JS_TOOL = {
  name: 'greet',
  description: 'says hello',
  parameters: {
    type: 'object',
    properties: {
      who: { type: 'string', pattern: '^[a-z]+$', maxLength: 20 },
      when: { type: 'string', format: 'date' },
    },
    required: ['who'],
    additionalProperties: false,
  },
  execution: {
    kind: 'sandboxed-code',
    runtime: 'javascript',
    source: 'export default async ({ who }) => `hello ${who}`',
  },
};
const PY_TOOL = {
  name: 'pysum',
  description: 'adds in Python',
  parameters: {
    type: 'object',
    properties: { xs: { type: 'array', items: { type: 'number' } } },
    required: ['xs'],
    additionalProperties: false,
  },
  execution: {
    kind: 'sandboxed-code',
    runtime: 'python',
    source: 'def main(args, ctx):\n  return {"sum": sum(args["xs"])}\n',
  },
};

describe.skipIf(!haveChromium)('browser host under a strict page CSP (Chromium)', () => {
  const browser = useAppBrowser();

  it(`installs and runs JavaScript and Python tools under "${STRICT_CSP}"`, async () => {
    const app = await openApp({ browser: browser() });
    try {
      // control: the page CSP is in force (code generation and inline script are refused in this page)
      const control = await app.page.evaluate(async () => {
        await new Promise((r) => setTimeout(r, 0));
        const s = document.createElement('script');
        s.textContent = 'window.tyInline = true';
        document.body.appendChild(s);
        return {
          codegen: (window as unknown as { tyCodegen(): string }).tyCodegen(),
          inline: (window as unknown as { tyInline?: boolean }).tyInline === true,
        };
      });
      expect(control).toEqual({ codegen: 'blocked', inline: false });
      const before = app.console.length;
      const js = await runTool(app, JS_TOOL, { who: 'ada', when: '2026-12-01' });
      expect(js, JSON.stringify(js)).toMatchObject({ ok: true, result: 'hello ada' });
      const bad = await runTool(app, JS_TOOL, { who: 'Ada!' });
      expect(bad.error).toMatchObject({ code: 'E_INVALID_ARGS' });
      expect(bad.error!.message).toContain('"/who"');
      const badDate = await runTool(app, JS_TOOL, { who: 'ada', when: 'yesterday' });
      expect(badDate.error?.code).toBe('E_INVALID_ARGS');
      const py = await runTool(
        app,
        PY_TOOL,
        { xs: [1, 2, 3.5] },
        {
          sandbox: {
            pyodide: await app.page.evaluate(
              () => (window as unknown as { ty: { PYODIDE_MANIFEST: unknown } }).ty.PYODIDE_MANIFEST,
            ),
          },
        },
      );
      expect(py, JSON.stringify(py)).toMatchObject({ ok: true, result: { sum: 6.5 } });
      expect(app.console.slice(before).filter((l) => /Content Security Policy|Refused to/i.test(l))).toEqual([]);
    } finally {
      await app.close();
    }
  }, 180_000);

  it('a page CSP that forbids the sandbox frame fails at once with E_SANDBOX_UNAVAILABLE naming frame-src', async () => {
    const app = await openApp({ browser: browser(), pageCsp: `${STRICT_CSP}; frame-src 'none'` });
    try {
      const r = await runTool(app, JS_TOOL, { who: 'ada' });
      expect(r.error?.code).toBe('E_SANDBOX_UNAVAILABLE');
      expect(r.error?.message).toContain('frame-src');
      expect(r.ms).toBeLessThan(20_000); // not the 30 s start timeout
    } finally {
      await app.close();
    }
  }, 60_000);

  it('a server CSP header on the sandbox frame that forbids Blob workers fails naming worker-src', async () => {
    const app = await openApp({ browser: browser(), frameCsp: "script-src 'self'" });
    try {
      const r = await runTool(app, JS_TOOL, { who: 'ada' });
      expect(r.error?.code).toBe('E_SANDBOX_UNAVAILABLE');
      expect(r.error?.message).toContain('worker-src');
      expect(r.ms).toBeLessThan(20_000);
    } finally {
      await app.close();
    }
  }, 60_000);

  it('frame assets not served at assetBaseUrl: a clear error, not the start timeout', async () => {
    const app = await openApp({ browser: browser() });
    try {
      const r = await runTool(app, JS_TOOL, { who: 'ada' }, { sandbox: { assetBaseUrl: '/nowhere/' } });
      expect(r.error?.code).toBe('E_SANDBOX_UNAVAILABLE');
      expect(r.error?.message).toContain('sandbox-frame.html');
      expect(r.ms).toBeLessThan(20_000);
    } finally {
      await app.close();
    }
  }, 60_000);
});
