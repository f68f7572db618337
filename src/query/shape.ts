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
  type Child = { key: string | number; doc_count: number; other: number; metrics: Record<string, number> };
  const children = new Map<string, Child[]>();
  const readMetrics = (row: BucketRow) => Object.fromEntries(metrics.map((m) => [m, Number(row[m] ?? 0)]));
  let top: Shaped['top'] = { doc_count: 0, ...Object.fromEntries(metrics.map((m) => [m, 0])) };
  const keyOf = (level: number, raw: string | number | null | undefined) => (levels[level].kind === 'date' ? Number(raw) : String(raw));
  for (const row of rows) {
    const depth = Number(row.depth);
    if (depth === 0) {
      top = { doc_count: Number(row.doc_count), ...readMetrics(row) };
      continue;
    }
    const path: (string | number)[] = [];
    for (let i = 1; i < depth; i++) path.push(keyOf(i - 1, row[`k${i}`]));
    const parent = JSON.stringify(path);
    const list = children.get(parent) ?? [];
    list.push({ key: keyOf(depth - 1, row[`k${depth}`]), doc_count: Number(row.doc_count), other: Number(row.other_doc_count), metrics: readMetrics(row) });
    children.set(parent, list);
  }

  const zeros = Object.fromEntries(metrics.map((m) => [m, 0]));
  /** A date level's formatted keys, by depth: the same series repeats under every parent bucket. */
  const dateKeys: (readonly string[] | undefined)[] = [];
  let emitted = 0;
  const level = (depth: number, path: (string | number)[]): Record<string, unknown> => {
    const spec = levels[depth];
    const found = children.get(JSON.stringify(path)) ?? [];
    emitted += spec.kind === 'date' ? spec.plan.starts.length : Math.max(found.length, spec.fill?.length ?? 0);
    if (emitted > maxBuckets) throw tooMany();
    const nested = (key: string | number) => ({
      ...extra?.([...path, key]),
      ...(depth + 1 < levels.length ? { aggregations: level(depth + 1, [...path, key]) } : {}),
    });

    if (spec.kind === 'date') {
      const byIndex = new Map(found.map((c) => [c.key, c]));
      const keys = (dateKeys[depth] ??= spec.plan.starts.map(formatMicros));
      return {
        ...spec.head,
        interval: spec.plan.interval,
        buckets: keys.map((key, i) => {
          const c = byIndex.get(i);
          return { key, doc_count: c?.doc_count ?? 0, ...(c?.metrics ?? zeros), ...nested(i) };
        }),
      };
    }
    let entries = found.map((c) => ({ key: String(c.key), doc_count: c.doc_count, metrics: c.metrics }));
    if (spec.fill) {
      const present = new Set(entries.map((e) => e.key));
      entries = [...entries, ...spec.fill.filter((k) => !present.has(k)).map((key) => ({ key, doc_count: 0, metrics: zeros }))];
    }
    entries.sort((a, b) => b.doc_count - a.doc_count || byteOrder(a.key, b.key));
    return {
      ...spec.head,
      buckets: entries.map((e) => ({ key: e.key, doc_count: e.doc_count, ...e.metrics, ...nested(e.key) })),
      other_doc_count: found[0]?.other ?? 0,
    };
  };
  return { top, aggregations: level(0, []) };
}
