import type { AppDeps } from '../../server/context.ts';
import { answer, defineRoute, type Feature } from '../../server/route.ts';
import { POLLED_HEADERS, watermarkHeader } from '../../server/conditional.ts';
import { jsonObject } from '../../validation.ts';
import { exportAnswer, exportSuccess } from '../../query/export.ts';
import { EVENT_CSV_COLUMNS, exportEvents } from './export.ts';
import { eventSelectionEntries } from './filters.ts';
import { aggregateEvents, eventAggregationBodySchema } from './aggregation.ts';
import { userProfile } from './profile.ts';
import { EVENT_RESULT_SCHEMAS } from './openapi.ts';
import { eventSelectionOf, eventSearchBodySchema, searchEvents } from './search.ts';
import { userAliasParam } from '../rows.ts';

const READ_ERRORS = [400, 401, 403, 413, 415, 429, 503] as const;

/** The export body: the selection of an event search, without size or cursor (every match is sent). */
const eventExportBodySchema = jsonObject({ ...eventSelectionEntries }, 'the event export body');

/** The event reads: search, aggregation (each SEARCH also served as POST) and user profiles. */
export function eventReadsFeature(deps: AppDeps): Feature {
  // A read's filters may hold 100 filters of 1000 values each, like the survey reads.
  const limitBytes = deps.config.bodyLimitBytes * 16;
  const client = () => deps.db.client();
  // SEARCH /1.0/event is the search; its POST alias cannot share the path (POST /1.0/event sends
  // events), so it is POST /1.0/event/search: the same route otherwise. OpenAPI has no SEARCH
  // method and documents the POST.
  const search = (where: { operationId: string; method: 'SEARCH' | 'POST'; path: string; description?: string }) =>
    defineRoute({
      ...where,
      tag: 'events',
      summary: 'Search events, newest timestamp first; next_cursor continues with no duplicate and no gap',
      scope: 'events:read',
      rateLimit: 'event read',
      body: {
        schema: eventSearchBodySchema,
        limitBytes,
        whenEmpty: {},
        example: { size: 2, filters: [{ key: 'type', operator: 'eq', value: 'track' }, { key: 'property', property_key: 'plan', operator: 'eq', value: 'pro' }] },
      },
      success: { status: 200, description: '`{took, hits: {total: {value}, events}, next_cursor}`', ...EVENT_RESULT_SCHEMAS.search, headers: POLLED_HEADERS },
      errors: READ_ERRORS,
      conditional: true,
      handler: async ({ auth, body }) => {
        const { result, watermark } = await searchEvents(client(), eventSelectionOf(auth.orgId, body), body);
        return answer({ body: result, headers: watermarkHeader(watermark) });
      },
    });
  return {
    routes: [
      search({ operationId: 'searchEventsWithSearchMethod', method: 'SEARCH', path: '/1.0/event' }),
      search({
        operationId: 'searchEvents',
        method: 'POST',
        path: '/1.0/event/search',
        description: 'Also served as `SEARCH /1.0/event` (same body, scope, limits and answers).',
      }),
      defineRoute({
        operationId: 'exportEvents',
        method: 'SEARCH',
        aliases: ['POST'],
        path: '/1.0/event/export',
        tag: 'events',
        summary: 'Every event in scope, newest first, streamed as NDJSON (default) or CSV (Accept: text/csv)',
        description:
          'The body holds filters_bool, filters and range, as in event search. NDJSON: one event record per line, as event search returns them. CSV ' +
          '(`Accept: text/csv`): a header line, then one column per top-level field of a record; `properties` and `context` are JSON text. Streamed with ' +
          'backpressure in memory that does not grow with the number of events; a client that disconnects stops the engine query.',
        scope: 'events:read',
        rateLimit: 'event read',
        body: { schema: eventExportBodySchema, limitBytes, whenEmpty: {}, example: { filters: [{ key: 'type', operator: 'eq', value: 'track' }] } },
        success: exportSuccess(
          'event record (as in event search answers)',
          '{"event_id":"5f0c7a9e-2b1d-4c3e-8f6a-9b8c7d6e5f4a","type":"track","event_name":"opened","user_id":"0e8f6a4c-2d1b-5c9e-8a7f-6b5c4d3e2f1a","anonymous":true,"timestamp":"2026-11-01T10:00:00.000Z","received_at":"2026-11-01T10:00:00.120Z","properties":{}}\n',
          EVENT_CSV_COLUMNS,
          'event',
        ),
        errors: READ_ERRORS,
        handler: async ({ auth, body, headers, signal }) => answer(await exportAnswer(headers.accept, (format) => exportEvents(client(), eventSelectionOf(auth.orgId, body), format, signal))),
      }),
      defineRoute({
        operationId: 'aggregateEvents',
        method: 'SEARCH',
        aliases: ['POST'],
        path: '/1.0/event/aggregation',
        tag: 'events',
        summary: 'Event counts (and unique users) grouped by ordered group_by rules, with dense date histograms',
        scope: 'events:read',
        rateLimit: 'event read',
        body: {
          schema: eventAggregationBodySchema,
          limitBytes,
          example: {
            range: { field: 'timestamp', start: '2026-11-01T00:00:00Z', end: '2026-11-07T23:59:59Z' },
            group_by: [{ field: 'event_name' }, { field: 'timestamp', date_histogram_min_interval: 'day', date_histogram_buckets: 7 }],
            metrics: ['count', 'unique_users'],
          },
        },
        success: { status: 200, description: '`{took, hits: {total: {value}}, unique_users?, aggregations}`', ...EVENT_RESULT_SCHEMAS.aggregation, headers: POLLED_HEADERS },
        errors: READ_ERRORS,
        conditional: true,
        handler: async ({ auth, body }) => {
          const { result, watermark } = await aggregateEvents(client(), eventSelectionOf(auth.orgId, body), body.group_by, body.metrics);
          return answer({ body: result, headers: watermarkHeader(watermark) });
        },
      }),
      defineRoute({
        operationId: 'getUserProfile',
        method: 'GET',
        path: '/1.0/user/:user_alias',
        tag: 'events',
        summary: "A user's first and last event, event count, current properties and groups",
        scope: 'events:read',
        rateLimit: 'event read',
        params: { user_alias: { description: 'The user_alias the events were sent with (URL-encoded)', schema: { type: 'string', minLength: 1, maxLength: 255 }, example: 'user-42' } },
        success: { status: 200, description: 'The profile', ...EVENT_RESULT_SCHEMAS.profile },
        errors: [400, 401, 403, 404, 429, 503],
        handler: ({ auth, params }) => userProfile(client(), auth.orgId, userAliasParam(params)),
      }),
    ],
  };
}
