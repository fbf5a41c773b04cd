// Crash consistency at every write point: each store scenario stopped at a sample of its file-system write points
// (SIGKILL, a torn write, a power loss dropping every unsynced change), then the store reopened and its invariants
// checked; test side. The full sweep of every point runs in test/bench/faults.bench.mjs (BENCHMARKS.md).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error plain JavaScript module shared with test/bench/faults.bench.mjs
import { ROOT, sweep } from './crash/harness.mjs';
// @ts-expect-error plain JavaScript module shared with test/bench/faults.bench.mjs
import { SCENARIOS } from './crash/scenarios.mjs';

interface Sweep {
  scenario: string;
  points: number;
  runs: number;
  stopped: number;
  byMode: Record<string, number>;
  violations: string[];
}
interface Scenario {
  name: string;
}

/** Every 4th point stopped by SIGKILL, another 4th by a power loss, two torn writes, the power loss at the end. */
const SAMPLE = 4;

describe('crash consistency at every write point', () => {
  it('the harness finds a careless writer out: an in-place write is torn, an unsynced one lost to a power loss', async () => {
    const careless = {
      name: 'careless writer (self-test)',
      async setup() {
        return {};
      },
      command: () => ({ script: join(ROOT, 'test', 'faults', 'crash', 'careless-child.mjs'), args: [] }),
      async check(home: string, _ctx: unknown, reported: { ok?: boolean; object?: string }[]) {
        const rep = reported.find((l) => l.ok);
        return rep && !existsSync(join(home, 'store', 'objects', rep.object ?? ''))
          ? ['the object reported written is gone']
          : [];
      },
    };
    const r = (await sweep(careless, {})) as Sweep;
    expect(r.points).toBeGreaterThan(0);
    expect(r.violations.some((v) => v.includes('does not re-hash') && v.includes('torn@'))).toBe(true);
    expect(r.violations.some((v) => v.includes('reported written is gone') && v.includes('power@'))).toBe(true);
  }, 120_000);

  for (const sc of SCENARIOS as Scenario[]) {
    it(`${sc.name}: stopped at a sample of its write points, the store reopens with every invariant held`, async () => {
      const r = (await sweep(sc, { sample: SAMPLE })) as Sweep;
      expect(r.points).toBeGreaterThan(0);
      // the process really was stopped at (nearly) every chosen point: the checks ran on interrupted stores
      expect(r.stopped).toBeGreaterThanOrEqual(r.runs - 2);
      expect(r.violations).toEqual([]);
    }, 300_000);
  }
});
