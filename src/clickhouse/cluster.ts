/**
 * Cluster mode. Two ways in:
 * - A user's cluster: CLICKHOUSE_URL (an entry node) + CLICKHOUSE_CLUSTER (its name in the
 *   servers' remote_servers), optionally CLICKHOUSE_URLS (every node, for node-by-node DDL where
 *   ON CLUSTER is unavailable) and CLICKHOUSE_REPLICATED.
 * - An embedded cluster for development, tests and benches: TALLYHOUSE_EMBEDDED_SHARDS=N starts N
 *   embedded engines in DATA_DIR/shard-<i>, each with a native TCP port on loopback (the other
 *   shards' Distributed queries use it) and the same remote_servers naming all of them.
 * Either way the service reads and writes the Distributed tables (cluster-ddl.ts), and queries
 * go through a live node: a node being down only fails the organizations on its shard.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { freePorts } from '../ports.ts';
import { join } from 'node:path';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Config } from '../config.ts';
import { unavailable } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { ClusterLayout } from './cluster-ddl.ts';
import { ClientPair, EmbeddedDatabase, waitForPing, type Database, type DatabaseNode } from './database.ts';

/** The cluster name of an embedded cluster (its engines' remote_servers). */
export const EMBEDDED_CLUSTER = 'tallyhouse';

export function clusterLayout(config: Config, onCluster: boolean): ClusterLayout {
  return {
    cluster: config.clickhouse.cluster ?? EMBEDDED_CLUSTER,
    database: config.clickhouse.database,
    replicated: config.clickhouse.replicated,
    keeperPath: config.clickhouse.keeperPath,
    onCluster,
  };
}

const HEALTH_INTERVAL_MS = 1000;

/** A user's cluster: the entry node for queries, and every node (when listed) for DDL and health. */
class ExternalClusterDatabase implements Database {
  private readonly entry: ClientPair;
  private readonly pairs: ClientPair[];
  private readonly up: boolean[];
  private timer: NodeJS.Timeout | undefined;
  readonly cluster: Database['cluster'];

  constructor(private readonly config: Config, private readonly log: Logger) {
    const urls = config.clickhouse.nodeUrls;
    this.entry = new ClientPair({ url: config.clickhouse.url!, headers: {} }, config);
    this.pairs = urls.map((url) => new ClientPair({ url, headers: {} }, config));
    this.up = this.pairs.map(() => true);
    this.cluster = {
      layout: clusterLayout(config, urls.length === 0),
      nodes: () => this.pairs.map((p) => ({ url: p.endpoint.url, client: p.main, admin: p.admin })),
    };
  }
  get name() {
    return this.config.clickhouse.database;
  }
  private async check() {
    await Promise.all(
      this.pairs.map(async (p, i) => {
        const ok = (await p.admin.ping()).success;
        if (ok !== this.up[i]) this.log[ok ? 'info' : 'warn']({ msg: ok ? 'clickhouse node reachable again' : 'clickhouse node unreachable', url: p.endpoint.url });
        this.up[i] = ok;
      }),
    );
  }
  /** The entry node; when it is down and nodes are listed, a live one (any node can run a Distributed query). */
  private live(): ClientPair {
    if (this.pairs.length === 0 || this.up[this.pairs.indexOf(this.entry)] !== false) return this.entry;
    const i = this.up.findIndex(Boolean);
    return i >= 0 ? this.pairs[i] : this.entry;
  }
  client() {
    return this.live().main;
  }
  adminClient() {
    return this.live().admin;
  }
  isUp() {
    return this.up.every(Boolean);
  }
  async waitUntilUp(timeoutMs: number) {
    await waitForPing(this.entry.admin, this.config.clickhouse.url!, timeoutMs);
    // Node health from now on (a node down later is a 503 for its organizations, and logged).
    this.timer ??= setInterval(() => void this.check(), HEALTH_INTERVAL_MS);
    this.timer.unref();
  }
  mode() {
    return `cluster ${this.cluster!.layout.cluster}`;
  }
  async close() {
    clearInterval(this.timer);
    await Promise.allSettled([this.entry.close(), ...this.pairs.map((p) => p.close())]);
  }
}

/**
 * N embedded engines, one per shard, each supervised like the single embedded engine (restarted
 * when it dies). Queries go through the first shard that is up.
 */
class EmbeddedClusterDatabase implements Database {
  readonly cluster: Database['cluster'];

  constructor(private readonly config: Config, private readonly shards: EmbeddedDatabase[]) {
    this.cluster = {
      layout: clusterLayout(config, false),
      nodes: () => this.shards.map((s, i): DatabaseNode => ({ url: `shard ${i + 1}`, client: s.client(), admin: s.adminClient() })),
    };
  }
  get name() {
    return this.config.clickhouse.database;
  }
  private live(): EmbeddedDatabase {
    const shard = this.shards.find((s) => s.isUp());
    if (!shard) throw unavailable('Storage is restarting; retry shortly', 1);
    return shard;
  }
  client(): ClickHouseClient {
    return this.live().client();
  }
  adminClient(): ClickHouseClient {
    return this.live().adminClient();
  }
  isUp() {
    return this.shards.every((s) => s.isUp());
  }
  async waitUntilUp(timeoutMs: number) {
    await Promise.all(this.shards.map((s) => s.waitUntilUp(timeoutMs)));
  }
  mode() {
    return `embedded-cluster-${this.shards.length}`;
  }
  async close() {
    await Promise.allSettled(this.shards.map((s) => s.close()));
  }
}

export async function connectExternalCluster(config: Config, log: Logger): Promise<Database> {
  const db = new ExternalClusterDatabase(config, log);
  await db.waitUntilUp(config.clickhouse.connectTimeoutMs).catch(async (err) => {
    await db.close();
    throw err;
  });
  return db;
}

interface ClusterFile {
  shards: number;
  tcp_ports: number[];
}

/**
 * The embedded cluster of DATA_DIR: its shard count and TCP ports are fixed at first start
 * (DATA_DIR/cluster.json), since every engine's remote_servers names them.
 */
export async function connectEmbeddedCluster(config: Config, log: Logger, opts: { supervise: boolean }): Promise<Database> {
  const n = config.embeddedShards;
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const file = join(config.dataDir, 'cluster.json');
  let layout: ClusterFile;
  if (existsSync(file)) {
    layout = JSON.parse(readFileSync(file, 'utf8')) as ClusterFile;
    if (layout.shards !== n) {
      throw new Error(`DATA_DIR ${config.dataDir} holds an embedded cluster of ${layout.shards} shards; TALLYHOUSE_EMBEDDED_SHARDS=${n} does not match (use another DATA_DIR)`);
    }
  } else {
    layout = { shards: n, tcp_ports: await freePorts(n) };
    writeFileSync(file, JSON.stringify(layout), { mode: 0o600 });
  }
  const remoteServers =
    `<remote_servers><${EMBEDDED_CLUSTER}>` +
    layout.tcp_ports.map((p) => `<shard><replica><host>127.0.0.1</host><port>${p}</port></replica></shard>`).join('') +
    `</${EMBEDDED_CLUSTER}></remote_servers>` +
    // Without a pool for Distributed sends the engine never delivers asynchronous inserts.
    '<background_distributed_schedule_pool_size>2</background_distributed_schedule_pool_size>';
  const shards = layout.tcp_ports.map(
    (tcpPort, i) =>
      new EmbeddedDatabase({ ...config, dataDir: join(config.dataDir, `shard-${i + 1}`) }, log, opts.supervise, {
        tcpPort,
        extraConfigXml: remoteServers,
        // Synchronous Distributed inserts: only the command line sets this default in clickhouse-local
        // (a <profiles> block is ignored); the client also sends it with every query.
        extraArgs: ['--distributed_foreground_insert=1'],
      }),
  );
  await Promise.all(shards.map((s) => s.open()));
  return new EmbeddedClusterDatabase(config, shards);
}

