import Bottleneck from 'bottleneck';
import type { Middleware } from 'koa';
import type { AuthState } from './auth.ts';
import { DomainError } from '../errors.ts';
import type { SharedLimits } from './shared-limits.ts';

const WINDOW_MS = 1000;
/** A token's limiter is dropped after this long without a request (and made again on the next). */
const IDLE_MS = 60_000;

interface TokenWindow {
  limiter: Bottleneck;
  lastUsedAt: number;
}

/**
 * Per-token request rate limit: a bottleneck reservoir of `perSecond` requests, refilled to
 * `perSecond` once a second has passed (bottleneck checks on its 250 ms heartbeat, so a window
 * lasts 1 to 1.25 s). A request takes one from the reservoir; one that finds it empty is rejected
 * at once with 429 (never queued), so a rejected request does no work and stores nothing.
 * RateLimit-Reset and Retry-After are therefore 1 (second), the whole-second value of the window.
 *
 * The reservoir is taken with `incrementReservoir(-1)` (atomic in bottleneck's local datastore:
 * the decrement and the read happen in one step) rather than by scheduling a job: `schedule()`
 * passes every job of a limiter through one submission lock with a timer hop per step, which
 * caps one token's throughput on a busy event loop below its limit (bench/ingest/README.md,
 * "Figures behind the schema and the code"). See `takeOne` for how it is taken.
 */
export function rateLimit(name: string, perSecond: number, shared?: SharedLimits): Middleware<AuthState> {
  const windows = new Map<string, TokenWindow>();
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [key, w] of windows) {
      if (now - w.lastUsedAt > IDLE_MS) {
        windows.delete(key);
        void w.limiter.disconnect(false);
      }
    }
  }, IDLE_MS);
  sweep.unref();

  const windowOf = (key: string): TokenWindow => {
    let w = windows.get(key);
    if (!w) {
      const limiter = new Bottleneck({ reservoir: perSecond, reservoirRefreshAmount: perSecond, reservoirRefreshInterval: WINDOW_MS });
      w = { limiter, lastUsedAt: 0 };
      windows.set(key, w);
    }
    w.lastUsedAt = Date.now();
    return w;
  };

  return async (ctx, next) => {
    // Several instances (REDIS_URL): the token's one shared reservoir; this instance's own while
    // Redis is unreachable (shared-limits.ts).
    const key = ctx.state.auth.tokenId;
    let left = shared ? await shared.take(name, key, perSecond) : undefined;
    if (left == null) {
      const taken = takeOne(windowOf(key).limiter);
      left = (typeof taken === 'number' ? taken : await taken) ?? 0;
    }
    const headers = {
      'RateLimit-Limit': String(perSecond),
      'RateLimit-Remaining': String(Math.max(0, left)),
      'RateLimit-Reset': String(WINDOW_MS / 1000),
    };
    if (left < 0) {
      throw new DomainError('rate_limited', `Rate limit of ${perSecond} ${name} requests per second exceeded; retry after the reset`, {
        headers,
        retryAfterSeconds: WINDOW_MS / 1000,
      });
    }
    ctx.set(headers);
    await next();
  };
}

/** Bottleneck's local datastore, as its 2.x source has it: the reservoir is `storeOptions.reservoir`. */
interface LocalStore {
  storeOptions?: { reservoir?: number | null };
}

/**
 * Takes one from a limiter's reservoir: the reservoir left after it (negative: it was empty).
 * `incrementReservoir(-1)` on the local datastore is this decrement and read, reached through an
 * async function that first waits for a `setTimeout(0)` (LocalDatastore.yieldLoop: every request
 * paid a timer and ~1 ms), then drains the limiter's queue (always empty here: no job is ever
 * scheduled). Where the limiter's store is that local datastore, the same decrement and read are
 * done here in one synchronous step (atomic in one process, as there); any other store goes
 * through `incrementReservoir`. The refill stays bottleneck's (its heartbeat). A unit test holds
 * the two to the same reservoir (test/unit/rate-limit.test.ts).
 */
export function takeOne(limiter: Bottleneck): number | Promise<number | null> {
  const options = (limiter as unknown as { datastore?: string; _store?: LocalStore }).datastore === 'local' ? (limiter as unknown as { _store?: LocalStore })._store?.storeOptions : undefined;
  if (options && typeof options.reservoir === 'number') return (options.reservoir -= 1);
  return limiter.incrementReservoir(-1);
}
