import { migrationsApplied } from '../clickhouse/migrations.ts';
import type { AppDeps } from './context.ts';
import { DOCS_CSP, DOCS_HTML, REDOC_PATH, redocBundle } from './docs.ts';
import { openApiDocument } from './openapi.ts';
import { defineRoute, answer, type Feature, type Route } from './route.ts';

/** Health, readiness and the API description: public routes every app has. */
export function opsFeature(deps: AppDeps, allRoutes: () => readonly Route[]): Feature {
  return {
    routes: [
      defineRoute({
        operationId: 'getHealth',
        method: 'GET',
        path: '/healthz',
        tag: 'operations',
        summary: 'The process is up',
        scope: null,
        success: { status: 200, description: 'Up', schema: { type: 'object', properties: { status: { const: 'ok' } }, required: ['status'] }, example: { status: 'ok' } },
        errors: [],
        handler: () => ({ status: 'ok' }),
      }),
      defineRoute({
        operationId: 'getReadiness',
        method: 'GET',
        path: '/readyz',
        tag: 'operations',
        summary: 'The engine is reachable and every migration is applied (503 otherwise)',
        scope: null,
        success: { status: 200, description: 'Ready', schema: READY_SCHEMA, example: { status: 'ready', engine: true, migrations: true, mode: 'embedded-owned' } },
        errors: [503],
        handler: async () => {
          const engine = deps.db.isUp();
          const migrations = engine && (await migrationsApplied(deps.db));
          const ready = engine && migrations;
          // Redis down does not make the instance unready: it serves with its own limits, and says so.
          const rateLimits = deps.sharedLimits ? deps.sharedLimits.state() : 'local';
          return answer({ status: ready ? 200 : 503, body: { status: ready ? 'ready' : 'not_ready', engine, migrations, mode: deps.db.mode(), rate_limits: rateLimits } });
        },
      }),
      defineRoute({
        operationId: 'getOpenApiDocument',
        method: 'GET',
        path: '/openapi.json',
        tag: 'operations',
        summary: 'This OpenAPI document',
        scope: null,
        success: { status: 200, description: 'OpenAPI 3.1 document', schema: { type: 'object' }, example: { openapi: '3.1.0', info: { title: 'tallyhouse', version: '1.0' }, paths: {} } },
        errors: [],
        handler: () => openApiDocument(allRoutes()),
      }),
      defineRoute({
        operationId: 'getApiDocs',
        method: 'GET',
        path: '/docs',
        tag: 'operations',
        summary: 'This API reference as a web page (Redoc, served from this service)',
        scope: null,
        success: { status: 200, description: 'HTML page', contentType: 'text/html', schema: { type: 'string' }, example: '<!doctype html>...' },
        errors: [],
        handler: () => answer({ body: DOCS_HTML, headers: { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': DOCS_CSP } }),
      }),
      defineRoute({
        operationId: 'getApiDocsScript',
        method: 'GET',
        path: REDOC_PATH,
        tag: 'operations',
        summary: 'The Redoc script the docs page loads',
        scope: null,
        success: { status: 200, description: 'JavaScript', contentType: 'text/javascript', schema: { type: 'string' }, example: '/*! Redoc */' },
        errors: [],
        handler: () => answer({ body: redocBundle(), headers: { 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': 'public, max-age=3600' } }),
      }),
    ],
  };
}

const READY_SCHEMA = {
  type: 'object',
  required: ['status', 'engine', 'migrations', 'mode'],
  properties: {
    status: { enum: ['ready', 'not_ready'] },
    engine: { type: 'boolean' },
    migrations: { type: 'boolean' },
    mode: { type: 'string' },
    rate_limits: { enum: ['local', 'shared', 'local (redis unreachable)'] },
  },
};
