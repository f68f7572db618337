import type { AppDeps } from '../../server/context.ts';
import { defineRoute, type Feature } from '../../server/route.ts';
import { FUNNEL_EXAMPLE, RETENTION_EXAMPLE, STICKINESS_EXAMPLE, funnelResultSchema, retentionResultSchema, stickinessResultSchema } from './answers.ts';
import { funnel, funnelBodySchema, funnelQueryOf } from './funnel.ts';
import { retention, retentionBodySchema, retentionQueryOf } from './retention.ts';
import { stickiness, stickinessBodySchema, stickinessQueryOf } from './stickiness.ts';

const ERRORS = [400, 401, 403, 413, 415, 429, 503] as const;

const COHORT_DOC =
  '`cohort` keeps the users of a feedback cohort: `{survey_ids, range (created_at), filters, completion, nps: promotor|neutral|detractor, ' +
  'answer: {question_id, operator, value|values}}` (their responses\' respondent_aliases = the events\' user_alias, in this organization) ' +
  'or `{copilot_rating: {operator, value|values}, range (timestamp)}`. `split_by_cohorts: [{name, cohort}]` answers each beside the whole.';

/** Funnels, retention and stickiness over the events (each SEARCH also served as POST). */
export function eventAnalysisFeature(deps: AppDeps): Feature {
  // Steps hold up to 100 filters of 1000 values each, like the other reads.
  const limitBytes = deps.config.bodyLimitBytes * 16;
  const client = () => deps.db.client();
  return {
    routes: [
      defineRoute({
        operationId: 'eventFunnel',
        method: 'SEARCH',
        aliases: ['POST'],
        path: '/1.0/event/funnel',
        tag: 'events',
        summary: 'Users through 2..10 steps within a conversion window: per step users, conversion, median and p90 time from the previous step',
        description:
          'Steps are event filters. `order`: `ordered` (each step after the previous one, other events between allowed), `strict` (the next event of the ' +
          'user is the next step), `any` (all steps in any order, within the window; no times). `window_seconds` (1..7776000, default 14 days): from the ' +
          'first step to the last, inclusive. Each user counts once per step (an anonymous event is a user of its own). `breakdown`: by a property of the ' +
          `first step's event, or by its period. ${COHORT_DOC}`,
        scope: 'events:read',
        rateLimit: 'event read',
        body: {
          schema: funnelBodySchema,
          limitBytes,
          example: {
            steps: [
              { name: 'signed up', filters: [{ key: 'event_name', operator: 'eq', value: 'signup' }] },
              { name: 'viewed pricing', filters: [{ key: 'type', operator: 'eq', value: 'page' }, { key: 'url', operator: 'contains', value: 'pricing' }] },
            ],
            window_seconds: 86400,
            order: 'ordered',
          },
        },
        success: { status: 200, description: '`{took, steps: [{users, conversion_from_first, conversion_from_previous, median_seconds_from_previous, p90_seconds_from_previous}], breakdown?, cohorts?}`', schema: funnelResultSchema, example: FUNNEL_EXAMPLE },
        errors: ERRORS,
        handler: ({ auth, body }) => funnel(client(), funnelQueryOf(auth.orgId, body)),
      }),
      defineRoute({
        operationId: 'eventRetention',
        method: 'SEARCH',
        aliases: ['POST'],
        path: '/1.0/event/retention',
        tag: 'events',
        summary: 'Users by the period of their first start event, and how many came back in each of the next N periods',
        description:
          '`start` and `return` are event filters (`return` may be `"any"`: any event). `period`: day, week (from Monday) or month, in UTC; `periods` 1..52. ' +
          '`returned[i]` counts the cohort\'s users with a return event in the (i+1)-th period after the cohort\'s. The range bounds the start events. ' +
          COHORT_DOC,
        scope: 'events:read',
        rateLimit: 'event read',
        body: {
          schema: retentionBodySchema,
          limitBytes,
          example: {
            start: { filters: [{ key: 'event_name', operator: 'eq', value: 'signup' }] },
            return: 'any',
            period: 'week',
            periods: 4,
          },
        },
        success: { status: 200, description: '`{took, period, cohorts: [{start, users, returned: [n1, ..., nN]}], split?}`', schema: retentionResultSchema, example: RETENTION_EXAMPLE },
        errors: ERRORS,
        handler: ({ auth, body }) => retention(client(), retentionQueryOf(auth.orgId, body)),
      }),
      defineRoute({
        operationId: 'eventStickiness',
        method: 'SEARCH',
        aliases: ['POST'],
        path: '/1.0/event/stickiness',
        tag: 'events',
        summary: 'How many users did an event on exactly 1, 2, 3... distinct days (weeks, months) of the range',
        description: `\`event\` is event filters; \`interval\`: day (default), week (from Monday) or month, in UTC. An anonymous event is a user active once. ${COHORT_DOC}`,
        scope: 'events:read',
        rateLimit: 'event read',
        body: {
          schema: stickinessBodySchema,
          limitBytes,
          example: { event: { filters: [{ key: 'event_name', operator: 'eq', value: 'login' }] }, interval: 'day' },
        },
        success: { status: 200, description: '`{took, interval, stickiness: [{periods, users}], split?}`', schema: stickinessResultSchema, example: STICKINESS_EXAMPLE },
        errors: ERRORS,
        handler: ({ auth, body }) => stickiness(client(), stickinessQueryOf(auth.orgId, body)),
      }),
    ],
  };
}
