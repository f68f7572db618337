/**
 * Dense buckets: the grouped query of an aggregation whose every level has few keys known before
 * the query runs (a date level's series, an enum) and puts every record of the source in exactly
 * one bucket. Such a tree is a dense array of counts, so the engine groups by ONE small number (the
 * buckets' indexes packed in mixed radix, a UInt16) instead of compileRankedBuckets' ROLLUP of the
 * level keys, and the parent counts are sums of their children, added here. A UInt16 key lets the
 * engine count into a flat array (its FixedHashMap) instead of hashing a tuple of keys: at 5M
 * responses the query took ~0.8x the time of a plain `GROUP BY day, completion WITH ROLLUP` over
 * the same rows, ~0.7x the ROLLUP of Nullable bucket keys it replaces (bench/query/README.md,
 * "2026-11-27: Q4, the last 100 days by day then completion, read raw").
 *
 * The rows it gives are compileRankedBuckets' rows for the same levels, column for column (the
 * rolled-up keys included): depth 0 (the total) and every bucket whose count is not 0, no ranking
 * (every level is bounded: nothing is cut), `other_doc_count` 0.
 */
import type { ParamBag } from '../clickhouse/sql.ts';
import { parseInstantMicros, type HistogramPlan } from './histogram.ts';
import { bucketIndexInSeriesSql } from './histogram-sql.ts';
import { MAX_TERMS_BUCKETS } from './ranked-buckets.ts';
import type { BucketRow } from './shape.ts';

/** Packed keys fit a UInt16. */
export const MAX_DENSE_BUCKETS = 65_536;

export interface DenseLevel {
  /**
   * The level's bucket index as SQL (from code; values as placeholders): an integer in [0, size)
   * for EVERY record of the source, never NULL (the caller proves it, e.g. the series covers the
   * range the source is bounded by).
   */
  readonly index: string;
  /** Number of buckets of the level. */
  readonly size: number;
  /** The key compileRankedBuckets' rows carry for bucket i (a date level's: i; an enum's: its name). */
  key(i: number): string | number;
  /**
   * The key compileRankedBuckets' rows carry for this level in a row of a shallower depth (the
   * ROLLUP's default of the key's type: NULL for a Nullable bucket index, an Enum8's first value).
   */
  readonly rolledUp: string | number | null;
}

/** Whether the levels' buckets, multiplied, fit the packed key. */
export function denseFits(levels: readonly DenseLevel[]): boolean {
  return levels.length > 0 && levels.every((l) => Number.isInteger(l.size) && l.size > 0) && levels.reduce((n, l) => n * l.size, 1) <= MAX_DENSE_BUCKETS;
}

/**
 * A date histogram as a dense level: `column`'s bucket index in the plan's series, for a source
 * bounded on `column` by `range` (start and end inclusive). Every record of such a source lies in
 * exactly one bucket when the range gives both sides and the series covers them (plan.start <=
 * start, end < plan.boundary): then the index needs no series test and is never NULL
 * (bucketIndexInSeriesSql; hour and day steps only). At most MAX_TERMS_BUCKETS buckets, so the
 * ranked query this replaces would cut none (the same rows). undefined when any of this fails: the
 * caller reads the ranked way. Each feature maps its own rules to levels; this is the date part.
 */
export function seriesLevel(column: string, plan: HistogramPlan | undefined, range: { start?: string; end?: string } | undefined, bag: ParamBag): DenseLevel | undefined {
  if (!plan || plan.starts.length > MAX_TERMS_BUCKETS || range?.start === undefined || range.end === undefined) return undefined;
  const start = parseInstantMicros(range.start);
  const end = parseInstantMicros(range.end);
  if (start === null || end === null || start < plan.start || end >= plan.boundary) return undefined;
  const index = bucketIndexInSeriesSql(column, plan, bag);
  return index === undefined ? undefined : { index, size: plan.starts.length, key: (i) => i, rolledUp: null };
}

/**
 * `SELECT k, <count> AS doc_count <source> GROUP BY k`: k the packed bucket indexes (first level most
 * significant); `count` counts the rows (a weighted source: the sum of its weights).
 */
export function compileDenseBuckets(source: string, levels: readonly DenseLevel[], count = 'count()'): string {
  if (!denseFits(levels)) throw new Error('dense buckets: the levels do not fit a UInt16 key');
  const terms = levels.map((l, i) => {
    const stride = levels.slice(i + 1).reduce((n, x) => n * x.size, 1);
    return stride === 1 ? `(${l.index})` : `(${l.index}) * ${stride}`;
  });
  return `SELECT toUInt16(${terms.join(' + ')}) AS k, ${count} AS doc_count ${source} GROUP BY k`;
}

/** The packed counts -> compileRankedBuckets' rows (depth, k1..kn, doc_count, other_doc_count), ordered by depth. */
export function denseBucketRows(levels: readonly DenseLevel[], rows: readonly { k: number | string; doc_count: number | string }[]): BucketRow[] {
  const n = levels.length;
  const total = levels.reduce((x, l) => x * l.size, 1);
  // counts[d]: the buckets of depth d, by their packed prefix (the indexes of levels 1..d).
  const counts: Map<number, number>[] = Array.from({ length: n + 1 }, () => new Map());
  for (const row of rows) {
    const k = Number(row.k);
    const c = Number(row.doc_count);
    if (!Number.isInteger(k) || k < 0 || k >= total) throw new Error(`dense buckets: key ${row.k} outside the ${total} buckets`);
    if (c === 0) continue;
    let prefix = k;
    for (let d = n; d >= 0; d--) {
      counts[d].set(prefix, (counts[d].get(prefix) ?? 0) + c);
      if (d > 0) prefix = Math.floor(prefix / levels[d - 1].size);
    }
  }
  const out: BucketRow[] = [];
  counts.forEach((byPrefix, depth) => {
    for (const [prefix, doc_count] of [...byPrefix].sort((a, b) => a[0] - b[0])) {
      const keys: (string | number | null)[] = levels.map((l) => l.rolledUp);
      let rest = prefix;
      for (let i = depth; i >= 1; i--) {
        const size = levels[i - 1].size;
        keys[i - 1] = levels[i - 1].key(rest % size);
        rest = Math.floor(rest / size);
      }
      // Columns in compileRankedBuckets' order: depth, k1..kn, doc_count, other_doc_count.
      const row = { depth } as BucketRow;
      keys.forEach((key, i) => (row[`k${i + 1}`] = key));
      row.doc_count = doc_count;
      row.other_doc_count = 0;
      out.push(row);
    }
  });
  return out;
}
