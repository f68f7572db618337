/**
 * SEARCH /1.0/event/stickiness: how sticky an event is, as the number of users who did it on
 * exactly n distinct days (or weeks, or months: UTC, weeks from Monday) of the range, for every n
 * from 1 to the largest. The same per-user rows as funnels and retention (an anonymous event is a
 * user active in one period), the same cohort and split.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import * as v from 'valibot';
import { ParamBag, compiled, type CompiledQuery } from '../../clickhouse/sql.ts';
import { jsonObject } from '../../validation.ts';
import { PERIODS, PERIOD_NAMES, analysisSelectionEntries, answerAnalysis, analysisSource, groupsSql, perUserSql, scanUserColumns, stepSchema, stepSql, type AnalysisSelection, type Period, type StepNode } from './steps.ts';

export const stickinessBodySchema = jsonObject({
  ...analysisSelectionEntries,
  event: stepSchema('event'),
  interval: v.optional(v.picklist(PERIOD_NAMES, `interval must be one of ${PERIOD_NAMES.join(', ')}`), 'day'),
}, 'the stickiness body');
export type StickinessBody = v.InferOutput<typeof stickinessBodySchema>;

export interface StickinessQuery extends AnalysisSelection {
  event: StepNode;
  interval: Period;
}

export function stickinessQueryOf(orgId: string, body: StickinessBody): StickinessQuery {
  return { orgId, range: body.range, cohort: body.cohort, split: body.split_by_cohorts ?? [], event: body.event, interval: body.interval };
}

export interface StickinessRow {
  grp: number;
  n: number | string;
  users: number | string;
}

export function compileStickiness(q: StickinessQuery): CompiledQuery {
  const bag = new ParamBag();
  const source = analysisSource(q, bag, q.range);
  const scan = `SELECT ${scanUserColumns(q)}, ${PERIODS[q.interval].index}(timestamp) AS p FROM events WHERE ${source.where()} AND ${stepSql(q.event, source)}`;
  const users = perUserSql(q, scan, { known: 'uniqExact(p) AS n' });
  return compiled(`SELECT grp, n, count() AS users FROM (${users}) ARRAY JOIN ${groupsSql(q, bag)} AS grp GROUP BY grp, n ORDER BY grp, n`, bag);
}

export interface StickinessResult {
  took: number;
  interval: Period;
  /** periods[k]: users active in exactly k + 1 periods. */
  stickiness: { periods: number; users: number }[];
  split?: { name: string; stickiness: { periods: number; users: number }[] }[];
}

export function shapeStickiness(q: StickinessQuery, rows: readonly StickinessRow[], took: number): StickinessResult {
  const dense = (g: number) => {
    const mine = rows.filter((r) => Number(r.grp) === g);
    const max = mine.reduce((m, r) => Math.max(m, Number(r.n)), 0);
    const byN = new Map(mine.map((r) => [Number(r.n), Number(r.users)]));
    return Array.from({ length: max }, (_, i) => ({ periods: i + 1, users: byN.get(i + 1) ?? 0 }));
  };
  return {
    took,
    interval: q.interval,
    stickiness: dense(0),
    ...(q.split.length ? { split: q.split.map((s, i) => ({ name: s.name, stickiness: dense(i + 1) })) } : {}),
  };
}

export function stickiness(client: ClickHouseClient, q: StickinessQuery): Promise<StickinessResult> {
  return answerAnalysis(client, 'event stickiness', q, compileStickiness, shapeStickiness);
}
