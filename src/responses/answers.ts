/**
 * The answers of the survey-response endpoints, as valibot schemas: the route table hands them to
 * the OpenAPI document (response schemas of generated clients) and the integration tests check
 * every live answer against them, so they stay what the service really returns.
 */
import { addGlobalDefs } from '@valibot/to-json-schema';
import * as v from 'valibot';
import { COMPLETION_VALUES } from './filters.ts';
import { responseRecordSchema } from './record-schema.ts';
import { metricsResultSchema } from './metrics.ts';
import { releaseMarkSchema } from '../releases/marks.ts';

const count = v.pipe(v.number(), v.integer(), v.minValue(0));
const took = v.pipe(v.number(), v.integer(), v.minValue(0));
const counts = v.record(v.string(), count);
const ratio = v.nullable(v.number());

/** POST /1.0/survey/response: records stored (upserted). */
export const writeResultSchema = v.object({ count });

/** The search answer: the total in selection and the requested page, newest created_at first. */
export const searchResultSchema = v.object({
  took,
  hits: v.object({ total: v.object({ value: count }), responses: v.array(responseRecordSchema) }),
  next_cursor: v.optional(v.pipe(v.string(), v.description('Send it as `cursor` with the same survey ids, filters_bool, filters and range for the next page (keyset: no duplicate, no gap while responses arrive); absent on the last page'))),
});

/** The summary answer (summary.ts `Summary`). */
export const summarySchema = v.object({
  ces_avg: ratio,
  ces_details: counts,
  csat_avg: ratio,
  csat_details: counts,
  nps_details: counts,
  nps_groups: v.object({ detractor: count, neutral: count, promotor: count, total: count }),
  nps_score: ratio,
  completion: v.object(Object.fromEntries(COMPLETION_VALUES.map((c) => [c, count])) as Record<(typeof COMPLETION_VALUES)[number], typeof count>),
  end_reasons: counts,
  languages: counts,
  supports: counts,
});

/**
 * One level of an aggregation (aggregation.ts `LevelResult`): a date histogram (`interval`, dense
 * buckets keyed by their start) or terms (`other_doc_count` beyond the first 100 buckets). A bucket
 * holds the next level when there is one, hence the recursion.
 */
const bucketSchema = v.object({
  key: v.string(),
  doc_count: count,
  metrics: v.optional(metricsResultSchema),
  aggregations: v.optional(v.lazy(() => aggregationLevelSchema)),
});
export const aggregationLevelSchema: v.GenericSchema = v.union([
  v.object({
    field: v.string(),
    interval: v.string(),
    buckets: v.array(bucketSchema),
    releases: v.optional(v.pipe(v.array(releaseMarkSchema), v.description('The releases whose released_at falls in this series, with the bucket each falls in; absent when none'))),
  }),
  v.object({
    field: v.string(),
    hidden_field_key: v.optional(v.string()),
    question_id: v.optional(v.string()),
    buckets: v.array(bucketSchema),
    other_doc_count: count,
  }),
]);
// A named definition, so the document refers to one `AggregationLevel` schema recursively.
addGlobalDefs({ AggregationLevel: aggregationLevelSchema });

export const aggregationResultSchema = v.object({
  took,
  hits: v.object({ total: v.object({ value: count }) }),
  metrics: v.optional(metricsResultSchema),
  aggregations: aggregationLevelSchema,
  comparisons: v.optional(v.array(v.object({
    range: v.object({ start: v.string(), end: v.string() }),
    hits: v.object({ total: v.object({ value: count }) }),
    metrics: v.optional(metricsResultSchema),
    aggregations: aggregationLevelSchema,
  }))),
});
