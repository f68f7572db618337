/**
 * Connects to ClickHouse: the one entry point that picks the database a configuration names (a
 * single node in database.ts, a cluster in cluster.ts). It re-exports the Database interface and
 * buildClient so that callers need one module to open and use a connection.
 */
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { connectEmbeddedCluster, connectExternalCluster } from './cluster.ts';
import { EmbeddedDatabase, ExternalDatabase, type Database } from './database.ts';

export { buildClient, type Database, type DatabaseNode } from './database.ts';

/**
 * Connects to ClickHouse: CLICKHOUSE_URL when set, else the embedded engine for DATA_DIR.
 * `supervise` (the server) restarts a dead embedded engine; one-shot commands do not.
 */
export interface ConnectOptions {
  /** Restart a dead embedded engine (the server); one-shot commands do not. */
  supervise: boolean;
  /**
   * Extra clickhouse-local arguments for an engine this call starts, e.g. `--final=1`: tests run
   * the service against an engine whose defaults differ, as a user's server may.
   */
  engineArgs?: readonly string[];
}

export async function connectDatabase(config: Config, log: Logger, opts: ConnectOptions): Promise<Database> {
  if (config.clickhouse.url && config.clickhouse.cluster) return connectExternalCluster(config, log);
  if (!config.clickhouse.url && config.embeddedShards > 1) return connectEmbeddedCluster(config, log, opts);
  if (config.clickhouse.url) {
    const db = new ExternalDatabase(config, log);
    await db.waitUntilUp(config.clickhouse.connectTimeoutMs).catch(async (err) => {
      await db.close();
      throw err;
    });
    return db;
  }
  const db = new EmbeddedDatabase(config, log, opts.supervise, { extraArgs: opts.engineArgs });
  await db.open();
  return db;
}
