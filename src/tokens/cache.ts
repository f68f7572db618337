import type { ClickHouseClient } from '@clickhouse/client';
import { LRUCache } from 'lru-cache';
import { unavailable } from '../errors.ts';
import { findActiveToken, hashToken, type TokenIdentity } from './tokens.ts';

/**
 * Token lookups cached for TOKEN_CACHE_TTL_MS (config; 5 s by default), hits and misses alike: a revocation takes effect
 * within that time, and an unknown token (a typo, a flood of made-up ones) costs one query per TTL,
 * not one per request. A minted token is random, so it cannot have been cached as unknown before
 * it existed.
 *
 * The lookup runs before any rate limit (the limit is per token, so the token must be known
 * first): concurrent lookups of one hash share one query, and at most MAX_CONCURRENT_LOOKUPS
 * queries run at once; past that a request gets a 503 at once, so a flood of distinct made-up
 * tokens cannot queue unbounded work on the engine.
 */
export const TOKEN_CACHE_TTL_MS = 5000;
const MAX_ENTRIES = 10_000;
/**
 * The default of TOKEN_MAX_CONCURRENT_LOOKUPS: a quarter of one engine client's socket pool (64),
 * so token checks never crowd out the queries.
 */
export const MAX_CONCURRENT_LOOKUPS = 16;

export interface TokenCacheStats {
  /** Queries sent to the engine. */
  queries: number;
  /** The most queries in flight at once. */
  maxInFlight: number;
  /** Lookups refused (503) because MAX_CONCURRENT_LOOKUPS queries were already running. */
  refused: number;
}

export class TokenCache {
  // lru-cache cannot hold `undefined`: an unknown token is cached as null.
  private readonly entries: LRUCache<string, { identity: TokenIdentity | null }> | undefined;
  private readonly inflight = new Map<string, Promise<TokenIdentity | undefined>>();
  readonly stats: TokenCacheStats = { queries: 0, maxInFlight: 0, refused: 0 };

  /** `ttlMs` 0: no caching (every lookup asks the engine), for one-shot checks. */
  constructor(ttlMs = TOKEN_CACHE_TTL_MS, private readonly maxConcurrent = MAX_CONCURRENT_LOOKUPS) {
    this.entries = ttlMs > 0 ? new LRUCache({ max: MAX_ENTRIES, ttl: ttlMs }) : undefined;
  }

  async lookup(client: ClickHouseClient, token: string): Promise<TokenIdentity | undefined> {
    const hash = hashToken(token);
    const hit = this.entries?.get(hash);
    if (hit) return hit.identity ?? undefined;
    let pending = this.inflight.get(hash);
    if (!pending) {
      if (this.inflight.size >= this.maxConcurrent) {
        this.stats.refused++;
        throw unavailable('Too many token checks at once; retry shortly', 1);
      }
      pending = this.query(client, hash).finally(() => this.inflight.delete(hash));
      this.inflight.set(hash, pending);
      this.stats.maxInFlight = Math.max(this.stats.maxInFlight, this.inflight.size);
    }
    return pending;
  }

  private async query(client: ClickHouseClient, hash: string): Promise<TokenIdentity | undefined> {
    this.stats.queries++;
    // A failed query (engine down) is not cached: the next request asks again.
    const identity = await findActiveToken(client, hash);
    this.entries?.set(hash, { identity: identity ?? null });
    return identity;
  }
}
