// The chat app in Chromium: choosing a tool's JavaScript engine in the tools panel (quickjs or node, part of the
// revision), a quickjs tool called by the model, a memory bomb leaving the page working; axe-clean at two viewports in
// light and dark, with screenshots; test code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { AxeBuilder } from '@axe-core/playwright';
import { startScriptedModel, type ScriptedModel } from './model-servers.mjs';
import {
  addTool,
  configure,
  haveChromium,
  idle,
  lastToolMessages,
  openApp,
  send,
  startEnv,
  type AppEnv,
} from './harness.js';

/** Where the screenshots go (TY_SCREENSHOT_DIR=docs refreshes the committed ones). */
const SHOT_DIR = process.env.TY_SCREENSHOT_DIR ?? join(tmpdir(), 'tysandbox-shots');
let env: AppEnv;
const models: ScriptedModel[] = [];

beforeAll(async () => {
  mkdirSync(SHOT_DIR, { recursive: true });
  env = await startEnv();
}, 60_000);
afterAll(async () => {
  for (const m of models) await m.close();
  await env?.close();
});

const WORDS = {
  name: 'words',
  description: 'Counts the words of a text.',
  parameters: {
    type: 'object',
    properties: { text: { type: 'string' } },
    required: ['text'],
    additionalProperties: false,
  },
  execution: {
    kind: 'sandboxed-code',
    runtime: 'javascript',
    source:
      "export default async ({ text }) => ({ words: [...new Intl.Segmenter('en', { granularity: 'word' }).segment(text)]" +
      ".filter((s) => s.isWordLike).length, engine: typeof process === 'undefined' ? 'no process' : 'process' });",
  },
};
const BOMB = {
  name: 'bomb',
  description: 'Allocates without end.',
  parameters: { type: 'object', properties: {}, additionalProperties: false },
  execution: {
    kind: 'sandboxed-code',
    runtime: 'javascript',
    engine: 'quickjs',
    source: 'export default async () => { const a = []; for (;;) a.push(new Array(1e6).fill(1)); };',
  },
  limits: { memoryMb: 32 },
};

describe.skipIf(!haveChromium)('chat app: the JavaScript engine of a tool', () => {
  it('adds a tool on quickjs from the panel, runs it, survives a memory bomb, and moves a tool to quickjs as a new revision', async () => {
    const m = await startScriptedModel({
      kind: 'openai',
      script: (body, n) => {
        if (n === 0) return { text: 'Counting.', toolCalls: [{ name: 'words', arguments: { text: 'one two three' } }] };
        if (n === 1) return { text: `result ${String(lastToolMessages(body)[0]!.content)}` };
        if (n === 2) return { text: 'Trying.', toolCalls: [{ name: 'bomb', arguments: {} }] };
        if (n === 3) return { text: `bomb ${String(lastToolMessages(body)[0]!.content).slice(0, 120)}` };
        if (n === 4) return { text: 'Again.', toolCalls: [{ name: 'words', arguments: { text: 'still here' } }] };
        return { text: `after ${String(lastToolMessages(body)[0]!.content)}` };
      },
    });
    models.push(m);
    const { page, errors } = await openApp(env);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'scripted' });
    // Add "words" choosing quickjs in the panel (the manifest names no engine).
    await page.getByRole('button', { name: 'Tools' }).click();
    await page.getByRole('textbox', { name: 'Tool manifest (JSON)' }).fill(JSON.stringify(WORDS));
    await page.getByRole('combobox', { name: 'JavaScript engine' }).selectOption('quickjs');
    await page.getByRole('button', { name: 'Add tool' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /^Added words/ })
      .waitFor();
    const card = page.getByRole('article', { name: 'words' });
    await expect(card.getByRole('heading').textContent()).resolves.toMatch(/javascript on quickjs/);
    await expect(card.getByRole('combobox', { name: 'Engine of words' }).inputValue()).resolves.toBe('quickjs');
    await page.getByRole('button', { name: 'Tools' }).click();
    await addTool(page, BOMB);

    await send(page, 'count');
    await idle(page);
    await page.getByText('result {"words":3,"engine":"no process"}').waitFor();
    await send(page, 'bomb');
    await idle(page);
    await page
      .getByText(/^bomb .*E_MEMORY_LIMIT/)
      .first()
      .waitFor();
    await send(page, 'again');
    await idle(page);
    await page.getByText('after {"words":2,"engine":"no process"}').waitFor();

    // Move "words" back to node: a new revision, stored, then activated from the card.
    await page.getByRole('button', { name: 'Tools' }).click();
    await card.getByRole('combobox', { name: 'Engine of words' }).selectOption('node');
    await card.getByRole('button', { name: 'Save on this engine' }).click();
    await card.getByRole('button', { name: 'Activate words on node' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /^words now runs revision @\w+ on node/ })
      .waitFor();
    await expect(page.getByRole('article', { name: 'words' }).getByRole('heading').textContent()).resolves.toMatch(
      /javascript on node/,
    );
    // no CSP violation and no page error (the one 404 every app test sees is the browser's favicon request)
    expect(errors.filter((e) => /Content Security Policy|pageerror/.test(e))).toEqual([]);
  });

  for (const [w, h] of [
    [1280, 800],
    [390, 844],
  ] as const)
    for (const scheme of ['light', 'dark'] as const)
      it(`the tools panel with the engine choice is axe-clean at ${w}x${h}, ${scheme}`, async () => {
        const context = await env.browser.newContext({ viewport: { width: w, height: h }, colorScheme: scheme });
        const { page } = await openApp(env, '', context);
        try {
          await addTool(page, { ...WORDS, execution: { ...WORDS.execution, engine: 'quickjs' } });
          await page.getByRole('button', { name: 'Tools' }).click();
          await page.getByRole('combobox', { name: 'Engine of words' }).waitFor();
          const axe = await new AxeBuilder({ page }).analyze();
          expect(axe.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual(
            [],
          );
          await page.getByRole('combobox', { name: 'Engine of words' }).scrollIntoViewIfNeeded();
          await page.screenshot({ path: join(SHOT_DIR, `app-tool-engine-${w}x${h}-${scheme}.png`) });
        } finally {
          await context.close();
        }
      });
});
