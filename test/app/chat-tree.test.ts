// The chat app's conversation tree in Chromium: edit makes a branch, branches navigate, reload restores them, a
// conversation-defined tool stays in its branch, export/import, the tools panel; test code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadManifestFile } from '../../node/manifest/file.js';
import { revisionId } from '../../core/revisions/registry.js';
import { parseManifest } from '../../core/manifest/parse.js';
import { shortId } from '../../core/revisions/refs.js';
import { startScriptedModel, type ScriptedModel } from './model-servers.mjs';
import {
  configure,
  haveChromium,
  idle,
  lastToolMessages,
  openApp,
  send,
  startEnv,
  TOOLS,
  type AppEnv,
} from './harness.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
let env: AppEnv;
let m: ScriptedModel;
const KEY = 'sk-tree-test-0b5e-not-real';

/** The scripted model answers "echo: <last user text>" and calls the tool named in a "call NAME" message. */
beforeAll(async () => {
  env = await startEnv();
  m = await startScriptedModel({
    kind: 'openai',
    script: (body) => {
      const last = body.messages[body.messages.length - 1];
      if (last.role === 'tool') return { text: `tool said ${last.content}` };
      const call = /^call (\S+)/.exec(String(last.content));
      if (call) return { toolCalls: [{ name: call[1]!, arguments: { text: 'quiet' } }] };
      return { text: `echo: ${last.content}` };
    },
  });
}, 60_000);
afterAll(async () => {
  await m?.close();
  await env?.close();
});

const toolNames = (n: number) =>
  (m.requests[n]!.body.tools ?? []).map((t: { function: { name: string } }) => t.function.name) as string[];

describe.skipIf(!haveChromium)('chat app conversation tree', () => {
  it('edit and resend makes a sibling branch; branches are navigable; a reload restores the tree and the selected branch', async () => {
    const { page, context } = await openApp(env);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm', key: KEY });
    await send(page, 'first question');
    await page.getByText('echo: first question').waitFor();
    await idle(page);
    await send(page, 'follow-up');
    await page.getByText('echo: follow-up').waitFor();
    await idle(page);
    // Edit the first message: a new branch under the same parent.
    await page.getByRole('article', { name: 'You' }).first().getByRole('button', { name: 'Edit' }).click();
    await expect(page.getByRole('textbox', { name: 'Message' }).inputValue()).resolves.toBe('first question');
    await page.getByRole('textbox', { name: 'Message' }).fill('second question');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText('echo: second question').waitFor();
    await idle(page);
    await expect(page.getByText('echo: follow-up').count()).resolves.toBe(0);
    const nav = page.getByRole('article', { name: 'You' }).first();
    await expect(nav.getByText('2 / 2').isVisible()).resolves.toBe(true);
    // The model saw the new branch only.
    const last = m.requests[m.requests.length - 1]!.body.messages.map((x: { content: unknown }) => x.content);
    expect(last).toContain('second question');
    expect(last).not.toContain('first question');
    await nav.getByRole('button', { name: 'Previous branch' }).click();
    await page.getByText('echo: follow-up').waitFor();
    await expect(nav.getByText('1 / 2').isVisible()).resolves.toBe(true);
    // Reload: the same tree, the same selected branch.
    await page.reload();
    await page.waitForFunction(() => window.tyAppReady === true);
    await page.getByText('echo: follow-up').waitFor();
    await expect(page.getByText('echo: first question').isVisible()).resolves.toBe(true);
    const after = page.getByRole('article', { name: 'You' }).first();
    await expect(after.getByText('1 / 2').isVisible()).resolves.toBe(true);
    await after.getByRole('button', { name: 'Next branch' }).click();
    await page.getByText('echo: second question').waitFor();
    // Export holds every branch and never the key; import makes a new conversation with the same tree.
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Export' }).click();
    const file = await (await download).path();
    const text = await readFile(file, 'utf8');
    expect(text).not.toContain(KEY);
    const doc = JSON.parse(text);
    expect(doc.format).toBe('tysandbox-conversation');
    const messages = doc.tasks
      .filter((t: { content: { type: string } }) => t.content.type === 'message')
      .map((t: { content: { text: string } }) => t.content.text);
    expect(messages).toEqual(
      expect.arrayContaining(['first question', 'follow-up', 'second question', 'echo: second question']),
    );
    const fresh = await openApp(env);
    await fresh.page.getByLabel('Import').setInputFiles(file);
    await fresh.page.getByText('echo: second question').waitFor();
    await expect(fresh.page.getByRole('article', { name: 'You' }).first().getByText('2 / 2').isVisible()).resolves.toBe(
      true,
    );
    // A tampered export is refused whole.
    const bad = JSON.parse(text);
    bad.tasks[1].content.text = 'changed';
    await fresh.page
      .getByLabel('Import')
      .setInputFiles({ name: 'bad.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(bad)) });
    await fresh.page.getByText(/Import failed: task 1 .* does not match its content/).waitFor();
    await fresh.context.close();
    await context.close();
  }, 240_000);

  it('a tool defined in the conversation is offered and runs only after its definition in its branch, and is never installed', async () => {
    const { page, context } = await openApp(env);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
    await send(page, 'hello');
    await page.getByText('echo: hello').waitFor();
    await idle(page);
    await page.getByRole('button', { name: 'Tools' }).click();
    await page.getByRole('textbox', { name: 'Tool manifest (JSON)' }).fill(JSON.stringify(TOOLS.shout));
    await page.getByRole('button', { name: 'Define in this conversation' }).click();
    await page.getByRole('status').filter({ hasText: 'shout is defined in this conversation' }).waitFor();
    await expect(
      page.getByRole('region', { name: 'Tools' }).getByRole('article', { name: 'shout' }).count(),
    ).resolves.toBe(0);
    await page.getByRole('button', { name: 'Tools' }).click();
    await page.getByRole('article', { name: 'Tool defined in this conversation: shout' }).waitFor();
    const before = m.requests.length;
    await send(page, 'call shout');
    await page.getByText('tool said {"shouted":"QUIET!"}').waitFor();
    await idle(page);
    expect(toolNames(before)).toContain('shout');
    expect(lastToolMessages(m.requests[before + 1]!.body)).toHaveLength(1);
    // Another branch (edit the first message) does not see it; calling it there is an unknown tool.
    await page.getByRole('article', { name: 'You' }).first().getByRole('button', { name: 'Edit' }).click();
    await page.getByRole('textbox', { name: 'Message' }).fill('call shout');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText(/tool said .*E_UNKNOWN_TOOL/).waitFor();
    await idle(page);
    const other = m.requests.length - 2;
    expect(toolNames(other)).not.toContain('shout');
    expect(toolNames(other)).toContain('text-stats');
    await context.close();
  }, 240_000);

  it('tools panel: edit the source into a new revision shown as a diff, activate it, switch a tool off for the model, remove it', async () => {
    const { page, context } = await openApp(env);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
    await page.getByRole('button', { name: 'Tools' }).click();
    const panel = page.getByRole('region', { name: 'Tools' });
    // The built-in examples show the revision ids `tycli tool add tools/NAME/manifest.json` gives.
    for (const name of ['csv-stats', 'json-reshape', 'text-stats']) {
      const rev = await revisionId(parseManifest(await loadManifestFile(join(ROOT, 'tools', name, 'manifest.json'))));
      await expect(panel.getByRole('article', { name }).getByRole('heading').textContent()).resolves.toContain(
        `@${shortId(rev)}`,
      );
    }
    await panel.getByRole('textbox', { name: 'Tool manifest (JSON)' }).fill(JSON.stringify(TOOLS.shout));
    await panel.getByRole('button', { name: 'Add tool' }).click();
    const card = panel.getByRole('article', { name: 'shout' });
    await card.waitFor();
    await expect(card.textContent()).resolves.toContain('Requests no capabilities');
    const oldRev = (await card.getByRole('heading').textContent())!.match(/@(\w+)/)![1];
    await card.getByRole('button', { name: 'Edit source' }).click();
    const src = card.getByRole('textbox', { name: 'Source of shout' });
    await src.fill((await src.inputValue()).replace('"!"', '"!!!"'));
    await card.getByRole('button', { name: 'Save as new revision' }).click();
    const diff = card.getByLabel(/^Changes in shout/);
    await diff.waitFor();
    await expect(diff.textContent()).resolves.toMatch(
      /^- export default .*"!" \}\);\n\+ export default .*"!!!" \}\);\n$/,
    );
    await card.getByRole('button', { name: 'Activate', exact: true }).click();
    await panel
      .getByRole('status')
      .filter({ hasText: /now runs revision/ })
      .waitFor();
    const newRev = (await panel.getByRole('article', { name: 'shout' }).getByRole('heading').textContent())!.match(
      /@(\w+)/,
    )![1];
    expect(newRev).not.toBe(oldRev);
    await page.getByRole('button', { name: 'Tools' }).click();
    const before = m.requests.length;
    await send(page, 'call shout');
    await page.getByText('tool said {"shouted":"QUIET!!!"}').waitFor();
    await idle(page);
    // Switch text-stats off, remove shout: neither is offered any more.
    await page.getByRole('button', { name: 'Tools' }).click();
    await panel.getByRole('checkbox', { name: 'Offer text-stats to the model' }).uncheck();
    await panel.getByRole('article', { name: 'shout' }).getByRole('button', { name: 'Remove' }).click();
    await panel.getByRole('button', { name: 'Remove shout' }).click();
    await panel.getByRole('status').filter({ hasText: 'Removed shout.' }).waitFor();
    await page.getByRole('button', { name: 'Tools' }).click();
    await send(page, 'plain question');
    await page.getByText('echo: plain question').waitFor();
    await idle(page);
    expect(toolNames(before)).toContain('shout');
    expect(toolNames(m.requests.length - 1)).toEqual(['csv-stats', 'json-reshape']);
    await context.close();
  }, 240_000);

  it('URL parameters point this visit at an endpoint (never a key), and a tool is added from manifest files', async () => {
    const q = `?api=openai&endpoint=${encodeURIComponent(m.url)}&model=from-url&key=sk-in-url-not-used&apiKey=sk-in-url-not-used`;
    const { page, context, requests } = await openApp(env, q);
    // connections hold saved endpoints; a link names one for this visit only: the Model menu shows it, nothing is saved
    const menu = page.getByRole('combobox', { name: 'Model', exact: true });
    await expect(menu.evaluate((s: HTMLSelectElement) => s.selectedOptions[0]?.textContent)).resolves.toBe('from-url');
    await expect(
      menu.evaluate(
        (s: HTMLSelectElement) => (s.selectedOptions[0]?.parentElement as HTMLOptGroupElement | null)?.label,
      ),
    ).resolves.toContain('(from the link, this visit)');
    await page.getByText(/This page was opened with a link that sends this visit's messages to/).waitFor();
    await page.getByRole('button', { name: 'Settings' }).click();
    await expect(page.getByRole('textbox', { name: 'Endpoint URL' }).inputValue()).resolves.toBe('');
    await expect(page.getByRole('textbox', { name: 'API key' }).inputValue()).resolves.toBe('');
    await expect(page.getByRole('textbox', { name: 'Allowed embedding origins' }).inputValue()).resolves.toBe('');
    await page.getByRole('button', { name: 'Settings' }).click();
    // A manifest.json naming its source file, chosen together with it.
    const dir = await mkdtemp(join(tmpdir(), 'tysandbox-app-tool-'));
    const { execution, ...rest } = TOOLS.shout;
    await writeFile(
      join(dir, 'manifest.json'),
      JSON.stringify({
        ...rest,
        name: 'shout-file',
        execution: { kind: execution.kind, runtime: execution.runtime, sourceFile: 'index.mjs' },
      }),
    );
    await writeFile(join(dir, 'index.mjs'), execution.source.replace('"!"', '"?"'));
    await page.getByRole('button', { name: 'Tools' }).click();
    await page.getByLabel('Manifest files').setInputFiles([join(dir, 'manifest.json'), join(dir, 'index.mjs')]);
    await page.getByRole('button', { name: 'Add tool' }).click();
    await page.getByRole('region', { name: 'Tools' }).getByRole('article', { name: 'shout-file' }).waitFor();
    // a source that imports another file: refused, saying how to bundle it for the app
    await writeFile(
      join(dir, 'multi.json'),
      JSON.stringify({
        ...rest,
        name: 'multi-file',
        execution: { kind: execution.kind, runtime: execution.runtime, sourceFile: 'multi.mjs' },
      }),
    );
    await writeFile(
      join(dir, 'multi.mjs'),
      "import { twice } from './lib.mjs';\nexport default async () => twice(1);\n",
    );
    await page.getByLabel('Manifest files').setInputFiles([join(dir, 'multi.json'), join(dir, 'multi.mjs')]);
    await page.getByRole('button', { name: 'Add tool' }).click();
    await page.getByRole('status').filter({ hasText: 'the source imports "./lib.mjs"' }).waitFor();
    await expect(page.getByRole('status').filter({ hasText: 'the source imports' }).textContent()).resolves.toContain(
      'tycli tool add FOLDER',
    );
    await page.getByRole('button', { name: 'Tools' }).click();
    const before = m.requests.length;
    await send(page, 'call shout-file');
    await page.getByText('tool said {"shouted":"QUIET?"}').waitFor();
    await idle(page);
    expect(m.requests[before]!.body.model).toBe('from-url');
    expect(m.requests[before]!.headers.authorization).toBeUndefined();
    for (const r of requests)
      expect(`${r.url()} ${r.postData() ?? ''}`.replace(/[?&](key|apiKey)=sk-in-url-not-used/g, '')).not.toContain(
        'sk-in-url-not-used',
      );
    await context.close();
  }, 240_000);
});
