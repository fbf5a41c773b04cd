// The views issue 28 added (Connections in Settings, the conversation header with its Model menu and settings box,
// search, attachment chips, the Keyboard shortcuts dialog) at 1280x800 and 390x844, light and dark: axe-core clean,
// the header's toolbar within the screen, screenshots for docs/; Chromium over the real app server; test code.
import { join } from 'node:path';
import { AxeBuilder } from '@axe-core/playwright';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../node/diagnostics/browser-driver.mjs';
import { startScriptedModel, type ScriptedModel } from './model-servers.mjs';
import { allowConnect, haveChromium, idle, newContext, openApp, send, startEnv, type AppEnv } from './harness.js';

let env: AppEnv;
let a: ScriptedModel;
let b: ScriptedModel;
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

beforeAll(async () => {
  if (!haveChromium) return;
  env = await startEnv();
  const script = (body: { messages: { content: unknown }[] }) => ({
    text: `Here is a short answer about ${String(body.messages.at(-1)?.content).slice(0, 30)}.`,
  });
  a = await startScriptedModel({ kind: 'openai', key: 'sk-a', models: ['gpt-4.1-mini', 'gpt-4.1'], script });
  b = await startScriptedModel({ kind: 'anthropic', key: 'sk-b', models: ['claude-sonnet-4-5'], script });
  await allowConnect(env, [a.origin, b.origin]);
}, 60_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
  await env?.close();
});

async function axeClean(page: Page, view: string): Promise<void> {
  const r = await new AxeBuilder({ page }).analyze();
  expect(
    r.violations.map((v) => `${view}: ${v.id} (${v.impact}) ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
  ).toEqual([]);
}

/** Every visible control of the header lies within the screen, and nothing scrolls sideways. */
async function headerFits(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const w = window.innerWidth;
    const out: string[] = [];
    for (const el of document.querySelectorAll<HTMLElement>('header.top button, header.top label, header.top h1')) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || getComputedStyle(el).visibility === 'hidden') continue;
      if (r.left < 0 || r.right > w + 0.5) out.push(`${el.textContent?.trim()} ${r.left}-${r.right}`);
      if (el.scrollWidth > el.clientWidth + 1 && el.tagName !== 'H1') out.push(`${el.textContent?.trim()} is cut`);
    }
    if (document.scrollingElement!.scrollWidth > w) out.push('the page scrolls sideways');
    return out;
  });
}

async function addConnection(page: Page, name: string, api: string, endpoint: string, key: string, model: string) {
  await page.getByRole('textbox', { name: 'Connection name' }).fill(name);
  await page.getByRole('combobox', { name: 'API', exact: true }).selectOption(api);
  await page.getByRole('textbox', { name: 'Endpoint URL' }).fill(endpoint);
  await page.getByRole('textbox', { name: 'API key' }).fill(key);
  await page.getByRole('textbox', { name: /^Model / }).fill(model);
  await page.getByRole('button', { name: 'Test connection' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: /^Connected: / })
    .waitFor();
}

describe.skipIf(!haveChromium)('the new views', () => {
  for (const screen of ['desktop', 'phone'] as const)
    for (const scheme of ['light', 'dark'] as const)
      it(`${screen}, ${scheme}: connections, conversation header, search, chips, shortcuts are axe-clean and fit`, async () => {
        const ctx = await newContext(env, screen, scheme);
        const { page } = await openApp(env, '', ctx);
        const shot = (name: string) =>
          page.screenshot({ path: join(REPO_ROOT, 'docs', `app-${name}-${screen}-${scheme}.png`) });
        expect(await headerFits(page)).toEqual([]);
        const phone = screen === 'phone';
        // docs/ keeps the desktop in light and the phone in dark (the search drawer in light)
        const keep = phone === (scheme === 'dark');
        await page.getByRole('button', { name: 'Settings' }).click();
        await addConnection(page, 'OpenAI', 'openai', a.url, 'sk-a', 'gpt-4.1-mini');
        await page.getByRole('button', { name: 'Add connection' }).click();
        // the new connection's own fields, once drawn (until then the fields are the previous connection's)
        await expect
          .poll(() => page.getByRole('textbox', { name: 'Connection name' }).inputValue())
          .toBe('New connection');
        await page.getByRole('combobox', { name: 'Preset' }).selectOption('anthropic');
        await addConnection(page, 'Anthropic', 'anthropic', b.url, 'sk-b', 'claude-sonnet-4-5');
        await axeClean(page, 'connections');
        // the top of the section: the connection picker, the preset and its CORS note
        await page.getByRole('region', { name: 'Connections' }).evaluate((el) => el.scrollIntoView({ block: 'start' }));
        if (keep) await shot('connections');
        await page
          .getByRole('button', { name: phone ? 'Close' : 'Settings' })
          .first()
          .click();

        // the conversation header, the Model menu, the settings box open, usage
        await send(page, 'the quarterly numbers');
        await page
          .getByText('Here is a short answer')
          .waitFor()
          .catch(async (e: unknown) => {
            const sent = [...a.requests, ...b.requests].map((r) => `${r.method} ${r.path} ${r.rejected ?? 'ok'}`);
            const text = await page.locator('main').innerText();
            throw new Error(`${String(e)}\nrequests: ${sent.join('; ')}\npage: ${text.slice(0, 1500)}`);
          });
        await idle(page);
        await page.locator('.conv-settings summary').click();
        await page.getByRole('textbox', { name: 'System prompt' }).fill('You are a careful analyst. Answer briefly.');
        expect(await headerFits(page)).toEqual([]);
        // attachment chips
        await page.getByLabel('Attach files').setInputFiles([
          { name: 'sales-2025.csv', mimeType: 'text/csv', buffer: Buffer.from('region,total\nnorth,10\n') },
          { name: 'chart.png', mimeType: 'image/png', buffer: PNG },
        ]);
        await page.getByRole('group', { name: 'Attachment chart.png' }).waitFor();
        await page
          .getByRole('group', { name: 'Attachment sales-2025.csv' })
          .getByRole('checkbox', { name: 'Give this file to tools' })
          .check();
        await axeClean(page, 'conversation header, settings box, chips');
        if (keep) await shot('conversation');

        // search (Ctrl+K opens the drawer on a phone)
        await page.keyboard.press('Control+K');
        await page.keyboard.type('quarterly');
        await expect.poll(() => page.locator('button.conv .conv-snippet').count()).toBe(1);
        await axeClean(page, 'search');
        if (phone && scheme === 'light') await shot('search');
        await page.keyboard.press('Escape');
        await page.keyboard.press('Escape');

        // the shortcuts dialog
        await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
        await page.keyboard.press('?');
        await page.getByRole('dialog', { name: 'Keyboard shortcuts' }).waitFor();
        await axeClean(page, 'keyboard shortcuts');
        if (!phone && scheme === 'light') await shot('shortcuts');
        await page.keyboard.press('Escape');

        // on a phone the less used actions are under "More", each with its name
        if (phone) {
          await page.getByRole('button', { name: 'More' }).click();
          for (const name of ['Audit', 'Export', 'Keyboard shortcuts', 'Theme'])
            await expect(page.getByRole('button', { name, exact: true }).isVisible()).resolves.toBe(true);
          await expect(page.getByText('Import', { exact: true }).isVisible()).resolves.toBe(true);
          expect(await headerFits(page)).toEqual([]);
          await axeClean(page, 'More menu');
          if (keep) await shot('more');
          await page.keyboard.press('Escape');
          expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('More');
          // Escape closes the drawer and focus goes back where it was: the message box after Ctrl+K from it
          const list = page.getByRole('list', { name: 'Conversations' });
          await page.getByRole('textbox', { name: 'Message' }).focus();
          await page.keyboard.press('Control+K');
          await list.waitFor();
          await page.keyboard.press('Escape');
          await list.waitFor({ state: 'hidden' });
          expect(await page.evaluate(() => document.activeElement?.id)).toBe('message');
          // ... and the "Conversations" button after it opened the drawer
          await page.getByRole('button', { name: 'Conversations' }).click();
          await list.waitFor();
          await page.keyboard.press('Escape');
          await list.waitFor({ state: 'hidden' });
          expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Conversations');
        }
        await ctx.close();
      }, 240_000);
});
