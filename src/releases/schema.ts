import * as v from 'valibot';
import { maxChars } from '../chars.ts';

/** ISO 8601 date-time with an explicit offset (Z or ±hh:mm), as service-spec.md asks of released_at. */
export const isoWithOffset = v.pipe(
  v.string(),
  v.regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i, 'must be ISO 8601 with an offset, e.g. 2024-05-01T10:00:00Z'),
  v.check((s) => !Number.isNaN(Date.parse(s)), 'must be a real date'),
);

export const releaseBodySchema = v.object({
  name: v.pipe(v.string(), v.trim(), v.minLength(1, 'is required'), maxChars(255, 'is at most 255 characters')),
  version: v.pipe(v.string(), v.trim(), v.minLength(1, 'is required'), maxChars(255, 'is at most 255 characters')),
  description: v.optional(v.pipe(v.string(), maxChars(10_000, 'is at most 10000 characters')), ''),
  // Tags are labels: at most 100, each 1..255 characters (our choice; the spec is silent).
  tags: v.optional(v.pipe(v.array(v.pipe(v.string(), v.minLength(1), maxChars(255, 'is at most 255 characters'))), v.maxLength(100)), []),
  released_at: v.optional(isoWithOffset),
});
export type ReleaseBody = v.InferOutput<typeof releaseBodySchema>;

export const releaseListQuerySchema = v.object({
  from: v.optional(isoWithOffset),
  to: v.optional(isoWithOffset),
  limit: v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'must be an integer'), v.transform(Number), v.minValue(1), v.maxValue(1000)), '100'),
});
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
