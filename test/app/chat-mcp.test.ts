// The chat app with a remote MCP server in Chromium: added in settings by accessible name, its tool called by a
// scripted OpenAI-compatible model, approved inline, the answer shown; the list persisted; test code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from './model-servers.mjs';
import { configure, haveChromium, idle, lastToolMessages, openApp, send, startEnv, type AppEnv } from './harness.js';
import { closedUrl, startMcpFixture, type McpFixture } from '../browser/mcp-http-fixture.mjs';

let env: AppEnv;
let fx: McpFixture;
let m: ScriptedModel;
const TOKEN = 'Bearer mcp-app-93be1f4c07aa';

beforeAll(async () => {
  env = await startEnv();
  fx = await startMcpFixture({ token: TOKEN });
  m = await startScriptedModel({
    kind: 'openai',
    script: (body, n) => {
      if (n === 0)
        return { text: 'Asking the server.', toolCalls: [{ name: 'fx__echo', arguments: { text: 'from the model' } }] };
      const [result] = lastToolMessages(body);
      return { text: `The server said: ${String(result?.content)}` };
    },
  });
}, 60_000);
afterAll(async () => {
  await m?.close();
  await fx?.close();
  await env?.close();
});

describe.skipIf(!haveChromium)('chat app with a remote MCP server', () => {
  it('adds a server in settings (header kept as a secret), the model calls SERVER__TOOL, it is approved inline and the answer appears; the list persists and Remove removes it', async () => {
    const { page, context, requests } = await openApp(env);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'scripted-model' });
    await page.getByRole('button', { name: 'Settings' }).click();
    const section = page.getByRole('region', { name: 'MCP servers' });
    await section.getByRole('textbox', { name: 'Server name' }).fill('fx');
    await section.getByRole('textbox', { name: 'Server URL' }).fill(fx.url);
    await section.getByRole('textbox', { name: 'Header name' }).fill('Authorization');
    await section.getByRole('textbox', { name: 'Header value' }).fill(TOKEN);
    await section.getByRole('button', { name: 'Add server' }).click();
    await section
      .getByRole('status', { name: 'Connection state of fx' })
      .filter({ hasText: /^connected/ })
      .waitFor({ timeout: 15_000 });
    await expect(section.getByRole('list', { name: 'Tools of fx' }).textContent()).resolves.toContain('fx__echo');
    // the typed value is gone from the form and shown nowhere in the panel
    await expect(section.getByRole('textbox', { name: 'Header value' }).inputValue()).resolves.toBe('');
    await expect(page.getByRole('region', { name: 'Settings' }).textContent()).resolves.not.toContain('mcp-app-93be');
    // a server nobody answers at: its state says so
    await section.getByRole('textbox', { name: 'Server name' }).fill('offline');
    await section.getByRole('textbox', { name: 'Server URL' }).fill(await closedUrl());
    await section.getByRole('button', { name: 'Add server' }).click();
    await section
      .getByRole('status', { name: 'Connection state of offline' })
      .filter({ hasText: 'E_MCP_UNREACHABLE' })
      .waitFor({ timeout: 15_000 });
    if (process.env.TY_SCREENSHOT_DIR) {
      await section.getByRole('heading', { name: 'MCP servers' }).scrollIntoViewIfNeeded();
      await page.screenshot({ path: `${process.env.TY_SCREENSHOT_DIR}/app-mcp-settings.png` });
    }
    await section.getByRole('button', { name: 'Remove MCP server offline' }).click();
    await page.getByRole('button', { name: 'Settings' }).click();

    await send(page, 'Ask the echo server.');
    // asked inline, in the card of the running call
    const approval = page
      .getByRole('article', { name: 'Tool call fx__echo' })
      .getByRole('group', { name: 'Approval needed' });
    await expect(approval.textContent({ timeout: 30_000 })).resolves.toContain('fx/echo');
    await expect(approval.textContent()).resolves.not.toContain('mcp-app-93be');
    await approval.getByRole('button', { name: 'Allow once' }).click();
    await page.getByText('The server said: "echo: from the model"').waitFor({ timeout: 60_000 });
    await idle(page);
    await expect(
      page.getByRole('article', { name: 'Tool call fx__echo' }).getByLabel('Result').textContent(),
    ).resolves.toContain('echo: from the model');
    // the model was offered the tool under SERVER__TOOL with the server's schema; the token went to the MCP server only
    const offered = m.requests[0]!.body.tools.find(
      (t: { function: { name: string } }) => t.function.name === 'fx__echo',
    );
    expect(offered.function.parameters).toMatchObject({ properties: { text: { type: 'string' } } });
    expect(fx.calls).toContain('echo');
    expect(fx.authSeen).toContain(TOKEN);
    for (const r of requests) {
      const text = `${JSON.stringify(await r.allHeaders())} ${r.postData() ?? ''}`;
      if (text.includes('mcp-app-93be')) expect(r.url()).toBe(fx.url);
    }
    expect(JSON.stringify(m.requests)).not.toContain('mcp-app-93be');

    // persisted: after a reload the server is still configured (and its header still sent), then removed
    await page.reload();
    await page.waitForFunction(() => window.tyAppReady === true, undefined, { timeout: 30_000 });
    await page.getByRole('button', { name: 'Settings' }).click();
    await page
      .getByRole('region', { name: 'MCP servers' })
      .getByRole('status', { name: 'Connection state of fx' })
      .filter({ hasText: /^connected/ })
      .waitFor({ timeout: 15_000 });
    await page.getByRole('button', { name: 'Remove MCP server fx' }).click();
    await page
      .getByRole('list', { name: 'MCP servers' })
      .filter({ hasText: /^none$/ })
      .waitFor({ timeout: 10_000 });
    await page.reload();
    await page.waitForFunction(() => window.tyAppReady === true, undefined, { timeout: 30_000 });
    await page.getByRole('button', { name: 'Settings' }).click();
    await page
      .getByRole('list', { name: 'MCP servers' })
      .filter({ hasText: /^none$/ })
      .waitFor({ timeout: 10_000 });
    await context.close();
  });
});
