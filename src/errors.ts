/**
 * Domain errors: what went wrong, in the service's own terms. They live below every feature and
 * know nothing of HTTP; src/server/errors.ts maps each kind to a status and the one error body.
 * Features throw these (never an HTTP error), so a store, a compiler or a CLI command can run
 * without a web server and still say precisely what failed.
 */
import * as v from 'valibot';

/** One field-level problem; `path` points into the request body, e.g. `[3].event_name`. */
export interface Issue {
  path: string;
  message: string;
}

/**
 * The closed set of failures. The error body's `code` is the kind's default code unless the error
 * names a more precise one (e.g. `invalid_json` for an `invalid` body, `idempotency_conflict`).
 */
export type ErrorKind =
  | 'invalid' // the request is wrong: fix it (400)
  | 'unauthenticated' // no valid credentials (401)
  | 'forbidden' // valid credentials, not allowed (403)
  | 'not_found' // no such resource or route (404)
  | 'method_not_allowed' // the path exists, the method does not (405)
  | 'not_acceptable' // the Accept header names no type the answer comes in (406)
  | 'conflict' // the request contradicts stored state (409)
  | 'too_large' // the body is over the limit (413)
  | 'unsupported_media_type' // not JSON, not UTF-8, or an unknown encoding (415)
  | 'headers_too_large' // (431)
  | 'rate_limited' // over the rate limit (429)
  | 'too_expensive' // the query asks for more than one request may use: narrow it (400)
  | 'unavailable'; // storage down, busy or shutting down: retry later (503)

export type ErrorCode =
  | 'validation_error'
  | 'invalid_json'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'not_acceptable'
  | 'conflict'
  | 'idempotency_conflict'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'headers_too_large'
  | 'rate_limited'
  | 'unavailable'
  | 'query_too_expensive'
  | 'internal_error';

export const DEFAULT_CODE: Record<ErrorKind, ErrorCode> = {
  invalid: 'validation_error',
  unauthenticated: 'unauthorized',
  forbidden: 'forbidden',
  not_found: 'not_found',
  method_not_allowed: 'method_not_allowed',
  not_acceptable: 'not_acceptable',
  conflict: 'conflict',
  too_large: 'payload_too_large',
  unsupported_media_type: 'unsupported_media_type',
  headers_too_large: 'headers_too_large',
  rate_limited: 'rate_limited',
  too_expensive: 'query_too_expensive',
  unavailable: 'unavailable',
};

export interface DomainErrorOptions {
  issues?: Issue[];
  code?: ErrorCode;
  /** For `unavailable` and `rate_limited`: when a retry may succeed. */
  retryAfterSeconds?: number;
  /** Extra response metadata the edge may send (e.g. RateLimit-* values, Allow). */
  headers?: Record<string, string>;
  cause?: unknown;
}

export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly issues?: Issue[];
  readonly retryAfterSeconds?: number;
  readonly headers: Record<string, string>;
  constructor(readonly kind: ErrorKind, message: string, opts: DomainErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'DomainError';
    this.code = opts.code ?? DEFAULT_CODE[kind];
    this.issues = opts.issues && opts.issues.length > 0 ? opts.issues : undefined;
    this.retryAfterSeconds = opts.retryAfterSeconds;
    this.headers = opts.headers ?? {};
  }
}

export const invalid = (message: string, issues?: Issue[]) => new DomainError('invalid', message, { issues });
export const invalidJson = (message: string, issues?: Issue[]) => new DomainError('invalid', message, { issues, code: 'invalid_json' });
export const notFound = (message: string) => new DomainError('not_found', message);
export const conflict = (message: string, code: ErrorCode = 'conflict') => new DomainError('conflict', message, { code });
export const tooExpensive = (message: string) => new DomainError('too_expensive', message);
export const unavailable = (message: string, retryAfterSeconds = 1, cause?: unknown) =>
  new DomainError('unavailable', message, { retryAfterSeconds, cause });

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

/** Parses `input` with `schema` or throws an `invalid` error naming every failing field. */
export function parseOrThrow<S extends v.GenericSchema>(schema: S, input: unknown, message = 'Invalid request body'): v.InferOutput<S> {
  const result = v.safeParse(schema, input, { abortEarly: false });
  if (!result.success) throw invalid(message, toIssues(result.issues));
  return result.output;
}
