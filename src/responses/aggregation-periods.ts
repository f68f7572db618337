/**
 * The periods of one aggregation (the main range and its `compare` ranges): one read of the pending
 * marks, then every period's query side by side, each served by the rollups where it can be
 * (aggregation.ts compileAggregation with its own cover of the same pending set), the raw table
 * otherwise.
 *
 * Why side by side and not one query: on this engine a rollup-served query's time is nearly all
 * analysis and planning, which is single-threaded and grows with every period's sub-selects; two
 * queries plan on two cores at once (bench/query/README.md, "Survey metrics"). Why one pending
 * read: it is read before any of the queries, as runWithPending reads it before its one query, so
 * every slice a period serves was unmarked before that period's query read its row.
 */
import type { RunQuery } from '../clickhouse/sql.ts';
import type { HistogramPlan } from '../query/histogram.ts';
import { checkDenseBuckets } from '../query/ranked-buckets.ts';
import { checkedRows, compileAggregation, rollupGrain, type AggregationOptions, type AggregationRow } from './aggregation.ts';
import type { ResponseSelection } from './compile.ts';
import type { GroupByRule } from './group-by.ts';
import { readPending } from './rollups/pending.ts';
import { rollupCover } from './rollups/read.ts';

export interface Period {
  readonly selection: ResponseSelection;
  /** The series of each date level over this period's range (undefined for the other levels). */
  readonly plans: readonly (HistogramPlan | undefined)[];
}

/** The rows of every period, in order, as compileAggregation returns them. */
export async function runPeriods(run: RunQuery, periods: readonly Period[], rules: readonly GroupByRule[], options: AggregationOptions = {}): Promise<AggregationRow[][]> {
  const metrics = options.metrics ?? [];
  for (const p of periods) checkDenseBuckets(p.plans);
  const raw = (p: Period) => run<AggregationRow>(compileAggregation(p.selection, rules, p.plans, undefined, metrics));
  const grains = periods.map((p) => rollupGrain(p.selection, rules, p.plans, metrics, options));
  if (grains.every((g) => g === null)) return Promise.all(periods.map(raw));
  const pending = await readPending(options.fresh ?? run, periods[0].selection.orgId);
  return Promise.all(periods.map(async (p, i) => {
    const cover = grains[i] ? rollupCover(p.selection.range, pending, grains[i]) : null;
    if (!cover) return raw(p);
    // An answer filter's slices found incomplete: that period from the raw table.
    return checkedRows(p.selection, await run<AggregationRow>(compileAggregation(p.selection, rules, p.plans, cover, metrics))) ?? raw(p);
  }));
}
