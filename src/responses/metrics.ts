/**
 * Survey metrics of a set of responses (an aggregation bucket, the whole selection, one side of a
 * release): NPS, CSAT, CES and completion, computed exactly as the summary computes them
 * (summary.ts: whole-number scores on each scale, every answer once, the same 2-decimal rounding),
 * each score with its `n` and 95% interval (src/metrics/statistics.ts), and against a second set
 * of responses the change of each figure and whether it is significant at 95%.
 *
 * The engine returns, per set, the score counts of each scale and the completion counts
 * (`MetricRow`): every figure, interval and test derives from those integers here, so the raw
 * table and the rollups (which hold the same counts per group of responses) give the same answer.
 */
import * as v from 'valibot';
import {
  meanDifference, meanInterval, momentsOf, npsDifference, npsInterval, proportionDifference, round, roundedRatio, roundInterval, wilsonInterval, type Difference,
} from '../metrics/statistics.ts';
import type { ParamBag } from '../clickhouse/sql.ts';
import type { ResponseSelection } from './compile.ts';
import { COMPLETION_VALUES, type Completion } from './filters.ts';
import { isMultiValued, type GroupByRule } from './group-by.ts';
import { rollupGroupsSql, totalsRowsSql, totalsServable, type GroupColumn } from './rollups/groups.ts';
import type { RollupCover } from './rollups/read.ts';
import { SCALES, roundRatio, type SummaryRow } from './summary.ts';

export const METRIC_NAMES = ['nps', 'csat', 'ces', 'completion'] as const;
export type MetricName = (typeof METRIC_NAMES)[number];

/** `metrics` of a request: 1..4 distinct names; an unknown one is a 400 naming it. */
export const metricsSchema = v.pipe(
  v.array(
    v.picklist(METRIC_NAMES, (issue) => `unknown metric ${issue.received}; metrics are ${METRIC_NAMES.join(', ')}`),
    'metrics must be an array of metric names',
  ),
  v.minLength(1, `metrics needs at least one of ${METRIC_NAMES.join(', ')}`),
  v.maxLength(METRIC_NAMES.length, `metrics holds at most ${METRIC_NAMES.length} names`),
  v.transform((names) => METRIC_NAMES.filter((m) => names.includes(m))),
);

/** Score -> count per scale, and responses per completion value, of one set of responses. */
export interface MetricCounts {
  readonly nps: ReadonlyMap<number, number>;
  readonly csat: ReadonlyMap<number, number>;
  readonly ces: ReadonlyMap<number, number>;
  readonly completion: Readonly<Record<Completion, number>>;
}

export const NO_COUNTS: MetricCounts = Object.freeze({
  nps: new Map(), csat: new Map(), ces: new Map(),
  completion: Object.freeze({ not_started: 0, partially_completed: 0, fully_completed: 0 }),
});

/**
 * The engine's columns for one set: `sumMap` results, printed by JSONEachRow as
 * [[keys], [counts]] (counts as text: 64-bit integers are quoted).
 */
type SumMapColumn = [unknown[], unknown[]] | Record<string, unknown[]> | null | undefined;
/** A row with the m_<metric> columns (metricAggregates). */
export type MetricRow = Readonly<Record<string, unknown>>;

function pairs(value: unknown): [string, number][] {
  const column = value as SumMapColumn;
  if (!column) return [];
  const [keys, counts] = (Array.isArray(column) ? column : Object.values(column)) as [unknown[], unknown[]];
  return keys.map((k, i) => [String(k), Number(counts[i])]);
}

/** A row's columns -> counts (whole-number scores only: the columns hold nothing else). */
export function countsOf(row: MetricRow | undefined): MetricCounts {
  if (!row) return NO_COUNTS;
  const scores = (column: unknown) => new Map(pairs(column).filter(([, n]) => n > 0).map(([k, n]) => [Number(k), n]));
  const completion = { not_started: 0, partially_completed: 0, fully_completed: 0 };
  for (const [k, n] of pairs(row.m_completion)) if ((COMPLETION_VALUES as readonly string[]).includes(k)) completion[k as Completion] += n;
  return { nps: scores(row.m_nps), csat: scores(row.m_csat), ces: scores(row.m_ces), completion };
}

// --- the SQL ---------------------------------------------------------------------------------------

/** Per metric, the (keys, counts) arrays one row of a source contributes to its sumMap. */
export type MetricRowSql = Readonly<Record<MetricName, readonly [keys: string, counts: string]>>;

/** A survey_responses row: its whole-number scores (schema/004), its completion, each counting 1. */
export const RAW_METRIC_ROW: MetricRowSql = {
  nps: ['nps_scores', 'arrayMap(x -> toUInt64(1), nps_scores)'],
  csat: ['csat_scores', 'arrayMap(x -> toUInt64(1), csat_scores)'],
  ces: ['ces_scores', 'arrayMap(x -> toUInt64(1), ces_scores)'],
  completion: ['[toString(completion)]', '[toUInt64(1)]'],
};

/** A row of rollupMetricGroupsSql: the score counts and completion counts of its responses. */
export const GROUP_METRIC_ROW: MetricRowSql = {
  nps: ['mapKeys(x_nps)', 'mapValues(x_nps)'],
  csat: ['mapKeys(x_csat)', 'mapValues(x_csat)'],
  ces: ['mapKeys(x_ces)', 'mapValues(x_ces)'],
  completion: ['mapKeys(x_completion)', 'mapValues(x_completion)'],
};

/** A row of a union of sources, each of which selected metricRowColumns. */
export const WEIGHTED_METRIC_ROW: MetricRowSql = {
  nps: ['mk_nps', 'mv_nps'], csat: ['mk_csat', 'mv_csat'], ces: ['mk_ces', 'mv_ces'], completion: ['mk_completion', 'mv_completion'],
};

/** `, keys AS mk_<m>, counts AS mv_<m>` for each metric: a source's share of a union (WEIGHTED_METRIC_ROW). */
export function metricRowColumns(names: readonly MetricName[], row: MetricRowSql): string {
  return names.map((m) => `, ${row[m][0]} AS mk_${m}, ${row[m][1]} AS mv_${m}`).join('');
}

/**
 * The aggregate column m_<metric> of each metric, for a grouped query WITH ROLLUP whose `depth`
 * column says the level of a row: per depth, the rows that count in a bucket of that depth
 * (`conditions[d]`, '' for every row: the first value of the deeper multi-valued levels, as the
 * doc_count counts them) add their counts.
 */
export function metricAggregates(names: readonly MetricName[], row: MetricRowSql, conditions: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of names) {
    const [keys, counts] = row[m];
    const sum = (cond: string) => (cond ? `sumMapIf(${keys}, ${counts}, ${cond})` : `sumMap(${keys}, ${counts})`);
    const distinct = [...new Set(conditions)];
    out[`m_${m}`] = distinct.length <= 1
      ? sum(distinct[0] ?? '')
      : `multiIf(${conditions.slice(0, -1).map((c, d) => `depth = ${d}, ${sum(c)}`).join(', ')}, ${sum(conditions[conditions.length - 1])})`;
  }
  return out;
}

/** Whether rollupMetricGroupsSql answers from the slice totals: no group column asked, and a selection they serve. */
export const metricGroupsFromTotals = (selection: ResponseSelection, columns: readonly GroupColumn[]): boolean => columns.length === 0 && totalsServable(selection);

/**
 * The rollup groups with their metric counts (GROUP_METRIC_ROW) and the group columns the levels
 * need. When the slice totals serve (metricGroupsFromTotals: schema/050 without a filter, the
 * answer totals of schema/111 with one answer `eq`), one row per slice, its score and completion
 * maps as they are stored.
 */
export function rollupMetricGroupsSql(selection: ResponseSelection, w: RollupCover, bag: ParamBag, columns: readonly GroupColumn[], names: readonly MetricName[]): string {
  if (metricGroupsFromTotals(selection, columns)) {
    return (
      'SELECT survey_id, start AS created_at, t_rows AS x_rows, t_nps AS x_nps, t_csat AS x_csat, t_ces AS x_ces, ' +
      `CAST(t_completion, 'Map(String, UInt64)') AS x_completion ${totalsRowsSql(selection, w, bag)!}`
    );
  }
  const scores = names.filter((m): m is 'nps' | 'csat' | 'ces' => m !== 'completion').map((m) => `x_${m}` as GroupColumn);
  const completion = names.includes('completion') ? ['completion' as const] : [];
  const groups = rollupGroupsSql(selection, w, bag, [...new Set<GroupColumn>([...columns, ...scores, ...completion])]);
  return `SELECT *${completion.length ? ', map(toString(completion), x_rows) AS x_completion' : ''} FROM (${groups})`;
}

/** Rollup-served metrics need every row to count in full in each bucket: no multi-valued level. */
export function metricsServable(rules: readonly GroupByRule[], names: readonly MetricName[]): boolean {
  return names.length === 0 || !rules.some(isMultiValued);
}

// --- the JSON ---------------------------------------------------------------------------------------

type Ci = [number, number] | null;
interface Change { delta: number | null; delta_ci95: Ci; significant: boolean }
export interface NpsMetric { score: number | null; detractor: number; neutral: number; promotor: number; total: number; ci95: Ci }
export interface MeanMetric { avg: number | null; n: number; ci95: Ci }
export interface CompletionMetric { not_started: number; partially_completed: number; fully_completed: number; rate: number | null; ci95: Ci }
export interface Metrics {
  nps?: NpsMetric | (NpsMetric & Change);
  csat?: MeanMetric | (MeanMetric & Change);
  ces?: MeanMetric | (MeanMetric & Change);
  completion?: CompletionMetric | (CompletionMetric & Change);
}

/** Decimals of the figures: scores and averages as the summary (2), rates as shares (4). */
const SCORE_DECIMALS = 2;
const RATE_DECIMALS = 4;

function npsGroups(counts: ReadonlyMap<number, number>) {
  let detractor = 0;
  let neutral = 0;
  let promotor = 0;
  for (const [score, n] of counts) {
    if (score <= 6) detractor += n;
    else if (score <= 8) neutral += n;
    else promotor += n;
  }
  return { detractor, neutral, promotor, total: detractor + neutral + promotor };
}

function nps(counts: MetricCounts): NpsMetric {
  const g = npsGroups(counts.nps);
  return {
    score: g.total === 0 ? null : roundRatio((g.promotor - g.detractor) * 100, g.total),
    ...g,
    ci95: roundInterval(npsInterval({ promotors: g.promotor, detractors: g.detractor, total: g.total }), SCORE_DECIMALS),
  };
}

function mean(scale: 'csat' | 'ces', counts: MetricCounts): MeanMetric {
  const m = momentsOf(counts[scale]);
  return {
    avg: m.n === 0 ? null : roundRatio(m.sum, m.n),
    n: m.n,
    ci95: roundInterval(meanInterval(m, SCALES[scale].min, SCALES[scale].max), SCORE_DECIMALS),
  };
}

const respondents = (c: MetricCounts) => c.completion.not_started + c.completion.partially_completed + c.completion.fully_completed;

function completion(counts: MetricCounts): CompletionMetric {
  const all = respondents(counts);
  const full = counts.completion.fully_completed;
  return { ...counts.completion, rate: all === 0 ? null : roundedRatio(full, all, RATE_DECIMALS), ci95: roundInterval(wilsonInterval(full, all), RATE_DECIMALS) };
}

/**
 * `delta` is the difference of the two figures as shown (main minus other, rounded like them), so
 * it reads as the subtraction a user would do; `delta_ci95` and `significant` come from the exact
 * counts (`diff`). A side with nothing to compute from gives a null delta, not significant.
 */
function changeOf(main: number | null, other: number | null, diff: Difference | null, decimals: number): Change {
  return {
    delta: main === null || other === null ? null : round(main - other, decimals),
    delta_ci95: diff ? roundInterval(diff.ci95, decimals) : null,
    significant: diff?.significant ?? false,
  };
}

/** A change between two sets of responses: the figures of `to` minus those of `from`. */
export interface MetricChange {
  readonly from: MetricCounts;
  readonly to: MetricCounts;
}

/**
 * The metrics asked for, of `counts`; with `change`, each also carries the change from
 * `change.from` to `change.to` (a comparison: from itself to the main range; a release: from
 * before to after it).
 */
export function shapeMetrics(names: readonly MetricName[], counts: MetricCounts, change?: MetricChange): Metrics {
  const out: Metrics = {};
  for (const name of names) {
    switch (name) {
      case 'nps': {
        const m = nps(counts);
        if (!change) out.nps = m;
        else {
          const [a, b] = [nps(change.to), nps(change.from)];
          const diff = npsDifference({ promotors: a.promotor, detractors: a.detractor, total: a.total }, { promotors: b.promotor, detractors: b.detractor, total: b.total });
          out.nps = { ...m, ...changeOf(a.score, b.score, diff, SCORE_DECIMALS) };
        }
        break;
      }
      case 'csat':
      case 'ces': {
        const m = mean(name, counts);
        out[name] = change
          ? { ...m, ...changeOf(mean(name, change.to).avg, mean(name, change.from).avg, meanDifference(momentsOf(change.to[name]), momentsOf(change.from[name])), SCORE_DECIMALS) }
          : m;
        break;
      }
      case 'completion': {
        const m = completion(counts);
        if (!change) out.completion = m;
        else {
          const diff = proportionDifference(
            { successes: change.to.completion.fully_completed, n: respondents(change.to) },
            { successes: change.from.completion.fully_completed, n: respondents(change.from) },
          );
          out.completion = { ...m, ...changeOf(completion(change.to).rate, completion(change.from).rate, diff, RATE_DECIMALS) };
        }
        break;
      }
    }
  }
  return out;
}

/** The counts of a summary row (summary.ts): its score maps and completion counts. */
export function countsOfSummary(row: SummaryRow | undefined): MetricCounts {
  if (!row) return NO_COUNTS;
  const scores = (m: Record<string, number | string>) => new Map(Object.entries(m).map(([k, n]) => [Number(k), Number(n)] as const).filter(([, n]) => n > 0));
  const completion = { not_started: 0, partially_completed: 0, fully_completed: 0 };
  for (const c of COMPLETION_VALUES) completion[c] = Number(row.completion_counts?.[c] ?? 0);
  return { nps: scores(row.nps_counts ?? {}), csat: scores(row.csat_counts ?? {}), ces: scores(row.ces_counts ?? {}), completion };
}

// --- the answer schema (OpenAPI, and the tests' check of live answers) -------------------------------

const count = v.pipe(v.number(), v.integer(), v.minValue(0));
const ci = v.nullable(v.tuple([v.number(), v.number()]));
const changeEntries = { delta: v.optional(v.nullable(v.number())), delta_ci95: v.optional(ci), significant: v.optional(v.boolean()) };
export const metricsResultSchema = v.object({
  nps: v.optional(v.object({ score: v.nullable(v.number()), detractor: count, neutral: count, promotor: count, total: count, ci95: ci, ...changeEntries })),
  csat: v.optional(v.object({ avg: v.nullable(v.number()), n: count, ci95: ci, ...changeEntries })),
  ces: v.optional(v.object({ avg: v.nullable(v.number()), n: count, ci95: ci, ...changeEntries })),
  completion: v.optional(v.object({
    not_started: count, partially_completed: count, fully_completed: count, rate: v.nullable(v.number()), ci95: ci, ...changeEntries,
  })),
});
