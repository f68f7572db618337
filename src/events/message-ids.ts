/**
 * Exactly-once storage of events that carry a `message_id`, on the claims module
 * (src/claims/claims.ts states the rule, the in-memory view and cluster mode; docs/api.md the
 * guarantees as users see them; docs/architecture.md the protocol; schema/060 the storage).
 *
 * The claim of an event is its own row: `events.message_key`, MD5 of `org_id:message_id`, written
 * in the same part as the event, so no crash can store an event without its claim or the other
 * way round. One flush of the group committer (one INSERT for many requests, possibly of several
 * organizations, possibly racing other flushes of this or another instance):
 *   1. keeps the first occurrence of each key in the flush (same request or another one);
 *   2. asks the claim view about the rest: the keys it may hold (retries, and its false
 *      positives) are looked up in `events` (the last 7 days); claimed ones are left out;
 *   3. adds the keys it stores to the view and INSERTs;
 *   4. advances the view (the claims committed since step 2, by block number): where another
 *      flush claimed one of its keys in a lower block (it committed first), this flush lost a
 *      race, and deletes its own copies (lightweight DELETE) before any request is answered; a
 *      later copy of another flush (whose service may have died before deleting it) goes too.
 * A flush the group committer splits (a refused batch) runs every step again for each half.
 * Flushes without any message_id skip all of it.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { ClaimView, DEFAULT_CLAIM_FILTER_MAX_BYTES, losers, type ClaimKey, type ClaimTable, type ClaimViewOptions, type StoredClaim } from '../claims/claims.ts';
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

/**
 * Stores the chunks' rows once per message id (steps above) with `insert`, which takes the bodies
 * to send as one INSERT. Sets each chunk's `duplicates`. Throws what `insert` or a read throws;
 * nothing is answered before it returns. `claims`: the process's view; without it, a fresh one
 * (a process of its own, as far as the race is concerned).
 */
export async function insertOnce(
  client: ClickHouseClient,
  chunks: readonly EventChunk[],
  insert: (bodies: Buffer[]) => Promise<void>,
  opts: { now?: number; clustered?: boolean; claims?: ClaimView } = {},
): Promise<void> {
  const now = opts.now ?? Date.now();
  for (const c of chunks) c.duplicates = 0;
  if (!chunks.some((c) => c.keys)) return insert(chunks.map((c) => c.body));
  const view = opts.claims ?? eventClaimView({ maxBytes: DEFAULT_CLAIM_FILTER_MAX_BYTES, clustered: opts.clustered ?? false });
  await view.ready(client);
  const from = view.watermark;

  // Step 1: the first occurrence of each key; step 2: those the view may hold.
  const first = new Map<string, OwnRow>();
  const repeated = new Map<EventChunk, number[]>();
  const maybe: ClaimKey[] = [];
  for (const chunk of chunks) {
    if (!chunk.keys) continue;
    chunk.keys.forEach((key, row) => {
      if (key === undefined) return;
      const id = key.toString('latin1');
      if (first.has(id)) return void (repeated.get(chunk) ?? repeated.set(chunk, []).get(chunk)!).push(row);
      first.set(id, { chunk, position: row, key });
      if (view.mayHold(key)) maybe.push(key);
    });
  }
  const claimed = new Set<string>();
  if (maybe.length > 0) {
    const orgs = [...new Set(chunks.map((c) => c.orgId))];
    for (const c of await view.lookup(client, maybe, orgs)) claimed.add(c.key.toString('latin1'));
  }

  // The rows left out, per chunk (ascending), and the rows this flush stores.
  const own = new Map<string, OwnRow>();
  const dropped = new Map<EventChunk, number[]>(repeated);
  for (const [id, row] of first) {
    if (claimed.has(id)) (dropped.get(row.chunk) ?? dropped.set(row.chunk, []).get(row.chunk)!).push(row.position);
    else own.set(id, row);
  }
  const bodies: Buffer[] = [];
  for (const chunk of chunks) {
    const rows = dropped.get(chunk)?.sort((a, b) => a - b) ?? [];
    chunk.duplicates = rows.length;
    if (rows.length < chunk.rows) bodies.push(rows.length === 0 ? chunk.body : chunk.without(rows));
  }
  for (const row of own.values()) view.add(row.key, now);
  if (bodies.length > 0) await insert(bodies);
  if (own.size === 0 || !view.ordered) return;

  // Step 4.
  const markerRow = own.values().next().value!;
  const marker = markerRow.chunk.eventId(markerRow.position);
  const { own: ownBlocks, others } = await view.advance(client, [marker], from);
  const block = ownBlocks.get(marker);
  // The marker row is the flush's own: not finding it means something deleted it meanwhile, and
  // the order of this flush against others is unknown. A 503: the retry is decided afresh.
  if (block === undefined) throw new Error('message ids: the flush could not find its own rows after its INSERT');
  for (const claim of others) {
    const row = own.get(claim.key.toString('latin1'));
    if (row && row.chunk.eventId(row.position) === claim.rowId) row.block = claim.block;
  }
  // Two claims of one key: the later one goes, whoever wrote it (see claims.ts). Own keys are
  // decided here; other keys the view already held are looked up (their first claim may be older
  // than this read), which only happens when writers raced.
  const contested: StoredClaim[] = [];
  const suspects: StoredClaim[] = [];
  for (const claim of others) {
    const row = own.get(claim.key.toString('latin1'));
    if (row && row.chunk.eventId(row.position) !== claim.rowId) contested.push(claim, { key: row.key, rowId: row.chunk.eventId(row.position), scope: row.chunk.orgId, block: row.block ?? block });
    else if (!row && claim.known) suspects.push(claim);
  }
  if (suspects.length > 0) {
    const orgs = [...new Set(suspects.map((c) => c.scope))];
    contested.push(...(await view.lookup(client, suspects.map((c) => c.key), orgs)));
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

/** Lightweight DELETE of these events (claims that lost); it returns once every query sees it. */
async function deleteRows(client: ClickHouseClient, rows: readonly StoredClaim[]): Promise<void> {
  const params = new ParamBag();
  const orgIds = [...new Set(rows.map((r) => r.scope))];
  await client.command({
    query: `DELETE FROM events WHERE ${orgsCondition('events', orgIds, params)} AND event_id IN (SELECT arrayJoin(${params.add([...new Set(rows.map((r) => r.rowId))], 'Array(UUID)')}))`,
    query_params: params.toParams(),
    clickhouse_settings: { lightweight_deletes_sync: '2' },
  });
}
