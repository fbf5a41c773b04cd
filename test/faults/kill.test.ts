// Fault suite: kill -9 of tycli at random moments of `run` and `tool add` loses no audit record, corrupts nothing,
// leaves no process; test side.
import { describe, expect, it } from 'vitest';
// @ts-expect-error plain JavaScript module shared with test/bench/faults.bench.mjs
import { killRunScenario, killToolAddScenario } from './scenarios.mjs';

interface RunFigures {
  runs: number;
  spawned: number;
  completed: number;
  interrupted: number;
  lost: number;
  corrupt: number;
  orphans: number;
}
interface AddFigures {
  runs: number;
  finished: number;
  lost: number;
  corrupt: number;
}

describe('kill -9', () => {
  it('kill -9 of tycli run at random moments loses no audit record: every spawned call is recorded (interrupted or finished), nothing corrupt, no orphan', async () => {
    const r = (await killRunScenario({ runs: 8, seed: 3 })) as RunFigures;
    expect(r.lost).toBe(0);
    expect(r.corrupt).toBe(0);
    expect(r.orphans).toBe(0);
    // the schedule kills half the runs after their sandbox started: some calls were cut off mid-way
    expect(r.spawned).toBeGreaterThan(0);
    expect(r.interrupted).toBeGreaterThan(0);
  }, 240_000);

  it('kill -9 of tycli tool add at random moments never leaves a store that cannot list, show or re-add', async () => {
    const r = (await killToolAddScenario({ runs: 6, seed: 11 })) as AddFigures;
    expect(r.corrupt).toBe(0);
    expect(r.lost).toBe(0);
  }, 240_000);
});
