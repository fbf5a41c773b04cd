// Benchmark helper: memory per sandbox process (by process kind), the idle-node floor, and V8 flag experiments with
// their compute cost; test side.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { spread, summary } from './stats.mjs';

const round = (x, d = 1) => Number(x.toFixed(d));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * RSS, PSS and anonymous memory of one process, KiB (/proc/PID/smaps_rollup), and its command name; undefined when
 * gone.
 */
export function memOf(pid) {
  try {
    const t = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(t)?.[1] ?? 0);
    return {
      rss: kb('Rss'),
      pss: kb('Pss'),
      anon: kb('Anonymous'),
      comm: readFileSync(`/proc/${pid}/comm`, 'utf8').trim(),
    };
  } catch {
    return undefined;
  }
}

/** RSS / PSS / anonymous MiB summed per command name (`node`, `bwrap`, `deno`) over `pids`, with process counts. */
export function memoryByKind(pids) {
  const out = {};
  for (const p of pids) {
    const m = memOf(p);
    if (!m) continue;
    const k = (out[m.comm] ??= { procs: 0, rss: 0, pss: 0, anon: 0 });
    k.procs++;
    k.rss += m.rss / 1024;
    k.pss += m.pss / 1024;
    k.anon += m.anon / 1024;
  }
  return out;
}

/**
 * A small tool's work (JSON in and out, string building, 2e5 small objects), then idle. The child prints the CPU time
 * (user + system, all its threads, ms) the work took: under a loaded shared machine CPU time moves far less than wall
 * time.
 */
const FLAG_WORK =
  "const c0=process.cpuUsage();let s=0;for(let i=0;i<20000;i++){const o=JSON.parse(JSON.stringify({i,data:'x'.repeat(200),a:[1,2,3]}));s+=o.data.length+o.a.length}const " +
  'xs=[];for(let i=0;i<2e5;i++)xs.push({k:i%97,v:i*1.5});for(let r=0;r<10;r++)for(const x of xs)s+=x.k*x.v>1e3?1:0;const ' +
  "c=process.cpuUsage(c0);process.stdout.write(((c.user+c.system)/1000).toFixed(2)+'\\n');setInterval(()=>{},1000)";
const IDLE = 'setInterval(()=>{},1e9)';

/**
 * Spawn `node flags -e code` (empty environment), wait for its first output line (or `waitMs` when `code` prints
 * nothing), read its memory, kill it.
 */
async function probe(flags, code, waitMs) {
  const c = spawn(process.execPath, [...flags, '-e', code], { env: {}, stdio: ['ignore', 'pipe', 'ignore'] });
  const out =
    waitMs === undefined
      ? await new Promise((res) => c.stdout.once('data', (d) => res(String(d))))
      : (await sleep(waitMs), '');
  await sleep(100);
  const m = memOf(c.pid);
  c.kill('SIGKILL');
  await new Promise((r) => c.once('exit', r));
  return m && { rss: m.rss / 1024, pss: m.pss / 1024, anon: m.anon / 1024, cpuMs: Number(out.trim()) };
}

/**
 * V8 flag experiments on a plain node child doing a small tool's work: every configuration in turn, `runs` rounds
 * (so machine load hits each alike). Rows: RSS after the work against V8's defaults, with the anonymous memory and the
 * work's CPU time against the defaults' in the name.
 * @param {string[]} runnerFlags the flags the Node runner uses (node/sandbox/runtime.ts nodeRunnerV8Flags)
 */
export async function flagRows(runnerFlags, runs = 5) {
  const configs = [
    ['V8 defaults', []],
    [`the runner's flags (${runnerFlags.join(' ')})`, runnerFlags],
    ["--max-semi-space-size=4 (the runner's earlier cap)", ['--max-semi-space-size=4']],
    ['--optimize-for-size', ['--optimize-for-size']],
    ['--single-threaded', ['--single-threaded']],
    ['--lite-mode', ['--lite-mode']],
    ['--jitless', ['--jitless']],
  ];
  const res = configs.map(() => ({ rss: [], pss: [], anon: [], cpu: [] }));
  for (let r = 0; r < runs; r++) {
    for (let j = 0; j < configs.length; j++) {
      const k = (r + j) % configs.length;
      const m = await probe(configs[k][1], FLAG_WORK);
      if (!m) continue;
      res[k].rss.push(m.rss);
      res[k].pss.push(m.pss);
      res[k].anon.push(m.anon);
      res[k].cpu.push(m.cpuMs);
    }
  }
  const s = res.map((x) => ({ rss: summary(x.rss), pss: summary(x.pss), anon: summary(x.anon), cpu: summary(x.cpu) }));
  const base = s[0];
  return configs.slice(1).map(([name], i) => {
    const f = s[i + 1];
    return {
      name:
        `node ${name}: RSS after a small tool's work (anonymous ${round(f.anon.median)} MiB vs ${round(base.anon.median)}; ` +
        `the work's CPU time ${round(f.cpu.median)} ms vs ${round(base.cpu.median)} ms, ${(f.cpu.median / base.cpu.median).toFixed(2)}x)`,
      value: round(f.rss.median),
      unit: 'MiB',
      spread: spread(f.rss, base.rss, 1),
      baseline: 'plain node child, V8 defaults, same work',
      baselineValue: round(base.rss.median),
      ratio: round(f.rss.median / base.rss.median, 2),
    };
  });
}

/**
 * The floor of a retained sandbox's memory: one idle node process with the runner's flags that has loaded nothing
 * (`env -i node FLAGS -e 'setInterval(...)'`), median of `runs`; plus, when given, bubblewrap's processes per sandbox.
 * @param {string[]} runnerFlags
 * @param {{ rss: number, pss: number } | undefined} bwrapPerSandbox MiB of the wrapper's processes per sandbox
 * @param {{ rss: number, pss: number }} perSandbox the measured MiB per retained sandbox
 */
export async function floorRows(runnerFlags, bwrapPerSandbox, perSandbox, runs = 3) {
  const rss = [];
  const pss = [];
  for (let r = 0; r < runs; r++) {
    const m = await probe(runnerFlags, IDLE, 300);
    if (m) rss.push(m.rss), pss.push(m.pss);
  }
  const idle = { rss: summary(rss).median, pss: summary(pss).median };
  const rows = [
    {
      name: `floor: one idle node process with the runner's flags, nothing loaded (env -i node ${runnerFlags.join(' ')} -e '${IDLE}'; PSS ${round(idle.pss)} MiB)`,
      value: round(idle.rss),
      unit: 'MiB',
      spread: spread(summary(rss), undefined, 1),
      baseline: 'target per retained sandbox',
      baselineValue: 30,
      ratio: round(idle.rss / 30, 2),
    },
  ];
  if (bwrapPerSandbox) {
    const f = idle.rss + bwrapPerSandbox.rss;
    rows.push({
      name: `floor of a retained sandbox: that idle node process plus bubblewrap's processes as measured per sandbox (${round(bwrapPerSandbox.rss)} MiB RSS, ${round(bwrapPerSandbox.pss)} MiB PSS)`,
      value: round(f),
      unit: 'MiB',
      baseline: 'memory per retained sandbox, RSS (row above)',
      baselineValue: round(perSandbox.rss),
      ratio: round(perSandbox.rss / f, 2),
    });
  }
  return rows;
}
