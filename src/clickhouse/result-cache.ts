import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import type { CompiledQuery } from './sql.ts';

/**
 * Dashboards send the same summary/aggregation every few seconds. Within POLL_WINDOW_MS of a run
 * that started, an identical query (same SQL, same parameters, same engine client) shares that
 * run's result; so every result is at most ~3 s old, and new data shows within 3 s.
 *
 * Two layers, because the embedded engine cannot cache: clickhouse-local creates its query result
 * cache with size 0 (LocalServer.cpp: `setQueryResultCache(0, 0, 0, 0)`; `query_cache` in the config
 * and SYSTEM RELOAD CONFIG do not change it), so there the in-process cache below does the work.
 * Against an external ClickHouse server (CLICKHOUSE_URL) the engine's query cache also serves other
 * service instances; its entries live `query_cache_ttl` seconds, so there a result can be up to
 * 2 × 3 s old when an in-process entry was filled from an engine entry.
 */
export const POLL_WINDOW_MS = 3000;

export const DASHBOARD_QUERY_CACHE_SETTINGS = Object.freeze({
  use_query_cache: 1,
  query_cache_ttl: POLL_WINDOW_MS / 1000,
  // The engine counts arrayJoin (the multi-valued group_by levels) as nondeterministic and would
  // refuse the query (error 704) under the default 'throw'; here it is deterministic, so keep it.
  query_cache_nondeterministic_function_handling: 'save',
} as const);

const MAX_CACHED_QUERIES = 1000;
/** Bigger results are not kept (an aggregation is at most ~1M rows in theory; a summary is 1 row). */
const MAX_CACHED_ROWS = 20_000;

interface CacheEntry {
  expires: number;
  rows: Promise<unknown[]>;
}
const polling = new WeakMap<ClickHouseClient, Map<string, CacheEntry>>();

/** Runs a compiled dashboard query through the polling cache, with `settings` plus the cache settings. */
export function runDashboardQuery<T>(client: ClickHouseClient, q: CompiledQuery, settings: ClickHouseSettings): Promise<T[]> {
  let cache = polling.get(client);
  if (!cache) polling.set(client, (cache = new Map()));
  const key = `${q.sql}\u0000${JSON.stringify(q.params)}`;
  const now = Date.now();
  const hit = cache.get(key);
  if (hit && hit.expires > now) return hit.rows as Promise<T[]>;

  const rows = client
    .query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow', clickhouse_settings: { ...settings, ...DASHBOARD_QUERY_CACHE_SETTINGS } })
    .then((rs) => rs.json<T>());
  const entry: CacheEntry = { expires: now + POLL_WINDOW_MS, rows };
  cache.delete(key);
  cache.set(key, entry);
  // Failures and big results are not kept.
  const map = cache;
  rows.then(
    (r) => { if (r.length > MAX_CACHED_ROWS && map.get(key) === entry) map.delete(key); },
    () => { if (map.get(key) === entry) map.delete(key); },
  );
  if (cache.size > MAX_CACHED_QUERIES) {
    for (const [k, e] of cache) if (e.expires <= now) cache.delete(k);
    // Still full: drop the oldest (a Map iterates in insertion order).
    for (const k of cache.keys()) {
      if (cache.size <= MAX_CACHED_QUERIES) break;
      cache.delete(k);
    }
  }
  return rows;
}
