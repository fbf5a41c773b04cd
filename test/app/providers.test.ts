// Two scripted providers at once (OpenAI- and Anthropic-compatible, each refusing any key, model or history but its
// own): connections with their own keys, GET /v1/models, the Model menu switched mid-conversation, the system prompt,
// attachments in each API's format, a file handed to the csv-stats tool that never reaches a model, token usage, and
// settings export without keys; then an OpenAI Responses connection; Chromium over the real app server; test code.
import { readFile } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type RecordedRequest, type ScriptedModel } from './model-servers.mjs';
import {
  allowConnect,
  haveChromium,
  idle,
  openApp,
  ready,
  rejectedHistories,
  send,
  startEnv,
  type AppEnv,
} from './harness.js';

const KEY_A = 'sk-openai-AAAA-0123456789';
const KEY_B = 'sk-ant-BBBB-9876543210';
const HEADER_VALUE = 'hv-private-title-5150';
const SECRET_VALUE = 'tok-weather-secret-8080';
const CSV_MARK = 'ZEBRA_ROW_7731';
const CSV = `name,price\napple,2\n${CSV_MARK},4\npear,6\n`;
// a 1x1 PNG
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

let env: AppEnv;
let a: ScriptedModel;
let b: ScriptedModel;
let c: ScriptedModel;
const KEY_C = 'sk-resp-CCCC-5555';

/** The Responses peer's script: a csv-stats call when asked for statistics, the answer after its output. */
function responsesScript(body: { input: { type?: string; role?: string; content?: unknown }[] }) {
  const last = body.input.at(-1)!;
  if (last.type === 'function_call_output') return { text: 'The tool answered.' };
  const text = JSON.stringify(last.content ?? '');
  if (text.includes('statistics')) return { toolCalls: [{ name: 'csv-stats', arguments: { csv: 'x\n1\n3\n' } }] };
  return { text: 'echo from responses' };
}

/** The last user text of a request body (either API). */
function lastUserText(body: { messages: { role: string; content: unknown }[] }): string {
  const u = [...body.messages].reverse().find((m) => m.role === 'user');
  const c = u?.content;
  if (typeof c === 'string') return c;
  return (Array.isArray(c) ? c : [])
    .map((p: { type: string; text?: string; content?: unknown }) => p.text ?? JSON.stringify(p.content ?? ''))
    .join('\n');
}

/** A scripted reply: a csv-stats call with the file reference when the message hands a file to tools, else an echo. */
function script(body: { messages: { role: string; content: unknown }[] }) {
  const last = body.messages.at(-1)!;
  const text = lastUserText(body);
  const isResult =
    last.role === 'tool' ||
    (Array.isArray(last.content) && (last.content as { type: string }[]).some((p) => p.type === 'tool_result'));
  if (isResult) return { text: 'The tool answered.' };
  const ref = /"(attachment:[0-9a-f]{12}\/[^"]+)"/.exec(text)?.[1];
  if (ref) return { toolCalls: [{ name: 'csv-stats', arguments: { csv: ref } }] };
  return { text: `echo ${text.slice(0, 40)}` };
}

beforeAll(async () => {
  if (!haveChromium) return;
  env = await startEnv();
  a = await startScriptedModel({
    kind: 'openai',
    key: KEY_A,
    models: ['gpt-alpha-1', 'gpt-alpha-2'],
    allowHeaders: ['x-title'],
    script,
  });
  b = await startScriptedModel({ kind: 'anthropic', key: KEY_B, models: ['claude-beta-1', 'claude-beta-2'], script });
  c = await startScriptedModel({
    kind: 'openai-responses',
    key: KEY_C,
    models: ['gpt-resp-1'],
    script: responsesScript,
  });
  await allowConnect(env, [a.origin, b.origin, c.origin]);
}, 60_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
  await c?.close();
  await env?.close();
});

/** Fill the connection editor shown in Settings (the first change makes the connection). */
async function fillConnection(
  page: Page,
  c: { name: string; api: string; endpoint: string; key: string; model: string },
): Promise<void> {
  await page.getByRole('textbox', { name: 'Connection name' }).fill(c.name);
  await page.getByRole('combobox', { name: 'API', exact: true }).selectOption(c.api);
  await page.getByRole('textbox', { name: 'Endpoint URL' }).fill(c.endpoint);
  await page.getByRole('textbox', { name: 'API key' }).fill(c.key);
  await page.getByRole('textbox', { name: /^Model / }).fill(c.model);
  await page.getByRole('button', { name: 'Test connection' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: /^Connected: 2 models/ })
    .waitFor();
}

const model = (r: RecordedRequest) => (r.body as { model?: string } | undefined)?.model;
const chats = (m: ScriptedModel) => m.requests.filter((r) => r.method === 'POST');
/** Send `text` and wait until `m` answered it and the turn is over. */
async function ask(page: Page, text: string, m: ScriptedModel, timeout = 60_000): Promise<RecordedRequest> {
  const before = chats(m).length;
  await send(page, text);
  await expect.poll(() => chats(m).length, { timeout }).toBeGreaterThan(before);
  await page
    .getByText(/^(echo |The tool answered)/)
    .last()
    .waitFor({ timeout });
  await idle(page, timeout);
  return chats(m)[before]!;
}
const everything = (r: RecordedRequest) => JSON.stringify({ h: r.headers, b: r.body });

describe.skipIf(!haveChromium)('two providers side by side', () => {
  it('each connection sends only its own key, lists its models, is picked per conversation and remembered', async () => {
    const { page, errors, context } = await openApp(env);
    await page.getByRole('button', { name: 'Settings' }).click();
    await fillConnection(page, { name: 'Alpha', api: 'openai', endpoint: a.url, key: KEY_A, model: 'gpt-alpha-1' });
    await page.getByRole('textbox', { name: 'Extra header', exact: true }).fill('X-Title');
    await page.getByRole('textbox', { name: 'Value of the extra header' }).fill(HEADER_VALUE);
    await page.getByRole('button', { name: 'Add header' }).click();
    await expect.poll(() => page.getByRole('list', { name: 'Models of Alpha' }).innerText()).toContain('gpt-alpha-2');
    await page.getByRole('button', { name: 'Add connection' }).click();
    // the new connection's own fields, once drawn (until then the fields are the previous connection's)
    await expect.poll(() => page.getByRole('textbox', { name: 'Connection name' }).inputValue()).toBe('New connection');
    await fillConnection(page, {
      name: 'Beta',
      api: 'anthropic',
      endpoint: b.url,
      key: KEY_B,
      model: 'claude-beta-1',
    });
    await expect.poll(() => page.getByRole('list', { name: 'Models of Beta' }).innerText()).toContain('claude-beta-2');
    // Anthropic's Models API: x-api-key, anthropic-version and the browser-access header
    const list = b.requests.find((r) => r.method === 'GET' && r.path === '/v1/models')!;
    expect(list.headers['x-api-key']).toBe(KEY_B);
    expect(list.headers['anthropic-version']).toBeTruthy();
    expect(list.headers['anthropic-dangerous-direct-browser-access']).toBe('true');
    expect(a.requests.find((r) => r.method === 'GET')!.headers.authorization).toBe(`Bearer ${KEY_A}`);
    await page.getByRole('button', { name: 'Settings' }).click();

    // the system prompt, collapsed at the top of the conversation
    await page.locator('.conv-settings summary').click();
    await page.getByRole('textbox', { name: 'System prompt' }).fill('Answer like a pirate.');
    await page.getByRole('spinbutton', { name: 'Temperature' }).fill('0.5');
    await page.getByRole('spinbutton', { name: 'Max output tokens' }).fill('300');
    const menu = page.getByRole('combobox', { name: 'Model', exact: true });
    await menu.selectOption({ label: 'gpt-alpha-2' });
    const r1 = await ask(page, 'first question', a);
    expect(model(r1)).toBe('gpt-alpha-2');
    const sys1 = r1.body.messages[0];
    expect(sys1.role).toBe('system');
    expect(sys1.content.startsWith('Answer like a pirate.')).toBe(true);
    expect(sys1.content.length).toBeGreaterThan('Answer like a pirate.'.length + 20);
    expect(r1.body.temperature).toBe(0.5);
    expect(r1.body.max_tokens ?? r1.body.max_completion_tokens).toBe(300);
    expect(r1.headers['x-title']).toBe(HEADER_VALUE);
    // usage from the stream, per reply and in the header
    await expect.poll(() => page.locator('.conv-usage').innerText()).toMatch(/\d+ in · \d+ out/);

    // mid-conversation: the other provider, the same history
    await menu.selectOption({ label: 'claude-beta-2' });
    const r2 = await ask(page, 'second question', b);
    expect(model(r2)).toBe('claude-beta-2');
    expect(r2.body.system).toContain('Answer like a pirate.');
    expect(r2.body.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(r2.body.temperature).toBe(0.5);
    expect(r2.body.max_tokens).toBe(300);
    expect(r2.headers['x-title']).toBeUndefined();

    // attachments: a text file and an image, in Anthropic's blocks
    const attach = page.getByLabel('Attach files');
    await attach.setInputFiles([
      { name: 'notes.md', mimeType: 'text/markdown', buffer: Buffer.from('# Notes\nthe launch code is ORCHID') },
      { name: 'dot.png', mimeType: 'image/png', buffer: PNG },
    ]);
    await page.getByRole('group', { name: 'Attachment dot.png' }).waitFor();
    const r3 = await ask(page, 'look at these', b);
    const blocks = r3.body.messages.at(-1).content as { type: string; text?: string; source?: any }[];
    expect(blocks.some((x) => x.type === 'text' && x.text?.includes('ORCHID'))).toBe(true);
    const img = blocks.find((x) => x.type === 'image')!;
    expect(img.source).toEqual({ type: 'base64', media_type: 'image/png', data: PNG.toString('base64') });

    // the same in OpenAI's content parts
    await menu.selectOption({ label: 'gpt-alpha-1' });
    await attach.setInputFiles([
      { name: 'notes.md', mimeType: 'text/markdown', buffer: Buffer.from('# Notes\nthe launch code is ORCHID') },
      { name: 'dot.png', mimeType: 'image/png', buffer: PNG },
    ]);
    await page.getByRole('group', { name: 'Attachment dot.png' }).waitFor();
    const r4 = await ask(page, 'and again', a);
    expect(model(r4)).toBe('gpt-alpha-1');
    const parts = r4.body.messages.at(-1).content as { type: string; text?: string; image_url?: { url: string } }[];
    expect(parts.some((x) => x.type === 'text' && x.text?.includes('ORCHID'))).toBe(true);
    expect(parts.find((x) => x.type === 'image_url')!.image_url!.url).toBe(
      `data:image/png;base64,${PNG.toString('base64')}`,
    );
    // the earlier Anthropic turn's image went along in OpenAI's format too (the history is one)
    expect(r4.body.messages.filter((m: { role: string }) => m.role === 'user')).toHaveLength(4);

    // keys: each provider saw only its own (the peers also refuse any other with 401)
    for (const r of a.requests) expect(everything(r)).not.toContain(KEY_B);
    for (const r of b.requests) expect(everything(r)).not.toContain(KEY_A);
    for (const r of b.requests) expect(everything(r)).not.toContain(HEADER_VALUE);
    for (const r of chats(a)) expect(String(model(r))).toMatch(/^gpt-alpha-/);
    for (const r of chats(b)) expect(String(model(r))).toMatch(/^claude-beta-/);
    expect(rejectedHistories([a, b])).toEqual([]);

    // remembered: the conversation keeps its connection and model after a reload
    await page.reload();
    await ready(page);
    await expect
      .poll(() => menu.evaluate((s: HTMLSelectElement) => s.selectedOptions[0]?.textContent))
      .toBe('gpt-alpha-1');
    await expect.poll(() => page.locator('.conv-usage').innerText()).toMatch(/\d+ in · \d+ out/);
    expect(errors).toEqual([]);

    // a file handed to tools: the model sees a reference, csv-stats gets the content
    await attach.setInputFiles([{ name: 'prices.csv', mimeType: 'text/csv', buffer: Buffer.from(CSV) }]);
    await page
      .getByRole('group', { name: 'Attachment prices.csv' })
      .getByRole('checkbox', { name: 'Give this file to tools' })
      .check();
    const before = chats(a).length;
    await send(page, 'statistics of the prices please');
    await page.getByText('The tool answered.').waitFor({ timeout: 120_000 });
    await idle(page, 120_000);
    const after = chats(a).slice(before);
    expect(after.length).toBeGreaterThanOrEqual(2);
    // no row of the file in any model request (the tool's statistics, its result, may name values; not its rows)
    for (const r of [...a.requests, ...b.requests]) {
      expect(JSON.stringify(r.body ?? '')).not.toContain(`${CSV_MARK},4`);
      expect(JSON.stringify(r.body ?? '')).not.toContain('apple,2');
    }
    const call = after.at(-1)!.body.messages.find((m: { role: string; tool_calls?: unknown }) => m.tool_calls);
    expect(JSON.parse(call.tool_calls[0].function.arguments).csv).toMatch(/^attachment:[0-9a-f]{12}\/prices\.csv$/);
    expect(lastUserText(after[0]!.body)).toMatch(/attachment:[0-9a-f]{12}\/prices\.csv/);
    const result = after.at(-1)!.body.messages.find((m: { role: string }) => m.role === 'tool');
    // the tool read three rows and the price column's mean (2 + 4 + 6) / 3 = 4
    expect(result.content).toMatch(/"rows":\s*3/);
    expect(result.content).toMatch(/"mean":\s*4\b/);
    expect(rejectedHistories([a, b])).toEqual([]);
    await context.close();
  }, 300_000);

  it('exports connections and tools without any key, header value or secret, and imports them elsewhere', async () => {
    const { page, context } = await openApp(env);
    await page.getByRole('button', { name: 'Settings' }).click();
    await fillConnection(page, { name: 'Alpha', api: 'openai', endpoint: a.url, key: KEY_A, model: 'gpt-alpha-1' });
    await page.getByRole('textbox', { name: 'Extra header', exact: true }).fill('X-Title');
    await page.getByRole('textbox', { name: 'Value of the extra header' }).fill(HEADER_VALUE);
    await page.getByRole('button', { name: 'Add header' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /^Added header X-Title/ })
      .waitFor();
    await page.getByRole('textbox', { name: 'Secret name' }).fill('WEATHER_TOKEN');
    await page.getByRole('textbox', { name: 'Secret value' }).fill(SECRET_VALUE);
    await page.getByRole('button', { name: 'Save secret' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /^Saved WEATHER_TOKEN/ })
      .waitFor();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export connections and tools' }).click(),
    ]);
    const text = await readFile((await download.path())!, 'utf8');
    expect(text).toContain('Alpha');
    expect(text).toContain(a.url);
    expect(text).toContain('X-Title');
    for (const secret of [KEY_A, HEADER_VALUE, SECRET_VALUE, 'sk-openai']) expect(text).not.toContain(secret);
    await context.close();

    // another browser profile: the connection arrives without its key
    const other = await openApp(env);
    await other.page.getByRole('button', { name: 'Settings' }).click();
    await other.page.getByLabel('Import connections and tools').setInputFiles({
      name: 'tysandbox-settings.json',
      mimeType: 'application/json',
      buffer: Buffer.from(text),
    });
    await other.page
      .getByRole('status')
      .filter({ hasText: /^Imported 1 connections/ })
      .waitFor();
    await expect.poll(() => other.page.getByRole('textbox', { name: 'Connection name' }).inputValue()).toBe('Alpha');
    expect(await other.page.getByRole('textbox', { name: 'API key' }).inputValue()).toBe('');
    await other.context.close();
  }, 180_000);

  it('an openai-responses connection: its model list, a stateless history with a tool call and its output', async () => {
    const { page, context } = await openApp(env);
    await page.getByRole('button', { name: 'Settings' }).click();
    await page.getByRole('textbox', { name: 'Connection name' }).fill('Responses');
    await page.getByRole('combobox', { name: 'API', exact: true }).selectOption('openai-responses');
    await page.getByRole('textbox', { name: 'Endpoint URL' }).fill(c.url);
    await page.getByRole('textbox', { name: 'API key' }).fill(KEY_C);
    await page.getByRole('textbox', { name: /^Model / }).fill('gpt-resp-1');
    await page.getByRole('button', { name: 'Test connection' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /^Connected: 1 model/ })
      .waitFor();
    await page.getByRole('button', { name: 'Settings' }).click();
    await send(page, 'hello there');
    await page.getByText('echo from responses').waitFor();
    await idle(page);
    await send(page, 'statistics of x please');
    await page.getByText('The tool answered.').waitFor({ timeout: 120_000 });
    await idle(page, 120_000);
    const posts = chats(c);
    expect(posts.every((r) => r.path === '/v1/responses')).toBe(true);
    const last = posts.at(-1)!.body;
    expect(last.store).toBe(false);
    expect(last.model).toBe('gpt-resp-1');
    expect(String(last.instructions)).toContain('sandbox');
    const types = last.input.map((i: { type?: string; role?: string }) => i.type ?? i.role);
    expect(types.slice(-2)).toEqual(['function_call', 'function_call_output']);
    const output = last.input.at(-1).output as string;
    // csv-stats read the column x = 1, 3: its mean is 2
    expect(output).toMatch(/"mean":\s*2\b/);
    for (const r of c.requests) expect(r.headers.authorization).toBe(`Bearer ${KEY_C}`);
    expect(rejectedHistories([c])).toEqual([]);
    await context.close();
  }, 180_000);
});
