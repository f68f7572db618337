/**
 * Exactly-once storage of events that carry a `message_id` (schema/010-event-message-ids.sql has
 * the tables, the measurements and the race rule; README.md the guarantees as users see them).
 *
 * One flush of the group committer (one INSERT for many requests, possibly of several
 * organizations, possibly of several service instances at once on the same database):
 *   1. reads the highest claim block number committed so far (`before`);
 *   2. looks the flush's message keys up among the claims of the last 7 days;
 *   3. leaves out of the INSERT every row whose key is already claimed, or is repeated earlier in
 *      the same flush (same request or another one): the first occurrence is the one stored;
 *   4. INSERTs the rest; the materialized view writes their claims in the same statement;
 *   5. reads the highest claim block again: when it is `before` + 1, the only claim part committed
 *      meanwhile is this flush's own and no race was possible (one INSERT in flight, one instance:
 *      always). Otherwise it reads the claims of its keys committed after `before`: where another
 *      flush's claim has a lower block number (it committed first), this flush lost a race and
 *      deletes its own rows and claims before any request of the flush is answered.
 * Steps 1-5 all run again for each half when the group committer splits a refused batch, so a
 * split recounts everything from scratch. Flushes without any message_id skip all of it.
 *
 * Why no in-process cache of recent ids: a hit would only spare a key in a lookup that runs
 * anyway for the flush's other keys (new ids, the common case, always need the database: another
 * instance may have stored them), and it would have to be kept consistent with step 5's deletes.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { hash } from 'node:crypto';
import { ParamBag } from '../clickhouse/sql.ts';
import { formatDbDate } from '../time/iso.ts';
import { encodeEventRows, toEventRows } from './rows.ts';
import type { ParsedEvent } from './schema.ts';

/** An item whose message_id was stored less than this long ago (same organization) is not stored again. */
export const MESSAGE_ID_WINDOW_MS = 7 * 24 * 60 * 60 * 1000;

/** The claim key of a message id: MD5 of `org_id:message_id`, hex; the view computes the same in SQL. */
export function messageKey(orgId: string, messageId: string): string {
  return hash('md5', `${orgId.toLowerCase()}:${messageId}`, 'hex');
}

/**
 * One request's rows as the group committer carries them: the JSONEachRow lines, and for each row
 * with a message id its key and event id. After its flush, `duplicates` says how many of its rows
 * were not stored because their message id already was.
 */
export class EventChunk {
  duplicates = 0;
  constructor(
    readonly orgId: string,
    readonly body: Buffer,
    readonly rows: number,
    /** Per row, its message key, or undefined; undefined when no row has a message id. */
    readonly keys?: readonly (string | undefined)[],
    /** Per row, its event id (only with `keys`). */
    readonly eventIds?: readonly string[],
  ) {}

  /** The body without the rows at these (ascending) positions. Lines end with '\n', which JSON text never holds raw. */
  without(positions: readonly number[]): Buffer {
    const kept: Buffer[] = [];
    let start = 0;
    let row = 0;
    let next = 0;
    while (start < this.body.length) {
      const end = this.body.indexOf(10, start) + 1 || this.body.length;
      if (positions[next] === row) next++;
      else kept.push(this.body.subarray(start, end));
      start = end;
      row++;
    }
    return Buffer.concat(kept);
  }
}

/**
 * A request's events as its chunk. Nothing of the request but the chunk outlives the handler: a
 * request waits up to an INSERT's duration for its commit, and a parsed body still referenced then
 * would be copied out of the young generation by every garbage collection meanwhile. The body is a
 * Buffer, outside the JS heap, for the same reason; keys and event ids are kept only when some item
 * has a message_id.
 */
export function encodeEventChunk(orgId: string, events: readonly ParsedEvent[], receivedAt: Date): EventChunk {
  const rows = toEventRows(orgId, events, receivedAt);
  const body = Buffer.from(encodeEventRows(rows), 'utf8');
  if (!rows.some((r) => r.message_id !== '')) return new EventChunk(orgId, body, rows.length);
  return new EventChunk(
    orgId,
    body,
    rows.length,
    rows.map((r) => (r.message_id === '' ? undefined : messageKey(orgId, r.message_id))),
    rows.map((r) => r.event_id),
  );
}

interface OwnRow {
  chunk: EventChunk;
  eventId: string;
}

/**
 * Stores the chunks' rows once per message id (steps above) with `insert`, which takes the bodies
 * to send as one INSERT. Sets each chunk's `duplicates`. Throws what `insert` or a lookup throws;
 * nothing is answered before it returns.
 */
export async function insertOnce(
  client: ClickHouseClient,
  chunks: readonly EventChunk[],
  insert: (bodies: Buffer[]) => Promise<void>,
  opts: { now?: number; clustered?: boolean } = {},
): Promise<void> {
  const now = opts.now ?? Date.now();
  for (const c of chunks) c.duplicates = 0;
  if (!chunks.some((c) => c.keys)) return insert(chunks.map((c) => c.body));

  // Cluster mode (CLICKHOUSE_CLUSTER): claims live in per-shard local tables behind a Distributed
  // one; block numbers are per shard and lightweight DELETEs do not go through Distributed, so
  // steps 1 and 5 are skipped: lookups and same-flush dedup hold, the race of two flushes of the
  // same id at the same moment is not closed there (README).
  const before = opts.clustered ? undefined : await highestClaimBlock(client);
  const claimed = await claimedKeys(client, distinctKeys(chunks), new Date(now - MESSAGE_ID_WINDOW_MS));

  const seen = claimed;
  const own = new Map<string, OwnRow>();
  const bodies: Buffer[] = [];
  for (const chunk of chunks) {
    if (!chunk.keys) {
      bodies.push(chunk.body);
      continue;
    }
    const dropped: number[] = [];
    chunk.keys.forEach((key, row) => {
      if (key === undefined) return;
      if (seen.has(key)) dropped.push(row);
      else {
        seen.add(key);
        own.set(key, { chunk, eventId: chunk.eventIds![row] });
      }
    });
    chunk.duplicates = dropped.length;
    if (dropped.length < chunk.rows) bodies.push(dropped.length === 0 ? chunk.body : chunk.without(dropped));
  }
  if (bodies.length > 0) await insert(bodies);
  if (own.size === 0 || before === undefined) return;

  // Fast path: when the highest claim block is just `before` + 1, the only claim part committed
  // since the lookup is this flush's own, so no other flush can hold a lower block on these keys.
  // (A week boundary, a DELETE or any other flush's INSERT in between takes the slow path.)
  const after = await highestClaimBlock(client);
  if (BigInt(after) === BigInt(before) + 1n) return;
  const lost = (await racesLost(client, own, before)).map((key) => own.get(key)!);
  if (lost.length === 0) return;
  await deleteOwnRows(client, lost);
  for (const row of lost) row.chunk.duplicates++;
}

function distinctKeys(chunks: readonly EventChunk[]): string[] {
  const keys = new Set<string>();
  for (const c of chunks) for (const k of c.keys ?? []) if (k !== undefined) keys.add(k);
  return [...keys];
}

async function rowsOf(client: ClickHouseClient, query: string, params: ParamBag): Promise<string[][]> {
  const rs = await client.query({ query, query_params: params.toParams(), format: 'TabSeparated' });
  const text = await rs.text();
  return text === '' ? [] : text.slice(0, -1).split('\n').map((line) => line.split('\t'));
}

/** Every claim with a block number up to this one was committed before the call (see the schema file). */
async function highestClaimBlock(client: ClickHouseClient): Promise<string> {
  const rows = await rowsOf(
    client,
    `SELECT max(max_block_number) FROM system.parts WHERE database = currentDatabase() AND table = 'event_message_ids' AND active`,
    new ParamBag(),
  );
  return rows[0]?.[0] ?? '0';
}

const keySet = (params: ParamBag, keys: readonly string[]) =>
  `message_key IN (SELECT toFixedString(unhex(arrayJoin(${params.add(keys, 'Array(String)')})), 16))`;

/** The keys, among these, claimed at or after `since`. */
async function claimedKeys(client: ClickHouseClient, keys: readonly string[], since: Date): Promise<Set<string>> {
  const params = new ParamBag();
  const rows = await rowsOf(
    client,
    `SELECT DISTINCT lower(hex(message_key)) FROM event_message_ids
     WHERE ${keySet(params, keys)} AND received_at >= ${params.add(formatDbDate(since), "DateTime64(3, 'UTC')")}`,
    params,
  );
  return new Set(rows.map((r) => r[0]));
}

/** The keys of this flush whose first claim (lowest block number) is another flush's. */
async function racesLost(client: ClickHouseClient, own: ReadonlyMap<string, OwnRow>, before: string): Promise<string[]> {
  const params = new ParamBag();
  const rows = await rowsOf(
    client,
    `SELECT lower(hex(message_key)), argMin(event_id, _block_number) FROM event_message_ids
     WHERE ${keySet(params, [...own.keys()])} AND _block_number > ${params.add(before, 'UInt64')}
     GROUP BY message_key`,
    params,
  );
  return rows.filter(([key, firstEventId]) => own.get(key)?.eventId !== firstEventId).map(([key]) => key);
}

/**
 * Lightweight DELETEs of these rows of this flush, events first (should the second fail, the claim
 * left behind still names a stored copy: the winner's). They return once every query sees them.
 */
async function deleteOwnRows(client: ClickHouseClient, rows: readonly OwnRow[]): Promise<void> {
  const eventIds = rows.map((r) => r.eventId);
  const orgIds = [...new Set(rows.map((r) => r.chunk.orgId))];
  const settings = { lightweight_deletes_sync: '2' };
  let params = new ParamBag();
  await client.command({
    query: `DELETE FROM events WHERE org_id IN (SELECT arrayJoin(${params.add(orgIds, "Array(UUID)")})) AND event_id IN (SELECT arrayJoin(${params.add(eventIds, "Array(UUID)")}))`,
    query_params: params.toParams(),
    clickhouse_settings: settings,
  });
  params = new ParamBag();
  await client.command({
    query: `DELETE FROM event_message_ids WHERE event_id IN (SELECT arrayJoin(${params.add(eventIds, "Array(UUID)")}))`,
    query_params: params.toParams(),
    clickhouse_settings: settings,
  });
}
