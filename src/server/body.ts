import type { Middleware } from 'koa';
import { createGunzip } from 'node:zlib';
import type { Readable } from 'node:stream';
import { HttpError, type Issue } from './errors.ts';

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
      throw new HttpError(415, 'unsupported_media_type', 'Request bodies must be JSON (Content-Type: application/json)');
    }
    const encoding = ctx.get('content-encoding').trim().toLowerCase();
    if (encoding !== '' && encoding !== 'identity' && encoding !== 'gzip') {
      throw new HttpError(415, 'unsupported_media_type', `Unsupported Content-Encoding "${encoding}": use gzip or none`);
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
    throw new HttpError(400, 'invalid_json', `The body is not valid JSON: ${(err as Error).message}`);
  }
  if (deeperThan(body, MAX_JSON_DEPTH)) {
    throw new HttpError(400, 'invalid_json', `The body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep`);
  }
  // A lone surrogate can only come from a \uD800-\uDFFF escape (invalid UTF-8 bytes decode to
  // U+FFFD): only then is the tree walked.
  if (SURROGATE_ESCAPE.test(text)) {
    const issues = loneSurrogates(body, '', []);
    if (issues.length > 0) {
      throw new HttpError(400, 'invalid_json', 'The body holds text that is not valid Unicode (an unpaired surrogate escape)', issues);
    }
  }
  return body;
}

/**
 * Nesting bound of a request body. JSON.parse takes any depth, but re-encoding a deeply nested value
 * (event properties to their JSON text, say) overflows the stack: 20,000 levels made a 500. No
 * record of this API nests beyond a handful of levels.
 */
export const MAX_JSON_DEPTH = 64;

/** True when `value` nests arrays/objects more than `limit` levels deep; never recurses past it. */
function deeperThan(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (limit === 0) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (deeperThan(item, limit - 1)) return true;
  } else {
    for (const key in value) if (deeperThan((value as Record<string, unknown>)[key], limit - 1)) return true;
  }
  return false;
}

const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Where the parsed body holds an unpaired UTF-16 surrogate (JSON allows the escape; Unicode text
 * cannot hold it). ClickHouse rejects such text, so letting it through would fail the whole
 * INSERT it lands in, other requests' rows included: it is a 400 here, naming each place.
 */
function loneSurrogates(value: unknown, path: string, issues: Issue[]): Issue[] {
  if (issues.length >= 20) return issues;
  if (typeof value === 'string') {
    if (LONE_SURROGATE.test(value)) issues.push({ path: path || '(body)', message: 'Contains an unpaired surrogate (\\uD800-\\uDFFF escape): not valid Unicode text' });
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => loneSurrogates(item, `${path}[${i}]`, issues));
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const at = path === '' ? key : `${path}.${key}`;
      if (LONE_SURROGATE.test(key)) issues.push({ path: at, message: 'The key contains an unpaired surrogate: not valid Unicode text' });
      loneSurrogates(item, at, issues);
    }
  }
  return issues;
}

const tooLarge = (limit: number) => new HttpError(413, 'payload_too_large', `The body is larger than ${limit} bytes (after decompression)`);

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
    stream.on('error', (err) => fail(gzip ? new HttpError(400, 'invalid_json', 'The body is not valid gzip') : err));
    stream.on('end', () => {
      if (done) return;
      done = true;
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}
