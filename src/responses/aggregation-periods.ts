/**
 * The periods of one aggregation (the main range and its `compare` ranges) in ONE grouped query,
 * when the rollups serve every one of them: each period's weighted rows (aggregation.ts
 * weightedSource: its slice groups and the raw rows beside them, its own series) tagged with the
 * period's index, grouped with that index as the first ROLLUP key. A comparison then costs the
 * slices of its range inside the same query, not a query of its own beside the main one (its own
 * round trip, fixed cost and FINAL reads competing for the same two cores). The rows are split back
 * into one set per period, as compileAggregation returns them, so shaping is unchanged.
 *
 * The periods read separately (runAggregation each) when one is not rollup-served, when the rows of
 * all periods together could pass the engine's cap on one result (RANKED_BUCKETS_SETTINGS: each
 * period's tree is capped on its own), or when an answer filter's slices turn out incomplete.
 */
import { ParamBag, compiled, type CompiledQuery, type RunQuery } from '../clickhouse/sql.ts';
import type { HistogramPlan } from '../query/histogram.ts';
import { MAX_RESPONSE_BUCKETS, checkDenseBuckets, compileRankedBuckets } from '../query/ranked-buckets.ts';
import { answersCheckSql } from './answer-rollups.ts';
import { boundedLevels, checkedRows, rollupGrain, runAggregation, weightedSource, type AggregationOptions, type AggregationRow } from './aggregation.ts';
import type { ResponseSelection } from './compile.ts';
import { MAX_TERMS_BUCKETS, type GroupByRule } from './group-by.ts';
import { WEIGHTED_METRIC_ROW, metricAggregates, type MetricName } from './metrics.ts';
import { rollupCover, runWithPending, type Pending, type RollupCover } from './rollups/read.ts';

export interface Period {
  readonly selection: ResponseSelection;
  /** The series of each date level over this period's range (undefined for the other levels). */
  readonly plans: readonly (HistogramPlan | undefined)[];
}

/**
 * Depth d + 1 rows of the periods' ROLLUP are the depth d rows of one period (k1 its index, k2..
 * its bucket keys); depth 0 (all periods together) is not used.
 */
export function compilePeriods(periods: readonly (Period & { rollup: RollupCover })[], rules: readonly GroupByRule[], metrics: readonly MetricName[]): CompiledQuery {
  const bag = new ParamBag();
  const checks: string[] = [];
  const sources = periods.map((p, i) => {
    const { source, fromTotals } = weightedSource(p.selection, rules, p.plans, p.rollup, bag, metrics);
    const check = answersCheckSql(p.selection, p.rollup, bag, fromTotals);
    if (check) checks.push(check);
    return `SELECT toUInt8(${i}) AS period, * ${source}`;
  });
  const n = rules.length;
  // Each weighted row counts w_d responses in a bucket of its period's depth d.
  const count = `multiIf(depth = 0, sum(w0), ${Array.from({ length: n }, (_, d) => `depth = ${d + 1}, sum(w${d})`).join(', ')}, sum(w${n}))`;
  const limit = bag.add(MAX_TERMS_BUCKETS, 'UInt32');
  // Rollup-served metrics have no multi-valued level (metricsServable): every row counts in full.
  const ranked = compileRankedBuckets({
    source: `FROM (${sources.join(' UNION ALL ')})`,
    keys: ['period', ...rules.map((_, i) => `u${i + 1}`)],
    count,
    metrics: metricAggregates(metrics, WEIGHTED_METRIC_ROW, []),
    limit,
    // The period level holds at most 1 + MAX_COMPARISONS buckets: never cut, no ranking passes
    // when the rules' levels are never cut either.
    bounded: [true, ...boundedLevels(rules)],
  });
  return compiled(checks.length ? `SELECT *, ${checks.map((c) => `(${c})`).join(' AND ')} AS answers_complete FROM (${ranked})` : ranked, bag);
}

/** The rows of compilePeriods, one set per period, with the depths and keys of compileAggregation's rows. */
export function splitPeriods(rows: readonly AggregationRow[], periods: number, levels: number): AggregationRow[][] {
  const out: AggregationRow[][] = Array.from({ length: periods }, () => []);
  for (const row of rows) {
    const depth = Number(row.depth);
    if (depth === 0) continue;
    const own: AggregationRow = { ...row, depth: depth - 1 };
    for (let i = 1; i <= levels; i++) own[`k${i}`] = row[`k${i + 1}`];
    delete own[`k${levels + 1}`];
    out[Number(row.k1)].push(own);
  }
  return out;
}

/**
 * The most rows one period's ranked query can return: every level at its widest (a date level its
 * series, completion its 3 values, any other terms level MAX_TERMS_BUCKETS per parent), each
 * depth under every bucket of the one above, plus the total.
 */
export function maxPeriodRows(rules: readonly GroupByRule[], plans: readonly (HistogramPlan | undefined)[]): number {
  let rows = 1;
  let width = 1;
  rules.forEach((rule, i) => {
    width *= rule.kind === 'date' ? Math.max(plans[i]?.starts.length ?? 0, 1) : rule.kind === 'completion' ? 3 : MAX_TERMS_BUCKETS;
    rows += width;
  });
  return rows;
}

/** The rows of every period, in order: in one query when the rollups serve them all, else one read each. */
export async function runPeriods(run: RunQuery, periods: readonly Period[], rules: readonly GroupByRule[], options: AggregationOptions = {}): Promise<AggregationRow[][]> {
  const metrics = options.metrics ?? [];
  for (const p of periods) checkDenseBuckets(p.plans);
  const separately = () => Promise.all(periods.map(async (p) => (await runAggregation(run, p.selection, rules, { ...options, plans: p.plans })).rows));
  const grains = periods.map((p) => rollupGrain(p.selection, rules, p.plans, metrics, options));
  const rows = periods.reduce((n, p) => n + maxPeriodRows(rules, p.plans), 1);
  if (periods.length < 2 || grains.some((g) => g === null) || rows > MAX_RESPONSE_BUCKETS + 1) return separately();
  const compile = (pending: Pending) => {
    const windows = periods.map((p, i) => rollupCover(p.selection.range, pending, grains[i]!));
    return windows.every((w) => w !== null) ? compilePeriods(periods.map((p, i) => ({ ...p, rollup: windows[i]! })), rules, metrics) : null;
  };
  const found = await runWithPending<AggregationRow>(run, options.fresh ?? run, periods[0].selection.orgId, compile);
  const complete = found && checkedRows(periods[0].selection, found);
  return complete ? splitPeriods(complete, periods.length, rules.length) : separately();
}
