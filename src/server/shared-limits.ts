import Bottleneck from 'bottleneck';
import { Redis } from 'ioredis';
import type { Logger } from '../log.ts';

/**
 * Per-token rate limits shared by every service instance (REDIS_URL): one bottleneck reservoir
 * per (class, token) kept in Redis, so however many instances serve a token, it gets one limit's
 * worth of requests per window. Bottleneck's Redis datastore runs the reservoir arithmetic as Lua
 * scripts inside Redis (atomic across instances) and refreshes the reservoir on Redis' clock.
 *
 * Redis down or slow is never an outage: a take that fails or does not answer within
 * TAKE_TIMEOUT_MS falls back to the instance's own in-process limit (rate-limit.ts) for that
 * request, and while the once-a-second ping fails every request does, which the instance says in
 * its log and in /readyz.
 */
const TAKE_TIMEOUT_MS = 250;
const CHECK_INTERVAL_MS = 1000;
const IDLE_MS = 60_000;
const WINDOW_MS = 1000;

export interface SharedLimits {
  /** Whether the shared store answered its last check (false: instances use their own limits). */
  healthy(): boolean;
  /** Takes one from the (class, token) reservoir: the requests left, negative when over; undefined when Redis failed. */
  take(name: string, key: string, perSecond: number): Promise<number | undefined>;
  state(): 'shared' | 'local (redis unreachable)';
  close(): Promise<void>;
}

export function connectSharedLimits(url: string, log: Logger): SharedLimits {
  const client = new Redis(url, {
    // Fail fast instead of queueing commands while disconnected: the fallback takes over.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    lazyConnect: false,
    retryStrategy: () => 1000,
  });
  client.on('error', () => {}); // reported through `up` below, once per transition
  const connection = new Bottleneck.IORedisConnection({ client, Redis } as never);
  connection.on('error', () => {});
  let up = false;
  const setUp = (ok: boolean, why?: string) => {
    if (ok === up) return;
    up = ok;
    if (ok) log.info({ msg: 'redis reachable: rate limits shared by every instance' });
    else log.warn({ msg: 'redis unreachable: each instance applies the rate limits on its own until it is back', error: why });
  };
  const check = async () => {
    try {
      await withTimeout(client.ping(), TAKE_TIMEOUT_MS);
      setUp(true);
    } catch (err) {
      setUp(false, String((err as Error)?.message ?? err));
    }
  };
  void check();
  const timer = setInterval(() => void check(), CHECK_INTERVAL_MS);
  timer.unref();

  const limiters = new Map<string, { limiter: Bottleneck; lastUsedAt: number }>();
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [k, l] of limiters) {
      if (now - l.lastUsedAt > IDLE_MS) {
        limiters.delete(k);
        void l.limiter.disconnect(false).catch(() => {});
      }
    }
  }, IDLE_MS);
  sweep.unref();

  const limiterOf = (name: string, key: string, perSecond: number) => {
    const id = `tallyhouse:rl:${name}:${perSecond}:${key}`;
    let l = limiters.get(id);
    if (!l) {
      const limiter = new Bottleneck({
        id,
        connection,
        // Instances join the same reservoir: never reset it when one of them starts.
        clearDatastore: false,
        reservoir: perSecond,
        reservoirRefreshAmount: perSecond,
        reservoirRefreshInterval: WINDOW_MS,
        timeout: 2 * IDLE_MS,
      });
      limiter.on('error', () => {});
      l = { limiter, lastUsedAt: 0 };
      limiters.set(id, l);
    }
    l.lastUsedAt = Date.now();
    return l.limiter;
  };

  return {
    healthy: () => up,
    state: () => (up ? 'shared' : 'local (redis unreachable)'),
    take: async (name, key, perSecond) => {
      if (!up) return undefined;
      try {
        const left = await withTimeout(limiterOf(name, key, perSecond).incrementReservoir(-1), TAKE_TIMEOUT_MS);
        return left ?? undefined;
      } catch {
        // This request falls back to the instance's own limit; the health check decides whether
        // Redis is down (a new limiter's first call can be slow while it registers in Redis).
        return undefined;
      }
    },
    close: async () => {
      clearInterval(timer);
      clearInterval(sweep);
      await Promise.allSettled([...limiters.values()].map((l) => l.limiter.disconnect(false)));
      connection.disconnect(false);
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
