import Koa from 'koa';
import Router from '@koa/router';
import { createServer, type Server } from 'node:http';
import { migrationsApplied } from '../clickhouse/migrations.ts';
import { createEventCommitter, eventRoutes } from '../events/routes.ts';
import { releaseRoutes } from '../releases/routes.ts';
import { responseRoutes } from '../responses/routes.ts';
import type { AppDeps, AppState } from './context.ts';
import { DomainError } from '../errors.ts';
import { errorMiddleware } from './errors.ts';
import { openApiDocument } from './openapi.ts';

export interface App {
  server: Server;
  listen(port: number, host: string): Promise<number>;
  /** Stops accepting, commits what is queued, answers the waiting requests, then closes. */
  close(): Promise<void>;
}

export function createApp(deps: AppDeps): App {
  const koa = new Koa<AppState>();
  // Behind a proxy, X-Forwarded-* are not trusted by default; nothing here depends on client IPs.
  const router = new Router<AppState>();
  const committer = createEventCommitter(deps);

  koa.use(requestLog(deps));
  koa.use(errorMiddleware((e) => deps.log.error(e)));

  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const engine = deps.db.isUp();
    const migrations = engine && (await migrationsApplied(deps.db));
    ctx.status = engine && migrations ? 200 : 503;
    ctx.body = { status: ctx.status === 200 ? 'ready' : 'not_ready', engine, migrations, mode: deps.db.mode() };
  });
  router.get('/openapi.json', (ctx) => {
    ctx.body = openApiDocument();
  });
  eventRoutes(router, deps, committer);
  releaseRoutes(router, deps);
  responseRoutes(router, deps);

  koa.use(router.routes());
  koa.use(methodNotAllowed(router));

  const server = createServer(koa.callback());
  // Slow-loris bounds: headers within 10 s, a whole request within 60 s.
  server.headersTimeout = 10_000;
  server.requestTimeout = 60_000;
  // Idle kept-alive connections stay open longer than the usual client and load-balancer idle
  // timeouts (60 s for most): the side that closes an idle connection first races a request the
  // other side is sending on it, and that request gets a reset, not an answer. Node's 5 s default
  // lost requests that way under the ingest bench's open loop.
  server.keepAliveTimeout = 65_000;

  return {
    server,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => resolve((server.address() as { port: number }).port));
      }),
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await committer.drain();
      // Requests still being answered finish; idle keep-alive sockets are closed.
      const force = setTimeout(() => server.closeAllConnections(), 10_000);
      await closed;
      clearTimeout(force);
    },
  };
}

/** One JSON line per request: method, route, status, duration, org. Never the token. */
function requestLog(deps: AppDeps): Koa.Middleware<AppState> {
  return async (ctx, next) => {
    const start = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      deps.log.info({
        msg: 'request',
        method: ctx.method,
        route: (ctx as unknown as { _matchedRoute?: string })._matchedRoute ?? null,
        path: ctx.path,
        status: ctx.status,
        duration_ms: Math.round(ms * 100) / 100,
        org: ctx.state.auth?.orgId ?? null,
      });
    }
  };
}

/**
 * A path that exists with another method: 405 naming the methods in `Allow` (OPTIONS answers 204
 * with the same header). Any other unmatched request, whatever its method (SEARCH on a path
 * without a SEARCH route, PROPFIND, a made-up verb), is a 404: never the router's 501, which
 * surfaced as a 500.
 */
function methodNotAllowed(router: Router<AppState>): Koa.Middleware<AppState> {
  return async (ctx, next) => {
    await next();
    if (ctx.status !== 404 || ctx.body !== undefined) return;
    const allowed = [...new Set(router.match(ctx.path, ctx.method).path.flatMap((layer) => layer.methods))];
    if (allowed.length === 0) return;
    const allow = allowed.join(', ');
    if (ctx.method === 'OPTIONS') {
      ctx.status = 204;
      ctx.set('Allow', allow);
      return;
    }
    throw new DomainError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}; allowed: ${allow}`, { headers: { Allow: allow } });
  };
}
