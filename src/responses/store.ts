/**
 * Writes survey responses: an upsert by id where the latest `updated_at` wins.
 *
 * The table is ReplacingMergeTree(updated_at) ordered by (org_id, survey_id, created_at, id) and
 * partitioned by week of created_at. Versions of one response collapse only when they share the
 * whole sorting key and the partition, so (survey_id, created_at) is the response's fixed identity:
 * - created_at: the first stored value is kept; a later version that says otherwise is stored
 *   (column and doc) with the stored created_at, so ordering, range filters and the returned
 *   record agree and no second row appears.
 * - survey_id: a response cannot move to another survey; such a record is a 400.
 * Identities live in the narrow key table survey_response_ids (identity.ts, schema/030) and
 * follow the claims rule (src/claims/): ids seen for the first time are claimed there before the
 * rows are written, and with several service processes on one database, two first writes of one
 * id both end on the first committed claim, so they store one row. Only ids the process's claim
 * view may hold (upserts) are looked up. Concurrent requests of one org are written as one group
 * (write-group.ts: disjoint ids, one set of statements). Within a process, a lock per (org, id)
 * orders groups that share ids (so they do not even race for a claim); groups with disjoint ids
 * do not wait for each other.
 * A claimed identity stays when the write after it fails (a 503, or a 400 because a concurrent
 * writer claimed the id for another survey): a retry of the same records finds it and agrees.
 * The order of the steps, and what a kill at each leaves: docs/architecture.md.
 */
import { invalid, type Issue } from '../errors.ts';
import { agree, type Identity } from './identity.ts';
import type { ClaimView } from '../claims/claims.ts';
import { apiToDb, type ResponseRecord } from './record.ts';
import { encodeResponses, encodeRows, insertEncoded, RowRuns, type EncodedRows } from './encode.ts';
import { dbToApi } from '../time/iso.ts';
import type { RollupMaintainer } from './rollups/maintainer.ts';
import type { Database } from '../clickhouse/connection.ts';
import type { TombstoneMap, Tombstones } from './tombstones.ts';
import { hourSlicesOf, type HourSlice } from './rollups/slices.ts';
import type { GroupContext } from './write-group.ts';
import { takeBackRefused } from './take-back.ts';
import { holdAfterInsert } from './write-hold.ts';

const idLocks = new Map<string, Promise<void>>();

/**
 * Runs `fn` once every earlier batch that holds one of `keys` has finished. All keys are taken in
 * one synchronous step and a batch only waits for batches that registered before it, so there is
 * no deadlock; batches with disjoint ids run in parallel.
 */
export async function withIdLocks<T>(keys: readonly string[], fn: () => Promise<T>): Promise<T> {
  const earlier = new Set<Promise<void>>();
  for (const k of keys) {
    const held = idLocks.get(k);
    if (held) earlier.add(held);
  }
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  for (const k of keys) idLocks.set(k, mine);
  try {
    await Promise.all(earlier); // never reject: they are release signals
    return await fn();
  } finally {
    release();
    for (const k of keys) if (idLocks.get(k) === mine) idLocks.delete(k);
  }
}

/** What a write needs besides the database: the rollup maintenance, the tombstones and the claimed ids in memory. */
export interface WriteDeps {
  rollups: RollupMaintainer;
  tombstones: Tombstones;
  /** The process's view of claimed response ids (identity.ts). */
  claims: ClaimView;
}

/** One request of a group write: its records, and what is decided for it on the way. */
interface Member {
  /** Its records that no known tombstone refuses. */
  records: readonly ResponseRecord[];
  /** The place of each of `records` in the request (its row in `encoded`). */
  index: readonly number[];
  /** The request's rows, encoded as sent. */
  encoded: EncodedRows;
  /** Its 400, once a record of it is refused: nothing of it is stored from then on. */
  refusal?: Error;
  /** Its records as stored (created_at fixed to the identity). */
  stored: ResponseRecord[];
}

/**
 * Upserts the records of several requests of one org (their ids disjoint: write-group.ts gathers
 * them so) in one pass of the steps of docs/architecture.md: one set of statements for the group.
 * Returns per request how many were written, or its 400 (a record that would move a response to
 * another survey: nothing of that request is stored, the others are). A failure of the engine
 * throws, for every request. `context` brings the requests' rows encoded at arrival (else they are
 * encoded here) and hears when the INSERT is sent.
 */
export async function insertGroup(db: Database, orgId: string, batches: readonly (readonly ResponseRecord[])[], deps: WriteDeps, context?: Partial<GroupContext>): Promise<Array<number | Error>> {
  const { rollups } = deps;
  const client = db.client();
  const org = orgId.toLowerCase();
  const batchIds = [...new Set(batches.flatMap((batch) => batch.map((r) => r.id.toLowerCase())))];
  return withIdLocks(batchIds.map((id) => `${org}/${id}`), async () => {
    // A deleted response (schema/040) does not come back through a version from before its
    // deletion: such records are acknowledged and dropped (tombstones.ts). One of them may be the
    // retry of a write that stored it past a concurrent deletion and died before step 7 below:
    // what such a write left is taken back here, before the answer (take-back.ts).
    const tombstones = await deps.tombstones.known(org, batchIds);
    const refused: TombstoneMap = new Map();
    const members: Member[] = batches.map((batch, b) => {
      const records: ResponseRecord[] = [];
      const index: number[] = [];
      batch.forEach((r, i) => {
        const id = r.id.toLowerCase();
        const deletedAt = tombstones.get(id);
        if (notDeleted(r, deletedAt)) {
          records.push(r);
          index.push(i);
        } else {
          refused.set(id, deletedAt!);
        }
      });
      return { records, index, encoded: context?.encoded?.[b] ?? encodeRows(batch, orgId), stored: [] };
    });
    await takeBackRefused(db, org, rollups, refused);
    const live = () => members.filter((m) => m.refusal === undefined && m.records.length > 0);
    if (live().length === 0) return members.map(() => 0);
    // The identity of each id (identity.ts): the first record of a new id claims it. A request
    // with a record that moves a response to another survey (a stored one, or one claimed earlier
    // in the request) is refused before anything of it, even a claim, is written.
    const wanted = new Map<string, Identity>();
    for (const m of live()) {
      for (const record of m.records) {
        const id = record.id.toLowerCase();
        if (!wanted.has(id)) wanted.set(id, { survey_id: record.survey_id.toLowerCase(), created_at: apiToDb(record.created_at) });
      }
    }
    // The rollup slices of the rows are marked pending before the write and recomputed after it,
    // off the write's path (rollups/maintainer.ts): readers take marked slices from the raw table,
    // so the answers after the 200 are exact either way. The slices of the records as sent are
    // marked while the identities are agreed on (a mark is harmless where nothing is written);
    // those that only the agreed created_at brings are marked after.
    const marked = hourSlicesOf(live().flatMap((m) => m.records.map(sliceRow)));
    const [marking, agreeing] = await Promise.allSettled([
      rollups.mark(org, marked),
      agree(client, deps.claims, orgId, wanted, (before) => {
        const left: string[] = [];
        for (const m of live()) {
          m.refusal = surveyMoves(m.records, before);
          if (m.refusal) left.push(...m.records.map((r) => r.id.toLowerCase()));
        }
        return left;
      }),
    ]);
    if (marking.status === 'rejected') throw marking.reason;
    const slices = [marked];
    try {
      if (agreeing.status === 'rejected') throw agreeing.reason;
      const known = agreeing.value;
      // Again with the agreed identities: only a concurrent writer that claimed an id first, for
      // another survey, refuses a request here.
      for (const m of live()) m.refusal = surveyMoves(m.records, known);
      const writing = live();
      if (writing.length === 0) return members.map((m) => m.refusal ?? 0);
      // The records as stored: created_at fixed to the id's identity (column and doc alike); the
      // others keep the bytes encoded at arrival (runs of adjacent rows sent as one chunk). One row
      // per id is sent (the version the table keeps, `kept`): the ids of a group's requests are
      // disjoint, so the INSERT holds each id once and skips the engine's collapse pass.
      const rows = new RowRuns();
      const fixed: ResponseRecord[] = [];
      for (const m of writing) {
        const winners = kept(m.records);
        m.stored = m.records.map((record, k) => {
          const identity = known.get(record.id.toLowerCase())!;
          const sent = winners(k);
          if (identity.created_at === apiToDb(record.created_at)) {
            if (sent) rows.add(m.encoded, m.index[k]);
            return record;
          }
          const moved = { ...record, created_at: dbToApi(identity.created_at) };
          if (sent) {
            rows.addBytes(encodeResponses([moved], orgId));
            fixed.push(moved);
          }
          return moved;
        });
      }
      const stored = writing.flatMap((m) => m.stored);
      const seen = new Set(marked.map(sliceKey));
      const more = hourSlicesOf(fixed.map(sliceRow)).filter((slice) => !seen.has(sliceKey(slice)));
      if (more.length > 0) {
        await rollups.mark(org, more);
        slices.push(more);
      }
      context?.released?.();
      await insertEncoded(client, rows.flush().chunks, true);
      for (const done of slices.splice(0)) rollups.written(org, done);
      await holdAfterInsert(stored.map((r) => r.id.toLowerCase()));
      // A deletion in another process between the check above and the INSERT: take back what it
      // deleted (the locks above only order this process's writes and deletions).
      const later = await deps.tombstones.since(org, oldestUpdate(stored));
      const refusedLater: TombstoneMap = new Map();
      const undone = new Map<Member, number>();
      for (const m of writing) {
        for (const record of m.stored) {
          const id = record.id.toLowerCase();
          const deletedAt = later.get(id);
          if (deletedAt === undefined || deletedAt === tombstones.get(id) || notDeleted(record, deletedAt)) continue;
          refusedLater.set(id, deletedAt);
          undone.set(m, (undone.get(m) ?? 0) + 1);
        }
      }
      await takeBackRefused(db, org, rollups, refusedLater);
      return members.map((m) => m.refusal ?? m.stored.length - (undone.get(m) ?? 0));
    } finally {
      for (const done of slices) rollups.written(org, done);
    }
  });
}

const sliceKey = (slice: HourSlice) => `${slice.surveyId}/${slice.hour}`;
const sliceRow = (r: ResponseRecord) => ({ survey_id: r.survey_id, created_at: apiToDb(r.created_at) });

/**
 * The places of the records the table keeps of each id: the latest updated_at, the last of those
 * on a tie (what ReplacingMergeTree(updated_at) keeps of versions inserted in this order).
 */
function kept(records: readonly ResponseRecord[]): (k: number) => boolean {
  const best = new Map<string, number>();
  let repeated = false;
  records.forEach((r, k) => {
    const id = r.id.toLowerCase();
    const at = best.get(id);
    if (at !== undefined) repeated = true;
    if (at === undefined || apiToDb(r.updated_at) >= apiToDb(records[at].updated_at)) best.set(id, k);
  });
  if (!repeated) return () => true;
  const winners = new Set(best.values());
  return (k) => winners.has(k);
}

/** The oldest updated_at of the records, DateTime64(6) text. */
function oldestUpdate(records: readonly ResponseRecord[]): string {
  let oldest = records[0].updated_at;
  for (const r of records) if (r.updated_at < oldest) oldest = r.updated_at;
  return apiToDb(oldest);
}

/** True unless the record's version is from before its id's deletion (deleted_at, DateTime64(6) text). */
function notDeleted(record: ResponseRecord, deletedAt: string | undefined): boolean {
  return deletedAt === undefined || apiToDb(record.updated_at) > deletedAt;
}

/** The 400 naming every record whose survey differs from its id's known identity, if any. */
function surveyMoves(records: readonly ResponseRecord[], known: ReadonlyMap<string, Identity>): Error | undefined {
  const issues: Issue[] = [];
  records.forEach((record, i) => {
    const identity = known.get(record.id.toLowerCase());
    if (identity && identity.survey_id !== record.survey_id.toLowerCase()) {
      issues.push({ path: `[${i}].survey_id`, message: `response ${record.id} belongs to survey ${identity.survey_id}; a response cannot move to another survey` });
    }
  });
  return issues.length > 0 ? invalid('Invalid response records', issues) : undefined;
}
