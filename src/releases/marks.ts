/**
 * Releases on a date histogram (pure): the releases whose released_at falls in a series' range
 * [start, end] (both inclusive, the range the series was planned for), each with the key of the
 * bucket it falls in, so a chart can mark it on the time axis next to the figures it may move.
 */
import * as v from 'valibot';
import { bucketIndex, formatMicros, parseInstantMicros, type HistogramPlan } from '../query/histogram.ts';
import type { RunQuery } from '../clickhouse/sql.ts';
import type { Release } from './schema.ts';
import { compileReleasesBetween, toRelease } from './store.ts';

export interface ReleaseMark {
  id: string;
  name: string;
  version: string;
  released_at: string;
  /** The key (start) of the bucket holding released_at. */
  bucket: string;
}

export const releaseMarkSchema = v.object({ id: v.string(), name: v.string(), version: v.string(), released_at: v.string(), bucket: v.string() });

/** At most this many releases are listed per histogram (the oldest first). */
export const MAX_RELEASE_MARKS = 1000;

/** A shaped aggregation level: its buckets, each with the next level when there is one. */
interface Level {
  buckets: readonly { aggregations?: unknown }[];
}

/**
 * Adds `releases` to every date level of a shaped aggregation tree (`plans[depth]` is the series
 * of a date level) that has some in its range; a level without any is left as it is.
 */
export function markReleases<L extends object>(level: L, plans: readonly (HistogramPlan | undefined)[], releases: readonly Release[], depth = 0): L {
  const plan = plans[depth];
  const marks = plan && releases.length > 0 ? releaseMarks(releases, plan) : [];
  for (const bucket of (level as unknown as Level).buckets) {
    if (bucket.aggregations) (bucket as { aggregations?: unknown }).aggregations = markReleases(bucket.aggregations as object, plans, releases, depth + 1);
  }
  return marks.length > 0 ? { ...level, releases: marks } : level;
}

/**
 * The releases of the organization in the union of the date levels' series, oldest first: every
 * date histogram's, whether its series comes from the request's range or from the data's bounds.
 */
export async function releasesForSeries(run: RunQuery, orgId: string, plans: readonly (HistogramPlan | undefined)[], periods = 1): Promise<Release[]> {
  const dated = plans.filter((p): p is HistogramPlan => p !== undefined && p.starts.length > 0);
  if (dated.length === 0) return [];
  const from = dated.reduce((t, p) => (p.start < t ? p.start : t), dated[0].start);
  const to = dated.reduce((t, p) => (p.end > t ? p.end : t), dated[0].end);
  return (await run<Release>(compileReleasesBetween(orgId, from, to, MAX_RELEASE_MARKS * periods))).map(toRelease);
}

/** The releases (oldest first) inside the plan's range, with their bucket. */
export function releaseMarks(releases: readonly Release[], plan: HistogramPlan): ReleaseMark[] {
  const out: ReleaseMark[] = [];
  for (const r of releases) {
    const t = parseInstantMicros(r.released_at);
    if (t === null || t < plan.start || t > plan.end) continue;
    const i = bucketIndex(plan, t);
    if (i === null) continue;
    out.push({ id: r.id, name: r.name, version: r.version, released_at: r.released_at, bucket: formatMicros(plan.starts[i]) });
    if (out.length === MAX_RELEASE_MARKS) break;
  }
  return out;
}
