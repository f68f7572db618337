/**
 * The service under test for the query bench: `node bin/tallyhouse.js serve` as a child process on
 * a PERSISTENT data directory (bench/.data/query-<size>, gitignored), so that a data set of
 * millions of responses is seeded once and reused by later runs. (bench/lib/service.ts starts the
 * service on a fresh temporary directory, which suits the ingest bench but would reseed every run.)
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ClickHouseClient } from '@clickhouse/client';
import { buildClient } from '../../src/clickhouse/connection.ts';
import { findRunningEngine, type EngineEndpoint } from '../../src/clickhouse/engine.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { REPO_ROOT } from '../lib/machine.ts';

/** One directory per data-set size (bench/.data/query-1M, ...): each table holds one set, merged on its own. */
export const dataDirFor = (label: string) => resolve(REPO_ROOT, `bench/.data/query-${label}`);

/** Measurable service: no per-request log lines, the per-token query rate limit lifted. */
export const QUERY_BENCH_SERVICE_ENV: Record<string, string> = {
  LOG_LEVEL: 'warn',
  RATE_LIMIT_QUERIES: '1000000',
};

export interface QueryBenchService {
  url: string;
  dataDir: string;
  config: Config;
  /** @clickhouse/client on the service database, through the engine the service runs. */
  client: ClickHouseClient;
  endpoint: EngineEndpoint;
  servicePid: number | undefined;
  enginePid(): number | undefined;
  serviceEnv: Record<string, string>;
  stderrTail(): string;
  stop(): Promise<void>;
}

const STARTUP_TIMEOUT_MS = 180_000;

export async function startQueryService(opts: {
  dataDir: string;
  env?: Record<string, string>;
  cpuProfDir?: string;
  log?: (line: string) => void;
}): Promise<QueryBenchService> {
  const log = opts.log ?? (() => {});
  if (process.env.CLICKHOUSE_URL) throw new Error('the query bench measures the embedded engine: unset CLICKHOUSE_URL');
  const dataDir = resolve(opts.dataDir);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const serviceEnv: Record<string, string> = { ...QUERY_BENCH_SERVICE_ENV, DATA_DIR: dataDir, PORT: '0', ...(opts.env ?? {}) };
  // Profile flags go on this command line only: NODE_OPTIONS would reach the engine child too.
  const nodeArgs = opts.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`] : [];
  const child = spawn(process.execPath, [...nodeArgs, 'bin/tallyhouse.js', 'serve'], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...serviceEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout = (stdout + s).slice(-20_000)));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr = (stderr + s).slice(-20_000)));
  let exitCode: number | null | undefined;
  const exited = new Promise<void>((r) => child.once('exit', (code) => ((exitCode = code), r())));
  const stderrTail = () => stderr.split('\n').slice(-30).join('\n');
  const stopChild = async () => {
    if (exitCode !== undefined) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 45_000);
    await exited;
    clearTimeout(timer);
  };

  log(`starting the service (embedded engine, DATA_DIR=${dataDir})`);
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  let url: string | undefined;
  while (!url) {
    if (exitCode !== undefined) throw new Error(`the service exited with code ${exitCode} before it was up:\n${stderrTail()}`);
    if (Date.now() > deadline) {
      await stopChild();
      throw new Error(`the service did not come up within ${STARTUP_TIMEOUT_MS / 1000} s:\n${stderrTail()}`);
    }
    url = /running at (http:\/\/\S+)/.exec(stdout)?.[1];
    if (!url) await new Promise((r) => setTimeout(r, 100));
  }
  try {
    const config = loadConfig({ ...process.env, ...serviceEnv });
    const endpoint = await findRunningEngine(dataDir);
    if (!endpoint) throw new Error(`the service is up but no engine answers for ${dataDir}`);
    const client = buildClient(endpoint, config, config.clickhouse.database);
    log(`service up at ${url}`);
    return {
      url,
      dataDir,
      config,
      client,
      endpoint,
      servicePid: child.pid,
      enginePid: () => {
        try {
          return JSON.parse(readFileSync(join(dataDir, 'engine.json'), 'utf8')).pid;
        } catch {
          return undefined;
        }
      },
      serviceEnv,
      stderrTail,
      stop: async () => {
        await client.close();
        await stopChild();
      },
    };
  } catch (err) {
    await stopChild();
    throw err;
  }
}
