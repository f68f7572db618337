/**
 * The event reads run once at start-up, before the first request, for an organization that has
 * no events: a dashboard's reads (counts by name and day, unique users per day, a property filter
 * with a daily histogram, the newest page with its count) over the last 100 days; then, as that
 * organization's answers hold no bucket, a dashboard-sized answer (25 names x 100 days) is read
 * from the engine as rows of the grouped query's shape (numbers, not events) and shaped.
 *
 * Why: the first request of a freshly started service pays for what it is the first to use: the
 * code of the request schemas, the compilers, the engine client and the bucket shaping, compiled
 * by V8 on first call, and the modules Node loads lazily; that first request took several times
 * the service CPU of the next ones (bench/events/README.md). Running the same functions once
 * moves that cost to the start-up. A count by name and day reads the groups of the hours' parts
 * (hours-buckets.ts), so the dashboard-sized answer goes through the same code: 25 names x 100
 * days as the whole hours' groups and the partial hours' bucket arrays, spread, summed and
 * shaped. The organization is the nil UUID, which no token is minted for (tokens carry random v4
 * ids): the engine analyses the parts and reads no rows, the request cache keeps the empty
 * answers for its TTL, and nothing is written.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import * as v from 'valibot';
import { ParamBag, compiled } from '../../clickhouse/sql.ts';
import { queryRows } from '../../query/request-cache.ts';
import { MAX_TERMS_BUCKETS } from '../../query/ranked-buckets.ts';
import { aggregateEvents, eventAggregationAnswer, eventAggregationBodySchema, planEventLevels } from './aggregation.ts';
import { EVENT_AGGREGATION_SETTINGS } from './settings.ts';
import { leafBucketRows, type LeafRow } from './hours-buckets.ts';
import { eventSearchBodySchema, eventSelectionOf, searchEvents } from './search.ts';

const NO_ORGANIZATION = '00000000-0000-0000-0000-000000000000';
const DAY_MS = 86_400_000;
/** Calls of the service's side of a dashboard-sized count (a few ms each). */
const WARM_CALLS = 8;

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
    JSON.stringify((await aggregateEvents(client, eventSelectionOf(NO_ORGANIZATION, body), body.group_by, body.metrics)).result);
  }
  const search = v.parse(eventSearchBodySchema, { size: 10, range });
  JSON.stringify((await searchEvents(client, eventSelectionOf(NO_ORGANIZATION, search), search)).result);

  // The groups of a count by event_name x 100 days from both parts of the hours, in the types the
  // leaf query returns, through the same client call, then summed and shaped by the same code.
  const body = v.parse(eventAggregationBodySchema, aggregations[0]);
  const plans = planEventLevels(body.group_by, eventSelectionOf(NO_ORGANIZATION, body).range, undefined);
  const leaves = await queryRows<LeafRow>(client, compiled(DASHBOARD_LEAVES_SQL, new ParamBag()), EVENT_AGGREGATION_SETTINGS);
  // A few times: V8 optimizes a function after some calls, and the first requests would pay for
  // its slower forms (the first counts took 50-70 ms of service CPU against 20-30 for later ones).
  for (let i = 0; i < WARM_CALLS; i++) {
    const rows = leafBucketRows(leaves, [null, null], MAX_TERMS_BUCKETS, Infinity, { level: 1, names: [0] }) ?? [];
    JSON.stringify(eventAggregationAnswer(body.group_by, plans, rows, [], body.metrics, performance.now()));
  }
}

/**
 * 25 names x 100 daily buckets in compileHoursLeaves' resampled form: a group per name and day
 * from the whole hours, then a row per name from the partial hours with its events per day.
 */
const DASHBOARD_LEAVES_SQL =
  "SELECT concat('event ', toString(number % 25)) AS g1, toInt64(intDiv(number, 25)) AS g2, toUInt64(number + 1) AS n, CAST([] AS Array(UInt64)) AS c FROM numbers(2500) " +
  "UNION ALL SELECT concat('event ', toString(number)) AS g1, toInt64(0) AS g2, toUInt64(0) AS n, arrayMap(i -> toUInt64(i), range(100)) AS c FROM numbers(25)";
