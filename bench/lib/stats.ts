/**
 * Latency percentiles. Every sample is kept (a run of minutes holds at most a few hundred thousand
 * numbers), so the percentiles are exact, not approximated by histogram buckets.
 */
export interface LatencySummary {
  count: number;
  mean: number;
  p50: number;
  p95: number;
  p99: number;
  p999: number;
  max: number;
}

/** Nearest-rank percentile of an ascending array; NaN when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

export function summarize(values: readonly number[]): LatencySummary {
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (const x of sorted) sum += x;
  return {
    count: sorted.length,
    mean: sorted.length ? sum / sorted.length : NaN,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    p999: percentile(sorted, 99.9),
    max: sorted.length ? sorted[sorted.length - 1] : NaN,
  };
}

/** Counts per whole second since `startMs`: shows whether a rate was sustained or bursty. */
export class PerSecond {
  private readonly buckets: number[] = [];
  constructor(private readonly startMs: number) {}
  add(atMs: number, n: number) {
    const i = Math.floor((atMs - this.startMs) / 1000);
    if (i < 0) return;
    while (this.buckets.length <= i) this.buckets.push(0);
    this.buckets[i] += n;
  }
  /** Whole seconds only (the last, partial second is dropped). */
  values(seconds: number): number[] {
    const out = this.buckets.slice(0, Math.floor(seconds));
    while (out.length < Math.floor(seconds)) out.push(0);
    return out;
  }
}

export const round = (x: number, digits = 1): number => (Number.isFinite(x) ? Math.round(x * 10 ** digits) / 10 ** digits : x);
