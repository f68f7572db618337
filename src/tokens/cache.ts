import type { ClickHouseClient } from '@clickhouse/client';
import { findActiveToken, hashToken, type TokenIdentity } from './tokens.ts';

/**
 * Token lookups cached for TOKEN_CACHE_TTL_MS, hits and misses alike: a revocation takes effect
 * within that time, and a flood of unknown tokens costs one query per token per TTL. A minted
 * token is random, so it cannot have been cached as unknown before it existed.
 */
export const TOKEN_CACHE_TTL_MS = 5000;
const MAX_ENTRIES = 10_000;

interface Entry {
  identity: TokenIdentity | undefined;
  expires: number;
}

export class TokenCache {
  private readonly entries = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<TokenIdentity | undefined>>();

  constructor(private readonly ttlMs = TOKEN_CACHE_TTL_MS) {}

  async lookup(client: ClickHouseClient, token: string): Promise<TokenIdentity | undefined> {
    const hash = hashToken(token);
    const hit = this.entries.get(hash);
    if (hit && hit.expires > Date.now()) return hit.identity;
    let pending = this.inflight.get(hash);
    if (!pending) {
      pending = findActiveToken(client, hash).finally(() => this.inflight.delete(hash));
      this.inflight.set(hash, pending);
    }
    const identity = await pending;
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.delete(hash);
    this.entries.set(hash, { identity, expires: Date.now() + this.ttlMs });
    return identity;
  }
}
