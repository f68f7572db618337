import { toJsonSchema } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import { eventBatchSchema } from '../events/schema.ts';
import { releaseBodySchema, releaseSchema } from '../releases/schema.ts';
import { aggregationBodySchema } from '../responses/aggregation.ts';
import { searchBodySchema, queryScopeSchema } from '../responses/filters.ts';
import { responseBatchSchema } from '../responses/record.ts';

/**
 * OpenAPI 3.1 generated from the same valibot schemas that validate the requests, so the document
 * cannot drift from what the service accepts. Checks that JSON Schema cannot express (e.g.
 * cross-field rules) are described in the operation text.
 */
const schema = (s: v.GenericSchema) => toJsonSchema(s, { errorMode: 'ignore', typeMode: 'input', target: 'draft-2020-12' });

const errorBody = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['status', 'code', 'message'],
      properties: {
        status: { type: 'integer' },
        code: { type: 'string' },
        message: { type: 'string' },
        issues: { type: 'array', items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } } } },
      },
    },
  },
};

const errors = (...codes: number[]) =>
  Object.fromEntries(codes.map((c) => [String(c), { description: ERROR_TEXT[c], content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }]));

const ERROR_TEXT: Record<number, string> = {
  400: 'Invalid JSON or invalid fields; `issues` names each bad field',
  401: 'Missing, malformed, unknown or revoked token',
  403: 'The token lacks the scope of this endpoint',
  413: 'Body over the limit (after decompression)',
  415: 'Body is not JSON, or an encoding other than gzip',
  429: 'Over the rate limit; see Retry-After and RateLimit-* headers',
  503: 'Storage unavailable, ingest queue full, or a query timed out; see Retry-After',
};

const json = (s: unknown) => ({ content: { 'application/json': { schema: s } } });
const surveyIds = { name: 'survey_ids', in: 'path', required: true, description: 'Comma-separated survey UUIDs, or `*` for all surveys of the organization', schema: { type: 'string' } };

let cached: object | undefined;

export function openApiDocument(): object {
  cached ??= {
    openapi: '3.1.0',
    info: { title: 'tallyhouse', version: '1.0', description:
        'Event ingestion, releases and survey-response analytics. Every request carries `Authorization: Bearer <token>`. ' +
        'The survey query endpoints use the HTTP method SEARCH, which OpenAPI 3.1 has no field for: they are described under the `x-search` key of their path.',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: { Error: errorBody, Release: schema(releaseSchema) },
    },
    security: [{ bearer: [] }],
    paths: {
      '/1.0/event': {
        post: {
          summary: 'Send 1..100 events (scope `events`); 200 only after they are committed',
          requestBody: { required: true, ...json(schema(eventBatchSchema)) },
          responses: {
            200: { description: 'Committed', ...json({ type: 'object', properties: { count: { type: 'integer' }, lag: { type: ['number', 'null'] } } }) },
            ...errors(400, 401, 403, 413, 415, 429, 503),
          },
        },
      },
      '/1.0/release': {
        post: {
          summary: 'Create a release (scope `releases`)',
          requestBody: { required: true, ...json(schema(releaseBodySchema)) },
          responses: { 201: { description: 'The stored release', ...json({ $ref: '#/components/schemas/Release' }) }, ...errors(400, 401, 403, 413, 415, 429, 503) },
        },
        get: {
          summary: 'List releases, newest released_at first (scope `releases`)',
          parameters: [
            { name: 'from', in: 'query', schema: { type: 'string', format: 'date-time' } },
            { name: 'to', in: 'query', schema: { type: 'string', format: 'date-time' } },
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
          ],
          responses: {
            200: { description: 'Releases', ...json({ type: 'object', properties: { releases: { type: 'array', items: { $ref: '#/components/schemas/Release' } } } }) },
            ...errors(400, 401, 403, 429, 503),
          },
        },
      },
      '/1.0/survey/response': {
        post: {
          summary: 'Upsert 1..1000 survey responses by id; the latest updated_at wins (scope `responses:write`)',
          requestBody: { required: true, ...json(schema(responseBatchSchema)) },
          responses: { 200: { description: 'Stored', ...json({ type: 'object', properties: { count: { type: 'integer' } } }) }, ...errors(400, 401, 403, 413, 415, 429, 503) },
        },
      },
      '/1.0/survey/{survey_ids}/response': {
        'x-search': {
          summary: 'Search responses, newest created_at first (scope `responses:read`)',
          parameters: [surveyIds],
          requestBody: json(schema(searchBodySchema)),
          responses: { 200: { description: '`{took, hits: {total: {value}, responses}}`' }, ...errors(400, 401, 403, 413, 415, 429, 503) },
        },
      },
      '/1.0/survey/{survey_ids}/response/summary': {
        'x-search': {
          summary: 'NPS / CSAT / CES, completion, end reasons, languages and supports (scope `responses:read`)',
          parameters: [surveyIds],
          requestBody: json(schema(queryScopeSchema)),
          responses: { 200: { description: 'The summary object' }, ...errors(400, 401, 403, 413, 415, 429, 503) },
        },
      },
      '/1.0/survey/{survey_ids}/response/aggregation': {
        'x-search': {
          summary: 'Counts grouped by ordered group_by rules, with dense date histograms (scope `responses:read`)',
          parameters: [surveyIds],
          requestBody: json(schema(aggregationBodySchema)),
          responses: { 200: { description: '`{took, hits: {total: {value}}, aggregations}`' }, ...errors(400, 401, 403, 413, 415, 429, 503) },
        },
      },
      '/healthz': { get: { summary: 'Process up', security: [], responses: { 200: { description: 'ok' } } } },
      '/readyz': { get: { summary: 'Engine reachable and migrations applied', security: [], responses: { 200: { description: 'ready' }, 503: { description: 'not ready' } } } },
    },
  };
  return cached;
}
