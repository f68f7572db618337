/**
 * SEARCH /1.0/event/aggregation: events counted (and their distinct users, when asked) by 1..3
 * ordered group_by rules, one nesting level per rule, with the survey aggregation's rules:
 * dense, range-aligned date histograms (src/query/histogram.ts: buckets start at range.start, the
 * series covers the range, end inclusive; a missing bound comes from the data), term levels of
 * the 100 largest buckets per parent with the rest in `other_doc_count`, one grouped query WITH
 * ROLLUP so every parent bucket has its own exact counts (src/query/ranked-buckets.ts).
 *
 * Levels: timestamp; type; event_name, context_locale (events without one are in no bucket);
 * property (a top-level key of `properties`: strings by value, other JSON values by their JSON
 * text, e.g. 42, true; absent or null: no bucket); user_property (the user's current identify
 * value, the same way); group (the user's current groups of `group_type`, by name: a user in two
 * groups counts in both, and once in each parent bucket).
 * Metrics: `count` (doc_count, always there) and `unique_users` (distinct user_id; every anonymous
 * event has its own user id, so each counts as one user): from the hours' user bitmaps when the
 * levels are timestamps and nothing is filtered (user-hours.ts), else over the rows.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import * as v from 'valibot';
import { ParamBag, compiled, type CompiledQuery, type RunQuery } from '../../clickhouse/sql.ts';
import { bucketIndexSql } from '../../query/histogram-sql.ts';
import { compileDenseBuckets, denseBucketRows, denseFits, seriesLevel, type DenseLevel } from '../../query/dense-buckets.ts';
import { MIN_INTERVALS, parseInstantMicros, planSeries, type HistogramPlan, type MinInterval } from '../../query/histogram.ts';
import { eachDistinctOrNull } from '../../query/multi-valued.ts';
import {
  MAX_GROUP_BY_LEVELS, MAX_HISTOGRAM_BUCKETS, MAX_RESPONSE_BUCKETS, MAX_TERMS_BUCKETS, checkDenseBuckets,
  compileRankedBuckets, docCountSql, tooManyBuckets,
} from '../../query/ranked-buckets.ts';
import { cachedRequest } from '../../query/request-cache.ts';
import { EVENT_AGGREGATION_SETTINGS } from './settings.ts';
import { shapeBuckets, type BucketRow, type ShapeLevel } from '../../query/shape.ts';
import { jsonObject, strictMessage } from '../../validation.ts';
import { markReleases, releasesForSeries } from '../../releases/marks.ts';
import type { Release } from '../../releases/schema.ts';
import { propertyValue, rawJsonValue } from './compile.ts';
import { eventSelectionEntries } from './filters.ts';
import { EventSource, type EventSelection } from './source.ts';
import { groupedPart, hoursParts, hoursServe, hoursSource, planEdges, type HoursPart } from './hours.ts';
import { leafBucketRows, type LeafRow, type ResampledLevels } from './hours-buckets.ts';
import { USER_HOURS_AGGREGATES, USER_HOURS_UNIQUE_USERS, userHoursServe } from './user-hours.ts';
import { maxChars } from '../../chars.ts';

export type EventGroupByRule =
  | { readonly field: 'timestamp'; readonly minInterval: MinInterval; readonly buckets: number }
  | { readonly field: 'type' | 'event_name' | 'context_locale' }
  | { readonly field: 'property' | 'user_property'; readonly propertyKey: string }
  | { readonly field: 'group'; readonly groupType: string };

export const EVENT_GROUP_BY_FIELDS = ['timestamp', 'type', 'event_name', 'property', 'user_property', 'group', 'context_locale'] as const;
export const EVENT_METRICS = ['count', 'unique_users'] as const;
export type EventMetric = (typeof EVENT_METRICS)[number];

const bucketsMessage = `date_histogram_buckets must be an integer from 1 to ${MAX_HISTOGRAM_BUCKETS}`;
const name = (what: string) =>
  v.pipe(v.string(`${what} must be a string`), v.minLength(1, `${what} must not be empty`), maxChars(255, `${what} is at most 255 characters`));

/**
 * A rule is strict, like every object of a request body (validation.ts) and like the survey
 * rules: an unknown member is a 400 naming it and the members the rule accepts, a missing one
 * reads `property_key is required`.
 */
const rule = <const E extends v.ObjectEntries>(entries: E, what: string) => v.strictObject(entries, strictMessage(what, entries));

const ruleSchema = v.variant('field', [
  v.pipe(
    rule({
      field: v.literal('timestamp'),
      date_histogram_min_interval: v.picklist(MIN_INTERVALS, `date_histogram_min_interval must be one of ${MIN_INTERVALS.join(', ')}`),
      date_histogram_buckets: v.pipe(v.number(bucketsMessage), v.integer(bucketsMessage), v.minValue(1, bucketsMessage), v.maxValue(MAX_HISTOGRAM_BUCKETS, bucketsMessage)),
    }, 'a timestamp group_by rule'),
    v.transform((r): EventGroupByRule => ({ field: 'timestamp', minInterval: r.date_histogram_min_interval, buckets: r.date_histogram_buckets })),
  ),
  v.pipe(rule({ field: v.literal('type') }, 'a type group_by rule'), v.transform((): EventGroupByRule => ({ field: 'type' }))),
  v.pipe(rule({ field: v.literal('event_name') }, 'an event_name group_by rule'), v.transform((): EventGroupByRule => ({ field: 'event_name' }))),
  v.pipe(rule({ field: v.literal('context_locale') }, 'a context_locale group_by rule'), v.transform((): EventGroupByRule => ({ field: 'context_locale' }))),
  v.pipe(
    rule({ field: v.literal('property'), property_key: name('property_key') }, 'a property group_by rule'),
    v.transform((r): EventGroupByRule => ({ field: 'property', propertyKey: r.property_key })),
  ),
  v.pipe(
    rule({ field: v.literal('user_property'), property_key: name('property_key') }, 'a user_property group_by rule'),
    v.transform((r): EventGroupByRule => ({ field: 'user_property', propertyKey: r.property_key })),
  ),
  v.pipe(
    rule({ field: v.literal('group'), group_type: name('group_type') }, 'a group group_by rule'),
    v.transform((r): EventGroupByRule => ({ field: 'group', groupType: r.group_type })),
  ),
], `each group_by rule is an object whose field is one of ${EVENT_GROUP_BY_FIELDS.join(', ')}`);

export const eventAggregationBodySchema = jsonObject({
  ...eventSelectionEntries,
  group_by: v.pipe(
    v.array(ruleSchema, 'group_by must be an array of grouping rules'),
    v.minLength(1, 'group_by needs at least one rule'),
    v.maxLength(MAX_GROUP_BY_LEVELS, `group_by has at most ${MAX_GROUP_BY_LEVELS} rules (nesting levels)`),
  ),
  metrics: v.optional(v.pipe(
    v.array(v.picklist(EVENT_METRICS, `each metric is one of ${EVENT_METRICS.join(', ')}`), 'metrics must be an array'),
    v.minLength(1, 'metrics needs at least one metric'),
    v.maxLength(EVENT_METRICS.length, `metrics holds at most ${EVENT_METRICS.length} items`),
  ), ['count']),
}, 'the event aggregation body');
export type EventAggregationBody = v.InferOutput<typeof eventAggregationBodySchema>;

/** `SELECT min, max` of timestamp in selection (DateTime64 texts, NULL when no event matches). */
export function compileEventBounds(selection: EventSelection): CompiledQuery {
  const bag = new ParamBag();
  const from = new EventSource(selection, bag).from();
  return compiled(`SELECT toString(minOrNull(timestamp)) AS min, toString(maxOrNull(timestamp)) AS max ${from}`, bag);
}

/** The series of each timestamp level: the range, a missing bound from the data (the first event truncated to its hour/day/month). */
export function planEventLevels(rules: readonly EventGroupByRule[], range: EventSelection['range'], bounds: { min: string | null; max: string | null } | undefined): (HistogramPlan | undefined)[] {
  const data = { min: bounds?.min ? parseInstantMicros(bounds.min) : null, max: bounds?.max ? parseInstantMicros(bounds.max) : null };
  return rules.map((rule) => (rule.field === 'timestamp' ? planSeries(range, data, rule.minInterval, rule.buckets) : undefined));
}

/** The levels and metrics the hours answer (hours.ts): timestamp, type and event_name counts. */
function hoursAnswer(selection: EventSelection, rules: readonly EventGroupByRule[], metrics: readonly EventMetric[]): boolean {
  return !metrics.includes('unique_users') && rules.every((r) => r.field === 'timestamp' || r.field === 'type' || r.field === 'event_name') && hoursServe(selection);
}

/** Unique users from the hours' bitmaps (user-hours.ts): timestamp levels only, no filter. */
function userHoursAnswer(selection: EventSelection, rules: readonly EventGroupByRule[], metrics: readonly EventMetric[]): boolean {
  return metrics.includes('unique_users') && rules.every((r) => r.field === 'timestamp') && userHoursServe(selection);
}

/** The hours' group keys (hours.ts) of the levels, at instant column `t`: a timestamp level's bucket index, `type`, the event name (NULL for none). */
function hoursKeys(rules: readonly EventGroupByRule[], plans: readonly (HistogramPlan | undefined)[], bag: ParamBag, t: string): string[] {
  return rules.map((rule, i) => (rule.field === 'timestamp' ? bucketIndexSql(t, plans[i]!, bag, `level${i + 1}`) : rule.field === 'type' ? 'type' : `nullIf(event_name, '')`));
}

/** Rows a part of the hours' leaf query returns at most: past it, the ranked query answers (hours-buckets.ts). */
const HOURS_LEAF_LIMIT = MAX_RESPONSE_BUCKETS + 1;

/**
 * A count the hours answer (hoursAnswer), as the groups of both parts (hours.ts' hoursParts),
 * with what hours-buckets.ts needs to make compileRankedBuckets' rows of them: each level's
 * rolled-up key (a timestamp or name key is Nullable: NULL; `type` is a String: ''), and, when
 * one level is a date histogram whose series covers the range (seriesLevel), that level and the
 * name levels. undefined when the hours do not answer the read.
 *
 * Such a level puts every event of the selection in one of its `size` buckets (both parts are
 * bounded by the range), so its key is a plain Int64 index and the partial hours, read from the
 * rows, are grouped by the other levels only, each group counting its events per bucket in an
 * array (`countResample(0, size, 1)(index)`, column `c`; hours-buckets.ts counts each bucket of it
 * as a group), and the names are grouped as the engine stores them (LowCardinality, '' for none), not
 * as nullIf(event_name, ''). Grouping the partial hours' ~660k rows of the bench's count by a
 * name and a Nullable bucket index took ~15 ms more engine CPU than this (bench/events/README.md,
 * 2026-11-27 08:17). The whole hours (the event_counts projection) are grouped by all the levels,
 * as before, with an empty `c`.
 */
export function compileHoursLeaves(selection: EventSelection, rules: readonly EventGroupByRule[], plans: readonly (HistogramPlan | undefined)[], metrics: readonly EventMetric[], options: EventAggregationOptions = {}): { query: CompiledQuery; rolledUp: (string | null)[]; resampled?: ResampledLevels } | undefined {
  if (options.hours === false || options.ranked === true || !hoursAnswer(selection, rules, metrics)) return undefined;
  const bag = new ParamBag();
  const source = new EventSource(selection, bag);
  const limit = bag.add(HOURS_LEAF_LIMIT, 'UInt32');
  const rolledUp = rules.map((r) => (r.field === 'type' ? '' : null));
  const timeLevels = rules.flatMap((r, i) => (r.field === 'timestamp' ? [i] : []));
  const level = timeLevels.length === 1 && options.resample !== false ? timeLevels[0] : undefined;
  const covering = level === undefined ? undefined : seriesLevel('timestamp', plans[level], selection.range, bag);
  if (level === undefined || !covering) {
    const sql = hoursParts(source, planEdges(plans), groupedPart((t) => hoursKeys(rules, plans, bag, t)), undefined, limit);
    return { query: compiled(sql, bag), rolledUp };
  }
  const size = bag.add(covering.size, 'UInt32');
  const term = (rule: EventGroupByRule) => (rule.field === 'type' ? 'type' : 'event_name');
  const part: HoursPart = (t, which) => {
    const columns = rules.map((rule, i) => {
      if (i !== level) return `${term(rule)} AS g${i + 1}`;
      // The same series check as seriesLevel's, then the index of the instant `t`.
      return which === 'whole' ? `${seriesLevel(t, plans[i], selection.range, bag)!.index} AS g${i + 1}` : `toInt64(0) AS g${i + 1}`;
    });
    const groupBy = rules.flatMap((_, i) => (which === 'whole' || i !== level ? [`g${i + 1}`] : []));
    return which === 'whole'
      ? { select: [...columns, 'count() AS n', 'CAST([] AS Array(UInt64)) AS c'].join(', '), groupBy, having: 'n > 0' }
      : { select: [...columns, 'toUInt64(0) AS n', `countResample(0, ${size}, 1)(${covering.index}) AS c`].join(', '), groupBy };
  };
  const sql = hoursParts(source, planEdges(plans), part, undefined, limit);
  const names = rules.flatMap((r, i) => (r.field === 'event_name' ? [i] : []));
  return { query: compiled(sql, bag), rolledUp, resampled: { level, names } };
}

/**
 * The ranked-bucket query (src/query/ranked-buckets.ts) over the guarded source and the joins the
 * levels need; over the hours (hours.ts) when they answer it. `hours: false` forces the rows.
 */
export function compileEventAggregation(selection: EventSelection, rules: readonly EventGroupByRule[], plans: readonly (HistogramPlan | undefined)[], metrics: readonly EventMetric[], options: { hours?: boolean } = {}): CompiledQuery {
  const bag = new ParamBag();
  const source = new EventSource(selection, bag);
  const limit = () => bag.add(MAX_TERMS_BUCKETS, 'UInt32');
  const keysAt = (t: string) => hoursKeys(rules, plans, bag, t);
  if (options.hours !== false && hoursAnswer(selection, rules, metrics)) {
    const from = hoursSource(source, planEdges(plans), keysAt);
    return compiled(compileRankedBuckets({ source: from, keys: rules.map((_, i) => `g${i + 1}`), count: 'sum(n)', limit: limit() }), bag);
  }
  if (options.hours !== false && userHoursAnswer(selection, rules, metrics)) {
    const from = hoursSource(source, planEdges(plans), keysAt, undefined, USER_HOURS_AGGREGATES);
    return compiled(compileRankedBuckets({ source: from, keys: rules.map((_, i) => `g${i + 1}`), count: 'sum(n)', metrics: { unique_users: USER_HOURS_UNIQUE_USERS }, limit: limit() }), bag);
  }
  const joins: string[] = [];
  const keys = rules.map((rule, i) => {
    const level = i + 1;
    switch (rule.field) {
      case 'timestamp':
        return bucketIndexSql('timestamp', plans[i]!, bag, `level${level}`);
      case 'type':
        return 'type';
      case 'event_name':
      case 'context_locale':
        return `nullIf(${rule.field}, '')`;
      case 'property':
        return propertyValue(rule.propertyKey).key;
      case 'user_property': {
        const column = `user_property_${level}`;
        joins.push(source.joinUserProperty(bag.add(rule.propertyKey, 'String'), column));
        return rawJsonValue(column).key;
      }
      case 'group': {
        const column = `group_names_${level}`;
        joins.push(source.joinGroupNames(bag.add(rule.groupType, 'String'), column));
        return eachDistinctOrNull(column, `level${level}`, level);
      }
    }
  });
  const from = source.from(joins);
  const count = docCountSql(rules.map((r) => r.field === 'group'));
  // Every anonymous event has its own random user id (a UUID v4, never a known user's v5, rows.ts):
  // they are counted, and only the known users' ids go into the distinct set, which then holds
  // known users only (smaller sets, cheaper merges). An anonymous event is in no group and has no
  // user property, so no multi-valued level repeats its row.
  const extra = metrics.includes('unique_users') ? { unique_users: 'uniqExactIf(user_id, anonymous = 0) + countIf(anonymous = 1)' } : undefined;
  return compiled(compileRankedBuckets({ source: from, keys, count, metrics: extra, limit: limit() }), bag);
}

/**
 * How a read is answered: `hours: false` forces the rows (no projection); `dense: false` forces
 * the ranked buckets' query (compileRankedBuckets) where dense buckets would serve. Both are the
 * property tests' references; the service uses the defaults.
 */
export interface EventAggregationOptions {
  hours?: boolean;
  dense?: boolean;
  /** `ranked: true`: a count from the hours through the engine's ranked query, not hours-buckets.ts. */
  ranked?: boolean;
  /** `resample: false`: hours-buckets.ts' groups without the partial hours' bucket arrays (compileHoursLeaves). */
  resample?: boolean;
}

/**
 * The levels as dense buckets (src/query/dense-buckets.ts) when the rows answer the read (not the
 * hours: hoursAnswer / userHoursAnswer) and every level is a timestamp histogram with hour or day
 * steps whose series covers the range, which bounds the source on both sides: every event of the
 * selection lies in exactly one bucket. Count only (unique users need an aggregate per bucket), at
 * most MAX_TERMS_BUCKETS buckets per level (so the ranked query would cut none: the same rows).
 * A property filter with a daily histogram is such a read: the engine then groups by one UInt16
 * instead of planning and running the ROLLUP, its NULL bucket test and the ranking windows.
 */
function denseEventLevels(selection: EventSelection, rules: readonly EventGroupByRule[], plans: readonly (HistogramPlan | undefined)[], metrics: readonly EventMetric[], bag: ParamBag): DenseLevel[] | undefined {
  if (metrics.some((m) => m !== 'count')) return undefined;
  const levels: DenseLevel[] = [];
  for (const [i, rule] of rules.entries()) {
    // The selection is bounded by its range on timestamp (source.ts), as seriesLevel needs.
    const level = rule.field === 'timestamp' ? seriesLevel('timestamp', plans[i], selection.range, bag) : undefined;
    if (!level) return undefined;
    levels.push(level);
  }
  return denseFits(levels) ? levels : undefined;
}

/** The grouped query as dense buckets and how its rows become compileEventAggregation's; undefined when the levels are not dense or the hours answer. */
export function compileDenseEventAggregation(selection: EventSelection, rules: readonly EventGroupByRule[], plans: readonly (HistogramPlan | undefined)[], metrics: readonly EventMetric[], options: EventAggregationOptions = {}): { query: CompiledQuery; rows(rows: readonly { k: number | string; doc_count: number | string }[]): BucketRow[] } | undefined {
  if (options.dense === false) return undefined;
  if (options.hours !== false && (hoursAnswer(selection, rules, metrics) || userHoursAnswer(selection, rules, metrics))) return undefined;
  const bag = new ParamBag();
  const levels = denseEventLevels(selection, rules, plans, metrics, bag);
  if (!levels) return undefined;
  const query = compiled(compileDenseBuckets(new EventSource(selection, bag).from(), levels), bag);
  return { query, rows: (rows) => denseBucketRows(levels, rows) };
}

/** The grouped query's rows: dense buckets when they serve, else compileEventAggregation's. */
async function eventBucketRows(run: RunQuery, selection: EventSelection, rules: readonly EventGroupByRule[], plans: readonly (HistogramPlan | undefined)[], metrics: readonly EventMetric[], options: EventAggregationOptions = {}): Promise<BucketRow[]> {
  const dense = compileDenseEventAggregation(selection, rules, plans, metrics, options);
  if (dense) return dense.rows(await run<{ k: number | string; doc_count: number | string }>(dense.query));
  // A count from the hours: the groups from the engine, the parents and the ranking here, when
  // nothing would be cut (hours-buckets.ts); otherwise, or past the answer's bound (which the
  // ranked query refuses with its own error), the ranked query.
  const leaves = compileHoursLeaves(selection, rules, plans, metrics, options);
  if (leaves) {
    const read = await run<LeafRow>(leaves.query);
    const rows = leafBucketRows(read, leaves.rolledUp, MAX_TERMS_BUCKETS, HOURS_LEAF_LIMIT, leaves.resampled);
    if (rows && rows.length <= MAX_RESPONSE_BUCKETS + 1) return rows;
  }
  return run<BucketRow>(compileEventAggregation(selection, rules, plans, metrics, options));
}

export interface EventAggregationResult {
  took: number;
  hits: { total: { value: number } };
  unique_users?: number;
  aggregations: Record<string, unknown>;
}

function shapeLevels(rules: readonly EventGroupByRule[], plans: readonly (HistogramPlan | undefined)[]): ShapeLevel[] {
  return rules.map((rule, i): ShapeLevel => {
    switch (rule.field) {
      case 'timestamp':
        return { kind: 'date', head: { field: 'timestamp' }, plan: plans[i]! };
      case 'type':
        return { kind: 'terms', head: { field: 'type' } };
      case 'property':
      case 'user_property':
        return { kind: 'terms', head: { field: rule.field, property_key: rule.propertyKey } };
      case 'group':
        return { kind: 'terms', head: { field: 'group', group_type: rule.groupType } };
      default:
        return { kind: 'terms', head: { field: rule.field } };
    }
  });
}

/** The series of the timestamp levels: the bounds read first when the range lacks a side. */
async function planEventAggregation(fresh: RunQuery, selection: EventSelection, rules: readonly EventGroupByRule[]): Promise<(HistogramPlan | undefined)[]> {
  const needBounds = rules.some((r) => r.field === 'timestamp') && (selection.range?.start === undefined || selection.range?.end === undefined);
  const bounds = needBounds ? (await fresh<{ min: string | null; max: string | null }>(compileEventBounds(selection)))[0] : undefined;
  const plans = planEventLevels(rules, selection.range, bounds);
  checkDenseBuckets(plans);
  return plans;
}

/** The bounds when a histogram needs them, the plans, then the grouped query. */
export async function runEventAggregation(run: RunQuery, selection: EventSelection, rules: readonly EventGroupByRule[], metrics: readonly EventMetric[], fresh = run, options: EventAggregationOptions = {}): Promise<{ plans: (HistogramPlan | undefined)[]; rows: BucketRow[] }> {
  const plans = await planEventAggregation(fresh, selection, rules);
  return { plans, rows: await eventBucketRows(run, selection, rules, plans, metrics, options) };
}

/** The answer and its watermark (as searchEvents'). */
export async function aggregateEvents(client: ClickHouseClient, selection: EventSelection, rules: readonly EventGroupByRule[], metrics: readonly EventMetric[]): Promise<{ result: EventAggregationResult; watermark: number }> {
  const started = performance.now();
  const { value: { plans, rows, releases }, at } = await cachedRequest(client, 'event aggregation', [selection, rules, metrics], EVENT_AGGREGATION_SETTINGS, async ({ run, fresh }) => {
    const plans = await planEventAggregation(fresh, selection, rules);
    // The releases on the timestamp histograms (src/releases/marks.ts), in the same cached answer,
    // asked beside the grouped query (both need only the plans).
    const [rows, releases] = await Promise.all([eventBucketRows(run, selection, rules, plans, metrics), releasesForSeries(fresh, selection.orgId, plans)]);
    return { plans, rows, releases };
  });
  return { result: eventAggregationAnswer(rules, plans, rows, releases, metrics, started), watermark: at };
}

/** The answer from the grouped query's rows and the releases: the buckets shaped per level, the releases marked on the date levels. */
export function eventAggregationAnswer(rules: readonly EventGroupByRule[], plans: readonly (HistogramPlan | undefined)[], rows: readonly BucketRow[], releases: readonly Release[], metrics: readonly EventMetric[], started: number): EventAggregationResult {
  const extra = metrics.includes('unique_users') ? ['unique_users'] : [];
  const shaped = shapeBuckets(shapeLevels(rules, plans), rows, extra, MAX_RESPONSE_BUCKETS, tooManyBuckets);
  const { top } = shaped;
  const aggregations = markReleases(shaped.aggregations, plans, releases);
  return {
    took: Math.round(performance.now() - started),
    hits: { total: { value: top.doc_count } },
    ...(extra.length ? { unique_users: top.unique_users } : {}),
    aggregations,
  };
}
