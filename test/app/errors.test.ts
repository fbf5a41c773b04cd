// Errors a person can act on, in Chromium: a refused key, 429 with Retry-After (seconds and HTTP date) retried by
// itself at most 3 times or cancelled, 5xx and network errors with Retry, a cut stream with Continue, Regenerate as a
// sibling branch; test code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel, type ScriptedReply } from './model-servers.mjs';
import { configure, haveChromium, idle, openApp, rejectedHistories, send, startEnv, type AppEnv } from './harness.js';

let env: AppEnv;
const models: ScriptedModel[] = [];

beforeAll(async () => {
  env = await startEnv();
}, 60_000);
afterAll(async () => {
  for (const m of models) await m.close();
  await env?.close();
});

async function model(script: (body: any, n: number) => ScriptedReply, kind: 'openai' | 'anthropic' = 'openai') {
  const m = await startScriptedModel({ kind, script });
  models.push(m);
  return m;
}

describe.skipIf(!haveChromium)('errors a person can act on', () => {
  it('401: "The endpoint refused the key" with "Open settings"', async () => {
    const m = await model(() => ({ status: 401, errorMessage: 'Incorrect API key provided' }));
    const { page, context } = await openApp(env);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm', key: 'sk-wrong-key-000000' });
    await send(page, 'hi');
    const alert = page.getByRole('alert').filter({ hasText: 'The endpoint refused the key' });
    await alert.waitFor({ timeout: 60_000 });
    await expect(alert.textContent()).resolves.toContain('Incorrect API key provided');
    await expect(alert.textContent()).resolves.not.toContain('{'); // the provider's message, not its JSON
    await alert.getByRole('button', { name: 'Open settings' }).click();
    await page.getByRole('region', { name: 'Settings' }).getByRole('textbox', { name: 'API key' }).waitFor();
    await context.close();
  }, 120_000);

  it('429: counts down the Retry-After seconds and retries by itself; then an HTTP-date; at most 3 times, then Retry', async () => {
    const at = (s: number) => new Date(Date.now() + s * 1000).toUTCString();
    const m = await model((_b, n) =>
      n === 0
        ? { status: 429, retryAfter: '2', errorMessage: 'Rate limit reached' }
        : n === 1
          ? { status: 429, retryAfter: at(2), errorMessage: 'Rate limit reached' }
          : n === 2
            ? { text: 'made it' }
            : { status: 429, retryAfter: '1' },
    );
    const { page, context } = await openApp(env);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
    await send(page, 'hi');
    const note = page.getByRole('alert').filter({ hasText: /rate limiting/ });
    await note.filter({ hasText: /Retrying in [12] s \(attempt 1 of 3\)/ }).waitFor({ timeout: 60_000 });
    await note.filter({ hasText: /attempt 2 of 3/ }).waitFor({ timeout: 20_000 });
    await page.getByText('made it').waitFor({ timeout: 20_000 });
    await idle(page);
    expect(m.requests).toHaveLength(3);
    // requests 4.. are all 429: three automatic retries, then a Retry button
    await send(page, 'again');
    await page
      .getByRole('alert')
      .filter({ hasText: 'The request failed: the model endpoint answered HTTP 429' })
      .waitFor({
        timeout: 60_000,
      });
    expect(m.requests).toHaveLength(3 + 1 + 3);
    await page.getByRole('button', { name: 'Retry' }).waitFor();
    await context.close();
  }, 180_000);

  it('429: "Cancel" stops the countdown; nothing more is sent', async () => {
    const m = await model(() => ({ status: 429, retryAfter: '3' }));
    const { page, context } = await openApp(env);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
    await send(page, 'hi');
    const note = page.getByRole('alert').filter({ hasText: /Retrying in/ });
    await note.waitFor({ timeout: 60_000 });
    await note.getByRole('button', { name: 'Cancel' }).click();
    await page.getByText('Retry cancelled.').waitFor();
    await page.waitForTimeout(4000);
    expect(m.requests).toHaveLength(1);
    await context.close();
  }, 120_000);

  it('5xx and an unreachable endpoint offer "Retry", which sends again', async () => {
    const m = await model(
      (_b, n) => (n === 0 ? { status: 503, errorMessage: 'Overloaded' } : { text: 'back again' }),
      'anthropic',
    );
    const { page, context } = await openApp(env);
    await configure(page, { api: 'anthropic', endpoint: m.url, model: 'm' });
    await send(page, 'hi');
    const alert = page.getByRole('alert').filter({ hasText: 'HTTP 503: Overloaded' });
    await alert.waitFor({ timeout: 60_000 });
    await alert.getByRole('button', { name: 'Retry' }).click();
    await page.getByText('back again').waitFor({ timeout: 60_000 });
    await idle(page);
    expect(m.requests).toHaveLength(2);
    // the same message once in the conversation, answered once
    await expect(page.getByRole('article', { name: 'You' }).count()).resolves.toBe(1);
    // a server that is gone: a network error, also with Retry
    await m.close();
    await send(page, 'anyone?');
    await page
      .getByRole('alert')
      .filter({ hasText: /cannot reach/ })
      .getByRole('button', { name: 'Retry' })
      .waitFor({
        timeout: 60_000,
      });
    expect(rejectedHistories([m])).toEqual([]);
    await context.close();
  }, 120_000);

  it('a stream cut mid-way keeps the partial text and offers "Continue"; Regenerate makes a sibling branch', async () => {
    const m = await model((body, n) =>
      n === 0
        ? { text: 'The first half of the answer', cut: true }
        : n === 1
          ? { text: ' and its second half.' }
          : { text: `another answer ${n}` },
    );
    const { page, context } = await openApp(env);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
    await send(page, 'tell me');
    const alert = page.getByRole('alert').filter({ hasText: 'The answer stopped mid-way' });
    await alert.waitFor({ timeout: 60_000 });
    await expect(alert.textContent()).resolves.toContain('The text received so far is kept.');
    const partial = page.getByRole('article', { name: 'Assistant' }).filter({ hasText: 'The first half' });
    await partial.getByText('interrupted: the answer was cut off').waitFor();
    await alert.getByRole('button', { name: 'Continue' }).click();
    await page.getByText('and its second half.').waitFor({ timeout: 60_000 });
    await idle(page);
    expect(m.requests[1]!.body.messages.at(-1)).toEqual({ role: 'assistant', content: 'The first half of the answer' });
    // Regenerate the last answer: a sibling branch, both reachable
    await page.getByRole('article', { name: 'Assistant' }).last().getByRole('button', { name: 'Regenerate' }).click();
    await page.getByText('another answer 2').waitFor({ timeout: 60_000 });
    await idle(page);
    const last = page.getByRole('article', { name: 'Assistant' }).last();
    await expect(last.locator('.branch-pos').textContent()).resolves.toBe('2 / 2');
    await last.getByRole('button', { name: 'Previous branch' }).click();
    await page.getByText('and its second half.').waitFor();
    await expect(page.getByText('another answer 2').count()).resolves.toBe(0);
    expect(rejectedHistories([m])).toEqual([]);
    await context.close();
  }, 180_000);
});
