import { requireScope } from '../server/auth.ts';
import { jsonBody } from '../server/body.ts';
import type { Middleware } from 'koa';
import type { AppDeps, AppRouter, AppState } from '../server/context.ts';
import { rateLimit } from '../server/rate-limit.ts';
import { aggregate } from './aggregation.ts';
import { handleSearch, handleWriteResponses } from './search.ts';
import { summarize } from './summary.ts';

export function responseRoutes(router: AppRouter, deps: AppDeps) {
  // 1000 records with answers exceed 1 MiB, and so can a read's filters (100 of 1000 values each).
  const body = jsonBody(deps.config.bodyLimitBytes * 16);
  router.post(
    '/1.0/survey/response',
    requireScope('responses:write', deps.db, deps.tokens),
    rateLimit('survey write', deps.config.rateLimits.queriesPerSecond),
    body,
    async (ctx) => {
      ctx.body = await handleWriteResponses(deps.db.client(), ctx.state.auth.orgId, ctx.state.body);
    },
  );

  const read = [requireScope('responses:read', deps.db, deps.tokens), rateLimit('query', deps.config.rateLimits.queriesPerSecond), body];
  const queries = {
    '/1.0/survey/:survey_ids/response': handleSearch,
    '/1.0/survey/:survey_ids/response/summary': summarize,
    '/1.0/survey/:survey_ids/response/aggregation': aggregate,
  } as const;
  for (const [path, handler] of Object.entries(queries)) {
    const run: Middleware<AppState> = async (ctx) => {
      const params = (ctx as unknown as { params: { survey_ids: string } }).params;
      ctx.body = await handler(deps.db.client(), ctx.state.auth.orgId, params.survey_ids, ctx.state.body ?? {});
    };
    router.register(path, ['SEARCH'], [...read, run] as never);
  }
}
