import * as v from 'valibot';
import { maxChars } from '../chars.ts';
import { jsonObject, queryObject } from '../validation.ts';
import { ISO_8601_WITH_OFFSET_PATTERN, isStorable, parseIso, type Micros } from '../time/iso.ts';

/**
 * ISO 8601 date-time with an explicit offset (Z or ±hh[:mm]), as service-spec.md asks of
 * released_at, read by the service's one parser (src/time/iso.ts): a day its month does not have
 * (2023-02-29) is refused, never rolled over to March, and so is a year the DateTime64 column
 * cannot hold (it would be clamped silently). The output is the instant.
 */
export const isoWithOffset = v.pipe(
  v.string('must be an ISO 8601 date-time string with an offset, e.g. 2024-05-01T10:00:00Z'),
  v.regex(ISO_8601_WITH_OFFSET_PATTERN, 'must be an ISO 8601 date-time with an offset, on a real calendar day, e.g. 2024-05-01T10:00:00Z'),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const t = parseIso(dataset.value, { requireOffset: true });
    if (t && isStorable(t)) return t;
    addIssue({ message: 'must be between 1900-01-01 and 2299-12-31' });
    return NEVER;
  }),
);

/** Strict (validation.ts): a misspelt field (`release_at`, `tag`) is a 400 naming it, never a release stored without it. */
export const releaseBodySchema = jsonObject({
  name: v.pipe(v.string('must be a string'), v.trim(), v.minLength(1, 'is required'), maxChars(255, 'is at most 255 characters')),
  version: v.pipe(v.string('must be a string'), v.trim(), v.minLength(1, 'is required'), maxChars(255, 'is at most 255 characters')),
  description: v.optional(v.pipe(v.string('must be a string'), maxChars(10_000, 'is at most 10000 characters')), ''),
  // Tags are labels: at most 100, each 1..255 characters (our choice; the spec is silent).
  tags: v.optional(v.pipe(v.array(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), maxChars(255, 'is at most 255 characters')), 'must be an array of strings'), v.maxLength(100, 'has at most 100 tags')), []),
  released_at: v.optional(isoWithOffset),
}, 'the release body');
export type ReleaseBody = v.InferOutput<typeof releaseBodySchema>;

/**
 * `?from=&to=&limit=`, strict (an unknown parameter is a 400 naming it); `from` after `to` is a 400
 * too (an empty window is never what was meant), `from` = `to` is the instant.
 */
export const releaseListQuerySchema = v.pipe(
  queryObject({
    from: v.optional(isoWithOffset),
    to: v.optional(isoWithOffset),
    limit: v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'must be an integer'), v.transform(Number), v.minValue(1, 'must be 1 to 1000'), v.maxValue(1000, 'must be 1 to 1000')), '100'),
  }, 'GET /1.0/release'),
  v.forward(
    v.partialCheck([['from'], ['to']], ({ from, to }) => from === undefined || to === undefined || !isAfter(from, to), 'must not be after to'),
    ['from'],
  ),
);
const isAfter = (a: Micros, b: Micros) => a.seconds > b.seconds || (a.seconds === b.seconds && a.fraction > b.fraction);
export type ReleaseListQuery = v.InferOutput<typeof releaseListQuerySchema>;

export const releaseSchema = v.object({
  id: v.pipe(v.string(), v.uuid()),
  name: v.string(),
  description: v.string(),
  version: v.string(),
  tags: v.array(v.string()),
  released_at: v.string(),
  created_at: v.string(),
});
export type Release = v.InferOutput<typeof releaseSchema>;

/** The answer of GET /1.0/release. */
export const releaseListSchema = v.object({ releases: v.array(releaseSchema) });
