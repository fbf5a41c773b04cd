// A line diff (longest common subsequence) for showing a new revision's source against the active one; browser app,
// trusted side.

export type DiffLine = { op: ' ' | '+' | '-'; text: string };

/**
 * Lines of `a` and `b` as kept (' '), removed ('-') and added ('+'), by the classic LCS dynamic program.
 * Bounded: with more than `maxCells` (default 4 000 000) line pairs, the common prefix and suffix are kept and
 * the middle is shown as all removed, then all added.
 */
export function lineDiff(a: string, b: string, maxCells = 4_000_000): DiffLine[] {
  const x = a.split('\n');
  const y = b.split('\n');
  let pre = 0;
  while (pre < x.length && pre < y.length && x[pre] === y[pre]) pre++;
  let suf = 0;
  while (suf < x.length - pre && suf < y.length - pre && x[x.length - 1 - suf] === y[y.length - 1 - suf]) suf++;
  const xs = x.slice(pre, x.length - suf);
  const ys = y.slice(pre, y.length - suf);
  const out: DiffLine[] = x.slice(0, pre).map((text) => ({ op: ' ', text }));
  if (xs.length * ys.length > maxCells) {
    out.push(...xs.map((text) => ({ op: '-' as const, text })), ...ys.map((text) => ({ op: '+' as const, text })));
  } else {
    const n = xs.length;
    const m = ys.length;
    const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        L[i]![j] = xs[i] === ys[j] ? L[i + 1]![j + 1]! + 1 : Math.max(L[i + 1]![j]!, L[i]![j + 1]!);
    let i = 0;
    let j = 0;
    while (i < n && j < m) {
      if (xs[i] === ys[j]) {
        out.push({ op: ' ', text: xs[i]! });
        i++;
        j++;
      } else if (L[i + 1]![j]! >= L[i]![j + 1]!) out.push({ op: '-', text: xs[i++]! });
      else out.push({ op: '+', text: ys[j++]! });
    }
    while (i < n) out.push({ op: '-', text: xs[i++]! });
    while (j < m) out.push({ op: '+', text: ys[j++]! });
  }
  out.push(...x.slice(x.length - suf).map((text) => ({ op: ' ' as const, text })));
  return out;
}
