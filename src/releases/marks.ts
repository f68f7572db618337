/**
 * Releases on a date histogram (pure): the releases whose released_at falls in a series' range
 * [start, end] (both inclusive, the range the series was planned for), each with the key of the
 * bucket it falls in, so a chart can mark it on the time axis next to the figures it may move.
 */
import * as v from 'valibot';
import { bucketIndex, formatDbMicros, formatMicros, parseInstantMicros, type HistogramPlan } from '../query/histogram.ts';
import { ParamBag, compiled, type RunQuery } from '../clickhouse/sql.ts';
import { byteOrder } from '../query/ranked-buckets.ts';
import type { NamedQuery } from '../query/beside.ts';
import { formatApiMillis, parseIso } from '../time/iso.ts';
import type { Release } from './schema.ts';
import { fromReleases } from './source.ts';
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

/** What a mark shows of a release. */
export type MarkedRelease = Pick<Release, 'id' | 'name' | 'version' | 'released_at'>;

/**
 * Adds `releases` to every date level of a shaped aggregation tree (`plans[depth]` is the series
 * of a date level) that has some in its range; a level without any is left as it is.
 */
export function markReleases<L extends object>(level: L, plans: readonly (HistogramPlan | undefined)[], releases: readonly MarkedRelease[], depth = 0): L {
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
  const span = seriesSpan(plans);
  if (!span) return [];
  return (await run<Release>(compileReleasesBetween(orgId, span.from, span.to, MAX_RELEASE_MARKS * periods))).map(toRelease);
}

/** The union of the date levels' series ranges (µs, inclusive), undefined when there is no non-empty series. */
function seriesSpan(plans: readonly (HistogramPlan | undefined)[]): { from: bigint; to: bigint } | undefined {
  const dated = plans.filter((p): p is HistogramPlan => p !== undefined && p.starts.length > 0);
  if (dated.length === 0) return undefined;
  return { from: dated.reduce((t, p) => (p.start < t ? p.start : t), dated[0].start), to: dated.reduce((t, p) => (p.end > t ? p.end : t), dated[0].end) };
}

/** A row of releaseMarksRead. */
export interface MarkedReleaseRow extends Record<string, unknown> {
  release_id: string;
  release_name: string;
  release_version: string;
  release_at: string;
}

/**
 * releasesForSeries' read as a query that names its columns, to ride in a grouped query's own
 * request (src/query/beside.ts): the same releases (same window, same order, same limit), only
 * the columns a mark shows; undefined when no series needs releases. Its placeholders are `rel*`.
 * Order: released_at, then the id's text (as releasesForSeries, whose `id` is toString(id));
 * releasesOfRows sorts by the same key, the order of rows between a UNION ALL's branches being unspecified.
 */
export function releaseMarksRead(orgId: string, plans: readonly (HistogramPlan | undefined)[], periods = 1): (NamedQuery & { columns: readonly string[] }) | undefined {
  const span = seriesSpan(plans);
  if (!span) return undefined;
  const bag = new ParamBag('rel');
  const source = fromReleases(orgId, bag, { from: formatDbMicros(span.from), to: formatDbMicros(span.to) });
  const sql =
    `SELECT toString(id) AS release_id, name AS release_name, version AS release_version, toString(released_at) AS release_at ${source} ` +
    `ORDER BY released_at, release_id LIMIT ${bag.add(MAX_RELEASE_MARKS * periods, 'UInt32')}`;
  return Object.freeze({ ...compiled(sql, bag), columns: ['release_id', 'release_name', 'release_version', 'release_at'] });
}

/** releaseMarksRead's rows -> the releases, oldest first (ties by the id's text), released_at as the API writes it. */
export function releasesOfRows(rows: readonly MarkedReleaseRow[]): MarkedRelease[] {
  // release_at is DateTime64(3) text ('YYYY-MM-DD HH:MM:SS.mmm'): fixed width, so text order is time order.
  return [...rows]
    .sort((a, b) => byteOrder(a.release_at, b.release_at) || byteOrder(a.release_id, b.release_id))
    .map((r) => ({ id: r.release_id, name: r.release_name, version: r.release_version, released_at: formatApiMillis(parseIso(r.release_at)!) }));
}

/** The releases (oldest first) inside the plan's range, with their bucket. */
export function releaseMarks(releases: readonly MarkedRelease[], plan: HistogramPlan): ReleaseMark[] {
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
