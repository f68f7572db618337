/**
 * Shutdown bench: how long `tallyhouse serve` takes to exit on SIGTERM while survey-response
 * writes are in flight (POST /1.0/survey/response, `--clients` kept-alive connections sending
 * `--batch` records back to back). Per run: a fresh DATA_DIR, the writes until `--acks` requests
 * are acknowledged, SIGTERM, the time from the signal to the process's exit, then the stopped
 * data directory read through a new engine: every acknowledged id stored, and the pending marks
 * left for the next start. With `--restart`, the service is started again on the same directory
 * and the time until no mark is left is measured (the next start takes the leftovers over).
 *
 * `--repo DIR` runs the service of another checkout with the same load (before/after).
 * README.md beside this file: question, method, figures.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { connectDatabase } from '../../src/clickhouse/connection.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { parseFlags, positiveInt } from '../lib/args.ts';
import { REPO_ROOT } from '../lib/machine.ts';
import { writeResult } from '../lib/results.ts';
import { round, summarize } from '../lib/stats.ts';
import { responseRecord } from '../responses-write/records.ts';

const USAGE = `node --import tsx bench/shutdown/run.ts [options]
  --repo DIR      checkout whose service is measured (default: this one)
  --label NAME    name of the run in the results file (default: the repo's commit)
  --runs N        signals sent, each to a fresh service (default 5)
  --clients N     concurrent writing connections (default 4)
  --batch N       records per request (default 300; created_at over the last 7 days)
  --acks N        acknowledged requests before the signal (default 20)
  --preload N     responses of the same survey written first, their recomputes settled (default 100000)
  --restart       start the service again on the stopped directory and time the leftover marks' takeover`;

const flags = parseFlags(process.argv.slice(2), {
  repo: { type: 'string' }, label: { type: 'string' }, runs: { type: 'string' }, clients: { type: 'string' },
  batch: { type: 'string' }, acks: { type: 'string' }, preload: { type: 'string' }, restart: { type: 'boolean' }, help: { type: 'boolean' },
}, USAGE);
if (flags.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const repo = resolve(flags.repo ?? REPO_ROOT);
const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repo, encoding: 'utf8' }).trim();
const label = flags.label ?? commit;
const opts = {
  runs: positiveInt('runs', flags.runs, 5),
  clients: positiveInt('clients', flags.clients, 4),
  batch: positiveInt('batch', flags.batch, 300),
  acks: positiveInt('acks', flags.acks, 20),
  preload: positiveInt('preload', flags.preload, 100_000, 0),
  restart: Boolean(flags.restart),
};
const log = (line: string) => process.stderr.write(`[shutdown] ${line}\n`);
const BIN = join(repo, 'bin/tallyhouse.js');

interface Service { url: string; proc: ChildProcess; exited: Promise<number | null> }

async function startService(dataDir: string): Promise<Service> {
  const env = { ...process.env, DATA_DIR: dataDir, PORT: '0', TALLYHOUSE_DEMO: '0', LOG_LEVEL: 'warn', RATE_LIMIT_QUERIES: '1000000' };
  const proc = spawn(process.execPath, [BIN, 'serve'], { cwd: repo, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  let banner = '';
  proc.stdout!.on('data', (d) => (banner += d));
  const deadline = Date.now() + 180_000;
  while (!/running at (http:\/\/\S+)/.test(banner)) {
    if (proc.exitCode !== null) throw new Error(`the service exited (${proc.exitCode})`);
    if (Date.now() > deadline) throw new Error('the service did not come up');
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: /running at (http:\/\/\S+)/.exec(banner)![1], proc, exited };
}

function post(agent: Agent, url: string, token: string, body: Buffer): Promise<number | 'cut'> {
  return new Promise((res) => {
    const req = request(`${url}/1.0/survey/response`, { method: 'POST', agent, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': body.length } }, (r) => {
      r.resume();
      r.on('end', () => res(r.statusCode ?? 0));
      r.on('error', () => res('cut'));
    });
    req.on('error', () => res('cut'));
    req.end(body);
  });
}

/** Reads the stopped directory through a new engine (closed before returning). */
async function readStopped<T>(dataDir: string, fn: (q: (sql: string, params?: Record<string, unknown>) => Promise<number>) => Promise<T>): Promise<T> {
  const db = await connectDatabase(loadConfig({ DATA_DIR: dataDir }), createLogger('silent'), { supervise: false });
  try {
    return await fn(async (sql, params = {}) => {
      const rows = await (await db.client().query({ query: sql, query_params: params, format: 'JSONEachRow' })).json<Record<string, string>>();
      return Number(Object.values(rows[0])[0]);
    });
  } finally {
    await db.close();
  }
}

const pendingSql = 'SELECT toInt64(countIf(p != 0)) FROM (SELECT sum(pending) AS p FROM survey_rollup_pending WHERE org_id = {org:UUID} GROUP BY survey_id, hour)';

/** Record n created in one of the last 168 hours, so that every batch marks (and recomputes) most of them. */
function spread<T extends { created_at: string }>(record: T, n: number): T {
  const at = new Date(Date.now() - ((n * 7919) % 168) * 3_600_000 - (n % 3_600_000)).toISOString().replace('Z', '001Z');
  return { ...record, created_at: at, updated_at: at, ended_at: at, last_answer_at: at };
}

async function oneRun(i: number) {
  const dataDir = mkdtempSync(join(os.tmpdir(), 'tallyhouse-shutdown-'));
  try {
    const orgId = randomUUID();
    const env = { ...process.env, DATA_DIR: dataDir, TALLYHOUSE_DEMO: '0' };
    let svc = await startService(dataDir);
    const token = JSON.parse(execFileSync(process.execPath, [BIN, 'token', 'create', '--org', orgId, '--scope', 'responses:write', '--json'], { cwd: repo, env, encoding: 'utf8' })).token as string;
    const surveyId = randomUUID();
    const agent = new Agent({ keepAlive: true, maxSockets: opts.clients });
    const acked: string[][] = [];
    let n = 0;
    // An organization with data: the slices the load touches hold preload / 168 responses each,
    // which is what their recomputes read. Then its recomputes are left to finish.
    for (let sent = 0; sent < opts.preload; sent += 1000) {
      const records = Array.from({ length: Math.min(1000, opts.preload - sent) }, () => spread(responseRecord(orgId, surveyId, Date.now(), n), n++));
      const status = await post(agent, svc.url, token, Buffer.from(JSON.stringify(records)));
      if (status !== 200) throw new Error(`preload: HTTP ${status}`);
    }
    if (opts.preload > 0) {
      const db = await connectDatabase(loadConfig({ DATA_DIR: dataDir }), createLogger('silent'), { supervise: false });
      try {
        for (;;) {
          const rows = await (await db.client().query({ query: pendingSql, query_params: { org: orgId }, format: 'JSONEachRow' })).json<Record<string, string>>();
          if (Number(Object.values(rows[0])[0]) === 0) break;
          await new Promise((r) => setTimeout(r, 200));
        }
      } finally {
        await db.close();
      }
    }
    let stop = false;
    let signalAt = 0;
    const loops = Promise.all(Array.from({ length: opts.clients }, async () => {
      while (!stop) {
        const records = Array.from({ length: opts.batch }, () => spread(responseRecord(orgId, surveyId, Date.now(), n), n++));
        const status = await post(agent, svc.url, token, Buffer.from(JSON.stringify(records)));
        if (status === 200) acked.push(records.map((r) => r.id));
        else return;
      }
    }));
    while (acked.length < opts.acks) await new Promise((r) => setTimeout(r, 10));
    const load = os.loadavg().map((x) => round(x, 2));
    signalAt = performance.now();
    svc.proc.kill('SIGTERM');
    const code = await svc.exited;
    const exitMs = performance.now() - signalAt;
    stop = true;
    await loops;
    agent.destroy();
    const ids = acked.flat();
    const { stored, pending } = await readStopped(dataDir, async (q) => ({
      // In chunks: the engine refuses a form field past ~100 KB.
      stored: (await Promise.all(Array.from({ length: Math.ceil(ids.length / 1000) }, (_, c) =>
        q('SELECT count() FROM survey_responses FINAL WHERE org_id = {org:UUID} AND id IN {ids:Array(UUID)}', { org: orgId, ids: ids.slice(c * 1000, (c + 1) * 1000) })))).reduce((a, b) => a + b, 0),
      pending: await q(pendingSql, { org: orgId }),
    }));
    let takeoverMs: number | undefined;
    if (opts.restart) {
      const t0 = performance.now();
      svc = await startService(dataDir);
      const db = await connectDatabase(loadConfig({ DATA_DIR: dataDir }), createLogger('silent'), { supervise: false });
      try {
        for (;;) {
          const rows = await (await db.client().query({ query: pendingSql, query_params: { org: orgId }, format: 'JSONEachRow' })).json<Record<string, string>>();
          if (Number(Object.values(rows[0])[0]) === 0) break;
          if (performance.now() - t0 > 120_000) break;
          await new Promise((r) => setTimeout(r, 50));
        }
        takeoverMs = performance.now() - t0;
      } finally {
        await db.close();
        svc.proc.kill('SIGTERM');
        await svc.exited;
      }
    }
    const run = { run: i, exit_code: code, exit_ms: Math.round(exitMs), acknowledged_requests: acked.length, acknowledged_ids: ids.length, stored_of_acknowledged: stored, pending_slices_left: pending, restart_until_no_mark_ms: takeoverMs === undefined ? undefined : Math.round(takeoverMs), load_average: load };
    log(JSON.stringify(run));
    if (stored !== ids.length) throw new Error(`run ${i}: ${ids.length - stored} acknowledged responses missing`);
    return run;
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  log(`repo ${repo} (${commit}); load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  const runs = [];
  for (let i = 1; i <= opts.runs; i++) runs.push(await oneRun(i));
  const s = summarize(runs.map((r) => r.exit_ms));
  const summary = { exit_ms: { min: Math.min(...runs.map((r) => r.exit_ms)), p50: s.p50, max: s.max }, exit_codes: [...new Set(runs.map((r) => r.exit_code))], load_after: os.loadavg().map((x) => round(x, 2)) };
  const path = writeResult(`shutdown-${label}`, { label, commit, repo, options: opts, runs, summary });
  process.stdout.write(`${JSON.stringify(summary)}\nresults: ${path}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : err}\n`);
  process.exit(1);
});
