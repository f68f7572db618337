/**
 * The request cache: every read of the query language (survey summary and aggregation, event
 * search and aggregation, funnels, retention, stickiness, the release impact's survey part) goes
 * through it. Its invariants, stated here once (docs/architecture.md, "The request cache"):
 *
 * 1. Whole requests. A read made of several queries (the pending marks, the histogram bounds, a
 *    count then a page) is cached as one answer under a key naming the request (its kind and its
 *    parts: selection, organization included, rules, page, options): caching its queries one by
 *    one could join a 3 s old count to a fresh page, an answer never true at any instant. Inside
 *    the computation `run` may also use the engine's query cache (the main query, whose SQL
 *    carries everything its answer depends on) and `fresh` never does (what decides the SQL of
 *    the next query: bounds, marks).
 * 2. Watermark = run start. An identical request within POLL_WINDOW_MS of a run's start shares
 *    that run's answer (concurrent ones share the run); `at`, the answer's Data-Watermark, is when
 *    that run started: every write acknowledged before then is in it.
 * 3. Deletion generation. Every cached answer is keyed by the deletion generation current when
 *    its read began, in process (the key) and in the engine (`query_cache_tag`). A deletion gives
 *    the generation a new value after its rows are gone and before its 202, so no read that starts
 *    after the 202, on any instance sharing the generation, is answered from data cached before
 *    it. Where it lives: Redis with REDIS_URL (one GET per read; unreachable: the read uses no
 *    cache; a deletion that cannot set it waits out both cache windows before its 202), otherwise
 *    this process (enough for one instance; `deletionGenerationWarning` says when it is not).
 *
 * Two layers, because the embedded engine cannot cache: clickhouse-local creates its query result
 * cache with size 0 (LocalServer.cpp: `setQueryResultCache(0, 0, 0, 0)`; `query_cache` in the config
 * and SYSTEM RELOAD CONFIG do not change it), so there the in-process cache does the work. Against
 * an external ClickHouse server (CLICKHOUSE_URL) the engine's query cache also serves other
 * service instances; its entries live `query_cache_ttl` seconds, so there a result can be up to
 * 2 × 3 s old when an in-process entry was filled from an engine entry.
 */
import { randomUUID } from 'node:crypto';
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { LRUCache } from 'lru-cache';
import type { CompiledQuery, RunQuery } from '../clickhouse/sql.ts';

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

// ---------------------------------------------------------------------------------------------
// The deletion generation (invariant 3)

/** Where the deletion generation lives. */
export interface DeletionGenerations {
  /** 'process' or 'redis'. */
  readonly where: string;
  /** The current generation; undefined when it cannot be known now (the read then uses no cache). */
  current(): Promise<string | undefined>;
  /** Gives the generation a new value; false when that could not be done. */
  renew(): Promise<boolean>;
}

/** In this process: a random prefix, so that no two processes (nor two starts of one) share a value in the engine's cache. */
function processGenerations(): DeletionGenerations {
  const prefix = randomUUID();
  let n = 0;
  let value = `${prefix}.${n}`;
  return {
    where: 'process',
    current: async () => value,
    renew: async () => {
      value = `${prefix}.${++n}`;
      return true;
    },
  };
}

let generations: DeletionGenerations = processGenerations();

/** Sets where the deletion generation lives (main.ts: Redis with REDIS_URL). */
export function useDeletionGenerations(g: DeletionGenerations): void {
  generations = g;
}

/**
 * The start-up warning when the generation is this process's but other instances may read the
 * same data (an external server or cluster, or an embedded engine another command started):
 * there a deletion is gone at once only from the reads of the instance that answered it.
 */
export function deletionGenerationWarning(engineMode: string, redis: boolean): string | undefined {
  if (redis || engineMode === 'embedded-owned') return undefined;
  return 'no REDIS_URL: a deletion is gone at once from this instance\'s cached reads only; other service instances on the same data can answer from their caches for up to 3 s (6 s against a ClickHouse server). Give every instance the same REDIS_URL';
}

// ---------------------------------------------------------------------------------------------
// The in-process cache

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
 * the run that started it (invariant 2). The key must name the whole request and the generation
 * (invariants 1 and 3): `cachedRequest` builds it.
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

/** A cache key for a request (its parts hold its scope, organization included; bigints as text) in a generation. */
function requestKey(kind: string, generation: string, parts: unknown): string {
  return `${kind}\u0000${generation}\u0000${JSON.stringify(parts, bigintAsText)}`;
}

// ---------------------------------------------------------------------------------------------
// The reads

export interface RequestRunners {
  /** Through the engine's query cache as well (the polling window's settings, tagged with the generation). */
  run: RunQuery;
  /** Never from a cache. */
  fresh: RunQuery;
}

function runnersIn(client: ClickHouseClient, settings: ClickHouseSettings, generation: string | undefined): RequestRunners {
  const fresh: RunQuery = (q) => queryRows(client, q, settings);
  if (generation === undefined) return { run: fresh, fresh };
  const cached = { ...settings, ...DASHBOARD_QUERY_CACHE_SETTINGS, query_cache_tag: generation };
  return { run: (q) => queryRows(client, q, cached), fresh };
}

/**
 * The runners of a read not cached as a whole (the release impact), with the read's settings
 * (READ_SETTINGS, RANKED_BUCKETS_SETTINGS...): `run` reads the generation before each query.
 */
export function requestRunners(client: ClickHouseClient, settings: ClickHouseSettings): RequestRunners {
  const fresh: RunQuery = (q) => queryRows(client, q, settings);
  return {
    run: async (q) => runnersIn(client, settings, await generations.current()).run(q),
    fresh,
  };
}

/**
 * The answer of `compute` for this request, computed once per polling window and deletion
 * generation; `at` is when the shared run started (its watermark). The generation is read first:
 * when it cannot be known (Redis unreachable), the request runs with no cache at all.
 */
export async function cachedRequest<T>(
  client: ClickHouseClient,
  kind: string,
  parts: unknown,
  settings: ClickHouseSettings,
  compute: (runners: RequestRunners) => Promise<T>,
): Promise<{ value: T; at: number }> {
  const generation = await generations.current();
  if (generation === undefined) {
    const at = Date.now();
    return { value: await compute(runnersIn(client, settings, undefined)), at };
  }
  const entry = pollingCachedEntry(client, requestKey(kind, generation, parts), async () => [await compute(runnersIn(client, settings, generation))]);
  const [value] = await entry.rows;
  return { value, at: entry.at };
}

// ---------------------------------------------------------------------------------------------
// Deletions

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * After a deletion's rows are gone, before its 202: a new generation, so that no read that starts
 * after this returns, on any instance sharing the generation, answers from data cached before.
 * This process's entries are dropped too (their memory). When the generation cannot be renewed
 * (Redis unreachable), this waits until every entry cached before the deletion has expired: an
 * in-process entry lives POLL_WINDOW_MS from its run's start, and that run may have been served by
 * an engine entry up to `query_cache_ttl` (as long) old, so twice the window.
 */
export async function forgetCachedAnswers(client: ClickHouseClient): Promise<void> {
  polling.get(client)?.clear();
  if (await generations.renew()) return;
  await sleep(2 * POLL_WINDOW_MS);
}

/** JSON.stringify throws on a bigint (histogram plans hold them); as text they still count. */
function bigintAsText(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? `${value}n` : value;
}
