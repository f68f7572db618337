/**
 * Date-histogram interval arithmetic (pure, no engine).
 *
 * Time is an integer count of microseconds since the Unix epoch (`bigint`), the precision of the
 * DateTime64(6, 'UTC') columns, so that bucket edges are exact and never drift through floats.
 *
 * The series for a range [start, end]:
 * - `end` is INCLUSIVE, like the range filter: a response at exactly `end` lands in the last bucket.
 *   Buckets are half-open, [starts[i], starts[i + 1]), and together cover [start, boundary) where
 *   `boundary` is the first bucket edge strictly after `end`. So a range that ends exactly on a
 *   bucket edge (e.g. 2024-01-01T00:00Z .. 2024-01-11T00:00Z by day) needs an extra bucket (11, not
 *   10) holding just that instant; a range written as ..T23:59:59.999999Z does not.
 * - The interval is k × the minimum interval with the smallest whole k for which the range fits in
 *   at most `maxBuckets` buckets. Buckets start at `start` (not at a calendar edge) and are contiguous.
 * - `hour` and `day` are fixed lengths (UTC has no DST). `month` steps are calendar months in UTC:
 *   bucket i starts at start + i·k months, the day of month clamped to the month's length
 *   (Jan 31 + 1 month = Feb 29 in 2024, + 2 months = Mar 31), as ClickHouse's addMonths does.
 * - end < start gives an empty series (nothing can fall in it).
 */
import { parseInstantMicros } from '../time/iso.ts';

export type MinInterval = 'hour' | 'day' | 'month';

export const MIN_INTERVALS: readonly MinInterval[] = ['hour', 'day', 'month'];

export const MICROS_PER_HOUR = 3_600_000_000n;
export const MICROS_PER_DAY = 86_400_000_000n;

export interface HistogramPlan {
  readonly unit: MinInterval;
  /** The multiplier of the minimum interval. */
  readonly k: number;
  /** e.g. "1 day", "3 day", "2 month" (unit always singular, as in the API docs). */
  readonly interval: string;
  /** First bucket start, µs. */
  readonly start: bigint;
  /** Inclusive end of the series, µs. */
  readonly end: bigint;
  /** Every bucket start, µs, ascending, dense (length 0..maxBuckets). */
  readonly starts: readonly bigint[];
  /** Exclusive end of the last bucket (the start the next bucket would have), µs. */
  readonly boundary: bigint;
}

/** Plans the dense series for [start, end] (end inclusive). `maxBuckets` must be 1..100 (checked by the schema). */
export function planHistogram(start: bigint, end: bigint, unit: MinInterval, maxBuckets: number): HistogramPlan {
  if (!Number.isInteger(maxBuckets) || maxBuckets < 1) throw new RangeError(`maxBuckets must be a positive integer, got ${maxBuckets}`);
  if (end < start) return freezePlan(unit, 1, start, end, [], start);
  if (unit === 'month') return planMonths(start, end, maxBuckets);
  const len = unit === 'hour' ? MICROS_PER_HOUR : MICROS_PER_DAY;
  // Buckets needed with step s: floor((end - start) / s) + 1. The smallest k with that ≤ N is
  // floor(D / (N·len)) + 1: then k·len·N > D, while (k-1)·len·N ≤ D would need N + 1 buckets.
  const k = (end - start) / (BigInt(maxBuckets) * len) + 1n;
  const step = k * len;
  const n = Number((end - start) / step) + 1;
  const starts = Array.from({ length: n }, (_, i) => start + BigInt(i) * step);
  return freezePlan(unit, Number(k), start, end, starts, start + BigInt(n) * step);
}

/**
 * The series of a date level: the range where it gives a bound; a missing side from the data in
 * selection (the first value truncated to the start of its UTC hour/day/month, so keys read
 * 2024-01-01T00:00:00.000000Z rather than the odd instant of the first record; the last value as
 * is). No value in selection (`data` min/max null): an empty series.
 */
export function planSeries(range: { start?: string; end?: string } | undefined, data: { min: bigint | null; max: bigint | null } | undefined, unit: MinInterval, maxBuckets: number): HistogramPlan {
  const start = range?.start !== undefined ? parseInstantMicros(range.start) : data?.min != null ? truncateTo(data.min, unit) : null;
  const end = range?.end !== undefined ? parseInstantMicros(range.end) : data?.max ?? null;
  if (start === null || end === null) return planHistogram(0n, -1n, unit, maxBuckets);
  return planHistogram(start, end, unit, maxBuckets);
}

function planMonths(start: bigint, end: bigint, maxBuckets: number): HistogramPlan {
  const months = monthsBetween(start, end);
  // Any k < floor(months / (N + 1)) needs at least floor(months / k) ≥ N + 1 buckets, so the search
  // can start there; k = months + 1 always fits in one bucket, so it ends after a few steps.
  for (let k = Math.max(1, Math.floor(months / (maxBuckets + 1))); ; k++) {
    const last = monthBucketIndex(start, k, end);
    if (last + 1 <= maxBuckets) {
      const starts = Array.from({ length: last + 1 }, (_, i) => addMonths(start, i * k));
      return freezePlan('month', k, start, end, starts, addMonths(start, (last + 1) * k));
    }
  }
}

function freezePlan(unit: MinInterval, k: number, start: bigint, end: bigint, starts: bigint[], boundary: bigint): HistogramPlan {
  return Object.freeze({ unit, k, interval: `${k} ${unit}`, start, end, starts: Object.freeze(starts), boundary });
}

/**
 * The bucket of instant `t`, or null when it falls outside the series. The reference for the SQL
 * expression built in group-by.ts (which computes the same thing in the engine).
 */
export function bucketIndex(plan: HistogramPlan, t: bigint): number | null {
  if (plan.starts.length === 0 || t < plan.start || t >= plan.boundary) return null;
  if (plan.unit === 'month') return monthBucketIndex(plan.start, plan.k, t);
  const step = BigInt(plan.k) * (plan.unit === 'hour' ? MICROS_PER_HOUR : MICROS_PER_DAY);
  return Number((t - plan.start) / step);
}

/** Index of the k-month bucket (from `start`) holding `t` ≥ start: whole-month distance, then one step back if the clamped start is later than t. */
function monthBucketIndex(start: bigint, k: number, t: bigint): number {
  const i = Math.floor(monthsBetween(start, t) / k);
  return addMonths(start, i * k) > t ? i - 1 : i;
}

/** Calendar-month distance (year·12 + month) from a to b, ignoring day and time. */
export function monthsBetween(a: bigint, b: bigint): number {
  const da = new Date(Number(floorDiv(a, 1000n)));
  const db = new Date(Number(floorDiv(b, 1000n)));
  return (db.getUTCFullYear() - da.getUTCFullYear()) * 12 + (db.getUTCMonth() - da.getUTCMonth());
}

/** t + n calendar months in UTC, the day clamped to the target month's length, time of day kept. */
export function addMonths(t: bigint, n: number): bigint {
  const dayStart = floorDiv(t, MICROS_PER_DAY) * MICROS_PER_DAY;
  const timeOfDay = t - dayStart;
  const d = new Date(Number(dayStart / 1000n));
  const monthIndex = d.getUTCMonth() + n;
  const year = d.getUTCFullYear() + Math.floor(monthIndex / 12);
  const month = ((monthIndex % 12) + 12) % 12;
  const day = Math.min(d.getUTCDate(), daysInMonth(year, month));
  return BigInt(Date.UTC(year, month, day)) * 1000n + timeOfDay;
}

/** The start of the UTC hour, day or month holding t (used to give a data-bounded series calendar-aligned keys). */
export function truncateTo(t: bigint, unit: MinInterval): bigint {
  if (unit === 'hour') return floorDiv(t, MICROS_PER_HOUR) * MICROS_PER_HOUR;
  if (unit === 'day') return floorDiv(t, MICROS_PER_DAY) * MICROS_PER_DAY;
  const d = new Date(Number(floorDiv(t, 1000n)));
  return BigInt(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)) * 1000n;
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
}

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && (a < 0n) !== (b < 0n) ? q - 1n : q;
}

// µs <-> text: src/time/iso.ts owns parsing and formatting (re-exported for the histogram's users).
export { formatDbMicros, formatMicros, parseInstantMicros } from '../time/iso.ts';
