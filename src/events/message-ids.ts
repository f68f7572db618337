/**
 * Exactly-once storage of events that carry a `message_id`, on the claims module
 * (src/claims/claims.ts states the rule, the in-memory view and cluster mode; docs/api.md the
 * guarantees as users see them; docs/architecture.md the protocol; schema/060 the storage).
 *
 * The claim of an event is its own row: `events.message_key`, MD5 of `org_id:message_id`, written
 * in the same part as the event, so no crash can store an event without its claim or the other
 * way round. One flush of the group committer (one INSERT for many requests, possibly of several
 * organizations, possibly racing other flushes of this or another instance):
 *   1. tests each key against the claim view and adds it, in one step: a key the view cannot
 *      have held is new (not claimed up to the watermark, not met earlier in the flush);
 *   2. of the others, keeps the first occurrence of each key in the flush (same request or
 *      another one) and looks the rest up in `events` (the last 7 days: retries, and the view's
 *      false positives); claimed ones are left out;
 *   3. INSERTs (its keys are in the view since step 1, for the other flushes of this process);
 *   4. advances the view (the claims committed since step 2, by block number): where another
 *      flush claimed one of its keys in a lower block (it committed first), this flush lost a
 *      race, and deletes its own copies (lightweight DELETE) before any request is answered; a
 *      later copy of another flush (whose service may have died before deleting it) goes too.
 * A flush the group committer splits (a refused batch) runs every step again for each half.
 * Flushes without any message_id skip all of it.
 *
 * Cluster mode (claims.ts): no view, so every key takes step 2's lookup, and step 4 reads the
 * flush's stored keys back by key instead (non-replicated shards: `settleByKey`); the losers are
 * deleted on their shard.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { ClaimView, losers, type ClaimKey, type ClaimTable, type ClaimViewOptions, type StoredClaim } from '../claims/claims.ts';
import { DEFAULT_CLAIM_FILTER_MAX_BYTES } from '../config.ts';
import type { Database } from '../clickhouse/connection.ts';
import { deleteWhere } from '../clickhouse/delete.ts';
import { ParamBag } from '../clickhouse/sql.ts';
import { orgsCondition } from '../clickhouse/tenant.ts';
import type { EventChunk } from './encode.ts';
import { MAX_EVENT_AGE_MS } from './rows.ts';

/** An item whose message_id was stored less than this long ago (same organization) is not stored again. */
export const MESSAGE_ID_WINDOW_MS = 7 * 24 * 60 * 60 * 1000;

/** Where event claims live: the events themselves (schema/060). */
export const EVENT_CLAIMS: ClaimTable = {
  table: 'events',
  key: 'message_key',
  isClaim: "message_key != toFixedString('', 16)",
  claimedAt: 'received_at',
  windowMs: MESSAGE_ID_WINDOW_MS,
  // A stored timestamp is never more than MAX_EVENT_AGE_MS before its reception (rows.ts): the
  // sorting key's day then prunes the read to the window's weeks.
  prune: (since) => `timestamp >= ${since} - toIntervalMillisecond(${MAX_EVENT_AGE_MS})`,
  rowId: 'event_id',
  scope: 'org_id',
};

/**
 * The partition id of an event time in `events` (schema/002: PARTITION BY toYYYYMM(timestamp),
 * UTC): '202611'.
 */
export function eventPartition(ms: number): string {
  const d = new Date(ms);
  return String(d.getUTCFullYear() * 100 + d.getUTCMonth() + 1);
}

/**
 * The partitions of a flush's rows when all of its chunks are stored whole: the months of each
 * chunk's earliest and latest event (a chunk spans less than a month: MAX_EVENT_AGE_MS, never
 * after reception), each of which holds one of its rows. Undefined when a row was left out (its
 * month might then hold none of the flush's rows).
 */
function flushPartitions(chunks: readonly EventChunk[], droppedRows: number): Set<string> | undefined {
  if (droppedRows > 0) return undefined;
  const partitions = new Set<string>();
  for (const c of chunks) {
    if (!c.timeRange) return undefined;
    partitions.add(eventPartition(c.timeRange[0]));
    partitions.add(eventPartition(c.timeRange[1]));
  }
  return partitions;
}

/** The claim view of event message ids (one per process: every flush shares it). */
export function eventClaimView(options: ClaimViewOptions): ClaimView {
  return new ClaimView(EVENT_CLAIMS, options);
}

export { EventChunk, encodeEventChunk, messageKey } from './encode.ts';

interface OwnRow {
  chunk: EventChunk;
  /** Its row in the chunk. */
  position: number;
  key: ClaimKey;
  /** The block of its part, when the advance read it back (an INSERT over two partitions makes two parts). */
  block?: bigint;
}

/** A row of a chunk. */
interface RowRef {
  chunk: EventChunk;
  position: number;
}

/** A row's key as a map key (16 latin1 characters). */
const keyId = (chunk: EventChunk, row: number) => chunk.keys!.toString('latin1', 16 * row, 16 * row + 16);

/**
 * Stores the chunks' rows once per message id (steps above) with `insert`, which takes the bodies
 * to send as one INSERT. Sets each chunk's `duplicates`. Throws what `insert` or a read throws;
 * nothing is answered before it returns. `claims`: the process's view; without it, a fresh one
 * (a process of its own, as far as the race is concerned). `db`: cluster mode, where a losing
 * copy is deleted node by node (a Distributed table takes no DELETE).
 */
export async function insertOnce(
  client: ClickHouseClient,
  chunks: readonly EventChunk[],
  insert: (bodies: Buffer[]) => Promise<void>,
  opts: { now?: number; clustered?: boolean; claims?: ClaimView; db?: Database } = {},
): Promise<void> {
  const now = opts.now ?? Date.now();
  for (const c of chunks) c.duplicates = 0;
  if (!chunks.some((c) => c.keys)) return insert(chunks.map((c) => c.body));
  const view = opts.claims ?? eventClaimView({ maxBytes: DEFAULT_CLAIM_FILTER_MAX_BYTES, clustered: opts.clustered ?? false });
  await view.ready(client);
  const from = view.watermark;

  // Steps 1 and 2 in one pass, each key tested and added to the view at once: a key the view
  // cannot have held was not claimed up to the watermark and was not met earlier in this flush
  // (every earlier key of the flush was added before it). Only the others (repeats within the
  // flush, retries, false positives) are sorted out by key, below. A key added here whose INSERT
  // then fails stays in the view: a false positive, which only costs a lookup.
  let keyed = 0;
  const suspects: RowRef[] = [];
  for (const chunk of chunks) {
    if (!chunk.keys) continue;
    for (let row = 0; row < chunk.rows; row++) {
      if (!chunk.hasKey(row)) continue;
      keyed++;
      if (view.testAndAdd(chunk.keys, now, 16 * row)) suspects.push({ chunk, position: row });
    }
  }
  // The rows left out, per chunk: repeats of a key met earlier in the flush, and keys claimed before.
  const dropped = new Map<EventChunk, number[]>();
  const drop = (chunk: EventChunk, row: number) => (dropped.get(chunk) ?? dropped.set(chunk, []).get(chunk)!).push(row);
  if (suspects.length > 0) {
    const first = new Map<string, RowRef>();
    for (const chunk of chunks) {
      if (!chunk.keys) continue;
      for (let row = 0; row < chunk.rows; row++) {
        if (!chunk.hasKey(row)) continue;
        const id = keyId(chunk, row);
        if (first.has(id)) drop(chunk, row);
        else first.set(id, { chunk, position: row });
      }
    }
    const maybe = suspects.filter((r) => {
      const f = first.get(keyId(r.chunk, r.position))!;
      return f.chunk === r.chunk && f.position === r.position;
    });
    if (maybe.length > 0) {
      const orgs = [...new Set(chunks.map((c) => c.orgId))];
      const claimed = new Set<string>();
      for (const c of await view.lookup(client, maybe.map((r) => r.chunk.key(r.position)!), orgs)) claimed.add(c.key.toString('latin1'));
      for (const r of maybe) if (claimed.has(keyId(r.chunk, r.position))) drop(r.chunk, r.position);
    }
  }

  const bodies: Buffer[] = [];
  let droppedRows = 0;
  for (const chunk of chunks) {
    const rows = dropped.get(chunk)?.sort((a, b) => a - b) ?? [];
    chunk.duplicates = rows.length;
    droppedRows += rows.length;
    if (rows.length < chunk.rows) bodies.push(rows.length === 0 ? chunk.body : chunk.without(rows));
  }
  if (bodies.length > 0) await insert(bodies);
  if (view.readsBack && keyed > droppedRows) return settleByKey(client, view, chunks, dropped, opts.db);
  if (keyed === droppedRows || !view.ordered) return;

  // Step 4. The marker: the first row this flush stored with a key.
  const marker = firstStored(chunks, dropped);
  // The INSERT made one part per partition of its rows (insertEvents: one block): when those are
  // all that was committed since `from`, the parts list says so and no row is read back.
  const { own: ownBlocks, others } = await view.advance(client, [marker], from, flushPartitions(chunks, droppedRows));
  const block = ownBlocks.get(marker);
  // The marker row is the flush's own: not finding it means something deleted it meanwhile, and
  // the order of this flush against others is unknown. A 503: the retry is decided afresh.
  if (block === undefined) throw new Error('message ids: the flush could not find its own rows after its INSERT');
  if (others.length === 0) return;
  // Claims of other parts: the rows this flush stored with a key, by key.
  const own = new Map<string, OwnRow>();
  for (const chunk of chunks) {
    if (!chunk.keys) continue;
    const left = new Set(dropped.get(chunk));
    for (let row = 0; row < chunk.rows; row++) if (chunk.hasKey(row) && !left.has(row)) own.set(keyId(chunk, row), { chunk, position: row, key: chunk.key(row)! });
  }
  for (const claim of others) {
    const row = own.get(claim.key.toString('latin1'));
    if (row && row.chunk.eventId(row.position) === claim.rowId) row.block = claim.block;
  }
  // Two claims of one key: the later one goes, whoever wrote it (see claims.ts). Own keys are
  // decided here; other keys the view already held are looked up (their first claim may be older
  // than this read), which only happens when writers raced.
  const contested: StoredClaim[] = [];
  const known: StoredClaim[] = [];
  for (const claim of others) {
    const row = own.get(claim.key.toString('latin1'));
    if (row && row.chunk.eventId(row.position) !== claim.rowId) contested.push(claim, { key: row.key, rowId: row.chunk.eventId(row.position), scope: row.chunk.orgId, block: row.block ?? block });
    else if (!row && claim.known) known.push(claim);
  }
  if (known.length > 0) {
    const orgs = [...new Set(known.map((c) => c.scope))];
    // Each key once: another writer's read may hold many copies of one key.
    const keys = new Map(known.map((c) => [c.key.toString('latin1'), c.key]));
    contested.push(...(await view.lookup(client, [...keys.values()], orgs)));
  }
  const undone = losers(contested);
  if (undone.length === 0) return;
  await deleteRows(client, undone);
  const ownRows = new Map([...own.values()].map((r) => [r.chunk.eventId(r.position), r]));
  for (const c of new Map(undone.map((c) => [c.rowId, c])).values()) {
    const row = ownRows.get(c.rowId);
    if (row) row.chunk.duplicates++;
  }
}

/**
 * Step 4 in cluster mode on non-replicated shards (claims.ts): the keys this flush stored, read
 * back by key after its INSERT (synchronous: the rows are on their shard), with their block
 * numbers. Every copy of a key but the first committed goes, this flush's and any other writer's
 * (whose service may have died before deleting it), before any request is answered. A row of this
 * flush missing from the read was deleted meanwhile: by the writer of an earlier copy of its key
 * (whose claim the read then finds: this flush's copy lost), or by a deletion of its user (no
 * claim of its key left: it was stored, then deleted).
 */
async function settleByKey(client: ClickHouseClient, view: ClaimView, chunks: readonly EventChunk[], dropped: ReadonlyMap<EventChunk, readonly number[]>, db: Database | undefined): Promise<void> {
  if (!db?.cluster) throw new Error('message ids: cluster mode needs the database to undo a losing copy');
  const own = new Map<string, OwnRow>();
  const orgs = new Set<string>();
  for (const chunk of chunks) {
    if (!chunk.keys) continue;
    const left = new Set(dropped.get(chunk));
    for (let row = 0; row < chunk.rows; row++) {
      if (!chunk.hasKey(row) || left.has(row)) continue;
      own.set(chunk.eventId(row), { chunk, position: row, key: chunk.key(row)! });
      orgs.add(chunk.orgId);
    }
  }
  const { claims, losers: undone } = await view.settle(client, [...own.values()].map((r) => r.key), [...orgs]);
  const found = new Set(claims.map((c) => c.rowId));
  const claimedKeys = new Set(claims.map((c) => c.key.toString('latin1')));
  // Own rows already deleted by the writer of an earlier copy: this flush's copies lost.
  for (const [eventId, row] of own) if (!found.has(eventId) && claimedKeys.has(row.key.toString('latin1'))) row.chunk.duplicates++;
  if (undone.length === 0) return;
  const byOrg = new Map<string, string[]>();
  for (const c of undone) (byOrg.get(c.scope) ?? byOrg.set(c.scope, []).get(c.scope)!).push(c.rowId);
  for (const [orgId, ids] of byOrg) {
    const unique = [...new Set(ids)];
    for (let i = 0; i < unique.length; i += DELETE_IDS_PER_QUERY) {
      await deleteWhere(db, 'events', orgId, (bag) => `event_id IN (SELECT arrayJoin(${bag.add(unique.slice(i, i + DELETE_IDS_PER_QUERY), 'Array(UUID)')}))`);
    }
  }
  for (const c of new Map(undone.map((c) => [c.rowId, c])).values()) {
    const row = own.get(c.rowId);
    if (row) row.chunk.duplicates++;
  }
}

/** The event id of the first row with a key that the flush stored (`dropped`: the rows it left out, ascending). */
function firstStored(chunks: readonly EventChunk[], dropped: ReadonlyMap<EventChunk, readonly number[]>): string {
  for (const chunk of chunks) {
    if (!chunk.keys) continue;
    const left = dropped.get(chunk) ?? [];
    for (let row = 0, d = 0; row < chunk.rows; row++) {
      while (d < left.length && left[d] < row) d++;
      if (chunk.hasKey(row) && left[d] !== row) return chunk.eventId(row);
    }
  }
  throw new Error('message ids: no stored row with a key');
}

/**
 * Event ids per DELETE: the ids travel as a query parameter in the URL, which the engine bounds
 * (`http_max_uri_size`, 1 MiB; ~37 characters an id). Only a writer that stored many ids twice
 * (not this service) leaves more losers than this for one flush to undo.
 */
const DELETE_IDS_PER_QUERY = 20_000;

/** Lightweight DELETE of these events (claims that lost); it returns once every query sees it. */
async function deleteRows(client: ClickHouseClient, rows: readonly StoredClaim[]): Promise<void> {
  const ids = [...new Set(rows.map((r) => r.rowId))];
  const orgIds = [...new Set(rows.map((r) => r.scope))];
  for (let i = 0; i < ids.length; i += DELETE_IDS_PER_QUERY) {
    const params = new ParamBag();
    await client.command({
      query: `DELETE FROM events WHERE ${orgsCondition('events', orgIds, params)} AND event_id IN (SELECT arrayJoin(${params.add(ids.slice(i, i + DELETE_IDS_PER_QUERY), 'Array(UUID)')}))`,
      query_params: params.toParams(),
      clickhouse_settings: { lightweight_deletes_sync: '2' },
    });
  }
}
