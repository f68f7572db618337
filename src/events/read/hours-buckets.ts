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
 * The leaf groups -> compileRankedBuckets' rows (depth, k1..kn, doc_count, other_doc_count) for
 * the same keys, or undefined when a ranking would cut (or `rows` holds `limit` rows or more).
 * `rolledUp[i]`: the value compileRankedBuckets' row holds for key i at a shallower depth (the
 * ROLLUP's default of the key's type: NULL for a Nullable key, '' for a String). As in
 * compileRankedBuckets, a bucket whose key is NULL is no bucket (its events count in its parents
 * only), and no bucket has a count of 0 (no row for depth 0 when nothing is counted).
 */
export function leafBucketRows(rows: readonly LeafRow[], rolledUp: readonly (string | null)[], maxPerParent: number, limit: number, resampled?: ResampledLevels): BucketRow[] | undefined {
  if (rows.length >= limit) return undefined;
  const n = rolledUp.length;
  const columns = rolledUp.map((_, i) => `g${i + 1}`);
  const keyColumns = rolledUp.map((_, i) => `k${i + 1}`);
  // The resampled form (compileHoursLeaves): a row whose `c` holds counts stands for one group per
  // bucket i with events (key i at `level`, n = c[i]); a name level's '' is NULL (nullIf's no bucket).
  const level = resampled?.level ?? -1;
  const isName = rolledUp.map((_, i) => resampled?.names.includes(i) ?? false);
  // The buckets as a tree: a node per bucket, its children by their key (a Map tells 5 from '5').
  type Node = { key: string | number | null; count: number; children: Map<string | number, Node> | undefined };
  const root: Node = { key: null, count: 0, children: undefined };
  // Adds `count` events to the buckets of the row's path (bucket `at` at the resampled level); false: the ranking would cut.
  const add = (row: LeafRow, count: number, at: number): boolean => {
    let node = root;
    node.count += count;
    for (let d = 0; d < n; d++) {
      let key = (d === level ? at : row[columns[d]] ?? null) as string | number | null;
      if (key === '' && isName[d]) key = null;
      if (key === null) break;
      const children = (node.children ??= new Map());
      let child = children.get(key);
      if (!child) {
        // The ranking would cut: a parent with more buckets than it keeps.
        if (children.size >= maxPerParent) return false;
        children.set(key, (child = { key, count: 0, children: undefined }));
      }
      child.count += count;
      node = child;
    }
    return true;
  };
  for (const row of rows) {
    const counts = resampled ? row.c : undefined;
    if (Array.isArray(counts) && counts.length > 0) {
      for (let i = 0; i < counts.length; i++) {
        const c = Number(counts[i]);
        if (c !== 0 && !add(row, c, i)) return undefined;
      }
      continue;
    }
    const count = Number(row.n as number | string);
    if (count !== 0 && !add(row, count, level >= 0 ? (row[columns[level]] as number) : 0)) return undefined;
  }
  const out: BucketRow[] = [];
  // Depth by depth, as compileRankedBuckets orders them; each node with the keys of its path.
  let rank: { node: Node; keys: (string | number | null)[] }[] = [{ node: root, keys: [] }];
  for (let depth = 0; depth <= n && rank.length; depth++) {
    const next: typeof rank = [];
    for (const { node, keys } of rank) {
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
    rank = next;
  }
  return out;
}
