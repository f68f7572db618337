import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import { requestContext, type Logger } from '../log.ts';
import type { AppState } from './context.ts';

export const REQUEST_ID_HEADER = 'X-Request-Id';

/**
 * An incoming id is kept when it is short and made of characters that cannot break a log line or a
 * header (a proxy's or a client's trace id: UUIDs, hex, base64url); anything else is replaced.
 */
const VALID_REQUEST_ID = /^[A-Za-z0-9._:+=\/@-]{1,128}$/;

/**
 * Every request gets an id: the caller's `X-Request-Id` when valid, else a new UUID. It is echoed
 * in the response header, and every log line written while serving the request carries it. Then
 * one line per request: method, route, status, duration, org. Never the token.
 */
export function requestLog(log: Logger): Koa.Middleware<AppState> {
  return async (ctx, next) => {
    const incoming = ctx.get(REQUEST_ID_HEADER);
    const requestId = VALID_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    ctx.set(REQUEST_ID_HEADER, requestId);
    const start = process.hrtime.bigint();
    await requestContext.run({ requestId }, async () => {
      try {
        await next();
      } finally {
        const ms = Number(process.hrtime.bigint() - start) / 1e6;
        log.info({
          msg: 'request',
          method: ctx.method,
          route: (ctx as unknown as { _matchedRoute?: string })._matchedRoute ?? null,
          path: ctx.path,
          status: ctx.status,
          duration_ms: Math.round(ms * 100) / 100,
          org: ctx.state.auth?.orgId ?? null,
        });
      }
    });
  };
}
