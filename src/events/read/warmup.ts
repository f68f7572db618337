/**
 * The event reads run once at start-up, before the first request, for an organization that has
 * no events: a dashboard's reads (counts by name and day, unique users per day, a property filter
 * with a daily histogram, the newest page with its count) over the last 100 days.
 *
 * Why: the first request of a freshly started service pays for what it is the first to use: the
 * code of the request schemas, the compilers, the engine client and the bucket shaping, compiled
 * by V8 on first call, and the modules Node loads lazily; that first request took several times
 * the service CPU of the next ones (bench/events/README.md). Running the same functions once
 * moves that cost to the start-up. The organization is the nil UUID, which no token is minted for
 * (tokens carry random v4 ids): the engine analyses the parts and reads no rows, the request
 * cache keeps the empty answers for its TTL, and nothing is written.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import * as v from 'valibot';
import { aggregateEvents, eventAggregationBodySchema } from './aggregation.ts';
import { eventSearchBodySchema, eventSelectionOf, searchEvents } from './search.ts';

const NO_ORGANIZATION = '00000000-0000-0000-0000-000000000000';
const DAY_MS = 86_400_000;

/** The tables the event reads are answered from (their projections included): the events, and the releases marked on date histograms. */
export const EVENT_READ_TABLES = ['events', 'releases'] as const;

export async function warmEventReads(client: ClickHouseClient, nowMs = Date.now()): Promise<void> {
  // A range that starts and ends inside an hour, as a dashboard's "last 100 days" does, so the
  // hours' split (hours.ts) has partial hours at every edge.
  const range = { start: new Date(nowMs - 100 * DAY_MS + 1).toISOString(), end: new Date(nowMs).toISOString() };
  const daily = { field: 'timestamp', date_histogram_min_interval: 'day', date_histogram_buckets: 100 };
  const aggregations = [
    { range, group_by: [{ field: 'event_name' }, daily] },
    { range, group_by: [daily], metrics: ['unique_users'] },
    { range, filters: [{ key: 'property', property_key: 'plan', operator: 'eq', value: 'pro' }], group_by: [daily] },
  ];
  for (const raw of aggregations) {
    const body = v.parse(eventAggregationBodySchema, raw);
    JSON.stringify(await aggregateEvents(client, eventSelectionOf(NO_ORGANIZATION, body), body.group_by, body.metrics));
  }
  const search = v.parse(eventSearchBodySchema, { size: 10, range });
  JSON.stringify(await searchEvents(client, eventSelectionOf(NO_ORGANIZATION, search), search));
}
