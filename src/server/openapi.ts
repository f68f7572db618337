import { toJsonSchema } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import type { Route } from './route.ts';

/**
 * OpenAPI 3.1 built from the route table: the same valibot schemas that validate the requests
 * describe them, so the document cannot drift from what the service accepts. Checks that JSON
 * Schema cannot express (cross-field rules) are in the operation text.
 *
 * SEARCH has no field in OpenAPI 3.1: every SEARCH route is also served as POST on the same path
 * (same scope, limits and answers), and the POST is the documented operation; its description
 * says SEARCH is accepted too.
 */
const toSchema = (s: v.GenericSchema | Record<string, unknown>): Record<string, unknown> =>
  isValibot(s) ? (toJsonSchema(s, { errorMode: 'ignore', typeMode: 'input', target: 'draft-2020-12' }) as Record<string, unknown>) : s;

const isValibot = (s: unknown): s is v.GenericSchema => typeof s === 'object' && s !== null && 'kind' in s && (s as { kind: unknown }).kind === 'schema';

const ERROR_BODY = {
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
        issues: { type: 'array', items: { type: 'object', required: ['path', 'message'], properties: { path: { type: 'string' }, message: { type: 'string' } } } },
      },
    },
  },
};

export const ERROR_TEXT: Record<number, string> = {
  400: 'Invalid JSON or invalid fields (`issues` names each bad field), or a query too expensive (`query_too_expensive`)',
  401: 'Missing, malformed, unknown or revoked token',
  403: 'The token lacks the scope of this endpoint',
  404: 'Not found',
  405: 'Method not allowed on this path (see Allow)',
  409: 'Conflict with stored state',
  413: 'Body over the limit (after decompression)',
  415: 'Body is not JSON, or an encoding other than gzip',
  429: 'Over the rate limit; see Retry-After and RateLimit-* headers',
  431: 'Request headers too large',
  503: 'Storage unavailable, ingest queue full, shutting down, or a query timed out; see Retry-After',
};

const openApiPath = (koaPath: string) => koaPath.replace(/:(\w+)/g, '{$1}');

export function openApiDocument(routes: readonly Route[]): object {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const methods = [route.method, ...(route.aliases ?? [])].filter((m) => m !== 'SEARCH');
    const searchToo = route.method === 'SEARCH' || route.aliases?.includes('SEARCH');
    for (const method of methods) {
      const op: Record<string, unknown> = {
        operationId: route.operationId,
        summary: route.summary,
        description: [route.description, searchToo ? 'Also served with the HTTP method SEARCH on the same path (same scope, limits and answers).' : undefined].filter(Boolean).join('\n\n') || undefined,
        tags: [route.tag],
        responses: {
          [route.success.status]: {
            description: route.success.description,
            ...(route.success.schema ? { content: { [route.success.contentType ?? 'application/json']: { schema: toSchema(route.success.schema), ...(route.success.example !== undefined ? { example: route.success.example } : {}) } } } : {}),
          },
          ...Object.fromEntries(route.errors.map((c) => [String(c), { $ref: `#/components/responses/E${c}` }])),
        },
      };
      if (route.scope === null) op.security = [];
      else op['x-scope'] = route.scope;
      const parameters = Object.entries(route.params ?? {}).map(([name, p]) => ({ name, in: 'path', required: true, description: p.description, schema: p.schema, ...(p.example !== undefined ? { example: p.example } : {}) }));
      const query = route.query ? (toSchema(route.query) as { properties?: Record<string, unknown>; required?: string[] }) : undefined;
      for (const [name, schema] of Object.entries(query?.properties ?? {})) {
        parameters.push({ name, in: 'query', required: query?.required?.includes(name) ?? false, schema } as never);
      }
      if (parameters.length) op.parameters = parameters;
      if (route.body) {
        op.requestBody = {
          required: route.body.whenEmpty === undefined,
          content: { 'application/json': { schema: toSchema(route.body.schema), ...(route.body.example !== undefined ? { example: route.body.example } : {}) } },
        };
      }
      (paths[openApiPath(route.path)] ??= {})[method.toLowerCase()] = op;
    }
  }
  const codes = [...new Set(routes.flatMap((r) => r.errors))].sort();
  return {
    openapi: '3.1.0',
    info: {
      title: 'tallyhouse',
      version: '1.0',
      description: 'Event ingestion, releases and survey-response analytics. Every request carries `Authorization: Bearer <token>`; errors share one body (`Error`).',
    },
    servers: [{ url: '/', description: 'This service' }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: { Error: ERROR_BODY },
      responses: Object.fromEntries(codes.map((c) => [`E${c}`, { description: ERROR_TEXT[c] ?? 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }])),
    },
    security: [{ bearer: [] }],
    paths,
  };
}
