/**
 * SEARCH /1.0/event/retention: users by the period of their first start event in the range (the
 * cohort), and for each of the N periods after it, how many of them came back: `returned[i]` =
 * the cohort's users with a return event (or any event, `"return": "any"`) in the (i+1)-th period
 * after the cohort's. Periods are UTC days, weeks from Monday, or calendar months.
 *
 * The range bounds the start events; return events are read up to the end of the N-th period
 * after the range's last period (a period not over yet counts what happened so far). Per user,
 * one GROUP BY gives the first start's period and the set of periods with a return event; the
 * cohorts are then counted from those rows. An anonymous event is a user of its own: it can start
 * a cohort, and never comes back.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import * as v from 'valibot';
import { ParamBag, compiled, type CompiledQuery, type RunQuery } from '../../clickhouse/sql.ts';
import { jsonObject } from '../../validation.ts';
import { cachedRequest } from '../../query/request-cache.ts';
import { DT64 } from '../../query/scope.ts';
import { READ_SETTINGS } from '../../query/settings.ts';
import {
  PERIODS, PERIOD_NAMES, analysisScopeEntries, analysisSource, groupsSql, perUserSql, periodStartText, stepSchema, stepSql,
  type AnalysisScope, type Period, type StepNode,
} from './steps.ts';

export const MAX_PERIODS = 52;
const periodsMessage = `periods must be an integer from 1 to ${MAX_PERIODS}`;

export const retentionBodySchema = jsonObject({
  ...analysisScopeEntries,
  start: stepSchema('start'),
  return: v.optional(v.union([v.literal('any'), stepSchema('return')], 'return must be "any" or {"filters": [...]}'), 'any'),
  period: v.optional(v.picklist(PERIOD_NAMES, `period must be one of ${PERIOD_NAMES.join(', ')}`), 'week'),
  periods: v.optional(v.pipe(v.number(periodsMessage), v.integer(periodsMessage), v.minValue(1, periodsMessage), v.maxValue(MAX_PERIODS, periodsMessage)), 8),
}, 'the retention body');
export type RetentionBody = v.InferOutput<typeof retentionBodySchema>;

export interface RetentionQuery extends AnalysisScope {
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

export function compileRetention(q: RetentionQuery): CompiledQuery {
  const bag = new ParamBag();
  const { start: periodStart, index } = PERIODS[q.period];
  // Start events in the range; return events from its start to the end of the N-th period after its last.
  const source = analysisSource(q, bag, q.range?.start === undefined ? undefined : { start: q.range.start });
  const startSql = stepSql(q.start, source);
  const inRange = q.range?.end === undefined ? '' : ` AND timestamp <= ${bag.add(q.range.end, DT64)}`;
  const returnSql = q.return === 'any' ? 'true' : stepSql(q.return, source);
  const returnsEnd = q.range?.end === undefined
    ? ''
    : ` AND timestamp < toDateTime64(${({ day: 'addDays', week: 'addWeeks', month: 'addMonths' } as const)[q.period]}(${periodStart}(${bag.add(q.range.end, DT64)}), ${bag.add(q.periods + 1, 'UInt32')}), 3, 'UTC')`;
  const scan =
    `SELECT user_id, user_alias, anonymous AS anon, timestamp, toInt32(${index}(timestamp)) AS p, (${startSql}${inRange}) AS st, ${returnSql} AS rt ` +
    `FROM events WHERE ${source.where()}${returnsEnd}${q.return === 'any' ? '' : ` AND (${startSql} OR ${returnSql})`}`;
  const users = perUserSql(scan, {
    known: `minIf(p, st) AS c, ${periodStart}(minIf(timestamp, st)) AS cstart, groupUniqArrayIf(p, rt) AS rp`,
    having: 'countIf(st) > 0',
    // One event: its period is its cohort's, so it is never a return.
    anonymous: `p AS c, ${periodStart}(timestamp) AS cstart, CAST([], 'Array(Int32)') AS rp`,
    anonymousWhere: 'st',
  });
  const n = bag.add(q.periods, 'UInt32');
  return compiled(
    `SELECT grp, cstart, count() AS users, sumForEach(arrayMap(i -> toUInt64(has(rp, c + i)), range(1, ${n} + 1))) AS returned ` +
    `FROM (${users}) ARRAY JOIN ${groupsSql(q, bag)} AS grp GROUP BY grp, c, cstart ORDER BY grp, c`,
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

export function runRetention(run: RunQuery, q: RetentionQuery): Promise<RetentionRow[]> {
  return run<RetentionRow>(compileRetention(q));
}

export async function retention(client: ClickHouseClient, q: RetentionQuery): Promise<RetentionResult> {
  const started = performance.now();
  const { value: rows } = await cachedRequest(client, 'event retention', q, READ_SETTINGS, ({ run }) => runRetention(run, q));
  return shapeRetention(q, rows, Math.round(performance.now() - started));
}
