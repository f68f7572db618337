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
 * Both are looked up with one query per batch. A process-wide lock per (org, id) makes the
 * lookup + insert atomic against concurrent batches that share ids, so two first writes of one
 * new id cannot both miss the lookup; batches with disjoint ids do not wait for each other (an
 * org-wide lock capped one org at ~10 writes/s, each lookup + insert taking 70-100 ms).
 * Known limit: with several service processes writing one database, two simultaneous FIRST
 * writes of one id with different created_at (or survey_id) in two processes could still store
 * two rows that never collapse.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { invalid, type Issue } from '../errors.ts';
import { QUERY_SETTINGS } from './compile.ts';
import { apiToDb, toResponseRow, type ResponseRecord } from './record.ts';
import { dbToApi } from '../time/iso.ts';

interface Identity {
  survey_id: string;
  /** DateTime64(6) text. */
  created_at: string;
}

const idLocks = new Map<string, Promise<void>>();

/**
 * Runs `fn` once every earlier batch that holds one of `keys` has finished. All keys are taken in
 * one synchronous step and a batch only waits for batches that registered before it, so there is
 * no deadlock; batches with disjoint ids run in parallel.
 */
async function withIdLocks<T>(keys: readonly string[], fn: () => Promise<T>): Promise<T> {
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

/** The stored identity of those ids that exist for the org (newest version's, if several). */
async function storedIdentities(client: ClickHouseClient, orgId: string, ids: string[]): Promise<Map<string, Identity>> {
  // No FINAL: every version of an id has the same identity; argMax picks the newest regardless.
  const rs = await client.query({
    query:
      // Aliases differ from the column names: a ClickHouse alias would otherwise shadow the column in WHERE.
      'SELECT toString(id) AS rid, toString(argMax(survey_id, updated_at)) AS sid, toString(argMax(created_at, updated_at)) AS cat ' +
      'FROM survey_responses WHERE org_id = {org:UUID} AND id IN {ids:Array(UUID)} GROUP BY id',
    query_params: { org: orgId, ids },
    format: 'JSONEachRow',
    // The id bloom filter skips granules for small batches; at ~1000 ids every granule matches
    // and checking it only costs (measured in schema/004-survey-responses.sql).
    clickhouse_settings: { ...QUERY_SETTINGS, use_skip_indexes: ids.length <= 200 ? 1 : 0 },
  });
  const rows = await rs.json<{ rid: string; sid: string; cat: string }>();
  return new Map(rows.map((r) => [r.rid, { survey_id: r.sid, created_at: r.cat }]));
}

/**
 * Upserts parsed records for the org; returns how many were written. Throws 400 (nothing stored)
 * when a record would move an existing response to another survey.
 */
export async function insertResponses(client: ClickHouseClient, orgId: string, records: readonly ResponseRecord[]): Promise<number> {
  const ids = [...new Set(records.map((r) => r.id.toLowerCase()))];
  const org = orgId.toLowerCase();
  return withIdLocks(ids.map((id) => `${org}/${id}`), async () => {
    const known = await storedIdentities(client, orgId, ids);
    const issues: Issue[] = [];
    const rows = records.map((record, i) => {
      const id = record.id.toLowerCase();
      const surveyId = record.survey_id.toLowerCase();
      const identity = known.get(id);
      if (!identity) {
        // First sighting (in store or batch): this record fixes the identity for the rest of the batch.
        known.set(id, { survey_id: surveyId, created_at: apiToDb(record.created_at) });
        return toResponseRow(record, orgId);
      }
      if (identity.survey_id !== surveyId) {
        issues.push({ path: `[${i}].survey_id`, message: `response ${record.id} belongs to survey ${identity.survey_id}; a response cannot move to another survey` });
      }
      const fixed = identity.created_at === apiToDb(record.created_at) ? record : { ...record, created_at: dbToApi(identity.created_at) };
      return toResponseRow(fixed, orgId);
    });
    if (issues.length > 0) throw invalid('Invalid response records', issues);
    await client.insert({
      table: 'survey_responses',
      values: rows,
      format: 'JSONEachRow',
      // One part per week touched (schema/004 partitions by week): a batch of up to 1000
      // records spread over years would pass the default limit of 100 partitions.
      clickhouse_settings: { max_partitions_per_insert_block: '1000' },
    });
    return rows.length;
  });
}
