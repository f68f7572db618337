/**
 * The survey aggregation's SQL (aggregation.ts runs it): (1) the data bounds a date level without a
 * range bound needs, and (3) the grouped query, ranked buckets WITH ROLLUP (compileAggregation),
 * dense buckets when every level's buckets are known (compileDenseAggregation), and their
 * rollup-served forms over the slice groups (weightedSource, compileDenseRollupAggregation).
 * Values only as query parameters; every raw read starts from the guarded source (compile.ts).
 */
import { ParamBag, compiled, type CompiledQuery } from '../clickhouse/sql.ts';
import { fromSelection, type ResponseSelection } from './compile.ts';
import { rawRowsSql } from './selection-rows.ts';
import { COMPLETION_VALUES } from './filters.ts';
import { answerGroupFilter, answersCompleteColumn } from './answer-rollups.ts';
import { GROUP_METRIC_ROW, RAW_METRIC_ROW, WEIGHTED_METRIC_ROW, metricAggregates, metricGroupsFromTotals, metricRowColumns, rollupMetricGroupsSql, type MetricName } from './metrics.ts';
import {
  DATE_FIELD_COLUMNS,
  MAX_TERMS_BUCKETS,
  answerValuesSql,
  isMultiValued,
  levelKeySql,
  type DateField,
  type DateRule,
  type GroupByRule,
} from './group-by.ts';
import { parseInstantMicros, type HistogramPlan } from '../query/histogram.ts';
import { compileDenseBuckets, denseBucketRows, denseFits, seriesLevel, type DenseLevel } from '../query/dense-buckets.ts';
import { ONE_LEVEL_COLUMNS, compileRankedBuckets, docCountSql as rankedDocCountSql, rankOneLevel } from '../query/ranked-buckets.ts';
import type { BucketRow } from '../query/shape.ts';
import { isFirstOfLevelSql } from '../query/multi-valued.ts';
import { groupsFromTotals, rollupAnswerLevelSql, rollupAnswersSql, rollupGroupsSql, rollupTotalsWithAnswersSql, type GroupColumn } from './rollups/groups.ts';
import type { RollupCover } from './rollups/read.ts';
import type { NamedRead } from './rollups/pending.ts';

// --- (1) data bounds -------------------------------------------------------------------------------

/** Date fields whose series needs a bound the range does not give. */
export function fieldsNeedingBounds(rules: readonly GroupByRule[], range: ResponseSelection['range']): DateField[] {
  if (range?.start !== undefined && range?.end !== undefined) return [];
  return [...new Set(rules.filter((r): r is DateRule => r.kind === 'date').map((r) => r.field))];
}

/** `SELECT min_0, max_0, ...` of each field, as DateTime64 text (NULL when no response has one). */
export function compileBounds(selection: ResponseSelection, fields: readonly DateField[]): CompiledQuery {
  const bag = new ParamBag();
  const source = fromSelection(selection, bag);
  const columns = fields.flatMap((f, i) => {
    const col = DATE_FIELD_COLUMNS[f];
    return [`toString(minOrNull(${col})) AS min_${i}`, `toString(maxOrNull(${col})) AS max_${i}`];
  });
  return compiled(`SELECT ${columns.join(', ')} ${source}`, bag);
}

export type Bounds = Partial<Record<DateField, { min: bigint | null; max: bigint | null }>>;

export function readBounds(fields: readonly DateField[], row: Record<string, string | null> | undefined): Bounds {
  const out: Bounds = {};
  const read = (x: string | null | undefined) => (x ? parseInstantMicros(x) : null);
  fields.forEach((f, i) => (out[f] = { min: read(row?.[`min_${i}`]), max: read(row?.[`max_${i}`]) }));
  return out;
}

// --- (3) the grouped query -------------------------------------------------------------------------

export type AggregationRow = BucketRow;

/**
 * Depth d (0 = everything in selection) rows: k1..kd are the bucket keys down to that level (a date
 * level's key is its bucket index), `doc_count` counts distinct responses, `other_doc_count` is the
 * summed doc_count of the siblings beyond the first 100. Only rows under kept ancestors are returned.
 */
export function compileAggregation(
  selection: ResponseSelection, rules: readonly GroupByRule[], plans: readonly (HistogramPlan | undefined)[], rollup?: RollupCover, metrics: readonly MetricName[] = [],
): NamedRead {
  const bag = new ParamBag();
  if (rollup) {
    const one = oneAnswerLevelSql(selection, rules, rollup, bag, metrics);
    // Its columns named: the pending set rides beside it in a UNION ALL (rollups/pending.ts checkedSql).
    if (one !== undefined) return Object.freeze({ ...compiled(one, bag), columns: ONE_LEVEL_COLUMNS });
    const { fromTotals, ...weighted } = weightedSource(selection, rules, plans, rollup, bag, metrics);
    const limit = bag.add(MAX_TERMS_BUCKETS, 'UInt32');
    // Rollup-served metrics have no multi-valued level (metricsServable): every row counts in full.
    const ranked = compileRankedBuckets({ ...weighted, metrics: metricAggregates(metrics, WEIGHTED_METRIC_ROW, []), limit, bounded: boundedLevels(rules) });
    const check = answersCompleteColumn(selection, rollup, bag, fromTotals);
    const q = compiled(`SELECT *${check} FROM (${ranked})`, bag);
    if (metrics.length > 0) return q;
    // Without metrics every column is a number, a key or a flag: named, so the pending set rides
    // beside the read in a UNION ALL (rollups/pending.ts checkedSql).
    return Object.freeze({ ...q, columns: ['depth', ...rules.map((_, i) => `k${i + 1}`), 'doc_count', 'other_doc_count', ...(check ? ['answers_complete'] : [])] });
  }
  const source = fromSelection(selection, bag);
  const keys = rules.map((rule, i) => levelKeySql(rule, plans[i], bag, i + 1));
  const limit = bag.add(MAX_TERMS_BUCKETS, 'UInt32');
  const metricColumns = metricAggregates(metrics, RAW_METRIC_ROW, firstFlagsPerDepth(rules));
  return compiled(compileRankedBuckets({ source, keys, count: docCountSql(rules), metrics: metricColumns, limit, bounded: boundedLevels(rules) }), bag);
}

/**
 * The levels as dense buckets (src/query/dense-buckets.ts) when every level has its buckets known
 * and every response of the selection in exactly one of them: `completion` (an enum, never NULL)
 * and `created_at` histograms with hour or day steps whose series covers the range (the selection
 * is bounded by that range on created_at, so no response is outside the series; nor is a rollup
 * slice of it, whose created_at is its start, inside the range). No metrics (they need per-bucket
 * aggregates). undefined for any other request. `column`: the created_at of the rows grouped.
 */
function denseLevels(selection: ResponseSelection, rules: readonly GroupByRule[], plans: readonly (HistogramPlan | undefined)[], metrics: readonly MetricName[], bag: ParamBag): DenseLevel[] | undefined {
  if (metrics.length > 0) return undefined;
  const levels: DenseLevel[] = [];
  for (const [i, rule] of rules.entries()) {
    if (rule.kind === 'completion') {
      // The Enum8's values are the indexes of COMPLETION_VALUES (schema/004).
      levels.push({ index: 'toUInt8(completion)', size: COMPLETION_VALUES.length, key: (x) => COMPLETION_VALUES[x], rolledUp: COMPLETION_VALUES[0] });
      continue;
    }
    // The selection is bounded by its range on created_at (compile.ts), as seriesLevel needs.
    const level = rule.kind === 'date' && rule.field === 'created_at' ? seriesLevel(DATE_FIELD_COLUMNS.created_at, plans[i], selection.range, bag) : undefined;
    if (!level) return undefined;
    levels.push(level);
  }
  return denseFits(levels) ? levels : undefined;
}

/** A grouped query as dense buckets, and how its rows become compileAggregation's. */
export interface DenseRead {
  query: NamedRead;
  rows(rows: readonly { k: number | string; doc_count: number | string }[]): AggregationRow[];
}

/**
 * The raw table's grouped query as dense buckets (denseLevels), undefined when the levels are not
 * dense (compileAggregation serves the request).
 */
export function compileDenseAggregation(
  selection: ResponseSelection, rules: readonly GroupByRule[], plans: readonly (HistogramPlan | undefined)[], metrics: readonly MetricName[] = [],
): DenseRead | undefined {
  const bag = new ParamBag();
  const levels = denseLevels(selection, rules, plans, metrics, bag);
  if (!levels) return undefined;
  const query = compiled(compileDenseBuckets(fromSelection(selection, bag), levels), bag);
  return { query, rows: (rows) => denseBucketRows(levels, rows) as AggregationRow[] };
}

/**
 * The same for a rollup-served read: the raw remainder's responses (1 each) and the slice groups
 * (their response counts) summed per packed bucket, without the ROLLUP and the ranking layers
 * (each costs the engine planning). The slice groups come from the slice totals or the groups
 * (weightedSource); no answer filter (its completeness check rides on compileAggregation's rows).
 * The columns are named: the pending set rides beside it (rollups/pending.ts checkedSql).
 */
export function compileDenseRollupAggregation(
  selection: ResponseSelection, rules: readonly GroupByRule[], plans: readonly (HistogramPlan | undefined)[], rollup: RollupCover, metrics: readonly MetricName[] = [],
): DenseRead | undefined {
  if (answerGroupFilter(selection) !== undefined || rules.some(isMultiValued)) return undefined;
  const bag = new ParamBag();
  const levels = denseLevels(selection, rules, plans, metrics, bag);
  if (!levels) return undefined;
  // The columns the levels read: created_at (a slice's start) and completion when it is a level.
  const columns: GroupColumn[] = rules.some((r) => r.kind === 'completion') ? ['completion'] : [];
  const read = ['created_at', ...columns].join(', ');
  const sources: string[] = [];
  const raw = rawRowsSql(selection, bag, rollup);
  if (raw !== undefined) sources.push(`SELECT ${read}, toUInt64(1) AS w ${raw}`);
  sources.push(`SELECT ${read}, toUInt64(x_rows) AS w FROM (${rollupGroupsSql(selection, rollup, bag, columns)})`);
  const grouped = compileDenseBuckets(`FROM (${sources.join(' UNION ALL ')})`, levels, 'sum(w)');
  const query = Object.freeze({ ...compiled(grouped, bag), columns: ['k', 'doc_count'] });
  return { query, rows: (rows) => denseBucketRows(levels, rows) as AggregationRow[] };
}

/**
 * The levels that never pass MAX_TERMS_BUCKETS buckets under one parent: a date level's series
 * (at most MAX_HISTOGRAM_BUCKETS, no more than MAX_TERMS_BUCKETS) and completion (three values).
 */
function boundedLevels(rules: readonly GroupByRule[]): boolean[] {
  return rules.map((r) => r.kind === 'date' || r.kind === 'completion');
}

/**
 * Per depth (0..n), the condition under which a raw row counts in a bucket of that depth: the
 * first value of every deeper multi-valued level ('' when there is none), as docCountSql counts.
 */
function firstFlagsPerDepth(rules: readonly GroupByRule[]): string[] {
  return Array.from({ length: rules.length + 1 }, (_, d) => rules.flatMap((rule, i) => (i + 1 > d && isMultiValued(rule) ? [isFirstOfLevelSql(i + 1)] : [])).join(' AND '));
}

/**
 * The grouped source when the rollup answers part of the selection (rollups/read.ts): the same ranked
 * ROLLUP over a union of weighted rows. Each row carries the level keys u1..un and, per depth d,
 * the number of responses it stands for in a bucket of that depth (w0..wn):
 * - raw rows (the part of the selection the rollup does not answer): 1, or the first-value flags of
 *   docCountSql under a multi-valued level;
 * - rollup groups: their response count down to the answer level (every depth when there is
 *   none); their answer key is NULL, so they are in no bucket of that level or below;
 * - rollup answer counts (of the one answer level's question): their count from that level down.
 * Without an answer level or a multi-valued level every depth's weight is the same: w0 alone.
 * `fromTotals`: whether the rollup groups came from the slice totals (for the answers' completeness check).
 */
function weightedSource(
  selection: ResponseSelection, rules: readonly GroupByRule[], plans: readonly (HistogramPlan | undefined)[], rollup: RollupCover, bag: ParamBag, metrics: readonly MetricName[],
): { source: string; keys: string[]; count: string; fromTotals: boolean } {
  const n = rules.length;
  const depths = Array.from({ length: n + 1 }, (_, d) => d);
  const answerLevel = rules.findIndex((r) => r.kind === 'answer') + 1; // 1-based, 0 when none
  // Without an answer level or a multi-valued one, a row weighs the same at every depth: one
  // weight w0 (each weight column and its multiIf branch costs the engine's planning).
  const uniform = answerLevel === 0 && !rules.some(isMultiValued);
  const weighted = uniform ? [0] : depths;
  const weights = (w: (d: number) => string) => weighted.map((d) => `toUInt64(${w(d)}) AS w${d}`).join(', ');
  const keysWith = (answerKey: string) =>
    rules.map((rule, i) => `${rule.kind === 'answer' ? answerKey : levelKeySql(rule, plans[i], bag, i + 1)} AS u${i + 1}`).join(', ');

  const sources: string[] = [];
  // The raw rows the rollup does not answer (selection-rows.ts), one by one.
  const raw = rawRowsSql(selection, bag, rollup);
  if (raw !== undefined) {
    const rawKeys = rules.map((rule, i) => `${levelKeySql(rule, plans[i], bag, i + 1)} AS u${i + 1}`).join(', ');
    const firstFlags = (d: number) => rules.flatMap((rule, i) => (i + 1 > d && isMultiValued(rule) ? [isFirstOfLevelSql(i + 1)] : []));
    sources.push(`SELECT ${rawKeys}, ${weights((d) => firstFlags(d).join(' AND ') || '1')}${metricRowColumns(metrics, RAW_METRIC_ROW)} ${raw}`);
  }
  // The group columns the levels' keys read (survey_id and created_at are on every rollup row).
  const columns = rules.flatMap((r): GroupColumn[] => (r.kind === 'completion' || r.kind === 'end_reason' ? [r.kind] : []));
  const fromTotals = metrics.length === 0 ? groupsFromTotals(selection, columns) : metricGroupsFromTotals(selection, columns);
  const answerRule = answerLevel > 0 ? (rules[answerLevel - 1] as Extract<GroupByRule, { kind: 'answer' }>) : undefined;
  // Both the slice totals and the question's answer counts from one read where totals serve both:
  // the total's row (answer_value NULL) counts above the answer level, the answers' rows from it down.
  const both = answerRule && metrics.length === 0 ? rollupTotalsWithAnswersSql(selection, rollup, answerRule.questionId, bag, columns) : undefined;
  if (both) {
    sources.push(`SELECT ${keysWith('answer_value')}, ${weights((d) => (d < answerLevel ? 'if(answer_value IS NULL, x_rows, 0)' : 'if(answer_value IS NULL, 0, x_rows)'))} FROM (${both})`);
  } else {
    const groups = metrics.length === 0 ? rollupGroupsSql(selection, rollup, bag, columns) : rollupMetricGroupsSql(selection, rollup, bag, columns, metrics);
    sources.push(`SELECT ${keysWith('CAST(NULL AS Nullable(String))')}, ${weights((d) => (answerLevel === 0 || d < answerLevel ? 'x_rows' : '0'))}${metricRowColumns(metrics, GROUP_METRIC_ROW)} FROM (${groups})`);
    if (answerRule) {
      sources.push(`SELECT ${keysWith('CAST(answer_value AS Nullable(String))')}, ${weights((d) => (d >= answerLevel ? 'x_rows' : '0'))} FROM (${rollupAnswersSql(selection, rollup, answerRule.questionId, bag, columns)})`);
    }
  }
  return {
    source: `FROM (${sources.join(' UNION ALL ')})`,
    keys: rules.map((_, i) => `u${i + 1}`),
    count: uniform ? 'sum(w0)' : `multiIf(${depths.slice(0, -1).map((d) => `depth = ${d}, sum(w${d})`).join(', ')}, sum(w${n}))`,
    fromTotals,
  };
}

/**
 * One `answer` level alone, rollup-served with neither a filter nor metrics (the answer buckets of
 * one question): the buckets grouped in ONE plain GROUP BY, ranked by rankOneLevel; undefined for
 * any other request. Every response stands for a row with a NULL answer plus a row per distinct
 * value it gave, every slice for a NULL row with its response count (t_rows) plus a row per value
 * with its count (q_*), so the NULL group is the whole selection (depth 0) and each other group a
 * bucket (depth 1): the counts compileRankedBuckets' ROLLUP gives over weightedSource's rows,
 * without its grouping sets, weight columns and window passes, which cost the engine planning
 * time (bench/query/README.md, "2026-11-27: the answer buckets in one grouping"). The rows carry
 * `level_total` instead of `other_doc_count` (otherDocCounts, after the read).
 */
function oneAnswerLevelSql(selection: ResponseSelection, rules: readonly GroupByRule[], rollup: RollupCover, bag: ParamBag, metrics: readonly MetricName[]): string | undefined {
  const [rule] = rules;
  if (rules.length !== 1 || rule.kind !== 'answer' || metrics.length > 0) return undefined;
  const slices = rollupAnswerLevelSql(selection, rollup, rule.questionId, bag);
  if (slices === undefined) return undefined;
  const sources: string[] = [];
  const raw = rawRowsSql(selection, bag, rollup);
  if (raw !== undefined) {
    const values = `CAST(arrayDistinct(${answerValuesSql(bag.add(rule.questionId, 'String'))}), 'Array(Nullable(String))')`;
    sources.push(`SELECT arrayJoin(arrayPushFront(${values}, NULL)) AS answer_value, toUInt64(1) AS x_rows ${raw}`);
  }
  sources.push(slices);
  const grouped =
    `SELECT answer_value AS k1, toUInt8(answer_value IS NOT NULL) AS depth, sum(x_rows) AS doc_count ` +
    `FROM (${sources.join(' UNION ALL ')}) GROUP BY answer_value HAVING doc_count > 0`;
  return rankOneLevel(grouped, bag.add(MAX_TERMS_BUCKETS, 'UInt32'));
}

/** doc_count per depth (query/ranked-buckets.ts): the hidden_field and answer levels are multi-valued. */
export function docCountSql(rules: readonly GroupByRule[]): string {
  return rankedDocCountSql(rules.map(isMultiValued));
}
