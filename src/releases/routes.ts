import { requireScope } from '../server/auth.ts';
import { jsonBody } from '../server/body.ts';
import type { AppDeps, AppRouter } from '../server/context.ts';
import { parseOrThrow } from '../errors.ts';
import { rateLimit } from '../server/rate-limit.ts';
import { releaseBodySchema, releaseListQuerySchema } from './schema.ts';
import { createRelease, listReleases } from './store.ts';

export function releaseRoutes(router: AppRouter, deps: AppDeps) {
  const guard = [requireScope('releases', deps.db, deps.tokens), rateLimit('release', deps.config.rateLimits.releasesPerSecond)];
  router.post('/1.0/release', ...guard, jsonBody(deps.config.bodyLimitBytes), async (ctx) => {
    const body = parseOrThrow(releaseBodySchema, ctx.state.body ?? {});
    ctx.status = 201;
    ctx.body = await createRelease(deps.db.client(), ctx.state.auth.orgId, body);
  });
  router.get('/1.0/release', ...guard, async (ctx) => {
    const query = parseOrThrow(releaseListQuerySchema, { ...ctx.query }, 'Invalid query string');
    ctx.body = { releases: await listReleases(deps.db.client(), ctx.state.auth.orgId, query) };
  });
}
