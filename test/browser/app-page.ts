// Node-side helper for app-level browser tests: builds the library once per test file, serves it with a page CSP and
// opens an app page in Chromium; test code, trusted side.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { buildBrowserApp, launchChromium, serveDir } from '../../node/diagnostics/browser-driver.mjs';

/** The page CSP the browser host documents as enough (docs/browser.md): no unsafe-eval, no unsafe-inline. */
export const STRICT_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; base-uri 'none'";

/** The app page: no inline script at all; its one module imports the library and exposes it as `window.ty`. */
const APP_HTML =
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>app</title><link rel="stylesheet" ` +
  `href="/app/app.css"></head><body><main id="chat"></main><script type="module" src="/app/app.js"></script></body></html>`;
const APP_JS = `import * as ty from '/index.js';
window.ty = ty;
// The page's own view of its CSP: code generation from strings refused?
window.tyCodegen = () => { try { new Function('return 1'); return 'allowed'; } catch { return 'blocked'; } };
window.tyReady = true;
`;
/**
 * Hostile page CSS: hides and restyles dialogs, buttons and headings everywhere (the built-in dialog must stay usable).
 */
const APP_CSS = `dialog, dialog * , button, h2, pre { display: none !important; opacity: 0 !important; visibility: hidden !important; }`;

let built: Promise<string> | undefined;
let dir: string | undefined;
/** Build into a temp folder once per test file (other browser tests build into dist/browser at the same time). */
export function buildOnce(): Promise<string> {
  dir ??= mkdtempSync(join(tmpdir(), 'ty-app-build-'));
  built ??= buildBrowserApp({ outDir: dir });
  return built;
}
export function removeBuild(): void {
  if (dir) rmSync(dir, { recursive: true, force: true });
}

/**
 * Per-file suite set-up for app-level Chromium tests: builds once and launches one browser before the file's tests
 * (`launch` overrides how), closes it and removes the build after them. Returns a getter for the browser.
 */
export function useAppBrowser(launch: () => Promise<Browser> = launchChromium): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    await buildOnce();
    browser = await launch();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    removeBuild();
  });
  return () => {
    if (!browser) throw new Error('the browser did not start (see beforeAll)');
    return browser;
  };
}

export interface AppPage {
  browser: Browser;
  page: Page;
  origin: string;
  requests: string[];
  console: string[];
  /** With `separateFrameSite`: the other site serving the frame assets (pass it as assetBaseUrl). */
  frameBase?: string;
  close(): Promise<void>;
}

/**
 * Serve the build with `pageCsp` on every response but the sandbox frame's (`frameCsp` there, none by default) and
 * open /app/index.html. `hostileCss` serves the page CSS that hides dialogs and buttons.
 */
export async function openApp(
  opts: {
    pageCsp?: string;
    frameCsp?: string;
    hostileCss?: boolean;
    browser?: Browser;
    separateFrameSite?: boolean;
  } = {},
): Promise<AppPage> {
  const out = await buildOnce();
  // Another site (localhost vs 127.0.0.1) serving the same build: its frames get their own renderer process.
  const frameServer = opts.separateFrameSite ? await serveDir(out) : undefined;
  const frameBase = frameServer ? `${frameServer.origin.replace('127.0.0.1', 'localhost')}/` : undefined;
  const pageCsp = (opts.pageCsp ?? STRICT_CSP) + (frameBase ? `; frame-src 'self' ${frameBase.slice(0, -1)}` : '');
  const server = await serveDir(out, {
    headers: (path): Record<string, string> => {
      if (path.endsWith('/sandbox-frame.html'))
        return opts.frameCsp ? { 'content-security-policy': opts.frameCsp } : {};
      return { 'content-security-policy': pageCsp };
    },
    files: {
      '/app/index.html': { type: 'text/html; charset=utf-8', body: APP_HTML },
      '/app/app.js': { type: 'text/javascript; charset=utf-8', body: APP_JS },
      '/app/app.css': { type: 'text/css', body: opts.hostileCss ? APP_CSS : '' },
    },
  });
  const browser = opts.browser ?? (await launchChromium());
  const context = await browser.newContext();
  const page = await context.newPage();
  const lines: string[] = [];
  page.on('console', (m) => lines.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => lines.push(`pageerror: ${e.message}`));
  await page.goto(`${server.origin}/app/index.html`);
  await page.waitForFunction(() => (window as unknown as { tyReady?: boolean }).tyReady === true, undefined, {
    timeout: 30_000,
  });
  return {
    browser,
    page,
    origin: server.origin,
    requests: server.requests,
    console: lines,
    ...(frameBase ? { frameBase } : {}),
    async close() {
      await context.close().catch(() => {});
      if (!opts.browser) await browser.close();
      await server.close();
      await frameServer?.close();
    },
  };
}
