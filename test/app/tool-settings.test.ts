// The chat app in Chromium: a tool's settings form in the tools panel (host.tools), persisted in IndexedDB, read by the
// tool as ctx.settings; test code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
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

const CONV = {
  name: 'conv',
  description: 'Reports the settings it runs with.',
  parameters: { type: 'object', properties: {}, additionalProperties: false },
  settings: {
    type: 'object',
    properties: {
      units: {
        type: 'string',
        enum: ['metric', 'imperial'],
        default: 'metric',
        description: 'Unit system of the results',
      },
      digits: { type: 'integer', minimum: 0, maximum: 6, default: 2 },
      baseUrl: { type: 'string', format: 'uri' },
    },
    additionalProperties: false,
  },
  execution: {
    kind: 'sandboxed-code',
    runtime: 'javascript',
    source: 'export default async (a, ctx) => ({ settings: ctx.settings, frozen: Object.isFrozen(ctx.settings) });',
  },
};

describe.skipIf(!haveChromium)('chat app: tool settings', () => {
  it("the tools panel edits a tool's settings by accessible names; invalid values are refused; the call runs with them; they survive a reload", async () => {
    const m = await startScriptedModel({
      kind: 'openai',
      script: (body, n) => {
        if (n === 0) return { text: 'Checking.', toolCalls: [{ name: 'conv', arguments: {} }] };
        const r = JSON.parse(String(lastToolMessages(body)[0]!.content));
        return { text: `units=${r.settings.units} digits=${r.settings.digits} frozen=${r.frozen}` };
      },
    });
    models.push(m);
    const { page, context, errors } = await openApp(env);
    await addTool(page, CONV);
    await page.getByRole('button', { name: 'Tools' }).click();
    const form = page.getByRole('form', { name: 'Settings of conv' });
    await form.waitFor();
    await expect(form.textContent()).resolves.toContain('No settings stored for this revision: defaults apply.');
    await form.getByRole('combobox', { name: 'units (conv)' }).selectOption({ label: 'imperial' });
    // Outside the schema's range: refused, nothing stored.
    await form.getByRole('spinbutton', { name: 'digits (conv)' }).fill('9');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /^Settings not saved: E_INVALID_SETTINGS: .*digits/ })
      .waitFor();
    await form.getByRole('spinbutton', { name: 'digits (conv)' }).fill('4');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /^Saved the settings of conv @\w+: settings revision @\w+\.$/ })
      .waitFor();
    await expect(form.textContent()).resolves.toMatch(/Settings revision @\w{12}/);
    await page.screenshot({ path: join(tmpdir(), 'tysandbox-tool-settings.png'), fullPage: true });
    await page.getByRole('button', { name: 'Tools' }).click();

    await configure(page, { api: 'openai', endpoint: m.url, model: 'scripted-model', key: 'sk-test-not-real' });
    await send(page, 'Which settings?');
    await page.getByText('units=imperial digits=4 frozen=true').waitFor({ timeout: 60_000 });
    await idle(page);

    // The settings revision was pinned into the call's task, and the audit trail has the change.
    const host = (await dumpIndexedDb(page, ['tysandbox'])).map((r) => `${r.store} ${r.key} ${r.text}`).join('\n');
    const pinned = /"type":"functioncall"[^\n]*"settingsRevision":"(b[a-z2-7]+)"/.exec(host.replace(/\\"/g, '"'));
    expect(pinned, 'a function-call task with settingsRevision').not.toBeNull();
    expect(host.replace(/\\"/g, '"')).toContain(`"kind":"settings"`);

    // Persisted: after a reload the form shows the stored values and the same settings revision.
    await page.reload();
    await page.waitForFunction(() => window.tyAppReady === true, undefined, { timeout: 30_000 });
    await page.getByRole('button', { name: 'Tools' }).click();
    const again = page.getByRole('form', { name: 'Settings of conv' });
    await again.waitFor();
    await expect(again.getByRole('spinbutton', { name: 'digits (conv)' }).inputValue()).resolves.toBe('4');
    await expect(again.getByRole('combobox', { name: 'units (conv)' }).inputValue()).resolves.toBe('"imperial"');
    await expect(again.textContent()).resolves.toContain(`@${pinned![1]!.slice(9, 21)}`);
    expect(errors.filter((e) => /Content Security Policy|pageerror/.test(e))).toEqual([]);
    await context.close();
  }, 180_000);
});
