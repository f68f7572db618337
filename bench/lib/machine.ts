import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import type { ClickHouseClient } from '@clickhouse/client';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

function packageVersion(name: string): string | undefined {
  try {
    return JSON.parse(readFileSync(`${REPO_ROOT}node_modules/${name}/package.json`, 'utf8')).version;
  } catch {
    return undefined;
  }
}

function gitCommit(): string | undefined {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: REPO_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return dirty ? `${commit}+dirty` : commit;
  } catch {
    return undefined;
  }
}

export interface MachineInfo {
  os: string;
  kernel: string;
  cpu_model: string;
  cpus: number;
  memory_gib: number;
  node: string;
  tallyhouse: string | undefined;
  git_commit: string | undefined;
  packages: Record<string, string | undefined>;
  clickhouse: string | undefined;
  /** 1/5/15-minute load averages when the run started: > 0 means something else was running. */
  load_average: number[];
}

/** The machine and versions a result was measured with, for the JSON result file. */
export async function machineInfo(client?: ClickHouseClient): Promise<MachineInfo> {
  let clickhouse: string | undefined;
  if (client) {
    try {
      const rs = await client.query({ query: 'SELECT version() AS v', format: 'JSONEachRow' });
      clickhouse = ((await rs.json()) as Array<{ v: string }>)[0]?.v;
    } catch {
      clickhouse = undefined;
    }
  }
  const cpus = os.cpus();
  return {
    os: `${os.type()} ${os.arch()}`,
    kernel: os.release(),
    cpu_model: cpus[0]?.model ?? 'unknown',
    cpus: os.availableParallelism?.() ?? cpus.length,
    memory_gib: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    tallyhouse: JSON.parse(readFileSync(`${REPO_ROOT}package.json`, 'utf8')).version,
    git_commit: gitCommit(),
    packages: Object.fromEntries(
      ['@clickhouse/client', 'chdb', 'koa', '@koa/router', 'valibot', 'bottleneck', 'tsx'].map((p) => [p, packageVersion(p)]),
    ),
    clickhouse,
    load_average: os.loadavg().map((x) => Math.round(x * 100) / 100),
  };
}
