/**
 * DELETE /1.0/user/<user_alias>: the user's events, properties and group memberships, by
 * lightweight DELETE (src/clickhouse/delete.ts): gone from every read (event search and
 * aggregation, the user profile) when the 202 is sent, removed from disk when their parts merge.
 * The user id is the name-based id the write path gives the alias (rows.ts), so the three tables
 * are found by their sorting key or the events' user_id bloom filter. Events sent for the alias
 * after the deletion are new events and are stored.
 */
import type { Database } from '../clickhouse/connection.ts';
import { deleteWhere } from '../clickhouse/delete.ts';
import { forgetCachedAnswers } from '../clickhouse/result-cache.ts';
import { userIdForAlias } from './rows.ts';
import { READ_SETTINGS } from '../query/settings.ts';

const TABLES = ['events', 'user_properties', 'group_memberships'] as const;

/** Deletes the user's rows; how many there were (events + current properties + memberships). */
export async function deleteUser(db: Database, orgId: string, alias: string): Promise<number> {
  const userId = userIdForAlias(orgId, alias);
  const client = db.client();
  const params = { org: orgId, user: userId };
  const where = 'org_id = {org:UUID} AND user_id = {user:UUID}';
  const rs = await client.query({
    query: `SELECT (SELECT count() FROM events WHERE ${where}) + (SELECT count() FROM user_properties FINAL WHERE ${where}) + (SELECT count() FROM group_memberships FINAL WHERE ${where} AND NOT is_deleted) AS n`,
    query_params: params,
    format: 'JSONEachRow',
    clickhouse_settings: READ_SETTINGS,
  });
  const [{ n }] = await rs.json<{ n: string }>();
  for (const table of TABLES) await deleteWhere(db, table, where, params);
  forgetCachedAnswers(client);
  return Number(n);
}
