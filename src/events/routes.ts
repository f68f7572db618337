import type { ClickHouseClient } from '@clickhouse/client';
import { Readable } from 'node:stream';
import type { ClaimView } from '../claims/claims.ts';
import { insertDataError } from '../clickhouse/errors.ts';
import type { AppDeps } from '../server/context.ts';
import { answer, defineRoute, type Feature } from '../server/route.ts';
import { deletionResultSchema } from '../validation.ts';
import { deleteUser } from './delete-user.ts';
import { userAliasParam } from './rows.ts';
import { GroupCommitter } from './group-commit.ts';
import { MAX_EVENT_BATCH_BYTES } from './limits.ts';
import { encodeEventBatch, EVENT_COLUMNS, type EventChunk } from './encode.ts';
import { eventClaimView, insertOnce } from './message-ids.ts';
import { needsNumbers, numberUsers, UserNumbers } from './user-numbers.ts';
import { eventBatchSchema, ingestResultSchema } from './schema.ts';

export function createEventCommitter(deps: AppDeps): GroupCommitter<EventChunk> {
  const { ingest } = deps.config;
  // The process's view of the message ids claimed in the window, and its user numbers; cluster
  // mode is known only once the database is connected, after the route table is built.
  let claims: ClaimView | undefined;
  let numbers: UserNumbers | undefined;
  // A flush that hands its slot on (below) is still reading its claims: the next flush numbers
  // its users meanwhile, and its own store step (claim filter, INSERT, claims read) waits for
  // that read to end, so that the INSERTs in flight stay within INGEST_MAX_CONCURRENT_FLUSHES and
  // each flush's claims read finds the previous flush's part already read.
  let reading: Promise<void> | undefined;
  const insert = async (chunks: EventChunk[], rows: number, handOff: () => void) => {
    try {
      const client = deps.db.client();
      claims ??= eventClaimView({ maxBytes: deps.config.claimFilterMaxBytes, clustered: deps.db.cluster !== undefined });
      numbers ??= new UserNumbers({ maxUsers: deps.config.userNumbersMaxUsers, clustered: deps.db.cluster !== undefined });
      const held = numbers;
      await numberUsers(client, chunks, held);
      if (reading) await reading;
      // Only a flush with message ids has a claims read after its INSERT.
      const keyed = chunks.some((c) => c.keys !== undefined);
      let ended!: () => void;
      const end = new Promise<void>((resolve) => (ended = resolve));
      try {
        await insertOnce(
          client,
          chunks,
          async (bodies) => {
            await insertEvents(client, bodies);
            // The INSERT is acknowledged; what is left of this flush is its claims read (message
            // ids). When the requests waiting have users to number, their claims round need not
            // wait for it: the next flush starts now, and only its INSERT waits. Without new
            // users the next flush starts when this one ends, as before, and takes every request
            // that arrived meanwhile (bench/ingest/README.md, 2026-11-27 02:50).
            if (keyed && committer.waitingChunks.length > 0 && needsNumbers(committer.waitingChunks, held)) {
              reading = end;
              handOff();
            }
          },
          { claims, db: deps.db },
        );
      } finally {
        if (reading === end) reading = undefined;
        ended();
      }
    } catch (err) {
      // The requests get a 503 (retry), or a 400 when their own rows are at fault: the engine's
      // message is only here, for the operator.
      deps.log.error({ msg: 'storing events failed', rows, requests: chunks.length, error: String((err as Error)?.message ?? err).slice(0, 2000) });
      throw err;
    }
  };
  const committer = new GroupCommitter<EventChunk>(insert, {
    // The encoded rows are what a waiting request holds (the byte bound of the queue).
    sizeOf: (chunk: EventChunk) => chunk.body.length,
    maxRows: ingest.batchMaxRows,
    delayMs: ingest.batchDelayMs,
    maxQueuedRows: ingest.maxQueuedRows,
    maxQueuedBytes: ingest.maxQueuedBytes,
    maxWaitMs: ingest.maxQueueWaitMs,
    maxConcurrentFlushes: ingest.maxConcurrentFlushes,
    classify: insertDataError,
  });
  return committer;
}

/**
 * One INSERT into events of RowBinary chunks (encode.ts, columns EVENT_COLUMNS), sent as they
 * are: one raw body. The materialized views fill user_properties and group_memberships from the
 * same INSERT. Resolves once ClickHouse has acknowledged it.
 */
export async function insertEvents(client: ClickHouseClient, chunks: readonly Buffer[], table = 'events'): Promise<void> {
  const result = await client.exec({
    query: table === 'events' ? INSERT_EVENTS : insertInto(table),
    values: Readable.from(chunks, { objectMode: false }),
    clickhouse_settings: {
      async_insert: 0,
      wait_end_of_query: 1,
      // One block for the whole body, whatever its size (the engine squashes parsed rows until
      // either threshold is reached): it writes nothing before all of it is parsed, so a body it
      // refuses left no part behind (GroupCommitter relies on it). The defaults (~1M rows, 256 MiB)
      // would allow several blocks for a flush of INGEST_BATCH_ROWS=1000000 or of large events.
      min_insert_block_size_rows: '1000000000000',
      min_insert_block_size_bytes: '1000000000000',
      // Every request of the flush waits for this INSERT, and the next flush for its end: its
      // threads run at nice -5, ahead of the engine's background merges (nice 10 or 0,
      // src/clickhouse/engine.ts). The engine's threads take it for this query only and return to
      // 0 after. A no-op without CAP_SYS_NICE, like the merges' nice; where the kernel groups
      // threads by session (sched_autogroup), it orders the engine's threads among themselves, not
      // against the service's. The open loop's slow INSERTs spent most of their time waiting for
      // a core; its request p99 over an hour's runs: median 255 ms against 465 at nice 0, still
      // not reliably under 250 (bench/ingest/README.md, 2026-11-27 11:11).
      os_thread_priority: '-5',
    },
  });
  // An INSERT answers with an empty body; read it to the end so the socket goes back to the pool.
  for await (const _ of result.stream);
}

/** `table`: events, or a table of its columns (bench/ingest/structures.ts's variants). */
const insertInto = (table: string) => `INSERT INTO ${table} (${EVENT_COLUMNS.join(', ')}) FORMAT RowBinary`;
const INSERT_EVENTS = insertInto('events');

/** POST /1.0/event, and the group committer its requests share (drained at shutdown). */
export function eventsFeature(deps: AppDeps): Feature {
  const committer = createEventCommitter(deps);
  return {
    drain: () => committer.drain(),
    routes: [
      defineRoute({
        operationId: 'sendEvents',
        method: 'POST',
        path: '/1.0/event',
        tag: 'events',
        summary: 'Send 1..100 events; 200 only after they are committed',
        scope: 'events',
        rateLimit: 'event',
        // A queue that is full or not moving refuses before the body is read (a fast 503).
        admit: () => committer.admit(),
        body: {
          schema: eventBatchSchema,
          // Checked and encoded in one walk; the schema answers the 400 (encode.ts).
          parse: (raw, auth) => {
            const receivedAt = new Date();
            return { chunk: encodeEventBatch(raw, auth.orgId, receivedAt), receivedAt: receivedAt.getTime() };
          },
          // Every batch the contract allows fits (limits.ts derives it: ~45 MB with everything escaped).
          limitBytes: Math.max(deps.config.bodyLimitBytes, MAX_EVENT_BATCH_BYTES),
          example: [{ type: 'track', event_name: 'signup', user_alias: 'user-42', properties: { plan: 'pro' } }],
        },
        success: { status: 200, description: 'Committed', schema: ingestResultSchema, example: { count: 100, duplicates: 3, lag: 12 } },
        errors: [400, 401, 403, 413, 415, 429, 503],
        handler: async ({ body: { chunk, receivedAt }, signal }) => {
          const committedAt = await committer.submit(chunk, chunk.rows, signal);
          return { count: chunk.rows, duplicates: chunk.duplicates, lag: committedAt - receivedAt };
        },
      }),
      defineRoute({
        operationId: 'deleteUser',
        method: 'DELETE',
        path: '/1.0/user/:user_alias',
        tag: 'events',
        summary: "Delete a user's data: their events, properties and group memberships",
        description:
          'Gone from event search, event aggregation and the user profile when the 202 is sent, and across restarts (lightweight DELETE: masked at once, ' +
          'removed from disk when the parts merge). Events sent for the alias afterwards are new events and are stored. An alias never seen counts 0.',
        scope: 'events',
        rateLimit: 'event',
        params: { user_alias: { description: 'The user_alias the events were sent with (URL-encoded)', schema: { type: 'string', minLength: 1, maxLength: 255 }, example: 'user-42' } },
        success: { status: 202, description: 'Deleted: the rows the user had (events, current properties and memberships)', schema: deletionResultSchema, example: { deleted: 12 } },
        errors: [400, 401, 403, 429, 503],
        handler: async ({ auth, params }) => {
          return answer({ status: 202, body: { deleted: await deleteUser(deps.db, auth.orgId, userAliasParam(params)) } });
        },
      }),
    ],
  };
}

