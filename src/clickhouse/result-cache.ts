import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { LRUCache } from 'lru-cache';
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
/** Bigger results are not kept (an aggregation is at most 65,537 rows; a summary is 1 row). */
const MAX_CACHED_ROWS = 20_000;
/** Memory the cached results of one client may hold, by the estimate below. */
export const MAX_CACHED_BYTES = 64 * 1024 * 1024;
/** Charged to a result still running: its size is known once it arrives. */
const PENDING_SIZE = 1024;

/** A new Entry object per size: lru-cache updates an entry's size only when its value changes. */
interface Entry {
  rows: Promise<unknown[]>;
  /** When its run started (ms): every write acknowledged before then is in it. */
  at: number;
}
const polling = new WeakMap<ClickHouseClient, LRUCache<string, Entry>>();

function cacheOf(client: ClickHouseClient): LRUCache<string, Entry> {
  let cache = polling.get(client);
  if (!cache) {
    // Entries expire POLL_WINDOW_MS after their run started, and are dropped then (ttlAutopurge),
    // not when the cache next fills up.
    cache = new LRUCache<string, Entry>({ max: MAX_CACHED_QUERIES, ttl: POLL_WINDOW_MS, ttlAutopurge: true, maxSize: MAX_CACHED_BYTES });
    polling.set(client, cache);
  }
  return cache;
}

/** The cached results of `client`: how many, and their estimated bytes. */
export function pollingCacheStats(client: ClickHouseClient): { entries: number; bytes: number } {
  const cache = polling.get(client);
  return { entries: cache?.size ?? 0, bytes: cache?.calculatedSize ?? 0 };
}

/**
 * Bytes a result holds on the heap, estimated from its first row's JSON (twice: UTF-16 strings
 * and object overhead). Rows of one query have the same columns, so the first row is typical.
 */
function estimateBytes(rows: unknown[]): number {
  if (rows.length === 0) return 64;
  return 64 + rows.length * 2 * JSON.stringify(rows[0], bigintAsText).length;
}

/** Runs a compiled query, without any cache: its rows. */
export async function queryRows<T>(client: ClickHouseClient, q: CompiledQuery, settings: ClickHouseSettings): Promise<T[]> {
  const rs = await client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow', clickhouse_settings: settings });
  return rs.json<T>();
}

/**
 * The result of `compute` for `key`, shared by every call with that key within POLL_WINDOW_MS of
 * the run that started it. A read made of several queries (the pending marks, the histogram
 * bounds, then the query they shape) is cached as a whole under a key naming the request: caching
 * its queries one by one could join a 3 s old pending list to fresh rollup rows, an answer that
 * was never true at any instant. `at`: the instant the shared run started (the answer's data
 * watermark).
 */
export function pollingCachedEntry<T>(client: ClickHouseClient, key: string, compute: () => Promise<T[]>): { rows: Promise<T[]>; at: number } {
  const cache = cacheOf(client);
  const hit = cache.get(key);
  if (hit) return hit as { rows: Promise<T[]>; at: number };

  const at = Date.now();
  const rows = compute();
  const entry = { rows, at };
  cache.set(key, entry, { size: PENDING_SIZE });
  // Failures and big results are not kept; a kept result is charged its size, its expiry unchanged.
  rows.then(
    (r) => {
      if (cache.peek(key)?.rows !== rows) return;
      if (r.length > MAX_CACHED_ROWS) cache.delete(key);
      else cache.set(key, { rows, at }, { size: estimateBytes(r), noUpdateTTL: true });
    },
    () => {
      if (cache.peek(key)?.rows === rows) cache.delete(key);
    },
  );
  return entry;
}

/** A cache key for a request (its parts hold its scope, organization included; bigints as text). */
export function requestKey(kind: string, parts: unknown): string {
  return `${kind}\u0000${JSON.stringify(parts, bigintAsText)}`;
}

/**
 * After a deletion: every cached answer of this client is dropped, so deleted data vanishes at
 * once from this process's answers rather than after the polling window. Only this process's:
 * another service process keeps its entries until their window ends (up to 3 s after the
 * deletion's answer; docs/architecture.md, "The request cache"). Deletions are rare; the cache
 * refills in 3 s.
 */
export function forgetCachedAnswers(client: ClickHouseClient): void {
  polling.get(client)?.clear();
}

/** JSON.stringify throws on a bigint (histogram plans hold them); as text they still count. */
function bigintAsText(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? `${value}n` : value;
}
