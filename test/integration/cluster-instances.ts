import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { freePort } from '../../src/ports.ts';
import { fileURLToPath } from 'node:url';
import type { Database } from '../../src/clickhouse/connection.ts';
import { stopProcess, track } from './processes.ts';

/**
 * Service instances (`tallyhouse serve`) on an embedded cluster of DATA_DIR, as the cluster suites
 * start them (the same steps as cluster.test.ts's own, for suites that need no Redis).
 */
const BIN = fileURLToPath(new URL('../../bin/tallyhouse.js', import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ClusterInstance {
  url: string;
  proc: ChildProcess;
  output: () => string;
}

export { freePort };

/**
 * One instance with `env(port)` as its environment, started once its banner is out (migrations
 * run, the demo seeded: a second instance finds both). A port taken meanwhile by an outgoing
 * connection: started again on another one.
 */
export async function startClusterInstance(env: (port: number) => NodeJS.ProcessEnv, attempts = 3): Promise<ClusterInstance> {
  try {
    return await startOnce(env);
  } catch (err) {
    if (attempts > 1 && /already in use/.test(String(err))) return startClusterInstance(env, attempts - 1);
    throw err;
  }
}

async function startOnce(env: (port: number) => NodeJS.ProcessEnv): Promise<ClusterInstance> {
  const port = await freePort();
  let out = '';
  const proc = track(spawn(process.execPath, [BIN, 'serve'], { env: env(port), stdio: ['ignore', 'pipe', 'pipe'] }));
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const deadline = Date.now() + 120_000;
  while (!/Stop with Ctrl-C/.test(out)) {
    if (Date.now() > deadline || proc.exitCode !== null) {
      // Not left running when the set-up gives up on it: the suite's after() only stops started instances.
      await stopProcess(proc);
      throw new Error(`instance did not start: ${out.slice(-2000)}`);
    }
    await sleep(100);
  }
  return { url: `http://127.0.0.1:${port}`, proc, output: () => out };
}

/** Which shard (0-based) of `shards` holds an organization: the Distributed sharding key, evaluated by the engine. */
export async function shardOf(db: Database, org: string, shards = 2): Promise<number> {
  const rs = await db.client().query({ query: 'SELECT cityHash64(toUUID({o:String})) % {n:UInt32} AS s', query_params: { o: org, n: shards }, format: 'JSONEachRow' });
  return Number((await rs.json<{ s: number }>())[0].s);
}

/** A new organization whose rows live on `shard`. */
export async function orgOnShard(db: Database, shard: number, shards = 2): Promise<string> {
  for (;;) {
    const org = randomUUID();
    if ((await shardOf(db, org, shards)) === shard) return org;
  }
}
