import type { Middleware } from 'koa';
import { createGunzip } from 'node:zlib';
import type { Readable } from 'node:stream';
import { HttpError } from './errors.ts';

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
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, 'invalid_json', `The body is not valid JSON: ${(err as Error).message}`);
  }
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
