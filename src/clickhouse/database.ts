import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { unavailable } from '../errors.ts';
import type { ClusterLayout } from './cluster-ddl.ts';
import { ENGINE_KEEP_ALIVE_TIMEOUT_S, EngineProcess, findRunningEngine, probe, sleep, type EngineEndpoint, type EngineOptions } from './engine.ts';
import { PINNED_SETTINGS } from './settings.ts';

/**
 * The one place that builds @clickhouse/client clients, always over HTTP. `Database.client()`
 * returns the client of the engine that is up now, or throws a 503 while it is down, so that a
 * request never hangs on a dead engine.
 */
export interface Database {
  readonly name: string;
  /** The client bound to the service database; throws HttpError 503 while the engine is down. */
  client(): ClickHouseClient;
  /** A client with no database selected (for CREATE DATABASE). */
  adminClient(): ClickHouseClient;
  /** Whether the engine answered its last health check. */
  isUp(): boolean;
  /** Resolves once the engine is up again (or rejects after `timeoutMs`). */
  waitUntilUp(timeoutMs: number): Promise<void>;
  /** 'embedded-owned' | 'embedded-shared' | 'external' */
  mode(): string;
  close(): Promise<void>;
  /** Cluster mode (CLICKHOUSE_CLUSTER or an embedded cluster): the layout and every node. */
  readonly cluster?: { layout: ClusterLayout; nodes(): DatabaseNode[] };
}

/** One node of a cluster, for what must run node by node (DDL, health). */
export interface DatabaseNode {
  url: string;
  client: ClickHouseClient;
  admin: ClickHouseClient;
}

const EMBEDDED_IDLE_SOCKET_TTL_MS = (ENGINE_KEEP_ALIVE_TIMEOUT_S * 1000) / 2;

/** The clients of a cluster's Distributed tables (clusterSettings), whose queries the initiator splits per table. */
const clusterClients = new WeakSet<ClickHouseClient>();
export const isClusterClient = (client: ClickHouseClient): boolean => clusterClients.has(client);

export function buildClient(endpoint: EngineEndpoint, config: Config, database: string | undefined, maxOpenConnections = 64): ClickHouseClient {
  const client = createClient({
    url: endpoint.url,
    username: config.clickhouse.user,
    password: config.clickhouse.password,
    database,
    http_headers: endpoint.headers,
    request_timeout: 60_000,
    max_open_connections: maxOpenConnections,
    // Query parameters go in a multipart/form-data body once they would make a long URL: filter
    // values can total megabytes, past the engine's 1 MiB URL cap (see sql.ts MAX_PARAM_BYTES).
    use_multipart_params_auto: true,
    // Loopback or a LAN: compressing costs more CPU than it saves.
    compression: { request: false, response: false },
    // The embedded engine closes idle connections after ENGINE_KEEP_ALIVE_TIMEOUT_S: a socket idle
    // for half of it is not reused. A user's server keeps the client's default.
    ...(config.clickhouse.url ? {} : { keep_alive: { idle_socket_ttl: EMBEDDED_IDLE_SOCKET_TTL_MS } }),
    // Failures reach our own error handling and request log; the client's logger would repeat them.
    log: { level: ClickHouseLogLevel.OFF },
    // Correctness never depends on the server's defaults (settings.ts); a query may override one.
    clickhouse_settings: {
      ...PINNED_SETTINGS,
      ...clusterSettings(config),
    },
  });
  if (Object.keys(clusterSettings(config)).length > 0) clusterClients.add(client);
  return client;
}

/**
 * Cluster mode, every query: a write of one request reaches its shard before the INSERT answers
 * (200 still means committed); a query of one organization goes only to its shard (the sharding
 * key is cityHash64(org_id) and every query filters org_id = {org}), so another shard being down
 * does not fail it; subqueries and joins over other Distributed tables read the local table of the
 * same shard, which holds the same organization's rows.
 */
function clusterSettings(config: Config): Record<string, string | number> {
  if (!config.clickhouse.cluster && config.embeddedShards <= 1) return {};
  return {
    distributed_foreground_insert: 1,
    optimize_skip_unused_shards: 1,
    distributed_product_mode: 'local',
  };
}

const HEALTH_INTERVAL_MS = 1000;
const UNANSWERED_PROBES_BEFORE_RESTART = 3;

export class ClientPair {
  readonly main: ClickHouseClient;
  readonly admin: ClickHouseClient;
  constructor(readonly endpoint: EngineEndpoint, config: Config) {
    this.main = buildClient(endpoint, config, config.clickhouse.database);
    this.admin = buildClient(endpoint, config, undefined);
  }
  async close() {
    await Promise.allSettled([this.main.close(), this.admin.close()]);
  }
}

/**
 * Pings `url` until it answers or `timeoutMs` passed (CLICKHOUSE_CONNECT_TIMEOUT_MS); the error
 * names the last cause seen (ECONNREFUSED, an authentication error), else that nothing answered.
 */
export async function waitForPing(admin: ClickHouseClient, url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    // A ping to a host that drops packets would wait for the request timeout (60 s): race it.
    const remaining = Math.max(deadline - Date.now(), 0);
    const result = await Promise.race([admin.ping(), sleep(remaining).then(() => ({ success: false as const, error: undefined }))]);
    if (result.success) return;
    last = String((result as { error?: Error }).error?.message ?? '') || last;
    if (Date.now() >= deadline) throw new Error(`ClickHouse at ${url} did not answer within ${timeoutMs} ms (${last || 'no answer'})`);
    await sleep(Math.min(500, Math.max(deadline - Date.now(), 0)));
  }
}

/** A user's server or cluster at CLICKHOUSE_URL. Health is checked, nothing is restarted. */
export class ExternalDatabase implements Database {
  private up = true;
  private readonly pair: ClientPair;
  private timer: NodeJS.Timeout | undefined;
  constructor(private readonly config: Config, private readonly log: Logger) {
    this.pair = new ClientPair({ url: config.clickhouse.url!, headers: {} }, config);
  }
  get name() {
    return this.config.clickhouse.database;
  }
  private async check() {
    const ok = (await this.pair.admin.ping()).success;
    if (ok !== this.up) this.log[ok ? 'info' : 'warn']({ msg: ok ? 'clickhouse reachable again' : 'clickhouse unreachable' });
    this.up = ok;
  }
  client() {
    return this.pair.main;
  }
  adminClient() {
    return this.pair.admin;
  }
  isUp() {
    return this.up;
  }
  async waitUntilUp(timeoutMs: number) {
    await waitForPing(this.pair.admin, this.config.clickhouse.url!, timeoutMs);
    this.up = true;
    // Health checks from now on: during start-up a failed ping is the start-up error's to report.
    this.timer ??= setInterval(() => void this.check(), HEALTH_INTERVAL_MS);
    this.timer.unref();
  }
  mode() {
    return 'external';
  }
  async close() {
    clearInterval(this.timer);
    await this.pair.close();
  }
}

/**
 * The embedded engine for DATA_DIR: uses one that another command already runs, or starts and
 * supervises its own. If the engine dies (its child exits, or the shared one stops answering), the
 * supervisor brings one back; meanwhile client() throws 503.
 */
export class EmbeddedDatabase implements Database {
  private pair: ClientPair | undefined;
  private owned: EngineProcess | undefined;
  private closing = false;
  private recovering: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private localErrorStreak = 0;
  private unanswered = 0;
  private probing = false;

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
    private readonly supervise: boolean,
    private readonly engineOptions: EngineOptions = {},
  ) {}

  get name() {
    return this.config.clickhouse.database;
  }

  async open(): Promise<void> {
    await this.attach();
    if (this.supervise) {
      this.timer = setInterval(() => void this.healthCheck(), HEALTH_INTERVAL_MS);
      this.timer.unref();
    }
  }

  /** Finds a running engine for the directory or starts one; retries while another starts. */
  private async attach(): Promise<void> {
    let lastError: unknown;
    for (let attempt = 0; attempt < 20 && !this.closing; attempt++) {
      const shared = await findRunningEngine(this.config.dataDir);
      if (shared) {
        await this.use(shared, undefined);
        this.log.info({ msg: 'using the embedded engine already running for this data directory', url: shared.url });
        return;
      }
      try {
        const previousPort = this.pair ? Number(new URL(this.pair.endpoint.url).port) : undefined;
        const engine = await EngineProcess.start(this.config.dataDir, this.log, previousPort, this.engineOptions);
        await this.use(engine.endpoint, engine);
        if (this.supervise) void engine.exitPromise.then((code) => this.onOwnedExit(engine, code));
        return;
      } catch (err) {
        // Most often: another command started an engine on this directory a moment ago.
        lastError = err;
        await sleep(Math.min(250 * (attempt + 1), 2000));
      }
    }
    throw lastError ?? new Error('closing');
  }

  private async use(endpoint: EngineEndpoint, owned: EngineProcess | undefined) {
    const old = this.pair;
    this.pair = new ClientPair(endpoint, this.config);
    this.owned = owned;
    if (old) void old.close();
  }

  private onOwnedExit(engine: EngineProcess, code: number | null) {
    if (this.closing || this.owned !== engine) return;
    this.log.warn({ msg: 'embedded engine exited; restarting', code });
    void this.recover();
  }

  /**
   * One probe a second. An engine that exited is restarted at once (onOwnedExit); one that is
   * alive but silent only after UNANSWERED_PROBES_BEFORE_RESTART probes in a row: on a loaded
   * machine a single ping can take over 2 s, and restarting a busy but healthy engine turned
   * slowness into an outage (every request refused while it restarts).
   */
  private async healthCheck() {
    if (this.closing || this.recovering || !this.pair || this.probing) return;
    this.probing = true;
    let result: Awaited<ReturnType<typeof probe>>;
    try {
      result = await probe(this.pair.endpoint, 2000);
    } finally {
      this.probing = false;
    }
    if (result === 'up') {
      this.localErrorStreak = 0;
      this.unanswered = 0;
    }
    if (result === 'up' || this.closing || this.recovering) return;
    if (result === 'local-error') {
      // Out of descriptors here (EMFILE) says nothing of the engine; killing it would turn a
      // transient local shortage into an outage, and the restart would fail for the same reason.
      this.localErrorStreak++;
      if (this.localErrorStreak === 1) this.log.warn({ msg: 'engine health check could not open a socket (out of descriptors?); engine left running' });
      return;
    }
    this.unanswered++;
    if (this.unanswered < UNANSWERED_PROBES_BEFORE_RESTART) return;
    this.unanswered = 0;
    this.log.warn({ msg: 'embedded engine not answering; recovering', url: this.pair.endpoint.url });
    if (this.owned?.alive) await this.owned.stop(2000);
    void this.recover();
  }

  private recover(): Promise<void> {
    if (!this.recovering) {
      const down = this.pair;
      this.pair = undefined;
      if (down) void down.close();
      this.recovering = (async () => {
        while (!this.closing) {
          try {
            await this.attach();
            this.log.info({ msg: 'embedded engine recovered' });
            return;
          } catch (err) {
            this.log.error({ msg: 'embedded engine restart failed; retrying', error: String(err) });
            await sleep(1000);
          }
        }
      })().finally(() => {
        this.recovering = undefined;
      });
    }
    return this.recovering;
  }

  client() {
    if (!this.pair) throw unavailable('Storage is restarting; retry shortly', 1);
    return this.pair.main;
  }
  adminClient() {
    if (!this.pair) throw unavailable('Storage is restarting; retry shortly', 1);
    return this.pair.admin;
  }
  isUp() {
    return this.pair !== undefined;
  }
  async waitUntilUp(timeoutMs: number) {
    const deadline = Date.now() + timeoutMs;
    while (!this.pair) {
      if (Date.now() > deadline) throw new Error(`embedded engine not up within ${timeoutMs} ms`);
      await sleep(100);
    }
  }
  mode() {
    return this.owned ? 'embedded-owned' : 'embedded-shared';
  }
  async close() {
    this.closing = true;
    if (this.timer) clearInterval(this.timer);
    await this.pair?.close();
    await this.owned?.stop();
  }
}
