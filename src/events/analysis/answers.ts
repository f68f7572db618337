/**
 * The answers of the funnel and retention endpoints, as valibot schemas: the route table hands
 * them to the OpenAPI document, and the generated-client test checks live answers against them.
 */
import * as v from 'valibot';

const count = v.pipe(v.number(), v.integer(), v.minValue(0));
const took = count;
const share = v.pipe(v.nullable(v.number()), v.description('A share from 0 to 1 (4 decimals); null when the step it is taken from has no user'));
const secs = (what: string) => v.pipe(v.nullable(v.number()), v.description(`${what} seconds from the previous step (to the ms); null on the first step, with no user, and in any order`));

const funnelStepSchema = v.object({
  name: v.optional(v.string()),
  users: v.pipe(count, v.description('Users who reached this step')),
  conversion_from_first: share,
  conversion_from_previous: share,
  median_seconds_from_previous: secs('The median (interpolated)'),
  p90_seconds_from_previous: secs('The 90th percentile (interpolated)'),
});

const funnelStepsSchema = v.array(funnelStepSchema);

const funnelBreakdownSchema = v.object({
  field: v.picklist(['property', 'timestamp']),
  property_key: v.optional(v.string()),
  interval: v.optional(v.string()),
  buckets: v.array(v.object({
    key: v.pipe(v.nullable(v.string()), v.description('The property value (JSON text for non-strings; null: the event has none) or the period start')),
    steps: funnelStepsSchema,
  })),
});

export const funnelResultSchema = v.object({
  took,
  steps: funnelStepsSchema,
  breakdown: v.optional(funnelBreakdownSchema),
  cohorts: v.optional(v.array(v.object({ name: v.string(), steps: funnelStepsSchema, breakdown: v.optional(funnelBreakdownSchema) }))),
});

const retentionCohortsSchema = v.array(v.object({
  start: v.pipe(v.string(), v.description('The period start (UTC; weeks start on Monday)')),
  users: v.pipe(count, v.description('Users whose first start event in range is in this period')),
  returned: v.pipe(v.array(count), v.description('returned[i]: those of them with a return event in the (i+1)-th period after this one')),
}));

export const retentionResultSchema = v.object({
  took,
  period: v.picklist(['day', 'week', 'month']),
  cohorts: retentionCohortsSchema,
  split: v.optional(v.array(v.object({ name: v.string(), cohorts: retentionCohortsSchema }))),
});

const stickinessSchema = v.pipe(
  v.array(v.object({ periods: v.pipe(v.number(), v.integer(), v.minValue(1)), users: count })),
  v.description('Users who did the event in exactly `periods` distinct periods of the range, for every count from 1 to the largest'),
);

export const stickinessResultSchema = v.object({
  took,
  interval: v.picklist(['day', 'week', 'month']),
  stickiness: stickinessSchema,
  split: v.optional(v.array(v.object({ name: v.string(), stickiness: stickinessSchema }))),
});

const step = (users: number, fromFirst: number | null, fromPrevious: number | null, median: number | null, p90: number | null) => ({
  users, conversion_from_first: fromFirst, conversion_from_previous: fromPrevious, median_seconds_from_previous: median, p90_seconds_from_previous: p90,
});

export const FUNNEL_EXAMPLE = {
  took: 41,
  steps: [{ name: 'signed up', ...step(120, 1, 1, null, null) }, { name: 'viewed pricing', ...step(45, 0.375, 0.375, 312.5, 2840.2) }],
  cohorts: [{ name: 'promoters', steps: [step(30, 1, 1, null, null), step(16, 0.5333, 0.5333, 201, 1500.4)] }],
};

export const RETENTION_EXAMPLE = {
  took: 35,
  period: 'week',
  cohorts: [
    { start: '2026-11-02T00:00:00.000000Z', users: 80, returned: [41, 30, 22, 20] },
    { start: '2026-11-09T00:00:00.000000Z', users: 64, returned: [35, 27, 19, 0] },
  ],
};

export const STICKINESS_EXAMPLE = {
  took: 22,
  interval: 'day',
  stickiness: [{ periods: 1, users: 96 }, { periods: 2, users: 41 }, { periods: 3, users: 12 }, { periods: 4, users: 0 }, { periods: 5, users: 3 }],
};
