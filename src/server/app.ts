import Koa from 'koa';
import Router from '@koa/router';
import { STATUS_CODES, type Server } from 'node:http';
import type { ParsedUrlQuery } from 'node:querystring';
import type { Duplex } from 'node:stream';
import { DomainError, invalid, parseOrThrow } from '../errors.ts';
import { requireScope } from './auth.ts';
import { jsonBody } from './body.ts';
import type { AppDeps, AppState } from './context.ts';
import { errorMiddleware } from './errors.ts';
import { createHttpServer } from './http-server.ts';
import { requestLog } from './request-log.ts';
import { opsFeature } from './ops.ts';
import { rateLimit } from './rate-limit.ts';
import { isRouteAnswer, negotiableTypes, type Feature, type RateClass, type Route } from './route.ts';
import { matchesIfNoneMatch, POLL_MAX_AGE_SECONDS, taggedJson } from './conditional.ts';

export interface App {
  server: Server;
  /** Client connections accepted at once (MAX_CONNECTIONS, or derived from the descriptor limit). */
  maxConnections: number;
  listen(port: number, host: string): Promise<number>;
  /**
   * Stops accepting, answers the requests in flight (closing their connections), then commits
   * what is still queued. `forced`: connections had to be cut after the grace period.
   */
  close(): Promise<{ forced: boolean }>;
}

/**
 * Builds the Koa app from the features' route tables (src/routes.ts composes them): every route
 * gets, in order, auth (its scope), its rate-limit class, the body reader with its limit, then
 * validation and its handler. server/ knows no feature; it only runs tables.
 */
export function createApp(deps: AppDeps, features: readonly Feature[]): App {
  const koa = new Koa<AppState>();
  // Behind a proxy, X-Forwarded-* are not trusted by default; nothing here depends on client IPs.
  const router = new Router<AppState>();
  const all = withOps(deps, features);
  const routes: Route[] = all.flatMap((f) => f.routes);

  koa.use(requestLog(deps.log));
  koa.use(errorMiddleware((e) => deps.log.error(e)));

  const limiters = rateLimiters(deps);
  for (const route of routes) {
    const chain: Koa.Middleware<AppState>[] = [];
    if (route.scope) chain.push(requireScope(route.scope, deps.db, deps.tokens) as Koa.Middleware<AppState>);
    if (route.rateLimit) chain.push(limiters[route.rateLimit] as Koa.Middleware<AppState>);
    if (route.scope) chain.push(negotiation(negotiableTypes(route)));
    if (route.params) chain.push(decodablePath);
    if (route.admit) chain.push(admission(route.admit));
    if (route.body) chain.push(jsonBody(route.body.limitBytes) as Koa.Middleware<AppState>);
    chain.push(runRoute(route));
    for (const method of [route.method, ...(route.aliases ?? [])]) router.register(route.path, [method], chain as never);
  }

  koa.use(router.routes());
  koa.use(methodNotAllowed(router));

  const http = createHttpServer(koa.callback(), { maxConnections: deps.config.maxConnections, log: deps.log });
  http.server.on('clientError', answerClientError);

  return {
    server: http.server,
    maxConnections: http.maxConnections,
    listen: async (port, host) => {
      const bound = await http.listen(port, host);
      for (const f of all) f.start?.();
      return bound;
    },
    close: async () => {
      // Requests in flight still submit their events: the queues close only once they are answered.
      const { forced } = await http.close();
      await Promise.all(all.map((f) => f.drain?.()));
      return { forced };
    },
  };
}

/** The features plus the routes every app has (health, readiness, the OpenAPI document, /docs). */
export function withOps(deps: AppDeps, features: readonly Feature[]): Feature[] {
  const all: Feature[] = [...features];
  all.push(opsFeature(deps, () => all.flatMap((f) => f.routes)));
  return all;
}

/** One limiter per class, shared by the routes of that class (survey reads share one budget). */
function rateLimiters(deps: AppDeps): Record<RateClass, Koa.Middleware> {
  const { rateLimits } = deps.config;
  const shared = deps.sharedLimits;
  return {
    event: rateLimit('event', rateLimits.eventsPerSecond, shared),
    'event read': rateLimit('event read', rateLimits.queriesPerSecond, shared),
    release: rateLimit('release', rateLimits.releasesPerSecond, shared),
    'survey read': rateLimit('query', rateLimits.queriesPerSecond, shared),
    'survey write': rateLimit('survey write', rateLimits.queriesPerSecond, shared),
  } as Record<RateClass, Koa.Middleware>;
}

/** The route's admission check, before its body is read (Route.admit). */
function admission(admit: () => void): Koa.Middleware<AppState> {
  return (_ctx, next) => {
    admit();
    return next();
  };
}

/**
 * Content negotiation of an API route (one with a scope): an Accept header that names none of the
 * media types its answer comes in is a 406 naming them, before the body is read. No Accept (or a
 * blank one) is the default; ranges (`application/*`, the any-type range) and q-values are read by
 * Koa's `ctx.accepts` (the `accepts` package, RFC 9110: `;q=0` refuses a type). Errors are JSON
 * whatever Accept says.
 */
function negotiation(types: readonly string[]): Koa.Middleware<AppState> {
  const bare = types.map((t) => t.split(';')[0]);
  const named = bare.length === 1 ? bare[0] : `${bare.slice(0, -1).join(', ')} or ${bare.at(-1)}`;
  return (ctx, next) => {
    if (ctx.get('accept').trim() !== '' && ctx.accepts([...types]) === false) {
      throw new DomainError('not_acceptable', `Not acceptable: this endpoint answers ${named}, and the Accept header names none of them`);
    }
    return next();
  };
}

/**
 * A path whose percent-encoding is not UTF-8 (`/1.0/user/%FF`, a cut `%E0%A4`) is a 400: the router
 * leaves such a parameter undecoded, and `DELETE /1.0/user/%FF` deleted the user whose alias is the
 * text "%FF" (whose own path is `/1.0/user/%25FF`).
 */
const decodablePath: Koa.Middleware<AppState> = (ctx, next) => {
  try {
    decodeURIComponent(ctx.path);
  } catch {
    throw invalid('The path is not valid percent-encoded UTF-8: encode each byte of a parameter\'s UTF-8 text as %XX (and % itself as %25)');
  }
  return next();
};

/**
 * The query string, read strictly like a body: a parameter given twice is a 400 (which one would
 * count?), and so is one the route does not read: a route with a query schema names its
 * parameters (strict, validation.ts queryObject); an API route without one takes none (its request
 * is the path and the body), so `?size=5` on a search is a 400, never silently ignored. The public
 * routes (health, docs) ignore the query string.
 */
function readQuery(route: Route, raw: ParsedUrlQuery): unknown {
  const repeated = Object.entries(raw).flatMap(([name, value]) => (Array.isArray(value) ? [{ path: name, message: `is given ${value.length} times; give it once` }] : []));
  if (repeated.length > 0) throw invalid('Invalid query string', repeated);
  if (route.query) return parseOrThrow(route.query, { ...raw }, 'Invalid query string');
  const unknown = Object.keys(raw);
  if (route.scope !== null && unknown.length > 0) {
    const where = route.body ? 'the JSON body' : 'the path';
    throw invalid('Invalid query string', unknown.map((name) => ({ path: name, message: `unknown query parameter "${name}"; this endpoint takes none (its request is ${where})` })));
  }
  return raw;
}

/**
 * Validation, then the handler; its value becomes the answer. A client gone before its body is
 * parsed (its connection closed while the body was read or queued) gets no parsing and no handler.
 */
function runRoute(route: Route): Koa.Middleware<AppState> {
  return async (ctx) => {
    const aborted = new AbortController();
    ctx.res.once('close', () => {
      if (!ctx.res.writableFinished) aborted.abort();
    });
    if (ctx.req.socket.destroyed) aborted.abort();
    let body: unknown;
    if (route.body) {
      if (aborted.signal.aborted) {
        ctx.state.body = undefined;
        throw invalid('The client closed the connection before its request was processed');
      }
      let raw = ctx.state.body;
      // No local keeps the raw body across the handler: an ingest request waits for its commit.
      ctx.state.body = undefined;
      if (raw === undefined && route.body.whenEmpty !== undefined) raw = route.body.whenEmpty;
      body = route.body.parse ? route.body.parse(raw, ctx.state.auth) : parseOrThrow(route.body.schema, raw);
    }
    const query = readQuery(route, ctx.query);
    const result = await route.handler({
      auth: ctx.state.auth,
      body,
      query,
      params: (ctx as unknown as { params?: Record<string, string> }).params ?? {},
      headers: ctx.headers,
      signal: aborted.signal,
    });
    const { status, body: out, headers } = isRouteAnswer(result) ? result.answer : { status: undefined, body: result, headers: undefined };
    ctx.status = status ?? route.success.status;
    if (headers) ctx.set(headers);
    if (route.conditional && ctx.status === 200 && out !== undefined) {
      const { json, etag } = taggedJson(out);
      ctx.set({ ETag: etag, 'Cache-Control': `private, max-age=${POLL_MAX_AGE_SECONDS}` });
      if (matchesIfNoneMatch(ctx.get('If-None-Match'), etag)) {
        ctx.status = 304;
        return;
      }
      ctx.type = 'application/json';
      ctx.body = json;
      return;
    }
    if (out !== undefined) ctx.body = out;
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

/**
 * Requests Node refuses before any route runs (headers over its limit: 431; unparsable HTTP: 400;
 * headers too slow: 408) get the service's one error body, not Node's empty answer.
 */
function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  const started = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
  if (err.code === 'ECONNRESET' || !socket.writable || started) {
    socket.destroy();
    return;
  }
  const [status, code, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'headers_too_large', 'Request headers too large']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request_timeout', 'The request headers did not arrive in time']
        : [400, 'bad_request', 'Malformed HTTP request'];
  const body = JSON.stringify({ error: { status, code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
