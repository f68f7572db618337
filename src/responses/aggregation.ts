/**
 * SEARCH /1.0/survey/<survey_ids>/response/aggregation: counts grouped by 1..3 ordered `group_by`
 * rules, one nesting level per rule, with dense date histograms.
 *
 * Plan: (1) when a date level lacks a range bound, one query reads the data's min/max of its field
 * within the selection; (2) the series of each date level is planned in JS (histogram.ts); (3) ONE
 * query groups by all levels WITH ROLLUP, so every parent bucket gets its own exact count (a
 * response counts once in a parent bucket even when it sits in several child buckets), then ranks
 * buckets inside each parent and keeps the 100 largest per non-date level; (4) JS shapes the tree
 * and fills the zero buckets (every date bucket of the series, all three completion values).
 * The queries of (1) and (3) are aggregation-sql.ts; this file plans, runs and shapes.
 *
 * Decisions (where the spec is silent):
 * - A date level's series is the range when given (range.start..range.end, end inclusive, see
 *   histogram.ts); a missing side comes from the data: the first value truncated to the start of
 *   its UTC hour/day/month (so keys read 2024-01-01T00:00:00.000000Z rather than the odd instant of
 *   the first response), the last value as is. Responses whose value is NULL (ended_at of an active
 *   response, no answer yet) or outside the series are in no bucket of that level.
 * - Non-date levels: at most 100 buckets per parent, largest doc_count first, ties by key
 *   (byte order); `other_doc_count` = the summed doc_count of the buckets left out (as in
 *   Elasticsearch's sum_other_doc_count; with multi-valued answers this can exceed the number of
 *   responses left out). The completion level always lists its three values, zeros included.
 * - `end_reason` "" (active responses) is not a bucket; hidden_field and answer levels bucket by
 *   each distinct value of the entries with that key / question (a response with two values counts
 *   in both), and responses without such an entry are in none.
 * - size/offset in the body are ignored (unknown fields are dropped, like everywhere else).
 * - A response holds at most MAX_RESPONSE_BUCKETS buckets over all levels (dense series multiply:
 *   three 100-bucket histograms would be a million zeros); beyond it the answer is a 400
 *   `query_too_expensive` asking for fewer buckets or levels, as Elasticsearch's max_buckets does.
 */
import * as v from 'valibot';
import type { RunQuery } from '../clickhouse/sql.ts';
import type { ResponseSelection } from './compile.ts';
import { COMPLETION_VALUES, selectionEntries } from './filters.ts';
import { ignored, jsonObject } from '../validation.ts';
import { compareSchema } from '../metrics/compare.ts';
import { answerGroupFilter, completeRows } from './answer-rollups.ts';
import type { ReleaseMark } from '../releases/marks.ts';
import { NO_COUNTS, countsOf, metricsSchema, metricsServable, shapeMetrics, type MetricCounts, type MetricName, type Metrics } from './metrics.ts';
import { groupBySchema, type DateField, type GroupByRule } from './group-by.ts';
import { planSeries, type HistogramPlan } from '../query/histogram.ts';
import { checkDenseBuckets, otherDocCounts, tooManyBuckets } from '../query/ranked-buckets.ts';
import { shapeBuckets, type ShapeLevel } from '../query/shape.ts';
import { filtersServable } from './rollups/groups.ts';
import { grainOf, rollupCover, rulesServable, runWithPending, type Pending, type ReadOptions } from './rollups/read.ts';
import type { Span } from './rollups/slices.ts';
import {
  compileAggregation, compileBounds, compileDenseAggregation, compileDenseRollupAggregation, fieldsNeedingBounds, readBounds,
  type AggregationRow, type Bounds, type DenseRead,
} from './aggregation-sql.ts';

export { MAX_RESPONSE_BUCKETS } from '../query/ranked-buckets.ts';
import { MAX_RESPONSE_BUCKETS } from '../query/ranked-buckets.ts';

/**
 * The selection plus `group_by`, `metrics` (metrics.ts) and `compare` (aggregation-request.ts); `size`
 * and `offset` are accepted and ignored, any other field is a 400.
 */
export const aggregationBodySchema = v.pipe(
  jsonObject({ ...selectionEntries, group_by: groupBySchema, metrics: v.optional(metricsSchema), compare: v.optional(compareSchema), size: ignored, offset: ignored }, 'the aggregation body'),
  v.transform(({ size: _size, offset: _offset, ...body }) => body),
);
export type AggregationBody = v.InferOutput<typeof aggregationBodySchema>;

export interface Bucket {
  key: string;
  doc_count: number;
  metrics?: Metrics;
  aggregations?: LevelResult;
}

export type LevelResult =
  | { field: DateField; interval: string; buckets: Bucket[]; releases?: ReleaseMark[] }
  | { field: string; hidden_field_key?: string; question_id?: string; buckets: Bucket[]; other_doc_count: number };

/** One comparison's tree (aggregation-request.ts): its range, and the same tree over it, with deltas. */
export interface ComparisonResult {
  range: { start: string; end: string };
  hits: { total: { value: number } };
  metrics?: Metrics;
  aggregations: LevelResult;
}

export interface AggregationResult {
  took: number;
  hits: { total: { value: number } };
  metrics?: Metrics;
  aggregations: LevelResult;
  comparisons?: ComparisonResult[];
}

// --- (2) series plans ------------------------------------------------------------------------------

/** The series of each date level (undefined for the other levels). */
export function planLevels(rules: readonly GroupByRule[], range: ResponseSelection['range'], bounds: Bounds): (HistogramPlan | undefined)[] {
  return rules.map((rule) => (rule.kind === 'date' ? planSeries(range, bounds[rule.field], rule.minInterval, rule.buckets) : undefined));
}

// --- (4) shaping -----------------------------------------------------------------------------------

/** A bucket's place in the tree: the keys down to it (a date level's key is its bucket index). */
export type BucketPath = readonly (string | number)[];
const pathKey = (path: BucketPath) => JSON.stringify(path);

/** What shapeAggregation adds to the counts: the metrics of every bucket, and their change from another tree. */
export interface ShapeOptions {
  metrics?: readonly MetricName[];
  /** For a comparison's tree: the counts of the main range's bucket at the same path (the deltas). */
  main?: (path: BucketPath) => MetricCounts;
}

/** The metric counts of each bucket of the rows, by path ([] = the whole selection). */
export function countsByPath(rules: readonly GroupByRule[], rows: readonly AggregationRow[]): (path: BucketPath) => MetricCounts {
  const byPath = new Map<string, MetricCounts>();
  for (const row of rows) {
    const depth = Number(row.depth);
    const path: (string | number)[] = [];
    for (let i = 1; i <= depth; i++) path.push(rules[i - 1].kind === 'date' ? Number(row[`k${i}`]) : String(row[`k${i}`]));
    byPath.set(pathKey(path), countsOf(row));
  }
  return (path) => byPath.get(pathKey(path)) ?? NO_COUNTS;
}

/** Rows -> the nested body (src/query/shape.ts), with the metrics of every bucket when asked. Pure; `took` is passed in. */
export function shapeAggregation(
  rules: readonly GroupByRule[],
  plans: readonly (HistogramPlan | undefined)[],
  rows: readonly AggregationRow[],
  took: number,
  options: ShapeOptions = {},
): AggregationResult {
  const levels = rules.map((rule, i): ShapeLevel => {
    switch (rule.kind) {
      case 'date': return { kind: 'date', head: { field: rule.field }, plan: plans[i]! };
      // The completion level always lists its three values, zeros included.
      case 'completion': return { kind: 'terms', head: { field: rule.field }, fill: COMPLETION_VALUES };
      case 'hidden_field': return { kind: 'terms', head: { field: rule.field, hidden_field_key: rule.key } };
      case 'answer': return { kind: 'terms', head: { field: rule.field, question_id: rule.questionId } };
      default: return { kind: 'terms', head: { field: rule.field } };
    }
  });
  const names = options.metrics ?? [];
  const counts = names.length ? countsByPath(rules, rows) : undefined;
  const metricsAt = (path: BucketPath) => {
    if (!counts) return {};
    const mine = counts(path);
    return { metrics: shapeMetrics(names, mine, options.main ? { from: mine, to: options.main(path) } : undefined) };
  };
  const { top, aggregations } = shapeBuckets(levels, rows, [], MAX_RESPONSE_BUCKETS, tooManyBuckets, counts ? metricsAt : undefined);
  return { took, hits: { total: { value: top.doc_count } }, ...metricsAt([]), aggregations: aggregations as LevelResult };
}

export interface AggregationOptions extends ReadOptions {
  /** The metrics of every bucket (metrics.ts). */
  metrics?: readonly MetricName[];
  /** The series of the date levels, when the caller planned them (a comparison's: aggregation-request.ts). */
  plans?: readonly (HistogramPlan | undefined)[];
}

/**
 * The coarsest slice the rollups serve the request with (rollups/read.ts grainOf), or null when
 * they cannot serve it and the raw table answers. An answer filter's groups hold no other
 * question's answers: no `answer` level with it (answer-rollups.ts).
 */
export function rollupGrain(selection: ResponseSelection, rules: readonly GroupByRule[], plans: readonly (HistogramPlan | undefined)[], metrics: readonly MetricName[], options: ReadOptions): Span | null {
  const answerFiltered = answerGroupFilter(selection) !== undefined && rules.some((r) => r.kind === 'answer');
  return options.rollups !== false && filtersServable(selection) && !answerFiltered && rulesServable(rules) && metricsServable(rules, metrics) ? grainOf(plans) : null;
}

/**
 * The rows of a rollup-served read that checked its answer filter's slices (answer-rollups.ts), or
 * null when one was incomplete. The check rides on the rows: with none (no bucket, not even the
 * total), nothing said the slices were complete.
 */
export function checkedRows(selection: ResponseSelection, rows: readonly AggregationRow[]): AggregationRow[] | null {
  return rows.length === 0 && answerGroupFilter(selection) ? null : completeRows(rows);
}

/** The data bounds when a histogram needs them, the plans, then the grouped query. */
export async function runAggregation(run: RunQuery, selection: ResponseSelection, rules: readonly GroupByRule[], options: AggregationOptions = {}): Promise<{ plans: (HistogramPlan | undefined)[]; rows: AggregationRow[] }> {
  const needBounds = options.plans ? [] : fieldsNeedingBounds(rules, selection.range);
  const bounds = needBounds.length ? readBounds(needBounds, (await (options.fresh ?? run)<Record<string, string | null>>(compileBounds(selection, needBounds)))[0]) : {};
  const plans = options.plans ? [...options.plans] : planLevels(rules, selection.range, bounds);
  checkDenseBuckets(plans);
  return { plans, rows: await groupedRows(run, selection, rules, plans, options) };
}

/**
 * The grouped query's rows for planned series: from the rollup for what it answers (rollups/read.ts),
 * with the pending marks checked beside it (runWithPending), the raw table for the rest.
 */
export async function groupedRows(run: RunQuery, selection: ResponseSelection, rules: readonly GroupByRule[], plans: readonly (HistogramPlan | undefined)[], options: AggregationOptions = {}): Promise<AggregationRow[]> {
  const metrics = options.metrics ?? [];
  const raw = async () => {
    const dense = compileDenseAggregation(selection, rules, plans, metrics);
    return dense ? dense.rows(await run<{ k: number; doc_count: number }>(dense.query)) : run<AggregationRow>(compileAggregation(selection, rules, plans, undefined, metrics));
  };
  const grain = rollupGrain(selection, rules, plans, metrics, options);
  if (!grain) return raw();
  // Dense buckets when the levels allow (the same rows): which form is known before the cover is.
  let dense: DenseRead | undefined;
  const compile = (pending: Pending) => {
    const cover = rollupCover(selection.range, pending, grain);
    dense = cover ? compileDenseRollupAggregation(selection, rules, plans, cover, metrics) : undefined;
    return dense ? dense.query : compileAggregation(selection, rules, plans, cover ?? undefined, metrics);
  };
  const read = (await runWithPending<AggregationRow>(run, options.fresh ?? run, selection.orgId, compile, options.marksFirst))!;
  const rows = dense ? dense.rows(read as never) : read;
  // An answer filter's slices found incomplete: the raw table.
  return otherDocCounts(checkedRows(selection, rows) ?? (await raw())) as AggregationRow[];
}
