import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Logger } from '../log.ts';
import type { DeletionGenerations } from '../query/request-cache.ts';

/**
 * Per-token rate limits shared by every service instance (REDIS_URL): one counter per (class,
 * token, second of Redis' clock), incremented atomically by a Lua script, so however many
 * instances serve a token it gets one limit's worth of requests per window.
 *
 * Why not bottleneck's Redis datastore (the local limits are bottleneck reservoirs): it keeps one
 * limiter object per token with its own pub/sub channels, and a new reservoir's first refresh
 * happened on its first tick, so two instances admitted limit + 1 requests in a token's first
 * window (measured with the cluster suite). A window counter is one round trip and exact.
 *
 * Redis down or slow is never an outage: a take that fails or does not answer within
 * TAKE_TIMEOUT_MS falls back to the instance's own in-process limit (rate-limit.ts) for that
 * request, and while the once-a-second ping fails every request does, which the instance says in
 * its log and in /readyz.
 */
const TAKE_TIMEOUT_MS = 250;
const CHECK_INTERVAL_MS = 1000;

/** KEYS[1] the counter's prefix, ARGV[1] the limit: returns the requests left in this second (negative: over). */
const TAKE_SCRIPT = `
local now = redis.call('TIME')
local key = KEYS[1] .. ':' .. now[1]
local used = redis.call('INCR', key)
if used == 1 then redis.call('EXPIRE', key, 2) end
return tonumber(ARGV[1]) - used`;

export interface SharedLimits {
  /** Takes one from the (class, token) window: the requests left, negative when over; undefined when Redis failed. */
  take(name: string, key: string, perSecond: number): Promise<number | undefined>;
  state(): 'shared' | 'local (redis unreachable)';
  /**
   * The request cache's deletion generation (src/query/request-cache.ts), one key for every
   * instance: a read GETs it (one round trip, within TAKE_TIMEOUT_MS), a deletion SETs a new
   * random value. Random rather than INCR: a Redis that restarts empty never gives back a value an
   * instance cached under. While Redis is unreachable, or before the key exists, `current` is
   * undefined and the reads use no cache.
   */
  generations: DeletionGenerations;
  close(): Promise<void>;
}

const GENERATION_KEY = 'tallyhouse:cache-generation';

export function connectSharedLimits(url: string, log: Logger): SharedLimits {
  const client = new Redis(url, {
    // Fail fast instead of queueing commands while disconnected: the fallback takes over.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    retryStrategy: () => 1000,
  });
  // Reported through `up` below, once per transition, with the last connection error as the cause
  // (a failed command while disconnected only says that the stream is not writeable).
  let lastError: string | undefined;
  client.on('error', (err: Error) => void (lastError = String(err?.message ?? err)));
  client.on('ready', () => void (lastError = undefined));
  client.defineCommand('tallyhouseTake', { numberOfKeys: 1, lua: TAKE_SCRIPT });
  let up = false;
  // The first check's result is logged either way: Redis unreachable (or refusing the credentials
  // of REDIS_URL) from the start is said once, like a later loss.
  let checked = false;
  const setUp = (ok: boolean, why?: string) => {
    if (ok === up && checked) return;
    up = ok;
    checked = true;
    if (ok) log.info({ msg: 'redis reachable: rate limits shared by every instance' });
    else log.warn({ msg: 'redis unreachable: each instance applies the rate limits on its own until it is back', error: why });
  };
  const check = async () => {
    try {
      await withTimeout(client.ping(), TAKE_TIMEOUT_MS);
      setUp(true);
    } catch (err) {
      // Still connecting at start (no answer and no error yet): nothing to say until there is.
      if (!checked && lastError === undefined && client.status !== 'ready') return;
      setUp(false, lastError ?? String((err as Error)?.message ?? err));
    }
  };
  void check();
  const timer = setInterval(() => void check(), CHECK_INTERVAL_MS);
  timer.unref();

  const generations: DeletionGenerations = {
    where: 'redis',
    current: async () => {
      if (!up) return undefined;
      try {
        const value = await withTimeout(client.get(GENERATION_KEY), TAKE_TIMEOUT_MS);
        if (value !== null) return value;
        // The first read after Redis started empty: the next reads cache under a new value.
        void client.set(GENERATION_KEY, randomUUID(), 'NX').catch(() => {});
        return undefined;
      } catch {
        return undefined;
      }
    },
    renew: async () => {
      try {
        await withTimeout(client.set(GENERATION_KEY, randomUUID()), TAKE_TIMEOUT_MS);
        return true;
      } catch {
        return false;
      }
    },
  };

  return {
    generations,
    state: () => (up ? 'shared' : 'local (redis unreachable)'),
    take: async (name, key, perSecond) => {
      if (!up) return undefined;
      try {
        const run = (client as unknown as { tallyhouseTake(key: string, limit: number): Promise<number> }).tallyhouseTake(`tallyhouse:rl:${name}:${key}`, perSecond);
        return Number(await withTimeout(run, TAKE_TIMEOUT_MS));
      } catch {
        // This request falls back to the instance's own limit; the health check decides whether
        // Redis is down.
        return undefined;
      }
    },
    close: async () => {
      clearInterval(timer);
      client.disconnect();
    },
  };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    p.then(
      (x) => {
        clearTimeout(t);
        resolve(x);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}
