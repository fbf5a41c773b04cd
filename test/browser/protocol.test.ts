// tysandbox/1 over postMessage in Chromium: an embedding page, a foreign-origin page, a sibling frame, a page-executed
// tool; the real chat app embedded; the same revision id on every transport and host; test code, trusted side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { CHROMIUM_PATH, REPO_ROOT, launchChromium, serveDir } from '../../node/diagnostics/browser-driver.mjs';
import { pyodideAssetsPlugin } from '../../browser/build/config.mjs';
import { quickJsPlugin } from '../../browser/build/quickjs.mjs';
import { startAppServer, type AppServer } from '../../node/http/app-server.js';
import { runProcess } from '../e2e/helpers.js';
import type {} from './protocol/api.js';
import { BIN, cleanEnv, doubler, httpClient, startHttp, stdioClient, tempHome } from '../protocol/helpers.js';

const haveChromium = existsSync(CHROMIUM_PATH);
const PAGES = 'test/browser/protocol';
let out: string;
let browser: Browser;
let servers: { origin: string; close(): Promise<void> }[] = [];
let app: AppServer | undefined;
let A: string; // the embedding page's origin (allowed)
let B: string; // the framed test server's origin
let C: string; // a foreign origin (never allowed)

const MANIFEST = doubler('double', 2);
/** A tool the embedding page executes itself; its answer is checked against outputSchema. */
const pageTool = (origin: string) => ({
  name: 'page_double',
  description: 'doubles x on the embedding page',
  parameters: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'], additionalProperties: false },
  outputSchema: {
    type: 'object',
    properties: { doubled: { type: 'number' } },
    required: ['doubled'],
    additionalProperties: false,
  },
  execution: { kind: 'external-service', transport: 'parent', serviceId: origin },
});

async function embedder(origin: string, ctx?: BrowserContext): Promise<Page> {
  const page = await (ctx ?? browser).newPage();
  await page.goto(`${origin}/${PAGES}/embedder.html`);
  await page.waitForFunction(() => typeof window.ty === 'object');
  return page;
}

beforeAll(async () => {
  if (!haveChromium) return;
  if (!existsSync(join(REPO_ROOT, 'dist', 'browser', 'browser', 'app', 'index.html')))
    throw new Error('dist/browser is missing the app: run `npm run build` first');
  out = await mkdtemp(join(tmpdir(), 'ty-proto-pages-'));
  const { build } = await import('vite');
  await build({
    root: REPO_ROOT,
    configFile: false,
    logLevel: 'warn',
    build: {
      outDir: out,
      emptyOutDir: true,
      target: 'es2022',
      minify: false,
      modulePreload: false,
      rolldownOptions: { input: { embedder: `${PAGES}/embedder.html`, frame: `${PAGES}/frame.html` } },
    },
    // also emits the sandbox frame (sandbox-frame.html/.js) the host loads; quickJsPlugin: the host's quickjs chunk
    plugins: [pyodideAssetsPlugin(), quickJsPlugin()],
  });
  servers = await Promise.all([serveDir(out), serveDir(out), serveDir(out)]);
  [A, B, C] = servers.map((s) => s.origin) as [string, string, string];
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await Promise.all(servers.map((s) => s.close()));
  if (out) await rm(out, { recursive: true, force: true });
});

describe.skipIf(!haveChromium)('tysandbox/1 over postMessage (browser/registration/window.ts)', () => {
  let browserRevision = '';

  it('an allowed embedding page registers, lists and runs tools as origin:<origin> (notifications carry the request id); moving a binding with nobody to ask is E_APPROVAL_REQUIRED', async () => {
    const page = await embedder(A);
    await page.evaluate(
      (src) => window.ty.frame(src),
      `${B}/${PAGES}/frame.html?db=allowed&allow=${encodeURIComponent(A)}`,
    );
    expect(await page.evaluate((o) => window.ty.connect(o), B)).toEqual({ ok: true, principal: `origin:${A}` });
    const added = (await page.evaluate((m) => window.ty.call('tool/add', { manifest: m }), MANIFEST)) as {
      result: { revision: string; active: boolean };
    };
    expect(added.result).toMatchObject({ name: 'double', active: true, created: true });
    browserRevision = added.result.revision;
    const ran = await page.evaluate(() => window.ty.run('double', { x: 21 }));
    expect(ran.result).toEqual({ revision: browserRevision, result: 42 });
    const runId = (ran.progress[0] as { id: unknown }).id;
    expect(ran.progress).toEqual([
      { id: runId, stage: 'queued', revision: browserRevision },
      { id: runId, stage: 'started', revision: browserRevision },
      { id: runId, stage: 'done', revision: browserRevision, outcome: 'ok' },
    ]);
    expect(ran.logs).toEqual([{ id: runId, level: 'info', text: 'x is 21' }]);
    const list = (await page.evaluate(() => window.ty.call('tool/list', {}))) as {
      result: { tools: { name: string }[] };
    };
    expect(list.result.tools.map((t) => t.name)).toContain('double');
    const second = (await page.evaluate((m) => window.ty.call('tool/add', { manifest: m }), doubler('double', 3))) as {
      result: { revision: string; active: boolean };
    };
    expect(second.result.active).toBe(false);
    const moved = await page.evaluate(
      (r) => window.ty.call('tool/activate', { name: 'double', revision: r }),
      second.result.revision,
    );
    expect(moved).toMatchObject({ error: { code: 'E_APPROVAL_REQUIRED' } });
    expect(await page.evaluate(() => window.ty.call('tool/frobnicate', {}))).toMatchObject({
      error: { rpcCode: -32601 },
    });
    await page.close();
  });

  it('a tool the page executes: calls pass the gate in the framed host, reach the page as tool/call, and its answer is checked against outputSchema', async () => {
    const page = await embedder(A);
    await page.evaluate(
      (src) => window.ty.frame(src),
      `${B}/${PAGES}/frame.html?db=parent&allow=${encodeURIComponent(A)}`,
    );
    expect(await page.evaluate((o) => window.ty.connect(o), B)).toMatchObject({ ok: true });
    expect(await page.evaluate((m) => window.ty.call('tool/add', { manifest: m }), pageTool(C))).toMatchObject({
      error: { code: 'E_INVALID_MANIFEST' },
    });
    expect(await page.evaluate((m) => window.ty.call('tool/add', { manifest: m }), pageTool(A))).toMatchObject({
      result: { name: 'page_double', active: true },
    });
    expect(
      await page.evaluate(() => window.ty.call('tool/run', { ref: 'page_double', arguments: { x: 4 } })),
    ).toMatchObject({ result: { result: { doubled: 8 } } });
    expect(await page.evaluate(() => window.ty.calls)).toEqual([{ name: 'page_double', arguments: { x: 4 } }]);
    await page.evaluate(() => (window.ty.answer = () => ({ wrong: true })));
    expect(
      await page.evaluate(() => window.ty.call('tool/run', { ref: 'page_double', arguments: { x: 1 } })),
    ).toMatchObject({ error: { code: 'E_TOOL_FAILED' } });
    await page.evaluate(() => (window.ty.answer = () => ({ doubled: 'eight' })));
    expect(
      await page.evaluate(() => window.ty.call('tool/run', { ref: 'page_double', arguments: { x: 1 } })),
    ).toMatchObject({ error: { code: 'E_TOOL_FAILED', message: expect.stringContaining('outputSchema') } });
    await page.close();
  });

  it('a page whose origin is not allowed gets no answer at all, nor does a sibling frame of an allowed origin', async () => {
    const foreign = await embedder(C);
    await foreign.evaluate(
      (src) => window.ty.frame(src),
      `${B}/${PAGES}/frame.html?db=foreign&allow=${encodeURIComponent(A)}`,
    );
    await foreign.waitForFunction(
      () => (document.querySelector('iframe') as HTMLIFrameElement | null)?.contentWindow !== null,
    );
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: 'tysandbox/1', client: { name: 'x', version: '1' } },
    };
    expect(await foreign.evaluate(([m, o]) => window.ty.raw(m, o as string, 2000), [init, B] as const)).toEqual([]);
    expect(
      await foreign.evaluate(([m, o]) => window.ty.raw(m, o as string, 500), [
        { jsonrpc: '2.0', id: 2, method: 'nope' },
        B,
      ] as const),
    ).toEqual([]);
    expect(await foreign.evaluate((o) => window.ty.connect(o), B)).toMatchObject({ ok: false, code: 'E_PROTOCOL' });
    await foreign.close();

    // the allowed origin, but from a sibling frame rather than the parent window: ignored
    const page = await embedder(A);
    await page.evaluate(
      (src) => window.ty.frame(src),
      `${B}/${PAGES}/frame.html?db=sibling&allow=${encodeURIComponent(A)}`,
    );
    const got = await page.evaluate(
      async ([m, o]) => {
        const seen: unknown[] = [];
        window.addEventListener('message', (ev) => seen.push(ev.data));
        const sib = document.createElement('iframe');
        sib.srcdoc = '<p>sibling</p>';
        await new Promise((r) => ((sib.onload = r), document.body.append(sib)));
        // a same-origin sibling posts as the allowed origin, but it is not the parent
        (sib.contentWindow as unknown as { eval(code: string): void }).eval(
          `parent.frames[0].postMessage(${JSON.stringify(m)}, ${JSON.stringify(o)})`,
        );
        await new Promise((r) => setTimeout(r, 2000));
        return seen;
      },
      [init, B] as const,
    );
    expect(got).toEqual([]);
    await page.close();
  });

  it('the same manifest gets the same revision id through tycli serve, serve --http, postMessage and tycli tool add', async () => {
    expect(browserRevision).toMatch(/^bagaaiera/);
    const home = await tempHome('cross');
    const stdio = await stdioClient(home);
    const viaStdio = (await stdio.tool.add(MANIFEST)).revision;
    await stdio.close();
    const h = await startHttp(await tempHome('cross-http'));
    const http = await httpClient(h);
    const viaHttp = (await http.tool.add(MANIFEST)).revision;
    await http.close();
    await h.stop();
    const file = join(home, 'double.json');
    await writeFile(file, JSON.stringify(MANIFEST));
    const cliHome = await tempHome('cross-cli');
    const added = await runProcess(
      process.execPath,
      [BIN, '--home', cliHome, 'tool', 'add', file],
      cleanEnv(cliHome),
      cliHome,
    );
    expect(added.code).toBe(0);
    expect([viaStdio, viaHttp, added.stdout.trim()]).toEqual([browserRevision, browserRevision, browserRevision]);
  });
});

describe.skipIf(!haveChromium)('the real chat app embedded (browser/app, "Allowed embedding origins")', () => {
  it('answers nobody until the person allows an origin in Settings; then that page registers and ' +
    'runs tools, a person approves moving a binding in the app, and a foreign page still gets nothing', async () => {
    // The built app behind the real `tycli app` server (strict CSP); both pages may frame it (frame-ancestors),
    // so only the app's postMessage allowlist tells them apart.
    app = await startAppServer({ dir: join(REPO_ROOT, 'dist', 'browser'), port: 0, frameAncestors: [A, C] });
    const appOrigin = new URL(app.url).origin;
    const ctx = await browser.newContext(); // one profile: the setting the person saves is what the framed app reads
    const before = await embedder(A, ctx);
    await before.evaluate((src) => window.ty.frame(src), app.url);
    expect(await before.evaluate((o) => window.ty.connect(o), appOrigin)).toMatchObject({
      ok: false,
      code: 'E_PROTOCOL',
    }); // empty by default
    await before.close();

    const settings = await ctx.newPage();
    await settings.goto(app.url);
    await settings.waitForFunction(() => window.tyAppReady === true, undefined, { timeout: 60_000 });
    await settings.getByRole('button', { name: 'Settings' }).click();
    await settings.getByRole('textbox', { name: 'Allowed embedding origins' }).fill(A);
    // kept in IndexedDB: another page of the profile, opened while this one stays open (a reload right after typing
    // could abort the write in flight, which no person does), shows it
    const again = await ctx.newPage();
    await expect
      .poll(
        async () => {
          await again.goto(app!.url);
          await again.waitForFunction(() => window.tyAppReady === true, undefined, { timeout: 60_000 });
          await again.getByRole('button', { name: 'Settings' }).click();
          return again.getByRole('textbox', { name: 'Allowed embedding origins' }).inputValue();
        },
        { timeout: 30_000 },
      )
      .toBe(A);
    await again.close();
    await settings.close();

    const page = await embedder(A, ctx);
    await page.evaluate((src) => window.ty.frame(src), app.url);
    expect(await page.evaluate((o) => window.ty.connect(o, 'page'), appOrigin)).toEqual({
      ok: true,
      principal: `origin:${A}`,
    });
    const added = (await page.evaluate((m) => window.ty.call('tool/add', { manifest: m }), MANIFEST)) as {
      result: { revision: string };
    };
    expect(added.result.revision).toMatch(/^bagaaiera/);
    expect(await page.evaluate(() => window.ty.call('tool/run', { ref: 'double', arguments: { x: 5 } }))).toMatchObject(
      { result: { result: 10 } },
    );
    expect(await page.evaluate((m) => window.ty.call('tool/add', { manifest: m }), pageTool(A))).toMatchObject({
      result: { name: 'page_double' },
    });
    expect(
      await page.evaluate(() => window.ty.call('tool/run', { ref: 'page_double', arguments: { x: 6 } })),
    ).toMatchObject({ result: { result: { doubled: 12 } } });
    // moving the active binding asks the person in the app; "Allow once" moves it
    const next = (await page.evaluate((m) => window.ty.call('tool/add', { manifest: m }), doubler('double', 3))) as {
      result: { revision: string; active: boolean };
    };
    expect(next.result.active).toBe(false);
    const moving = page.evaluate(
      (r) => window.ty.call('tool/activate', { name: 'double', revision: r }),
      next.result.revision,
    );
    const card = page.frameLocator('iframe[title="embedded app"]').getByRole('group', { name: 'Approval needed' });
    await expect
      .poll(() => card.getByRole('heading').textContent(), { timeout: 20_000 })
      .toBe(`Allow the page ${A} to switch “double” to another version?`);
    await page.screenshot({ path: process.env.TY_SHOT ?? join(out, 'app-activation.png') });
    await card.getByRole('button', { name: 'Allow once' }).click();
    expect(await moving).toEqual({
      result: { name: 'double', revision: next.result.revision, previous: added.result.revision },
    });
    expect(await page.evaluate(() => window.ty.call('tool/run', { ref: 'double', arguments: { x: 5 } }))).toMatchObject(
      { result: { result: 15 } },
    );
    await page.close();

    const foreign = await embedder(C, ctx);
    await foreign.evaluate((src) => window.ty.frame(src), app.url);
    expect(await foreign.evaluate((o) => window.ty.connect(o), appOrigin)).toMatchObject({
      ok: false,
      code: 'E_PROTOCOL',
    });
    await foreign.close();
    await ctx.close();
  }, 240_000);
});
