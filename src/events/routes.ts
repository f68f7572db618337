import type { ClickHouseClient } from '@clickhouse/client';
import { requireScope } from '../server/auth.ts';
import { jsonBody } from '../server/body.ts';
import type { AppDeps, AppRouter } from '../server/context.ts';
import { rateLimit } from '../server/rate-limit.ts';
import { GroupCommitter } from './group-commit.ts';
import { toEventRows, type EventRow } from './rows.ts';
import { parseEventBatch } from './schema.ts';

export function createEventCommitter(deps: AppDeps): GroupCommitter<EventRow> {
  const { ingest } = deps.config;
  return new GroupCommitter<EventRow>((rows) => insertEvents(deps.db.client(), rows), {
    maxRows: ingest.batchMaxRows,
    delayMs: ingest.batchDelayMs,
    maxQueuedRows: ingest.maxQueuedRows,
    maxConcurrentFlushes: ingest.maxConcurrentFlushes,
  });
}

/** One INSERT into events; the materialized views fill user_properties and group_memberships. */
export async function insertEvents(client: ClickHouseClient, rows: EventRow[]): Promise<void> {
  await client.insert({ table: 'events', values: rows, format: 'JSONEachRow', clickhouse_settings: { async_insert: 0 } });
}

export function eventRoutes(router: AppRouter, deps: AppDeps, committer: GroupCommitter<EventRow>) {
  router.post(
    '/1.0/event',
    requireScope('events', deps.db, deps.tokens),
    rateLimit('event', deps.config.rateLimits.eventsPerSecond),
    jsonBody(deps.config.bodyLimitBytes),
    async (ctx) => {
      const receivedAt = new Date();
      const events = parseEventBatch(ctx.state.body);
      const committedAt = await committer.submit(toEventRows(ctx.state.auth.orgId, events, receivedAt));
      ctx.body = { count: events.length, lag: committedAt - receivedAt.getTime() };
    },
  );
}
