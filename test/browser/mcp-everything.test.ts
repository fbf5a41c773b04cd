// The browser host against the reference server: server-everything's Streamable HTTP mode on loopback, reached from a
// page in Chromium through the host's MCP bridge; test code, trusted side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Browser } from 'playwright-core';
import { CHROMIUM_PATH, launchChromium } from '../../node/diagnostics/browser-driver.mjs';
import { buildOnce, openApp, removeBuild, STRICT_CSP, type AppPage } from './app-page.js';
import { closedUrl } from './mcp-http-fixture.mjs';

const haveChromium = existsSync(CHROMIUM_PATH);
const require = createRequire(import.meta.url);
const EVERYTHING = join(
  dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')),
  'dist/index.js',
);

type Ty = typeof import('../../browser/index.js');
type Host = Awaited<ReturnType<Ty['createBrowserHost']>>;
interface W {
  ty: Ty;
  host: Host;
}

/** server-everything's HTTP mode on a port that was free a moment ago; resolves once it says it listens. */
async function startEverything(): Promise<{ url: string; child: ChildProcess }> {
  const url = await closedUrl();
  const port = new URL(url).port;
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
    env: { PATH: process.env.PATH ?? '', PORT: port },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server-everything did not start: ${err}`)), 30_000);
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.includes('listening on port')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on('exit', (c) => reject(new Error(`server-everything exited ${c}: ${err}`)));
  });
  return { url, child };
}

describe.skipIf(!haveChromium)('the browser host with server-everything (Streamable HTTP)', () => {
  let browser: Browser;
  let app: AppPage;
  let everything: { url: string; child: ChildProcess };
  beforeAll(async () => {
    await buildOnce();
    everything = await startEverything();
    browser = await launchChromium();
    app = await openApp({ browser, pageCsp: `${STRICT_CSP}; connect-src 'self' http://127.0.0.1:*` });
  }, 180_000);
  afterAll(async () => {
    await app?.close();
    await browser?.close();
    everything?.child.kill('SIGTERM');
    removeBuild();
  });

  it('lists its tools as everything__TOOL (none that need sampling or elicitation: the host declares no client capabilities), calls one allowed and one approved in the dialog', async () => {
    const names = await app.page.evaluate(async (url) => {
      const w = window as unknown as W;
      w.host = await w.ty.createBrowserHost({
        dbName: `ev-${Math.random().toString(36).slice(2)}`,
        mcpServers: [{ name: 'everything', url, allow: ['echo'] }],
      });
      return (await w.host.mcp.listTools('everything')).map((t) => t.name);
    }, `${everything.url}`);
    expect(names).toContain('everything__echo');
    expect(names).toContain('everything__get-sum');
    expect(names.some((n) => /sampling|elicitation/.test(n))).toBe(false);
    const echo = await app.page.evaluate(async () => {
      const r = await (window as unknown as W).host.invoker.invoke('everything__echo', { message: 'from the page' });
      return r.ok ? r.result : `${r.error.code}: ${r.error.message}`;
    });
    expect(echo).toBe('Echo: from the page');
    const sum = app.page.evaluate(async () => {
      const r = await (window as unknown as W).host.invoker.invoke('everything__get-sum', { a: 2, b: 3 });
      return r.ok ? JSON.stringify(r.result) : `${r.error.code}: ${r.error.message}`;
    });
    await app.page.getByRole('dialog').getByRole('button', { name: 'Allow once' }).click({ timeout: 15_000 });
    expect(await sum).toContain('5');
    const info = await app.page.evaluate(() => (window as unknown as W).host.mcp.servers());
    expect(info[0]).toMatchObject({ name: 'everything', state: 'connected' });
  });
});
