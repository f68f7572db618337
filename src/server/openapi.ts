import { toJsonSchema } from '@valibot/to-json-schema';
import * as v from 'valibot';
import { JSON_SCHEMA_OF } from '../validation.ts';
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
type JsonSchema = Record<string, unknown>;

/**
 * A route's schema as JSON Schema. Valibot schemas are converted for their input (request) or
 * output (answer) type; named definitions (`$defs`, e.g. the recursive AggregationLevel) are
 * hoisted into `components.schemas` and referenced from there, since a `#/$defs/...` reference
 * inside an OpenAPI document would resolve against the document's root.
 */
function schemaConverter(shared: Record<string, JsonSchema>) {
  const convert = (s: v.GenericSchema | JsonSchema, typeMode: 'input' | 'output'): JsonSchema => {
    if (!isValibot(s)) return s;
    const { $schema: _dialect, $defs, ...schema } = toJsonSchema(s, {
      errorMode: 'ignore',
      typeMode,
      target: 'draft-2020-12',
      // A strict JSON-object body (validation.ts) is described by its object schema, not its guard.
      overrideSchema: ({ valibotSchema }) => {
        const described = (valibotSchema as { [JSON_SCHEMA_OF]?: v.GenericSchema })[JSON_SCHEMA_OF];
        return described ? convert(described, typeMode) : undefined;
      },
    }) as JsonSchema;
    for (const [name, def] of Object.entries(($defs ?? {}) as Record<string, JsonSchema>)) {
      const hoisted = rewriteRefs(def) as JsonSchema;
      if (shared[name] && JSON.stringify(shared[name]) !== JSON.stringify(hoisted)) throw new Error(`two different schemas named ${name}`);
      shared[name] = hoisted;
    }
    return rewriteRefs(schema) as JsonSchema;
  };
  return convert;
}

const rewriteRefs = (x: unknown): unknown => {
  if (Array.isArray(x)) return x.map(rewriteRefs);
  if (typeof x !== 'object' || x === null) return x;
  return Object.fromEntries(
    Object.entries(x).map(([k, val]) => [k, k === '$ref' && typeof val === 'string' ? val.replace(/^#\/\$defs\//, '#/components/schemas/') : rewriteRefs(val)]),
  );
};

const isValibot = (s: unknown): s is v.GenericSchema => typeof s === 'object' && s !== null && 'kind' in s && (s as { kind: unknown }).kind === 'schema';

/** Node answers 431 itself, before any route runs, to every request whose headers exceed its limit. */
const ALWAYS: readonly number[] = [431];

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
  406: 'The Accept header names no media type this endpoint answers in (the message lists them)',
  409: 'Conflict with stored state',
  413: 'Body over the limit (after decompression)',
  415: 'Body is not JSON, a charset other than UTF-8, or an encoding other than gzip',
  429: 'Over the rate limit; see Retry-After and RateLimit-* headers',
  431: 'Request headers too large',
  503: 'Storage unavailable, ingest queue full, shutting down, or a query timed out; see Retry-After',
};

const TAG_TEXT: Record<string, string> = {
  events: 'Product analytics events (track, identify, page, screen, group, copilot), 1..100 per request',
  releases: 'Releases of your product, to mark on charts',
  'survey responses': 'Survey responses: upsert them, then search, summarize and aggregate them',
  operations: 'Health, readiness and this API description (no token)',
};

const ERROR_EXAMPLE_CODE: Record<number, string> = {
  400: 'validation_error',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  431: 'headers_too_large',
  503: 'unavailable',
};

const openApiPath = (koaPath: string) => koaPath.replace(/:(\w+)/g, '{$1}');

export interface OpenApiOptions {
  /** The `servers` entry: where generated clients send requests. */
  serverUrl?: string;
}

export function openApiDocument(routes: readonly Route[], options: OpenApiOptions = {}): Record<string, any> {
  const paths: Record<string, Record<string, unknown>> = {};
  const shared: Record<string, JsonSchema> = {};
  const toSchema = schemaConverter(shared);
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
            ...(route.success.headers ? { headers: route.success.headers } : {}),
            ...(route.success.schema
              ? {
                  content: {
                    [route.success.contentType ?? 'application/json']: { schema: toSchema(route.success.schema, 'output'), ...(route.success.example !== undefined ? { example: route.success.example } : {}) },
                    ...route.success.alternatives,
                  },
                }
              : {}),
          },
          ...(route.conditional ? { 304: { description: 'Not Modified: If-None-Match holds the current ETag of this answer; no body' } } : {}),
          ...Object.fromEntries(errorCodes(route).map((c) => [String(c), { $ref: `#/components/responses/E${c}` }])),
        },
      };
      if (route.scope === null) op.security = [];
      else if (typeof route.scope === 'string') op['x-scope'] = route.scope;
      else Object.assign(op, { 'x-scope': route.scope[0], 'x-scopes-any-of': route.scope });
      const parameters = Object.entries(route.params ?? {}).map(([name, p]) => ({ name, in: 'path', required: true, description: p.description, schema: p.schema, ...(p.example !== undefined ? { example: p.example } : {}) }));
      const query = route.query ? (toSchema(route.query, 'input') as { properties?: Record<string, unknown>; required?: string[] }) : undefined;
      for (const [name, schema] of Object.entries(query?.properties ?? {})) {
        parameters.push({ name, in: 'query', required: query?.required?.includes(name) ?? false, schema } as never);
      }
      if (route.conditional) {
        parameters.push({ name: 'If-None-Match', in: 'header', required: false, description: 'The ETag of an earlier answer: 304 with no body while the answer is unchanged', schema: { type: 'string' } } as never);
      }
      if (parameters.length) op.parameters = parameters;
      if (route.body) {
        op.requestBody = {
          // Optional only when a missing body is answered: its stand-in (whenEmpty) is a valid body.
          // POST /1.0/release and the aggregations read a missing body as {}, which lacks required fields.
          required: route.body.whenEmpty === undefined || !v.safeParse(route.body.schema, route.body.whenEmpty).success,
          content: { 'application/json': { schema: toSchema(route.body.schema, 'input'), ...(route.body.example !== undefined ? { example: route.body.example } : {}) } },
        };
      }
      (paths[openApiPath(route.path)] ??= {})[method.toLowerCase()] = op;
    }
  }
  const codes = [...new Set(routes.flatMap(errorCodes))].sort();
  return {
    openapi: '3.1.0',
    info: {
      title: 'tallyhouse',
      version: '1.0',
      license: { name: 'Proprietary' },
      description: 'Event ingestion, releases and survey-response analytics. Every request carries `Authorization: Bearer <token>`; errors share one body (`Error`).',
    },
    servers: [{ url: options.serverUrl ?? '/', description: 'This service' }],
    tags: [...new Set(routes.map((r) => r.tag))].map((name) => ({ name, description: TAG_TEXT[name] ?? name })),
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API token (`tallyhouse token create`); each endpoint needs one scope, named in its `x-scope` (or any one of its `x-scopes-any-of`).' } },
      schemas: { Error: ERROR_BODY, ...shared },
      responses: Object.fromEntries(
        codes.map((c) => [
          `E${c}`,
          { description: ERROR_TEXT[c] ?? 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, example: { error: { status: c, code: ERROR_EXAMPLE_CODE[c] ?? 'error', message: ERROR_TEXT[c] ?? 'Error' } } } } },
        ]),
      ),
    },
    security: [{ bearer: [] }],
    paths,
  };
}

/** A route with a scope negotiates its answer's media type (server/app.ts): 406 is always possible. */
const errorCodes = (route: Route): number[] => [...new Set([...route.errors, ...ALWAYS, ...(route.scope === null ? [] : [406])])].sort();
