// Benchmark: the fault suite's figures (completed, busy, lost, corrupt, orphans, time) from the real CLI and host; test
// side.
// Scenarios: test/faults/scenarios.mjs (shared with test/faults/*.test.ts, which assert 0 lost and 0 corrupt).
import {
  boundedWaitScenario,
  diskFullScenario,
  killRunScenario,
  killToolAddScenario,
  loadScenario,
} from '../faults/scenarios.mjs';
import { sweep } from '../faults/crash/harness.mjs';
import { SCENARIOS } from '../faults/crash/scenarios.mjs';
import { quantile } from './stats.mjs';

const median = (xs) => Math.round(quantile(xs, 0.5));

export async function run() {
  const rows = [];
  const row = (name, value, unit, extra = {}) => rows.push({ name, value, unit, ...extra });
  const zero = { target: '<= 0' };

  const kr = await killRunScenario({ runs: 16, seed: 5 });
  row(`kill -9 of tycli run (${kr.runs} runs, random moments): sandboxes started`, kr.spawned, 'calls');
  row('  … completed before the kill', kr.completed, 'calls');
  row('  … shown as interrupted by tycli audit', kr.interrupted, 'calls');
  row('  … lost (tool code could run, no audit record)', kr.lost, 'calls', zero);
  row('  … corrupt (unreadable audit lines, store not listing the tool)', kr.corrupt, 'count', zero);
  row('  … orphans (sandbox processes alive 5 s after the kill)', kr.orphans, 'processes', zero);
  row('  … time', (kr.ms / 1000).toFixed(1), 's');

  const ka = await killToolAddScenario({ runs: 10, seed: 9 });
  row(`kill -9 of tycli tool add (${ka.runs} runs): adds that finished`, ka.finished, 'adds');
  row('  … lost (finished add whose revision is gone)', ka.lost, 'adds', zero);
  row('  … corrupt (list, show or re-add failing afterwards)', ka.corrupt, 'count', zero);
  row('  … time', (ka.ms / 1000).toFixed(1), 's');

  const df = await diskFullScenario();
  row('disk full (64 KiB tmpfs): audit appends refused while full', df.failedFull, 'records');
  row('  … torn fragments left (each its own unreadable line)', df.unreadable, 'lines');
  row('  … records written after space returned', df.okAfter, 'records');
  row('  … of those, corrupt (do not read back)', df.corruptAfter, 'records', zero);
  row('  … time', (df.ms / 1000).toFixed(1), 's');

  const base = await loadScenario({ calls: 1000, tools: 4 });
  const ld = await loadScenario({ calls: 10_000, tools: 4 });
  row('10,000 calls at once, ulimit -n 1024: completed', ld.completed, 'calls');
  row('  … E_BUSY (admission bound 1024)', ld.busy, 'calls');
  row(
    '  … failed otherwise (EMFILE included)',
    Object.values(ld.other).reduce((a, b) => a + b, 0),
    'calls',
    zero,
  );
  row('  … out of order within a sandbox', ld.outOfOrder, 'calls', zero);
  row('  … time to answer all', ld.ms, 'ms', {
    baseline: '1,000 calls at once, same host',
    baselineValue: base.ms,
    ratio: +(ld.ms / base.ms).toFixed(2),
  });

  const w = await boundedWaitScenario({ reps: 3 });
  const ok = median(w.ok);
  row(
    `a sandbox closing its stdout mid-call: time to ${w.codes.closer.join('/')} (timeout 60 s)`,
    median(w.closer),
    'ms',
    { baseline: 'a normal tycli run', baselineValue: ok, ratio: +(median(w.closer) / ok).toFixed(2) },
  );
  row(`a top-level endless loop with --timeout 500: time to ${w.codes.loop.join('/')}`, median(w.loop), 'ms', {
    baseline: 'a normal tycli run',
    baselineValue: ok,
    ratio: +(median(w.loop) / ok).toFixed(2),
  });

  // Crash consistency: every write point of every store scenario, in every mode (test/faults/crash/harness.mjs).
  const total = { points: 0, distinct: 0, runs: 0, stopped: 0, violations: 0, ms: 0 };
  for (const sc of SCENARIOS) {
    const r = await sweep(sc, {});
    total.points += r.points;
    total.distinct += r.distinct;
    total.runs += r.runs;
    total.stopped += r.stopped;
    total.violations += r.violations.length;
    total.ms += r.ms;
    row(
      `crash at every write point, ${sc.name}: write points of one run (${r.distinct} distinct); stops: ${r.byMode.kill} kill, ${r.byMode.torn} torn write, ${r.byMode.power} power loss`,
      r.points,
      'points',
    );
    row(`  … invariant violations (${sc.name})`, r.violations.length, 'count', zero);
    for (const v of r.violations.slice(0, 5)) process.stderr.write(`crash harness: ${v}\n`);
  }
  row(
    `crash at every write point: ${SCENARIOS.length} scenarios, ${total.points} write points (${total.distinct} distinct), processes stopped`,
    total.stopped,
    'runs',
  );
  row('  … invariant violations, all scenarios', total.violations, 'count', zero);
  row('  … time', (total.ms / 1000).toFixed(1), 's');

  return {
    title: 'Faults: kill -9, disk full, load, misbehaving sandboxes, crash at every write point',
    rows,
    notes: [
      'Each figure from the real CLI (bin/tycli.mjs on dist/) and the real OS sandbox posture of this machine; test/faults/*.test.ts assert the zero rows.',
      'lost counts sandboxes that were spawned (so tool code could run) for a tycli process with no audit record of the call; a started record is written before the sandbox runs the call.',
      'The fork bomb next to a working tool and the FIFO order of 1,000 concurrent calls are pass/fail tests (test/faults/forkbomb.test.ts, test/faults/fifo.test.ts).',
      [
        'Crash at every write point (test/faults/crash/): each scenario runs in a tycli process (the audit append one in a',
        'host process on the file store) with an fs interposer preloaded (interpose.mjs); its write points (open for',
        'writing, write, fsync/fdatasync, rename, mkdir, unlink, chmod under the home) are counted in a dry run, then for',
        'each point a fresh copy of the base home is stopped there: kill (SIGKILL before it), torn (half of that write,',
        "then SIGKILL) and power (SIGKILL, and every change not fsync'd dropped: a file's bytes as of its last fsync, a",
        "folder's entries as of its last fsync; also once after the command finished). After each stop the store is",
        'reopened and checked (objects re-hash, records whole, bindings and settings point at objects, torn audit lines',
        'never counted as records, nothing durable before the command lost, what the command reported done present, an',
        'effect that landed has its audit record), then the command is run again and the checks repeated. A few runs',
        'finish before their point when a run issues fewer writes than the dry run (timer-driven group commits).',
      ].join(' '),
    ],
  };
}
