// WebMCP in Chromium (`--enable-features=WebMCP`), driven by Playwright's `page.webmcp` as a browser agent would:
// host.webmcp.expose() lists the page's tools, calls run pinned, gated under webmcp:<origin>, asked, sandboxed and
// audited, the registrations follow the registry; without the flag nothing is registered and nothing fails; test code.
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { CHROMIUM_ARGS, CHROMIUM_PATH, launchChromium } from '../../node/diagnostics/browser-driver.mjs';
import { openApp, useAppBrowser } from './app-page.js';

const haveChromium = existsSync(CHROMIUM_PATH);

async function launchWithWebMcp(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [...CHROMIUM_ARGS, '--enable-features=WebMCP'],
    headless: true,
  });
}

const tool = (name: string, body: string, extra: Record<string, unknown> = {}) => ({
  name,
  description: `${name}: ${body.slice(0, 40)}`,
  parameters: {
    type: 'object',
    properties: { who: { type: 'string' } },
    required: ['who'],
    additionalProperties: false,
  },
  execution: { kind: 'sandboxed-code', runtime: 'javascript', source: `export default async ({ who }) => ${body};` },
  ...extra,
});
const GREET = tool('greet', '({ greeting: "Hello, " + who })', { annotations: { readOnlyHint: true } });
const GREET2 = tool('greet', '({ greeting: "Hi again, " + who })', { annotations: { readOnlyHint: true } });
const PAID = tool('paid', '"charged " + who');
const SECRET = tool('secret', '"never"');

type Ty = typeof import('../../browser/index.js');
declare global {
  interface Window {
    host: Awaited<ReturnType<Ty['createBrowserHost']>>;
    asked: { title: string; tool: string; text: string[] }[];
    answerWith: 'once' | 'deny' | undefined;
  }
}

describe.skipIf(!haveChromium)('WebMCP (host.webmcp) in Chromium with --enable-features=WebMCP', () => {
  const browser = useAppBrowser(launchWithWebMcp);

  it('lists the tools, calls one, asks for one, refuses one, follows activation and removal, audits as webmcp:<origin>', async () => {
    const app = await openApp({ browser: browser() });
    try {
      const { page } = app;
      const status = await page.evaluate(
        async ([g, p, s]) => {
          const ty = (window as unknown as { ty: Ty }).ty;
          window.asked = [];
          window.answerWith = undefined;
          window.host = await ty.createBrowserHost({
            dbName: `webmcp-${Math.random().toString(36).slice(2)}`,
            dialog: false,
            rules: [{ scope: 'session', ask: ['tool(paid)'], deny: ['tool(secret)'] }],
          });
          // the page's own channel: the test answers when it decides to
          window.host.approvals.subscribe((q) => {
            window.asked.push({ title: q.title, tool: q.tool, text: q.text });
            const wait = setInterval(() => {
              if (window.answerWith) {
                clearInterval(wait);
                q.answer(window.answerWith);
              }
            }, 20);
          });
          for (const m of [g, p, s]) await window.host.registry.install(m);
          return window.host.webmcp.expose();
        },
        [GREET, PAID, SECRET],
      );
      expect(status.available).toBe(true);
      expect(status.tools.map((t) => t.name)).toEqual(['greet', 'paid', 'secret']);
      const listed = await page.webmcp.tools();
      expect(listed.map((t) => t.name).sort()).toEqual(['greet', 'paid', 'secret']);
      const greet = listed.find((t) => t.name === 'greet')!;
      expect(greet).toMatchObject({ description: GREET.description, inputSchema: GREET.parameters });
      expect(greet.annotations?.readOnly).toBe(true);
      expect(listed.find((t) => t.name === 'paid')!.annotations?.readOnly).toBeFalsy();

      // a call: the result in MCP's content shape
      expect(await page.webmcp.callTool('greet', { who: 'Ada' })).toEqual({
        content: [{ type: 'text', text: '{"greeting":"Hello, Ada"}' }],
        structuredContent: { greeting: 'Hello, Ada' },
      });
      // arguments are validated against the revision's schema before anything runs
      const bad = (await page.webmcp.callTool('greet', { who: 'Ada', extra: 1 })) as {
        isError: boolean;
        content: { text: string }[];
      };
      expect(bad.isError).toBe(true);
      expect(bad.content[0]!.text).toMatch(/^E_INVALID_ARGS: /);

      // a call that needs approval asks the person on the page's channel, and runs once answered
      const paying = page.webmcp.callTool('paid', { who: 'Bob' });
      await expect.poll(() => page.evaluate(() => window.asked.length), { timeout: 20_000 }).toBe(1);
      const asked = await page.evaluate(() => window.asked[0]!);
      expect(asked.tool).toBe('paid');
      expect(asked.title).toBe('Allow a browser agent to run the tool “paid”?');
      expect(asked.text[0]).toBe(`Asked by: a browser agent through this page (webmcp:${app.origin})`);
      await page.evaluate(() => (window.answerWith = 'once'));
      expect(await paying).toEqual({ content: [{ type: 'text', text: '"charged Bob"' }] });

      // a call a rule refuses: isError, E_CAPABILITY_DENIED
      const denied = (await page.webmcp.callTool('secret', { who: 'Eve' })) as {
        isError: boolean;
        content: { text: string }[];
      };
      expect(denied.isError).toBe(true);
      expect(denied.content[0]!.text).toMatch(/^E_CAPABILITY_DENIED: /);

      // activating a new revision replaces the registration
      await page.evaluate(async (m) => {
        const r = await window.host.registry.install(m);
        await window.host.registry.activate('greet', r.revision, { approveReplacement: true });
      }, GREET2);
      await expect
        .poll(async () => (await page.webmcp.tools()).find((t) => t.name === 'greet')?.description, { timeout: 10_000 })
        .toBe(GREET2.description);
      expect(await page.webmcp.callTool('greet', { who: 'Ada' })).toMatchObject({
        structuredContent: { greeting: 'Hi again, Ada' },
      });
      // removal unregisters
      await page.evaluate(() => window.host.registry.remove('paid', { approveRemoval: true }));
      await expect
        .poll(async () => (await page.webmcp.tools()).map((t) => t.name).sort(), { timeout: 10_000 })
        .toEqual(['greet', 'secret']);

      // the audit trail names the agent's principal
      const audit = await page.evaluate(async () =>
        (await window.host.audit())
          .filter((a) => a.kind === 'tool')
          .map((a) => ({ tool: a.tool, principal: a.principal })),
      );
      expect(audit.length).toBeGreaterThan(3);
      for (const a of audit) expect(a.principal).toBe(`webmcp:${app.origin}`);
      expect(audit.map((a) => a.tool)).toEqual(expect.arrayContaining(['greet', 'paid', 'secret']));

      // stop unregisters everything
      await page.evaluate(() => window.host.webmcp.stop());
      expect(await page.webmcp.tools()).toEqual([]);
      // expose({ tools }) offers only the names given
      const only = await page.evaluate(() => window.host.webmcp.expose({ tools: ['secret'] }));
      expect(only.tools.map((t) => t.name)).toEqual(['secret']);
      expect((await page.webmcp.tools()).map((t) => t.name)).toEqual(['secret']);
      await page.evaluate(() => window.host.webmcp.stop());
      await page.evaluate(() => window.host.close());
    } finally {
      await app.close();
    }
  }, 180_000);

  it('an agent that offers requestUserInteraction is handed the page while the person answers', async () => {
    const app = await openApp({ browser: browser() });
    try {
      const out = await app.page.evaluate(async (p) => {
        const ty = (window as unknown as { ty: Ty }).ty;
        const host = await ty.createBrowserHost({
          dbName: `webmcp-ui-${Math.random().toString(36).slice(2)}`,
          dialog: false,
          rules: [{ scope: 'session', ask: ['tool(paid)'] }],
        });
        const events: string[] = [];
        host.approvals.subscribe((q) => {
          events.push(`asked ${q.tool}`);
          setTimeout(() => q.answer('once'), 50);
        });
        await host.registry.install(p);
        // an agent's side of WebMCP: a Model Context whose client offers requestUserInteraction
        const tools: Record<string, { execute: (i: unknown, c: unknown) => Promise<unknown> }> = {};
        await host.webmcp.expose({
          modelContext: { registerTool: (t) => void (tools[t.name] = t as never) },
        });
        const client = {
          signal: new AbortController().signal,
          requestUserInteraction: async (cb: () => Promise<unknown>) => {
            events.push('agent paused');
            await cb();
            events.push('agent resumed');
          },
        };
        const r = await tools.paid!.execute({ who: 'Bob' }, client);
        await host.close();
        return { r, events };
      }, PAID);
      expect(out.r).toEqual({ content: [{ type: 'text', text: '"charged Bob"' }] });
      // the agent is told as soon as the question is asked, and resumes once the person answered on the page
      expect(out.events).toEqual(['agent paused', 'asked paid', 'agent resumed']);
    } finally {
      await app.close();
    }
  }, 120_000);

  it('without the flag: registers nothing and fails nothing', async () => {
    const plain = await launchChromium();
    const app = await openApp({ browser: plain });
    try {
      const out = await app.page.evaluate(async (g) => {
        const ty = (window as unknown as { ty: Ty }).ty;
        const host = await ty.createBrowserHost({
          dbName: `webmcp-off-${Math.random().toString(36).slice(2)}`,
          dialog: false,
        });
        await host.registry.install(g);
        const status = await host.webmcp.expose();
        const r = await host.invoke('greet', { who: 'Ada' });
        host.webmcp.stop();
        await host.close();
        return { api: typeof (document as unknown as { modelContext?: unknown }).modelContext, status, ok: r.ok };
      }, GREET);
      expect(out).toEqual({ api: 'undefined', status: { available: false, tools: [] }, ok: true });
      expect(app.console.filter((l) => l.startsWith('pageerror'))).toEqual([]);
    } finally {
      await app.close();
      await plain.close();
    }
  }, 120_000);
});
