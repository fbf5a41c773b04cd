// Chat app benchmark in Debian's Chromium: page load to interactive, first token shown, a 20,000-word markdown answer
// streamed against the same text as plain text, first JavaScript and Python tool results (cold and warm), each against
// a baseline; test side.
import { join } from 'node:path';
import { launchChromium, REPO_ROOT } from '../../node/diagnostics/browser-driver.mjs';
import { startScriptedModel } from '../app/model-servers.mjs';
import { pairRatio, spread, summary } from './stats.mjs';

const COLD = 5;
const PY_COLD = 3;
const WARM = 5;

const TOOLS = {
  js: {
    name: 'bench-js',
    description: 'Adds two numbers.',
    parameters: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
      additionalProperties: false,
    },
    execution: {
      kind: 'sandboxed-code',
      runtime: 'javascript',
      source: 'export default async ({ a, b }) => ({ sum: a + b });',
    },
  },
  py: {
    name: 'bench-py',
    description: 'Adds two numbers in Python.',
    parameters: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
      additionalProperties: false,
    },
    execution: {
      kind: 'sandboxed-code',
      runtime: 'python',
      source: 'async def main(args, ctx):\n    return {"sum": args["a"] + args["b"]}\n',
    },
  },
};

const WORDS = 20_000;
const STREAM_PAIRS = 5;
const FIRST_TOKEN = 7;

/** A 20,000-word markdown answer: headings, paragraphs with inline marks and links, lists, tables and code blocks. */
function longMarkdown(words) {
  const out = [];
  let n = 0;
  for (let s = 0; n < words; s++) {
    const block = [
      `## Section ${s}: results`,
      `The **${s}th** finding is *notable*: see [the source](https://example.org/${s}) and \`value_${s}\` for details on what was measured and why it matters here.`,
      `- first point about ${s}\n- second point with \`code\`\n- third point, longer, explaining the trade-off in plain words`,
      `| metric | value |\n|---|--:|\n| rows | ${s * 10} |\n| mean | ${(s / 7).toFixed(2)} |`,
      `\`\`\`js\nfunction section${s}(rows) {\n  return rows.filter((r) => r.id > ${s}).map((r) => r.total);\n}\n\`\`\``,
    ].join('\n\n');
    out.push(block);
    n += block.split(/\s+/).length;
  }
  return out.join('\n\n');
}

/** The scripted model: "call TOOL" makes it call that tool; a tool result or any other text gets "answer N". */
function script(body) {
  const last = body.messages[body.messages.length - 1];
  const long = /^long (\d+)/.exec(String(last.content));
  if (last.role === 'user' && long)
    return { text: `${LONG}\n\nEND-OF-ANSWER-${long[1]}`, pace: { tokens: 50, everyMs: 10 } };
  const first = /^first (\d+)/.exec(String(last.content));
  if (last.role === 'user' && first)
    return { text: `token-${first[1]} ${'more '.repeat(40)}`, pace: { tokens: 1, everyMs: 20 } };
  const m = /^call (\S+) (\d+)/.exec(String(last.content));
  if (last.role === 'user' && m) return { toolCalls: [{ name: m[1], arguments: { a: Number(m[2]), b: 1 } }] };
  return { text: last.role === 'tool' ? `result ${last.content}` : `answer ${last.content}` };
}

const LONG = longMarkdown(WORDS);

async function openApp(browser, url, modelUrl, opts = {}) {
  const context = await browser.newContext(opts);
  const page = await context.newPage();
  // long animation frames (Chromium's performance timeline, >= 50 ms each) from the start of the page
  await page.addInitScript(() => {
    window.tyLoaf = [];
    try {
      new PerformanceObserver((l) => {
        for (const e of l.getEntries()) window.tyLoaf.push({ start: e.startTime, duration: e.duration });
      }).observe({ type: 'long-animation-frame', buffered: true });
    } catch {
      /* not supported */
    }
  });
  const t0 = performance.now();
  await page.goto(`${url}?api=openai&model=bench&endpoint=${encodeURIComponent(modelUrl)}`);
  if (opts.javaScriptEnabled === false) {
    await page.waitForLoadState('domcontentloaded');
    return { context, page, ms: performance.now() - t0 };
  }
  await page.waitForFunction(() => window.tyAppReady === true, undefined, { timeout: 60_000 });
  return { context, page, ms: performance.now() - t0 };
}

async function addTool(page, manifest) {
  await page.getByRole('button', { name: 'Tools' }).click();
  await page.getByRole('textbox', { name: 'Tool manifest (JSON)' }).fill(JSON.stringify(manifest));
  await page.getByRole('button', { name: 'Add tool' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: /^Added / })
    .waitFor();
  await page.getByRole('button', { name: 'Tools' }).click();
}

/** Send `text` and time until `expect` is on the page (ms). */
async function timedTurn(page, text, expect) {
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  const t0 = performance.now();
  await page.getByRole('button', { name: 'Send' }).click();
  await page.getByText(expect, { exact: true }).waitFor({ timeout: 180_000 });
  const ms = performance.now() - t0;
  await page.getByRole('button', { name: 'Send' }).and(page.locator(':enabled')).waitFor();
  return ms;
}

const row = (name, v, baseline, b, target = '') => ({
  name,
  value: +v.median.toFixed(1),
  unit: 'ms',
  spread: spread(v, b, 1),
  baseline,
  baselineValue: +b.median.toFixed(1),
  ratio: +(v.median / b.median).toFixed(2),
  target,
});

/** Let the page connect to the model without the reload a new endpoint needs (as the app's own page would). */
async function allowConnect(serverUrl, origins) {
  const r = await fetch(`${serverUrl}app/connect`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', origin: serverUrl.replace(/\/$/, '') },
    body: JSON.stringify({ origins }),
  });
  if (!r.ok) throw new Error(`PUT /app/connect: ${r.status}`);
}

/** Switch "Render markdown" in Settings. */
async function setMarkdown(page, on) {
  await page.getByRole('button', { name: 'Settings' }).click();
  const box = page.getByRole('checkbox', { name: 'Render markdown' });
  if (on) await box.check();
  else await box.uncheck();
  await page.getByRole('button', { name: 'Settings' }).click();
}

/**
 * Stream the 20,000-word answer and time it from Send to its last words on screen (ms), with the main-thread time
 * spent in long animation frames meanwhile (ms) and their count.
 */
async function timedLong(page, i) {
  await page.getByRole('textbox', { name: 'Message' }).fill(`long ${i}`);
  const from = await page.evaluate(() => performance.now());
  const t0 = performance.now();
  await page.getByRole('button', { name: 'Send' }).click();
  // polled in the page every 50 ms on the conversation's text (Playwright's text locators walk the whole DOM each
  // frame, which would tax the larger markdown DOM more than the one text node of plain text)
  await page.waitForFunction(
    (marker) => (document.querySelector('.conversation-scroll')?.textContent ?? '').includes(marker),
    `END-OF-ANSWER-${i}`,
    { polling: 50, timeout: 180_000 },
  );
  const ms = performance.now() - t0;
  const loaf = await page.evaluate((f) => window.tyLoaf.filter((e) => e.start >= f), from);
  await page.getByRole('button', { name: 'Send' }).and(page.locator(':enabled')).waitFor();
  return { ms, loafMs: loaf.reduce((a, e) => a + e.duration, 0), loafs: loaf.length };
}

/** The model's own time to its first content chunk, from Node (no page, no app): the first-token baseline. */
async function modelFirstByte(modelUrl, i) {
  const t0 = performance.now();
  const r = await fetch(`${modelUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'bench', stream: true, messages: [{ role: 'user', content: `first ${i}` }] }),
  });
  const reader = r.body.getReader();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
    if (text.includes(`token-${i}`)) break;
  }
  const ms = performance.now() - t0;
  await reader.cancel();
  return ms;
}

export async function run() {
  const { startAppServer } = await import(join(REPO_ROOT, 'dist/node/http/app-server.js'));
  const server = await startAppServer({ dir: join(REPO_ROOT, 'dist/browser'), port: 0 });
  const model = await startScriptedModel({ kind: 'openai', script });
  await allowConnect(server.url, [model.origin]);
  const browser = await launchChromium();
  try {
    // First token shown: Send to the first streamed word on screen, paired with the model's own first byte.
    const firstShown = [];
    const firstBase = [];
    {
      const { context, page } = await openApp(browser, server.url, model.url);
      for (let i = -1; i < FIRST_TOKEN; i++) {
        await page.getByRole('textbox', { name: 'Message' }).fill(`first ${i + 100}`);
        const t0 = performance.now();
        await page.getByRole('button', { name: 'Send' }).click();
        await page
          .getByText(new RegExp(`token-${i + 100}`))
          .first()
          .waitFor({ timeout: 60_000 });
        const ms = performance.now() - t0;
        await page.getByRole('button', { name: 'Send' }).and(page.locator(':enabled')).waitFor({ timeout: 60_000 });
        const base = await modelFirstByte(model.url, i + 100);
        if (i >= 0) {
          firstShown.push(ms);
          firstBase.push(base);
        }
      }
      await context.close();
    }
    // The long answer, markdown and plain text in turn, each pair in one fresh page
    const md = [];
    const plainLong = [];
    for (let i = 0; i < STREAM_PAIRS; i++) {
      const { context, page } = await openApp(browser, server.url, model.url);
      plainLong.push(
        await (async () => {
          await setMarkdown(page, false);
          return timedLong(page, i * 2);
        })(),
      );
      await page.getByRole('button', { name: 'New conversation' }).click();
      await setMarkdown(page, true);
      md.push(await timedLong(page, i * 2 + 1));
      await context.close();
    }
    const load = [];
    const loadBase = [];
    const plain = [];
    const jsCold = [];
    const jsWarm = [];
    const pyCold = [];
    const pyWarm = [];
    for (let i = 0; i < COLD; i++) {
      const base = await openApp(browser, server.url, model.url, { javaScriptEnabled: false });
      loadBase.push(base.ms);
      await base.context.close();
      const { context, page, ms } = await openApp(browser, server.url, model.url);
      load.push(ms);
      await addTool(page, TOOLS.js);
      plain.push(await timedTurn(page, `hello ${i}`, `answer hello ${i}`));
      jsCold.push(await timedTurn(page, `call bench-js ${i}`, `result {"sum":${i + 1}}`));
      if (i === 0)
        for (let k = 0; k < WARM; k++)
          jsWarm.push(await timedTurn(page, `call bench-js ${100 + k}`, `result {"sum":${101 + k}}`));
      await context.close();
    }
    for (let i = 0; i < PY_COLD; i++) {
      const { context, page } = await openApp(browser, server.url, model.url);
      await addTool(page, TOOLS.py);
      pyCold.push(await timedTurn(page, `call bench-py ${i}`, `result {"sum":${i + 1}}`));
      if (i === 0)
        for (let k = 0; k < WARM; k++)
          pyWarm.push(await timedTurn(page, `call bench-py ${200 + k}`, `result {"sum":${201 + k}}`));
      await context.close();
    }
    const p = summary(plain);
    const mdMs = md.map((x) => x.ms);
    const plainMs = plainLong.map((x) => x.ms);
    const mdLoaf = md.map((x) => x.loafMs);
    const plainLoaf = plainLong.map((x) => x.loafMs);
    return {
      title: 'Chat app (Chromium, headless, scripted OpenAI-compatible model on loopback)',
      rows: [
        row(
          'page load to interactive (fresh profile)',
          summary(load),
          'same page, JavaScript off, to DOMContentLoaded',
          summary(loadBase),
        ),
        {
          ...row(
            'first token shown (Send to the first streamed word on screen)',
            summary(firstShown),
            "the model's own first content byte, fetched from Node",
            summary(firstBase),
          ),
          ratioSpread: (() => {
            const r = pairRatio(firstShown, firstBase);
            return `${r.p25.toFixed(2)}–${r.p75.toFixed(2)}`;
          })(),
        },
        {
          ...row(
            `${WORDS}-word markdown answer streamed at 50 tokens per 10 ms: Send to its last word on screen`,
            summary(mdMs),
            'the same text with Render markdown off (plain text)',
            summary(plainMs),
            '<= 1.2x',
          ),
          ratioSpread: (() => {
            const r = pairRatio(mdMs, plainMs);
            return `${r.p25.toFixed(2)}–${r.p75.toFixed(2)}`;
          })(),
        },
        {
          name: 'main-thread time in long animation frames (>= 50 ms) while that answer streams',
          value: +summary(mdLoaf).median.toFixed(0),
          unit: 'ms',
          spread: spread(summary(mdLoaf), summary(plainLoaf), 0),
          baseline: 'the same text as plain text',
          baselineValue: +summary(plainLoaf).median.toFixed(0),
          ratio: +(summary(mdLoaf).median / Math.max(1, summary(plainLoaf).median)).toFixed(2),
          target: '',
        },
        row('first JavaScript tool result, cold sandbox', summary(jsCold), 'a turn without a tool call', p),
        row('JavaScript tool result, warm sandbox', summary(jsWarm), 'a turn without a tool call', p),
        row('first Python tool result, cold (Pyodide load)', summary(pyCold), 'a turn without a tool call', p),
        row('Python tool result, warm sandbox', summary(pyWarm), 'a turn without a tool call', p),
      ],
      notes: [
        `First token: ${FIRST_TOKEN} turns in one page (after one warm-up), each paired with a direct request to the ` +
          'same scripted model for its first content byte; the difference is the app (request, SSE parse, render).',
        `Long answer: ${WORDS} words of markdown (headings, links, lists, tables, code blocks; ${LONG.length} ` +
          `characters) streamed by the scripted model at 50 words every 10 ms; ${STREAM_PAIRS} pairs, plain text ` +
          "then markdown in one fresh page each. Long animation frames come from Chromium's performance timeline " +
          `(PerformanceObserver 'long-animation-frame'); markdown frames per run: ${md.map((x) => x.loafs).join(', ')}, ` +
          `plain: ${plainLong.map((x) => x.loafs).join(', ')}. Plain text is the app's own plain mode (Render markdown ` +
          'off): the answer appended to one text node, which the browser lays out whole on every frame; markdown lays ' +
          'out only its unfinished end and the chunks in view, so it can be the faster of the two.',
        `Cold: ${COLD} fresh browser profiles (JavaScript) and ${PY_COLD} (Python); warm: ${WARM} turns ` +
          `in the first profile. Tool turns are two model round trips (call, then answer) plus the call; ` +
          `the baseline is one round trip with no tool.`,
        'Interactive means the app opened its databases, installed the example tools on first start and rendered (window.tyAppReady).',
        'Timed from Node around Playwright actions, so each figure includes a few ms of driver round trips.',
      ],
    };
  } finally {
    await browser.close();
    await model.close();
    await server.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await run();
  console.log(JSON.stringify(r, null, 2));
}
