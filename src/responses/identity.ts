/**
 * The identity of a response (its survey_id and created_at, fixed by its first write), kept in
 * the narrow key table `survey_response_ids` (schema/030): point lookups by (org_id, id), so a
 * write batch costs in proportion to its ids, not to the organization.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { QUERY_SETTINGS } from './compile.ts';

export interface Identity {
  survey_id: string;
  /** DateTime64(6) text. */
  created_at: string;
}

/**
 * The identity of those ids the org already has. When an id has several claims (two writers
 * raced on its first write), the first committed one (smallest `_block_number`, see schema/030)
 * is the identity; the rest of the tuple only makes ties deterministic.
 */
export async function storedIdentities(client: ClickHouseClient, orgId: string, ids: readonly string[]): Promise<Map<string, Identity>> {
  if (ids.length === 0) return new Map();
  const rs = await client.query({
    query:
      // Aliases differ from the column names: a ClickHouse alias would otherwise shadow the column in WHERE.
      'SELECT toString(id) AS rid, argMin((toString(survey_id), toString(created_at)), (_block_number, created_at, survey_id)) AS first ' +
      'FROM survey_response_ids WHERE org_id = {org:UUID} AND id IN {ids:Array(UUID)} GROUP BY id',
    query_params: { org: orgId, ids },
    format: 'JSONEachRow',
    clickhouse_settings: QUERY_SETTINGS,
  });
  const rows = await rs.json<{ rid: string; first: [string, string] }>();
  return new Map(rows.map((r) => [r.rid, { survey_id: r.first[0], created_at: r.first[1] }]));
}

/**
 * Claims the identities of ids seen for the first time, then reads them back: the answer is the
 * identity every writer of those ids agrees on, which is not this claim when another process
 * committed a claim of the same id first.
 */
export async function claimIdentities(client: ClickHouseClient, orgId: string, claims: ReadonlyMap<string, Identity>): Promise<Map<string, Identity>> {
  if (claims.size === 0) return new Map();
  await client.insert({
    table: 'survey_response_ids',
    values: [...claims].map(([id, c]) => ({ org_id: orgId, id, survey_id: c.survey_id, created_at: c.created_at })),
    format: 'JSONEachRow',
  });
  return storedIdentities(client, orgId, [...claims.keys()]);
}
