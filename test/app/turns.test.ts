// Turns that survive in Chromium: a reload while a call waits for approval or while an answer streams, calls that end
// at their own time, New conversation then Send at once; every request body checked the way the providers check it;
// test code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
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
const models: ScriptedModel[] = [];

beforeAll(async () => {
  env = await startEnv();
}, 60_000);
afterAll(async () => {
  for (const m of models) await m.close();
  await env?.close();
});

async function model(
  kind: 'openai' | 'anthropic',
  script: Parameters<typeof startScriptedModel>[0]['script'],
): Promise<ScriptedModel> {
  const m = await startScriptedModel({ kind, script });
  models.push(m);
  return m;
}

/** The tool results of the last message(s) of a request, whichever provider's shape. */
function lastResults(kind: 'openai' | 'anthropic', body: any): string[] {
  const msgs = body.messages;
  if (kind === 'openai') {
    const out: string[] = [];
    for (let i = msgs.length - 1; i >= 0 && msgs[i].role === 'tool'; i--) out.unshift(String(msgs[i].content));
    return out;
  }
  const last = msgs[msgs.length - 1];
  return (Array.isArray(last.content) ? last.content : [])
    .filter((b: { type: string }) => b.type === 'tool_result')
    .map((b: { content: string }) => String(b.content));
}

const lastUserText = (kind: 'openai' | 'anthropic', body: any): string => {
  const last = body.messages[body.messages.length - 1];
  if (kind === 'openai') return last.role === 'user' ? String(last.content) : '';
  const text = Array.isArray(last.content) ? last.content.find((b: { type: string }) => b.type === 'text') : undefined;
  return last.role === 'user' && text ? String(text.text) : '';
};

async function routeWeather(page: Page): Promise<{ fetched: number }> {
  const seen = { fetched: 0 };
  await page.route('https://data.example.org/**', (route) => {
    seen.fetched++;
    return route.fulfill({
      status: 200,
      contentType: 'application/json',
      headers: { 'access-control-allow-origin': '*' },
      body: JSON.stringify({ temp: 21 }),
    });
  });
  return seen;
}

describe.skipIf(!haveChromium)('turns that survive reloads', () => {
  // OpenAI on a desktop in the light theme, Anthropic on a phone in the dark one
  for (const [kind, screen, scheme] of [
    ['openai', 'desktop', 'light'],
    ['anthropic', 'phone', 'dark'],
  ] as const) {
    it(`${kind} (${screen}, ${scheme}): a reload while a call waits for approval gives it E_INTERRUPTED; later requests stay valid; Run again asks again`, async () => {
      const m = await model(kind, (body) => {
        const user = lastUserText(kind, body);
        if (user === 'weather please')
          return { text: 'Checking.', toolCalls: [{ name: 'weather', arguments: { city: 'Oslo' } }] };
        if (user) return { text: `echo: ${user}` };
        return { text: `result: ${lastResults(kind, body).join(' | ')}` };
      });
      const { page, context, violations } = await openApp(env, '', await newContext(env, screen, scheme));
      const seen = await routeWeather(page);
      await addTool(page, TOOLS.weather);
      await configure(page, { api: kind, endpoint: m.url, model: 'm' });
      await send(page, 'weather please');
      const call = page.getByRole('article', { name: 'Tool call weather' });
      await call.getByRole('group', { name: 'Approval needed' }).waitFor({ timeout: 60_000 });
      await expect(call.getByRole('status').first().textContent()).resolves.toBe('waiting for you');
      await page.reload();
      await ready(page);
      // The call got a result in the task tree: interrupted, saying so, with "Run again"
      await call.getByRole('status').filter({ hasText: 'interrupted' }).waitFor();
      await expect(call.getByLabel('Error').textContent()).resolves.toMatch(/^E_INTERRUPTED: the call was interrupted/);
      expect(seen.fetched).toBe(0);
      // A later message: the model gets a history where the call has its result
      await send(page, 'still there?');
      await page.getByText('echo: still there?').waitFor({ timeout: 60_000 });
      await idle(page);
      const withResult = m.requests[m.requests.length - 1]!.body;
      expect(JSON.stringify(withResult)).toContain('E_INTERRUPTED');
      // "Run again": the question is asked again (the old one was withdrawn), then the model goes on with the result
      await call.getByRole('button', { name: 'Run again' }).click();
      const again = page
        .getByRole('article', { name: 'Tool call weather' })
        .getByRole('group', { name: 'Approval needed' });
      await again.last().waitFor({ timeout: 60_000 });
      // the card runs again: its old outcome is gone, it waits for the answer
      await expect(call.getByRole('status').first().textContent()).resolves.toBe('waiting for you');
      await expect(call.getByLabel('Error').count()).resolves.toBe(0);
      await again.last().getByRole('button', { name: 'Allow once' }).click();
      await page.getByText(/^result: .*"temp":21/).waitFor({ timeout: 60_000 });
      await idle(page);
      expect(seen.fetched).toBe(1);
      expect(rejectedHistories([m])).toEqual([]);
      await expect(violations()).resolves.toEqual([]);
      await context.close();
    }, 240_000);
  }

  it('a reload while an answer streams keeps the text received, marked interrupted; Continue goes on from it', async () => {
    const words = Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ');
    const m = await model('openai', (body, n) =>
      n === 0 ? { text: words, pace: { tokens: 5, everyMs: 100 }, hang: true } : { text: ' and the rest.' },
    );
    const { page, context } = await openApp(env);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
    await send(page, 'talk slowly');
    await page.getByText(/word30\b/).waitFor({ timeout: 60_000 });
    await page.waitForTimeout(600); // the journal writes the streamed text at least every 250 ms
    await page.reload();
    await ready(page);
    const answer = page.getByRole('article', { name: 'Assistant' }).last();
    await answer.getByText('interrupted: the answer was cut off before it ended').waitFor();
    const kept = ((await answer.locator('.md').textContent()) ?? '').trim();
    expect(kept.startsWith('word0 word1 word2')).toBe(true);
    expect(words.startsWith(kept)).toBe(true);
    await answer.getByRole('button', { name: 'Continue' }).click();
    await page.getByText('and the rest.').waitFor({ timeout: 60_000 });
    await idle(page);
    const last = m.requests[m.requests.length - 1]!.body.messages.at(-1);
    expect(last.role).toBe('assistant');
    expect(String(last.content).trim()).toBe(kept);
    expect(rejectedHistories([m])).toEqual([]);
    await context.close();
  }, 180_000);

  it('each call of a reply shows its own state the moment it ends, with one colour per state and its duration', async () => {
    const m = await model('openai', (body, n) =>
      n === 0
        ? {
            toolCalls: [
              { name: 'sleep', arguments: { ms: 50 } },
              { name: 'sleep', arguments: { ms: 6000 } },
            ],
          }
        : { text: 'both done' },
    );
    const { page, context } = await openApp(env);
    await addTool(page, TOOLS.sleep);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
    await send(page, 'two sleeps');
    const cards = page.getByRole('article', { name: 'Tool call sleep' });
    const fast = cards.nth(0);
    const slow = cards.nth(1);
    await fast.getByRole('status').filter({ hasText: 'done' }).waitFor({ timeout: 60_000 });
    // the slow call is still running while the fast one reads done
    await expect(slow.getByRole('status').first().textContent()).resolves.toBe('running');
    const colour = (l: typeof fast) => l.evaluate((el) => getComputedStyle(el).borderLeftColor);
    const [done, running] = [await colour(fast), await colour(slow)];
    expect(done).not.toBe(running);
    await expect(fast.locator('.call-time').textContent()).resolves.toMatch(/^ · \d+ ms$/);
    await page.getByText('both done').waitFor({ timeout: 60_000 });
    await idle(page);
    await expect(slow.locator('.call-time').textContent()).resolves.toMatch(/^ · [56]\.\d s$/);
    // the same state has the same colour in every card
    expect(await colour(slow)).toBe(done);
    expect(rejectedHistories([m])).toEqual([]);
    await context.close();
  }, 180_000);

  it('"New conversation" then an immediate Send puts the message in the new conversation', async () => {
    const m = await model('openai', (body) => ({
      text: `seen ${body.messages.length} messages; last: ${body.messages.at(-1).content}`,
    }));
    const { page, context } = await openApp(env);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
    await send(page, 'first conversation');
    await page.getByText('seen 2 messages; last: first conversation').waitFor({ timeout: 60_000 });
    await idle(page);
    // both in one task of the page: no time for the new conversation to be ready before Send
    await page.evaluate(() => {
      const buttons = [...document.querySelectorAll('button')];
      buttons.find((b) => b.textContent === 'New conversation')!.click();
      (document.getElementById('message') as HTMLTextAreaElement).value = 'second conversation';
      document.querySelector('form.composer')!.dispatchEvent(new Event('submit', { cancelable: true }));
    });
    await page.getByText('seen 2 messages; last: second conversation').waitFor({ timeout: 60_000 });
    await idle(page);
    expect(m.requests.at(-1)!.body.messages.map((x: { role: string }) => x.role)).toEqual(['system', 'user']);
    await expect(page.getByRole('list', { name: 'Conversations' }).getByRole('button').count()).resolves.toBe(2);
    await expect(page.getByRole('button', { name: 'second conversation' }).getAttribute('aria-current')).resolves.toBe(
      'true',
    );
    await expect(page.getByText('first conversation', { exact: true }).count()).resolves.toBe(1); // only in the list
    await context.close();
  }, 180_000);
});
