/**
 * SEARCH /1.0/survey/<survey_ids>/response/aggregation as a request: the aggregation of the main
 * range (aggregation.ts), the same aggregation over each `compare` range with the main series'
 * interval and bucket count (src/metrics/compare.ts), the releases on every date level
 * (src/releases/marks.ts), and the shaping that aligns the trees and adds each metric's change.
 *
 * The periods are read side by side, each query checking the pending marks beside it
 * (aggregation-periods.ts), and the whole request is cached as one entry (src/query/request-cache.ts), so an answer always comes from
 * one run.
 */
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import type { RunQuery } from '../clickhouse/sql.ts';
import { RANKED_BUCKETS_SETTINGS } from '../query/ranked-buckets.ts';
import { NO_JIT_SETTINGS } from '../query/settings.ts';
import { cachedRequest } from '../query/request-cache.ts';
import { isClusterClient } from '../clickhouse/database.ts';
import { invalid } from '../errors.ts';
import { planComparisons, type CompareSpec, type MicrosRange } from '../metrics/compare.ts';
import { formatDbMicros, formatMicros, parseInstantMicros, type HistogramPlan } from '../query/histogram.ts';
import { markReleases, releasesForSeries } from '../releases/marks.ts';
import type { Release } from '../releases/schema.ts';
import {
  countsByPath, planLevels, runAggregation, shapeAggregation, type AggregationResult, type AggregationRow,
} from './aggregation.ts';
import { runPeriods } from './aggregation-periods.ts';
import type { ResponseSelection } from './compile.ts';
import type { GroupByRule } from './group-by.ts';
import type { MetricName } from './metrics.ts';
import type { ReadOptions } from './rollups/read.ts';

export interface AggregationRequest {
  rules: readonly GroupByRule[];
  metrics?: readonly MetricName[];
  compare?: CompareSpec;
}

interface PeriodRows {
  range?: MicrosRange;
  plans: (HistogramPlan | undefined)[];
  rows: AggregationRow[];
}

interface RequestRows {
  main: PeriodRows;
  comparisons: PeriodRows[];
  releases: Release[];
}

/** The main range in µs: compare needs both ends (a comparison is defined relative to them). */
function mainRange(selection: ResponseSelection): MicrosRange {
  const start = selection.range?.start !== undefined ? parseInstantMicros(selection.range.start) : null;
  const end = selection.range?.end !== undefined ? parseInstantMicros(selection.range.end) : null;
  if (start === null || end === null) {
    throw invalid('compare needs a range with start and end', [{ path: 'range', message: 'give range.start and range.end: the comparisons are placed relative to them' }]);
  }
  return { start, end };
}

/** The rows of every period, and the releases in the union of their date levels' ranges. */
export async function runAggregationRequest(run: RunQuery, selection: ResponseSelection, request: AggregationRequest, options: ReadOptions = {}): Promise<RequestRows> {
  const { rules, metrics = [] } = request;
  const fresh = options.fresh ?? run;
  // With both range ends the series come from the range alone (no data bounds to read): the
  // releases are then read beside the periods, not after them.
  const ranged = selection.range?.start !== undefined && selection.range?.end !== undefined;
  let periods: Promise<PeriodRows>[];
  let releases: Promise<Release[]> | undefined;
  if (!request.compare) {
    const plans = ranged ? planLevels(rules, selection.range, {}) : undefined;
    periods = [runAggregation(run, selection, rules, { ...options, metrics, plans })];
    if (plans) releases = releasesForSeries(fresh, selection.orgId, plans);
  } else {
    const range = mainRange(selection);
    const plans = planLevels(rules, selection.range, {});
    const comparisons = planComparisons(request.compare, range, plans);
    const shifted = comparisons.map((c): ResponseSelection => ({ ...selection, range: { start: formatDbMicros(c.range.start), end: formatDbMicros(c.range.end) } }));
    // Every period's query side by side (aggregation-periods.ts).
    const rows = runPeriods(run, [{ selection, plans }, ...comparisons.map((c, i) => ({ selection: shifted[i], plans: c.plans }))], rules, { ...options, metrics });
    periods = [
      rows.then(([main]) => ({ plans, rows: main, range })),
      ...comparisons.map((c, i) => rows.then((all) => ({ plans: [...c.plans], rows: all[i + 1], range: c.range }))),
    ];
    // Releases of every date level of every period, in one read.
    releases = releasesForSeries(fresh, selection.orgId, [...plans, ...comparisons.flatMap((c) => c.plans)], 1 + comparisons.length);
  }
  const [main, ...comparisons] = await Promise.all(periods);
  // A series bounded by the data: its plans are known once its bounds were read.
  const found = await (releases ?? releasesForSeries(fresh, selection.orgId, main.plans));
  return { main, comparisons, releases: found };
}

/** The rows -> the answer: the main tree, then each comparison's with the change of every metric. */
export function shapeAggregationRequest(request: AggregationRequest, rows: RequestRows, took: number): AggregationResult {
  const { rules, metrics = [] } = request;
  const main = shapeAggregation(rules, rows.main.plans, rows.main.rows, took, { metrics });
  main.aggregations = markReleases(main.aggregations, rows.main.plans, rows.releases);
  if (!request.compare) return main;
  const mainCounts = metrics.length ? countsByPath(rules, rows.main.rows) : undefined;
  main.comparisons = rows.comparisons.map((c) => {
    const shaped = shapeAggregation(rules, c.plans, c.rows, took, { metrics, main: mainCounts });
    return {
      range: { start: formatMicros(c.range!.start), end: formatMicros(c.range!.end) },
      hits: shaped.hits,
      ...(shaped.metrics ? { metrics: shaped.metrics } : {}),
      aggregations: markReleases(shaped.aggregations, c.plans, rows.releases),
    };
  });
  return main;
}

/** The ranked buckets' settings (the result bound) without the engine's JIT compilation (src/query/settings.ts). */
const AGGREGATION_SETTINGS: ClickHouseSettings = Object.freeze({ ...RANKED_BUCKETS_SETTINGS, ...NO_JIT_SETTINGS });

/** SEARCH /1.0/survey/<survey_ids>/response/aggregation, for a parsed selection and request. */
export async function aggregate(client: ClickHouseClient, selection: ResponseSelection, request: AggregationRequest, options: ReadOptions = {}): Promise<{ result: AggregationResult; watermark: number }> {
  const started = performance.now();
  // Cached as a whole request (src/query/request-cache.ts): the bounds, pending marks and releases
  // it read are those its rows were computed with. They are read without any cache; the grouped
  // queries may use the engine's 3 s query cache (their SQL carries both).
  const { value: rows, at } = await cachedRequest(client, 'aggregation', [selection, request, options], AGGREGATION_SETTINGS, ({ run, fresh }) =>
    runAggregationRequest(run, selection, request, { ...options, fresh, marksFirst: isClusterClient(client) }));
  return { result: shapeAggregationRequest(request, rows, Math.round(performance.now() - started)), watermark: at };
}
