/**
 * The event write protocol: the flush of the group committer the write route shares (user
 * numbers, then `insertOnce`: exactly once by message_id) and the INSERT into events it ends with.
 * The route table is routes.ts; the protocol as a whole: docs/architecture.md ("Writing events").
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { Readable } from 'node:stream';
import type { ClaimView } from '../claims/claims.ts';
import { insertDataError } from '../clickhouse/errors.ts';
import type { Database } from '../clickhouse/connection.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { GroupCommitter } from './group-commit.ts';
import { EVENT_COLUMNS, type EventChunk } from './encode.ts';
import { eventClaimView, insertOnce } from './message-ids.ts';
import { needsNumbers, numberUsers, UserNumbers } from './user-numbers.ts';

/** What the committer uses of the app's dependencies (AppDeps, server/context.ts, has them). */
export interface EventCommitterDeps {
  config: Config;
  db: Database;
  log: Logger;
}

/**
 * The group committer of POST /1.0/event (its requests share it; drained at shutdown): a flush
 * numbers its users, then stores its chunks once by message_id (`insertOnce`) in one INSERT.
 */
export function createEventCommitter(deps: EventCommitterDeps): GroupCommitter<EventChunk> {
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
