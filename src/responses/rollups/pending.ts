/**
 * The pending-mark protocol of the rollups (schema/020-survey-rollups.sql), for its writers and its
 * readers alike: the one module that writes or reads survey_rollup_pending (docs/architecture.md,
 * "The rollups").
 *
 * Invariant: a slice row of survey_rollup is trusted only while the marks of its hours sum to 0.
 *   - A writer adds +1 to every hour slice it is about to change (addMarks) BEFORE it writes
 *     survey_responses, and its recompute takes the marks back (addMarks with -n) only AFTER the
 *     slices hold what survey_responses FINAL held when the recompute started.
 *   - `tallyhouse seed` and `rollups rebuild` mark the whole org with ORG_SENTINEL for their
 *     duration; a rebuild ends by taking back every mark of the org (takeBackAllMarksSql).
 *   - A reader answers the pending hours (and the days and months holding them) from
 *     survey_responses, and serves only rows of slices the set it read did not name
 *     (runWithPending): a slice that cannot be trusted is never served.
 * Marks are summed per slice (SummingMergeTree: merges drop the slices whose marks sum to 0), so
 * the order in which writers and recomputes add them does not matter.
 *
 * Each mark also names its owner (schema/130), the service process that added it, and sums to 0
 * per owner once that process has recomputed what it marked: a process that stopped or died with
 * marks left is taken over by another one, which recomputes its slices and takes back exactly its
 * marks (takeover.ts, owners.ts). Readers ignore owners. `seed` and `rebuild` mark as NO_OWNER.
 */
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { ParamBag, compiled, type CompiledQuery, type RunQuery } from '../../clickhouse/sql.ts';
import { TenantOrg } from '../../clickhouse/tenant.ts';
import { formatDbMicros, parseInstantMicros } from '../../time/iso.ts';
import { NIL_UUID } from '../../uuid.ts';
import { ORG_SENTINEL, type HourSlice } from './slices.ts';

/** The owner of marks no process takes over: `seed`, `rollups rebuild`, marks from before schema/130. */
export const NO_OWNER = NIL_UUID;

/** Past this many pending slices, a read treats the whole org as pending (survey_responses alone). */
export const MAX_PENDING_SLICES = 500;

export interface Pending {
  /** The whole org is pending (the sentinel, or more than MAX_PENDING_SLICES slices). */
  org: boolean;
  slices: HourSlice[];
}

/** Adds `marks` (+n before a write, -n once recomputed) to each slice's pending count, as `owner`. */
export async function addMarks(client: ClickHouseClient, orgId: string, deltas: readonly { slice: HourSlice; marks: number }[], owner = NO_OWNER): Promise<void> {
  if (deltas.length === 0) return;
  await client.insert({
    table: 'survey_rollup_pending',
    values: deltas.map((d) => ({ org_id: orgId, survey_id: d.slice.surveyId, hour: formatDbMicros(d.slice.hour), owner, pending: d.marks })),
    format: 'JSONEachRow',
    // Two writes mark the same slices with identical blocks, and both marks must count: a
    // replicated table (cluster mode) would otherwise drop the second as a duplicate insert.
    clickhouse_settings: { insert_deduplicate: 0 },
  });
}

/**
 * Takes back every mark of the org (the end of a rebuild, which has just recomputed every slice):
 * marks left by interrupted writes included, each owner's to 0.
 */
export async function takeBackAllMarks(client: ClickHouseClient, orgId: string, settings: ClickHouseSettings = {}): Promise<void> {
  const bag = new ParamBag();
  await client.command({
    query:
      'INSERT INTO survey_rollup_pending (org_id, survey_id, hour, owner, pending) ' +
      `SELECT org_id, survey_id, hour, owner, -sum(pending) ${new TenantOrg(orgId, bag).from('survey_rollup_pending')} GROUP BY org_id, survey_id, hour, owner HAVING sum(pending) != 0`,
    query_params: bag.toParams(),
    clickhouse_settings: settings,
  });
}

/** The marks of one owner that do not sum to 0, every org's: what taking the owner over takes back. */
export async function marksOf(client: ClickHouseClient, owner: string): Promise<{ orgId: string; slice: HourSlice; marks: number }[]> {
  const rs = await client.query({
    query:
      'SELECT toString(org_id) AS o, toString(survey_id) AS s, toString(hour) AS h, toString(sum(pending)) AS n FROM survey_rollup_pending ' +
      'WHERE owner = {owner:UUID} GROUP BY org_id, survey_id, hour HAVING sum(pending) != 0',
    query_params: { owner },
    format: 'JSONEachRow',
  });
  return (await rs.json<{ o: string; s: string; h: string; n: string }>()).map((r) => ({ orgId: r.o, slice: { surveyId: r.s, hour: parseInstantMicros(r.h)! }, marks: Number(r.n) }));
}

/** The org's pending slices as a relation (survey_id, hour). */
export function pendingSetSql(org: TenantOrg): string {
  return `SELECT survey_id, hour ${org.from('survey_rollup_pending')} GROUP BY survey_id, hour HAVING sum(pending) != 0`;
}

/** The rows of readPending's query, turned into the set. */
export function pendingOf(rows: readonly { s: string; h: string }[]): Pending {
  const slices = rows.map((r) => ({ surveyId: r.s, hour: parseInstantMicros(r.h)! }));
  const org = slices.length > MAX_PENDING_SLICES || slices.some((s) => s.surveyId === ORG_SENTINEL.surveyId && s.hour === ORG_SENTINEL.hour);
  return { org, slices: org ? [] : slices };
}

/** The slices whose maintenance is pending for the org: one small query on a table of in-flight marks. */
export async function readPending(run: RunQuery, orgId: string): Promise<Pending> {
  const bag = new ParamBag();
  const rows = await run<{ s: string; h: string }>(compiled(
    `SELECT toString(survey_id) AS s, toString(hour) AS h FROM (${pendingSetSql(new TenantOrg(orgId, bag))}) LIMIT ${MAX_PENDING_SLICES + 1}`,
    bag,
  ));
  return pendingOf(rows);
}

/**
 * Runs a read that serves slices of the rollup, the pending set read FIRST: the query is compiled
 * with the set read, so every slice it serves was unmarked before the query read its row.
 *
 * Why first and not beside the query: a write acknowledged before the read holds its mark until its
 * recompute has replaced the slice row. Read first, the set names that slice (read raw) or the
 * recompute is already done (the row is fresh). Read beside, the query could read the old row while
 * the set, read a moment later, no longer names the slice: the recompute and the take-back landed
 * in between, and the slice would be served without an acknowledged write.
 * `compile` returns null when the rollup cannot serve the request whatever is pending (the caller
 * then reads the raw table); returns the rows, or null. The set is read on `fresh` (never from a
 * cache).
 */
export async function runWithPending<R>(run: RunQuery, fresh: RunQuery, orgId: string, compile: (pending: Pending) => CompiledQuery | null): Promise<R[] | null> {
  const q = compile(await readPending(fresh, orgId));
  return q ? run<R>(q) : null;
}
