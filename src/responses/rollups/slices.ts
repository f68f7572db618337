/**
 * Rollup slices: an (org, survey, hour), (org, survey, UTC day) or (org, survey, UTC calendar
 * month) of `created_at` (schema/020-survey-rollups.sql). Time is µs since the epoch (bigint), as
 * in histogram.ts.
 */
import { MICROS_PER_DAY, MICROS_PER_HOUR } from '../../query/histogram.ts';
import { formatDbMicros, parseInstantMicros } from '../../time/iso.ts';
import { NIL_UUID } from '../../uuid.ts';

export { MICROS_PER_DAY, MICROS_PER_HOUR };
export interface HourSlice {
  readonly surveyId: string;
  /** The hour's first µs. */
  readonly hour: bigint;
}

/**
 * The slice that stands for the whole org in the pending-mark protocol (pending.ts): marked while
 * `seed` or `rollups rebuild` runs, checked first by the mark readers. No survey has this id and no
 * response is this old, so it never names a real slice.
 */
export const ORG_SENTINEL: HourSlice = Object.freeze({ surveyId: NIL_UUID, hour: parseInstantMicros('1900-01-01T00:00:00Z')! });

export function floorTo(t: bigint, step: bigint): bigint {
  const r = t % step;
  return r < 0n ? t - r - step : t - r;
}

export function ceilTo(t: bigint, step: bigint): bigint {
  const f = floorTo(t, step);
  return f === t ? t : f + step;
}

/**
 * The engine's form of floorTo for a DateTime64(6) column (toStartOfHour and toStartOfDay return
 * DateTime, which cannot hold years before 1970; the API accepts 1900 on).
 */
export function floorSql(column: string, step: bigint): string {
  const us = `toUnixTimestamp64Micro(${column})`;
  return `fromUnixTimestamp64Micro(${us} - positiveModulo(${us}, ${step}), 'UTC')`;
}

export type Span = 'hour' | 'day' | 'month';

/** The first µs of the UTC calendar month holding t. */
export function floorMonth(t: bigint): bigint {
  const d = new Date(Number(floorTo(t, 1000n) / 1000n));
  return BigInt(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)) * 1000n;
}

/** The first µs of the month after the one holding t. */
export function nextMonth(t: bigint): bigint {
  const d = new Date(Number(floorMonth(t) / 1000n));
  return BigInt(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)) * 1000n;
}

export const ceilMonth = (t: bigint): bigint => (floorMonth(t) === t ? t : nextMonth(t));

/** The start of the slice of `span` holding t, and the start of the next one. */
export function sliceOf(span: Span, t: bigint): [bigint, bigint] {
  if (span === 'month') return [floorMonth(t), nextMonth(t)];
  const step = span === 'hour' ? MICROS_PER_HOUR : MICROS_PER_DAY;
  const from = floorTo(t, step);
  return [from, from + step];
}

/** The engine's form of sliceOf(span, column)[0] for a DateTime64(6) column. */
export function sliceStartSql(span: Span, column: string): string {
  // toStartOfMonth returns a Date (1970-2149); Date32 arithmetic keeps 1900-2299.
  if (span === 'month') return `toDateTime64(toDate32(${column}) - (toDayOfMonth(${column}) - 1), 6, 'UTC')`;
  return floorSql(column, span === 'hour' ? MICROS_PER_HOUR : MICROS_PER_DAY);
}

/** The distinct hour slices of rows carrying survey_id and a DateTime64 text created_at. */
export function hourSlicesOf(rows: readonly { survey_id: string; created_at: string }[]): HourSlice[] {
  const seen = new Map<string, HourSlice>();
  for (const r of rows) {
    const t = parseInstantMicros(r.created_at);
    if (t === null) throw new Error(`unparseable created_at ${r.created_at}`);
    const slice = { surveyId: r.survey_id.toLowerCase(), hour: floorTo(t, MICROS_PER_HOUR) };
    seen.set(`${slice.surveyId}/${slice.hour}`, slice);
  }
  return [...seen.values()];
}

export const sliceParams = (slices: readonly HourSlice[]) => ({
  surveys: slices.map((s) => s.surveyId),
  starts: slices.map((s) => formatDbMicros(s.hour)),
});

/**
 * The ranges [from, to) covering the slices of `span` starting at `starts`, adjacent ones merged,
 * in order. Written as OR-ed ranges they let the primary key skip the granules between them.
 */
export function sliceRanges(span: Span, starts: readonly bigint[]): [bigint, bigint][] {
  const sorted = [...new Set(starts)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const out: [bigint, bigint][] = [];
  for (const from of sorted) {
    const to = sliceOf(span, from)[1];
    const last = out[out.length - 1];
    if (last && last[1] === from) last[1] = to;
    else out.push([from, to]);
  }
  return out;
}

/** The distinct slices of `span` holding these hour slices (the days and months a change of those hours touches). */
export function parentsOf(slices: readonly HourSlice[], span: Span): HourSlice[] {
  const out = new Map<string, HourSlice>();
  for (const s of slices) {
    const parent = { surveyId: s.surveyId, hour: sliceOf(span, s.hour)[0] };
    out.set(`${parent.surveyId}/${parent.hour}`, parent);
  }
  return [...out.values()];
}
