/**
 * SEARCH /1.0/survey/<survey_ids>/response/aggregation: counts grouped by 1..3 ordered `group_by`
 * rules, one nesting level per rule, with dense date histograms.
 *
 * Plan: (1) when a date level lacks a range bound, one query reads the data's min/max of its field
 * within the scope; (2) the series of each date level is planned in JS (histogram.ts); (3) ONE
 * query groups by all levels WITH ROLLUP, so every parent bucket gets its own exact count (a
 * response counts once in a parent bucket even when it sits in several child buckets), then ranks
 * buckets inside each parent and keeps the 100 largest per non-date level; (4) JS shapes the tree
 * and fills the zero buckets (every date bucket of the series, all three completion values).
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
import type { ClickHouseClient } from '@clickhouse/client';
import * as v from 'valibot';
import { ParamBag, compiled, type CompiledQuery, type RunQuery } from '../clickhouse/sql.ts';
import { tooExpensive } from '../errors.ts';
import { QUERY_SETTINGS, fromScope, type Scope } from './compile.ts';
import { COMPLETION_VALUES, queryScopeEntries } from './filters.ts';
import { ignored, jsonObject } from '../validation.ts';
import {
  DATE_FIELD_COLUMNS,
  MAX_TERMS_BUCKETS,
  groupBySchema,
  isMultiValued,
  levelKeySql,
  type DateField,
  type DateRule,
  type GroupByRule,
} from './group-by.ts';
import { formatMicros, parseInstantMicros, planHistogram, truncateTo, type HistogramPlan } from '../query/histogram.ts';
import { DASHBOARD_QUERY_CACHE_SETTINGS, pollingCachedEntry, queryRows, requestKey } from '../clickhouse/result-cache.ts';
import { byteOrder, compileRankedRollup, docCountSql as rollupDocCountSql } from '../query/rollup.ts';
import { isFirstOfLevelSql } from '../query/multi-valued.ts';
import { rawRowsSql, rowsInScopeSql } from './scope-rows.ts';
import { filtersServable, grainOf, rollupAnswersSql, rollupGroupsSql, rollupWindow, rulesServable, runWithPending, type Pending, type ReadOptions, type RollupWindow } from './rollups/read.ts';

export { MAX_RESPONSE_BUCKETS } from '../query/rollup.ts';
import { MAX_RESPONSE_BUCKETS } from '../query/rollup.ts';

/**
 * The grouped query's rows are the buckets of every level plus the total: a result past
 * MAX_RESPONSE_BUCKETS + 1 rows is refused by the engine (396, a 400 query_too_expensive) before it
 * reaches Node, where it could have been ~1M rows. Only the final result counts: the subqueries
 * that rank and cut the terms levels are not limited (checked on the engine, 26.x).
 */
const AGGREGATION_SETTINGS = Object.freeze({ ...QUERY_SETTINGS, max_result_rows: String(MAX_RESPONSE_BUCKETS + 1), result_overflow_mode: 'throw' as const });

const tooManyBuckets = () =>
  tooExpensive(`The aggregation would return more than ${MAX_RESPONSE_BUCKETS} buckets: lower date_histogram_buckets, narrow the range, or use fewer group_by levels`);

/** The scope plus `group_by`; `size` and `offset` are accepted and ignored, any other field is a 400. */
export const aggregationBodySchema = v.pipe(
  jsonObject({ ...queryScopeEntries, group_by: groupBySchema, size: ignored, offset: ignored }, 'the aggregation body'),
  v.transform(({ size: _size, offset: _offset, ...body }) => body),
);
export type AggregationBody = v.InferOutput<typeof aggregationBodySchema>;

export interface Bucket {
  key: string;
  doc_count: number;
  aggregations?: LevelResult;
}

export type LevelResult =
  | { field: DateField; interval: string; buckets: Bucket[] }
  | { field: string; hidden_field_key?: string; question_id?: string; buckets: Bucket[]; other_doc_count: number };

export interface AggregationResult {
  took: number;
  hits: { total: { value: number } };
  aggregations: LevelResult;
}

// --- (1) data bounds -------------------------------------------------------------------------------

/** Date fields whose series needs a bound the range does not give. */
export function fieldsNeedingBounds(rules: readonly GroupByRule[], range: Scope['range']): DateField[] {
  if (range?.start !== undefined && range?.end !== undefined) return [];
  return [...new Set(rules.filter((r): r is DateRule => r.kind === 'date').map((r) => r.field))];
}

/** `SELECT min_0, max_0, ...` of each field, as DateTime64 text (NULL when no response has one). */
export function compileBounds(scope: Scope, fields: readonly DateField[]): CompiledQuery {
  const bag = new ParamBag();
  const source = fromScope(scope, bag);
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

// --- (2) series plans ------------------------------------------------------------------------------

/** The series of each date level (undefined for the other levels). */
export function planLevels(rules: readonly GroupByRule[], range: Scope['range'], bounds: Bounds): (HistogramPlan | undefined)[] {
  return rules.map((rule) => {
    if (rule.kind !== 'date') return undefined;
    const data = bounds[rule.field];
    const start = range?.start !== undefined ? parseInstantMicros(range.start) : data?.min != null ? truncateTo(data.min, rule.minInterval) : null;
    const end = range?.end !== undefined ? parseInstantMicros(range.end) : data?.max ?? null;
    // No value of the field in scope: an empty series (end < start).
    if (start === null || end === null) return planHistogram(0n, -1n, rule.minInterval, rule.buckets);
    return planHistogram(start, end, rule.minInterval, rule.buckets);
  });
}

// --- (3) the grouped query -------------------------------------------------------------------------

export interface AggregationRow {
  depth: number;
  doc_count: number | string;
  other_doc_count: number | string;
  [key: `k${number}`]: string | number | null;
}

/**
 * Depth d (0 = everything in scope) rows: k1..kd are the bucket keys down to that level (a date
 * level's key is its bucket index), `doc_count` counts distinct responses, `other_doc_count` is the
 * summed doc_count of the siblings beyond the first 100. Only rows under kept ancestors are returned.
 */
export function compileAggregation(scope: Scope, rules: readonly GroupByRule[], plans: readonly (HistogramPlan | undefined)[], rollup?: RollupWindow): CompiledQuery {
  const bag = new ParamBag();
  if (rollup) {
    const limit = bag.add(MAX_TERMS_BUCKETS, 'UInt32');
    return compiled(compileRankedRollup({ ...weightedSource(scope, rules, plans, rollup, bag), limit }), bag);
  }
  const source = fromScope(scope, bag);
  const keys = rules.map((rule, i) => levelKeySql(rule, plans[i], bag, i + 1));
  const limit = bag.add(MAX_TERMS_BUCKETS, 'UInt32');
  return compiled(compileRankedRollup({ source, keys, count: docCountSql(rules), limit }), bag);
}

/**
 * The grouped source when the rollup answers part of the scope (rollups/read.ts): the same ranked
 * ROLLUP over a union of weighted rows. Each row carries the level keys u1..un and, per depth d,
 * the number of responses it stands for in a bucket of that depth (w0..wn):
 * - without an answer level, the rows in scope (scope-rows.ts): raw rows grouped by the columns the
 *   levels read and slice groups, each weighing its count at every depth;
 * - with one, the raw rows (those the rollup does not answer) one by one, 1 or the first-value
 *   flags of docCountSql; the slice groups with their count down to the answer level, their answer
 *   key NULL (in no bucket of that level or below); the slices' answer counts of that question,
 *   with their count from that level down.
 */
function weightedSource(scope: Scope, rules: readonly GroupByRule[], plans: readonly (HistogramPlan | undefined)[], rollup: RollupWindow, bag: ParamBag): { source: string; keys: string[]; count: string } {
  const n = rules.length;
  const depths = Array.from({ length: n + 1 }, (_, d) => d);
  const answerLevel = rules.findIndex((r) => r.kind === 'answer') + 1; // 1-based, 0 when none
  const weights = (w: (d: number) => string) => depths.map((d) => `toUInt64(${w(d)}) AS w${d}`).join(', ');
  const keysWith = (answerKey: string) =>
    rules.map((rule, i) => `${rule.kind === 'answer' ? answerKey : levelKeySql(rule, plans[i], bag, i + 1)} AS u${i + 1}`).join(', ');
  // The group columns the levels' keys read (survey_id and created_at are on every rollup row).
  const columns = rules.flatMap((r): ('completion' | 'end_reason')[] => (r.kind === 'completion' || r.kind === 'end_reason' ? [r.kind] : []));

  const sources: string[] = [];
  if (answerLevel === 0) {
    const rows = rowsInScopeSql(scope, rollup, bag, { keys: ['survey_id', 'created_at', ...columns] });
    sources.push(`SELECT ${keysWith('')}, ${weights(() => 'group_rows')} FROM (${rows})`);
  } else {
    const raw = rawRowsSql(scope, bag, rollup);
    if (raw !== undefined) {
      const rawKeys = rules.map((rule, i) => `${levelKeySql(rule, plans[i], bag, i + 1)} AS u${i + 1}`).join(', ');
      const firstFlags = (d: number) => rules.flatMap((rule, i) => (i + 1 > d && isMultiValued(rule) ? [isFirstOfLevelSql(i + 1)] : []));
      sources.push(`SELECT ${rawKeys}, ${weights((d) => firstFlags(d).join(' AND ') || '1')} ${raw}`);
    }
    sources.push(`SELECT ${keysWith('CAST(NULL AS Nullable(String))')}, ${weights((d) => (d < answerLevel ? 'x_rows' : '0'))} FROM (${rollupGroupsSql(scope, rollup, bag, columns)})`);
    const rule = rules[answerLevel - 1] as Extract<GroupByRule, { kind: 'answer' }>;
    sources.push(`SELECT ${keysWith('CAST(answer_value AS Nullable(String))')}, ${weights((d) => (d >= answerLevel ? 'x_rows' : '0'))} FROM (${rollupAnswersSql(scope, rollup, rule.questionId, bag, columns)})`);
  }
  return {
    source: `FROM (${sources.join(' UNION ALL ')})`,
    keys: rules.map((_, i) => `u${i + 1}`),
    count: `multiIf(${depths.slice(0, -1).map((d) => `depth = ${d}, sum(w${d})`).join(', ')}, sum(w${n}))`,
  };
}

/** doc_count per depth (query/rollup.ts): the hidden_field and answer levels are multi-valued. */
export function docCountSql(rules: readonly GroupByRule[]): string {
  return rollupDocCountSql(rules.map(isMultiValued));
}

// --- (4) shaping -----------------------------------------------------------------------------------

/** Rows -> the nested body. Pure; `took` is passed in. */
export function shapeAggregation(
  rules: readonly GroupByRule[],
  plans: readonly (HistogramPlan | undefined)[],
  rows: readonly AggregationRow[],
  took: number,
): AggregationResult {
  // children of each parent path (the JSON of its keys), with their own key and count
  const children = new Map<string, { key: string | number; doc_count: number; other: number }[]>();
  let total = 0;
  for (const row of rows) {
    const depth = Number(row.depth);
    if (depth === 0) {
      total = Number(row.doc_count);
      continue;
    }
    const path = [];
    for (let i = 1; i < depth; i++) path.push(normalizeKey(rules[i - 1], row[`k${i}`]));
    const parent = JSON.stringify(path);
    const list = children.get(parent) ?? [];
    list.push({ key: normalizeKey(rules[depth - 1], row[`k${depth}`]), doc_count: Number(row.doc_count), other: Number(row.other_doc_count) });
    children.set(parent, list);
  }

  let emitted = 0;
  const level = (depth: number, path: (string | number)[]): LevelResult => {
    const rule = rules[depth];
    const found = children.get(JSON.stringify(path)) ?? [];
    emitted += rule.kind === 'date' ? plans[depth]!.starts.length : Math.max(found.length, rule.kind === 'completion' ? 3 : 0);
    if (emitted > MAX_RESPONSE_BUCKETS) throw tooManyBuckets();
    const nested = (key: string | number): Pick<Bucket, 'aggregations'> =>
      depth + 1 < rules.length ? { aggregations: level(depth + 1, [...path, key]) } : {};

    if (rule.kind === 'date') {
      const plan = plans[depth]!;
      const counts = new Map(found.map((c) => [c.key, c.doc_count]));
      return {
        field: rule.field,
        interval: plan.interval,
        buckets: plan.starts.map((start, i) => ({ key: formatMicros(start), doc_count: counts.get(i) ?? 0, ...nested(i) })),
      };
    }
    let entries = found.map((c) => ({ key: String(c.key), doc_count: c.doc_count }));
    if (rule.kind === 'completion') {
      const present = new Set(entries.map((e) => e.key));
      entries = [...entries, ...COMPLETION_VALUES.filter((c) => !present.has(c)).map((key) => ({ key, doc_count: 0 }))];
    }
    entries.sort((a, b) => b.doc_count - a.doc_count || byteOrder(a.key, b.key));
    const head: Omit<Extract<LevelResult, { other_doc_count: number }>, 'buckets' | 'other_doc_count'> = { field: rule.field };
    if (rule.kind === 'hidden_field') head.hidden_field_key = rule.key;
    if (rule.kind === 'answer') head.question_id = rule.questionId;
    return {
      ...head,
      buckets: entries.map((e) => ({ key: e.key, doc_count: e.doc_count, ...nested(e.key) })),
      other_doc_count: found[0]?.other ?? 0,
    };
  };

  return { took, hits: { total: { value: total } }, aggregations: level(0, []) };
}

function normalizeKey(rule: GroupByRule, raw: string | number | null | undefined): string | number {
  return rule.kind === 'date' ? Number(raw) : String(raw);
}

// --- the handler -----------------------------------------------------------------------------------

/** SEARCH /1.0/survey/<survey_ids>/response/aggregation, for a parsed scope and rules. */
export async function aggregate(client: ClickHouseClient, scope: Scope, rules: readonly GroupByRule[], options: ReadOptions = {}): Promise<{ result: AggregationResult; watermark: number }> {
  const started = performance.now();
  // Cached as a whole request (result-cache.ts): the bounds and the pending marks it read are those
  // its rows were computed with. They are read without any cache; the grouped query may use the
  // engine's 3 s query cache (its SQL carries both).
  const run: RunQuery = (q) => queryRows(client, q, { ...AGGREGATION_SETTINGS, ...DASHBOARD_QUERY_CACHE_SETTINGS });
  const fresh: RunQuery = (q) => queryRows(client, q, AGGREGATION_SETTINGS);
  const cached = pollingCachedEntry(client, requestKey('aggregation', [scope, rules, options]), async () => [await runAggregation(run, scope, rules, { ...options, fresh })]);
  const [{ plans, rows }] = await cached.rows;
  return { result: shapeAggregation(rules, plans, rows, Math.round(performance.now() - started)), watermark: cached.at };
}

/** The data bounds when a histogram needs them, the plans, then the grouped query. */
export async function runAggregation(run: RunQuery, scope: Scope, rules: readonly GroupByRule[], options: ReadOptions = {}): Promise<{ plans: (HistogramPlan | undefined)[]; rows: AggregationRow[] }> {
  const needBounds = fieldsNeedingBounds(rules, scope.range);
  const bounds = needBounds.length ? readBounds(needBounds, (await (options.fresh ?? run)<Record<string, string | null>>(compileBounds(scope, needBounds)))[0]) : {};
  const plans = planLevels(rules, scope.range, bounds);
  // The dense series alone (every date bucket under every date bucket) may already be too many.
  if (plans.reduce((n, p) => n * (p ? Math.max(p.starts.length, 1) : 1), 1) > MAX_RESPONSE_BUCKETS) throw tooManyBuckets();
  // From the rollup for what it answers (rollups/read.ts), the raw table for the rest.
  const grain = options.rollups !== false && filtersServable(scope) && rulesServable(rules) ? grainOf(plans) : null;
  if (!grain) return { plans, rows: await run<AggregationRow>(compileAggregation(scope, rules, plans)) };
  const compile = (pending: Pending) => compileAggregation(scope, rules, plans, rollupWindow(scope.range, pending, grain) ?? undefined);
  return { plans, rows: (await runWithPending<AggregationRow>(run, options.fresh ?? run, scope.orgId, compile))! };
}
