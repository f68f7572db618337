/**
 * Taking back stored versions that a deletion refused: the rows of an id whose `updated_at` is not
 * after its tombstone's `deleted_at` (schema/040), stored by a write whose INSERT committed after
 * the deletion's DELETE had run (so the DELETE missed them).
 *
 * The rows are read first (by id, one bloom-filtered read): their hour slices, whatever
 * `created_at` each was stored with, are marked pending around the DELETE and recomputed after it
 * (rollups/maintainer.ts), so no reader trusts a slice that still counts them. Nothing found,
 * nothing written: the usual case, since a refused version is normally dropped before its INSERT.
 */
import type { Database } from '../clickhouse/connection.ts';
import { deleteWhere } from '../clickhouse/delete.ts';
import { DT64, ParamBag } from '../clickhouse/sql.ts';
import { TenantOrg } from '../clickhouse/tenant.ts';
import { QUERY_SETTINGS } from './compile.ts';
import type { RollupMaintainer } from './rollups/maintainer.ts';
import { hourSlicesOf } from './rollups/slices.ts';
import type { TombstoneMap } from './tombstones.ts';

/**
 * Deletes the org's stored versions that `refused` (id, lower case -> deleted_at, DateTime64(6)
 * text) refuses; returns how many rows it deleted.
 */
export async function takeBackRefused(db: Database, orgId: string, rollups: RollupMaintainer, refused: TombstoneMap): Promise<number> {
  if (refused.size === 0) return 0;
  const org = orgId.toLowerCase();
  const client = db.client();
  const bag = new ParamBag();
  const rs = await client.query({
    query:
      'SELECT toString(id) AS rid, toString(survey_id) AS survey_id, toString(created_at) AS created_at, toString(updated_at) AS updated ' +
      `${new TenantOrg(org, bag).from('survey_responses')} AND id IN ${bag.add([...refused.keys()], 'Array(UUID)')}`,
    query_params: bag.toParams(),
    format: 'JSONEachRow',
    clickhouse_settings: QUERY_SETTINGS,
  });
  const rows = await rs.json<{ rid: string; survey_id: string; created_at: string; updated: string }>();
  const stale = rows.filter((r) => r.updated <= refused.get(r.rid)!);
  if (stale.length === 0) return 0;
  const ids = [...new Set(stale.map((r) => r.rid))];
  const slices = hourSlicesOf(stale);
  await rollups.mark(org, slices);
  try {
    await deleteWhere(db, 'survey_responses', org, (b) =>
      `(${ids.map((id) => `(id = ${b.add(id, 'UUID')} AND updated_at <= ${b.add(refused.get(id)!, DT64)})`).join(' OR ')})`);
  } finally {
    rollups.written(org, slices);
  }
  return stale.length;
}
