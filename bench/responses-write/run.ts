/**
 * Survey-response write bench: POST /1.0/survey/response through the API, `--clients` connections
 * sending requests of `--batch` records back to back, new ids mixed with upserts of ids written
 * earlier in the same phase. Two phases: into a new (empty) organization, then into an
 * organization holding `--large` responses (seeded once per data directory with the service's own
 * `tallyhouse seed`, then merged). README.md beside this file: question, method, figures.
 *
 * `--repo DIR` runs the service of another checkout (a git worktree of an older commit) with this
 * same load: the code before and after a change, back to back, on the same machine.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { buildClient } from '../../src/clickhouse/connection.ts';
import { findRunningEngine } from '../../src/clickhouse/engine.ts';
import { loadConfig } from '../../src/config.ts';
import { parseFlags, positiveInt, positiveNumber } from '../lib/args.ts';
import { REPO_ROOT } from '../lib/machine.ts';
import { freePort } from '../lib/service.ts';
import { cpuSeconds } from '../lib/proc.ts';
import { writeResult } from '../lib/results.ts';
import { round, summarize } from '../lib/stats.ts';
import { printTable } from '../lib/table.ts';
import { Agent, request } from 'node:http';
import { Reader } from './reads.ts';
import { responseRecord, upsertOf, type BenchRecord } from './records.ts';

const USAGE = `node --import tsx bench/responses-write/run.ts [options]
  --repo DIR           checkout whose service is measured (default: this one)
  --label NAME         name of the run in the results file (default: the repo's commit)
  --records N          records written per phase (default 200000)
  --clients N          concurrent connections (default 4)
  --batch N            records per request (default 1000)
  --upsert-share X     share of each request that upserts ids written earlier in the phase (default 0.1)
  --large N            responses of the large organization, 0 to skip that phase (default 5000000)
  --no-empty           skip the phase into an empty organization
  --read-every MS      during each phase, a survey summary and a daily aggregation of the org every MS
                       (reads.ts); 20 of each once the writes' marks are taken back, and 20 with every
                       hour of the phase's survey marked pending (default 0: none)
  --data-dir DIR       the service's DATA_DIR (default bench/.data/responses-write-<label>)
  --cpu-prof DIR       write a V8 CPU profile of the service into DIR (node --cpu-prof)`;

const flags = parseFlags(process.argv.slice(2), {
  repo: { type: 'string' }, label: { type: 'string' }, records: { type: 'string' }, clients: { type: 'string' },
  batch: { type: 'string' }, 'read-every': { type: 'string' }, 'upsert-share': { type: 'string' }, large: { type: 'string' }, 'no-empty': { type: 'boolean' },
  'data-dir': { type: 'string' }, 'cpu-prof': { type: 'string' }, help: { type: 'boolean' },
}, USAGE);
if (flags.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const parseCount = (s: string | undefined, fallback: number) => {
  if (s === undefined) return fallback;
  const m = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(s);
  if (!m) throw new Error(`not a count: ${s}`);
  return Math.round(Number(m[1]) * (m[2] === '' ? 1 : /k/i.test(m[2]) ? 1e3 : 1e6));
};
const repo = resolve(flags.repo ?? REPO_ROOT);
const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repo, encoding: 'utf8' }).trim();
const label = flags.label ?? commit;
const opts = {
  records: parseCount(flags.records, 200_000),
  clients: positiveInt('clients', flags.clients, 4),
  batch: positiveInt('batch', flags.batch, 1000),
  upsertShare: positiveNumber('upsert-share', flags['upsert-share'], 0.1, 0),
  large: parseCount(flags.large, 5_000_000),
  empty: !flags['no-empty'],
  readEveryMs: flags['read-every'] === undefined ? 0 : positiveInt('read-every', flags['read-every'], 0),
};
const dataDir = resolve(flags['data-dir'] ?? join(REPO_ROOT, 'bench/.data', `responses-write-${label}`));
const log = (line: string) => process.stderr.write(`[responses-write] ${line}\n`);

const serviceEnv = { DATA_DIR: dataDir, TALLYHOUSE_DEMO: '0', LOG_LEVEL: 'warn', RATE_LIMIT_QUERIES: '1000000', RATE_LIMIT_EVENTS: '1000000' };

/** Runs a command of the measured checkout's CLI on the same DATA_DIR; its stdout. */
function cli(args: string[], inherit = false): string {
  return execFileSync(process.execPath, [join(repo, 'bin/tallyhouse.js'), ...args], {
    cwd: repo, env: { ...process.env, ...serviceEnv }, encoding: 'utf8', stdio: ['ignore', inherit ? 'inherit' : 'pipe', 'inherit'], maxBuffer: 1 << 26,
  }) ?? '';
}

async function startService(): Promise<{ url: string; proc: ChildProcess; stop(): Promise<void> }> {
  const port = await freePort();
  const profile = flags['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${resolve(flags['cpu-prof'])}`] : [];
  const proc = spawn(process.execPath, [...profile, join(repo, 'bin/tallyhouse.js'), 'serve'], { cwd: repo, env: { ...process.env, ...serviceEnv, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`the service exited (${proc.exitCode})`);
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) break;
    } catch { /* not yet */ }
    if (Date.now() > deadline) throw new Error('the service did not come up');
    await new Promise((r) => setTimeout(r, 200));
  }
  const exited = new Promise((r) => proc.once('exit', r));
  return { url, proc, stop: async () => { proc.kill('SIGTERM'); await exited; } };
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/** One POST of a serialized body over a kept-alive connection: status, text, ms. */
function post(url: string, token: string, body: Buffer): Promise<{ status: number; text: string; ms: number }> {
  return new Promise((res, rej) => {
    const t0 = performance.now();
    const req = request(`${url}/1.0/survey/response`, { method: 'POST', agent, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': body.length } }, (r) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () => res({ status: r.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - t0 }));
      r.on('error', rej);
    });
    req.on('error', rej);
    req.end(body);
  });
}

const uuidFrom = (text: string) => {
  const h = createHash('sha1').update(text).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
};

async function count(client: ClickHouseClient, query: string, params: Record<string, unknown>): Promise<Record<string, number>> {
  const rs = await client.query({ query, query_params: params, format: 'JSONEachRow' });
  const [row] = await rs.json<Record<string, string>>();
  return Object.fromEntries(Object.entries(row ?? {}).map(([k, v]) => [k, Number(v)]));
}

/**
 * The bodies of one phase, serialized before the clock starts. Request r carries
 * (1 - upsertShare) new records and upsertShare upserts of records sent at least 2 x clients
 * requests earlier (so acknowledged before, whatever the interleaving).
 */
function phaseBodies(orgId: string, surveyId: string): { bodies: Buffer[]; distinctIds: number; upserts: number } {
  const requests = Math.ceil(opts.records / opts.batch);
  const now = Date.now();
  const sent: BenchRecord[] = [];
  const bodies: Buffer[] = [];
  let upserts = 0;
  let i = 0;
  for (let r = 0; r < requests; r++) {
    const size = Math.min(opts.batch, opts.records - r * opts.batch);
    const reusable = r >= 2 * opts.clients ? (r - 2 * opts.clients) * opts.batch : 0;
    const wantUpserts = reusable > 0 ? Math.floor(size * opts.upsertShare) : 0;
    const body: BenchRecord[] = [];
    const picked = new Set<number>();
    for (let k = 0; k < wantUpserts; k++) {
      let j = (r * 7919 + k * 104_729) % Math.min(reusable, sent.length);
      while (picked.has(j)) j = (j + 1) % Math.min(reusable, sent.length);
      picked.add(j);
      body.push(upsertOf(sent[j], r));
    }
    upserts += body.length;
    while (body.length < size) {
      const rec = responseRecord(orgId, surveyId, now, i++);
      sent.push(rec);
      body.push(rec);
    }
    bodies.push(Buffer.from(JSON.stringify(body)));
  }
  return { bodies, distinctIds: sent.length, upserts };
}

/** Engine statements of the window by kind and table: count and CPU (system.query_log). */
async function statements(client: ClickHouseClient, fromMs: number, toMs: number) {
  await client.command({ query: 'SYSTEM FLUSH LOGS' });
  const rs = await client.query({
    query: `SELECT query_kind AS kind, arrayStringConcat(arraySort(arrayDistinct(arrayMap(t -> splitByChar('.', t)[-1], tables))), ',') AS tables,
              substring(replaceRegexpAll(any(query), '\\\\s+', ' '), 1, 60) AS sample, count() AS statements, round(sum(ProfileEvents['OSCPUVirtualTimeMicroseconds']) / 1e6, 3) AS cpu_s, round(sum(query_duration_ms) / 1e3, 3) AS wall_s
            FROM system.query_log
            WHERE type = 'QueryFinish' AND current_database = currentDatabase() AND query_kind NOT IN ('System')
              AND event_time_microseconds BETWEEN fromUnixTimestamp64Micro({from:Int64}) AND fromUnixTimestamp64Micro({to:Int64})
            GROUP BY kind, tables, normalized_query_hash ORDER BY cpu_s DESC`,
    query_params: { from: Math.round(fromMs * 1000), to: Math.round(toMs * 1000) },
    format: 'JSONEachRow',
  });
  return (await rs.json<Record<string, string>>()).map((r) => ({ kind: r.kind, tables: r.tables, sample: r.sample, statements: Number(r.statements), cpu_s: Number(r.cpu_s), wall_s: Number(r.wall_s) }));
}

/**
 * Waits until the engine is quiet before a phase: no merge running, and (in a checkout with rollup
 * marks) every mark taken back, among them the marks a previous run's service left at its stop,
 * which the new process takes over (recomputes) at start. Else the phase would time that catching
 * up, which the checkout before the rollups does not have.
 */
async function quiesce(client: ClickHouseClient): Promise<void> {
  const t0 = Date.now();
  const { marks: hasMarks } = await count(client, "SELECT count() AS marks FROM system.tables WHERE database = currentDatabase() AND name = 'survey_rollup_pending'", {});
  for (;;) {
    const { merges } = await count(client, 'SELECT count() AS merges FROM system.merges WHERE database = currentDatabase()', {});
    const { pending } = hasMarks
      ? await count(client, 'SELECT count() AS pending FROM (SELECT 1 FROM survey_rollup_pending GROUP BY org_id, survey_id, hour HAVING sum(pending) != 0)', {})
      : { pending: 0 };
    if (merges === 0 && pending === 0) break;
    if (Date.now() - t0 > 600_000) {
      log(`not quiet after 600 s (${merges} merges, ${pending} pending slices): measuring anyway`);
      break;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  if (Date.now() - t0 > 1500) log(`waited ${Math.round((Date.now() - t0) / 1000)} s for merges and rollup marks to settle`);
}

async function runPhase(svc: { url: string; proc: ChildProcess }, client: ClickHouseClient, org: 'empty' | 'large', orgId: string) {
  await quiesce(client);
  const token = JSON.parse(cli(['token', 'create', '--org', orgId, '--scope', 'responses:write', '--json'])).token as string;
  const surveyId = randomUUID();
  const { bodies, distinctIds, upserts } = phaseBodies(orgId, surveyId);
  // One record of another survey first: the service reads what it keeps in memory (the claimed
  // ids) at its first write, once per process, not in the timed phase.
  const warm = await post(svc.url, token, Buffer.from(JSON.stringify([responseRecord(orgId, randomUUID(), Date.now(), 0)])));
  if (warm.status !== 200) throw new Error(`warm-up: HTTP ${warm.status}: ${warm.text.slice(0, 300)}`);
  const before = await count(client, 'SELECT count() AS n FROM survey_responses WHERE org_id = {org:UUID}', { org: orgId });
  const enginePid = JSON.parse(readFileSync(join(dataDir, 'engine.json'), 'utf8')).pid as number;
  const load0 = os.loadavg();
  const cpu0 = { service: cpuSeconds(svc.proc.pid), engine: cpuSeconds(enginePid) };
  const latencies: number[] = [];
  let next = 0;
  const reader = opts.readEveryMs > 0
    ? new Reader(svc.url, JSON.parse(cli(['token', 'create', '--org', orgId, '--scope', 'responses:read', '--json'])).token as string, client, orgId)
    : undefined;
  const t0 = performance.now();
  const wall0 = Date.now();
  const writing = Promise.all(Array.from({ length: opts.clients }, async () => {
    while (next < bodies.length) {
      const body = bodies[next++];
      const res = await post(svc.url, token, body);
      if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${res.text.slice(0, 300)}`);
      latencies.push(res.ms);
    }
  }));
  const readsDuring = reader?.during(writing, opts.readEveryMs);
  await writing;
  const seconds = (performance.now() - t0) / 1000;
  const wall1 = Date.now();
  const cpu1 = { service: cpuSeconds(svc.proc.pid), engine: cpuSeconds(enginePid) };
  const load1 = os.loadavg();
  const stored = await count(client, 'SELECT count() AS rows, uniqExact(id) AS ids FROM survey_responses FINAL WHERE org_id = {org:UUID} AND survey_id = {survey:UUID}', { org: orgId, survey: surveyId });
  const records = bodies.length && opts.records;
  let reads;
  if (reader) {
    const during = await readsDuring!;
    const settledSeconds = await reader.settled();
    await quiesce(client);
    reads = { during, settled_seconds: settledSeconds, quiet: await reader.quiet(20), quiet_marked: await reader.quietMarked(20, surveyId) };
  }
  const perRecord = (s: number | undefined) => (s === undefined ? undefined : round((s * 1e6) / records, 1));
  const lat = summarize(latencies);
  return {
    org, org_id: orgId, org_rows_before: before.n, survey_id: surveyId, records, new_ids: distinctIds, upserts,
    seconds: round(seconds, 2), records_per_second: Math.round(records / seconds),
    request_ms: { p50: round(lat.p50), p95: round(lat.p95), max: round(lat.max) },
    cpu_us_per_record: { service: perRecord(cpu1.service! - cpu0.service!), engine: perRecord(cpu1.engine! - cpu0.engine!) },
    stored: { rows: stored.rows, distinct_ids: stored.ids, expected: distinctIds },
    load_average: { before: load0.map((x) => round(x, 2)), after: load1.map((x) => round(x, 2)) },
    reads,
    statements: await statements(client, wall0, wall1).catch((err) => {
      log(`engine statements not read: ${String(err)}`);
      return [];
    }),
  };
}

async function main() {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  log(`repo ${repo} (${commit}), DATA_DIR ${dataDir}`);
  let svc = await startService();
  const config = loadConfig({ ...process.env, ...serviceEnv });
  let endpoint = await findRunningEngine(dataDir);
  if (!endpoint) throw new Error('no engine found');
  let client = buildClient(endpoint, config, config.clickhouse.database);
  const phases = [];
  try {
    if (opts.empty) phases.push(await runPhase(svc, client, 'empty', randomUUID()));
    if (opts.large > 0) {
      const largeOrg = uuidFrom(`tallyhouse-bench-responses-write:${opts.large}`);
      const { n } = await count(client, 'SELECT count() AS n FROM survey_responses WHERE org_id = {org:UUID}', { org: largeOrg });
      if (n < opts.large) {
        log(`seeding ${opts.large - n} responses into ${largeOrg}`);
        cli(['seed', '--responses', String(opts.large - n), '--org', largeOrg, '--days', '90'], true);
      }
      // Past weeks in one part each, as a live table's merges leave them (bench/query README).
      const { parts } = await count(client, "SELECT toUInt64(max(c)) AS parts FROM (SELECT count() AS c FROM system.parts WHERE database = currentDatabase() AND table = 'survey_responses' AND active GROUP BY partition)", {});
      if (parts > 1) {
        log('merging (OPTIMIZE TABLE survey_responses FINAL)');
        const slow = createClient({ url: endpoint.url, http_headers: endpoint.headers, database: config.clickhouse.database, request_timeout: 3_600_000 });
        await slow.command({ query: 'OPTIMIZE TABLE survey_responses FINAL', clickhouse_settings: { max_execution_time: 3600 } }).finally(() => slow.close());
      }
      if (n < opts.large) {
        // A service that has been running over the organization, not one catching up with a seed
        // written behind its back: a new process reads the claimed ids at its first write.
        await client.close();
        await svc.stop();
        svc = await startService();
        endpoint = await findRunningEngine(dataDir);
        if (!endpoint) throw new Error('no engine found');
        client = buildClient(endpoint, config, config.clickhouse.database);
      }
      phases.push(await runPhase(svc, client, 'large', largeOrg));
    }
  } finally {
    agent.destroy();
    await client.close();
    await svc.stop();
  }
  const path = writeResult(`responses-write-${label}`, { label, commit, repo, options: opts, phases });
  printTable(`survey-response writes: ${label} (${commit})`, ['org', 'rows before', 'records/s', 'p50 ms', 'p95 ms', 'svc µs/rec', 'eng µs/rec', 'stored', 'expected', 'load before', 'load after'],
    phases.map((p) => [p.org, p.org_rows_before, p.records_per_second, p.request_ms.p50, p.request_ms.p95, p.cpu_us_per_record.service, p.cpu_us_per_record.engine,
      `${p.stored.rows}/${p.stored.distinct_ids}`, p.stored.expected, p.load_average.before.join(' '), p.load_average.after.join(' ')]));
  const withReads = phases.filter((p) => p.reads);
  if (withReads.length > 0) {
    printTable(`reads of the org (every ${opts.readEveryMs} ms during the writes; 20 once quiet; 20 quiet with every hour of the written survey marked)`, ['org', 'when', 'pairs', 'summary p50 / p95 ms', 'aggregation p50 / p95 ms', 'pending slices mean / max', 'all taken back after s'],
      withReads.flatMap((p) => (['during', 'quiet', 'quiet_marked'] as const).map((when) => {
        const r = p.reads![when];
        return [p.org, when, r.reads, `${r.summary_ms.p50} / ${r.summary_ms.p95}`, `${r.aggregation_ms.p50} / ${r.aggregation_ms.p95}`, `${r.pending_slices.mean} / ${r.pending_slices.max}`, when === 'during' ? p.reads!.settled_seconds : ''];
      })));
  }
  for (const p of phases) {
    const requests = Math.ceil(p.records / opts.batch);
    printTable(`engine statements (${p.org})`, ['kind', 'tables', 'query', 'statements', 'per request', 'cpu s', 'µs/record'],
      p.statements.map((s) => [s.kind, s.tables, s.sample, s.statements, round(s.statements / requests, 2), s.cpu_s, round((s.cpu_s * 1e6) / p.records, 1)]));
  }
  log(`results: ${path}`);
}

await main();
