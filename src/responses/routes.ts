import * as v from 'valibot';
import type { AppDeps } from '../server/context.ts';
import { IDEMPOTENCY_DESCRIPTION, idempotent } from '../idempotency/route.ts';
import { IdempotencyStore } from '../idempotency/store.ts';
import { defineRoute, type Feature, type ParamSpec } from '../server/route.ts';
import { aggregate, aggregationBodySchema } from './aggregation.ts';
import { scopeOf } from './compile.ts';
import { parseSurveyIds, queryScopeSchema, searchBodySchema } from './filters.ts';
import type { GroupByRule } from './group-by.ts';
import { parseResponseBatch, responseBatchSchema } from './record.ts';
import { searchResponses } from './search.ts';
import { insertResponses } from './store.ts';
import { summarize } from './summary.ts';

const SURVEY_IDS: Record<string, ParamSpec> = {
  survey_ids: { description: 'Comma-separated survey UUIDs, or `*` for every survey of the organization', schema: { type: 'string' }, example: '*' },
};
const READ_ERRORS = [400, 401, 403, 413, 415, 429, 503] as const;

/** Survey responses: the write, and the three reads (each SEARCH also served as POST). */
export function responsesFeature(deps: AppDeps): Feature {
  // 1000 records with answers exceed 1 MiB, and so can a read's filters (100 of 1000 values each).
  const limitBytes = deps.config.bodyLimitBytes * 16;
  const client = () => deps.db.client();
  const keys = new IdempotencyStore(client, deps.db.cluster !== undefined);
  return {
    routes: [
      defineRoute<v.InferOutput<typeof responseBatchSchema>>({
        operationId: 'writeSurveyResponses',
        method: 'POST',
        path: '/1.0/survey/response',
        tag: 'survey responses',
        summary: 'Upsert 1..1000 survey responses by id; the latest updated_at wins',
        description: IDEMPOTENCY_DESCRIPTION,
        scope: 'responses:write',
        rateLimit: 'survey write',
        body: { schema: responseBatchSchema, parse: (raw, auth) => parseResponseBatch(raw, auth.orgId), limitBytes },
        success: { status: 200, description: 'Stored', schema: COUNT_SCHEMA, example: { count: 1 } },
        errors: [400, 401, 403, 409, 413, 415, 429, 503],
        handler: idempotent(keys, 'writeSurveyResponses', 200, async ({ auth, body }) => ({ count: await insertResponses(client(), auth.orgId, body) })),
      }),
      defineRoute<v.InferOutput<typeof searchBodySchema>>({
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
        success: { status: 200, description: '`{took, hits: {total: {value}, responses}}`' },
        errors: READ_ERRORS,
        handler: ({ auth, body, params }) =>
          searchResponses(client(), { ...scopeOf(auth.orgId, parseSurveyIds(params.survey_ids), body), size: body.size, offset: body.offset }),
      }),
      defineRoute<v.InferOutput<typeof queryScopeSchema>>({
        operationId: 'summarizeSurveyResponses',
        method: 'SEARCH',
        aliases: ['POST'],
        path: '/1.0/survey/:survey_ids/response/summary',
        tag: 'survey responses',
        summary: 'NPS / CSAT / CES, completion, end reasons, languages and supports of the responses in scope',
        scope: 'responses:read',
        rateLimit: 'survey read',
        params: SURVEY_IDS,
        body: { schema: queryScopeSchema, limitBytes, whenEmpty: {} },
        success: { status: 200, description: 'The summary object' },
        errors: READ_ERRORS,
        handler: ({ auth, body, params }) => summarize(client(), scopeOf(auth.orgId, parseSurveyIds(params.survey_ids), body)),
      }),
      defineRoute<v.InferOutput<typeof aggregationBodySchema>>({
        operationId: 'aggregateSurveyResponses',
        method: 'SEARCH',
        aliases: ['POST'],
        path: '/1.0/survey/:survey_ids/response/aggregation',
        tag: 'survey responses',
        summary: 'Counts grouped by ordered group_by rules, with dense date histograms',
        scope: 'responses:read',
        rateLimit: 'survey read',
        params: SURVEY_IDS,
        body: { schema: aggregationBodySchema, limitBytes, whenEmpty: {} },
        success: { status: 200, description: '`{took, hits: {total: {value}}, aggregations}`' },
        errors: READ_ERRORS,
        handler: ({ auth, body, params }) =>
          aggregate(client(), scopeOf(auth.orgId, parseSurveyIds(params.survey_ids), body), body.group_by as GroupByRule[]),
      }),
    ],
  };
}

const COUNT_SCHEMA = { type: 'object', required: ['count'], properties: { count: { type: 'integer' } } };
