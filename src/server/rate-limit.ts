import Bottleneck from 'bottleneck';
import type { Middleware } from 'koa';
import type { AuthState } from './auth.ts';
import { HttpError } from './errors.ts';

/**
 * Per-token request rate limit: a bottleneck reservoir of `perSecond` requests refilled every
 * second. A request that finds the reservoir empty is rejected at once with 429 (never queued:
 * highWater 0 + OVERFLOW drops a job that cannot start now), so a rejected request does no work
 * and stores nothing.
 */
export function rateLimit(name: string, perSecond: number): Middleware<AuthState> {
  const WINDOW_MS = 1000;
  const windowStart = new Map<string, number>();
  const group = new Bottleneck.Group({
    reservoir: perSecond,
    reservoirRefreshAmount: perSecond,
    reservoirRefreshInterval: WINDOW_MS,
    highWater: 0,
    strategy: Bottleneck.strategy.OVERFLOW,
    timeout: 60_000, // idle limiters are dropped after a minute
  });
  group.on('created', (_limiter, key) => windowStart.set(key, Date.now()));

  const resetSeconds = (key: string) => {
    const start = windowStart.get(key) ?? Date.now();
    const elapsed = (Date.now() - start) % WINDOW_MS;
    return Math.max(1, Math.ceil((WINDOW_MS - elapsed) / 1000));
  };

  return async (ctx, next) => {
    const key = ctx.state.auth.tokenId;
    const limiter = group.key(key);
    let admitted = false;
    try {
      await limiter.schedule(async () => {
        admitted = true;
      });
    } catch {
      admitted = false;
    }
    const remaining = Math.max(0, (await limiter.currentReservoir()) ?? 0);
    const headers = {
      'RateLimit-Limit': String(perSecond),
      'RateLimit-Remaining': String(remaining),
      'RateLimit-Reset': String(resetSeconds(key)),
    };
    if (!admitted) {
      throw new HttpError(429, 'rate_limited', `Rate limit of ${perSecond} ${name} requests per second exceeded; retry after the reset`, undefined, {
        ...headers,
        'Retry-After': headers['RateLimit-Reset'],
      });
    }
    ctx.set(headers);
    await next();
  };
}
