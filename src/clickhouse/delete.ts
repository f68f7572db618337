/**
 * Lightweight DELETE (`DELETE FROM t WHERE ...`): the rows disappear from every read at once (the
 * engine masks them), and leave the disk when their parts merge or when APPLY DELETED MASK
 * rewrites them. A Distributed table cannot take it: in cluster mode the statement runs on every
 * node's `<table>_local` (or once, ON CLUSTER, when only one node's URL is known).
 */
import type { ClickHouseSettings } from '@clickhouse/client';
import { localName } from './cluster-ddl.ts';
import type { Database } from './connection.ts';
import { ParamBag } from './sql.ts';
import { TenantOrg, type TenantTable } from './tenant.ts';

const DELETE_SETTINGS: ClickHouseSettings = {
  // Return once the rows are masked on every replica of the shard, not just queued.
  lightweight_deletes_sync: '2',
};

/**
 * Deletes the rows of one organization that meet `condition` (SQL from code, its values added to
 * the bag as parameters); the organization condition comes from the tenant guard.
 */
export async function deleteWhere(db: Database, table: TenantTable, orgId: string, condition: (bag: ParamBag) => string): Promise<void> {
  const bag = new ParamBag();
  const where = `${new TenantOrg(orgId, bag).condition(table)} AND ${condition(bag)}`;
  const params = bag.toParams();
  if (!db.cluster) {
    await db.client().command({ query: `DELETE FROM ${table} WHERE ${where}`, query_params: params, clickhouse_settings: DELETE_SETTINGS });
    return;
  }
  const { layout } = db.cluster;
  if (layout.onCluster) {
    await db.client().command({ query: `DELETE FROM ${localName(table)} ON CLUSTER ${layout.cluster} WHERE ${where}`, query_params: params, clickhouse_settings: DELETE_SETTINGS });
    return;
  }
  await Promise.all(db.cluster.nodes().map((n) => n.client.command({ query: `DELETE FROM ${localName(table)} WHERE ${where}`, query_params: params, clickhouse_settings: DELETE_SETTINGS })));
}

/**
 * Rewrites the parts that hold deleted rows without them (the physical purge). `wait`: return only
 * once every replica has rewritten them (mutations_sync = 2), for a caller whose answer depends on
 * it; otherwise the mutation is queued and runs in the background.
 */
export async function purgeDeleted(db: Database, table: string, opts: { wait?: boolean } = {}): Promise<void> {
  const clients = db.cluster && !db.cluster.layout.onCluster ? db.cluster.nodes().map((n) => n.client) : [db.client()];
  const name = db.cluster ? localName(table) : table;
  const on = db.cluster?.layout.onCluster ? ` ON CLUSTER ${db.cluster.layout.cluster}` : '';
  const settings: ClickHouseSettings = opts.wait ? { mutations_sync: '2' } : {};
  await Promise.all(clients.map((c) => c.command({ query: `ALTER TABLE ${name}${on} APPLY DELETED MASK`, clickhouse_settings: settings })));
}
