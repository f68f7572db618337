/**
 * SEARCH /1.0/event/retention: users by the period of their first start event in the range (the
 * cohort), and for each of the N periods after it, how many of them came back: `returned[i]` =
 * the cohort's users with a return event (or any event, `"return": "any"`) in the (i+1)-th period
 * after the cohort's. Periods are UTC days, weeks from Monday, or calendar months.
 *
 * The range bounds the start events; return events are read up to the end of the N-th period
 * after the range's last period (a period not over yet counts what happened so far). Per user,
 * one GROUP BY gives the first start's period and the periods with a return event (returnPeriods);
 * the cohorts are then counted from those rows. An anonymous event is a user of its own: it can start
 * a cohort, and never comes back.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import * as v from 'valibot';
import { ParamBag, compiled, type CompiledQuery } from '../../clickhouse/sql.ts';
import { jsonObject } from '../../validation.ts';
import { parseInstantMicros } from '../../query/histogram.ts';
import { timestampAtMost, timestampBefore } from './timestamps.ts';
import {
  PERIODS, PERIOD_NAMES, analysisSelectionEntries, answerAnalysis, analysisSource, groupsSql, instantMicros, perUserSql, periodStartText, scanUserColumns, stepSchema, stepSql,
  type AnalysisSelection, type Period, type StepNode,
} from './steps.ts';

export const MAX_PERIODS = 52;
const periodsMessage = `periods must be an integer from 1 to ${MAX_PERIODS}`;

export const retentionBodySchema = jsonObject({
  ...analysisSelectionEntries,
  start: stepSchema('start'),
  return: v.optional(v.union([v.literal('any'), stepSchema('return')], 'return must be "any" or {"filters": [...]}'), 'any'),
  period: v.optional(v.picklist(PERIOD_NAMES, `period must be one of ${PERIOD_NAMES.join(', ')}`), 'week'),
  periods: v.optional(v.pipe(v.number(periodsMessage), v.integer(periodsMessage), v.minValue(1, periodsMessage), v.maxValue(MAX_PERIODS, periodsMessage)), 8),
}, 'the retention body');
export type RetentionBody = v.InferOutput<typeof retentionBodySchema>;

export interface RetentionQuery extends AnalysisSelection {
  start: StepNode;
  return: StepNode | 'any';
  period: Period;
  periods: number;
}

export function retentionQueryOf(orgId: string, body: RetentionBody): RetentionQuery {
  return {
    orgId, range: body.range, cohort: body.cohort, split: body.split_by_cohorts ?? [],
    start: body.start, return: body.return as StepNode | 'any', period: body.period, periods: body.periods,
  };
}

export interface RetentionRow {
  grp: number;
  /** The cohort's period start, as the engine prints a Date. */
  cstart: string;
  users: number | string;
  returned: (number | string)[];
}

const MICROS_PER_DAY = 86_400_000_000n;

const floorDiv = (a: bigint, b: bigint) => (a >= 0n ? a / b : -((-a + b - 1n) / b));

/** The relative period number of an instant (µs since the epoch), as the engine's toRelative{Day,Week,Month}Num counts it. */
export function periodIndex(micros: bigint, period: Period): number {
  const day = Number(floorDiv(micros, MICROS_PER_DAY));
  if (period === 'day') return day;
  // Monday-based weeks: 1970-01-01 was a Thursday.
  if (period === 'week') return Math.floor((day + 3) / 7);
  const d = new Date(day * 86_400_000);
  return d.getUTCFullYear() * 12 + d.getUTCMonth() + 1;
}

/** The start (µs) of the `n`-th period after the one holding `micros` (UTC; weeks from Monday). */
export function periodStartAfter(micros: bigint, period: Period, n: number): bigint {
  const day = floorDiv(micros, MICROS_PER_DAY);
  if (period === 'day') return (day + BigInt(n)) * MICROS_PER_DAY;
  if (period === 'week') return (day - BigInt(((Number(day % 7n) + 3) % 7 + 7) % 7) + 7n * BigInt(n)) * MICROS_PER_DAY;
  const d = new Date(Number(day) * 86_400_000);
  return BigInt(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + n, 1)) * 1000n;
}

/** The first day of period number `c` (a Date32 expression: 1900..2299), inverse of the engine's toRelative*Num. */
const PERIOD_START_OF_INDEX: Record<Period, (c: string) => string> = {
  day: (c) => `toDate32(${c})`,
  week: (c) => `toDate32(${c} * 7 - 3)`,
  month: (c) => `makeDate32(intDiv(${c} - 1, 12), (${c} - 1) % 12 + 1, 1)`,
};

const micros = (t: string | undefined) => (t === undefined ? undefined : parseInstantMicros(t) ?? undefined);

/**
 * Per user, the period of the first start event (`c`, a period number: they are positive, 0 =
 * none) and the periods with a return event, as aggregates over the scan's rows (`p` the period,
 * `st` a start event, `rt` a return event), and `has(offset)`: the user came back in period
 * c + offset. Three forms, all exact, the first that fits:
 * - packed: when the range is bounded and its periods plus N fit in 32, ONE groupBitOr per user of
 *   a UInt64 whose low half holds the return periods and whose high half the start periods, both
 *   as bits relative to the range's first period; c is then the lowest bit of the high half. One
 *   aggregate per row instead of two (a minIf and a groupBitOrIf): the per-user GROUP BY is what a
 *   retention costs, bench/events/README.md.
 * - bits: minIf for c, one UInt64 of return bits when the periods plus N fit in 64;
 * - arrays: minIf for c, the set of return period numbers (an array per user).
 */
function perUserPeriods(q: RetentionQuery, bag: ParamBag): { aggregates: string; having: string; c: string; has: (offset: string) => string } {
  const [from, to] = [micros(q.range?.start), micros(q.range?.end)];
  const span = from !== undefined && to !== undefined ? periodIndex(to, q.period) - periodIndex(from, q.period) + q.periods : Infinity;
  const firstStart = { aggregates: 'minIf(p, st) AS c', having: 'c != 0', c: 'c' };
  if (span >= 64) return { ...firstStart, aggregates: `${firstStart.aggregates}, groupUniqArrayIf(p, rt) AS rp`, has: (offset) => `has(rp, c + ${offset})` };
  const base = bag.add(periodIndex(from!, q.period), 'Int32');
  if (span >= 32) {
    return { ...firstStart, aggregates: `${firstStart.aggregates}, groupBitOrIf(bitShiftLeft(toUInt64(1), p - ${base}), rt) AS rp`, has: (offset) => `bitTest(rp, c - ${base} + ${offset})` };
  }
  // Bit k of the high half: a start in period base + k; its lowest set bit k = popcount(h xor (h - 1)) - 1.
  const starts = 'bitShiftRight(m, 32)';
  return {
    aggregates: `groupBitOr(bitShiftLeft(toUInt64(rt) + if(st, toUInt64(4294967296), toUInt64(0)), p - ${base})) AS m`,
    having: `${starts} != 0`,
    c: `toInt32(${base} + bitCount(bitXor(${starts}, ${starts} - 1)) - 1)`,
    has: (offset) => `bitTest(m, c - ${base} + ${offset})`,
  };
}

export function compileRetention(q: RetentionQuery): CompiledQuery {
  const bag = new ParamBag();
  const { index } = PERIODS[q.period];
  // Start events in the range; return events from its start to the end of the N-th period after its last.
  const source = analysisSource(q, bag, q.range?.start === undefined ? undefined : { start: q.range.start });
  const startSql = stepSql(q.start, source);
  const inRange = q.range?.end === undefined ? '' : ` AND ${timestampAtMost(bag, instantMicros(q.range.end))}`;
  const returnSql = q.return === 'any' ? 'true' : stepSql(q.return, source);
  const to = micros(q.range?.end);
  const returnsEnd = to === undefined ? undefined : periodStartAfter(to, q.period, q.periods + 1);
  const returnsBound = returnsEnd === undefined ? '' : ` AND ${timestampBefore(bag, returnsEnd)}`;
  const scan =
    `SELECT ${scanUserColumns(q)}, toInt32(${index}(timestamp)) AS p, (${startSql}${inRange}) AS st, ${returnSql} AS rt ` +
    `FROM events WHERE ${source.where()}${returnsBound}${q.return === 'any' ? '' : ` AND (${startSql} OR ${returnSql})`}`;
  const periods = perUserPeriods(q, bag);
  const users = perUserSql(q, scan, {
    known: periods.aggregates,
    having: periods.having,
    // An anonymous user is one event: its period is its cohort's, so it is never a return.
    anonymousWhere: 'st',
  });
  const n = bag.add(q.periods, 'UInt32');
  const cohorts = periods.c === 'c' ? users : `SELECT *, ${periods.c} AS c FROM (${users})`;
  return compiled(
    `SELECT grp, toString(${PERIOD_START_OF_INDEX[q.period]('c')}) AS cstart, count() AS users, ` +
    `sumForEach(arrayMap(i -> toUInt64(${periods.has('i')}), range(1, ${n} + 1))) AS returned ` +
    `FROM (${cohorts}) ARRAY JOIN ${groupsSql(q, bag)} AS grp GROUP BY grp, c ORDER BY grp, c`,
    bag,
  );
}

export interface RetentionCohort {
  start: string;
  users: number;
  returned: number[];
}

export interface RetentionResult {
  took: number;
  period: Period;
  cohorts: RetentionCohort[];
  split?: { name: string; cohorts: RetentionCohort[] }[];
}

export function shapeRetention(q: RetentionQuery, rows: readonly RetentionRow[], took: number): RetentionResult {
  const cohorts = (g: number): RetentionCohort[] =>
    rows.filter((r) => Number(r.grp) === g).map((r) => ({ start: periodStartText(r.cstart), users: Number(r.users), returned: r.returned.map(Number) }));
  return {
    took,
    period: q.period,
    cohorts: cohorts(0),
    ...(q.split.length ? { split: q.split.map((s, i) => ({ name: s.name, cohorts: cohorts(i + 1) })) } : {}),
  };
}

export function retention(client: ClickHouseClient, q: RetentionQuery): Promise<RetentionResult> {
  return answerAnalysis(client, 'event retention', q, compileRetention, shapeRetention);
}
