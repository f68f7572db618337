/**
 * The route table: every endpoint is one plain object (method, path, scope, rate-limit class,
 * request and response schemas, handler) that a feature exports. The same objects drive the
 * router (server/app.ts) and the OpenAPI document (server/openapi.ts), so the two cannot drift,
 * and server/ never imports a feature: the composition root (src/routes.ts) hands it the tables.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ParsedUrlQuery } from 'node:querystring';
import type * as v from 'valibot';
import type { Scope, TokenIdentity } from '../tokens/tokens.ts';

/** Requests of one class share one per-token budget (config.rateLimits). */
export type RateClass = 'event' | 'event read' | 'release' | 'survey read' | 'survey write';

export type HttpMethod = 'GET' | 'POST' | 'SEARCH' | 'DELETE' | 'PUT' | 'PATCH';

export interface RouteInput<Body = unknown, Query = unknown> {
  /** The token's identity; present on every route with a scope. */
  auth: TokenIdentity;
  /** The body as the route's `body.parse` (or its schema) returned it. */
  body: Body;
  query: Query;
  /** Path parameters, decoded. */
  params: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** Aborted when the client goes away before the answer is sent. */
  signal: AbortSignal;
}

/** What a handler returns: a body (status = `success.status`), or a full answer. */
export interface RouteAnswer {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/**
 * The request body of a route: `Body` is what the handler receives, the schema's output unless a
 * custom `parse` returns something else (the events' encoded chunk).
 */
export interface BodySpec<S extends v.GenericSchema = v.GenericSchema, Body = v.InferOutput<S>> {
  /** The valibot schema: validates, types the handler, feeds OpenAPI. */
  schema: S;
  /** Custom parsing (richer messages than the schema's), defaults to parseOrThrow(schema). */
  parse?: (raw: unknown, auth: TokenIdentity) => Body;
  /** Limit after decompression, bytes. */
  limitBytes: number;
  /** A missing body reads as this value (survey reads: `{}`); without it, a missing body is a 400. */
  whenEmpty?: unknown;
  example?: unknown;
}

export interface ResponseSpec {
  description: string;
  /** A valibot schema, or a JSON Schema object. */
  schema?: v.GenericSchema | Record<string, unknown>;
  example?: unknown;
  headers?: Record<string, { description: string; schema: Record<string, unknown> }>;
  /** Other content types of the same answer (the export's CSV beside its NDJSON). */
  alternatives?: Record<string, { schema: Record<string, unknown>; example?: unknown }>;
}

export interface ParamSpec {
  description: string;
  schema: Record<string, unknown>;
  example?: unknown;
}

export interface Route<Body = any, Query = any> {
  /** Unique, stable, camelCase: the name generated clients give the call. */
  operationId: string;
  method: HttpMethod;
  /** Also served with these methods, same everything (SEARCH endpoints are also POST). */
  aliases?: readonly HttpMethod[];
  /** Koa path syntax (`/1.0/survey/:survey_ids/response`). */
  path: string;
  summary: string;
  description?: string;
  tag: string;
  /**
   * null: public (health, docs). A list: the token needs one of these scopes, and the handler
   * answers the parts each of the token's scopes allows (auth.scopes); the first is `x-scope`.
   */
  scope: Scope | readonly [Scope, ...Scope[]] | null;
  rateLimit?: RateClass;
  /**
   * Admission: throws (a 503) when the route cannot take a request now (the ingest queue full or
   * not moving). Runs after auth and the rate limit, before the body is read or parsed, so a
   * refusal costs no parsing.
   */
  admit?: () => void;
  body?: BodySpec<v.GenericSchema, Body>;
  /** Query-string schema (values arrive as strings). */
  query?: v.GenericSchema;
  params?: Record<string, ParamSpec>;
  success: ResponseSpec & { status: number; contentType?: string };
  /** Error statuses this route can answer (documented; the error body is the same for all). */
  errors: readonly number[];
  /**
   * Conditional answers for pollers: the 200 carries an ETag (of the body, `took` left out) and
   * `Cache-Control: private, max-age=<polling window>`; a request whose If-None-Match holds the
   * current tag gets 304 with no body (server/conditional.ts).
   */
  conditional?: true;
  handler(input: RouteInput<Body, Query>): Promise<unknown> | unknown;
}

/** A feature's contribution to the app: its routes and what must finish before the process exits. */
export interface Feature {
  routes: readonly Route[];
  /** Background work while the app serves (the rollup maintainer's heartbeat and takeover); started once listening. */
  start?(): void;
  /** Graceful shutdown: commit what is queued (the ingest group committer), hand over the rest (rollup recomputes). */
  drain?(): Promise<void>;
  /**
   * Waits until the background work queued so far is done (rollup recomputes), without closing
   * anything: for tests and tools that must see the steady state.
   */
  settle?(): Promise<void>;
}

/**
 * A route as its feature writes it: the handler's `body` and `query` are typed from the schemas
 * given beside it (or from `body.parse`), so no type is named twice and no handler casts.
 */
export type RouteDefinition<BodySchema extends v.GenericSchema, QuerySchema extends v.GenericSchema, Body, Query> =
  Omit<Route<Body, Query>, 'body' | 'query'> & { body?: BodySpec<BodySchema, Body>; query?: QuerySchema };

/**
 * Checks a route and types its handler from its schemas. Without a body schema the handler's
 * `body` is `undefined`; without a query schema its `query` is the query string as parsed. The
 * result's types are NoInfer: a route table (`Route[]`, untyped) around the call must not feed
 * `any` back into the handler's body.
 */
export function defineRoute<
  BodySchema extends v.GenericSchema = v.GenericSchema<undefined>,
  QuerySchema extends v.GenericSchema = v.GenericSchema<ParsedUrlQuery>,
  Body = v.InferOutput<BodySchema>,
  Query = v.InferOutput<QuerySchema>,
>(route: RouteDefinition<BodySchema, QuerySchema, Body, Query>): Route<NoInfer<Body>, NoInfer<Query>> {
  return route;
}

/** Wraps a handler's return value as a full answer. */
export function isRouteAnswer(x: unknown): x is { answer: RouteAnswer } {
  return typeof x === 'object' && x !== null && 'answer' in x && Object.keys(x).length === 1;
}

/** A handler that needs a status or headers returns `answer({ status, body, headers })`. */
export function answer(a: RouteAnswer): { answer: RouteAnswer } {
  return { answer: a };
}

/**
 * The media types an Accept header is matched against (server/app.ts): the answer's content type,
 * then its alternatives (an export's CSV). NDJSON is JSON text, a value a line: a client that asks
 * for application/json gets it too (listed last, so NDJSON and CSV are preferred at equal q). Each
 * with `charset=utf-8`, as the answers are: `Accept: application/json; charset=utf-8` matches it
 * (without the parameter, the negotiator refused that Accept), `charset=latin1` does not.
 */
export function negotiableTypes(route: Route): string[] {
  const types = [route.success.contentType ?? 'application/json', ...Object.keys(route.success.alternatives ?? {})];
  const all = types.includes('application/x-ndjson') && !types.includes('application/json') ? [...types, 'application/json'] : types;
  return all.map((t) => `${t}; charset=utf-8`);
}
