// The Tools panel's warning for fetch origins the host always refuses, the Audit view naming the decision that
// mattered, and the Python progress bar only in the call that starts Python, in Chromium; test code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from './model-servers.mjs';
import {
  addTool,
  configure,
  haveChromium,
  idle,
  openApp,
  ready,
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

describe.skipIf(!haveChromium)('tools panel warnings and the audit view', () => {
  it('flags a loopback fetch origin at add time; the call is refused by the same rule; the audit reads denied', async () => {
    const origin = `https://127.0.0.1:${env.server.port}`;
    const m = await startScriptedModel({
      kind: 'openai',
      script: (body, n) => {
        const last = body.messages.at(-1);
        if (last.role === 'tool') return { text: `tool said ${last.content}` };
        return n % 2 === 0 || String(last.content).includes('local')
          ? {
              toolCalls: [
                { name: String(last.content).includes('local') ? 'local' : 'weather', arguments: { city: 'Oslo' } },
              ],
            }
          : { text: '?' };
      },
    });
    models.push(m);
    const { page, context } = await openApp(env);
    await page.route('https://data.example.org/**', (r) => r.fulfill({ contentType: 'application/json', body: '{}' }));
    await page.getByRole('button', { name: 'Tools' }).click();
    await page.getByRole('textbox', { name: 'Tool manifest (JSON)' }).fill(
      JSON.stringify({
        ...TOOLS.weather,
        name: 'local',
        capabilities: { fetch: [{ origin, access: 'read' }] },
        execution: {
          kind: 'sandboxed-code',
          runtime: 'javascript',
          source: `export default async () => (await fetch(${JSON.stringify(`${origin}/x`)})).status;`,
        },
      }),
    );
    await page.getByRole('button', { name: 'Add tool' }).click();
    const status = page.getByRole('status').filter({ hasText: /^Added local/ });
    await status.waitFor();
    await expect(status.textContent()).resolves.toContain(
      'Warning: tools cannot reach 127.0.0.1: a request there is always refused (127.0.0.1 is a loopback address)',
    );
    await page
      .getByRole('article', { name: 'local' })
      .getByRole('note')
      .filter({ hasText: 'tools cannot reach 127.0.0.1' })
      .waitFor();
    await page.getByRole('button', { name: 'Tools' }).click();
    await addTool(page, TOOLS.weather);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
    await send(page, 'call local');
    await page.getByText(/^tool said .*E_FETCH_TARGET/).waitFor({ timeout: 60_000 });
    await idle(page);
    await expect(
      page.getByRole('article', { name: 'Tool call local' }).getByRole('status').first().textContent(),
    ).resolves.toBe('denied');
    // a call the gate allowed whose fetch the person then denied
    await send(page, 'weather');
    const q = page.getByRole('article', { name: 'Tool call weather' }).getByRole('group', { name: 'Approval needed' });
    await q.getByRole('button', { name: 'Deny' }).click();
    await page.getByText(/^tool said .*E_CAPABILITY_DENIED/).waitFor({ timeout: 60_000 });
    await idle(page);
    await page.getByRole('button', { name: 'Audit' }).click();
    const log = page.getByRole('list', { name: 'Audit log' });
    await log.waitFor();
    const entries = await log.getByRole('listitem').allTextContents();
    const weather = entries.find((e) => e.includes('weather @') && /Denied: call:/.test(e));
    expect(weather).toMatch(/Denied: call: fetch read https:\/\/data\.example\.org denied/);
    expect(weather).toContain('person (answer "no")');
    const local = entries.find((e) => e.includes('local @') && /Denied: call:/.test(e));
    expect(local).toContain('refused by the fetch rules (E_FETCH_TARGET)');
    // no line of the log reads "allow ... error" any more for these calls
    expect(entries.filter((e) => /^\S+Allowed, then failed/.test(e) && /weather|local/.test(e))).toEqual([]);
    await context.close();
  }, 180_000);

  it('the Python progress bar appears only in the card of the call that starts Python, never for the background download', async () => {
    const m = await startScriptedModel({
      kind: 'openai',
      script: (body) =>
        body.messages.at(-1).role === 'tool'
          ? { text: `python: ${body.messages.at(-1).content}` }
          : { toolCalls: [{ name: 'py-sum', arguments: { numbers: [1, 2] } }] },
    });
    models.push(m);
    const { page, context } = await openApp(env);
    await addTool(page, TOOLS.pySum);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
    // a reload starts the background download (a Python tool is offered): no bar in the conversation for it
    await page.reload();
    await ready(page);
    await page.waitForTimeout(1500);
    await expect(page.getByRole('progressbar').count()).resolves.toBe(0);
    await send(page, 'sum');
    const call = page.getByRole('article', { name: 'Tool call py-sum' });
    await call.getByRole('progressbar', { name: 'Loading Python (Pyodide)' }).waitFor({ timeout: 120_000 });
    await expect(page.getByRole('progressbar').count()).resolves.toBe(1);
    await page.getByText(/^python: .*"sum":3/).waitFor({ timeout: 180_000 });
    await idle(page);
    await expect(page.getByRole('progressbar').count()).resolves.toBe(0);
    await page.getByRole('button', { name: 'New conversation' }).click();
    await page.waitForTimeout(500);
    await expect(page.getByRole('progressbar').count()).resolves.toBe(0);
    await context.close();
  }, 300_000);
});
