// Rendered answers in Chromium: markdown with hostile fixtures leaves nothing outside the allow-list and triggers no
// CSP or Trusted Types violation; links, images after a click, highlighted code with Copy, streaming by block, inert
// tool output; test code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from './model-servers.mjs';
import {
  addTool,
  configure,
  haveChromium,
  idle,
  openApp,
  rejectedHistories,
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

/** Hostile markdown: every way an answer could try to become script, a tracking request or a misleading link. */
export const HOSTILE = [
  '# Hostile fixtures',
  '[js](javascript:alert(1)) [JS](JaVaScRiPt:alert(2)) [tab](java\tscript:alert(3)) [ent](&#106;avascript:alert(4))',
  '[vb](vbscript:msgbox(1)) [data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==) [rel](/etc/passwd)',
  '<a href="javascript:alert(5)">raw a</a> <script>alert(6)</script> <img src=x onerror=alert(7)>',
  '<svg><script>alert(8)</script></svg> <iframe src="javascript:alert(9)"></iframe> <details open ontoggle=alert(10)>',
  '![svg](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+) ![http](http://img.example.org/t.png)',
  '![quote](https://img.example.org/a.png"onerror="alert(11)) <javascript:alert(12)> <http://a.example/"onmouseover="x>',
  '[ref][evil]\n\n[evil]: javascript:alert(13)',
  '**_[nested](https://example.org "t" onmouseover="alert(14)")',
  '| a | b |\n|---|---|\n| <b onclick=alert(15)>x</b> | `<i>` |',
  '- [ ] <input onfocus=alert(16) autofocus>\n- [x] done',
  '>>>>>>>> deep quote',
  '`unclosed code',
  '```html\n<script>alert(17)</script>\n',
].join('\n\n');

const TAGS = new Set([
  ...['P', 'BR', 'HR', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'BLOCKQUOTE', 'UL', 'OL', 'LI', 'STRONG', 'EM', 'DEL', 'S'],
  ...['CODE', 'PRE', 'A', 'TABLE', 'THEAD', 'TBODY', 'TR', 'TH', 'TD', 'SPAN'],
  // the view's own decoration: code block bar and Copy, image buttons
  ...['DIV', 'BUTTON', 'IMG'],
]);
const ATTRS = new Set([
  ...['href', 'title', 'class', 'start', 'role', 'aria-label', 'target', 'rel', 'type'],
  ...['data-highlighted', 'data-decorated', 'src', 'alt', 'referrerpolicy', 'decoding', 'tabindex'],
]);

describe.skipIf(!haveChromium)('rendered answers', () => {
  it('hostile markdown leaves no element or attribute outside the allow-list, runs nothing, loads nothing', async () => {
    const m = await startScriptedModel({ kind: 'openai', script: () => ({ text: HOSTILE }) });
    models.push(m);
    const { page, context, requests, errors, violations } = await openApp(env);
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
    await send(page, 'be hostile');
    const answer = page.getByRole('article', { name: 'Assistant' }).last();
    await answer.getByRole('heading', { name: 'Hostile fixtures' }).waitFor({ timeout: 60_000 });
    await idle(page);
    const found = await answer.locator('.md').evaluate((el) => {
      const out: { tag: string; attrs: string[]; href?: string; rel?: string; target?: string }[] = [];
      for (const e of el.querySelectorAll('*'))
        out.push({
          tag: e.tagName,
          attrs: [...e.attributes].map((a) => a.name),
          ...(e.tagName === 'A'
            ? {
                href: e.getAttribute('href') ?? '',
                rel: e.getAttribute('rel') ?? '',
                target: e.getAttribute('target') ?? '',
              }
            : {}),
        });
      return out;
    });
    expect(found.length).toBeGreaterThan(20);
    for (const e of found) {
      expect(TAGS.has(e.tag), `element ${e.tag}`).toBe(true);
      for (const a of e.attrs) expect(ATTRS.has(a), `attribute ${a} on ${e.tag}`).toBe(true);
      if (e.tag === 'A' && e.href) {
        expect(e.href).toMatch(/^(https?:|mailto:)/);
        expect(e.rel).toBe('noopener noreferrer');
        expect(e.target).toBe('_blank');
      }
    }
    expect(found.filter((e) => e.tag === 'IMG')).toEqual([]); // nothing loaded before a click
    // text attributes survive the sanitizer: the task boxes' labels
    await answer.getByRole('img', { name: 'done', exact: true }).waitFor();
    await answer.getByRole('img', { name: 'not done' }).waitFor();
    const text = (await answer.textContent()) ?? '';
    expect(text).toContain('<script>alert(6)</script>'); // raw HTML is shown as text
    expect(requests.filter((r) => r.url().includes('img.example.org'))).toEqual([]);
    // 'Show image' only for the https image; the http one and the SVG stay text
    await expect(answer.getByRole('button', { name: /^Show image from/ }).count()).resolves.toBe(1);
    expect(errors.filter((e) => /dialog|pageerror/.test(e))).toEqual([]);
    await expect(violations()).resolves.toEqual([]);
    expect(rejectedHistories([m])).toEqual([]);
    await context.close();
  }, 180_000);

  it('links open in a new tab without opener or referrer; an image loads only after "Show image from HOST"; code is highlighted and copied', async () => {
    const md = [
      'See [the docs](https://docs.example.org/x) or mail [us](mailto:help@example.org).',
      '![a chart](https://img.example.org/chart.png)',
      '```python\ndef add(a, b):\n    return a + b\n```',
    ].join('\n\n');
    const m = await startScriptedModel({ kind: 'openai', script: () => ({ text: md }) });
    models.push(m);
    const { page, context, requests, violations } = await openApp(env);
    await context.grantPermissions(['clipboard-read', 'clipboard-write']);
    let imageFetched = 0;
    await page.route('https://img.example.org/**', (route) => {
      imageFetched++;
      return route.fulfill({
        contentType: 'image/png',
        body: Buffer.from(
          'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
          'base64',
        ),
      });
    });
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
    await send(page, 'show me');
    const answer = page.getByRole('article', { name: 'Assistant' }).last();
    const link = answer.getByRole('link', { name: 'the docs' });
    await link.waitFor({ timeout: 60_000 });
    await idle(page);
    await expect(link.getAttribute('target')).resolves.toBe('_blank');
    await expect(link.getAttribute('rel')).resolves.toBe('noopener noreferrer');
    await expect(answer.getByRole('link', { name: 'us' }).getAttribute('href')).resolves.toBe(
      'mailto:help@example.org',
    );
    expect(imageFetched).toBe(0);
    await answer.getByRole('button', { name: 'Show image from img.example.org' }).click();
    await answer.getByRole('img', { name: 'a chart' }).waitFor();
    await expect.poll(() => imageFetched).toBe(1);
    const img = requests.find((r) => r.url().startsWith('https://img.example.org/'));
    expect((await img?.allHeaders())?.referer).toBeUndefined();
    // highlight.js arrives lazily and colours the block; "Copy" puts the code's text on the clipboard
    await answer.locator('code.hljs .hljs-keyword').first().waitFor({ timeout: 20_000 });
    await answer.getByRole('button', { name: 'Copy' }).click();
    await answer.getByText('Copied').waitFor();
    await expect(page.evaluate(() => navigator.clipboard.readText())).resolves.toBe(
      'def add(a, b):\n    return a + b\n',
    );
    await expect(violations()).resolves.toEqual([]);
    await context.close();
  }, 180_000);

  it('a long answer streams block by block and ends as the same text it renders after a reload; tool output stays inert JSON', async () => {
    const para = (i: number) =>
      `## Part ${i}\n\nSome *text* for part ${i}, with \`code\` and a list:\n\n- one ${i}\n- two ${i}\n\n\`\`\`js\nconst p${i} = ${i};\n\`\`\``;
    const long = Array.from({ length: 40 }, (_, i) => para(i + 1)).join('\n\n');
    const m = await startScriptedModel({
      kind: 'openai',
      script: (body, n) =>
        n === 0
          ? { toolCalls: [{ name: 'shout', arguments: { text: 'abc\u202edcba\u200b\u0007' } }] }
          : {
              text: `${long}\n\nlast: ${JSON.parse(body.messages[body.messages.length - 1].content).shouted.length}`,
              pace: { tokens: 50, everyMs: 10 },
            },
    });
    models.push(m);
    const { page, context, violations } = await openApp(env);
    await addTool(page, {
      name: 'shout',
      description: 'Upper-cases a text.',
      parameters: {
        type: 'object',
        properties: { text: { type: 'string' } },
        required: ['text'],
        additionalProperties: false,
      },
      execution: {
        kind: 'sandboxed-code',
        runtime: 'javascript',
        source: 'export default async ({ text }) => ({ shouted: text.toUpperCase() });',
      },
    });
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
    await send(page, 'talk long');
    // the answer renders while it streams: the first part is a heading before the last one has arrived
    await page.getByRole('heading', { name: 'Part 1', exact: true }).waitFor({ timeout: 60_000 });
    await page.getByText(/^last: \d+$/).waitFor({ timeout: 60_000 });
    await idle(page);
    const call = page.getByRole('article', { name: 'Tool call shout' });
    const args = (await call.getByLabel('Arguments').textContent()) ?? '';
    const result = (await call.getByLabel('Result').textContent()) ?? '';
    expect(args).toContain('abc\\u202edcba\\u200b\\u0007');
    expect(result).toContain('ABC\\u202eDCBA\\u200b\\u0007');
    expect(args + result).not.toMatch(/[\u202e\u200b\u0007]/);
    const shown = async () =>
      page
        .getByRole('article', { name: 'Assistant' })
        .last()
        .locator('.md')
        .evaluate((el) => ({
          text: (el.textContent ?? '').replace(/Copy/g, '').replace(/\s+/g, ' ').trim(),
          headings: el.querySelectorAll('h2').length,
          blocks: el.querySelectorAll('pre > code').length,
        }));
    const streamed = await shown();
    expect(streamed.headings).toBe(40);
    expect(streamed.blocks).toBe(40);
    await page.reload();
    await page.waitForFunction(() => window.tyAppReady === true);
    await expect(shown()).resolves.toEqual(streamed);
    await expect(violations()).resolves.toEqual([]);
    expect(rejectedHistories([m])).toEqual([]);
    await context.close();
  }, 180_000);

  it('a long tool result is folded to 12 lines with "Show all"', async () => {
    const m = await startScriptedModel({
      kind: 'openai',
      script: (body, n) => (n === 0 ? { toolCalls: [{ name: 'many', arguments: { n: 40 } }] } : { text: 'listed' }),
    });
    models.push(m);
    const { page, context } = await openApp(env);
    await addTool(page, {
      name: 'many',
      description: 'Returns n numbered lines.',
      parameters: {
        type: 'object',
        properties: { n: { type: 'integer' } },
        required: ['n'],
        additionalProperties: false,
      },
      execution: {
        kind: 'sandboxed-code',
        runtime: 'javascript',
        source: 'export default async ({ n }) => Array.from({ length: n }, (_, i) => `line ${i + 1}`);',
      },
    });
    await configure(page, { api: 'openai', endpoint: m.url, model: 'm' });
    await send(page, 'list');
    await page.getByText('listed', { exact: true }).first().waitFor({ timeout: 60_000 });
    await idle(page);
    const result = page.getByRole('article', { name: 'Tool call many' }).getByLabel('Result');
    await expect(result.textContent()).resolves.not.toContain('line 40');
    await expect(result.textContent()).resolves.toContain('line 11');
    await page.getByRole('article', { name: 'Tool call many' }).getByRole('button', { name: 'Show all' }).click();
    await expect(result.textContent()).resolves.toContain('"line 40"');
    await context.close();
  }, 120_000);
});
