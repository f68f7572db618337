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
import { ParamBag } from '../clickhouse/sql.ts';
import { TenantOrg } from '../clickhouse/tenant.ts';
import { forgetCachedAnswers } from '../query/request-cache.ts';
import { userIdForAlias } from './rows.ts';
import { READ_SETTINGS } from '../query/settings.ts';

const TABLES = ['events', 'user_properties', 'group_memberships'] as const;

/** Deletes the user's rows; how many there were (events + current properties + memberships). */
export async function deleteUser(db: Database, orgId: string, alias: string): Promise<number> {
  const userId = userIdForAlias(orgId, alias);
  const client = db.client();
  const bag = new ParamBag();
  const org = new TenantOrg(orgId, bag);
  const user = `user_id = ${bag.add(userId, 'UUID')}`;
  const rs = await client.query({
    query:
      `SELECT (SELECT count() ${org.from('events')} AND ${user}) + (SELECT count() ${org.from('user_properties', { final: true })} AND ${user}) + ` +
      `(SELECT count() ${org.from('group_memberships', { final: true })} AND ${user} AND NOT is_deleted) AS n`,
    query_params: bag.toParams(),
    format: 'JSONEachRow',
    clickhouse_settings: READ_SETTINGS,
  });
  const [{ n }] = await rs.json<{ n: string }>();
  for (const table of TABLES) await deleteWhere(db, table, orgId, (b) => `user_id = ${b.add(userId, 'UUID')}`);
  // Before the 202: gone from every instance's cached reads (src/query/request-cache.ts).
  await forgetCachedAnswers(client);
  return Number(n);
}
