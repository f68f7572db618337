/**
 * SEARCH /1.0/event/funnel: how many users went through 2..10 steps, per step, with the
 * conversion from the first and the previous step and the median and p90 time from the previous
 * step (funnel-sql.ts defines the chains). Optionally broken down by a property of the first
 * step's event or by its period, restricted to a feedback cohort, and split by cohorts side by
 * side with the whole. One engine query, through the 3 s polling cache.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import * as v from 'valibot';
import { maxChars } from '../../chars.ts';
import { roundedRatio } from '../../metrics/statistics.ts';
import { jsonObject } from '../../validation.ts';
import { FUNNEL_ORDERS, compileFunnel, type FunnelBreakdown, type FunnelOrder, type FunnelQuery, type FunnelRow } from './funnel-sql.ts';
import { PERIOD_NAMES, analysisSelectionEntries, answerAnalysis, periodStartText, stepSchema, type AnalysisSelection } from './steps.ts';

export const MIN_STEPS = 2;
export const MAX_STEPS = 10;
export const MAX_WINDOW_SECONDS = 90 * 86_400;
export const DEFAULT_WINDOW_SECONDS = 14 * 86_400;
/** Breakdown values per group: the property values with the most users at the first step; the first periods. */
export const MAX_PROPERTY_BUCKETS = 100;
export const MAX_PERIOD_BUCKETS = 1000;

const windowMessage = `window_seconds must be an integer from 1 to ${MAX_WINDOW_SECONDS} (90 days)`;

const strictBreakdown = (issue: v.StrictObjectIssue) =>
  issue.expected === 'never'
    ? `unknown field ${issue.received}; a breakdown accepts field and property_key, or field and interval`
    : issue.received === 'undefined' && issue.path?.length
      ? `${String(issue.path[issue.path.length - 1].key)} is required`
      : 'breakdown must be a JSON object';
const breakdownSchema = v.variant('field', [
  v.pipe(
    v.strictObject({ field: v.literal('property'), property_key: v.pipe(v.string('property_key must be a string'), v.minLength(1, 'property_key must not be empty'), maxChars(255, 'property_key is at most 255 characters')) }, strictBreakdown),
    v.transform((b): FunnelBreakdown => ({ field: 'property', propertyKey: b.property_key })),
  ),
  v.pipe(
    v.strictObject({ field: v.literal('timestamp'), interval: v.picklist(PERIOD_NAMES, `interval must be one of ${PERIOD_NAMES.join(', ')}`) }, strictBreakdown),
    v.transform((b): FunnelBreakdown => ({ field: 'timestamp', interval: b.interval })),
  ),
], 'breakdown must be {"field": "property", "property_key": K} or {"field": "timestamp", "interval": "day" | "week" | "month"}');

export const funnelBodySchema = jsonObject({
  ...analysisSelectionEntries,
  steps: v.pipe(
    v.array(stepSchema('a step'), 'steps must be an array of steps ({"filters": [...]})'),
    v.minLength(MIN_STEPS, `steps holds ${MIN_STEPS} to ${MAX_STEPS} steps`),
    v.maxLength(MAX_STEPS, `steps holds ${MIN_STEPS} to ${MAX_STEPS} steps`),
  ),
  window_seconds: v.optional(v.pipe(v.number(windowMessage), v.integer(windowMessage), v.minValue(1, windowMessage), v.maxValue(MAX_WINDOW_SECONDS, windowMessage)), DEFAULT_WINDOW_SECONDS),
  order: v.optional(v.picklist(FUNNEL_ORDERS, `order must be one of ${FUNNEL_ORDERS.join(', ')}`), 'ordered'),
  breakdown: v.optional(breakdownSchema),
}, 'the funnel body');
export type FunnelBody = v.InferOutput<typeof funnelBodySchema>;

export interface FunnelStep {
  name?: string;
  users: number;
  conversion_from_first: number | null;
  conversion_from_previous: number | null;
  median_seconds_from_previous: number | null;
  p90_seconds_from_previous: number | null;
}

export interface FunnelBucket {
  key: string | null;
  steps: FunnelStep[];
}

export interface FunnelGroup {
  steps: FunnelStep[];
  breakdown?: { field: 'property' | 'timestamp'; property_key?: string; interval?: string; buckets: FunnelBucket[] };
}

export interface FunnelResult extends FunnelGroup {
  took: number;
  cohorts?: (FunnelGroup & { name: string })[];
}

export function funnelQueryOf(orgId: string, body: FunnelBody): FunnelQuery {
  const selection: AnalysisSelection = { orgId, range: body.range, cohort: body.cohort, split: body.split_by_cohorts ?? [] };
  return {
    ...selection,
    steps: body.steps,
    windowMs: body.window_seconds * 1000,
    order: body.order as FunnelOrder,
    breakdown: body.breakdown,
    maxBuckets: body.breakdown?.field === 'timestamp' ? MAX_PERIOD_BUCKETS : MAX_PROPERTY_BUCKETS,
  };
}

/** A ratio rounded to 4 decimals, half away from zero (exact, in integers); null when there is nothing to divide by. */
export const ratio = (n: number, d: number): number | null => (d === 0 ? null : roundedRatio(n, d, 4));
/** Milliseconds -> seconds, to the millisecond. */
const seconds = (ms: number) => Math.round(ms) / 1000;

/** The steps of one result row (absent row: nobody). */
export function shapeSteps(q: Pick<FunnelQuery, 'steps' | 'order'>, row: FunnelRow | undefined): FunnelStep[] {
  const users = q.steps.map((_, i) => Number(row?.[`u${i + 1}`] ?? 0));
  return q.steps.map((step, i) => {
    const quantiles = i > 0 && q.order !== 'any' && users[i] > 0 ? (row?.[`q${i + 1}`] as number[]) : undefined;
    return {
      ...(step.name === undefined ? {} : { name: step.name }),
      users: users[i],
      conversion_from_first: ratio(users[i], users[0]),
      conversion_from_previous: i === 0 ? ratio(users[0], users[0]) : ratio(users[i], users[i - 1]),
      median_seconds_from_previous: quantiles ? seconds(quantiles[0]) : null,
      p90_seconds_from_previous: quantiles ? seconds(quantiles[1]) : null,
    };
  });
}

function bucketKey(b: FunnelBreakdown, [kind, text]: [number, string]): string | null {
  if (Number(kind) === 0) return null;
  return b.field === 'timestamp' ? periodStartText(text) : text;
}

/** Engine rows -> the answer: the whole (group 0) and each split cohort, each with its breakdown. */
export function shapeFunnel(q: FunnelQuery, rows: readonly FunnelRow[], took: number): FunnelResult {
  const group = (g: number): FunnelGroup => {
    const mine = rows.filter((r) => Number(r.grp) === g);
    if (!q.breakdown) return { steps: shapeSteps(q, mine[0]) };
    const b = q.breakdown;
    // The whole is its own row (kind 2): a user can start from several values, so it is not the sum of the buckets.
    const whole = mine.find((r) => Number(r.bv![0]) === 2);
    const buckets = mine.filter((r) => r !== whole).map((r) => ({ key: bucketKey(b, r.bv!), steps: shapeSteps(q, r) }));
    return {
      steps: shapeSteps(q, whole),
      breakdown: b.field === 'property' ? { field: 'property', property_key: b.propertyKey, buckets } : { field: 'timestamp', interval: b.interval, buckets },
    };
  };
  const whole = group(0);
  return {
    took,
    ...whole,
    ...(q.split.length ? { cohorts: q.split.map((s, i) => ({ name: s.name, ...group(i + 1) })) } : {}),
  };
}

export function funnel(client: ClickHouseClient, q: FunnelQuery): Promise<FunnelResult> {
  return answerAnalysis(client, 'event funnel', q, compileFunnel, shapeFunnel);
}
