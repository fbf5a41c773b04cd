// Managing conversations with the keyboard alone in Chromium: distinct titles, rename (double-click, F2), pin, delete
// with Undo, search over titles and message text, all surviving a reload; every shortcut, Escape returning focus, the
// conversation list as one Tab stop with arrow keys, "Skip to message box"; test code.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from './model-servers.mjs';
import { configure, haveChromium, idle, openApp, ready, send, startEnv, type AppEnv } from './harness.js';

let env: AppEnv;
let m: ScriptedModel;

beforeAll(async () => {
  if (!haveChromium) return;
  env = await startEnv();
  m = await startScriptedModel({
    kind: 'openai',
    script: (body) => {
      const last = body.messages.at(-1);
      return { text: `Answer to: ${typeof last.content === 'string' ? last.content : 'files'}` };
    },
  });
}, 60_000);
afterAll(async () => {
  await m?.close();
  await env?.close();
});

const focused = (page: Page) =>
  page.evaluate(() => {
    const e = document.activeElement as HTMLElement | null;
    return {
      id: e?.id ?? '',
      tag: e?.tagName ?? '',
      text: (e?.querySelector('.conv-title')?.textContent ?? e?.textContent ?? '').trim(),
      cls: e?.className ?? '',
    };
  });

/** The conversation list's titles, in order (each button's title line). */
const titles = (page: Page) => page.locator('button.conv .conv-title').allInnerTexts();

async function ask(page: Page, text: string): Promise<void> {
  await send(page, text);
  await page.getByText(`Answer to: ${text}`).waitFor();
  await idle(page);
}

describe.skipIf(!haveChromium)('conversations and the keyboard', () => {
  it('titles, rename, pin, delete with Undo and search survive a reload; every shortcut works', async () => {
    const { page, context } = await openApp(env);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: env.server.url });
    await configure(page, { api: 'openai', endpoint: m.url, model: 'scripted-1' });
    await page.reload();
    await ready(page);

    // a model name the provider did not list can still be typed in the Model menu
    await page
      .getByRole('combobox', { name: 'Model', exact: true })
      .selectOption({ label: 'Type a model name for My connection…' });
    await page.getByRole('textbox', { name: 'Model name' }).fill('typed-model-7');
    await page.getByRole('textbox', { name: 'Model name' }).press('Enter');
    // Ctrl+Shift+O: a new conversation with focus in the message box
    await ask(page, 'Plan the trip to Lisbon');
    expect(m.requests.at(-1)!.body.model).toBe('typed-model-7');
    for (const text of [
      'Budget for the team offsite',
      'Budget for the team offsite',
      'Notes about the walrus colony',
    ]) {
      await page.keyboard.press('Control+Shift+O');
      await expect.poll(async () => (await focused(page)).id).toBe('message');
      await ask(page, text);
    }
    // two conversations with the same first words can be told apart
    await expect
      .poll(() => titles(page))
      .toEqual(
        expect.arrayContaining([
          'Budget for the team offsite',
          'Budget for the team offsite (2)',
          'Plan the trip to Lisbon',
          'Notes about the walrus colony',
        ]),
      );

    // rename by double-click on the conversation's title
    await page.locator('h2.conv-heading').dblclick();
    const box = page.getByRole('textbox', { name: 'Conversation title' });
    await box.fill('Walrus research');
    await box.press('Enter');
    await expect.poll(() => titles(page)).toContain('Walrus research');

    // rename with F2 in the list, moving there with the arrow keys (the list is one Tab stop)
    await page.getByRole('button', { name: /^Budget for the team offsite \(2\)/ }).focus();
    await page.keyboard.press('ArrowDown');
    expect((await focused(page)).text).toMatch(/^Budget for the team offsite(?! \()/);
    await page.keyboard.press('F2');
    await box.fill('Offsite budget');
    await box.press('Enter');
    await expect.poll(() => titles(page)).toContain('Offsite budget');

    // pin the Lisbon conversation (open it with Enter from the list)
    await page.getByRole('button', { name: /^Plan the trip to Lisbon/ }).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('h2.conv-heading').innerText()).toBe('Plan the trip to Lisbon');
    await page.getByRole('button', { name: 'Pin' }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Pin' }).getAttribute('aria-pressed')).toBe('true');
    await expect.poll(() => titles(page).then((t) => t[0])).toBe('Plan the trip to Lisbon');
    await expect(page.getByRole('heading', { name: 'Pinned' }).isVisible()).resolves.toBe(true);
    await expect(page.getByRole('heading', { name: 'Today' }).isVisible()).resolves.toBe(true);

    // delete with Undo: back in the list and opened
    await page.getByRole('button', { name: /^Offsite budget/ }).click();
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await expect.poll(() => titles(page)).not.toContain('Offsite budget');
    await page.getByRole('button', { name: 'Undo' }).click();
    await expect.poll(() => titles(page)).toContain('Offsite budget');
    await expect.poll(() => page.locator('h2.conv-heading').innerText()).toBe('Offsite budget');
    // delete without Undo: gone for good, even after a reload
    await page.getByRole('button', { name: /^Budget for the team offsite \(2\)/ }).click();
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await expect.poll(() => titles(page)).not.toContain('Budget for the team offsite (2)');

    // Ctrl+Shift+C copies the last answer of the conversation shown
    await page.getByRole('button', { name: /^Walrus research/ }).click();
    await page.locator('body').click({ position: { x: 5, y: 300 } });
    await page.keyboard.press('Control+Shift+C');
    await expect
      .poll(() => page.evaluate(() => navigator.clipboard.readText()))
      .toBe('Answer to: Notes about the walrus colony');

    await page.reload();
    await ready(page);
    const after = await titles(page);
    expect(after[0]).toBe('Plan the trip to Lisbon');
    expect(after).toEqual(expect.arrayContaining(['Walrus research', 'Offsite budget', 'Plan the trip to Lisbon']));
    expect(after).not.toContain('Budget for the team offsite (2)');
    expect(after).toHaveLength(3);

    // Ctrl+K: search over titles and message text ("colony" is only in a message of "Walrus research")
    await page.locator('body').click({ position: { x: 5, y: 300 } });
    await page.keyboard.press('Control+K');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Search conversations');
    await page.keyboard.type('colony');
    await expect.poll(() => titles(page)).toEqual(['Walrus research']);
    await page.keyboard.press('Escape');
    await expect.poll(() => titles(page).then((t) => t.length)).toBe(3);

    // `/` focuses the message box (from anywhere but a text field)
    await page.getByRole('button', { name: 'Pin' }).focus();
    await page.keyboard.press('/');
    expect((await focused(page)).id).toBe('message');
    expect(await page.getByRole('textbox', { name: 'Message' }).inputValue()).toBe('');

    // Escape closes the open panel and focus goes back to what opened it
    const settings = page.getByRole('button', { name: 'Settings' });
    await settings.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('region', { name: 'Connections' }).waitFor();
    await page.getByRole('textbox', { name: 'Connection name' }).focus();
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByRole('region', { name: 'Connections' }).count()).toBe(0);
    expect((await focused(page)).text).toBe('Settings');

    // the "Keyboard shortcuts" dialog: `?` opens it, Escape closes it and focus goes back
    await page.keyboard.press('?');
    const dialog = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
    await dialog.waitFor();
    for (const keys of ['Ctrl+K', 'Ctrl+Shift+O', 'Ctrl+Shift+C', 'Escape', '/'])
      expect(await dialog.innerText()).toContain(keys);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect((await focused(page)).text).toBe('Settings');
    await context.close();
  }, 300_000);

  it('Tab order: one Tab and Enter ("Skip to message box") reach the message box; twelve conversations are one Tab stop', async () => {
    const { page, context } = await openApp(env);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'scripted-1' });
    await page.reload();
    await ready(page);
    for (let i = 0; i < 12; i++) {
      if (i) await page.keyboard.press('Control+Shift+O');
      await ask(page, `Question number ${i + 1}`);
    }
    await page.reload();
    await ready(page);
    // from the top: Tab reaches "Skip to message box", Enter puts focus in the message box
    await page.keyboard.press('Tab');
    expect((await focused(page)).text).toBe('Skip to message box');
    await page.keyboard.press('Enter');
    expect((await focused(page)).id).toBe('message');
    // Tabbing on past the link: the toolbar, the list (one stop however many conversations), the header, the box
    await page.reload();
    await ready(page);
    const order: string[] = [];
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press('Tab');
      const f = await focused(page);
      order.push(f.id === 'message' ? 'message' : f.cls.includes('conv') && f.tag === 'BUTTON' ? 'conv' : f.text);
      if (f.id === 'message') break;
    }
    expect(order).toContain('message');
    // the twelve conversations are one Tab stop
    expect(order.filter((x) => x === 'conv')).toHaveLength(1);
    expect(order.indexOf('Skip to message box')).toBe(0);
    // arrow keys move within the list, Home and End to its ends
    await page.locator('button.conv[tabindex="0"]').focus();
    await page.keyboard.press('End');
    expect((await focused(page)).text).toMatch(/^Question number 1\b/);
    await page.keyboard.press('Home');
    expect((await focused(page)).text).toMatch(/^Question number 12\b/);
    await page.keyboard.press('ArrowDown');
    expect((await focused(page)).text).toMatch(/^Question number 11\b/);
    await page.keyboard.press('Tab');
    expect((await focused(page)).cls).not.toContain('conv');
    // Delete in the list deletes the conversation under focus, with Undo
    await page.getByRole('button', { name: /^Question number 11\b/ }).focus();
    await page.keyboard.press('Delete');
    await expect.poll(() => titles(page)).not.toContain('Question number 11');
    await page.getByRole('button', { name: 'Undo' }).click();
    await expect.poll(() => titles(page)).toContain('Question number 11');
    await context.close();
  }, 300_000);
});
