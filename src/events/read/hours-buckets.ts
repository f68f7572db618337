/**
 * The count from the hours (hours.ts) as compileRankedBuckets' rows, with the parents summed and
 * the ranking checked here instead of by the engine.
 *
 * The hours' two parts return the events per group of the read's keys (one row per group and
 * part). compileRankedBuckets would put a ROLLUP and three window passes (rank, other_doc_count,
 * the ancestors' ranks) on top of them: each a layer the engine analyses and plans before it reads
 * anything, serially, on every read (bench/events/README.md, 2026-11-27 08:17). Here the engine
 * returns the groups and this module adds them up: a parent bucket's count is the sum of its
 * groups' (every event is in exactly one group of the parts), which is what the ROLLUP computes.
 * The ranking keeps the MAX_TERMS_BUCKETS largest buckets under each parent; when no parent has
 * more than that many, it keeps all of them and `other_doc_count` is 0, so the rows are the same.
 * When one has more, or a part returns its `limit` of rows (the groups are then not all here),
 * `leafBucketRows` gives undefined and the caller reads the ranked query.
 */
import type { BucketRow } from '../../query/shape.ts';

/** A row of hoursParts: the keys g1..gn and the events n of one group in one part. */
export type LeafRow = Record<string, string | number | null>;

/**
 * The leaf groups -> compileRankedBuckets' rows (depth, k1..kn, doc_count, other_doc_count) for
 * the same keys, or undefined when a ranking would cut (or `rows` holds `limit` rows or more).
 * `rolledUp[i]`: the value compileRankedBuckets' row holds for key i at a shallower depth (the
 * ROLLUP's default of the key's type: NULL for a Nullable key, '' for a String). As in
 * compileRankedBuckets, a bucket whose key is NULL is no bucket (its events count in its parents
 * only), and no bucket has a count of 0 (no row for depth 0 when nothing is counted).
 */
export function leafBucketRows(rows: readonly LeafRow[], rolledUp: readonly (string | null)[], maxPerParent: number, limit: number): BucketRow[] | undefined {
  if (rows.length >= limit) return undefined;
  const n = rolledUp.length;
  // byDepth[d]: the buckets of depth d by the text of their keys k1..kd, with those keys.
  const byDepth: Map<string, { keys: (string | number | null)[]; parent: string; count: number }>[] = Array.from({ length: n + 1 }, () => new Map());
  for (const row of rows) {
    const count = Number(row.n);
    if (count === 0) continue;
    const keys: (string | number | null)[] = [];
    let text = '';
    for (let d = 0; d <= n; d++) {
      const parent = text;
      if (d > 0) {
        const key = row[`g${d}`] ?? null;
        if (key === null) break;
        keys.push(key);
        text += `${JSON.stringify(key)},`;
      }
      const bucket = byDepth[d].get(text);
      if (bucket) bucket.count += count;
      else byDepth[d].set(text, { keys: [...keys], parent, count });
    }
  }
  // The ranking would cut nothing: no parent holds more than maxPerParent children.
  for (let d = 1; d <= n; d++) {
    const children = new Map<string, number>();
    for (const { parent } of byDepth[d].values()) {
      const c = (children.get(parent) ?? 0) + 1;
      if (c > maxPerParent) return undefined;
      children.set(parent, c);
    }
  }
  const out: BucketRow[] = [];
  byDepth.forEach((buckets, depth) => {
    for (const { keys, count } of buckets.values()) {
      if (count === 0) continue;
      // Columns in compileRankedBuckets' order: depth, k1..kn, doc_count, other_doc_count.
      const row = { depth } as BucketRow;
      for (let i = 0; i < n; i++) row[`k${i + 1}`] = i < depth ? keys[i] : rolledUp[i];
      row.doc_count = count;
      row.other_doc_count = 0;
      out.push(row);
    }
  });
  return out;
}
