// The chat app in Chromium against a scripted OpenAI-compatible streaming server: JS tools, parallel calls, bad calls,
// round limit, Stop, the key; test code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from './model-servers.mjs';
import {
  addTool,
  configure,
  dumpIndexedDb,
  haveChromium,
  idle,
  lastToolMessages,
  openApp,
  send,
  startEnv,
  TOOLS,
  type AppEnv,
} from './harness.js';

let env: AppEnv;
const models: ScriptedModel[] = [];
const KEY = 'sk-test-4f1c9a7e-not-a-real-key';

beforeAll(async () => {
  env = await startEnv();
}, 60_000);
afterAll(async () => {
  for (const m of models) await m.close();
  await env?.close();
});

async function model(script: Parameters<typeof startScriptedModel>[0]['script']): Promise<ScriptedModel> {
  const m = await startScriptedModel({ kind: 'openai', script });
  models.push(m);
  return m;
}

describe.skipIf(!haveChromium)('chat app with an OpenAI-compatible model', () => {
  it('runs a JavaScript tool and a second tool in parallel; results go back to the model; the key is sent only to the model', async () => {
    const m = await model((body, n) => {
      if (n === 0)
        return {
          text: 'Let me look.',
          toolCalls: [
            { name: 'text-stats', arguments: { text: 'one two three' } },
            { name: 'shout', arguments: { text: 'hi' } },
          ],
        };
      const results = lastToolMessages(body).map((t) => JSON.parse(String(t.content)));
      return { text: `Counted ${results[0].words} words and got ${results[1].shouted}` };
    });
    const { page, requests, errors, context, csp, violations } = await openApp(env);
    // Served under the strict policy (no 'unsafe-eval', no inline script), and nothing in the page violates it.
    expect(csp).toBeDefined();
    expect(csp).not.toMatch(/'unsafe-eval'|'unsafe-inline'/);
    expect(csp).toMatch(/script-src 'self'/);
    await addTool(page, TOOLS.shout);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'scripted-model', key: KEY });
    await send(page, 'How many words are in "one two three"?');
    await page.getByText('Counted 3 words and got HI!').waitFor({ timeout: 60_000 });
    await idle(page);
    const call = page.getByRole('article', { name: 'Tool call text-stats' });
    await expect(call.getByRole('status').textContent()).resolves.toBe('done');
    await expect(call.getByLabel('Result').textContent()).resolves.toContain('"words": 3');
    // What the model received: both tool results, answering the call ids of its previous message.
    expect(m.requests).toHaveLength(2);
    const second = m.requests[1]!.body;
    const tools = lastToolMessages(second);
    expect(tools).toHaveLength(2);
    const assistant = second.messages[second.messages.length - 3];
    expect(assistant.tool_calls.map((c: { id: string }) => c.id)).toEqual(tools.map((t) => t.tool_call_id));
    expect(JSON.parse(String(tools[0]!.content))).toMatchObject({ words: 3, uniqueWords: 3 });
    expect(m.requests[0]!.body.tools.map((t: { function: { name: string } }) => t.function.name).sort()).toEqual([
      'csv-stats',
      'json-reshape',
      'shout',
      'text-stats',
    ]);
    expect(m.requests[0]!.body.model).toBe('scripted-model');
    expect(m.requests[0]!.body.stream).toBe(true);
    // The key: in the Authorization header of the model's requests only.
    for (const r of m.requests) expect(r.headers.authorization).toBe(`Bearer ${KEY}`);
    const withKey = [];
    for (const r of requests) {
      const headers = await r.allHeaders();
      const text = `${r.url()} ${JSON.stringify(headers)} ${r.postData() ?? ''}`;
      if (text.includes(KEY)) withKey.push({ url: r.url(), viaHeader: headers.authorization === `Bearer ${KEY}` });
    }
    expect(withKey.length).toBeGreaterThanOrEqual(2);
    for (const w of withKey) expect(w).toEqual({ url: `${m.url}/chat/completions`, viaHeader: true });
    // Nothing the host keeps (tasks, audit, grants, tool storage) holds the key; only the app's key store does.
    const where = (await dumpIndexedDb(page, ['tysandbox', 'tysandbox-app']))
      .filter((r) => r.text.includes(KEY))
      .map((r) => `${r.db}/${r.store}`);
    expect(where).toEqual(['tysandbox-app/keys']);
    expect(errors.filter((e) => /Content Security Policy|pageerror/.test(e))).toEqual([]);
    await expect(violations()).resolves.toEqual([]);
    await context.close();
  }, 240_000);

  it('runs parallel calls of one tool at the same time, and a non-streaming reply', async () => {
    const m = await model((body, n) =>
      n === 0
        ? {
            toolCalls: [
              { name: 'stamp', arguments: { ms: 1500 } },
              { name: 'stamp', arguments: { ms: 1500 } },
            ],
          }
        : {
            text: `done ${lastToolMessages(body)
              .map((t) => t.content)
              .join(' | ')}`,
          },
    );
    const { page, context } = await openApp(env);
    await addTool(page, {
      name: 'stamp',
      description: 'Waits ms milliseconds; returns when it started and ended (ms since the epoch).',
      parameters: {
        type: 'object',
        properties: { ms: { type: 'integer', minimum: 0, maximum: 60000 } },
        required: ['ms'],
        additionalProperties: false,
      },
      execution: {
        kind: 'sandboxed-code',
        runtime: 'javascript',
        source:
          'export default async ({ ms }) => { const start = Date.now(); await new Promise((r) => setTimeout(r, ms)); return { start, end: Date.now() }; };',
      },
    });
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
    await page.getByRole('button', { name: 'Settings' }).click();
    await page.getByRole('checkbox', { name: 'Stream responses' }).uncheck();
    await page.getByRole('button', { name: 'Settings' }).click();
    await send(page, 'stamp twice');
    await page.getByText(/^done /).waitFor({ timeout: 60_000 });
    await idle(page);
    expect(m.requests[0]!.body.stream).toBe(false);
    const [a, b] = lastToolMessages(m.requests[1]!.body).map(
      (t) => JSON.parse(String(t.content)) as { start: number; end: number },
    );
    // Overlapping intervals: each call started before the other ended.
    expect(a!.start).toBeLessThan(b!.end);
    expect(b!.start).toBeLessThan(a!.end);
    await context.close();
  }, 240_000);

  it('returns an unknown tool and arguments that fail the schema to the model as tool results; tool rounds per turn are bounded', async () => {
    const m = await model((body, n) => {
      if (n === 0)
        return {
          toolCalls: [
            { name: 'no-such-tool', arguments: { a: 1 } },
            { name: 'text-stats', arguments: { text: 5 } },
            { name: 'text-stats', arguments: '{not json' },
          ],
        };
      if (n === 1)
        return {
          text: `errors: ${lastToolMessages(body)
            .map((t) => JSON.parse(String(t.content)).error?.code)
            .join(',')}`,
        };
      return { toolCalls: [{ name: 'text-stats', arguments: { text: `round ${n}` } }] };
    });
    const { page, context } = await openApp(env);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
    await send(page, 'call things');
    await page.getByText('errors: E_UNKNOWN_TOOL,E_INVALID_ARGS,E_INVALID_ARGS').waitFor({ timeout: 60_000 });
    await idle(page);
    await expect(page.getByRole('article', { name: 'Tool call no-such-tool' }).textContent()).resolves.toContain(
      'E_UNKNOWN_TOOL',
    );
    // Every later reply calls a tool again: the turn ends after the documented number of rounds.
    await send(page, 'loop forever');
    await page.getByText(/Stopped after 8 tool rounds/).waitFor({ timeout: 90_000 });
    await idle(page);
    expect(m.requests.length).toBe(2 + 8);
    await context.close();
  }, 240_000);

  it('Stop cancels a long tool call (E_ABORTED) and a streaming reply', async () => {
    const m = await model((_body, n) =>
      n === 0
        ? { text: 'Sleeping.', toolCalls: [{ name: 'sleep', arguments: { ms: 600000 } }] }
        : { text: 'I will talk for a long time and never finish', hang: true },
    );
    const { page, context } = await openApp(env);
    await addTool(page, TOOLS.sleep);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
    await send(page, 'sleep for ten minutes');
    const call = page.getByRole('article', { name: 'Tool call sleep' });
    await call.getByRole('status').filter({ hasText: 'running' }).waitFor({ timeout: 60_000 });
    await page.getByRole('button', { name: 'Stop' }).click();
    await idle(page, 20_000);
    await expect(call.getByLabel('Error').textContent()).resolves.toMatch(/^E_ABORTED/);
    expect(m.requests).toHaveLength(1);
    await send(page, 'now talk');
    await page
      .getByText(/I will talk/)
      .first()
      .waitFor({ timeout: 30_000 });
    await page.getByRole('button', { name: 'Stop' }).click();
    await idle(page, 20_000);
    await page.getByText('Stopped.').waitFor();
    await context.close();
  }, 240_000);

  it('a tool reads a secret only after the person grants it to that revision; the value never reaches the model, the audit or the page requests', async () => {
    const SECRET = 'tok-secret-5c2e91d0';
    const m = await model((body) => {
      const last = body.messages[body.messages.length - 1];
      return last.role === 'user'
        ? { toolCalls: [{ name: 'token-len', arguments: {} }] }
        : { text: `token result ${last.content}` };
    });
    const { page, requests, context } = await openApp(env);
    await addTool(page, {
      name: 'token-len',
      description: 'Length of the WEATHER_TOKEN secret.',
      parameters: { type: 'object', properties: {}, additionalProperties: false },
      capabilities: { secrets: ['WEATHER_TOKEN'] },
      execution: {
        kind: 'sandboxed-code',
        runtime: 'javascript',
        source: 'export default async (_a, ctx) => ({ length: (await ctx.getSecret("WEATHER_TOKEN")).length });',
      },
    });
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
    await page.getByRole('button', { name: 'Settings' }).click();
    await page.getByRole('textbox', { name: 'Secret name' }).fill('WEATHER_TOKEN');
    await page.getByRole('textbox', { name: 'Secret value' }).fill(SECRET);
    await page.getByRole('button', { name: 'Save secret' }).click();
    await page.getByRole('list', { name: 'Tool secrets' }).getByText('WEATHER_TOKEN').waitFor();
    await page.getByRole('button', { name: 'Settings' }).click();
    // Not granted yet: refused, and the model is told so.
    await send(page, 'how long is the token?');
    await page.getByText(/token result .*E_SECRET_DENIED/).waitFor({ timeout: 60_000 });
    await idle(page);
    await page.getByRole('button', { name: 'Tools' }).click();
    await page.getByRole('button', { name: 'Grant secret WEATHER_TOKEN to token-len' }).click();
    await page.getByRole('button', { name: 'Revoke secret WEATHER_TOKEN to token-len' }).waitFor();
    await page.getByRole('button', { name: 'Tools' }).click();
    await send(page, 'and now?');
    await page.getByText(`token result {"length":${SECRET.length}}`).waitFor({ timeout: 60_000 });
    await idle(page);
    for (const r of m.requests) expect(JSON.stringify(r.body)).not.toContain(SECRET);
    for (const r of requests) expect(`${r.url()} ${r.postData() ?? ''}`).not.toContain(SECRET);
    await page.getByRole('button', { name: 'Audit' }).click();
    const log = page.getByRole('list', { name: 'Audit log' });
    await log.waitFor();
    await expect(log.textContent()).resolves.toContain('secret');
    await expect(page.getByRole('region', { name: 'Audit' }).textContent()).resolves.not.toContain(SECRET);
    await context.close();
  }, 240_000);
});
