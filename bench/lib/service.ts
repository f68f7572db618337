import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { freePort } from '../../src/ports.ts';
import os from 'node:os';
import { join, resolve } from 'node:path';
import type { ClickHouseClient } from '@clickhouse/client';
import { buildClient } from '../../src/clickhouse/connection.ts';
import { findRunningEngine, type EngineEndpoint } from '../../src/clickhouse/engine.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { mintToken, type Scope, type TokenStore } from '../../src/tokens/tokens.ts';
import { connectDatabase } from '../../src/clickhouse/connection.ts';
import { createLogger } from '../../src/log.ts';
import { REPO_ROOT } from './machine.ts';

/**
 * The service under test, as the bench sees it: its URL, a ClickHouse client on its database (to
 * mint tokens, count stored rows, read system.query_log and insert directly), and the pids whose
 * CPU time is measured.
 */
export interface BenchTarget {
  url: string;
  /** 'embedded' (an engine in dataDir) or 'external' (CLICKHOUSE_URL). */
  storage: 'embedded' | 'external';
  dataDir: string | undefined;
  config: Config;
  client: ClickHouseClient;
  endpoint: EngineEndpoint;
  /** The service's node process (undefined for --url without --pid). */
  servicePid: number | undefined;
  /**
   * The embedded engine's process, from DATA_DIR/engine.json (undefined with CLICKHOUSE_URL); with
   * TALLYHOUSE_EMBEDDED_SHARDS=N, every shard's engine (DATA_DIR/shard-<i>/engine.json).
   */
  enginePid(): number | number[] | undefined;
  /** The environment the service was started with (the settings of the run). */
  serviceEnv: Record<string, string>;
  /** Extra node flags the service was started with. */
  serviceNodeArgs: string[];
  /** A fresh events token for a new organization. */
  mintEventsToken(orgId: string): Promise<string>;
  /** A token with these scopes (written to every node of an embedded cluster). */
  mintToken(orgId: string, scopes: Scope[]): Promise<string>;
  /** Last lines of the service's stderr (for failures). */
  stderrTail(): string;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Extra service environment (INGEST_* etc.); overrides the bench defaults below. */
  env?: Record<string, string>;
  /**
   * A persistent DATA_DIR (created if missing, never deleted), for a data set that later runs
   * reuse (the query bench). Without it: a fresh temporary directory, deleted at stop.
   */
  dataDir?: string;
  /** Refuse CLICKHOUSE_URL: for a bench that measures the embedded engine only. */
  embeddedOnly?: boolean;
  /** Write a V8 CPU profile of the service to this directory (node --cpu-prof). */
  cpuProfDir?: string;
  /** Extra node/V8 flags for the service process, e.g. --max-semi-space-size=64. */
  nodeArgs?: string[];
  /** Keep the temporary DATA_DIR after the run. */
  keepData?: boolean;
  /** Extra engine config, written to DATA_DIR/engine.d/bench.xml (merged by the engine; any checkout). */
  engineConfigXml?: string;
  /** Another checkout of tallyhouse whose service to start (its own bin/tallyhouse.js): before/after comparisons with one load generator. */
  repo?: string;
  log?: (line: string) => void;
}

/** What makes the service measurable: no per-request log lines, rate limiting lifted. */
export const BENCH_SERVICE_ENV: Record<string, string> = {
  LOG_LEVEL: 'warn',
  RATE_LIMIT_EVENTS: '1000000',
  RATE_LIMIT_QUERIES: '1000000',
};

const STARTUP_TIMEOUT_MS = 180_000;

export { freePort };

function readEnginePid(dataDir: string, shards = 1): number | number[] | undefined {
  const pidIn = (dir: string): number | undefined => {
    try {
      return JSON.parse(readFileSync(join(dir, 'engine.json'), 'utf8')).pid;
    } catch {
      return undefined;
    }
  };
  if (shards <= 1) return pidIn(dataDir);
  const pids = Array.from({ length: shards }, (_, i) => pidIn(join(dataDir, `shard-${i + 1}`)));
  return pids.every((p) => p !== undefined) ? (pids as number[]) : undefined;
}

/**
 * The service's storage, for the bench's own queries (count rows, query_log, direct inserts). An
 * embedded cluster is reached through its first shard (Distributed tables answer from any node);
 * tokens are minted through the Database so that cluster mode writes every node (tokens.ts).
 */
async function connectStorage(config: Config): Promise<{ endpoint: EngineEndpoint; client: ClickHouseClient; tokens: TokenStore; close(): Promise<void> }> {
  let endpoint: EngineEndpoint | undefined;
  if (config.clickhouse.url) endpoint = { url: config.clickhouse.url, headers: {} };
  else endpoint = await findRunningEngine(config.embeddedShards > 1 ? join(config.dataDir, 'shard-1') : config.dataDir);
  if (!endpoint) throw new Error(`no running engine found in ${config.dataDir} (is the service running on it?)`);
  const client = buildClient(endpoint, config, config.clickhouse.database);
  if (config.embeddedShards <= 1 || config.clickhouse.url) return { endpoint, client, tokens: client, close: () => client.close() };
  const db = await connectDatabase(config, createLogger('silent'), { supervise: false });
  return { endpoint, client, tokens: db, close: async () => { await client.close(); await db.close(); } };
}

/**
 * Starts `node bin/tallyhouse.js serve` as a child process: embedded engine in a DATA_DIR (fresh
 * and temporary unless `opts.dataDir`), or CLICKHOUSE_URL when the bench's environment sets it.
 * PORT=0 and the URL is read from the start-up banner ("running at http://..."); with
 * CLICKHOUSE_URL no banner is printed, so a free port is picked and /readyz polled instead.
 */
export async function startService(opts: StartOptions = {}): Promise<BenchTarget> {
  const log = opts.log ?? (() => {});
  const external = Boolean(process.env.CLICKHOUSE_URL);
  if (external && opts.embeddedOnly) throw new Error('this bench measures the embedded engine: unset CLICKHOUSE_URL');
  const persistent = opts.dataDir !== undefined;
  const dataDir = persistent ? resolve(opts.dataDir!) : mkdtempSync(join(os.tmpdir(), 'tallyhouse-bench-'));
  if (persistent) mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (opts.engineConfigXml && !external) {
    mkdirSync(join(dataDir, 'engine.d'), { recursive: true, mode: 0o700 });
    writeFileSync(join(dataDir, 'engine.d', 'bench.xml'), opts.engineConfigXml, { mode: 0o600 });
  }
  const removeData = () => {
    if (!persistent && !opts.keepData) rmSync(dataDir, { recursive: true, force: true });
  };
  const port = external ? await freePort() : 0;
  const serviceEnv: Record<string, string> = { ...BENCH_SERVICE_ENV, DATA_DIR: dataDir, PORT: String(port), ...(opts.env ?? {}) };
  const env = { ...process.env, ...serviceEnv };
  // NODE_OPTIONS would reach the engine child as well: profile flags go on this command line only.
  const nodeArgs = [...(opts.nodeArgs ?? []), ...(opts.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`] : [])];
  const child = spawn(process.execPath, [...nodeArgs, 'bin/tallyhouse.js', 'serve'], { cwd: opts.repo ? resolve(opts.repo) : REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });

  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout = (stdout + s).slice(-20_000)));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => {
    stderr = (stderr + s).slice(-20_000);
  });
  let exited: number | null | undefined;
  const exit = new Promise<void>((resolve) => child.once('exit', (code) => ((exited = code), resolve())));
  const stderrTail = () => stderr.split('\n').slice(-30).join('\n');

  const stopChild = async () => {
    if (exited !== undefined) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 45_000);
    await exit;
    clearTimeout(timer);
  };

  try {
    log(`starting the service (${external ? `CLICKHOUSE_URL=${process.env.CLICKHOUSE_URL}` : `embedded engine, DATA_DIR=${dataDir}`})`);
    const url = await waitForService(child, () => stdout, () => exited, external ? `http://127.0.0.1:${port}` : undefined, stderrTail);
    const config = loadConfig({ ...process.env, ...serviceEnv });
    const { endpoint, client, tokens, close } = await connectStorage(config);
    log(`service up at ${url}`);
    return {
      url,
      storage: external ? 'external' : 'embedded',
      dataDir,
      config,
      client,
      endpoint,
      servicePid: child.pid,
      enginePid: () => (external ? undefined : readEnginePid(dataDir, config.embeddedShards)),
      serviceEnv,
      serviceNodeArgs: opts.nodeArgs ?? [],
      mintEventsToken: async (orgId) => (await mintToken(tokens, orgId, ['events'], 'bench')).token,
      mintToken: async (orgId, scopes) => (await mintToken(tokens, orgId, scopes, 'bench')).token,
      stderrTail,
      stop: async () => {
        await close();
        await stopChild();
        removeData();
      },
    };
  } catch (err) {
    await stopChild();
    removeData();
    throw err;
  }
}

async function waitForService(
  child: ChildProcess,
  stdout: () => string,
  exited: () => number | null | undefined,
  pollUrl: string | undefined,
  stderrTail: () => string,
): Promise<string> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (exited() !== undefined) {
      throw new Error(`the service exited with code ${exited()} before it was up:\n${stderrTail()}`);
    }
    if (pollUrl) {
      try {
        if ((await fetch(`${pollUrl}/readyz`)).status === 200) return pollUrl;
      } catch {
        /* not listening yet */
      }
    } else {
      const m = /running at (http:\/\/\S+)/.exec(stdout());
      if (m) return m[1];
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`the service did not come up within ${STARTUP_TIMEOUT_MS / 1000} s:\n${stderrTail()}`);
}

/**
 * A service somebody else runs (--url). The bench still needs its storage, to mint tokens and
 * count rows: --data-dir (embedded engine) or CLICKHOUSE_URL. CPU is measured only with --pid.
 */
export async function attachService(url: string, opts: { dataDir?: string; pid?: number }): Promise<BenchTarget> {
  const env = { ...process.env, ...(opts.dataDir ? { DATA_DIR: opts.dataDir } : {}) };
  const config = loadConfig(env);
  if (!config.clickhouse.url && !(opts.dataDir && existsSync(join(config.dataDir, 'engine.json')))) {
    throw new Error('--url needs the service storage too: --data-dir <its DATA_DIR> or CLICKHOUSE_URL');
  }
  const { endpoint, client, tokens, close } = await connectStorage(config);
  return {
    url: url.replace(/\/$/, ''),
    storage: config.clickhouse.url ? 'external' : 'embedded',
    dataDir: config.clickhouse.url ? undefined : config.dataDir,
    config,
    client,
    endpoint,
    servicePid: opts.pid,
    enginePid: () => (config.clickhouse.url ? undefined : readEnginePid(config.dataDir, config.embeddedShards)),
    serviceEnv: {},
    serviceNodeArgs: [],
    mintEventsToken: async (orgId) => (await mintToken(tokens, orgId, ['events'], 'bench')).token,
    mintToken: async (orgId, scopes) => (await mintToken(tokens, orgId, scopes, 'bench')).token,
    stderrTail: () => '',
    stop: async () => {
      await close();
    },
  };
}
