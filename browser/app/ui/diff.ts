// A line diff (the `diff` package's Myers diff, as `tycli tool diff` uses) for showing a new revision's source against
// the active one; browser app, trusted side.
import { diffArrays } from 'diff';

export type DiffLine = { op: ' ' | '+' | '-'; text: string };

/**
 * Lines of `a` and `b` (split at '\n') as kept (' '), removed ('-') and added ('+'): a shortest edit script, each run
 * of changes with its removed lines first. Bounded: the common prefix and suffix are kept, and when the changed middle
 * needs more edits than `budget` divided by its line count (the Myers search does about that many line comparisons;
 * default 4 000 000), it is shown as all removed, then all added.
 */
export function lineDiff(a: string, b: string, budget = 4_000_000): DiffLine[] {
  const x = a.split('\n');
  const y = b.split('\n');
  let pre = 0;
  while (pre < x.length && pre < y.length && x[pre] === y[pre]) pre++;
  let suf = 0;
  while (suf < x.length - pre && suf < y.length - pre && x[x.length - 1 - suf] === y[y.length - 1 - suf]) suf++;
  const xs = x.slice(pre, x.length - suf);
  const ys = y.slice(pre, y.length - suf);
  const out: DiffLine[] = x.slice(0, pre).map((text) => ({ op: ' ', text }));
  const changes = diffArrays(xs, ys, { maxEditLength: Math.floor(budget / Math.max(1, xs.length + ys.length)) });
  if (changes === undefined) {
    out.push(...xs.map((text) => ({ op: '-' as const, text })), ...ys.map((text) => ({ op: '+' as const, text })));
  } else {
    for (const c of changes) {
      const op = c.added ? '+' : c.removed ? '-' : ' ';
      for (const text of c.value) out.push({ op, text });
    }
  }
  out.push(...x.slice(x.length - suf).map((text) => ({ op: ' ' as const, text })));
  return out;
}
