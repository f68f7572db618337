import type * as v from 'valibot';
import { IDEMPOTENCY_DESCRIPTION, idempotent } from '../idempotency/route.ts';
import { IdempotencyStore } from '../idempotency/store.ts';
import type { AppDeps } from '../server/context.ts';
import { defineRoute, type Feature } from '../server/route.ts';
import { releaseBodySchema, releaseListQuerySchema, releaseListSchema, releaseSchema } from './schema.ts';
import { createRelease, listReleases } from './store.ts';

export function releasesFeature(deps: AppDeps): Feature {
  const keys = new IdempotencyStore(() => deps.db.client(), () => deps.db.cluster !== undefined);
  return {
    routes: [
      defineRoute<v.InferOutput<typeof releaseBodySchema>>({
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
        handler: idempotent(keys, 'createRelease', 201, ({ auth, body }) => createRelease(deps.db.client(), auth.orgId, body)),
      }),
      defineRoute<undefined, v.InferOutput<typeof releaseListQuerySchema>>({
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
    ],
  };
}
