// Benchmark statistics helpers (quantiles, median, interquartile range, formatting); test side.

/** Quantile `q` (0..1) of `xs` with linear interpolation between order statistics (R type 7 / numpy default). */
export function quantile(xs, q) {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

/** Median, p25, p75 and the sample count of `xs`. */
export function summary(xs) {
  return { median: quantile(xs, 0.5), p25: quantile(xs, 0.25), p75: quantile(xs, 0.75), n: xs.length };
}

/** `p25–p75` of a summary, rounded to `d` decimals. */
export function iqr(s, d = 3) {
  return `${s.p25.toFixed(d)}–${s.p75.toFixed(d)}`;
}

/**
 * Spread cell for a row: the value's interquartile range, and the baseline's when given, e.g. `44.1–52.3 (base
 * 36.0–39.8)`.
 * Ratios in the tables are median / median; the spread shows how far apart the samples lie.
 */
export function spread(value, baseline, d = 3) {
  return baseline ? `${iqr(value, d)} (base ${iqr(baseline, d)})` : iqr(value, d);
}

/**
 * Per-pair ratios of two interleaved sample lists (a[i] / b[i]), summarized: for cold starts run pairwise, the
 * spread of the ratio itself shows whether a target like `<= 1.3x` is met beyond noise.
 */
export function pairRatio(a, b) {
  const r = [];
  for (let i = 0; i < Math.min(a.length, b.length); i++) r.push(a[i] / b[i]);
  return summary(r);
}
