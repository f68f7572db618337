/**
 * Releases on a date histogram (pure): the releases whose released_at falls in a series' range
 * [start, end] (both inclusive, the range the series was planned for), each with the key of the
 * bucket it falls in, so a chart can mark it on the time axis next to the figures it may move.
 */
import * as v from 'valibot';
import { bucketIndex, formatMicros, parseInstantMicros, type HistogramPlan } from '../query/histogram.ts';
import type { Release } from './schema.ts';

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
