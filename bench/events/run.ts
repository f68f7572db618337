/**
 * Event reads bench: first-run latency over HTTP of the four reads the issue sets targets for,
 * on N events of one organization over 90 days (10M by default), embedded engine, each beside
 * the same question asked directly of the engine in the same run.
 *
 *   node --import tsx bench/events/run.ts [--events 10M] [--iterations 20] [--data-dir DIR] [--cases REGEX] [--warmup N]
 *
 * The data set is seeded once into a persistent DATA_DIR (bench/.data/events-<N>) with
 * `seedEvents` (the `tallyhouse seed --events` generator), measured with the parts the background
 * merges leave, then reused.
 * "First run": every iteration moves the range end by one millisecond, so the SQL parameters
 * differ and the 3 s polling cache never answers. The load average is printed with the figures
 * (before and after each case): on a shared machine they measure the contention as much as the
 * service; the engine's CPU time per question (from /proc) is printed beside them, as it depends
 * less on the contention than the wall time.
 * `--warmup N`: N untimed runs of each case before its timed ones (on ranges of their own, so no
 * timed run is answered from a cache): the timed runs then measure a running service, not the
 * first requests of freshly started processes (the service's code and the engine's marks loaded
 * on first use). Without it (the default) the first timed run of the first case pays for both.
 */
import os from 'node:os';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseCount } from '../../src/seed/args.ts';
import { seedEvents } from '../../src/seed/events.ts';
import { mintToken } from '../../src/tokens/tokens.ts';
import { parseFlags, positiveInt } from '../lib/args.ts';
import { REPO_ROOT } from '../lib/machine.ts';
import { waitForMerges } from '../lib/merges.ts';
import { cpuSeconds } from '../lib/proc.ts';
import { startService } from '../lib/service.ts';
import { summarize } from '../lib/stats.ts';
import { closeAgent, timedRequest } from '../query/http.ts';

const DAY = 86_400_000;
const TARGETS_MS: Record<string, number> = {
  'count by event_name x 100 daily buckets': 100,
  'unique users per day': 200,
  'property filter + daily histogram': 300,
  'search newest page + exact count': 100,
};

const USAGE = 'usage: node --import tsx bench/events/run.ts [--events 10M] [--iterations 20] [--data-dir DIR] [--cases REGEX] [--warmup N]';
const flags = parseFlags(process.argv.slice(2), { events: { type: 'string' }, iterations: { type: 'string' }, 'data-dir': { type: 'string' }, cases: { type: 'string' }, warmup: { type: 'string' } }, USAGE);
const only = new RegExp(flags.cases ?? '.');
const events = flags.events ? parseCount(flags.events) ?? 10_000_000 : 10_000_000;
const iterations = positiveInt('iterations', flags.iterations, 20);
const warmup = flags.warmup === '0' ? 0 : positiveInt('warmup', flags.warmup, 0);
const dataDir = resolve(flags['data-dir'] ?? join(REPO_ROOT, 'bench/.data', `events-${events}`));
const log = (line: string) => process.stderr.write(`[events] ${line}\n`);

const svc = await startService({ dataDir, embeddedOnly: true, log });
try {
  const stateFile = join(dataDir, 'bench-events.json');
  let state: { orgId: string; now: number } | undefined = existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, 'utf8')) : undefined;
  if (!state) {
    // A seed cut short (the engine went away on the loaded machine) is resumed: its organization
    // gets the events it lacks.
    const [partial] = await (await svc.client.query({ query: 'SELECT toString(org_id) AS org, count() AS c FROM events GROUP BY org_id ORDER BY c DESC LIMIT 1', format: 'JSONEachRow' })).json<{ org: string; c: string }>();
    const orgId = partial?.org ?? crypto.randomUUID();
    const missing = events - Number(partial?.c ?? 0);
    const now = Date.now();
    log(`seeding ${missing.toLocaleString('en-US')} events over 90 days into org ${orgId}`);
    const t0 = performance.now();
    if (missing > 0) await seedEvents(svc.client, { orgId, events: missing, days: 90, now: new Date(now), onProgress: (d, t) => log(`seed ${d.toLocaleString('en-US')} / ${t.toLocaleString('en-US')}, ${((performance.now() - t0) / 1000).toFixed(0)} s`) });
    // No OPTIMIZE FINAL: on the loaded machine it outlived the client's 60 s request timeout;
    // the parts are measured as the background merges leave them (events is a plain MergeTree:
    // no FINAL at read time, several parts only add per-part overhead).
    state = { orgId, now };
    writeFileSync(stateFile, JSON.stringify(state));
  }
  // A migration's MATERIALIZE (a projection or column over the existing parts) runs as a
  // background mutation: the cases are measured once it is done, and its time is what an upgrade
  // costs (the engine CPU it took, from /proc, beside the wall time).
  const rowsOf = async <T>(query: string) => (await svc.client.query({ query, format: 'JSONEachRow' })).json<T>();
  const pendingMutations = async () => Number((await rowsOf<{ n: string | number }>("SELECT count() AS n FROM system.mutations WHERE database = currentDatabase() AND table = 'events' AND NOT is_done"))[0]?.n ?? 0);
  if ((await pendingMutations()) > 0) {
    const t0 = performance.now();
    const cpu0 = cpuSeconds(svc.enginePid()) ?? NaN;
    log('waiting for the migrations\' mutations of events (MATERIALIZE) to finish');
    while ((await pendingMutations()) > 0) await new Promise((r) => setTimeout(r, 1000));
    await waitForMerges(svc.client, { timeoutMs: 600_000, pollMs: 1000, table: 'events', log });
    log(`mutations done after ${((performance.now() - t0) / 1000).toFixed(0)} s (engine CPU ${((cpuSeconds(svc.enginePid()) ?? NaN) - cpu0).toFixed(0)} s) | load ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  }
  // The merges schema/240's policy (a partition quiet for min_age_to_force_merge_seconds becomes one
  // part) would have done by `now` had the events arrived in real time: a month's last INSERT comes
  // at most 7 days after the month ends (schema/002), so a month that ended more than 7 days plus
  // that age before `now` is one part by then. The seed wrote every month at once, so the bench
  // applies the policy itself, and prints its cost like a migration's. The current month keeps
  // the parts the background merges left.
  const create = (await rowsOf<{ statement: string }>('SHOW CREATE TABLE events'))[0].statement;
  const forceAgeMs = Number(/min_age_to_force_merge_seconds = (\d+)/.exec(create)?.[1] ?? 0) * 1000;
  if (forceAgeMs > 0) {
    const partitions = await rowsOf<{ id: string }>("SELECT partition_id AS id FROM system.parts WHERE database = currentDatabase() AND table = 'events' AND active GROUP BY id HAVING count() > 1 ORDER BY id");
    const monthEnd = (id: string) => Date.UTC(Number(id.slice(0, 4)), Number(id.slice(4, 6)), 1);
    for (const { id } of partitions.filter((p) => /^\d{6}$/.test(p.id) && monthEnd(p.id) + 7 * DAY + forceAgeMs <= state!.now)) {
      const t0 = performance.now();
      const cpu0 = cpuSeconds(svc.enginePid()) ?? NaN;
      await svc.client.command({ query: 'OPTIMIZE TABLE events PARTITION ID {id:String} FINAL', query_params: { id }, clickhouse_settings: { optimize_throw_if_noop: 0 } });
      log(`closed month ${id} merged into one part (schema/240's policy) in ${((performance.now() - t0) / 1000).toFixed(1)} s (engine CPU ${((cpuSeconds(svc.enginePid()) ?? NaN) - cpu0).toFixed(1)} s)`);
    }
  }
  const sizes = await rowsOf<{ name: string; rows: string; bytes: string }>(
    "SELECT name, sum(rows) AS rows, formatReadableSize(sum(data_compressed_bytes)) AS bytes FROM system.projection_parts WHERE database = currentDatabase() AND table = 'events' AND active GROUP BY name ORDER BY name " +
    "UNION ALL SELECT '(rows)' AS name, sum(rows) AS rows, formatReadableSize(sum(data_compressed_bytes)) AS bytes FROM system.parts WHERE database = currentDatabase() AND table = 'events' AND active",
  );
  log(`on disk: ${sizes.map((r) => `${r.name} ${r.rows} rows ${r.bytes}`).join(', ')}`);
  const token = (await mintToken(svc.client, state.orgId, ['events:read'], 'bench')).token;
  const end = (i: number) => new Date(state!.now - i).toISOString();
  const start = new Date(state.now - 100 * DAY + 1).toISOString();
  const daily = { field: 'timestamp', date_histogram_min_interval: 'day', date_histogram_buckets: 100 };
  // The same questions asked directly of the engine, as a ClickHouse user would on this table: one
  // GROUP BY over the rows (JSONExtract for the property), the count then the newest page.
  const bucket = `intDiv(toUnixTimestamp64Milli(timestamp) - toUnixTimestamp64Milli({start:DateTime64(3, 'UTC')}), 86400000)`;
  const scopeSql = `FROM events WHERE org_id = {org:UUID} AND timestamp >= {start:DateTime64(3, 'UTC')} AND timestamp <= {end:DateTime64(3, 'UTC')}`;
  const direct: Record<string, string[]> = {
    'count by event_name x 100 daily buckets': [`SELECT event_name, ${bucket} AS b, count() AS n ${scopeSql} GROUP BY event_name, b`],
    'unique users per day': [`SELECT ${bucket} AS b, uniqExact(user_id) AS u ${scopeSql} GROUP BY b`],
    'property filter + daily histogram': [`SELECT ${bucket} AS b, count() AS n ${scopeSql} AND JSONExtractString(properties, 'plan') = 'pro' GROUP BY b`],
    'search newest page + exact count': [`SELECT count() AS n ${scopeSql}`, `SELECT * ${scopeSql} ORDER BY timestamp DESC LIMIT 10`],
  };
  // The direct questions are tagged in the query log, so that the projections the service's
  // queries were answered from can be told apart (system.query_log.projections).
  const DIRECT = 'bench-events-direct';
  const projectionsUsed = async (fromMs: number): Promise<string> => {
    const read = async () => {
      await svc.client.command({ query: 'SYSTEM FLUSH LOGS' });
      return (await svc.client.query({
        query: "SELECT arrayJoin(if(empty(projections), ['(rows)'], projections)) AS p, count() AS n FROM system.query_log " +
          "WHERE type = 'QueryFinish' AND query_kind = 'Select' AND log_comment != {direct:String} AND has(tables, currentDatabase() || '.events') " +
          'AND event_time_microseconds >= fromUnixTimestamp64Milli({from:Int64}) GROUP BY p ORDER BY p',
        query_params: { direct: DIRECT, from: Math.floor(fromMs) },
        format: 'JSONEachRow',
      })).json<{ p: string; n: string }>();
    };
    // The engine creates system.query_log at a flush after its first query: one retry.
    const used = await read().catch(() => new Promise((r) => setTimeout(r, 3000)).then(read)).catch(() => undefined);
    return used ? used.map((r) => `${r.p.replace(/^.*\./, '')} x${r.n}`).join(', ') : 'unknown (no query_log)';
  };
  const engineCpuMs = () => (cpuSeconds(svc.enginePid()) ?? NaN) * 1000;
  const serviceCpuMs = () => (cpuSeconds(svc.servicePid) ?? NaN) * 1000;
  const askEngine = async (sqls: string[], i: number): Promise<{ ms: number; cpu: number }> => {
    const params = { org: state!.orgId, start: start.replace('T', ' ').replace('Z', ''), end: end(i).replace('T', ' ').replace('Z', '') };
    const c0 = engineCpuMs();
    const t0 = performance.now();
    for (const query of sqls) await (await svc.client.query({ query, query_params: params, format: 'JSONEachRow', clickhouse_settings: { log_comment: DIRECT } })).json();
    return { ms: performance.now() - t0, cpu: engineCpuMs() - c0 };
  };
  const cases: [string, string, (i: number) => unknown][] = [
    ['count by event_name x 100 daily buckets', '/1.0/event/aggregation', (i) => ({ range: { start, end: end(i) }, group_by: [{ field: 'event_name' }, daily] })],
    ['unique users per day', '/1.0/event/aggregation', (i) => ({ range: { start, end: end(i) }, group_by: [daily], metrics: ['unique_users'] })],
    ['property filter + daily histogram', '/1.0/event/aggregation', (i) => ({ range: { start, end: end(i) }, filters: [{ key: 'property', property_key: 'plan', operator: 'eq', value: 'pro' }], group_by: [daily] })],
    ['search newest page + exact count', '/1.0/event', (i) => ({ size: 10, range: { start, end: end(i) } })],
  ];
  const rows: string[] = [];
  const loadavg = () => os.loadavg().map((x) => x.toFixed(1)).join(' ');
  for (const [name, path, body] of cases.filter(([n]) => only.test(n))) {
    const ms: number[] = [];
    const engineMs: number[] = [];
    const cpu: number[] = [];
    const engineCpu: number[] = [];
    const serviceCpu: number[] = [];
    let failed = 0;
    const loadBefore = loadavg();
    const caseStart = Date.now();
    // The warm-up runs take the ranges after the timed ones (ends further back): none repeats.
    for (let w = 0; w < warmup; w++) {
      await askEngine(direct[name], iterations + w);
      const res = await timedRequest(svc.url, 'SEARCH', path, token, body(iterations + w));
      log(`${name}: warm-up run ${w + 1}, ${res.status} in ${res.ms.toFixed(0)} ms (not timed)`);
    }
    for (let i = 0; i < iterations; i++) {
      // Side by side, alternating: the engine alone, then the service, on the same range.
      const e = await askEngine(direct[name], i);
      engineMs.push(e.ms);
      engineCpu.push(e.cpu);
      const c0 = engineCpuMs();
      const s0 = serviceCpuMs();
      const res = await timedRequest(svc.url, 'SEARCH', path, token, body(i));
      cpu.push(engineCpuMs() - c0);
      serviceCpu.push(serviceCpuMs() - s0);
      // A 503 is the 15 s query limit: counted and reported, the run goes on.
      if (res.status !== 200) {
        failed++;
        log(`${name}: ${res.status} after ${res.ms.toFixed(0)} ms ${res.text.slice(0, 200)}`);
        continue;
      }
      ms.push(res.ms);
    }
    const s = ms.length ? summarize(ms) : { p50: NaN, p95: NaN };
    const e = summarize(engineMs);
    const line =
      `${name.padEnd(42)} p50 ${s.p50.toFixed(0).padStart(6)} ms  p95 ${s.p95.toFixed(0).padStart(6)} ms  ${failed ? `${failed} of ${iterations} over 15 s (503)  ` : ''}` +
      `target ${TARGETS_MS[name]} ms  | engine direct p50 ${e.p50.toFixed(0).padStart(6)} ms  p95 ${e.p95.toFixed(0).padStart(6)} ms  ` +
      `service/engine p95 ${(s.p95 / e.p95).toFixed(2)}  | engine CPU per question p50: service ${summarize(cpu).p50.toFixed(0)} ms, direct ${summarize(engineCpu).p50.toFixed(0)} ms  ` +
      `| load ${loadBefore} -> ${loadavg()} | service queries of events answered from: ${await projectionsUsed(caseStart)}`;
    log(line);
    // Each run in order: what varies between runs (with 10 runs the p95 is the slowest), and
    // whether the first run of a case pays for a cold start, in the engine or in the service.
    const inOrder = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(' ');
    log(`  runs in order: ms ${inOrder(ms)} | engine CPU ms ${inOrder(cpu)} | service CPU ms ${inOrder(serviceCpu)}`);
    rows.push(line);
  }
  process.stdout.write(`${events.toLocaleString('en-US')} events, ${iterations} first runs per case${warmup ? ` after ${warmup} untimed` : ''}, ${os.cpus().length} CPUs\n${rows.join('\n')}\n`);
} finally {
  closeAgent();
  await svc.stop();
}
