/**
 * Period comparisons (pure): the ranges a `compare` asks for, and the date-histogram series of
 * each, aligned bucket by bucket with the main range's.
 *
 * Ranges are [start, end] in µs, both inclusive, like the request's `range`.
 * - previous_period: the main range moved back by the span of its (first) date histogram, n x k
 *   hours, days or calendar months, so that its buckets are the n intervals right before the main
 *   ones; without a date level, by the range's length L = end - start + 1µs.
 * - previous_year: the main range 12 calendar months earlier (UTC; Feb 29 becomes Feb 28, as
 *   ClickHouse's addMonths does).
 * With month buckets, an end on the last day of its month moves to the last day of the earlier
 * month (a range ending Feb 29 23:59:59 compares with January up to Jan 31 23:59:59, not Jan 29):
 * the last bucket of the comparison is then as whole as the main one's.
 * - explicit ranges: as given.
 * A comparison's date levels have the main series' interval (k x unit) and bucket count n, their
 * buckets starting at the comparison's start: bucket i of every side is "the i-th interval of its
 * range". An explicit range must fit in those n buckets (else a 400 naming it); a derived one is
 * cut at its last bucket's end, which only happens when calendar months or years differ in
 * length (a previous year holding Feb 29, months of 28..31 days).
 */
import * as v from 'valibot';
import { invalid } from '../errors.ts';
import { isoInstant } from '../query/filter-args.ts';
import { MICROS_PER_DAY, MICROS_PER_HOUR, addMonths, formatMicros, type HistogramPlan } from '../query/histogram.ts';
import { toBigMicros } from '../time/iso.ts';
import { jsonObject } from '../validation.ts';

export type CompareSpec = 'previous_period' | 'previous_year' | readonly { readonly start: bigint; readonly end: bigint }[];

export interface MicrosRange {
  readonly start: bigint;
  readonly end: bigint;
}

/** Comparisons at most per request (each is one more aggregation over its range). */
export const MAX_COMPARISONS = 5;

const HINT = 'date or date-time, e.g. 2024-01-02T03:04:05Z';
const explicitRange = v.pipe(
  jsonObject({ start: isoInstant('start', HINT), end: isoInstant('end', HINT) }, 'a comparison range'),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const start = toBigMicros(dataset.value.start.t);
    const end = toBigMicros(dataset.value.end.t);
    if (start > end) {
      addIssue({ message: 'start must not be after end' });
      return NEVER;
    }
    return { start, end };
  }),
);

/** `compare` of a request: previous_period, previous_year, or 1..MAX_COMPARISONS explicit {start, end} ranges. */
export const compareSchema = v.union(
  [
    v.picklist(['previous_period', 'previous_year']),
    v.pipe(v.array(explicitRange), v.minLength(1, 'compare needs at least one range'), v.maxLength(MAX_COMPARISONS, `compare holds at most ${MAX_COMPARISONS} ranges`)),
  ],
  (issue) => {
    // Name the first problem inside a list of ranges (compare[1].end ...), else what compare accepts.
    const inner = issue.issues?.find((i) => i.path?.length);
    const where = inner?.path?.map((p) => (typeof p.key === 'number' ? `[${p.key}]` : `.${String(p.key)}`)).join('') ?? '';
    return inner && !/^ranges? /.test(inner.message)
      ? `compare${where}: ${inner.message}`
      : `compare must be "previous_period", "previous_year" or a list of 1..${MAX_COMPARISONS} {"start", "end"} ranges`;
  },
);

/** The earliest and latest instants a comparison may reach (the DateTime64 columns' years 1900..2299). */
const MIN_INSTANT = BigInt(Date.UTC(1900, 0, 1)) * 1000n;
const MAX_INSTANT = BigInt(Date.UTC(2300, 0, 1)) * 1000n - 1n;

/** The same series shape (unit, k, n buckets) from another start. */
export function shiftedPlan(main: HistogramPlan, start: bigint, end: bigint): HistogramPlan {
  const n = main.starts.length;
  const at = (i: number) => (main.unit === 'month' ? addMonths(start, i * main.k) : start + BigInt(i * main.k) * (main.unit === 'hour' ? MICROS_PER_HOUR : MICROS_PER_DAY));
  const starts = Array.from({ length: n }, (_, i) => at(i));
  return Object.freeze({ unit: main.unit, k: main.k, interval: main.interval, start, end, starts: Object.freeze(starts), boundary: at(n) });
}

/** addMonths, except that the last day of a month goes to the last day of the target month (time of day kept). */
export function addMonthsEndOfMonth(t: bigint, n: number): bigint {
  const next = t + MICROS_PER_DAY;
  const lastOfMonth = new Date(Number((next - (((next % 1000n) + 1000n) % 1000n)) / 1000n)).getUTCDate() === 1;
  if (!lastOfMonth) return addMonths(t, n);
  // The first day of the month after the target's, minus one day, at t's time of day.
  return addMonths(t + MICROS_PER_DAY, n) - MICROS_PER_DAY;
}

function previousPeriod(main: MicrosRange, series: HistogramPlan | undefined): MicrosRange {
  if (!series) return { start: main.start - (main.end - main.start + 1n), end: main.start - 1n };
  const n = series.starts.length * series.k;
  if (series.unit === 'month') return { start: addMonths(main.start, -n), end: addMonthsEndOfMonth(main.end, -n) };
  const span = series.boundary - series.start;
  return { start: main.start - span, end: main.end - span };
}

export interface Comparison {
  readonly range: MicrosRange;
  /** One per level of the main plans: the shifted series of each date level, undefined elsewhere. */
  readonly plans: readonly (HistogramPlan | undefined)[];
}

/**
 * The comparisons of `spec` for the main range and its level plans. Throws a 400 naming
 * `compare[i]` for an explicit range that does not fit the series, and naming `compare` when a
 * derived range falls outside the years the columns hold.
 */
export function planComparisons(spec: CompareSpec, main: MicrosRange, plans: readonly (HistogramPlan | undefined)[]): Comparison[] {
  const derived = typeof spec === 'string';
  const series = plans.find((p) => p !== undefined && p.starts.length > 0);
  const ranges: MicrosRange[] =
    spec === 'previous_period'
      ? [previousPeriod(main, series)]
      : spec === 'previous_year'
        ? [{ start: addMonths(main.start, -12), end: series?.unit === 'month' ? addMonthsEndOfMonth(main.end, -12) : addMonths(main.end, -12) }]
        : spec.map((r) => ({ start: r.start, end: r.end }));
  return ranges.map((range, i) => {
    if (derived && (range.start < MIN_INSTANT || range.end > MAX_INSTANT)) {
      throw invalid(`compare: the ${spec} of this range starts before 1900`, [{ path: 'compare', message: `the comparison would start at ${formatMicros(range.start)}` }]);
    }
    let end = range.end;
    const shifted = plans.map((p) => (p ? shiftedPlan(p, range.start, end) : undefined));
    for (const p of shifted) {
      if (!p || p.starts.length === 0 || end < p.boundary) continue;
      if (!derived) {
        throw invalid(`compare[${i}] does not fit the histogram of the main range`, [{
          path: `compare[${i}]`,
          message: `${p.starts.length} buckets of ${p.interval} from ${formatMicros(range.start)} end at ${formatMicros(p.boundary)}; the range must end before (the main range has ${p.starts.length} buckets)`,
        }]);
      }
      end = p.boundary - 1n;
    }
    const cut = { start: range.start, end };
    return { range: cut, plans: plans.map((p) => (p ? shiftedPlan(p, cut.start, cut.end) : undefined)) };
  });
}
