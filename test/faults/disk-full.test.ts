// Fault suite: a full disk (a small tmpfs) tears audit lines, and every record written after space returns still
// parses; test side.
import { describe, expect, it } from 'vitest';
// @ts-expect-error plain JavaScript module shared with test/bench/faults.bench.mjs
import { diskFullScenario } from './scenarios.mjs';

describe('disk full', () => {
  it('a full disk fails appends with E_STORE (torn tails left behind); after space returns every new record parses', async () => {
    const r = (await diskFullScenario()) as {
      failedFull: number;
      okAfter: number;
      corruptAfter: number;
      unreadable: number;
      codes: Record<string, number>;
    };
    expect(r.failedFull).toBeGreaterThan(0);
    expect(Object.keys(r.codes)).toEqual(['E_STORE']);
    expect(r.okAfter).toBe(20);
    expect(r.corruptAfter).toBe(0);
  });
});
