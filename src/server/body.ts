import type { Middleware } from 'koa';
import { createGunzip } from 'node:zlib';
import type { Readable } from 'node:stream';
import { DomainError, invalidJson, type Issue } from '../errors.ts';

export interface BodyState {
  body: unknown;
}

const isJsonType = (type: string) => /^application\/([\w.+-]+\+)?json$/i.test(type);

/**
 * Reads a JSON request body into ctx.state.body. The limit applies to the bytes after gzip
 * decompression (a small gzip body cannot expand past it), counted while streaming so that an
 * oversized body is cut off early: 413. Not JSON: 415. Unparsable: 400. Empty: undefined.
 */
export function jsonBody(limitBytes: number): Middleware<BodyState> {
  return async (ctx, next) => {
    const length = Number(ctx.get('content-length') || 0);
    const hasBody = length > 0 || ctx.get('transfer-encoding') !== '';
    if (!hasBody) {
      ctx.state.body = undefined;
      return next();
    }
    const type = (ctx.get('content-type').split(';')[0] ?? '').trim();
    if (!isJsonType(type)) {
      throw new DomainError('unsupported_media_type', 'Request bodies must be JSON (Content-Type: application/json)');
    }
    const encoding = ctx.get('content-encoding').trim().toLowerCase();
    if (encoding !== '' && encoding !== 'identity' && encoding !== 'gzip') {
      throw new DomainError('unsupported_media_type', `Unsupported Content-Encoding "${encoding}": use gzip or none`);
    }
    if (encoding !== 'gzip' && length > limitBytes) throw tooLarge(limitBytes);
    // No local holds the text across `next()`: the handler may wait long (an ingest commit), and
    // the raw text would stay on the heap all that time.
    ctx.state.body = parseJson(await readLimited(encoding === 'gzip' ? ctx.req.pipe(createGunzip()) : ctx.req, limitBytes, encoding === 'gzip'));
    await next();
  };
}

/** The parsed body; undefined for an empty (or blank) one. */
function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw invalidJson(`The body is not valid JSON: ${(err as Error).message}`);
  }
  // One walk over the tree: the nesting bound always; the text check only when the raw text has a
  // \uD800-\uDFFF escape, the only way a lone surrogate gets in (invalid UTF-8 bytes decode to
  // U+FFFD; JSON escapes are always a lower-case \u).
  const issues = inspectTree(body, MAX_JSON_DEPTH, SURROGATE_ESCAPE.test(text) ? '' : undefined, []);
  if (issues.length > 0) {
    throw invalidJson('The body holds text that is not valid Unicode (an unpaired surrogate escape)', issues);
  }
  return body;
}

/**
 * Nesting bound of a request body. JSON.parse takes any depth, but re-encoding a deeply nested value
 * (event properties to their JSON text, say) overflows the stack: 20,000 levels made a 500. No
 * record of this API nests beyond a handful of levels.
 */
export const MAX_JSON_DEPTH = 64;

const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
const MAX_TEXT_ISSUES = 20;

/**
 * Throws a 400 when `value` nests arrays/objects more than `depthLeft` levels (never recursing past
 * that). With a `path` (text check on), also collects where a string or a key holds an unpaired
 * UTF-16 surrogate: JSON allows the escape, Unicode text cannot hold it, and ClickHouse refuses
 * such text, which would fail the whole INSERT it lands in, other requests' rows included.
 */
function inspectTree(value: unknown, depthLeft: number, path: string | undefined, issues: Issue[]): Issue[] {
  if (typeof value === 'string') {
    if (path !== undefined && issues.length < MAX_TEXT_ISSUES && !isWellFormed(value)) {
      issues.push({ path: path || '(body)', message: 'Contains an unpaired surrogate (\\uD800-\\uDFFF escape): not valid Unicode text' });
    }
    return issues;
  }
  if (value === null || typeof value !== 'object') return issues;
  if (depthLeft === 0) throw invalidJson(`The body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep`);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) inspectTree(value[i], depthLeft - 1, path === undefined ? undefined : `${path}[${i}]`, issues);
  } else {
    for (const key in value) {
      const at = path === undefined ? undefined : path === '' ? key : `${path}.${key}`;
      if (at !== undefined && issues.length < MAX_TEXT_ISSUES && !isWellFormed(key)) {
        issues.push({ path: at, message: 'The key contains an unpaired surrogate: not valid Unicode text' });
      }
      inspectTree((value as Record<string, unknown>)[key], depthLeft - 1, at, issues);
    }
  }
  return issues;
}

/** String.prototype.isWellFormed (ES2024; Node 20 has it, the ES2022 lib types do not). */
const isWellFormed = (s: string): boolean => (s as string & { isWellFormed(): boolean }).isWellFormed();

const tooLarge = (limit: number) => new DomainError('too_large', `The body is larger than ${limit} bytes (after decompression)`);

function readLimited(stream: Readable, limit: number, gzip: boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const fail = (err: Error) => {
      if (done) return;
      done = true;
      stream.removeAllListeners('data');
      stream.resume(); // drain so the socket can answer
      reject(err);
    };
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return fail(tooLarge(limit));
      chunks.push(chunk);
    });
    stream.on('error', (err) => fail(gzip ? invalidJson('The body is not valid gzip') : err));
    stream.on('end', () => {
      if (done) return;
      done = true;
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}
