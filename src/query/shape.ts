/**
 * Bucket shaping: rows of the ranked-bucket query (ranked-buckets.ts) -> the nested aggregation
 * body the API returns (survey responses, events): one level
 * object per group_by rule, `{...head, buckets: [{key, doc_count, <metrics>, aggregations?}]}`.
 * Date levels list every bucket of their dense series (zeros included) under `interval`; term
 * levels list the kept buckets, largest doc_count first (ties by key, byte order), their `fill`
 * keys with zeros when absent, and `other_doc_count`.
 */
import { byteOrder } from './ranked-buckets.ts';
import { formatMicros, type HistogramPlan } from './histogram.ts';

export type ShapeLevel =
  | { readonly kind: 'date'; readonly head: Readonly<Record<string, unknown>>; readonly plan: HistogramPlan }
  | { readonly kind: 'terms'; readonly head: Readonly<Record<string, unknown>>; readonly fill?: readonly string[] };

/** One row of the ranked-bucket query: depth, keys k1..k<depth>, counts, extra metric columns. */
export interface BucketRow {
  depth: number | string;
  doc_count: number | string;
  other_doc_count: number | string;
  [column: string]: string | number | null;
}

export interface ShapedBucket {
  key: string;
  doc_count: number;
  [metric: string]: unknown;
}

export interface Shaped {
  /** doc_count and the metrics of everything in selection (depth 0). */
  top: { doc_count: number } & Record<string, number>;
  aggregations: Record<string, unknown>;
}

/**
 * `maxBuckets` bounds the buckets of the whole answer; past it `tooMany()` is thrown. `extra` adds
 * fields to each bucket from its path (the keys down to it; a date level's key is its index), for
 * figures that are not a number per row (the survey metrics).
 */
export function shapeBuckets(
  levels: readonly ShapeLevel[], rows: readonly BucketRow[], metrics: readonly string[], maxBuckets: number, tooMany: () => Error,
  extra?: (path: readonly (string | number)[]) => Record<string, unknown>,
): Shaped {
  type Child = { key: string | number; doc_count: number; other: number; metrics: Record<string, number> | undefined };
  // A bucket's parent is found by its path's text: each key's JSON (a date level's index is a
  // number, a terms level's key a string), comma-joined: one text per path, built the same way for
  // the rows and for the walk (no array per row, no JSON.stringify of arrays: 400 buckets shaped in
  // about half the time).
  const children = new Map<string, Child[]>();
  const readMetrics = (row: BucketRow) => (metrics.length === 0 ? undefined : Object.fromEntries(metrics.map((m) => [m, Number(row[m] ?? 0)])));
  let top: Shaped['top'] = { doc_count: 0, ...Object.fromEntries(metrics.map((m) => [m, 0])) };
  const keyOf = (level: number, raw: string | number | null | undefined) => (levels[level].kind === 'date' ? Number(raw) : String(raw));
  const childText = (parent: string, key: string | number) => (parent === '' ? JSON.stringify(key) : `${parent},${JSON.stringify(key)}`);
  for (const row of rows) {
    const depth = Number(row.depth);
    if (depth === 0) {
      top = { doc_count: Number(row.doc_count), ...readMetrics(row) };
      continue;
    }
    let parent = '';
    for (let i = 1; i < depth; i++) parent = childText(parent, keyOf(i - 1, row[`k${i}`]));
    let list = children.get(parent);
    if (!list) children.set(parent, (list = []));
    list.push({ key: keyOf(depth - 1, row[`k${depth}`]), doc_count: Number(row.doc_count), other: Number(row.other_doc_count), metrics: readMetrics(row) });
  }

  const zeros = metrics.length === 0 ? undefined : Object.fromEntries(metrics.map((m) => [m, 0]));
  /** A date level's formatted keys, by depth: the same series repeats under every parent bucket. */
  const dateKeys: (readonly string[] | undefined)[] = [];
  let emitted = 0;
  // path: the keys down to this level, kept only for `extra`; text: its childText.
  const level = (depth: number, path: (string | number)[] | undefined, text: string): Record<string, unknown> => {
    const spec = levels[depth];
    const found = children.get(text) ?? [];
    emitted += spec.kind === 'date' ? spec.plan.starts.length : Math.max(found.length, spec.fill?.length ?? 0);
    if (emitted > maxBuckets) throw tooMany();
    const deeper = depth + 1 < levels.length;
    // A bucket's fields in the answer's order: key, doc_count, the metric columns, extra's, aggregations.
    const bucket = (key: string, pathKey: string | number, doc_count: number, columns: Record<string, number> | undefined): Record<string, unknown> => {
      const b: Record<string, unknown> = { key, doc_count };
      if (columns) Object.assign(b, columns);
      const childPath = path ? [...path, pathKey] : undefined;
      if (extra) Object.assign(b, extra(childPath!));
      if (deeper) b.aggregations = level(depth + 1, childPath, childText(text, pathKey));
      return b;
    };

    if (spec.kind === 'date') {
      const byIndex = new Map<number, Child>();
      for (const c of found) byIndex.set(c.key as number, c);
      const keys = (dateKeys[depth] ??= spec.plan.starts.map(formatMicros));
      const buckets = keys.map((key, i) => {
        const c = byIndex.get(i);
        return bucket(key, i, c?.doc_count ?? 0, c?.metrics ?? zeros);
      });
      return { ...spec.head, interval: spec.plan.interval, buckets };
    }
    let entries = found.map((c) => ({ key: String(c.key), doc_count: c.doc_count, metrics: c.metrics }));
    if (spec.fill) {
      const present = new Set(entries.map((e) => e.key));
      for (const key of spec.fill) if (!present.has(key)) entries.push({ key, doc_count: 0, metrics: zeros });
    }
    entries = entries.sort((a, b) => b.doc_count - a.doc_count || byteOrder(a.key, b.key));
    return {
      ...spec.head,
      buckets: entries.map((e) => bucket(e.key, e.key, e.doc_count, e.metrics)),
      other_doc_count: found[0]?.other ?? 0,
    };
  };
  return { top, aggregations: level(0, extra ? [] : undefined, '') };
}
