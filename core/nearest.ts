// "Did you mean": the nearest of known words to what was typed (Levenshtein); core, trusted side.

/** Levenshtein distance, for "did you mean". */
export function distance(a: string, b: string): number {
  const d = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0]!;
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = d[j]!;
      d[j] = Math.min(d[j]! + 1, d[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return d[b.length]!;
}

/** The closest of `candidates` to `word` (Levenshtein), when it is close enough to be a likely typo. */
export function nearest(word: string, candidates: readonly string[]): string | undefined {
  let best: { c: string; d: number } | undefined;
  for (const c of candidates) {
    if (c === word) continue;
    const d = distance(word.toLowerCase(), c.toLowerCase());
    if (!best || d < best.d) best = { c, d };
  }
  return best && best.d <= Math.max(1, Math.floor(word.length / 3)) ? best.c : undefined;
}
