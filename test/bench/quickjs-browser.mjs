// Benchmark part: the quickjs engine in Chromium beside the JavaScript engine (frame + worker per sandbox), through
// the published browser host (tysandbox/browser, frame assets on their own site): cold sandbox, warm call, a word
// count over 200 KB, memory per retained sandbox (PSS) and many retained sandboxes; test side.
import { buildBrowserApp, launchChromium, serveDir } from '../../node/diagnostics/browser-driver.mjs';
import { rendererPssMb, WORDCOUNT, wordText } from './quickjs-shared.mjs';
import { pairRatio, spread, summary } from './stats.mjs';

const round = (x, d = 3) => Number(x.toFixed(d));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const ratioSpread = (a, b) => {
  const r = pairRatio(a, b);
  return `${r.p25.toFixed(2)}–${r.p75.toFixed(2)}`;
};

/**
 * The page-side measurements (runs inside the benchmark page, where `window.ty` is tysandbox/browser).
 * @returns {Promise<object>} samples, ms
 */
function pageBench(o) {
  const host = window.host;
  const tool = (name, engine, source, parameters = { type: 'object' }) => ({
    name,
    description: 'bench',
    parameters,
    execution: { kind: 'sandboxed-code', runtime: 'javascript', engine, source },
  });
  const sized = (name, engine, tag) =>
    tool(name, engine, `// ${tag}\nexport default async (a) => ({ n: a.data.length, k: a.k ?? 0 });`);
  const call = async (name, args) => {
    const r = await host.invoke(name, args);
    if (!r.ok) throw new Error(`${name}: ${r.error.code} ${r.error.message}`);
    return r.result;
  };
  const time = async (f) => {
    const t0 = performance.now();
    await f();
    return performance.now() - t0;
  };
  const kb1 = { data: 'x'.repeat(1000), k: 1 };
  return (async () => {
    const out = { cq: [], cj: [], wq: [], wj: [], xq: [], xj: [] };
    // The principal's frame and the QuickJS binary load with the first quickjs sandbox (once per page).
    await host.registry.install(sized('qfirst', 'quickjs', 'first'));
    out.first = await time(() => call('qfirst', kb1));
    await host.registry.install(sized('jfirst', 'node', 'first'));
    await call('jfirst', kb1);
    for (let i = 0; i < o.coldRuns; i++) {
      await host.registry.install(sized(`qcold${i}`, 'quickjs', `q${i}`));
      out.cq.push(await time(() => call(`qcold${i}`, kb1)));
      await host.registry.install(sized(`jcold${i}`, 'node', `j${i}`));
      out.cj.push(await time(() => call(`jcold${i}`, kb1)));
    }
    // Warm: the mean of a round of sequential calls (timers are coarse without cross-origin isolation), paired rounds.
    await host.registry.install(sized('qwarm', 'quickjs', 'warm'));
    await host.registry.install(sized('jwarm', 'node', 'warm'));
    for (let i = 0; i < 30; i++) await Promise.all([call('qwarm', kb1), call('jwarm', kb1)]);
    for (let r = 0; r < o.warmRounds; r++) {
      out.wq.push(
        (await time(async () => {
          for (let i = 0; i < 30; i++) await call('qwarm', kb1);
        })) / 30,
      );
      out.wj.push(
        (await time(async () => {
          for (let i = 0; i < 30; i++) await call('jwarm', kb1);
        })) / 30,
      );
    }
    const params = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] };
    await host.registry.install(tool('qwords', 'quickjs', o.wordcount, params));
    await host.registry.install(tool('jwords', 'node', o.wordcount, params));
    const a = await call('qwords', { text: o.text });
    const b = await call('jwords', { text: o.text });
    if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error('the word counts differ between the engines');
    out.words = a;
    for (let i = 0; i < o.computeRuns; i++) {
      out.xq.push(await time(() => call('qwords', { text: o.text })));
      out.xj.push(await time(() => call('jwords', { text: o.text })));
    }
    return out;
  })();
}

/** Install and call `n` counter tools on `engine` (names PREFIX0..); how many answered 2 on a second call. */
function pageRetain(o) {
  const host = window.host;
  return (async () => {
    for (let i = 0; i < o.n; i++) {
      await host.registry.install({
        name: `${o.prefix}${i}`,
        description: 'counts its calls',
        parameters: { type: 'object' },
        execution: {
          kind: 'sandboxed-code',
          runtime: 'javascript',
          engine: o.engine,
          source: `let calls = 0; // ${o.prefix}${i}\nexport default async () => ({ calls: ++calls });`,
        },
      });
      const r = await host.invoke(`${o.prefix}${i}`, {});
      if (!r.ok) throw new Error(`${o.prefix}${i}: ${r.error.code} ${r.error.message}`);
    }
    let warm = 0;
    for (let i = 0; i < o.n; i++) {
      const r = await host.invoke(`${o.prefix}${i}`, {});
      if (r.ok && r.result.calls === 2) warm++;
    }
    const t = [];
    for (let i = 0; i < 60; i++) {
      const k = Math.floor(Math.random() * o.n);
      const t0 = performance.now();
      await host.invoke(`${o.prefix}${k}`, {});
      t.push(performance.now() - t0);
    }
    t.sort((x, y) => x - y);
    return { warm, randomMs: t[t.length >> 1] };
  })();
}

/**
 * Rows measured in Chromium; notes are pushed to `notes`.
 * @param {string[]} notes
 * @param {{ coldRuns?: number, warmRounds?: number, computeRuns?: number, retained?: number }} [opts]
 */
export async function browserRows(notes, opts = {}) {
  const o = { coldRuns: 15, warmRounds: 9, computeRuns: 5, retained: 100, ...opts };
  const out = await buildBrowserApp({ outDir: 'dist/bench-quickjs' });
  const server = await serveDir(out, {
    files: {
      '/bench/page.html': {
        type: 'text/html',
        body: '<!doctype html><html><body><script type="module" src="/bench/page.js"></script></body></html>',
      },
      '/bench/page.js': {
        type: 'text/javascript',
        body: "import * as ty from '/index.js'; window.ty = ty; window.tyReady = true;",
      },
    },
  });
  const frames = await serveDir(out);
  let browser;
  const rows = [];
  try {
    browser = await launchChromium();
    const page = await browser.newPage();
    await page.goto(`${server.origin}/bench/page.html`);
    await page.waitForFunction(() => window.tyReady === true);
    // The frame assets on their own site; the QuickJS binary, which the page fetches, from the page's own origin.
    await page.evaluate(
      async ([frameBase, quickjsBaseUrl]) => {
        window.host = await window.ty.createBrowserHost({
          dbName: `bench-quickjs-${Date.now()}`,
          sandbox: { assetBaseUrl: frameBase, quickjsBaseUrl },
          maxRetained: 64,
        });
      },
      [`${frames.origin.replace('127.0.0.1', 'localhost')}/`, `${server.origin}/quickjs/`],
    );
    const s = await page.evaluate(pageBench, { ...o, wordcount: WORDCOUNT, text: wordText(200 * 1024) });
    const [cq, cj, wq, wj, xq, xj] = [s.cq, s.cj, s.wq, s.wj, s.xq, s.xj].map(summary);
    rows.push(
      {
        name: 'Chromium: cold quickjs sandbox (a new revision in its principal’s running frame, first 1 KB call answered through the host)',
        value: round(cq.median, 1),
        unit: 'ms',
        spread: spread(cq, cj, 1),
        baseline: 'JavaScript engine, the same: a new revision’s first call (a frame and a worker of its own)',
        baselineValue: round(cj.median, 1),
        ratio: round(cq.median / cj.median, 2),
        ratioSpread: ratioSpread(s.cq, s.cj),
        target: '<= 30',
      },
      {
        name: 'Chromium: first quickjs sandbox of a page (the principal’s frame starts, the QuickJS binary is fetched, checked and compiled; once per page)',
        value: round(s.first, 1),
        unit: 'ms',
        baseline: 'JavaScript engine cold sandbox (median, row above)',
        baselineValue: round(cj.median, 1),
        ratio: round(s.first / cj.median, 2),
      },
      {
        name: 'Chromium: warm 1 KB call through the host, quickjs (mean of 30 sequential calls per round)',
        value: round(wq.median),
        unit: 'ms',
        spread: spread(wq, wj),
        baseline: 'JavaScript engine, the same',
        baselineValue: round(wj.median),
        ratio: round(wq.median / wj.median, 2),
        ratioSpread: ratioSpread(s.wq, s.wj),
      },
      {
        name: `Chromium: word count over 200 KB (${s.words.words} words), warm quickjs sandbox, through the host`,
        value: round(xq.median, 1),
        unit: 'ms',
        spread: spread(xq, xj, 1),
        baseline: 'JavaScript engine (V8 in the sandbox worker), the same call',
        baselineValue: round(xj.median, 1),
        ratio: round(xq.median / xj.median, 2),
        ratioSpread: ratioSpread(s.xq, s.xj),
      },
    );
    // Memory: renderer PSS growth per sandbox, quickjs over many, the JavaScript engine over 4.
    await sleep(1500);
    const m0 = rendererPssMb();
    const jsN = 8;
    const js = await page.evaluate(pageRetain, { n: jsN, prefix: 'jm', engine: 'node' });
    await sleep(1500);
    const m1 = rendererPssMb();
    const q = await page.evaluate(pageRetain, { n: o.retained, prefix: 'qm', engine: 'quickjs' });
    await sleep(1500);
    const m2 = rendererPssMb();
    const jsPer = (m1 - m0) / jsN;
    const qPer = (m2 - m1) / o.retained;
    rows.push(
      {
        name: `Chromium: memory per retained quickjs sandbox, PSS (growth of every renderer’s PSS over ${o.retained} sandboxes, divided by ${o.retained})`,
        // the same rule: a fall of the renderers' PSS (collection in other frames) is no figure
        value: qPer > 0 ? round(qPer, 2) : `not measured (renderer PSS fell by ${round(-qPer * o.retained, 1)} MiB)`,
        unit: 'MiB',
        baseline: `JavaScript engine: memory per retained sandbox, PSS (${jsN} sandboxes, frame assets on their own site)`,
        // renderer PSS also moves with garbage collection in other frames: a fall is reported, not divided by
        baselineValue:
          jsPer > 0 ? round(jsPer, 2) : `not measured (renderer PSS fell by ${round(-jsPer * jsN, 1)} MiB)`,
        ratio: jsPer > 0 && qPer > 0 ? round(qPer / jsPer, 3) : '',
        target: '<= 3',
      },
      {
        name: `Chromium: quickjs sandboxes retained and answering from their own state, of ${o.retained} installed and called (the page’s default cap, BROWSER_MAX_INSTANCES: see the notes)`,
        value: q.warm,
        unit: 'sandboxes',
        baseline: 'revisions installed',
        baselineValue: o.retained,
        ratio: round(q.warm / o.retained, 2),
        target: `>= ${o.retained}`,
      },
      {
        name: `Chromium: warm call to a random one of ${o.retained} retained quickjs sandboxes (median of 60)`,
        value: round(q.randomMs, 2),
        unit: 'ms',
        baseline: 'warm 1 KB call to one quickjs sandbox (row above)',
        baselineValue: round(wq.median),
        ratio: round(q.randomMs / wq.median, 2),
      },
    );
    if (js.warm !== jsN) throw new Error(`only ${js.warm} of ${jsN} JavaScript sandboxes stayed warm`);
    notes.push(
      'Chromium: Debian’s Chromium, headless; the published host (createBrowserHost from tysandbox/browser, ' +
        'maxRetained 64) with its frame assets on their own site (localhost against the page’s 127.0.0.1), so ' +
        'sandbox frames run in renderers of their own. Cold: ' +
        `${o.coldRuns} interleaved pairs; warm: ${o.warmRounds} paired rounds of 30 calls; word count: ` +
        `${o.computeRuns} pairs. Memory: /proc/PID/smaps_rollup Pss of every renderer process before and after. ` +
        `Served from ${server.origin}; beacon requests seen: ${server.beacons.length + frames.beacons.length}.`,
      `Chromium, ${o.retained} retained: not 1000. Chromium keeps every WebAssembly memory inside the V8 sandbox (1 TiB ` +
        'of address space per renderer process) and each 32-bit memory reserves 8 GiB there for its guard regions ' +
        'however small it is, so a renderer holds about 125 live QuickJS sandboxes; the next fails with ' +
        '“WebAssembly.Memory(): could not allocate memory” (measured here at about the 125th). The browser host therefore ' +
        'keeps at most 100 (BROWSER_MAX_INSTANCES), the least recently used idle one going first. Node (the CLI) has no ' +
        'V8 sandbox and holds a thousand per process (rows above).',
    );
  } finally {
    await browser?.close();
    await server.close();
    await frames.close();
  }
  return rows;
}
