import type { Middleware } from 'koa';
import { clickHouseError } from '../clickhouse/errors.ts';
import { DomainError, type ErrorCode, type ErrorKind, type Issue } from '../errors.ts';

/** The one place that knows which HTTP status each domain error kind is. */
export const STATUS_OF: Record<ErrorKind, number> = {
  invalid: 400,
  too_expensive: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  not_acceptable: 406,
  conflict: 409,
  too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  headers_too_large: 431,
  unavailable: 503,
};

export interface ErrorBody {
  error: { status: number; code: ErrorCode; message: string; issues?: Issue[] };
}

/** An error as the client sees it: status, body and headers. */
export interface HttpAnswer {
  status: number;
  body: ErrorBody;
  headers: Record<string, string>;
}

export function toHttpAnswer(err: DomainError): HttpAnswer {
  const status = STATUS_OF[err.kind];
  const error: ErrorBody['error'] = { status, code: err.code, message: err.message };
  if (err.issues && err.issues.length > 0) error.issues = err.issues;
  const headers = { ...err.headers };
  if (err.retryAfterSeconds !== undefined) headers['Retry-After'] = String(err.retryAfterSeconds);
  return { status, body: { error }, headers };
}

const INTERNAL: HttpAnswer = {
  status: 500,
  body: { error: { status: 500, code: 'internal_error', message: 'Internal server error' } },
  headers: {},
};

/**
 * Shapes every error body. A DomainError (or a ClickHouse failure that maps to one) becomes its
 * status; anything else is a bug: a 500 with no internals in the body (the details go to the log).
 */
export function errorMiddleware(log: (entry: Record<string, unknown>) => void): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new DomainError('not_found', `No route for ${ctx.method} ${ctx.path}`);
      }
    } catch (caught) {
      const domain = toDomainError(caught);
      const answer = domain ? toHttpAnswer(domain) : INTERNAL;
      if (!domain) {
        log({ msg: 'unhandled error', method: ctx.method, path: ctx.path, error: String((caught as Error)?.stack ?? caught) });
      }
      ctx.status = answer.status;
      for (const [k, value] of Object.entries(answer.headers)) ctx.set(k, value);
      ctx.body = answer.body;
    }
  };
}

export function toDomainError(caught: unknown): DomainError | undefined {
  if (caught instanceof DomainError) return caught;
  return clickHouseError(caught);
}
