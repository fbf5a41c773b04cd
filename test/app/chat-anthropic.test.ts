// The chat app in Chromium against a scripted Anthropic-compatible streaming server: a fetch tool approved inline, the
// audit view and Revoke, a Python tool; test code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { startScriptedModel, type ScriptedModel } from './model-servers.mjs';
import { addTool, configure, haveChromium, idle, openApp, send, startEnv, TOOLS, type AppEnv } from './harness.js';

let env: AppEnv;
const models: ScriptedModel[] = [];
const KEY = 'sk-ant-test-77aa31-not-real';
/** Where the README screenshot is written (SCREENSHOT_DIR=docs to refresh the committed one). */
const SHOT_DIR = process.env.SCREENSHOT_DIR ?? join(tmpdir(), 'tysandbox-app-shots');

beforeAll(async () => {
  env = await startEnv();
  await mkdir(SHOT_DIR, { recursive: true });
}, 60_000);
afterAll(async () => {
  for (const m of models) await m.close();
  await env?.close();
});

/** Tool results (Anthropic tool_result blocks) of the last user message of a request. */
function toolResults(body: {
  messages: { role: string; content: { type: string; content?: string; is_error?: boolean; tool_use_id?: string }[] }[];
}) {
  const last = body.messages[body.messages.length - 1]!;
  return last.content.filter((b) => b.type === 'tool_result');
}

describe.skipIf(!haveChromium)('chat app with an Anthropic-compatible model', () => {
  it('asks inline at the fetch call; "Allow once" lets it through, the model gets the result; the audit shows the decisions; "Always allow" can be revoked', async () => {
    const m = await startScriptedModel({
      kind: 'anthropic',
      script: (body, n) => {
        const [r] = toolResults(body);
        if (!r) return { text: 'Checking the weather.', toolCalls: [{ name: 'weather', arguments: { city: 'Oslo' } }] };
        void n;
        const v = JSON.parse(String(r!.content));
        return {
          text: r!.is_error ? `failed: ${v.error.code}` : `It is ${v.report.temp} degrees in ${v.report.city}.`,
        };
      },
    });
    models.push(m);
    const { page, context } = await openApp(env);
    let fetched = 0;
    await context.route('https://data.example.org/**', async (route) => {
      fetched++;
      const city = new URL(route.request().url()).searchParams.get('city');
      await route.fulfill({
        status: 200,
        headers: { 'content-type': 'application/json', 'access-control-allow-origin': '*' },
        body: JSON.stringify({ city, temp: 21 }),
      });
    });
    await addTool(page, TOOLS.weather);
    await configure(page, { api: 'anthropic', endpoint: m.url, model: 'claude-scripted', key: KEY });
    await send(page, 'What is the weather in Oslo?');
    const call = page.getByRole('article', { name: 'Tool call weather' });
    const approval = call.getByRole('group', { name: 'Approval needed' });
    await approval.waitFor({ timeout: 60_000 });
    await expect(approval.textContent()).resolves.toContain('https://data.example.org');
    for (const name of ['Deny', 'Allow once', 'Allow for this session', 'Always allow'])
      await expect(approval.getByRole('button', { name, exact: true }).isVisible()).resolves.toBe(true);
    expect(fetched).toBe(0);
    await page.screenshot({ path: join(SHOT_DIR, 'chat-app.png') });
    await approval.getByRole('button', { name: 'Allow once' }).click();
    await page.getByText('It is 21 degrees in Oslo.').waitFor({ timeout: 60_000 });
    await idle(page);
    expect(fetched).toBe(1);
    expect(m.requests[0]!.headers['x-api-key']).toBe(KEY);
    expect(m.requests[0]!.body.tools.map((t: { name: string }) => t.name)).toContain('weather');
    const first = toolResults(m.requests[1]!.body)[0]!;
    expect(first.tool_use_id).toBe(
      m.requests[1]!.body.messages[m.requests[1]!.body.messages.length - 2].content.find(
        (b: { type: string }) => b.type === 'tool_use',
      ).id,
    );

    // Deny: the model gets the refusal as the tool's result.
    await send(page, 'Again?');
    await call.last().waitFor();
    const second = page
      .getByRole('article', { name: 'Tool call weather' })
      .nth(1)
      .getByRole('group', { name: 'Approval needed' });
    await second.getByRole('button', { name: 'Deny' }).click();
    await page.getByText('failed: E_CAPABILITY_DENIED').waitFor({ timeout: 60_000 });
    await idle(page);
    expect(fetched).toBe(1);

    // Always allow: stored permanently, listed in the audit view, revocable.
    await send(page, 'And once more?');
    await page
      .getByRole('article', { name: 'Tool call weather' })
      .nth(2)
      .getByRole('button', { name: 'Always allow' })
      .click();
    await page.getByText('It is 21 degrees in Oslo.').nth(1).waitFor({ timeout: 60_000 });
    await idle(page);
    await page.getByRole('button', { name: 'Audit' }).click();
    const audit = page.getByRole('region', { name: 'Audit' });
    const log = audit.getByRole('list', { name: 'Audit log' });
    await log.waitFor();
    const text = (await log.textContent()) ?? '';
    expect(text).toContain('fetch read https://data.example.org');
    expect(text).toMatch(/Allowed: fetch read https:\/\/data\.example\.org.*person \(answer "yes" \(once\)\)/);
    expect(text).toMatch(/Denied: fetch read https:\/\/data\.example\.org.*person \(answer "no"\)/);
    expect(text).not.toContain('Oslo'); // never arguments
    expect(text).not.toContain(KEY);
    const revoke = audit.getByRole('button', {
      name: /^Revoke fetch\(read:https:\/\/data\.example\.org\) for weather/,
    });
    await revoke.first().waitFor();
    await revoke.first().click();
    await audit.getByText('No remembered decisions.').waitFor();
    await page.getByRole('button', { name: 'Audit' }).click();
    // After Revoke the next use is asked again.
    await send(page, 'Last time?');
    await page
      .getByRole('article', { name: 'Tool call weather' })
      .nth(3)
      .getByRole('group', { name: 'Approval needed' })
      .waitFor({ timeout: 60_000 });
    await page.getByRole('button', { name: 'Stop' }).click();
    await idle(page);
    await context.close();
  }, 240_000);

  it('runs a Python tool in Pyodide, with a progress bar while Pyodide loads', async () => {
    const m = await startScriptedModel({
      kind: 'anthropic',
      script: (body, n) =>
        n === 0
          ? { toolCalls: [{ name: 'py-sum', arguments: { numbers: [1, 2, 3.5] } }] }
          : { text: `Python says ${JSON.parse(String(toolResults(body)[0]!.content)).sum}` },
    });
    models.push(m);
    const { page, context } = await openApp(env);
    await addTool(page, TOOLS.pySum);
    await configure(page, { api: 'anthropic', endpoint: m.url, model: 'claude-scripted' });
    await send(page, 'sum 1, 2 and 3.5 in python');
    // While Pyodide loads (fetch, verify, start in the sandbox) a labelled progress bar is shown; it goes away with the
    // result.
    const bar = page.getByRole('progressbar', { name: 'Loading Python (Pyodide)' });
    await bar.waitFor({ timeout: 120_000 });
    await page.getByText('Python says 6.5').waitFor({ timeout: 180_000 });
    await bar.waitFor({ state: 'hidden', timeout: 30_000 });
    await idle(page);
    await expect(
      page.getByRole('article', { name: 'Tool call py-sum' }).getByLabel('Result').textContent(),
    ).resolves.toMatch(/"python": "3\.\d+/);
    await context.close();
  }, 240_000);
});
