/**
 * The periods of one aggregation (the main range and its `compare` ranges): every period's query
 * side by side, each served by the rollups where it can be (aggregation-sql.ts compileAggregation),
 * the raw table otherwise, each carrying its own check of the pending marks (runWithPending).
 *
 * Why side by side and not one query: on this engine a rollup-served query's time is nearly all
 * analysis and planning, which is single-threaded and grows with every period's sub-selects; two
 * queries plan on two cores at once (bench/query/README.md, "Survey metrics").
 */
import type { RunQuery } from '../clickhouse/sql.ts';
import type { HistogramPlan } from '../query/histogram.ts';
import { checkDenseBuckets } from '../query/ranked-buckets.ts';
import { groupedRows, type AggregationOptions } from './aggregation.ts';
import type { AggregationRow } from './aggregation-sql.ts';
import type { ResponseSelection } from './compile.ts';
import type { GroupByRule } from './group-by.ts';

export interface Period {
  readonly selection: ResponseSelection;
  /** The series of each date level over this period's range (undefined for the other levels). */
  readonly plans: readonly (HistogramPlan | undefined)[];
}

/** The rows of every period, in order, as compileAggregation returns them. */
export async function runPeriods(run: RunQuery, periods: readonly Period[], rules: readonly GroupByRule[], options: AggregationOptions = {}): Promise<AggregationRow[][]> {
  for (const p of periods) checkDenseBuckets(p.plans);
  return Promise.all(periods.map((p) => groupedRows(run, p.selection, rules, p.plans, options)));
}
