// Unit tests of the progress throttle: the first report at once, then at most one per interval, the latest kept,
// nothing after close (fake timers: no wall-clock assertion); trusted side.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ProgressThrottle, type ProgressReport } from './progress.js';

describe('ProgressThrottle', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('coalesces a tight loop of reports to one per interval, delivering the latest', () => {
    const got: ProgressReport[] = [];
    const t = new ProgressThrottle(
      (r) => got.push(r),
      100,
      () => Date.now(),
    );
    for (let i = 0; i <= 1000; i++) t.push({ fraction: i / 1000, message: `step ${i}` });
    expect(got).toEqual([{ fraction: 0, message: 'step 0' }]);
    vi.advanceTimersByTime(100);
    expect(got).toEqual([
      { fraction: 0, message: 'step 0' },
      { fraction: 1, message: 'step 1000' },
    ]);
    vi.advanceTimersByTime(1000);
    expect(got).toHaveLength(2);
  });

  it('close delivers the report that waits (the last word before the result), then nothing more', () => {
    const got: ProgressReport[] = [];
    const t = new ProgressThrottle(
      (r) => got.push(r),
      100,
      () => Date.now(),
    );
    t.push({ fraction: 0.1 });
    t.push({ fraction: 0.2 });
    t.push({ fraction: 0.3 });
    t.close();
    expect(got).toEqual([{ fraction: 0.1 }, { fraction: 0.3 }]);
    vi.advanceTimersByTime(500);
    t.push({ fraction: 0.4 });
    t.close();
    expect(got).toEqual([{ fraction: 0.1 }, { fraction: 0.3 }]);
  });

  it('a listener that throws does not stop later reports', () => {
    let n = 0;
    const t = new ProgressThrottle(
      () => {
        n++;
        throw new Error('listener bug');
      },
      10,
      () => Date.now(),
    );
    t.push({ fraction: 0 });
    vi.advanceTimersByTime(20);
    t.push({ fraction: 1 });
    expect(n).toBe(2);
  });
});
