/**
 * Conditional GET semantics for the read routes that dashboards poll (Route.conditional): an
 * ETag computed from the answer, `Cache-Control: private, max-age=<s>` (how long the service
 * itself reuses an answer, the polling window), and 304 Not Modified when If-None-Match holds the
 * current tag. The tag is a hash of the body without `took` (the time the engine took, different
 * on every run of the same answer), so an unchanged answer keeps its tag across runs; the 304
 * saves the transfer and the client's work, and within the polling window the engine query too.
 */
import { createHash } from 'node:crypto';
import { POLL_WINDOW_MS } from '../query/request-cache.ts';

export const POLL_MAX_AGE_SECONDS = Math.round(POLL_WINDOW_MS / 1000);

/**
 * Data-Watermark: every write acknowledged before this instant is in the answer (the instant its
 * run started; a polled answer served from the polling window keeps the instant of its run).
 */
export const watermarkHeader = (ms: number) => ({ 'Data-Watermark': new Date(ms).toISOString() });

/** The headers of a conditional route's 200, for its OpenAPI description. */
export const POLLED_HEADERS = {
  ETag: { description: 'Tag of this answer (its body without `took`): send it as If-None-Match to get 304 while the answer is unchanged', schema: { type: 'string' } },
  'Cache-Control': { description: `\`private, max-age=${POLL_MAX_AGE_SECONDS}\`: the service reuses an answer this long (the polling window)`, schema: { type: 'string' } },
  'Data-Watermark': { description: 'ISO 8601 instant: every write acknowledged before it is included in this answer', schema: { type: 'string', format: 'date-time' } },
};

/**
 * The answer serialized once (it is sent as is) and its tag. `took` leads every answer that has
 * one (search, aggregation): it is cut out of what is hashed, not serialized a second time.
 */
export function taggedJson(body: unknown): { json: string; etag: string } {
  const json = JSON.stringify(body);
  const stable = json.replace(/^\{"took":-?\d+(?:\.\d+)?,?/, '{');
  return { json, etag: `"${createHash('sha256').update(stable).digest('base64url').slice(0, 27)}"` };
}

/** True when an If-None-Match header value names `etag` (or is `*`); weak tags compare equal (RFC 9110 weak comparison). */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  const bare = (t: string) => t.trim().replace(/^W\//, '');
  return header.split(',').some((t) => t.trim() === '*' || bare(t) === bare(etag));
}
