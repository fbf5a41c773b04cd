// The chat app embedded across sites (a page on http://localhost:E, the app on http://127.0.0.1:A: another site to
// Chromium), driven by a page bundled with vite from `tysandbox/client` (the browser export condition) under a strict
// CSP: the handshake asks the person inside the frame, a tool runs, and the storage-access path, in a fresh and a
// persistent profile; axe-clean, screenshots in docs/; test code, trusted side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import AxeBuilder from '@axe-core/playwright';
import type { BrowserContext, Frame, Page } from 'playwright-core';
import { CHROMIUM_ARGS, CHROMIUM_PATH, REPO_ROOT, serveDir } from '../../node/diagnostics/browser-driver.mjs';
import { startAppServer, type AppServer } from '../../node/http/app-server.js';
import { doubler } from '../protocol/helpers.js';

const ready = existsSync(CHROMIUM_PATH) && existsSync(join(REPO_ROOT, 'dist/client/browser.js'));
let dir: string;
let out: string;
let pageServer: { origin: string; close(): Promise<void> };
let E: string; // the embedding page's origin: localhost
let app: AppServer;
let A: string; // the app's origin: 127.0.0.1

/** The embedding page: one module bundled by vite from the published package, nothing inline. */
const MAIN_TS = `import { connectWindow, type ProtocolClient } from 'tysandbox/client';
let client: ProtocolClient | undefined;
const w = window as unknown as Record<string, unknown>;
w.frameApp = (src: string) => new Promise<void>((resolve) => {
  const f = document.createElement('iframe');
  f.title = 'embedded app';
  f.style.width = '100%';
  f.style.height = '700px';
  f.addEventListener('load', () => resolve(), { once: true });
  f.src = src;
  document.body.append(f);
});
w.connect = async (origin: string) => {
  const f = document.querySelector('iframe')!;
  try {
    client = await connectWindow(f.contentWindow!, origin, { name: 'xsite', version: '1', readyTimeoutMs: 60_000 });
    return { ok: true, principal: client.info!.principal, version: client.info!.protocolVersion };
  } catch (e) {
    return { ok: false, code: String((e as { code?: string }).code), message: String((e as Error).message) };
  }
};
w.call = async (method: string, params: Record<string, unknown>) => {
  try { return { result: await client!.request(method, params) }; } catch (e) { return { error: String((e as { code?: string }).code) }; }
};
w.ready = true;
`;
const PAGE_CSP = (app: string) =>
  `default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; base-uri 'none'; frame-src ${app}; connect-src 'self'`;

beforeAll(async () => {
  if (!ready) return;
  dir = mkdtempSync(join(tmpdir(), 'ty-xsite-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(REPO_ROOT, join(dir, 'node_modules', 'tysandbox'), 'dir');
  writeFileSync(
    join(dir, 'index.html'),
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>embedder</title></head><body><h1>Embedding page</h1><script type="module" src="/main.ts"></script></body></html>',
  );
  writeFileSync(join(dir, 'main.ts'), MAIN_TS);
  const { build } = await import('vite');
  out = join(dir, 'out');
  await build({
    root: dir,
    configFile: false,
    logLevel: 'warn',
    build: { outDir: out, emptyOutDir: true, target: 'es2022' },
  });
  // the page's CSP names the app's origin, known once the app listens: read per request
  pageServer = await serveDir(out, { headers: () => ({ 'content-security-policy': PAGE_CSP(A) }) });
  E = pageServer.origin.replace('127.0.0.1', 'localhost');
  app = await startAppServer({ dir: join(REPO_ROOT, 'dist', 'browser'), port: 0, frameAncestors: [E] });
  A = new URL(app.url).origin;
}, 240_000);
afterAll(async () => {
  await pageServer?.close();
  await app?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function embed(ctx: BrowserContext): Promise<{ page: Page; frame: Frame; errors: string[] }> {
  const page = await ctx.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${E}/index.html`);
  await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
  await page.evaluate(
    (src) => (window as unknown as { frameApp: (s: string) => Promise<void> }).frameApp(src),
    app.url,
  );
  const frame = page.frames().find((f) => f.url().startsWith(A))!;
  await frame.waitForFunction(() => window.tyAppReady === true, undefined, { timeout: 60_000 });
  return { page, frame, errors };
}
const connect = (page: Page) =>
  page.evaluate(
    (o) => (window as unknown as { connect: (o: string) => Promise<Record<string, unknown>> }).connect(o),
    A,
  );
const call = (page: Page, method: string, params: Record<string, unknown>) =>
  page.evaluate(
    ([m, p]) =>
      (window as unknown as { call: (m: string, p: unknown) => Promise<Record<string, unknown>> }).call(m as string, p),
    [method, params] as const,
  );

describe.skipIf(!ready)('the app embedded across sites, driven by the browser build of tysandbox/client', () => {
  it('the page bundle holds the browser build: no node:* import, the client under 40 KiB gzip', () => {
    const js = readdirSync(join(out, 'assets')).filter((f) => f.endsWith('.js'));
    const text = js.map((f) => readFileSync(join(out, 'assets', f), 'utf8')).join('\n');
    expect(text).not.toMatch(/node:child_process|from\s*["']node:/);
    expect(text).toContain('tysandbox/1.1');
    expect(gzipSync(readFileSync(join(REPO_ROOT, 'dist/client/browser.js'))).length).toBeLessThan(40 * 1024);
  });

  it('fresh profile: storage refused, in memory with a notice; the handshake asks the person; a tool runs; the storage-access button', async () => {
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
    try {
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const { page, frame, errors } = await embed(ctx);
      expect(await frame.evaluate(() => document.documentElement.dataset.storage)).toBe('memory');
      const notice = frame.getByRole('status').filter({ hasText: 'last only until this page closes' });
      await expect.poll(() => notice.count()).toBe(1);
      // the first handshake: the person inside the frame is asked
      const connecting = connect(page);
      const ask = frame.getByRole('dialog', { name: 'Let this page use the app’s tools?' });
      await ask.waitFor({ timeout: 20_000 });
      expect(await ask.textContent()).toContain(E);
      for (const scheme of ['light', 'dark'] as const)
        for (const [w, hh] of [
          [1280, 800],
          [390, 844],
        ] as const) {
          await page.emulateMedia({ colorScheme: scheme });
          await page.setViewportSize({ width: w, height: hh });
          const axe = await new AxeBuilder({ page }).include('iframe').analyze();
          expect(axe.violations.map((v) => v.id)).toEqual([]);
          await page.screenshot({ path: join(REPO_ROOT, 'docs', `app-embed-ask-${w}-${scheme}.png`) });
        }
      await page.setViewportSize({ width: 1280, height: 800 });
      await ask.getByRole('button', { name: 'Allow this page' }).click();
      expect(await connecting).toEqual({ ok: true, principal: `origin:${E}`, version: 'tysandbox/1.1' });
      expect(await call(page, 'tool/add', { manifest: doubler('double', 2) })).toMatchObject({
        result: { name: 'double' },
      });
      expect(await call(page, 'tool/run', { ref: 'double', arguments: { x: 21 } })).toMatchObject({
        result: { result: 42 },
      });
      // the storage-access path: the person clicks the button; the browser's own prompt is answered "allow" (CDP, as
      // the person would in a headed browser)
      // Chromium grants storage access only to a site the person used at top level before: they open the app itself
      const top = await ctx.newPage();
      await top.goto(app.url);
      await top.waitForFunction(() => window.tyAppReady === true, undefined, { timeout: 60_000 });
      await top.getByRole('button', { name: 'Settings' }).click();
      await top.close();
      const cdp = await ctx.newCDPSession(page);
      const { targetInfo } = (await cdp.send('Target.getTargetInfo' as never)) as {
        targetInfo: { browserContextId: string };
      };
      await cdp.send(
        'Browser.setPermission' as never,
        {
          permission: { name: 'storage-access' },
          setting: 'granted',
          origin: E,
          embeddedOrigin: A,
          browserContextId: targetInfo.browserContextId,
        } as never,
      );
      await frame.getByRole('button', { name: 'Allow this app to keep its data here' }).click();
      // this Chromium blocks third-party storage outright: the grant comes, its database is still refused, and the
      // notice says so (measured; a browser that honours the grant reloads the app on its own data instead)
      await expect
        .poll(() => notice.textContent(), { timeout: 20_000 })
        .toMatch(/The browser did not allow it: access was granted but its database refused: no answer from IndexedDB/);
      await page.screenshot({ path: join(REPO_ROOT, 'docs', 'app-embed-storage-notice.png') });
      expect(errors).toEqual([]);
      await ctx.close();
    } finally {
      await browser.close();
    }
  }, 240_000);

  it('persistent profile that keeps third-party data partitioned: the allowed origin and the tools outlive a reload', async () => {
    const { chromium } = await import('playwright-core');
    const udd = mkdtempSync(join(tmpdir(), 'ty-xsite-profile-'));
    // a person's profile that allows third-party cookies: the browser partitions the frame's storage instead
    const args = [...CHROMIUM_ARGS, '--disable-features=BlockThirdPartyCookies,TrackingProtection3pcd'];
    const open = () =>
      chromium.launchPersistentContext(udd, {
        executablePath: CHROMIUM_PATH,
        args,
        headless: true,
        viewport: { width: 1280, height: 800 },
      });
    try {
      let ctx = await open();
      let { page, frame } = await embed(ctx);
      expect(await frame.evaluate(() => document.documentElement.dataset.storage)).toBe('partitioned');
      const connecting = connect(page);
      await frame
        .getByRole('dialog', { name: 'Let this page use the app’s tools?' })
        .getByRole('button', { name: 'Allow this page' })
        .click();
      expect(await connecting).toMatchObject({ ok: true });
      expect(await call(page, 'tool/add', { manifest: doubler('triple', 3) })).toMatchObject({
        result: { name: 'triple' },
      });
      await ctx.close();
      // the browser restarts on the same profile: no question this time, the tool is still there
      ctx = await open();
      ({ page, frame } = await embed(ctx));
      expect(await frame.evaluate(() => document.documentElement.dataset.storage)).toBe('partitioned');
      expect(await connect(page)).toMatchObject({ ok: true, principal: `origin:${E}` });
      expect(await frame.getByRole('dialog').count()).toBe(0);
      expect(await call(page, 'tool/run', { ref: 'triple', arguments: { x: 5 } })).toMatchObject({
        result: { result: 15 },
      });
      await ctx.close();
    } finally {
      rmSync(udd, { recursive: true, force: true });
    }
  }, 240_000);
});
