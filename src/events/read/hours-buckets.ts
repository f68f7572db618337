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

/** A row of hoursParts: the keys g1..gn and the events n of one group in one part (and, from compileHoursLeaves' partial hours, `c`: its events per bucket of one level). */
export type LeafRow = Record<string, string | number | null | readonly (number | string)[]>;

/** compileHoursLeaves' resampled form: the 0-based index of the level counted per bucket in `c`, and of the name levels (grouped with '' for none). */
export interface ResampledLevels {
  level: number;
  names: readonly number[];
}

/**
 * Rows of compileHoursLeaves' resampled form -> plain groups: a row whose `c` holds counts gives
 * one group per bucket i with events (key i at `level`, n = c[i]); a row with an empty `c` is
 * already one. A name level's '' becomes NULL (what nullIf(event_name, '') gives: no bucket).
 */
export function resampledLeaves(rows: readonly LeafRow[], { level, names }: ResampledLevels): LeafRow[] {
  const out: LeafRow[] = [];
  const column = `g${level + 1}`;
  const nameColumns = names.map((i) => `g${i + 1}`);
  for (const row of rows) {
    for (const c of nameColumns) if (row[c] === '') row[c] = null;
    const counts = row.c;
    if (!Array.isArray(counts) || counts.length === 0) {
      out.push(row);
      continue;
    }
    for (let i = 0; i < counts.length; i++) {
      if (Number(counts[i]) !== 0) out.push({ ...row, [column]: i, n: counts[i], c: null });
    }
  }
  return out;
}

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
  const columns = rolledUp.map((_, i) => `g${i + 1}`);
  const keyColumns = rolledUp.map((_, i) => `k${i + 1}`);
  // The buckets as a tree: a node per bucket, its children by their key (a Map tells 5 from '5').
  type Node = { key: string | number | null; count: number; children: Map<string | number, Node> | undefined };
  const root: Node = { key: null, count: 0, children: undefined };
  for (const row of rows) {
    const count = Number(row.n as number | string);
    if (count === 0) continue;
    let node = root;
    node.count += count;
    for (let d = 0; d < n; d++) {
      const key = (row[columns[d]] ?? null) as string | number | null;
      if (key === null) break;
      const children = (node.children ??= new Map());
      let child = children.get(key);
      if (!child) {
        // The ranking would cut: a parent with more buckets than it keeps.
        if (children.size >= maxPerParent) return undefined;
        children.set(key, (child = { key, count: 0, children: undefined }));
      }
      child.count += count;
      node = child;
    }
  }
  const out: BucketRow[] = [];
  // Depth by depth, as compileRankedBuckets orders them; each node with the keys of its path.
  let level: { node: Node; keys: (string | number | null)[] }[] = [{ node: root, keys: [] }];
  for (let depth = 0; depth <= n && level.length; depth++) {
    const next: typeof level = [];
    for (const { node, keys } of level) {
      if (node.count !== 0) {
        // Columns in compileRankedBuckets' order: depth, k1..kn, doc_count, other_doc_count.
        const row = { depth } as BucketRow;
        for (let i = 0; i < n; i++) row[keyColumns[i]] = i < depth ? keys[i] : rolledUp[i];
        row.doc_count = node.count;
        row.other_doc_count = 0;
        out.push(row);
      }
      if (node.children) for (const child of node.children.values()) next.push({ node: child, keys: [...keys, child.key] });
    }
    level = next;
  }
  return out;
}
