// Benchmark: the quickjs engine side by side with the node engine and a plain child on the command line (tycli's host
// in this process, bubblewrap when it works here), and with the JavaScript engine in Chromium: cold sandbox, warm
// 1 KB call, memory per retained sandbox (PSS), 1000 retained sandboxes, a word count over 200 KB; test side.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { memOf, memoryByKind } from './runner-memory.mjs';
import { pairRatio, spread, summary } from './stats.mjs';
import { browserRows } from './quickjs-browser.mjs';
import { descendants, wordText, WORDCOUNT } from './quickjs-shared.mjs';

const round = (x, d = 3) => Number(x.toFixed(d));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A tool answering with the size of its arguments; `tag` makes another revision of the same code. */
const sized = (name, engine, tag = '') => ({
  name,
  description: 'answers with the size of its arguments',
  parameters: { type: 'object', properties: { data: { type: 'string' }, k: { type: 'number' } }, required: ['data'] },
  execution: {
    kind: 'sandboxed-code',
    runtime: 'javascript',
    engine,
    source: `let calls = 0;${tag ? ` // ${tag}` : ''}\nexport default async (a) => ({ n: a.data.length, k: a.k ?? 0, calls: ++calls });`,
  },
});
/** A tool counting its calls (the count shows whether one sandbox answered them all); each name its own revision. */
const counter = (name, engine) => ({
  name,
  description: 'counts its calls',
  parameters: { type: 'object' },
  execution: {
    kind: 'sandboxed-code',
    runtime: 'javascript',
    engine,
    source: `let calls = 0; // ${name}\nexport default async () => ({ calls: ++calls });`,
  },
});
const words = (name, engine) => ({
  name,
  description: 'counts the words of a text',
  parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  execution: { kind: 'sandboxed-code', runtime: 'javascript', engine, source: WORDCOUNT },
});

/** The same small work in a plain node child over a pipe (NDJSON in, `{n, k}` out): the transport floor. */
const ECHO =
  "const fs=require('node:fs');let b='';process.stdin.setEncoding('utf8');process.stdin.on('data',d=>{b+=d;let " +
  "i;while((i=b.indexOf('\\n'))>=0){const l=b.slice(0,i);b=b.slice(i+1);const m=JSON.parse(l);fs.writeSync(1,JSON.stringify({id:m.id,result:{n:m.args.data.length,k:m.args.k??0}})+'\\n');}})";

/** A plain node child (empty environment); `call(args)` resolves with its answer; `ready` when it first answered. */
function plainChild() {
  const c = spawn(process.execPath, ['-e', ECHO], { env: {}, stdio: ['pipe', 'pipe', 'ignore'] });
  let waiting;
  let next = 0;
  let buf = '';
  c.stdout.setEncoding('utf8');
  c.stdout.on('data', (d) => {
    buf += d;
    const i = buf.indexOf('\n');
    if (i < 0) return;
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    const w = waiting;
    waiting = undefined;
    w?.(JSON.parse(line).result);
  });
  return {
    pid: c.pid,
    call: (args) =>
      new Promise((r) => {
        waiting = r;
        c.stdin.write(`${JSON.stringify({ v: 1, type: 'call', id: ++next, args })}\n`);
      }),
    close: () => c.kill('SIGKILL'),
  };
}

/** PSS of every process below this one, MiB (the sandbox trees: bwrap, node sandboxes, quickjs sandbox hosts). */
const treePss = (exclude = new Set()) => {
  const kinds = memoryByKind(descendants(process.pid).filter((p) => !exclude.has(p)));
  return Object.values(kinds).reduce((a, k) => a + k.pss, 0);
};

const parentOf = (pid) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return 0;
  }
};

/** PSS of each node-engine sandbox below this process (its runner process and the bwrap processes above it), MiB. */
function nodeSandboxPss() {
  const mine = new Set(descendants(process.pid));
  const out = [];
  for (const p of mine) {
    let cmd = '';
    try {
      cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    // the node process itself (bwrap's own command line names the runner too)
    const self = memOf(p);
    if (!cmd.includes('sandbox-runner') || self?.comm !== 'node') continue;
    let kb = self.pss;
    for (let q = parentOf(p); mine.has(q); q = parentOf(q)) {
      const m = memOf(q);
      if (m?.comm !== 'bwrap') break;
      kb += m.pss;
    }
    out.push(kb / 1024);
  }
  return out;
}

/** @returns {Promise<object[]>} rows measured on the command line, and notes pushed to `notes` */
async function cliRows(notes, o) {
  const [{ createNodeHost }, { probeSandbox }] = await Promise.all([
    import('../../dist/node/host/host.js'),
    import('../../dist/node/os-sandbox/probe.js'),
  ]);
  const posture = (await probeSandbox()).available ? 'bubblewrap' : 'none (bubblewrap unavailable)';
  const home = await mkdtemp(join(os.tmpdir(), 'ty-bench-quickjs-'));
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home };
  const host = await createNodeHost({ home, env, cwd: home, python: false, globals: { allow: [] } });
  const rows = [];
  const plain = [];
  const call = async (name, args) => {
    const r = await host.invoker.invoke(name, args);
    if (!r.ok) throw new Error(`${name}: ${JSON.stringify(r.error)}`);
    return r.result;
  };
  const time = async (f) => {
    const t0 = performance.now();
    await f();
    return performance.now() - t0;
  };
  const kb1 = { data: 'x'.repeat(1000), k: 1 };
  try {
    // The principal's sandbox host process starts with its first quickjs sandbox (once per principal).
    await host.registry.install(sized('qfirst', 'quickjs'));
    const first = await time(() => call('qfirst', kb1));

    // Cold: a new revision's first call through the host, quickjs and node interleaved, and a plain child's first
    // answer after its spawn.
    await host.registry.install(sized('nwarmup', 'node'));
    await call('nwarmup', kb1);
    const cq = [];
    const cn = [];
    const cp = [];
    for (let i = 0; i < o.coldRuns; i++) {
      await host.registry.install(sized(`qcold${i}`, 'quickjs', `q${i}`));
      cq.push(await time(() => call(`qcold${i}`, kb1)));
      await host.registry.install(sized(`ncold${i}`, 'node', `n${i}`));
      cn.push(await time(() => call(`ncold${i}`, kb1)));
      let child;
      cp.push(
        await time(async () => {
          child = plainChild();
          await child.call(kb1);
        }),
      );
      child.close();
    }
    const [sq, sn, sp] = [summary(cq), summary(cn), summary(cp)];
    const rq = pairRatio(cq, cn);
    rows.push({
      name: 'CLI: cold quickjs sandbox (a new revision loaded in its principal’s running sandbox host, first 1 KB call answered through the host)',
      value: round(sq.median, 1),
      unit: 'ms',
      spread: spread(sq, sn, 1),
      baseline:
        'node engine, the same: a new revision’s first call through the host (sandbox process under the same wrapper)',
      baselineValue: round(sn.median, 1),
      ratio: round(sq.median / sn.median, 2),
      ratioSpread: `${rq.p25.toFixed(2)}–${rq.p75.toFixed(2)}`,
      target: '<= 30',
    });
    rows.push({
      name: 'CLI: cold quickjs sandbox, against a plain node child spawned and answering its first call',
      value: round(sq.median, 1),
      unit: 'ms',
      spread: spread(sq, sp, 1),
      baseline: 'plain node child: spawn, first NDJSON call answered',
      baselineValue: round(sp.median, 1),
      ratio: round(sq.median / sp.median, 2),
      ratioSpread: (() => {
        const r = pairRatio(cq, cp);
        return `${r.p25.toFixed(2)}–${r.p75.toFixed(2)}`;
      })(),
    });
    rows.push({
      name: 'CLI: first quickjs sandbox of a principal (its sandbox host process starts under the wrapper; once per principal)',
      value: round(first, 1),
      unit: 'ms',
      baseline: 'node engine cold sandbox (median, row above)',
      baselineValue: round(sn.median, 1),
      ratio: round(first / sn.median, 2),
    });

    // Warm 1 KB call: quickjs and node through the host, and the plain child's pipe round trip, interleaved.
    await host.registry.install(sized('qwarm', 'quickjs'));
    await host.registry.install(sized('nwarm', 'node'));
    const echo = plainChild();
    plain.push(echo);
    for (let i = 0; i < 50; i++) await Promise.all([call('qwarm', kb1), call('nwarm', kb1), echo.call(kb1)]);
    const wq = [];
    const wn = [];
    const wp = [];
    for (let i = 0; i < o.warmCalls; i++) {
      const order = i % 3;
      for (let j = 0; j < 3; j++) {
        const which = (order + j) % 3;
        if (which === 0) wq.push(await time(() => call('qwarm', kb1)));
        else if (which === 1) wn.push(await time(() => call('nwarm', kb1)));
        else wp.push(await time(() => echo.call(kb1)));
      }
    }
    const [swq, swn, swp] = [summary(wq), summary(wn), summary(wp)];
    const hostPath = wn.map((x, i) => Math.max(0.001, x - wp[i]));
    const shp = summary(hostPath);
    const rw = pairRatio(wq, hostPath);
    rows.push({
      name: 'CLI: warm 1 KB call through the host, quickjs',
      value: round(swq.median),
      unit: 'ms',
      spread: spread(swq, shp),
      baseline: 'node engine’s warm call through the host minus a plain child’s pipe round trip (paired call by call)',
      baselineValue: round(shp.median),
      ratio: round(swq.median / shp.median, 2),
      ratioSpread: `${rw.p25.toFixed(2)}–${rw.p75.toFixed(2)}`,
      target: '<= 1.2x',
    });
    const rn = pairRatio(wq, wn);
    rows.push({
      name: 'CLI: warm 1 KB call through the host, quickjs, against the node engine’s',
      value: round(swq.median),
      unit: 'ms',
      spread: spread(swq, swn),
      baseline: 'node engine, warm 1 KB call through the host',
      baselineValue: round(swn.median),
      ratio: round(swq.median / swn.median, 2),
      ratioSpread: `${rn.p25.toFixed(2)}–${rn.p75.toFixed(2)}`,
    });
    rows.push({
      name: 'CLI: floor: a plain node child’s NDJSON round trip over a pipe, 1 KB (the pipe both engines cross once)',
      value: round(swp.median),
      unit: 'ms',
      spread: spread(swp),
      baseline: 'node engine, warm 1 KB call through the host',
      baselineValue: round(swn.median),
      ratio: round(swp.median / swn.median, 2),
    });

    // Compute: a word count over 200 KB, quickjs against node, warm sandboxes, paired.
    const text = wordText(200 * 1024);
    await host.registry.install(words('qwords', 'quickjs'));
    await host.registry.install(words('nwords', 'node'));
    const a = await call('qwords', { text });
    const b = await call('nwords', { text });
    if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error('the word counts differ between the engines');
    const xq = [];
    const xn = [];
    for (let i = 0; i < o.computeRuns; i++) {
      xq.push(await time(() => call('qwords', { text })));
      xn.push(await time(() => call('nwords', { text })));
    }
    const [sxq, sxn] = [summary(xq), summary(xn)];
    const rx = pairRatio(xq, xn);
    rows.push({
      name: `CLI: word count over 200 KB (${a.words} words, ${a.unique} distinct), warm quickjs sandbox, through the host`,
      value: round(sxq.median, 1),
      unit: 'ms',
      spread: spread(sxq, sxn, 1),
      baseline: 'node engine, the same call',
      baselineValue: round(sxn.median, 1),
      ratio: round(sxq.median / sxn.median, 2),
      ratioSpread: `${rx.p25.toFixed(2)}–${rx.p75.toFixed(2)}`,
      target: '',
    });

    // Memory and 1000 retained sandboxes: a thousand revisions, each called once, then each again (the second answer
    // counts 2 only from the sandbox that answered the first), then warm calls to random ones.
    const excl = new Set(plain.map((c) => c.pid));
    await sleep(500);
    const pss0 = treePss(excl);
    const N = o.retained;
    const t0 = performance.now();
    for (let i = 0; i < N; i++) await host.registry.install(counter(`k${i}`, 'quickjs'));
    const installMs = performance.now() - t0;
    const t1 = performance.now();
    for (let i = 0; i < N; i++) await call(`k${i}`, {});
    const startMs = performance.now() - t1;
    let warm = 0;
    for (let i = 0; i < N; i++) if ((await call(`k${i}`, {})).calls === 2) warm++;
    await sleep(500);
    const pss1 = treePss(excl);
    const perPss = (pss1 - pss0) / N;
    const rand = [];
    const base = [];
    for (let i = 0; i < o.randomCalls; i++) {
      const k = Math.floor(Math.random() * N);
      rand.push(await time(() => call(`k${k}`, {})));
      base.push(await time(() => call('qwarm', kb1)));
    }
    const [sr, sb] = [summary(rand), summary(base)];
    const rr = pairRatio(rand, base);
    // node engine: PSS of each retained node sandbox (its runner process and the bubblewrap processes above it); the
    // host's memory budget keeps only a few of them (each charged its heap cap and margin), so growth would not do
    const perNode = nodeSandboxPss();
    if (perNode.length < 3) throw new Error(`only ${perNode.length} node sandboxes to measure`);
    const nodePss = summary(perNode).median;
    const bare = plainChild();
    await bare.call(kb1);
    await sleep(200);
    const plainPss = memoryByKind([bare.pid]).node?.pss ?? Number.NaN;
    bare.close();
    rows.push({
      name: `CLI: quickjs sandboxes retained and answering from their own state, of ${N} installed and called (the pool kept every one)`,
      value: warm,
      unit: 'sandboxes',
      baseline: 'revisions installed',
      baselineValue: N,
      ratio: round(warm / N, 2),
      target: '>= 1000',
    });
    rows.push({
      name: `CLI: warm call to a random one of ${N} retained quickjs sandboxes, through the host`,
      value: round(sr.median),
      unit: 'ms',
      spread: spread(sr, sb),
      baseline: 'warm call to one quickjs sandbox, paired (the same host, the same moment)',
      baselineValue: round(sb.median),
      ratio: round(sr.median / sb.median, 2),
      ratioSpread: `${rr.p25.toFixed(2)}–${rr.p75.toFixed(2)}`,
    });
    rows.push({
      name: `CLI: memory per retained quickjs sandbox, PSS (growth of every sandbox process’s PSS over ${N} sandboxes, divided by ${N})`,
      value: round(perPss, 2),
      unit: 'MiB',
      baseline:
        'node engine: memory per retained sandbox, PSS (median over the retained node sandboxes: runner and bubblewrap processes)',
      baselineValue: round(nodePss, 2),
      ratio: round(perPss / nodePss, 3),
      target: '<= 3',
    });
    rows.push({
      name: 'CLI: memory per retained quickjs sandbox, PSS, against a plain node child after one call',
      value: round(perPss, 2),
      unit: 'MiB',
      baseline: 'plain node child, PSS',
      baselineValue: round(plainPss, 2),
      ratio: round(perPss / plainPss, 3),
    });
    notes.push(
      `CLI: createNodeHost in this process (fresh home, default settings, OS sandbox posture ${posture || 'auto'}), the ` +
        'built dist/. Cold: ' +
        `${o.coldRuns} interleaved triples (a new quickjs revision, a new node revision, a plain child). Warm: ` +
        `${o.warmCalls} rounds of three calls in rotating order. A quickjs call crosses the same pipe as a node call ` +
        '(to its principal’s sandbox host process, which hands it to the thread holding the sandbox), so the ' +
        'baseline “node minus a pipe round trip” leaves quickjs a thread hop and its interpreter to fit in 1.2x of the ' +
        'host’s own path.',
      `CLI, ${N} retained: installing the ${N} revisions took ${(installMs / 1000).toFixed(1)} s (store writes), ` +
        `their first calls ${(startMs / 1000).toFixed(1)} s (${(startMs / N).toFixed(1)} ms each, a new instance ` +
        'each). Memory: /proc/PID/smaps_rollup Pss summed over every process below this one (bubblewrap, node ' +
        'sandboxes, the quickjs sandbox host) before and after, the plain children excluded. A quickjs sandbox is ' +
        'charged what it holds against the host’s memory budget (2 MiB at start, then its heap and stack limit), ' +
        'and counts against maxInstances (2048), not the 16 process sandboxes.',
    );
  } finally {
    for (const c of plain) c.close();
    await host.close();
    await rm(home, { recursive: true, force: true });
  }
  return rows;
}

/**
 * @param {{ coldRuns?: number, warmCalls?: number, computeRuns?: number, retained?: number, randomCalls?: number,
 *   browserRetained?: number, browser?: boolean }} [opts]
 * @returns {Promise<{title: string, rows: object[], notes: string[]}>}
 */
export async function run(opts = {}) {
  const o = {
    coldRuns: 15,
    warmCalls: 400,
    computeRuns: 7,
    retained: 1000,
    randomCalls: 200,
    // Chromium's default cap of retained quickjs sandboxes per page (browser/host.ts BROWSER_MAX_INSTANCES)
    browserRetained: 100,
    browser: true,
    ...opts,
  };
  const load0 = os.loadavg();
  const notes = [];
  const rows = await cliRows(notes, o);
  if (o.browser) rows.push(...(await browserRows(notes, { coldRuns: o.coldRuns, retained: o.browserRetained })));
  notes.push(
    'isolated-vm is not measured: its releases for this Node (20, .nvmrc) are 5.x, whose install script fetches a ' +
      'prebuilt addon from GitHub or compiles one with node-gyp (6.x and 7.x need Node 22 and 24); the project ' +
      'installs no native addon (strict-allow-scripts).',
    `Load average at the start: ${load0.map((x) => x.toFixed(2)).join(', ')}; at the end: ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(', ')} (a shared 2-core machine: pairs and interleaved rounds compare like with like).`,
  );
  return { title: 'QuickJS engine beside the node engine and a plain child (CLI and Chromium)', rows, notes };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
