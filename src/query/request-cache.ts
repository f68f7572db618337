/**
 * Caching of whole requests, for every read of the query language (survey summary and
 * aggregation, event search and aggregation). A read made of several queries (the histogram
 * bounds, the pending marks, a count then a page) is cached as one answer under a key naming the
 * request (its kind and its parts: selection, organization included, rules, page, options), shared by
 * every identical request within the polling window (src/clickhouse/result-cache.ts): caching its
 * queries one by one could join a 3 s old count to a fresh page, an answer never true at any instant.
 *
 * Inside the computation, `run` may also use the engine's query cache (the main query, whose SQL
 * carries everything its answer depends on) and `fresh` never does (what decides the SQL of the
 * next query: bounds, marks).
 */
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { DASHBOARD_QUERY_CACHE_SETTINGS, pollingCachedEntry, queryRows, requestKey } from '../clickhouse/result-cache.ts';
import type { RunQuery } from '../clickhouse/sql.ts';

export interface RequestRunners {
  /** Through the engine's query cache as well (the polling window's settings). */
  run: RunQuery;
  /** Never from a cache. */
  fresh: RunQuery;
}

/** The runners of one request, with the read's settings (READ_SETTINGS, RANKED_BUCKETS_SETTINGS...). */
export function requestRunners(client: ClickHouseClient, settings: ClickHouseSettings): RequestRunners {
  return {
    run: (q) => queryRows(client, q, { ...settings, ...DASHBOARD_QUERY_CACHE_SETTINGS }),
    fresh: (q) => queryRows(client, q, settings),
  };
}

/**
 * The answer of `compute` for this request, computed once per polling window; `at` is when the
 * shared run started (every write acknowledged before then is in the answer: its watermark).
 */
export async function cachedRequest<T>(
  client: ClickHouseClient,
  kind: string,
  parts: unknown,
  settings: ClickHouseSettings,
  compute: (runners: RequestRunners) => Promise<T>,
): Promise<{ value: T; at: number }> {
  const entry = pollingCachedEntry(client, requestKey(kind, parts), async () => [await compute(requestRunners(client, settings))]);
  const [value] = await entry.rows;
  return { value, at: entry.at };
}
