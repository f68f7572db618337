/**
 * Numbers for the known users of events written without one (`user_num` 0): the statements of
 * schema/231, run again. They are idempotent (users with a valid number get no new claim, rows
 * already numbered are not touched), so a writer that stores events past the service's flush
 * (`tallyhouse seed --events`: INSERT ... SELECT inside the engine) runs them after its INSERTs.
 * On a cluster they run as the migration runner runs them: rewritten, node by node.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import type { Database } from '../clickhouse/database.ts';
import { loadMigrations, statementsFor, withDatabase } from '../clickhouse/migrations.ts';

const BACKFILL_VERSION = 231;

/** Numbers every known user of `events` still at 0 and writes the numbers into their rows. */
export async function numberStoredUsers(target: Database | ClickHouseClient): Promise<void> {
  const all = loadMigrations();
  const backfill = all.find((m) => m.version === BACKFILL_VERSION);
  if (!backfill) throw new Error(`schema/${BACKFILL_VERSION} is missing`);
  if (!('adminClient' in target)) {
    const rs = await target.query({ query: 'SELECT currentDatabase() AS d', format: 'JSONEachRow' });
    const [{ d }] = await rs.json<{ d: string }>();
    for (const s of backfill.statements) await target.command({ query: withDatabase(s, d) });
    return;
  }
  const db = target;
  const layout = db.cluster?.layout;
  const clients = db.cluster && !layout?.onCluster ? db.cluster.nodes().map((n) => n.client) : [db.client()];
  for (const client of clients) for (const s of statementsFor(backfill, all, layout)) await client.command({ query: withDatabase(s, db.name) });
}
