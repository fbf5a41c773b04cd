// The chat app in Chromium: a popup capability question of the built-in host tool show_page, asked inline at the call,
// against a scripted Anthropic-compatible server; test code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from './model-servers.mjs';
import { configure, haveChromium, idle, openApp, send, startEnv, type AppEnv } from './harness.js';

let env: AppEnv;
const models: ScriptedModel[] = [];

beforeAll(async () => {
  env = await startEnv();
}, 60_000);
afterAll(async () => {
  for (const m of models) await m.close();
  await env?.close();
});

type Block = { type: string; content?: string; is_error?: boolean };
function toolResults(body: { messages: { role: string; content: Block[] | string }[] }): Block[] {
  const last = body.messages[body.messages.length - 1]!;
  return Array.isArray(last.content) ? last.content.filter((b) => b.type === 'tool_result') : [];
}

describe.skipIf(!haveChromium)('chat app: popup capability questions inline', () => {
  it('asks popup(custom-html) inline at the show_page call; "Deny" gives the model E_CAPABILITY_DENIED and opens nothing, "Allow once" opens the page', async () => {
    const m = await startScriptedModel({
      kind: 'anthropic',
      script: (body) => {
        const [r] = toolResults(body);
        if (!r)
          return {
            text: 'Showing it.',
            toolCalls: [{ name: 'show_page', arguments: { html: '<h1>Hello from the tool</h1>' } }],
          };
        const v = JSON.parse(String(r.content));
        return { text: r.is_error ? `failed: ${v.error.code}` : `shown: ${v.target}` };
      },
    });
    models.push(m);
    const { page, context, errors } = await openApp(env);
    await configure(page, { api: 'anthropic', endpoint: m.url, model: 'claude-scripted', key: 'sk-test-not-real' });
    // Built in, not offered until the person switches it on.
    await page.getByRole('button', { name: 'Tools' }).click();
    await page.getByRole('checkbox', { name: 'Offer show_page to the model' }).check();
    await page.getByRole('button', { name: 'Tools' }).click();
    const popups: string[] = [];
    context.on('page', (p) => popups.push(p.url()));

    // Deny: the model receives the refusal as the tool's result; no window opens.
    await send(page, 'Show me a greeting.');
    const calls = page.getByRole('article', { name: 'Tool call show_page' });
    const first = calls.first().getByRole('group', { name: 'Approval needed' });
    await first.waitFor({ timeout: 60_000 });
    await expect(first.textContent()).resolves.toContain('custom HTML, no network');
    for (const name of ['Deny', 'Allow once'])
      await expect(first.getByRole('button', { name, exact: true }).isVisible()).resolves.toBe(true);
    expect(m.requests[0]!.body.tools.map((t: { name: string }) => t.name)).toContain('show_page');
    await first.getByRole('button', { name: 'Deny', exact: true }).click();
    await page.getByText('failed: E_CAPABILITY_DENIED').waitFor({ timeout: 60_000 });
    await idle(page);
    expect(toolResults(m.requests[1]!.body)[0]!.is_error).toBe(true);
    expect(popups).toEqual([]);

    // Allow once: the host opens its own window with the HTML in an opaque frame; the model gets { shown, target }.
    await send(page, 'Try again.');
    const second = calls.nth(1).getByRole('group', { name: 'Approval needed' });
    await second.waitFor({ timeout: 60_000 });
    const opened = page.waitForEvent('popup', { timeout: 30_000 });
    await second.getByRole('button', { name: 'Allow once', exact: true }).click();
    const popup = await opened;
    const frame = popup.locator('iframe');
    await frame.waitFor({ timeout: 30_000 });
    expect(await frame.getAttribute('sandbox')).toBe('allow-scripts');
    await popup
      .frameLocator('iframe')
      .getByRole('heading', { name: 'Hello from the tool' })
      .waitFor({ timeout: 30_000 });
    await page.getByText('shown: custom-html').waitFor({ timeout: 60_000 });
    await idle(page);
    expect(JSON.parse(String(toolResults(m.requests[3]!.body)[0]!.content))).toEqual({
      shown: true,
      target: 'custom-html',
    });
    expect(popups).toHaveLength(1);
    expect(errors.filter((e) => /Content Security Policy|pageerror/.test(e))).toEqual([]);
    await context.close();
  }, 180_000);
});
