// Benchmark: what retained sandboxes cost at rest: their wake-ups per second while idle (timers in the runner and the
// guest) and their memory, against plain node children measured alongside; test side.
import { benchHost, descendants, load, loadNow, plainChild, round, runCount, sleep } from './host-fixtures.mjs';
import { flagRows, floorRows, memoryByKind } from './runner-memory.mjs';
import { spread, summary } from './stats.mjs';

/** @returns {Promise<{title: string, rows: object[], notes: string[]}>} */
export async function run({ idleSeconds = 5, windows = 3 } = {}) {
  const mod = await load();
  const loadAtStart = loadNow();
  const rows = [];
  const notes = [];
  const tools = Array.from({ length: 8 }, (_, i) => `warm${i}`);
  const h = await benchHost(mod, tools, { prefix: 'ty-bench-idle-' });
  const plain = Array.from({ length: 8 }, () => plainChild());
  try {
    const small = { data: 'hello', k: 3 };
    // some work in every sandbox (and every plain child), then rest
    for (let r = 0; r < 50; r++) for (const t of tools) await h.call(t, small);
    for (let r = 0; r < 50; r++) for (const c of plain) await c.call(small);
    const plainPids = new Set(plain.map((c) => c.pid));
    await sleep(1000); // past the runner's idle collection and the host's STAGED_SYNC_MS round
    const sandboxPids = descendants(process.pid).filter((p) => !plainPids.has(p));
    // Idle wake-ups: times the kernel scheduled a thread of those processes in, over windows of `idleSeconds` with no
    // call at all, per sandbox (its whole process tree) and per second.
    const perSandbox = [];
    const perPlain = [];
    for (let w = 0; w < windows; w++) {
      const s0 = runCount(sandboxPids);
      const p0 = runCount([...plainPids]);
      await sleep(idleSeconds * 1000);
      perSandbox.push((runCount(sandboxPids) - s0) / tools.length / idleSeconds);
      perPlain.push((runCount([...plainPids]) - p0) / plain.length / idleSeconds);
    }
    const ws = summary(perSandbox);
    const wp = summary(perPlain);
    rows.push({
      name:
        `idle wake-ups per retained sandbox per second (every thread of its ${Math.round(sandboxPids.length / tools.length)} ` +
        `processes, ${windows} windows of ${idleSeconds} s with no call, after 50 calls each)`,
      value: round(ws.median, 2),
      unit: 'wake-ups/s',
      spread: spread(ws, wp, 2),
      baseline: 'a plain node child waiting on its input, after the same calls, same windows',
      baselineValue: round(wp.median, 2),
      target: '<= 0',
    });

    // Memory: every process of the 8 sandbox trees
    const kinds = memoryByKind(sandboxPids);
    const sum = (f) => Object.values(kinds).reduce((a, k) => a + f(k), 0);
    const m = { rss: sum((k) => k.rss), pss: sum((k) => k.pss), procs: sum((k) => k.procs) };
    const b = memoryByKind([plain[0].pid]).node ?? { rss: Number.NaN, pss: Number.NaN };
    const per = m.rss / tools.length;
    const perPss = m.pss / tools.length;
    const parts = Object.entries(kinds)
      .map(
        ([k, v]) =>
          `${v.procs / tools.length} ${k} ${round(v.rss / tools.length, 1)} MiB RSS / ${round(v.pss / tools.length, 1)} PSS / ${round(v.anon / tools.length, 1)} anonymous`,
      )
      .join('; ');
    rows.push({
      name: `memory per retained sandbox, RSS (${tools.length} retained, ${m.procs / tools.length} processes each: ${parts})`,
      value: round(per, 1),
      unit: 'MiB',
      baseline: 'one plain node child after the same calls',
      baselineValue: round(b.rss, 1),
      ratio: round(per / b.rss, 2),
      target: '<= 30',
    });
    rows.push({
      name: 'memory per retained sandbox, PSS (shared pages split among the processes sharing them)',
      value: round(perPss, 1),
      unit: 'MiB',
      baseline: 'one plain node child after the same calls, PSS',
      baselineValue: round(b.pss, 1),
      ratio: round(perPss / b.pss, 2),
    });
    for (const c of plain) c.close();
    plain.length = 0;
    const runnerFlags = mod.nodeRunnerV8Flags(mod.DEFAULT_LIMITS.memoryMb);
    const wrapper = kinds.bwrap
      ? { rss: kinds.bwrap.rss / tools.length, pss: kinds.bwrap.pss / tools.length }
      : undefined;
    rows.push(...(await floorRows(runnerFlags, wrapper, { rss: per, pss: perPss })));
    // V8 flags a small runner could take: memory and CPU time of a plain node child doing a small tool's work
    rows.push(...(await flagRows(runnerFlags)));
    notes.push(
      'wake-ups: the third field of /proc/PID/task/TID/schedstat (times a thread was put on a CPU) summed over every ' +
        'thread of the sandbox processes (bubblewrap and the engine), read before and after each window; a process ' +
        'blocked on its input makes none. The runner watches its channel (fd 0 and fd 1 replaced or closed) only while ' +
        'a call is in flight, and checks it as each message arrives and before each write; the host keeps no ' +
        "per-sandbox timer between calls but the pool's one idle-eviction timer per sandbox (idleMs), which fires in " +
        'the host, not the sandbox',
      `memory floor (floor rows): one idle node process that has loaded nothing holds about ${round(b.rss, 0)} MiB ` +
        `RSS here, most of it the node executable's code pages (about 30 MiB of /usr/bin/node mapped), shared by every ` +
        `node process: counted whole in each process's RSS, split in PSS. A retained sandbox is one such process plus ` +
        `bubblewrap's two small ones, so <= 30 MiB RSS is below the floor of one node process per sandbox, whatever ` +
        `the flags (--jitless and --lite-mode leave the optimizing compiler's code pages untouched, a few MiB of ` +
        `shared RSS, at two to three times the CPU). PSS is what each further sandbox really adds`,
      "the runner's V8 flags (node/sandbox/runtime.ts nodeRunnerV8Flags, chosen from the flag rows): " +
        '--max-semi-space-size=1 at the default 256 MiB heap (1/256 of the heap limit, 1-16 MiB; V8 lets each ' +
        'semi-space grow to 16 MiB and keeps it) holds the least anonymous memory after the work at no CPU cost beyond ' +
        "noise; --v8-pool-size=1 runs V8's background work (concurrent marking, parallel scavenges, background " +
        'compilation) on one platform thread instead of four: three threads and about 1 MiB fewer per sandbox. ' +
        'Rejected: --optimize-for-size (the same memory as the semi-space cap, more CPU), --single-threaded (all GC ' +
        'work on the main thread), --lite-mode and --jitless (see the floor note). The Deno runner takes the same ' +
        "semi-space cap; Python sandboxes keep V8's defaults",
      'bubblewrap --as-pid-1 would drop its pid-1 reaper (its RSS is in the per-kind breakdown of the memory row) ' +
        "but is not used: the kernel drops signals with a default action sent to a PID namespace's init, so " +
        "RLIMIT_CPU's SIGXCPU at the soft limit would be ignored (the CPU limit would kill only at the hard limit, as " +
        'an unexplained SIGKILL instead of "CPU time limit reached") and the runner could not SIGKILL itself when its ' +
        'channel is closed or replaced',
      'memory: /proc/PID/smaps_rollup Rss and Pss summed over every process of the sandbox trees after the calls, divided by the number of sandboxes; the memory target is a value (MiB), not a ratio',
      `load average at the start: ${loadAtStart}; at the end: ${loadNow()} (a shared 2-core machine)`,
    );
  } finally {
    for (const c of plain) c.close();
    await h.close();
  }
  return { title: 'Retained sandboxes at rest: idle wake-ups and memory', rows, notes };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await run();
  console.log(JSON.stringify(r, null, 2));
}
