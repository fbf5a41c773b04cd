// Playwright helpers for the chat app tests: the real `tycli app` server (strict CSP) over the build, Debian's
// Chromium, settings by accessible name; test code.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page, Request } from 'playwright-core';
import { CHROMIUM_PATH, REPO_ROOT, launchChromium } from '../../node/diagnostics/browser-driver.mjs';
import { startAppServer, type AppServer } from '../../node/http/app-server.js';

export const haveChromium = existsSync(CHROMIUM_PATH);
export const BUILD_DIR = join(REPO_ROOT, 'dist/browser');

export interface AppEnv {
  server: AppServer;
  browser: Browser;
  close(): Promise<void>;
}

/** Serve the existing build (npm run build) with the app server and launch Chromium. */
export async function startEnv(): Promise<AppEnv> {
  if (!existsSync(join(BUILD_DIR, 'browser/app/index.html')))
    throw new Error('the app is not built: run npm run build first');
  const server = await startAppServer({ dir: BUILD_DIR, port: 0 });
  const browser = await launchChromium();
  return {
    server,
    browser,
    async close() {
      await browser.close();
      await server.close();
    },
  };
}

export interface OpenedApp {
  context: BrowserContext;
  page: Page;
  /** Every request the page (and its frames and workers) made, in order. */
  requests: Request[];
  errors: string[];
  /** The Content-Security-Policy header the page was served with. */
  csp: string | undefined;
  /** CSP violations reported in the page (securitypolicyviolation events). */
  violations(): Promise<string[]>;
}

/** The two screens every view is checked on. */
export const SCREENS = {
  desktop: { width: 1280, height: 800 },
  phone: { width: 390, height: 844 },
} as const;

/** A browser profile at one of SCREENS in a colour scheme (what `prefers-color-scheme` says). */
export function newContext(
  env: AppEnv,
  screen: keyof typeof SCREENS = 'desktop',
  colorScheme: 'light' | 'dark' = 'light',
): Promise<BrowserContext> {
  return env.browser.newContext({
    viewport: SCREENS[screen],
    colorScheme,
    ...(screen === 'phone' ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}),
  });
}

/**
 * Let the page connect to `origins` without the reload a new endpoint needs (PUT /app/connect as the app's own page
 * would): for tests and benchmarks that measure something else.
 */
export async function allowConnect(env: AppEnv, origins: string[]): Promise<void> {
  const r = await fetch(`${env.server.url}app/connect`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', origin: env.server.url.replace(/\/$/, '') },
    body: JSON.stringify({ origins }),
  });
  if (!r.ok) throw new Error(`PUT /app/connect: ${r.status} ${await r.text()}`);
}

/** Every request a scripted model refused because its history had a tool call without its result (none expected). */
export function rejectedHistories(models: { requests: { rejected?: string }[] }[]): string[] {
  return models.flatMap((m) => m.requests.flatMap((r) => (r.rejected ? [r.rejected] : [])));
}

/** Wait until the app is interactive again (after a reload it may do by itself). */
export async function ready(page: Page, timeout = 30_000): Promise<void> {
  const until = Date.now() + timeout;
  for (;;) {
    try {
      await page.waitForFunction(() => window.tyAppReady === true, undefined, {
        timeout: Math.max(1000, until - Date.now()),
      });
      return;
    } catch (e) {
      if (Date.now() > until || !/context was destroyed|navigat/i.test(String(e))) throw e;
    }
  }
}

/** A fresh browser profile (own IndexedDB) on the app, waiting until it is interactive. */
export async function openApp(env: AppEnv, query = '', context?: BrowserContext): Promise<OpenedApp> {
  const ctx = context ?? (await env.browser.newContext({ viewport: { width: 1280, height: 860 } }));
  const page = await ctx.newPage();
  const requests: Request[] = [];
  const errors: string[] = [];
  ctx.on('request', (r) => requests.push(r));
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('dialog', (d) => {
    errors.push(`dialog: ${d.type()} ${d.message()}`);
    void d.dismiss();
  });
  await page.addInitScript(() => {
    const w = window as unknown as { tyViolations: string[] };
    // kept across the reloads the app makes (a new endpoint widens its CSP), so nothing is lost in between; an
    // opaque-origin frame has no sessionStorage
    const store = (() => {
      try {
        return window.sessionStorage;
      } catch {
        return undefined;
      }
    })();
    w.tyViolations = JSON.parse(store?.getItem('tyViolations') ?? '[]') as string[];
    document.addEventListener('securitypolicyviolation', (e) => {
      w.tyViolations.push(`${e.effectiveDirective} ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}`);
      store?.setItem('tyViolations', JSON.stringify(w.tyViolations));
    });
  });
  const res = await page.goto(`${env.server.url}${query}`);
  await page.waitForFunction(() => window.tyAppReady === true, undefined, { timeout: 30_000 });
  const csp = (await res?.allHeaders())?.['content-security-policy'];
  return {
    context: ctx,
    page,
    requests,
    errors,
    csp,
    violations: () => page.evaluate(() => (window as unknown as { tyViolations: string[] }).tyViolations),
  };
}

/** Fill the settings panel by accessible name, then close it. */
export async function configure(
  page: Page,
  s: { api: 'openai' | 'anthropic'; endpoint: string; model: string; key?: string },
): Promise<void> {
  await page.getByRole('button', { name: 'Settings' }).click();
  await page.getByRole('combobox', { name: 'API' }).selectOption(s.api);
  await page.getByRole('textbox', { name: 'Endpoint URL' }).fill(s.endpoint);
  await page.getByRole('textbox', { name: 'Model' }).fill(s.model);
  if (s.key !== undefined) await page.getByRole('textbox', { name: 'API key' }).fill(s.key);
  await page.getByRole('button', { name: 'Settings' }).click();
}

/** Type a message and press "Send". */
export async function send(page: Page, text: string): Promise<void> {
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
}

/** Wait until the turn is over ("Stop" disabled again, "Send" enabled). */
export async function idle(page: Page, timeout = 60_000): Promise<void> {
  await page.getByRole('button', { name: 'Stop' }).and(page.locator(':disabled')).waitFor({ timeout });
  await page.getByRole('button', { name: 'Send' }).and(page.locator(':enabled')).waitFor({ timeout });
}

/** Add a tool by pasting its manifest into the tools panel. */
export async function addTool(page: Page, manifest: unknown): Promise<void> {
  await page.getByRole('button', { name: 'Tools' }).click();
  await page.getByRole('textbox', { name: 'Tool manifest (JSON)' }).fill(JSON.stringify(manifest));
  await page.getByRole('button', { name: 'Add tool' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: /^Added / })
    .waitFor();
  await page.getByRole('button', { name: 'Tools' }).click();
}

/** Manifests the tests add. */
export const TOOLS = {
  sleep: {
    name: 'sleep',
    description: 'Waits ms milliseconds, then returns them.',
    parameters: {
      type: 'object',
      properties: { ms: { type: 'integer', minimum: 0, maximum: 600000 } },
      required: ['ms'],
      additionalProperties: false,
    },
    execution: {
      kind: 'sandboxed-code',
      runtime: 'javascript',
      source:
        'export default async ({ ms }) => { await new Promise((r) => setTimeout(r, ms)); return { slept: ms }; };',
    },
  },
  weather: {
    name: 'weather',
    description: 'Current weather of a city from data.example.org.',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 100 } },
      required: ['city'],
      additionalProperties: false,
    },
    capabilities: { fetch: [{ origin: 'https://data.example.org', access: 'read' }] },
    execution: {
      kind: 'sandboxed-code',
      runtime: 'javascript',
      source:
        'export default async ({ city }) => { const r = await fetch("https://data.example.org/weather?city=" + encodeURIComponent(city)); return { status: r.status, report: await r.json() }; };',
    },
  },
  pySum: {
    name: 'py-sum',
    description: 'Sums a list of numbers in Python.',
    parameters: {
      type: 'object',
      properties: { numbers: { type: 'array', items: { type: 'number' }, maxItems: 1000 } },
      required: ['numbers'],
      additionalProperties: false,
    },
    execution: {
      kind: 'sandboxed-code',
      runtime: 'python',
      source:
        'import sys\nasync def main(args, ctx):\n    return {"sum": sum(args["numbers"]), "python": sys.version.split()[0]}\n',
    },
  },
  shout: {
    name: 'shout',
    description: 'Upper-cases a text.',
    parameters: {
      type: 'object',
      properties: { text: { type: 'string', maxLength: 1000 } },
      required: ['text'],
      additionalProperties: false,
    },
    execution: {
      kind: 'sandboxed-code',
      runtime: 'javascript',
      source: 'export default async ({ text }) => ({ shouted: text.toUpperCase() + "!" });',
    },
  },
} as const;

/** The last tool message (OpenAI) in a recorded request body. */
export function lastToolMessages(body: {
  messages: { role: string; content: unknown; tool_call_id?: string }[];
}): { role: string; content: unknown; tool_call_id?: string }[] {
  const out = [];
  for (let i = body.messages.length - 1; i >= 0 && body.messages[i]!.role === 'tool'; i--)
    out.unshift(body.messages[i]!);
  return out;
}

/**
 * One IndexedDB record as the page holds it: bytes (or a `{ bytes }` record) decoded as UTF-8, anything else as JSON.
 */
export interface StoredRecord {
  db: string;
  store: string;
  key: string;
  text: string;
}

/** Every record of every object store of the databases `names`, read inside the page. */
export async function dumpIndexedDb(page: Page, names: string[]): Promise<StoredRecord[]> {
  return page.evaluate(async (dbNames) => {
    const dump = (name: string) =>
      new Promise<StoredRecord[]>((resolve, reject) => {
        const open = indexedDB.open(name);
        open.onerror = () => reject(open.error);
        open.onsuccess = () => {
          const db = open.result;
          const out: StoredRecord[] = [];
          const tx = db.transaction([...db.objectStoreNames], 'readonly');
          for (const store of db.objectStoreNames) {
            const req = tx.objectStore(store).openCursor();
            req.onsuccess = () => {
              const c = req.result;
              if (!c) return;
              const v = c.value;
              const bytes =
                v instanceof Uint8Array ? v : v?.bytes instanceof Uint8Array ? (v.bytes as Uint8Array) : undefined;
              out.push({
                db: name,
                store,
                key: String(c.key),
                text: bytes ? new TextDecoder().decode(bytes) : JSON.stringify(v),
              });
              c.continue();
            };
          }
          tx.oncomplete = () => resolve(out);
          tx.onerror = () => reject(tx.error);
        };
      });
    const all: StoredRecord[] = [];
    for (const n of dbNames) all.push(...(await dump(n)));
    return all;
  }, names);
}
