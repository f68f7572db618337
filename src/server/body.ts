import type { Middleware } from 'koa';
import { channel } from 'node:diagnostics_channel';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { Unzip } from 'node:zlib';
import inflate from 'inflation';
import getRawBody from 'raw-body';
import { DomainError, invalid, invalidJson, type Issue } from '../errors.ts';

export interface BodyState {
  body: unknown;
}

/** The charset labels of UTF-8 (lower case): `utf-8`, and `utf8` that many clients write. */
const UTF8_LABELS = new Set(['utf-8', 'utf8']);

/**
 * The charset of a Content-Type: Koa's (the content-type package's strict parse), or, when the
 * header does not parse (`application/json; charset=latin1;`, a stray parameter), the first
 * `charset=` parameter in it: such a header gave none, and latin1 was read as UTF-8.
 */
const CHARSET_PARAM = /;\s*charset\s*=\s*"?([^";\s]*)/i;
const charsetOf = (parsed: string, header: string): string => parsed || (CHARSET_PARAM.exec(header)?.[1] ?? '');

const isJsonType = (type: string) => /^application\/([\w.+-]+\+)?json$/i.test(type);

/**
 * Reads a JSON request body into ctx.state.body (undefined for an empty or blank one).
 *
 * `limitBytes` bounds the body after gzip decompression; the bytes on the wire are bounded too
 * (compressedLimit): a gzip header may carry a file name or extra field of any length that
 * inflates to nothing; and the inflating per compressed byte (MAX_GZIP_RATIO): a gzip bomb is
 * refused long before the limit. All are counted while streaming. At a limit the inflater is
 * unpiped and destroyed and the socket is no longer read: the answer is 413 with
 * `Connection: close` (the rest of the body is never read nor inflated). A client that goes away mid-body stops the reading and the inflating too,
 * and the route's handler never runs. Not JSON, or a charset other than UTF-8: 415. Not gzip, not UTF-8, not JSON: 400
 * `invalid_json`.
 *
 * Interface: one factory per limit, `jsonBody(limitBytes)`, used per route.
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
    // JSON is UTF-8 (RFC 8259): a body labelled with another charset would be misread, not converted.
    const charset = charsetOf(ctx.request.charset, ctx.get('content-type'));
    if (charset !== '' && !UTF8_LABELS.has(charset.toLowerCase())) {
      throw new DomainError('unsupported_media_type', `Request bodies are JSON, which is UTF-8 (RFC 8259): charset "${charset}" is not supported; send UTF-8, with charset=utf-8 or no charset`);
    }
    const encoding = ctx.get('content-encoding').trim().toLowerCase();
    if (encoding !== '' && encoding !== 'identity' && encoding !== 'gzip') {
      throw new DomainError('unsupported_media_type', `Unsupported Content-Encoding "${encoding}": use gzip or none`);
    }
    const gzip = encoding === 'gzip';
    if (length > (gzip ? compressedLimit(limitBytes) : limitBytes)) throw tooLarge(limitBytes, gzip);
    // No local holds the text across `next()`: the handler may wait long (an ingest commit), and
    // the raw text would stay on the heap all that time.
    ctx.state.body = parseJson(decodeUtf8(await readBody(ctx.req, limitBytes, gzip)));
    await next();
  };
}

/**
 * Bound of a gzip body on the wire. Deflate never grows data by more than 5 bytes per 16 KiB
 * stored block (plus an 18-byte gzip frame), so any body that inflates within `limit` compresses
 * to less than this; more on the wire can only be padding (a huge header field, trailing junk).
 */
export const compressedLimit = (limit: number) => limit + Math.ceil(limit / 1024) + 1024;

/**
 * A gzip body inflates to at most GZIP_FREE_BYTES plus MAX_GZIP_RATIO bytes per compressed byte the
 * inflater has consumed: the work it costs is bounded by the bytes its client sent. Deflate
 * reaches about 1030:1 on a run of one byte (a bomb inflating to the 45 MB event limit fits in
 * 44 KB); such a body is refused after about GZIP_FREE_BYTES / (1 - 512/1030), 8 MiB. JSON the
 * contract allows gets high ratios too (every text one character repeated, each escaped as
 * \u0061): the highest, at gzip -9, needs about 430 bytes per compressed byte past the first
 * 4 MiB. A body over the bound gets 413; sent uncompressed it is taken (within the limit).
 */
export const MAX_GZIP_RATIO = 512;
export const GZIP_FREE_BYTES = 4 * 1024 * 1024;

/**
 * Reports of every body read (`BodyReadReport`), published once its reading is over and, for
 * gzip, once the inflater is closed, so that the bytes counted are final. For operators and
 * tests: a 413 must not keep inflating.
 */
export const bodyReadChannel = channel('tallyhouse:body-read');

export interface BodyReadReport {
  gzip: boolean;
  outcome: 'ok' | 'too_large' | 'aborted' | 'invalid_gzip' | 'error';
  /** Bytes read from the socket. */
  wireBytes: number;
  /** Bytes the inflater produced over its whole life (= wireBytes without gzip). */
  inflatedBytes: number;
}

const tooLarge = (limit: number, gzip: boolean) =>
  new DomainError('too_large', `The body is larger than ${limit} bytes${gzip ? ' (after decompression), or its gzip form is' : ''}`, {
    // The rest of the body is never read: the connection cannot carry another request.
    headers: { Connection: 'close' },
  });

const overRatio = () =>
  new DomainError('too_large', `The gzip body inflates more than ${MAX_GZIP_RATIO} times its compressed size (past its first ${GZIP_FREE_BYTES} bytes): send it uncompressed`, {
    headers: { Connection: 'close' },
  });

const aborted = () => invalid('The client closed the connection before the end of the body');

function readBody(req: IncomingMessage, limit: number, gzip: boolean): Promise<Buffer> {
  const wireLimit = gzip ? compressedLimit(limit) : limit;
  const source: Readable = gzip ? inflate(req, { encoding: 'gzip' }) : req;
  let wireBytes = 0;
  let inflatedBytes = 0;
  let failure: Error | undefined;
  const stop = (err: Error) => {
    failure ??= err;
    // Stop the socket first, so nothing more reaches the inflater, then drop the inflater.
    req.unpipe();
    req.pause();
    if (source !== req) source.destroy(err);
  };
  const onWire = (chunk: Buffer) => {
    wireBytes += chunk.length;
    if (wireBytes > wireLimit) stop(tooLarge(limit, gzip));
  };
  const onInflated = (chunk: Buffer) => {
    inflatedBytes += chunk.length;
    // bytesWritten: the compressed bytes the inflater has consumed so far (not those queued).
    if (inflatedBytes > GZIP_FREE_BYTES + MAX_GZIP_RATIO * (source as Unzip).bytesWritten) stop(overRatio());
  };
  // 'close' before the whole body arrived: the client went away (since Node 16, 'close' of a
  // complete request only means it was read).
  const onClose = () => {
    if (!req.complete) stop(aborted());
  };
  req.on('data', onWire);
  req.once('close', onClose);
  if (source !== req) {
    source.on('data', onInflated);
    // Errors after raw-body let go of the stream (our own destroy(err) at a limit) go nowhere else.
    source.on('error', () => {});
  }

  let outcome: BodyReadReport['outcome'] = 'ok';
  // The client may be gone already (it hung up while the token was being checked): then 'close'
  // has fired and no 'end' will come.
  if (req.destroyed && !req.complete) stop(aborted());
  const report = () => {
    req.off('data', onWire);
    req.off('close', onClose);
    if (bodyReadChannel.hasSubscribers) {
      bodyReadChannel.publish({ gzip, outcome, wireBytes, inflatedBytes: source === req ? wireBytes : inflatedBytes } satisfies BodyReadReport);
    }
  };

  const read = failure ? Promise.reject(failure) : getRawBody(source, { limit, length: gzip ? null : req.headers['content-length'] });
  return read.then(
    (buffer) => {
      if (source === req) report();
      else if (source.closed) report();
      else source.once('close', report);
      return buffer;
    },
    (err: unknown) => {
      const error = failure ?? toBodyError(err as getRawBody.RawBodyError, limit, gzip);
      outcome = error instanceof DomainError ? outcomeOf(error) : 'error';
      stop(error);
      if (source === req || source.closed) report();
      else source.once('close', report);
      throw error;
    },
  );
}

function outcomeOf(err: DomainError): BodyReadReport['outcome'] {
  if (err.kind === 'too_large') return 'too_large';
  if (err.code === 'invalid_json') return 'invalid_gzip';
  return 'aborted';
}

/** raw-body's and zlib's errors in the service's terms. */
function toBodyError(err: getRawBody.RawBodyError, limit: number, gzip: boolean): Error {
  if (err?.type === 'entity.too.large') return tooLarge(limit, gzip);
  if (err?.type === 'request.aborted') return aborted();
  if (err?.type === 'request.size.invalid') return invalid('The body is shorter or longer than its Content-Length');
  const zlibCode = (err as unknown as { code?: unknown })?.code;
  if (gzip && typeof zlibCode === 'string' && zlibCode.startsWith('Z_')) return invalidJson('The body is not valid gzip');
  return err;
}

/**
 * Fatal decoding: invalid UTF-8 (a stray byte, a truncated sequence, an encoded surrogate) is a
 * 400, not text silently holding U+FFFD. The BOM is kept (ignoreBOM), so JSON.parse refuses it.
 */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
function decodeUtf8(bytes: Buffer): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw invalidJson(`The body is not valid UTF-8 text (first bad byte at offset ${firstInvalidUtf8(bytes)})`);
  }
}

/** Offset of the first byte that does not start or continue a valid UTF-8 sequence. */
function firstInvalidUtf8(bytes: Buffer): number {
  // Only runs on error: a linear scan, each sequence length from its lead byte, checked whole.
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i];
    const n = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (n === 0 || i + n > bytes.length) return i;
    try {
      utf8.decode(bytes.subarray(i, i + n));
    } catch {
      return i;
    }
    i += n;
  }
  return bytes.length;
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
  // \uD800-\uDFFF escape, the only way a lone surrogate gets in (invalid UTF-8 bytes, encoded
  // surrogates included, were refused by decodeUtf8; JSON escapes are always a lower-case \u).
  // `includes` first: a plain substring search, where most bodies (no escape at all) stop.
  const issues = inspectTree(body, MAX_JSON_DEPTH, hasSurrogateEscape(text) ? '' : undefined, []);
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
const hasSurrogateEscape = (text: string) => text.includes('\\u') && SURROGATE_ESCAPE.test(text);
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
