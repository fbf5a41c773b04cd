// The app shell in Chromium at 1280x800 and 390x844, light and dark: pinned header and composer, only the conversation
// scrolls ("Jump to latest"), the drawer and full-screen sheets on a phone, the wrapping approval card, the remembered
// theme, axe-core with zero violations on every main view, and the screenshots in docs/; test code.
import { join } from 'node:path';
import { AxeBuilder } from '@axe-core/playwright';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../node/diagnostics/browser-driver.mjs';
import { startScriptedModel, type ScriptedModel } from './model-servers.mjs';
import {
  addTool,
  configure,
  haveChromium,
  idle,
  newContext,
  openApp,
  ready,
  rejectedHistories,
  send,
  startEnv,
  TOOLS,
  type AppEnv,
} from './harness.js';

let env: AppEnv;
let m: ScriptedModel;

const ANSWER = [
  ...Array.from({ length: 12 }, (_, i) => `Paragraph ${i + 1}: more detail about the data so the answer is long.`),
  '## A plan in three steps',
  'Here is what the **csv-stats** tool found, with a [source](https://example.org/data):',
  '| column | mean | max |\n|---|--:|--:|\n| price | 12.5 | 99 |\n| qty | 3.2 | 40 |',
  '1. Read the file\n2. Group by `region`\n3. Sum the totals',
  '- [x] parsed\n- [ ] charted',
  '```python\nimport csv\n\ndef total(rows):\n    return sum(float(r["price"]) for r in rows)\n```',
  '> Numbers are rounded to one decimal.',
].join('\n\n');

beforeAll(async () => {
  env = await startEnv();
  m = await startScriptedModel({
    kind: 'openai',
    script: (body) => {
      const last = body.messages.at(-1);
      if (last.role === 'user' && String(last.content).startsWith('weather'))
        return { toolCalls: [{ name: 'weather', arguments: { city: 'Oslo' } }] };
      if (last.role === 'user' && String(last.content).startsWith('slow'))
        return { text: ANSWER, pace: { tokens: 3, everyMs: 40 } };
      return { text: ANSWER };
    },
  });
}, 60_000);
afterAll(async () => {
  await m?.close();
  await env?.close();
});

/** axe-core over the whole page: zero violations (every rule axe runs by default, WCAG 2.x A and AA included). */
async function axeClean(page: Page, view: string): Promise<void> {
  const r = await new AxeBuilder({ page }).analyze();
  const found = r.violations.map(
    (v) => `${view}: ${v.id} (${v.impact}) ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
  );
  expect(found).toEqual([]);
}

/** The page itself never scrolls; the conversation does. */
async function layout(page: Page) {
  return page.evaluate(() => {
    const s = document.querySelector('.conversation-scroll') as HTMLElement;
    const header = document.querySelector('header.top')!.getBoundingClientRect();
    const composer = document.getElementById('message')!.getBoundingClientRect();
    return {
      docScroll: document.scrollingElement!.scrollHeight - window.innerHeight,
      docWide: document.scrollingElement!.scrollWidth - window.innerWidth,
      convScrolls: s.scrollHeight > s.clientHeight,
      headerTop: header.top,
      composerBottom: composer.bottom,
      height: window.innerHeight,
      atBottom: s.scrollHeight - s.scrollTop - s.clientHeight < 50,
    };
  });
}

const shots: Record<string, string> = {
  'desktop-light': 'app-desktop-light.png',
  'desktop-dark': 'app-desktop-dark.png',
  'phone-light': 'app-phone.png',
  'phone-dark': 'app-phone-dark.png',
};

describe.skipIf(!haveChromium)('the app shell', () => {
  for (const screen of ['desktop', 'phone'] as const)
    for (const scheme of ['light', 'dark'] as const)
      it(`${screen}, ${scheme}: pinned header and composer, one scrolling conversation, panels, approvals, axe-clean`, async () => {
        const context = await newContext(env, screen, scheme);
        const { page, violations } = await openApp(env, '', context);
        await page.route('https://data.example.org/**', (r) =>
          r.fulfill({
            contentType: 'application/json',
            headers: { 'access-control-allow-origin': '*' },
            body: '{"temp":21}',
          }),
        );
        // the theme follows prefers-color-scheme
        const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
        const dark = (c: string) => {
          const [r, g, b] = c.match(/\d+/g)!.map(Number);
          return r! + g! + b! < 200;
        };
        expect(dark(await bg())).toBe(scheme === 'dark');
        await axeClean(page, 'empty');
        await addTool(page, TOOLS.weather);
        await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
        await send(page, 'first');
        await page.getByRole('heading', { name: 'A plan in three steps' }).first().waitFor({ timeout: 60_000 });
        await idle(page);
        await send(page, 'second');
        await page.getByRole('heading', { name: 'A plan in three steps' }).nth(1).waitFor({ timeout: 60_000 });
        await idle(page);
        await page.locator('code.hljs').first().waitFor({ timeout: 20_000 });
        const l = await layout(page);
        expect(l.docScroll).toBeLessThanOrEqual(0);
        expect(l.docWide).toBeLessThanOrEqual(0);
        expect(l.convScrolls).toBe(true);
        expect(l.headerTop).toBeGreaterThanOrEqual(0);
        expect(l.composerBottom).toBeLessThanOrEqual(l.height);
        expect(l.atBottom).toBe(true); // it followed the new text
        await axeClean(page, 'conversation with markdown and code');
        // scrolled up while an answer streams: it stays put and offers "Jump to latest"
        await page.locator('.conversation-scroll').evaluate((el) => el.scrollTo({ top: 0 }));
        await send(page, 'slow');
        const jump = page.getByRole('button', { name: 'Jump to latest' });
        await jump.waitFor({ timeout: 30_000 });
        expect((await layout(page)).atBottom).toBe(false);
        await jump.click();
        await idle(page);
        await expect.poll(async () => (await layout(page)).atBottom).toBe(true);
        // an approval card in a call card: wraps within the screen
        await send(page, 'weather in Oslo');
        const card = page
          .getByRole('article', { name: 'Tool call weather' })
          .getByRole('group', { name: 'Approval needed' });
        await card.waitFor({ timeout: 60_000 });
        await expect.poll(async () => (await layout(page)).atBottom).toBe(true);
        const box = await card.boundingBox();
        const width = (await page.viewportSize())!.width;
        expect(box!.x).toBeGreaterThanOrEqual(0);
        expect(box!.x + box!.width).toBeLessThanOrEqual(width);
        expect(await card.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
        expect((await layout(page)).docWide).toBeLessThanOrEqual(0);
        await axeClean(page, 'approval pending');
        const shot = shots[`${screen}-${scheme}`];
        if (shot) await page.screenshot({ path: join(REPO_ROOT, 'docs', shot) });
        await card.getByRole('button', { name: 'Allow once' }).click();
        await idle(page);
        // each panel: beside the conversation on a desktop, a full-screen sheet with "Close" on a phone
        for (const name of ['Settings', 'Tools', 'Audit']) {
          // on a phone the less used actions (Audit, Export, Import, Keyboard shortcuts, Theme) are under "More"
          if (screen === 'phone' && name === 'Audit') await page.getByRole('button', { name: 'More' }).click();
          await page.getByRole('button', { name, exact: true }).click();
          const panel = page.getByRole('region', { name, exact: true });
          await panel.waitFor();
          const p = (await panel.boundingBox())!;
          if (screen === 'phone') {
            // a sheet over everything below the header: the whole width, the conversation hidden under it
            expect(Math.round(p.width)).toBe(width);
            expect(p.x).toBe(0);
            const header = (await page.locator('header.top').boundingBox())!;
            expect(Math.round(p.y)).toBe(Math.round(header.y + header.height));
            expect(
              await page.evaluate(
                () => document.elementFromPoint(10, window.innerHeight - 10)?.closest('.panels') !== null,
              ),
            ).toBe(true);
          } else expect(p.x).toBeGreaterThan(width / 2);
          expect(p.x + p.width).toBeLessThanOrEqual(width + 0.5);
          if (name === 'Audit') await panel.getByRole('list', { name: 'Audit log' }).waitFor();
          await axeClean(page, `${name} panel`);
          if (name === 'Audit') {
            // readable at the panel's width: no entry is wider than its list
            const wide = await panel
              .getByRole('list', { name: 'Audit log' })
              .evaluate((el) => el.scrollWidth - el.clientWidth);
            expect(wide).toBeLessThanOrEqual(0);
          }
          await panel.getByRole('button', { name: 'Close' }).click();
          await panel.waitFor({ state: 'detached' });
        }
        if (screen === 'phone') {
          // the conversation list is a drawer
          const list = page.getByRole('list', { name: 'Conversations' });
          await expect(list.isVisible()).resolves.toBe(false);
          await page.getByRole('button', { name: 'Conversations' }).click();
          await list.waitFor();
          await axeClean(page, 'conversation drawer');
          await list.getByRole('button').first().click();
          await list.waitFor({ state: 'hidden' });
        } else {
          await expect(page.getByRole('button', { name: 'Conversations' }).isVisible()).resolves.toBe(false);
        }
        // "Theme" switches and is remembered across a reload
        if (screen === 'phone') await page.getByRole('button', { name: 'More' }).click();
        await page.getByRole('button', { name: 'Theme' }).click();
        expect(dark(await bg())).toBe(scheme !== 'dark');
        await page.reload();
        await ready(page);
        expect(dark(await bg())).toBe(scheme !== 'dark');
        await axeClean(page, 'other theme');
        expect(rejectedHistories([m])).toEqual([]);
        await expect(violations()).resolves.toEqual([]);
        await context.close();
      }, 300_000);

  it('phone, dark: the key question, a rate-limit countdown and an error with Retry wrap within the screen, axe-clean', async () => {
    const a = await startScriptedModel({ kind: 'openai', script: () => ({ text: 'ok' }) });
    const b = await startScriptedModel({
      kind: 'openai',
      script: (_body, n) =>
        n === 0
          ? { status: 429, retryAfter: '30' }
          : { status: 503, errorMessage: 'The server is overloaded right now' },
    });
    try {
      const context = await newContext(env, 'phone', 'dark');
      const { page } = await openApp(env, '', context);
      await configure(page, { api: 'openai', endpoint: a.url, model: 'm', key: 'sk-phone-0000000000' });
      await page.getByRole('button', { name: 'Settings' }).click();
      await page.getByRole('textbox', { name: 'Endpoint URL' }).fill(b.url);
      await page.getByRole('button', { name: 'Settings' }).click();
      const width = (await page.viewportSize())!.width;
      const fits = async (l: ReturnType<Page['getByRole']>) => {
        const box = (await l.boundingBox())!;
        expect(box.x).toBeGreaterThanOrEqual(0);
        expect(box.x + box.width).toBeLessThanOrEqual(width);
        expect((await layout(page)).docWide).toBeLessThanOrEqual(0);
      };
      await send(page, 'to the other endpoint');
      const q = page.getByRole('group', { name: 'Send your key?' });
      await q.waitFor({ timeout: 30_000 });
      await fits(q);
      await axeClean(page, 'key question');
      await q.getByRole('button', { name: 'Send without key' }).click();
      const rate = page.getByRole('alert').filter({ hasText: /Retrying in/ });
      await rate.waitFor({ timeout: 60_000 });
      await fits(rate);
      await axeClean(page, 'rate-limit countdown');
      await rate.getByRole('button', { name: 'Cancel' }).click();
      await page.getByText('Retry cancelled.').waitFor();
      await page.getByRole('button', { name: 'Retry' }).click();
      const failed = page.getByRole('alert').filter({ hasText: 'HTTP 503: The server is overloaded right now' });
      await failed.waitFor({ timeout: 60_000 });
      await fits(failed);
      await axeClean(page, 'error with Retry');
      expect(rejectedHistories([a, b])).toEqual([]);
      await context.close();
    } finally {
      await a.close();
      await b.close();
    }
  }, 180_000);
});
