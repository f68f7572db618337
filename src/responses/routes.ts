import type { AppDeps } from '../server/context.ts';
import { invalid } from '../errors.ts';
import { UUID_PATTERN } from '../uuid.ts';
import { IDEMPOTENCY_DESCRIPTION, idempotent } from '../idempotency/route.ts';
import { IdempotencyStore } from '../idempotency/store.ts';
import { answer, defineRoute, type Feature, type ParamSpec } from '../server/route.ts';
import { POLLED_HEADERS, watermarkHeader } from '../server/conditional.ts';
import { aggregationBodySchema } from './aggregation.ts';
import { aggregate } from './aggregation-request.ts';
import { aggregationResultSchema, searchResultSchema, summarySchema, writeResultSchema } from './answers.ts';
import { deletionResultSchema } from '../validation.ts';
import { selectionOf } from './compile.ts';
import { parseSurveyIds, selectionSchema, searchBodySchema, type SelectionBody } from './filters.ts';
import { parseResponseBatch } from './record.ts';
import { responseBatchSchema } from './record-schema.ts';
import { searchResponses } from './search.ts';
import { CSV_COLUMNS, exportResponses } from './export.ts';
import { exportAnswer, exportSuccess } from '../query/export.ts';
import { RollupMaintainer } from './rollups/maintainer.ts';
import { encodeRows } from './encode.ts';
import { insertGroup } from './store.ts';
import { ResponseWriteQueue } from './write-group.ts';
import { responseIdView } from './identity.ts';
import type { ClaimView } from '../claims/claims.ts';
import { Tombstones } from './tombstones.ts';
import { ResponseDeleter } from './delete.ts';
import { summarize } from './summary.ts';

const SURVEY_IDS: Record<string, ParamSpec> = {
  survey_ids: { description: 'Comma-separated survey UUIDs, or `*` for every survey of the organization', schema: { type: 'string' }, example: '*' },
};
const READ_ERRORS = [400, 401, 403, 413, 415, 429, 503] as const;

const DELETION_DESCRIPTION =
  'The responses disappear from search, summary, aggregation and export as soon as the 202 is sent (the rollup hours they were in are read from the raw ' +
  'table until recomputed), and stay deleted across restarts. A write of a version whose updated_at is not after the deletion is acknowledged and ' +
  'dropped; a later version is a new response. The rows are masked at once (lightweight DELETE) and removed from disk within an hour (the purge that ' +
  'follows a deletion) or when their parts merge. Ids of another organization, or unknown, count 0.';

function uuidParam(value: string, name: string): string {
  if (!UUID_PATTERN.test(value)) throw invalid(`${name} must be a UUID`, [{ path: name, message: 'not a UUID' }]);
  return value.toLowerCase();
}

/** A read's selection: the token's organization, the path's survey ids, the body's filters and range. */
const readScope = (orgId: string, params: Record<string, string>, body: SelectionBody) => selectionOf(orgId, parseSurveyIds(params.survey_ids), body);

/** Survey responses: the write, and the three reads (each SEARCH also served as POST). */
export function responsesFeature(deps: AppDeps): Feature {
  // 1000 records with answers exceed 1 MiB, and so can a read's filters (100 of 1000 values each).
  const limitBytes = deps.config.bodyLimitBytes * 16;
  const client = () => deps.db.client();
  const keys = new IdempotencyStore(client, () => deps.db.cluster !== undefined);
  const rollups = new RollupMaintainer(client, deps.log);
  const tombstones = new Tombstones(client);
  // Made at the first write (the route table is built without a database); it reads the claimed ids then.
  let claimView: ClaimView | undefined;
  const claims = () => (claimView ??= responseIdView({ maxBytes: deps.config.claimFilterMaxBytes, clustered: deps.db.cluster !== undefined }));
  const deleter = new ResponseDeleter(() => deps.db, rollups, tombstones, deps.log);
  const writes = new ResponseWriteQueue((orgId, batches, context) => insertGroup(deps.db, orgId, batches, { rollups, tombstones, claims: claims() }, context));
  return {
    routes: [
      idempotent(keys, defineRoute({
        operationId: 'writeSurveyResponses',
        method: 'POST',
        path: '/1.0/survey/response',
        tag: 'survey responses',
        summary: 'Upsert 1..1000 survey responses by id; the latest updated_at wins',
        description: IDEMPOTENCY_DESCRIPTION,
        scope: 'responses:write',
        rateLimit: 'survey write',
        body: { schema: responseBatchSchema, parse: (raw, auth) => parseResponseBatch(raw, auth.orgId), limitBytes, example: [EXAMPLE_RECORD] },
        success: { status: 200, description: 'Stored (inserted or replaced)', schema: writeResultSchema, example: { count: 1 } },
        errors: [400, 401, 403, 409, 413, 415, 429, 503],
        // Encoded at arrival, while the org's group in flight has the engine busy.
        handler: async ({ auth, body }) => ({ count: await writes.submit(auth.orgId, body, encodeRows(body, auth.orgId)) }),
      })),
      defineRoute({
        operationId: 'deleteSurveyResponse',
        method: 'DELETE',
        path: '/1.0/survey/response/:response_id',
        tag: 'survey responses',
        summary: 'Delete one response: gone from every read at once; a version from before the deletion is never stored again',
        description: DELETION_DESCRIPTION,
        scope: 'responses:write',
        rateLimit: 'survey write',
        params: { response_id: { description: 'The response id (a UUID)', schema: { type: 'string', format: 'uuid' }, example: '3f2a1b0c-9d8e-4f7a-8b6c-5d4e3f2a1b0c' } },
        success: { status: 202, description: 'Deleted: how many responses existed (0 or 1)', schema: deletionResultSchema, example: { deleted: 1 } },
        errors: [400, 401, 403, 429, 503],
        handler: async ({ auth, params }) => answer({ status: 202, body: { deleted: await deleter.deleteIds(auth.orgId, [uuidParam(params.response_id, 'response_id')]) } }),
      }),
      defineRoute({
        operationId: 'deleteRespondent',
        method: 'DELETE',
        path: '/1.0/respondent/:respondent_id',
        tag: 'survey responses',
        summary: "Delete every response of a respondent (a person's data)",
        description: DELETION_DESCRIPTION,
        scope: 'responses:write',
        rateLimit: 'survey write',
        params: { respondent_id: { description: 'The respondent id (a UUID)', schema: { type: 'string', format: 'uuid' }, example: '7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918' } },
        success: { status: 202, description: 'Deleted: how many responses the respondent had', schema: deletionResultSchema, example: { deleted: 3 } },
        errors: [400, 401, 403, 429, 503],
        handler: async ({ auth, params }) => answer({ status: 202, body: { deleted: await deleter.deleteRespondent(auth.orgId, uuidParam(params.respondent_id, 'respondent_id')) } }),
      }),
      defineRoute({
        operationId: 'searchSurveyResponses',
        method: 'SEARCH',
        aliases: ['POST'],
        path: '/1.0/survey/:survey_ids/response',
        tag: 'survey responses',
        summary: 'Search responses, newest created_at first',
        scope: 'responses:read',
        rateLimit: 'survey read',
        params: SURVEY_IDS,
        body: { schema: searchBodySchema, limitBytes, whenEmpty: {}, example: { size: 5, filters: [{ type: 'response', key: 'completion', operator: 'eq', value: 'fully_completed' }] } },
        success: { status: 200, description: 'The total in scope and the requested page', schema: searchResultSchema, example: { took: 12, hits: { total: { value: 1 }, responses: [EXAMPLE_RECORD] } }, headers: POLLED_HEADERS },
        errors: READ_ERRORS,
        conditional: true,
        handler: async ({ auth, body, params }) => {
          const watermark = Date.now();
          const result = await searchResponses(client(), readScope(auth.orgId, params, body), { size: body.size, offset: body.offset, cursor: body.cursor });
          return answer({ body: result, headers: watermarkHeader(watermark) });
        },
      }),
      defineRoute({
        operationId: 'exportSurveyResponses',
        method: 'SEARCH',
        aliases: ['POST'],
        path: '/1.0/survey/:survey_ids/response/export',
        tag: 'survey responses',
        summary: 'Every response in scope, newest first, streamed as NDJSON (default) or CSV (Accept: text/csv)',
        description:
          'The search body; size and offset are ignored, as in summary. NDJSON: one record per line, as search returns them. CSV (`Accept: text/csv`): a header line, then one ' +
          'column per top-level field of a record; arrays and objects are JSON text. Streamed with backpressure, in memory that does not grow with the ' +
          'number of responses; a client that disconnects stops the engine query. An error after the first bytes closes the connection early.',
        scope: 'responses:read',
        rateLimit: 'survey read',
        params: SURVEY_IDS,
        body: { schema: selectionSchema, limitBytes, whenEmpty: {}, example: { filters: [{ type: 'response', key: 'completion', operator: 'eq', value: 'fully_completed' }] } },
        success: exportSuccess('response record (as in search answers)', `${JSON.stringify(EXAMPLE_RECORD)}\n`, CSV_COLUMNS, 'response'),
        errors: READ_ERRORS,
        handler: async ({ auth, body, params, headers, signal }) => {
          const watermark = watermarkHeader(Date.now());
          return answer(await exportAnswer(headers.accept, (format) => exportResponses(client(), readScope(auth.orgId, params, body), format, signal), watermark));
        },
      }),
      defineRoute({
        operationId: 'summarizeSurveyResponses',
        method: 'SEARCH',
        aliases: ['POST'],
        path: '/1.0/survey/:survey_ids/response/summary',
        tag: 'survey responses',
        summary: 'NPS / CSAT / CES, completion, end reasons, languages and supports of the responses in scope',
        scope: 'responses:read',
        rateLimit: 'survey read',
        params: SURVEY_IDS,
        body: { schema: selectionSchema, limitBytes, whenEmpty: {}, example: { range: { field: 'created_at', start: '2024-05-01T00:00:00Z', end: '2024-05-31T23:59:59Z' } } },
        success: { status: 200, description: 'The summary of the responses in scope', schema: summarySchema, example: EXAMPLE_SUMMARY, headers: POLLED_HEADERS },
        errors: READ_ERRORS,
        conditional: true,
        handler: async ({ auth, body, params }) => {
          const { summary, watermark } = await summarize(client(), readScope(auth.orgId, params, body));
          return answer({ body: summary, headers: watermarkHeader(watermark) });
        },
      }),
      defineRoute({
        operationId: 'aggregateSurveyResponses',
        method: 'SEARCH',
        aliases: ['POST'],
        path: '/1.0/survey/:survey_ids/response/aggregation',
        tag: 'survey responses',
        summary: 'Counts grouped by ordered group_by rules, with dense date histograms; optionally survey metrics per bucket and period comparisons',
        description:
          '`metrics` (any of nps, csat, ces, completion) adds to every bucket and to the whole scope the NPS (score, groups, 95% interval), CSAT and CES ' +
          '(average, n, 95% interval) and completion (counts, rate, 95% interval), computed as the summary computes them. `compare` (previous_period, ' +
          'previous_year or a list of {start, end} ranges; needs range.start and range.end) adds `comparisons`: the same tree over each range, the date ' +
          'levels with the main series\' interval and bucket count, each metric with `delta` (main minus comparison), `delta_ci95` and `significant` (at 95%). ' +
          'A date level lists the organization\'s `releases` whose released_at falls in its series (the range\'s, or the data\'s without one), with the `bucket` each falls in (absent when none).',
        scope: 'responses:read',
        rateLimit: 'survey read',
        params: SURVEY_IDS,
        body: {
          schema: aggregationBodySchema,
          limitBytes,
          whenEmpty: {},
          example: {
            range: { field: 'created_at', start: '2024-05-01T00:00:00Z', end: '2024-05-02T23:59:59Z' },
            group_by: [{ field: 'completion' }, { field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 2 }],
            metrics: ['nps', 'completion'],
            compare: 'previous_period',
          },
        },
        success: { status: 200, description: 'Bucket counts, one level per group_by rule', schema: aggregationResultSchema, example: EXAMPLE_AGGREGATION, headers: POLLED_HEADERS },
        errors: READ_ERRORS,
        conditional: true,
        handler: async ({ auth, body, params }) => {
          const request = { rules: body.group_by, metrics: body.metrics, compare: body.compare };
          const { result, watermark } = await aggregate(client(), readScope(auth.orgId, params, body), request);
          return answer({ body: result, headers: watermarkHeader(watermark) });
        },
      }),
    ],
    // The maintainer's owner heartbeat and its takeover of the marks that stopped processes left.
    start: () => rollups.start(),
    // Graceful shutdown: the recomputes queued are left marked, for the next start to take over.
    drain: () => rollups.drain(),
    settle: () => rollups.settle(),
  };
}

const EXAMPLE_RECORD = {
  id: '0b6f3f5e-8d1c-4f0a-9a55-3f6f1a2b7c01',
  channel_id: '6a0e2c1d-5b7f-4e3a-8c9d-1f2e3a4b5c6d',
  respondent_id: '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f',
  survey_id: '7e8f9a0b-1c2d-4e3f-9a5b-6c7d8e9f0a1b',
  language: 'en',
  hidden_fields: [{ key: 'support', t: 0, v_s: 'email' }],
  answers: [{ question_id: '3a4b5c6d-7e8f-4a0b-9c1d-2e3f4a5b6c7d', question_correlation_id: '4b5c6d7e-8f9a-4b1c-8d2e-3f4a5b6c7d8e', cta_type: 'nps', t: 2, v_d: 9 }],
  completion: 'fully_completed',
  active: false,
  end_reason: 'completed',
  ended_at: '2024-05-01T10:05:00.000000Z',
  created_at: '2024-05-01T10:00:00.000000Z',
  updated_at: '2024-05-01T10:05:00.000000Z',
};

const EXAMPLE_SUMMARY = {
  ces_avg: null,
  ces_details: { 1: 0, 2: 0, 3: 0, 4: 0, 5: 0, 6: 0, 7: 0 },
  csat_avg: null,
  csat_details: { 1: 0, 2: 0, 3: 0, 4: 0, 5: 0 },
  nps_details: { 0: 0, 1: 0, 2: 0, 3: 0, 4: 0, 5: 0, 6: 0, 7: 0, 8: 0, 9: 1, 10: 0 },
  nps_groups: { detractor: 0, neutral: 0, promotor: 1, total: 1 },
  nps_score: 100,
  completion: { not_started: 0, partially_completed: 0, fully_completed: 1 },
  end_reasons: { completed: 1 },
  languages: { en: 1 },
  supports: { email: 1 },
};

const EXAMPLE_NPS = { score: 100, detractor: 0, neutral: 0, promotor: 1, total: 1, ci95: [-48.5, 98.5] };
const EXAMPLE_COMPLETION = { not_started: 0, partially_completed: 0, fully_completed: 1, rate: 1, ci95: [0.2065, 1] };
const NO_NPS = { score: null, detractor: 0, neutral: 0, promotor: 0, total: 0, ci95: null };
const NO_COMPLETION = { not_started: 0, partially_completed: 0, fully_completed: 0, rate: null, ci95: null };
const EXAMPLE_DAYS = (first: Record<string, unknown>, second: Record<string, unknown>, start: string) => ({
  field: 'created_at',
  interval: '1 day',
  buckets: [{ key: `${start}-01T00:00:00.000000Z`, doc_count: 1, metrics: first }, { key: `${start}-02T00:00:00.000000Z`, doc_count: 0, metrics: second }],
});
const NO_CHANGE = { delta: null, delta_ci95: null, significant: false };

const EXAMPLE_AGGREGATION = {
  took: 9,
  hits: { total: { value: 1 } },
  metrics: { nps: EXAMPLE_NPS, completion: EXAMPLE_COMPLETION },
  aggregations: {
    field: 'completion',
    buckets: [
      {
        key: 'fully_completed', doc_count: 1, metrics: { nps: EXAMPLE_NPS, completion: EXAMPLE_COMPLETION },
        aggregations: EXAMPLE_DAYS({ nps: EXAMPLE_NPS, completion: EXAMPLE_COMPLETION }, { nps: NO_NPS, completion: NO_COMPLETION }, '2024-05'),
      },
    ],
    other_doc_count: 0,
  },
  comparisons: [{
    range: { start: '2024-04-29T00:00:00.000000Z', end: '2024-04-30T23:59:59.000000Z' },
    hits: { total: { value: 0 } },
    metrics: { nps: { ...NO_NPS, ...NO_CHANGE }, completion: { ...NO_COMPLETION, ...NO_CHANGE } },
    aggregations: {
      field: 'completion',
      buckets: [{
        key: 'fully_completed', doc_count: 0, metrics: { nps: { ...NO_NPS, ...NO_CHANGE }, completion: { ...NO_COMPLETION, ...NO_CHANGE } },
        aggregations: EXAMPLE_DAYS({ nps: { ...NO_NPS, ...NO_CHANGE } }, { nps: { ...NO_NPS, ...NO_CHANGE } }, '2024-04'),
      }],
      other_doc_count: 0,
    },
  }],
};
