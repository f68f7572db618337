import type { Middleware } from 'koa';
import * as v from 'valibot';
import { clickHouseHttpError } from '../clickhouse/errors.ts';

/** One field-level problem; `path` points into the request body, e.g. `[3].event_name`. */
export interface Issue {
  path: string;
  message: string;
}

export type ErrorCode =
  | 'validation_error'
  | 'invalid_json'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'unavailable'
  | 'query_too_expensive'
  | 'internal_error';

/**
 * The one error type. Handlers and services throw it; the error middleware shapes the body.
 * `headers` carries e.g. Retry-After for 429/503.
 */
export class HttpError extends Error {
  readonly expose: boolean;
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly issues?: Issue[],
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
    this.expose = status < 500 || status === 503;
  }
}

export const badRequest = (message: string, issues?: Issue[]) =>
  new HttpError(400, 'validation_error', message, issues);

export const unavailable = (message: string, retryAfterSeconds = 1) =>
  new HttpError(503, 'unavailable', message, undefined, { 'Retry-After': String(retryAfterSeconds) });

/** Formats a valibot issue path as `[3].context.locale`, relative to the request body. */
export function issuePath(issue: v.BaseIssue<unknown>, prefix = ''): string {
  let out = prefix;
  for (const item of issue.path ?? []) {
    const key = item.key as unknown;
    out += typeof key === 'number' ? `[${key}]` : out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

export function toIssues(issues: readonly v.BaseIssue<unknown>[], prefix = ''): Issue[] {
  return issues.map((issue) => ({ path: issuePath(issue, prefix), message: issue.message }));
}

/** Parses `input` with `schema` or throws a 400 naming every failing field. */
export function parseOrThrow<S extends v.GenericSchema>(schema: S, input: unknown, message = 'Invalid request body'): v.InferOutput<S> {
  const result = v.safeParse(schema, input, { abortEarly: false });
  if (!result.success) throw badRequest(message, toIssues(result.issues));
  return result.output;
}

export interface ErrorBody {
  error: { status: number; code: ErrorCode; message: string; issues?: Issue[] };
}

export function errorBody(err: HttpError): ErrorBody {
  const body: ErrorBody['error'] = { status: err.status, code: err.code, message: err.message };
  if (err.issues && err.issues.length > 0) body.issues = err.issues;
  return { error: body };
}

/**
 * Shapes every error body. Anything that is not an HttpError is a bug: it becomes a 500 with no
 * internals in the body (the details go to the log only).
 */
export function errorMiddleware(log: (entry: Record<string, unknown>) => void): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new HttpError(404, 'not_found', `No route for ${ctx.method} ${ctx.path}`);
      }
    } catch (caught) {
      const err = normalize(caught);
      if (err.status >= 500 && err.status !== 503) {
        log({ level: 'error', msg: 'unhandled error', method: ctx.method, path: ctx.path, error: String((caught as Error)?.stack ?? caught) });
      }
      ctx.status = err.status;
      for (const [k, value] of Object.entries(err.headers)) ctx.set(k, value);
      ctx.body = errorBody(err);
    }
  };
}

function normalize(caught: unknown): HttpError {
  if (caught instanceof HttpError) return caught;
  const storage = clickHouseHttpError(caught);
  if (storage) return storage;
  const e = caught as { status?: number; expose?: boolean; message?: string; headers?: Record<string, string> };
  // Koa / @koa/router errors (405 from allowedMethods, 501) carry a status and `expose`.
  if (e && typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
    const code: ErrorCode = e.status === 405 ? 'method_not_allowed' : e.status === 404 ? 'not_found' : 'validation_error';
    return new HttpError(e.status, code, e.expose && e.message ? e.message : 'Bad request', undefined, e.headers ?? {});
  }
  return new HttpError(500, 'internal_error', 'Internal server error');
}
