/**
 * The engine side of the dense histograms of histogram.ts: the bucket index of a timestamp column
 * in a planned series, computed in SQL with the same arithmetic as `bucketIndex`.
 */
import { DT64, type ParamBag } from '../clickhouse/sql.ts';
import { MICROS_PER_DAY, MICROS_PER_HOUR, formatDbMicros, type HistogramPlan } from './histogram.ts';

/**
 * The 0-based bucket of the column in the plan's series, NULL outside it (or when the column is
 * NULL). Same arithmetic as `bucketIndex` in histogram.ts: fixed steps for hour/day; for months the
 * whole-month distance, one step back when the clamped bucket start (addMonths clamps the day
 * like histogram.ts does) is later than the value. `column` is a column name or expression from
 * code; `alias` names a sub-expression (unique per query level, made of code only).
 */
export function bucketIndexSql(column: string, plan: HistogramPlan, bag: ParamBag, alias: string): string {
  // An empty series (no record in selection gave it a bound) puts every row in no bucket. Not the
  // general form: its range cannot hold (boundary = start), a cluster's initiator folds it to a
  // constant before sending the query to the shards, and a constant ROLLUP key is dropped from
  // GROUP BY while grouping() still names it, which the engine refuses. materialize() is never
  // folded.
  if (plan.starts.length === 0) return 'materialize(CAST(NULL AS Nullable(Int64)))';
  const start = bag.add(formatDbMicros(plan.start), DT64);
  const boundary = bag.add(formatDbMicros(plan.boundary), DT64);
  const inSeries = `${column} >= ${start} AND ${column} < ${boundary}`;
  if (plan.unit === 'month') {
    const k = bag.add(plan.k, 'UInt32');
    const steps = `intDiv(toRelativeMonthNum(${column}) - toRelativeMonthNum(${start}), ${k}) AS ${alias}_steps`;
    return `if(${inSeries}, (${steps}) - (${column} < addMonths(${start}, ${alias}_steps * ${k})), NULL)`;
  }
  const step = bag.add((BigInt(plan.k) * (plan.unit === 'hour' ? MICROS_PER_HOUR : MICROS_PER_DAY)).toString(), 'Int64');
  return `if(${inSeries}, intDiv(toUnixTimestamp64Micro(${column}) - toUnixTimestamp64Micro(${start}), ${step}), NULL)`;
}

/**
 * The same bucket index for a column whose every value is known to lie in the series (the caller
 * proves it: the source is bounded by a range the series covers), for hour and day steps: without
 * bucketIndexSql's series test, so the key is an Int64, never NULL (a Nullable key costs the
 * engine's grouping a null map per row). undefined for month steps and an empty series.
 */
export function bucketIndexInSeriesSql(column: string, plan: HistogramPlan, bag: ParamBag): string | undefined {
  if (plan.starts.length === 0 || plan.unit === 'month') return undefined;
  const start = bag.add(formatDbMicros(plan.start), DT64);
  const step = bag.add((BigInt(plan.k) * (plan.unit === 'hour' ? MICROS_PER_HOUR : MICROS_PER_DAY)).toString(), 'Int64');
  return `intDiv(toUnixTimestamp64Micro(${column}) - toUnixTimestamp64Micro(${start}), ${step})`;
}
