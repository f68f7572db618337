/**
 * Start-up checks: each failure a service can meet before it answers (data directory, port, host,
 * ClickHouse, engine library) becomes one StartupError line naming the cause and the setting to
 * change, found in seconds rather than after the engine's retries. main.ts prints it and exits 1.
 */
import { ClickHouseError } from '@clickhouse/client';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import type { Database } from '../clickhouse/connection.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';

export class StartupError extends Error {}

const codeOf = (err: unknown) => (err as { code?: string })?.code ?? '';
const reason = (err: unknown) => `${codeOf(err) ? `${codeOf(err)}: ` : ''}${String((err as Error)?.message ?? err).split('\n')[0]}`;

/** The embedded engine's directory exists (or can be made) and takes a file. */
export function checkDataDir(dataDir: string): void {
  try {
    makeDirectories(dataDir);
    const probe = join(dataDir, `.write-test-${process.pid}`);
    writeFileSync(probe, '');
    rmSync(probe);
  } catch (err) {
    throw new StartupError(`DATA_DIR=${dataDir} is not a writable directory (${reason(err)}); set DATA_DIR to one this user can write`);
  }
}

/**
 * DATA_DIR holds what TALLYHOUSE_EMBEDDED_SHARDS says: an N-shard embedded cluster keeps its layout
 * in DATA_DIR/cluster.json and its data in DATA_DIR/shard-<i>; a single engine keeps its data in
 * DATA_DIR/clickhouse. A command run with the other setting would otherwise start an empty engine
 * (or cluster) beside the data, apply the migrations to it and serve or list nothing, with no error.
 */
export function checkEmbeddedLayout(dataDir: string, shards: number): void {
  const clusterFile = join(dataDir, 'cluster.json');
  if (existsSync(clusterFile)) {
    let held: unknown;
    try {
      held = (JSON.parse(readFileSync(clusterFile, 'utf8')) as { shards?: unknown }).shards;
    } catch {
      return; // not ours to judge: the cluster's own start reads it
    }
    if (typeof held === 'number' && held !== shards) {
      throw new StartupError(
        `DATA_DIR=${dataDir} holds an embedded cluster of ${held} shards (cluster.json) but TALLYHOUSE_EMBEDDED_SHARDS=${shards}; set TALLYHOUSE_EMBEDDED_SHARDS=${held} for every command on this DATA_DIR, or use another DATA_DIR`,
      );
    }
    return;
  }
  if (shards > 1 && existsSync(join(dataDir, 'clickhouse'))) {
    throw new StartupError(
      `DATA_DIR=${dataDir} holds the data of a single embedded engine but TALLYHOUSE_EMBEDDED_SHARDS=${shards}; unset TALLYHOUSE_EMBEDDED_SHARDS for this DATA_DIR, or use another DATA_DIR for a cluster`,
    );
  }
}

/**
 * `mkdir -p`, one level at a time: Node's recursive mkdirSync loops forever where mkdir answers
 * ENOENT under an existing parent (/proc/nope), which kept start-up silent for minutes.
 */
function makeDirectories(dir: string): void {
  const missing: string[] = [];
  for (let d = resolve(dir); !existsSync(d); d = dirname(d)) {
    missing.unshift(d);
    if (dirname(d) === d) break;
  }
  for (const d of missing) mkdirSync(d, { mode: 0o700 });
}

/** The engine library the embedded engine loads (the chdb package's, or CHDB_LIBCHDB_PATH). */
export function checkEngineLibrary(): void {
  let path: string;
  try {
    path = (createRequire(import.meta.url)('chdb/libchdb') as { libchdbPath(): string }).libchdbPath();
  } catch (err) {
    throw new StartupError(`the embedded ClickHouse engine library was not found (${String((err as Error).message).split('\n')[0]}); run npm ci, set CHDB_LIBCHDB_PATH, or set CLICKHOUSE_URL to use a ClickHouse server`);
  }
  if (!existsSync(path)) throw new StartupError(`the embedded ClickHouse engine library ${path} does not exist; run npm ci, or set CLICKHOUSE_URL`);
}

/** HOST and PORT can be bound, before minutes go into the engine and the demo data. */
export function checkListen(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err) => reject(listenError(err, host, port)));
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

/** The listen error of the real server, in the same words. */
export function listenError(err: unknown, host: string, port: number): Error {
  switch (codeOf(err)) {
    case 'EADDRINUSE':
      return new StartupError(`PORT=${port} is already in use on HOST=${host}; stop the other process or set PORT`);
    case 'EACCES':
      return new StartupError(`PORT=${port} on HOST=${host} needs privileges this user lacks; set PORT above 1023`);
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
    case 'EINVAL':
      return new StartupError(`HOST=${host} is not an address of this machine (${codeOf(err)}); set HOST to one, e.g. 127.0.0.1 or 0.0.0.0`);
    default:
      return err as Error;
  }
}

/** CLICKHOUSE_URL answers, and accepts CLICKHOUSE_USER / CLICKHOUSE_PASSWORD (ping needs no login). */
export async function checkClickHouse(config: Config, connect: () => Promise<Database>): Promise<Database> {
  let db: Database;
  try {
    db = await connect();
  } catch (err) {
    throw new StartupError(`CLICKHOUSE_URL=${config.clickhouse.url} is unreachable: ${String((err as Error).message).split('\n')[0]} (CLICKHOUSE_CONNECT_TIMEOUT_MS=${config.clickhouse.connectTimeoutMs})`);
  }
  try {
    await (await db.adminClient().query({ query: 'SELECT 1', format: 'JSONEachRow' })).json();
  } catch (err) {
    await db.close();
    // 516 AUTHENTICATION_FAILED, 192 UNKNOWN_USER, 193 WRONG_PASSWORD, 194 REQUIRED_PASSWORD
    if (err instanceof ClickHouseError && ['516', '192', '193', '194'].includes(String(err.code))) {
      throw new StartupError(`ClickHouse at CLICKHOUSE_URL=${config.clickhouse.url} refused CLICKHOUSE_USER=${config.clickhouse.user} with the given CLICKHOUSE_PASSWORD (${err.type ?? err.code})`);
    }
    throw new StartupError(`ClickHouse at CLICKHOUSE_URL=${config.clickhouse.url} answered the ping but not a query: ${reason(err)}`);
  }
  return db;
}

/**
 * The warm-up, once the service listens and before it announces itself: the first request after
 * a start should cost what the next ones do (bench/events/README.md, docs/operations.md). Each
 * step is timed and logged; a step that fails is logged and skipped, never a reason not to serve.
 * - The embedded engine this service started (mode `embedded-owned`) has empty caches: the primary
 *   indexes and marks of the tables the event reads use are loaded (src/clickhouse/prewarm.ts). A
 *   ClickHouse server of CLICKHOUSE_URL, or an engine another command started, keeps its caches
 *   across this service's restarts and is left as it is.
 * - The event reads run once for an organization with no events (src/events/read/warmup.ts): the
 *   code of the read path is compiled and the engine client's connection opened before a user's
 *   request needs them.
 * - One request to /openapi.json (a large JSON answer) through the HTTP stack, which loads what
 *   it loads on first use.
 * The modules load here, not at the top: a command that does not serve never loads the reads.
 */
export async function warmUp(db: Database, log: Logger, baseUrl: string): Promise<void> {
  const [{ prewarmTable }, { EVENT_READ_TABLES, warmEventReads }] = await Promise.all([import('../clickhouse/prewarm.ts'), import('../events/read/warmup.ts')]);
  const engineCaches = async () => {
    for (const table of EVENT_READ_TABLES) await prewarmTable(db.client(), table);
  };
  const steps: [string, () => Promise<unknown>][] = [
    ...(db.mode() === 'embedded-owned' ? [['engine caches', engineCaches] as [string, () => Promise<unknown>]] : []),
    ['event reads', () => warmEventReads(db.client())],
    ['http', () => getOnce(`${baseUrl}/openapi.json`)],
  ];
  for (const [step, run] of steps) {
    const started = performance.now();
    try {
      await run();
      log.info({ msg: 'warm-up', step, ms: Math.round(performance.now() - started) });
    } catch (err) {
      log.warn({ msg: 'warm-up step failed; serving without it', step, error: reason(err) });
    }
  }
}

/** GET on a connection of its own (no keep-alive: an idle pooled socket would outlive the step). */
function getOnce(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = httpGet(url, { agent: false, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`${url} answered ${res.statusCode}`))));
    });
    req.on('timeout', () => req.destroy(new Error(`${url} did not answer in time`)));
    req.on('error', reject);
  });
}
