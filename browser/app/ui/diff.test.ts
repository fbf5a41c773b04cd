// Unit tests for the Tools panel's line diff (browser/app/ui/diff.ts); test code.
import { describe, expect, it } from 'vitest';
import { lineDiff } from './diff.js';

describe('lineDiff', () => {
  it('keeps common lines and marks removed and added ones', () => {
    expect(lineDiff('a\nb\nc', 'a\nB\nc\nd')).toEqual([
      { op: ' ', text: 'a' },
      { op: '-', text: 'b' },
      { op: '+', text: 'B' },
      { op: ' ', text: 'c' },
      { op: '+', text: 'd' },
    ]);
    expect(lineDiff('x\ny', 'x\ny')).toEqual([
      { op: ' ', text: 'x' },
      { op: ' ', text: 'y' },
    ]);
    expect(
      lineDiff('p\n1\n2\ns', 'p\n3\ns', 0)
        .map((l) => l.op)
        .join(''),
    ).toBe(' --+ ');
  });

  it('rebuilds both sources, changes no more lines than needed, and shows each run of changes removed lines first', () => {
    let seed = 7;
    const next = (k: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % k;
    };
    const text = (n: number, alphabet: number) =>
      Array.from({ length: n }, () => String.fromCharCode(97 + next(alphabet))).join('\n');
    /** Length of a longest common subsequence of the two line lists: what a shortest edit script keeps. */
    const lcs = (x: string[], y: string[]) => {
      const L = Array.from({ length: x.length + 1 }, () => new Array<number>(y.length + 1).fill(0));
      for (let i = x.length - 1; i >= 0; i--)
        for (let j = y.length - 1; j >= 0; j--)
          L[i]![j] = x[i] === y[j] ? L[i + 1]![j + 1]! + 1 : Math.max(L[i + 1]![j]!, L[i]![j + 1]!);
      return L[0]![0]!;
    };
    for (let t = 0; t < 2000; t++) {
      const alphabet = 2 + next(5);
      const a = text(next(12), alphabet);
      const b = text(next(12), alphabet);
      const d = lineDiff(a, b);
      const label = `${JSON.stringify(a)} -> ${JSON.stringify(b)}`;
      expect(
        d
          .filter((l) => l.op !== '+')
          .map((l) => l.text)
          .join('\n'),
        label,
      ).toBe(a);
      expect(
        d
          .filter((l) => l.op !== '-')
          .map((l) => l.text)
          .join('\n'),
        label,
      ).toBe(b);
      expect(d.filter((l) => l.op === ' ').length, label).toBe(lcs(a.split('\n'), b.split('\n')));
      expect(d.map((l) => l.op).join(''), label).not.toMatch(/\+-/);
    }
  });
});
