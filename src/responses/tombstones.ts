/** Tombstones of deleted survey responses (schema/040): what the writer checks. */
import type { ClickHouseClient } from '@clickhouse/client';
import { QUERY_SETTINGS } from './compile.ts';

/** The tombstones of these ids: id -> deleted_at (DateTime64(6) text). */
export async function tombstonesOf(client: ClickHouseClient, orgId: string, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rs = await client.query({
    query: 'SELECT toString(id) AS rid, toString(max(deleted_at)) AS at FROM survey_response_tombstones WHERE org_id = {org:UUID} AND id IN {ids:Array(UUID)} GROUP BY id',
    query_params: { org: orgId, ids },
    format: 'JSONEachRow',
    clickhouse_settings: QUERY_SETTINGS,
  });
  return new Map((await rs.json<{ rid: string; at: string }>()).map((r) => [r.rid, r.at]));
}
