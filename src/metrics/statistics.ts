/**
 * The 95% intervals and two-sample tests of the metrics (pure, no engine). Every function takes
 * the sufficient statistics (counts, sums, sums of squares) and returns null where they cannot
 * give a figure (nothing scored, one answer for a variance), never a division by zero.
 *
 * The formulas (docs/metrics.md states them for users):
 * - NPS: the adjusted Wald interval (Rocks, "Interval Estimation for the Net Promoter Score",
 *   The American Statistician 70(4), 2016, the best-covering of the six methods studied there):
 *   add 3/4 to the promoters and to the detractors and 3 to n, then
 *   NPS' ± z·sqrt((p' + d' - (p' - d')²) / n'), clamped to [-100, 100]. Two NPS differ
 *   significantly when (NPS'1 - NPS'2) ± z·sqrt(V1 + V2) excludes 0 (same adjustment).
 * - A mean (CSAT, CES): mean ± t(0.975, n - 1)·s/sqrt(n), s the sample standard deviation
 *   (n - 1 in the denominator), clamped to the scale; n < 2 has no interval. Two means differ
 *   significantly by Welch's t-test (Welch-Satterthwaite degrees of freedom).
 * - A proportion (completion rate, copilot rates): the Wilson score interval; two proportions
 *   differ significantly when Newcombe's hybrid score interval of the difference (his method 10,
 *   built from the two Wilson intervals) excludes 0.
 * - A count over two windows of the same length (events): Poisson counts, the difference
 *   a - b ± z·sqrt(a + b) (the normal approximation of the conditional binomial test).
 */
import tQuantile from '@stdlib/stats-base-dists-t-quantile';

/** The two-sided 95% quantile of the standard normal distribution. */
export const Z95 = 1.959963984540054;

export type Interval = readonly [number, number];

/** A change between two samples: the difference, its 95% interval, and whether that excludes 0. */
export interface Difference {
  readonly delta: number;
  readonly ci95: Interval;
  readonly significant: boolean;
}

/** The two-sided 95% quantile of Student's t with `df` degrees of freedom (df > 0). */
export function t95(df: number): number {
  return tQuantile(0.975, df);
}

const clamp = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x));
const excludesZero = (ci: Interval) => ci[0] > 0 || ci[1] < 0;

// --- NPS -------------------------------------------------------------------------------------------

export interface NpsCounts {
  readonly promotors: number;
  readonly detractors: number;
  /** Every scored answer: promotors + neutrals + detractors. */
  readonly total: number;
}

/** The adjusted shares: the center and variance of the adjusted Wald interval, on the -1..1 scale. */
function adjustedNps(c: NpsCounts): { center: number; variance: number } {
  const n = c.total + 3;
  const p = (c.promotors + 0.75) / n;
  const d = (c.detractors + 0.75) / n;
  return { center: p - d, variance: (p + d - (p - d) ** 2) / n };
}

/** The 95% interval of the NPS (-100..100), or null with no scored answer. */
export function npsInterval(c: NpsCounts): Interval | null {
  if (c.total <= 0) return null;
  const { center, variance } = adjustedNps(c);
  const half = Z95 * Math.sqrt(variance);
  return [clamp(100 * (center - half), -100, 100), clamp(100 * (center + half), -100, 100)];
}

/** `a` minus `b` in NPS points; null when either has no scored answer. */
export function npsDifference(a: NpsCounts, b: NpsCounts): Difference | null {
  if (a.total <= 0 || b.total <= 0) return null;
  const x = adjustedNps(a);
  const y = adjustedNps(b);
  const observed = (100 * (a.promotors - a.detractors)) / a.total - (100 * (b.promotors - b.detractors)) / b.total;
  const center = 100 * (x.center - y.center);
  const half = 100 * Z95 * Math.sqrt(x.variance + y.variance);
  const ci95: Interval = [center - half, center + half];
  return { delta: observed, ci95, significant: excludesZero(ci95) };
}

// --- means -----------------------------------------------------------------------------------------

/** n scores, their sum and the sum of their squares. */
export interface Moments {
  readonly n: number;
  readonly sum: number;
  readonly sumSquares: number;
}

/** Moments of score -> count pairs. */
export function momentsOf(counts: Iterable<readonly [score: number, count: number]>): Moments {
  let n = 0;
  let sum = 0;
  let sumSquares = 0;
  for (const [score, count] of counts) {
    n += count;
    sum += score * count;
    sumSquares += score * score * count;
  }
  return { n, sum, sumSquares };
}

/** The sample variance (n - 1 in the denominator); never below 0 (float cancellation). */
function sampleVariance(m: Moments): number {
  return Math.max(0, (m.sumSquares - (m.sum * m.sum) / m.n) / (m.n - 1));
}

/** The 95% interval of the mean, clamped to [lo, hi] (the scale); null with fewer than 2 scores. */
export function meanInterval(m: Moments, lo: number, hi: number): Interval | null {
  if (m.n < 2) return null;
  const mean = m.sum / m.n;
  const half = t95(m.n - 1) * Math.sqrt(sampleVariance(m) / m.n);
  return [clamp(mean - half, lo, hi), clamp(mean + half, lo, hi)];
}

/**
 * `a` minus `b` of the means, by Welch's t-test; null when either has fewer than 2 scores. With no
 * variance on either side the interval is the difference itself (significant when it is not 0).
 */
export function meanDifference(a: Moments, b: Moments): Difference | null {
  if (a.n < 2 || b.n < 2) return null;
  const delta = a.sum / a.n - b.sum / b.n;
  const va = sampleVariance(a) / a.n;
  const vb = sampleVariance(b) / b.n;
  const se = Math.sqrt(va + vb);
  if (se === 0) return { delta, ci95: [delta, delta], significant: delta !== 0 };
  const df = (va + vb) ** 2 / (va ** 2 / (a.n - 1) + vb ** 2 / (b.n - 1));
  const half = t95(df) * se;
  const ci95: Interval = [delta - half, delta + half];
  return { delta, ci95, significant: excludesZero(ci95) };
}

// --- proportions -----------------------------------------------------------------------------------

/** The Wilson score interval of `successes` out of `n`; null when n is 0. */
export function wilsonInterval(successes: number, n: number): Interval | null {
  if (n <= 0) return null;
  const z2 = Z95 * Z95;
  const p = successes / n;
  const center = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (Z95 / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  // At 0 or n successes the bound is exactly 0 or 1 (the formula gives it up to a float's last bit).
  return [successes === 0 ? 0 : clamp(center - half, 0, 1), successes === n ? 1 : clamp(center + half, 0, 1)];
}

export interface Proportion {
  readonly successes: number;
  readonly n: number;
}

/** `a` minus `b` of two proportions, Newcombe's hybrid score interval; null when either n is 0. */
export function proportionDifference(a: Proportion, b: Proportion): Difference | null {
  const ia = wilsonInterval(a.successes, a.n);
  const ib = wilsonInterval(b.successes, b.n);
  if (!ia || !ib) return null;
  const pa = a.successes / a.n;
  const pb = b.successes / b.n;
  const delta = pa - pb;
  const ci95: Interval = [
    delta - Math.sqrt((pa - ia[0]) ** 2 + (ib[1] - pb) ** 2),
    delta + Math.sqrt((ia[1] - pa) ** 2 + (pb - ib[0]) ** 2),
  ];
  return { delta, ci95, significant: excludesZero(ci95) };
}

// --- counts ----------------------------------------------------------------------------------------

/** `a` minus `b`, two Poisson counts over windows of the same length. */
export function countDifference(a: number, b: number): Difference {
  const delta = a - b;
  const half = Z95 * Math.sqrt(a + b);
  const ci95: Interval = [delta - half, delta + half];
  return { delta, ci95, significant: a + b > 0 && excludesZero(ci95) };
}

// --- rounding --------------------------------------------------------------------------------------

/** x rounded to `decimals`, half away from zero, never -0. */
export function round(x: number, decimals: number): number {
  const f = 10 ** decimals;
  const r = (Math.sign(x) * Math.round(Math.abs(x) * f)) / f;
  return r === 0 ? 0 : r;
}

/**
 * num / den (integers, den > 0) rounded to `decimals`, half away from zero, in integers: no float
 * drift (57 / 800 = 0.07125 -> 0.0713, where round(57 / 800, 4) gives 0.0712). Never -0.
 */
export function roundedRatio(num: number, den: number, decimals: number): number {
  const f = 10 ** decimals;
  const scaled = Math.floor((2 * Math.abs(num) * f + den) / (2 * den));
  const r = (Math.sign(num) * scaled) / f;
  return r === 0 ? 0 : r;
}

export const roundInterval = (ci: Interval | null, decimals: number): [number, number] | null => (ci ? [round(ci[0], decimals), round(ci[1], decimals)] : null);
