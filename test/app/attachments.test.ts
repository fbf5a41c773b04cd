// Attaching by paste and by drop, a file over the stated size refused with a reason, no token figures when the
// provider sends no usage, and a title written by the model when the person allows it; Chromium over the real app
// server and a scripted OpenAI-compatible peer; test code.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from './model-servers.mjs';
import {
  configure,
  haveChromium,
  idle,
  openApp,
  ready,
  rejectedHistories,
  send,
  startEnv,
  type AppEnv,
} from './harness.js';

let env: AppEnv;
let m: ScriptedModel;
const TITLE_ASK = 'Reply with a title for this conversation';

beforeAll(async () => {
  if (!haveChromium) return;
  env = await startEnv();
  m = await startScriptedModel({
    kind: 'openai',
    script: (body) => {
      const last = body.messages.at(-1);
      const text = typeof last.content === 'string' ? last.content : JSON.stringify(last.content);
      if (text.startsWith(TITLE_ASK)) return { text: '"Tide tables for Brittany"' };
      return { text: `Answer to ${text.slice(0, 20)}`, ...(text.includes('no usage') ? { noUsage: true } : {}) };
    },
  });
}, 60_000);
afterAll(async () => {
  await m?.close();
  await env?.close();
});

/** Dispatch a paste (into the message box) or a drop (on the conversation) carrying one text file. */
function fileEvent(page: Page, kind: 'paste' | 'drop', name: string, text: string): Promise<void> {
  return page.evaluate(
    ({ kind, name, text }) => {
      const dt = new DataTransfer();
      dt.items.add(new File([text], name, { type: 'text/plain' }));
      if (kind === 'paste')
        document
          .getElementById('message')!
          .dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
      else {
        const main = document.querySelector('main')!;
        main.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
        main.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
      }
    },
    { kind, name, text },
  );
}

describe.skipIf(!haveChromium)('attachments, usage, model titles', () => {
  it('paste and drop attach files, an oversized image is refused with the limit, each reaches the request', async () => {
    const { page, context } = await openApp(env);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'scripted-1' });
    await page.reload();
    await ready(page);
    await fileEvent(page, 'paste', 'pasted.txt', 'PASTED-CONTENT-41');
    await page.getByRole('group', { name: 'Attachment pasted.txt' }).waitFor();
    await fileEvent(page, 'drop', 'dropped.md', 'DROPPED-CONTENT-42');
    await page.getByRole('group', { name: 'Attachment dropped.md' }).waitFor();
    // a 6 MiB PNG is over the 5 MiB image limit: refused, and the person is told why
    const big = Buffer.alloc(6 * 1024 * 1024);
    Buffer.from('89504e470d0a1a0a', 'hex').copy(big);
    await page.getByLabel('Attach files').setInputFiles([{ name: 'huge.png', mimeType: 'image/png', buffer: big }]);
    await page.getByText(/huge\.png is .*; images up to .* can be attached/).waitFor();
    expect(await page.getByRole('group', { name: 'Attachment huge.png' }).count()).toBe(0);
    // Remove takes one off
    await fileEvent(page, 'paste', 'extra.txt', 'EXTRA');
    await page.getByRole('button', { name: 'Remove extra.txt' }).click();
    expect(await page.getByRole('group', { name: 'Attachment extra.txt' }).count()).toBe(0);
    await send(page, 'read both');
    await page.getByText('Answer to').first().waitFor();
    await idle(page);
    const body = JSON.stringify(m.requests.at(-1)!.body.messages.at(-1));
    expect(body).toContain('PASTED-CONTENT-41');
    expect(body).toContain('DROPPED-CONTENT-42');
    expect(body).not.toContain('EXTRA');
    expect(rejectedHistories([m])).toEqual([]);
    await context.close();
  }, 180_000);

  it('shows no token figures when the provider sends no usage; the model titles a conversation when allowed', async () => {
    const { page, context } = await openApp(env);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'scripted-1' });
    await page.reload();
    await ready(page);
    await send(page, 'a question with no usage');
    await page.getByText('Answer to a question with').waitFor();
    await idle(page);
    expect(await page.locator('.conv-usage').isVisible()).toBe(false);
    expect(await page.locator('main').innerText()).not.toMatch(/\d+ in · \d+ out/);
    // allowed: one short extra request after the first answer names the conversation
    await page.getByRole('button', { name: 'Settings' }).click();
    await page.getByRole('checkbox', { name: /Name conversations with the model/ }).check();
    await page.getByRole('button', { name: 'Settings' }).click();
    await page.keyboard.press('Control+Shift+O');
    await send(page, 'when is high tide in Brest');
    await expect.poll(() => page.locator('h2.conv-heading').innerText()).toBe('Tide tables for Brittany');
    const titleReq = m.requests.find((r) => JSON.stringify(r.body).includes(TITLE_ASK))!;
    expect(titleReq.body.tools).toBeUndefined();
    await page.reload();
    await ready(page);
    await expect
      .poll(() => page.locator('button.conv .conv-title').allInnerTexts())
      .toContain('Tide tables for Brittany');
    expect(rejectedHistories([m])).toEqual([]);
    await context.close();
  }, 180_000);
});
