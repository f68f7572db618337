import { IDEMPOTENCY_DESCRIPTION, idempotent } from '../idempotency/route.ts';
import { IdempotencyStore } from '../idempotency/store.ts';
import type { AppDeps } from '../server/context.ts';
import { defineRoute, type Feature } from '../server/route.ts';
import { releaseBodySchema, releaseListQuerySchema, releaseListSchema, releaseSchema } from './schema.ts';
import { createRelease, listReleases } from './store.ts';
import { IMPACT_DESCRIPTION, impactBodySchema, impactResultSchema, releaseImpact } from '../analysis/release-impact.ts';
import { invalid } from '../errors.ts';
import { UUID_PATTERN } from '../uuid.ts';

export function releasesFeature(deps: AppDeps): Feature {
  const keys = new IdempotencyStore(() => deps.db.client(), () => deps.db.cluster !== undefined);
  return {
    routes: [
      idempotent(keys, defineRoute({
        operationId: 'createRelease',
        method: 'POST',
        path: '/1.0/release',
        tag: 'releases',
        summary: 'Create a release',
        description: IDEMPOTENCY_DESCRIPTION,
        scope: 'releases',
        rateLimit: 'release',
        body: { schema: releaseBodySchema, limitBytes: deps.config.bodyLimitBytes, whenEmpty: {}, example: { name: 'Spring release', version: '2.4.0', tags: ['web'], released_at: '2024-05-01T10:00:00Z' } },
        success: {
          status: 201,
          description: 'The stored release',
          schema: releaseSchema,
          example: { id: '6f1c2f9e-3c1a-4a57-9d0e-6a4b2b9f1e01', name: 'Spring release', description: '', version: '2.4.0', tags: ['web'], released_at: '2024-05-01T10:00:00.000Z', created_at: '2024-05-01T10:00:01.234Z' },
        },
        errors: [400, 401, 403, 409, 413, 415, 429, 503],
        handler: ({ auth, body }) => createRelease(deps.db.client(), auth.orgId, body),
      })),
      defineRoute({
        operationId: 'listReleases',
        method: 'GET',
        path: '/1.0/release',
        tag: 'releases',
        summary: 'List releases, newest released_at first, optionally within from/to',
        scope: 'releases',
        rateLimit: 'release',
        query: releaseListQuerySchema,
        success: {
          status: 200,
          description: 'Releases, newest released_at first',
          schema: releaseListSchema,
          example: { releases: [{ id: '6f1c2f9e-3c1a-4a57-9d0e-6a4b2b9f1e01', name: 'Spring release', description: '', version: '2.4.0', tags: ['web'], released_at: '2024-05-01T10:00:00.000Z', created_at: '2024-05-01T10:00:01.234Z' }] },
        },
        errors: [400, 401, 403, 429, 503],
        handler: async ({ auth, query }) => ({ releases: await listReleases(deps.db.client(), auth.orgId, query) }),
      }),
      defineRoute({
        operationId: 'releaseImpact',
        method: 'SEARCH',
        aliases: ['POST'],
        path: '/1.0/release/:release_id/impact',
        tag: 'releases',
        summary: 'What changed around a release: survey metrics and events in the N days before and after it, each change with its 95% interval and significance',
        description: IMPACT_DESCRIPTION,
        scope: ['responses:read', 'events:read'],
        rateLimit: 'survey read',
        params: { release_id: { description: 'The release id (a UUID), or `latest`: the newest release already released', schema: { type: 'string' }, example: 'latest' } },
        body: { schema: impactBodySchema, limitBytes: deps.config.bodyLimitBytes, whenEmpty: {}, example: { days: 14 } },
        success: { status: 200, description: 'The release, both windows and the changes', schema: impactResultSchema, example: EXAMPLE_IMPACT },
        errors: [400, 401, 403, 404, 409, 413, 415, 429, 503],
        handler: async ({ auth, params, body }) => {
          const id = params.release_id;
          if (id !== 'latest' && !UUID_PATTERN.test(id)) throw invalid('release_id must be a UUID or "latest"', [{ path: 'release_id', message: 'not a UUID' }]);
          return releaseImpact(deps.db.client(), auth.orgId, auth.scopes, id === 'latest' ? 'latest' : { id: id.toLowerCase() }, body);
        },
      }),
    ],
  };
}

const NPS = { score: 20, detractor: 30, neutral: 20, promotor: 50, total: 100, ci95: [2.65, 36.18] };
const EXAMPLE_IMPACT = {
  release: { id: '6f1c2f9e-3c1a-4a57-9d0e-6a4b2b9f1e01', name: 'Spring release', description: '', version: '2.4.0', tags: ['web'], released_at: '2024-05-01T10:00:00.000Z', created_at: '2024-05-01T10:00:01.234Z' },
  days: 14,
  before: { range: { start: '2024-04-17T10:00:00.000000Z', end: '2024-05-01T09:59:59.999999Z' }, responses: 120, metrics: { nps: NPS } },
  after: {
    range: { start: '2024-05-01T10:00:00.000000Z', end: '2024-05-15T09:59:59.999999Z' },
    responses: 130,
    metrics: { nps: { score: 35, detractor: 20, neutral: 25, promotor: 55, total: 100, ci95: [18.69, 49.28], delta: 15, delta_ci95: [-8.13, 37.26], significant: false } },
  },
  events: [{ event_name: 'signup', before: { count: 100, users: 80 }, after: { count: 150, users: 110, count_delta: 50, count_delta_ci95: [19.01, 80.99], count_significant: true, users_delta: 30, users_delta_ci95: [2.98, 57.02], users_significant: true } }],
  copilot: {
    satisfaction: { before: { rate: 0.6, n: 50, ci95: [0.4618, 0.7239] }, after: { rate: 0.7, n: 60, ci95: [0.5749, 0.801], delta: 0.1, delta_ci95: [-0.0761, 0.2712], significant: false } },
    conversion: { before: { rate: 0.1, n: 40, ci95: [0.0396, 0.2303] }, after: { rate: 0.15, n: 40, ci95: [0.0706, 0.2907], delta: 0.05, delta_ci95: [-0.1028, 0.2031], significant: false } },
  },
};
