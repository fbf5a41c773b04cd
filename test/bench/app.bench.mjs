// Chat app benchmark in Debian's Chromium: page load to interactive, first JavaScript and Python tool results (cold and
// warm), each against a baseline; test side.
import { join } from 'node:path';
import { launchChromium, REPO_ROOT } from '../../node/diagnostics/browser-driver.mjs';
import { startScriptedModel } from '../app/model-servers.mjs';
import { spread, summary } from './stats.mjs';

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

/** The scripted model: "call TOOL" makes it call that tool; a tool result or any other text gets "answer N". */
function script(body) {
  const last = body.messages[body.messages.length - 1];
  const m = /^call (\S+) (\d+)/.exec(String(last.content));
  if (last.role === 'user' && m) return { toolCalls: [{ name: m[1], arguments: { a: Number(m[2]), b: 1 } }] };
  return { text: last.role === 'tool' ? `result ${last.content}` : `answer ${last.content}` };
}

async function openApp(browser, url, modelUrl, opts = {}) {
  const context = await browser.newContext(opts);
  const page = await context.newPage();
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

export async function run() {
  const { startAppServer } = await import(join(REPO_ROOT, 'dist/node/http/app-server.js'));
  const server = await startAppServer({ dir: join(REPO_ROOT, 'dist/browser'), port: 0 });
  const model = await startScriptedModel({ kind: 'openai', script });
  const browser = await launchChromium();
  try {
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
    return {
      title: 'Chat app (Chromium, headless, scripted OpenAI-compatible model on loopback)',
      rows: [
        row(
          'page load to interactive (fresh profile)',
          summary(load),
          'same page, JavaScript off, to DOMContentLoaded',
          summary(loadBase),
        ),
        row('first JavaScript tool result, cold sandbox', summary(jsCold), 'a turn without a tool call', p),
        row('JavaScript tool result, warm sandbox', summary(jsWarm), 'a turn without a tool call', p),
        row('first Python tool result, cold (Pyodide load)', summary(pyCold), 'a turn without a tool call', p),
        row('Python tool result, warm sandbox', summary(pyWarm), 'a turn without a tool call', p),
      ],
      notes: [
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
