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

  return {
    title: 'Faults: kill -9, disk full, load, misbehaving sandboxes',
    rows,
    notes: [
      'Each figure from the real CLI (bin/tycli.mjs on dist/) and the real OS sandbox posture of this machine; test/faults/*.test.ts assert the zero rows.',
      'lost counts sandboxes that were spawned (so tool code could run) for a tycli process with no audit record of the call; a started record is written before the sandbox runs the call.',
      'The fork bomb next to a working tool and the FIFO order of 1,000 concurrent calls are pass/fail tests (test/faults/forkbomb.test.ts, test/faults/fifo.test.ts).',
    ],
  };
}
