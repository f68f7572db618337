/**
 * Ranked buckets: the grouped query of every aggregation (survey responses, events). Group by 1..3
 * key expressions `GROUP BY ROLLUP`, so every parent bucket gets its own exact count (a record counts
 * once in a parent bucket even when it sits in several child buckets), then rank the buckets inside
 * each parent and keep the `limit` largest per level; buckets under a dropped parent are not returned.
 * (Not to be confused with the survey rollups, pre-aggregated slices: the engine's ROLLUP modifier
 * only adds the parent totals here.)
 *
 * Rows: depth d (0 = everything in selection), k1..kd the bucket keys down to that level (keys of
 * deeper levels are rolled up), `doc_count`, `other_doc_count` (the summed doc_count of the
 * siblings beyond the limit), and any extra metric columns. A key that is NULL is "no value at this
 * level": the record counts in its parent buckets but in no bucket of this level.
 */
import type { ClickHouseSettings } from '@clickhouse/client';
import { tooExpensive } from '../errors.ts';
import { isFirstOfLevelSql } from './multi-valued.ts';
import { READ_SETTINGS } from './settings.ts';

export const MAX_GROUP_BY_LEVELS = 3;
/** Buckets of a date level's series; never more than MAX_TERMS_BUCKETS (a series is never cut: `bounded`). */
export const MAX_HISTOGRAM_BUCKETS = 100;
/** Term levels return at most this many buckets per parent (largest first); the rest is `other_doc_count`. */
export const MAX_TERMS_BUCKETS = 100;
/** Buckets in one answer, over all levels: Elasticsearch's default search.max_buckets. */
export const MAX_RESPONSE_BUCKETS = 65_536;

/**
 * The settings of a ranked-bucket query: its rows are the buckets of every level plus the total,
 * so a result past MAX_RESPONSE_BUCKETS + 1 rows is refused by the engine (396, a 400
 * query_too_expensive) before it reaches Node. Only the final result counts: the subqueries that
 * rank and cut the terms levels are not limited.
 */
export const RANKED_BUCKETS_SETTINGS: ClickHouseSettings = Object.freeze({
  ...READ_SETTINGS,
  max_result_rows: String(MAX_RESPONSE_BUCKETS + 1),
  result_overflow_mode: 'throw',
});

/** The 400 of an answer past MAX_RESPONSE_BUCKETS (dense series multiply: three 100-bucket histograms are a million). */
export function tooManyBuckets(): Error {
  return tooExpensive(`The aggregation would return more than ${MAX_RESPONSE_BUCKETS} buckets: lower date_histogram_buckets, narrow the range, or use fewer group_by levels`);
}

/** Refuses, before any grouped query runs, series whose dense buckets alone (every date bucket under every date bucket) pass the bound. */
export function checkDenseBuckets(plans: readonly ({ readonly starts: readonly unknown[] } | undefined)[]): void {
  if (plans.reduce((n, p) => n * (p ? Math.max(p.starts.length, 1) : 1), 1) > MAX_RESPONSE_BUCKETS) throw tooManyBuckets();
}

export interface RankedBucketsSpec {
  /** `FROM ... WHERE ...`: the guarded source (its placeholders are in the same ParamBag). */
  source: string;
  /**
   * One key expression per level (from code; values as placeholders). Never one the engine can
   * fold to a constant: it drops constant keys from GROUP BY, and grouping() of one then fails.
   */
  keys: readonly string[];
  /** The doc_count expression (docCountSql). */
  count: string;
  /** Extra metrics: name -> aggregate expression, e.g. { unique_users: 'uniqExact(user_id)' }. */
  metrics?: Readonly<Record<string, string>>;
  /** The placeholder of the per-parent bucket limit. */
  limit: string;
  /**
   * Per level, whether it can never hold more than `limit` buckets under one parent (a date
   * level's series, at most MAX_HISTOGRAM_BUCKETS; an enum). When every level is bounded, no
   * bucket is ever cut: the ranking passes are left out, `other_doc_count` is 0.
   */
  bounded?: readonly boolean[];
}

export function compileRankedBuckets(spec: RankedBucketsSpec): string {
  const { source, keys, count, limit } = spec;
  const metricNames = Object.keys(spec.metrics ?? {});
  const metricColumns = metricNames.map((m) => `, ${spec.metrics![m]} AS ${m}`).join('');
  const metricPass = metricNames.map((m) => `, ${m}`).join('');
  const n = keys.length;
  const ks = keys.map((_, i) => `k${i + 1}`);
  // The engine merges identical ROLLUP keys, which drops the levels between them. A deeper key
  // that may be identical to an earlier one is salted into another expression: the same text
  // (survey_id > answer > survey_id), or a key with parameters, which can become the same
  // expression once they are substituted (two date levels whose series came out the same).
  const salted = (key: string, i: number) => i > 0 && (keys.indexOf(key) < i || key.includes('{'));
  const keyColumns = keys.map((key, i) => `${salted(key, i) ? `tupleElement(tuple(${key}, ${i + 1}), 1)` : key} AS k${i + 1}`);

  // A row's own key and its parent keys; keys of deeper levels are rolled up (defaults) at that depth.
  const ownKey = n === 1 ? 'toString(k1)' : `multiIf(${ks.slice(0, -1).map((k, i) => `depth = ${i + 1}, toString(${k})`).join(', ')}, toString(${ks[n - 1]}))`;
  const parentKeys = ks.slice(0, -1).map((k, i) => `if(depth >= ${i + 2}, ${k}, NULL)`);
  const siblings = `PARTITION BY ${['depth', ...parentKeys].join(', ')}`;
  // Rank of the ancestor at depth a, read from that ancestor's row (same keys k1..ka).
  const ancestorRanks = ks.slice(0, -1).map((_, i) => {
    const a = i + 1;
    const prefix = ks.slice(0, a).map((k) => `if(depth >= ${a}, ${k}, NULL)`).join(', ');
    return `max(if(depth = ${a}, r, 0)) OVER (PARTITION BY ${prefix}) AS r${a}`;
  });
  // A bucket is a set of records: one whose count is 0 holds none and is no bucket. Rows of the
  // table count 1 each and never make one; weighted sources (survey rollup slices whose groups
  // were emptied by upserts) can, and must answer as those rows would.
  const noMissing = [...ks.map((k, i) => `(depth < ${i + 1} OR ${k} IS NOT NULL)`), 'doc_count > 0'].join(' AND ');
  const keptAncestors = ks.slice(0, -1).map((_, i) => `(depth < ${i + 2} OR r${i + 1} <= ${limit})`);

  const grouped =
    `SELECT ${keyColumns.join(', ')}, ${n} - bitCount(grouping(${ks.join(', ')})) AS depth, ${count} AS doc_count${metricColumns} ` +
    `${source} GROUP BY ROLLUP(${ks.join(', ')})`;
  // Nothing to cut: the same rows without the three window passes (each sorts every bucket).
  if (spec.bounded?.length === n && spec.bounded.every(Boolean)) {
    return `SELECT depth, ${ks.join(', ')}, doc_count, toUInt64(0) AS other_doc_count${metricPass} FROM (${grouped}) WHERE ${noMissing} ORDER BY depth`;
  }
  const ranked =
    `SELECT ${ks.join(', ')}, depth, doc_count${metricPass}, row_number() OVER (${siblings} ORDER BY doc_count DESC, ${ownKey} ASC) AS r ` +
    `FROM (${grouped}) WHERE ${noMissing}`;
  const withContext =
    `SELECT ${ks.join(', ')}, depth, doc_count${metricPass}, r, sum(if(r > ${limit}, doc_count, 0)) OVER (${siblings}) AS other_doc_count` +
    `${ancestorRanks.map((x) => `, ${x}`).join('')} FROM (${ranked})`;
  return (
    `SELECT depth, ${ks.join(', ')}, doc_count, other_doc_count${metricPass} FROM (${withContext}) ` +
    `WHERE ${[`r <= ${limit}`, ...keptAncestors].join(' AND ')} ORDER BY depth`
  );
}

/** The columns of rankOneLevel's rows without metrics. */
export const ONE_LEVEL_COLUMNS: readonly string[] = Object.freeze(['depth', 'k1', 'doc_count', 'level_total']);

/**
 * The ranked buckets of ONE level over rows already grouped into its buckets: `grouped` has
 * columns k1, depth (0: everything in selection, one row; 1: a bucket of the level) and doc_count
 * (plus `metricNames`), with no row whose doc_count is 0 or (at depth 1) whose key is NULL. Keeps
 * the `limit` largest buckets (ties by toString(k1), as compileRankedBuckets ranks them) with one
 * `LIMIT ... BY depth` instead of compileRankedBuckets' three window passes, and carries on each
 * row `level_total`, the summed doc_count of its depth: otherDocCounts turns that into
 * `other_doc_count` (the level total less the kept buckets' counts) once the rows are read.
 * The same rows as compileRankedBuckets over the same buckets; each pass costs the engine's
 * planning (bench/query/README.md, "2026-11-27: the answer buckets in one grouping").
 */
export function rankOneLevel(grouped: string, limit: string, metricNames: readonly string[] = []): string {
  const metricPass = metricNames.map((m) => `, ${m}`).join('');
  return (
    `SELECT depth, k1, doc_count, sum(doc_count) OVER (PARTITION BY depth) AS level_total${metricPass} ` +
    `FROM (${grouped}) ORDER BY depth, doc_count DESC, toString(k1) ASC LIMIT ${limit} BY depth`
  );
}

/**
 * Rows of rankOneLevel -> rows as compileRankedBuckets returns them: `other_doc_count` on every
 * bucket row is its level's total less the counts of the buckets kept (0 at depth 0), and
 * `level_total` is dropped. Rows without `level_total` pass unchanged.
 */
export function otherDocCounts<R extends { depth: number | string; doc_count: number | string }>(rows: readonly R[]): (Omit<R, 'level_total'> & { other_doc_count: number | string })[] {
  if (!rows.some((r) => 'level_total' in r)) return rows as unknown as (Omit<R, 'level_total'> & { other_doc_count: number | string })[];
  let kept = 0;
  let total = 0;
  for (const r of rows) {
    if (Number(r.depth) !== 1) continue;
    kept += Number(r.doc_count);
    total = Number((r as unknown as { level_total: number | string }).level_total);
  }
  return rows.map((r) => {
    const { level_total: _total, ...rest } = r as R & { level_total?: unknown };
    return { ...rest, other_doc_count: Number(r.depth) === 1 ? total - kept : 0 };
  });
}

/**
 * count() is exact when each record is one row. A multi-valued level (arrayJoin, multi-valued.ts)
 * repeats the record, once per value of that level times the values of the other multi-valued
 * levels; then a bucket at depth d counts only the rows holding the first value of every deeper
 * multi-valued level (isFirstOfLevelSql): exactly one row per record in that bucket. No
 * uniqExact(id): it keeps a hash set of every id in selection, several times the time and far more
 * memory (bench/query/README.md, "Figures behind the schema and the code").
 * `multiValued[i]` says whether level i + 1 is multi-valued.
 */
export function docCountSql(multiValued: readonly boolean[]): string {
  const perDepth = multiValued.map((_, d) => {
    const deeper = multiValued.flatMap((multi, i) => (i + 1 > d && multi ? [isFirstOfLevelSql(i + 1)] : []));
    return deeper.length ? `countIf(${deeper.join(' AND ')})` : 'count()';
  });
  if (perDepth.every((c) => c === 'count()')) return 'count()';
  // depth n (the leaves) is count(): every row is one record in one leaf bucket.
  return `multiIf(${perDepth.map((c, d) => `depth = ${d}, ${c}`).join(', ')}, count())`;
}

/** The engine's String order (bytes), which decided which buckets made the first `limit`. */
export function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}
