/**
 * Unique users per day with dense per-organization user numbers: what the read would cost if the
 * write path gave every known user a 32-bit number (one per organization and user, never reused),
 * measured on scratch tables built from the event reads bench's data set (bench/events/run.ts),
 * beside the service's own query over the rows, alternating, in the same run.
 *
 *   node --import tsx bench/events/user-numbers.ts [--data-dir DIR] [--iterations 10]
 *
 * The scratch tables (dropped at the end) hold what the write path would store:
 * - `bench_user_nums`: the numbers, 1..n in the order of the ids (a stand-in for the order of
 *   first appearance);
 * - `bench_user_times`: event_times with the number (org_id, timestamp, num, anonymous), ordered by
 *   (org_id, timestamp), granules of 1024 rows, one part per part of `events` (merges stopped), as
 *   the projection would be;
 * - `bench_user_hours`: per part of `events` and hour, a roaring bitmap of the known users' numbers
 *   (groupBitmap) and the count of anonymous events (each is a user of its own), as an aggregate
 *   projection of `events` would hold them.
 * The questions (the range and buckets of bench/events/run.ts's "unique users per day"):
 * - service: the service's compiled query (uniqExactIf of the 16-byte ids over the rows, WITH ROLLUP);
 * - numbers, rows: the same over the rows with uniqExactIf(num), then with groupBitmapIf(num);
 * - numbers, hours: the whole hours' bitmaps OR-ed per bucket, the partial hours (the range's
 *   edges and every bucket start inside an hour, src/events/read/hours.ts) from the rows, WITH
 *   ROLLUP. Every answer is checked against the service's: the totals and every bucket.
 */
import type { ClickHouseSettings } from '@clickhouse/client';
import os from 'node:os';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as v from 'valibot';
import { compileEventAggregation, eventAggregationBodySchema, planEventLevels } from '../../src/events/read/aggregation.ts';
import { eventSelectionOf } from '../../src/events/read/search.ts';
import { RANKED_BUCKETS_SETTINGS } from '../../src/query/ranked-buckets.ts';
import { parseFlags, positiveInt } from '../lib/args.ts';
import { REPO_ROOT } from '../lib/machine.ts';
import { cpuSeconds } from '../lib/proc.ts';
import { startService } from '../lib/service.ts';
import { summarize } from '../lib/stats.ts';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const USAGE = 'usage: node --import tsx bench/events/user-numbers.ts [--data-dir DIR] [--iterations 10]';
const flags = parseFlags(process.argv.slice(2), { 'data-dir': { type: 'string' }, iterations: { type: 'string' } }, USAGE);
const iterations = positiveInt('iterations', flags.iterations, 10);
const dataDir = resolve(flags['data-dir'] ?? join(REPO_ROOT, 'bench/.data', 'events-10000000'));
const log = (line: string) => process.stderr.write(`[user-numbers] ${line}\n`);
const loadavg = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');

const svc = await startService({ dataDir, embeddedOnly: true, log });
const client = svc.client;
const rowsOf = async <T>(query: string, params: Record<string, unknown> = {}, settings: ClickHouseSettings = {}) =>
  (await client.query({ query, query_params: params, format: 'JSONEachRow', clickhouse_settings: settings })).json<T>();
const SCRATCH = ['bench_user_nums', 'bench_user_times', 'bench_user_hours'];
try {
  const state: { orgId: string; now: number } = JSON.parse(readFileSync(join(dataDir, 'bench-events.json'), 'utf8'));
  for (const t of SCRATCH) await client.command({ query: `DROP TABLE IF EXISTS ${t} SYNC` });
  const t0 = performance.now();
  await client.command({ query: 'CREATE TABLE bench_user_nums ENGINE = MergeTree ORDER BY user_id AS SELECT user_id, toUInt32(rowNumberInAllBlocks() + 1) AS num FROM (SELECT DISTINCT user_id FROM events WHERE anonymous = 0 ORDER BY user_id)' });
  await client.command({ query: "CREATE TABLE bench_user_times (org_id UUID, timestamp DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)), num UInt32, anonymous UInt8, source_part LowCardinality(String)) ENGINE = MergeTree ORDER BY (org_id, timestamp) SETTINGS index_granularity = 1024, min_compress_block_size = 4096" });
  await client.command({ query: "CREATE TABLE bench_user_hours (org_id UUID, hour DateTime('UTC'), users AggregateFunction(groupBitmap, UInt32), anonymous_events UInt64) ENGINE = MergeTree ORDER BY (org_id, hour)" });
  for (const t of ['bench_user_times', 'bench_user_hours']) await client.command({ query: `SYSTEM STOP MERGES ${t}` });
  const parts = await rowsOf<{ name: string }>("SELECT name FROM system.parts WHERE database = currentDatabase() AND table = 'events' AND active ORDER BY name");
  for (const { name } of parts) {
    await client.command({ query: 'INSERT INTO bench_user_times SELECT org_id, timestamp, if(anonymous = 1, 0, n.num), anonymous, _part FROM events LEFT JOIN bench_user_nums AS n USING (user_id) WHERE _part = {p:String}', query_params: { p: name } });
    await client.command({ query: 'INSERT INTO bench_user_hours SELECT org_id, toStartOfHour(timestamp), groupBitmapStateIf(num, anonymous = 0), countIf(anonymous = 1) FROM bench_user_times WHERE source_part = {p:String} GROUP BY org_id, toStartOfHour(timestamp)', query_params: { p: name } });
  }
  log(`scratch tables built from ${parts.length} parts in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  const sizes = await rowsOf<{ t: string; parts: string; rows: string; size: string }>("SELECT table AS t, count() AS parts, sum(rows) AS rows, formatReadableSize(sum(data_compressed_bytes)) AS size FROM system.parts WHERE database = currentDatabase() AND active AND table IN {ts:Array(String)} GROUP BY t ORDER BY t", { ts: SCRATCH });
  log(`on disk: ${sizes.map((r) => `${r.t} ${r.parts} parts ${r.rows} rows ${r.size}`).join(', ')}`);

  const startMs = state.now - 100 * DAY + 1;
  const endMs = (i: number) => state.now - i;
  const floorHour = (t: number) => t - (t % HOUR);
  // The partial hours of the service's split (hours.ts): the hours of the range start, of every
  // daily bucket start and of the range end; the whole hours lie strictly between.
  const partial = (i: number) => [...new Set([...Array.from({ length: 100 }, (_, k) => floorHour(startMs + k * DAY)), floorHour(endMs(i))].map((t) => t / 1000))];
  const dt = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
  const params = (i: number) => ({ org: state.orgId, start: dt(startMs), end: dt(endMs(i)), s0: startMs, partial: partial(i), h0: (floorHour(startMs) + HOUR) / 1000, h1: floorHour(endMs(i)) / 1000 });
  const inRange = (t: string) => `FROM ${t} WHERE org_id = {org:UUID} AND timestamp >= {start:DateTime64(3, 'UTC')} AND timestamp <= {end:DateTime64(3, 'UTC')}`;
  const bucket = 'intDiv(toUnixTimestamp64Milli(timestamp) - {s0:Int64}, 86400000)';
  // The ROLLUP's total row: bucket NULL, as in the service's answer (depth 0).
  const rolledUp = 'if(grouping(k) = 1, NULL, k) AS b';
  const wholeHours = "org_id = {org:UUID} AND hour >= toDateTime({h0:Int64}, 'UTC') AND hour < toDateTime({h1:Int64}, 'UTC') AND toUnixTimestamp(hour) NOT IN {partial:Array(Int64)}";
  type Question = (i: number) => { query: string; query_params: Record<string, unknown>; settings?: ClickHouseSettings };
  const questions: Record<string, Question> = {
    'service (uniqExact of the ids, rows)': (i) => {
      const body = v.parse(eventAggregationBodySchema, { range: { start: new Date(startMs).toISOString(), end: new Date(endMs(i)).toISOString() }, group_by: [{ field: 'timestamp', date_histogram_min_interval: 'day', date_histogram_buckets: 100 }], metrics: ['unique_users'] });
      const selection = eventSelectionOf(state.orgId, body);
      const c = compileEventAggregation(selection, body.group_by, planEventLevels(body.group_by, selection.range, undefined), body.metrics);
      return { query: `SELECT if(depth = 0, NULL, k1) AS b, unique_users AS u FROM (${c.sql})`, query_params: c.params, settings: RANKED_BUCKETS_SETTINGS };
    },
    'numbers, rows, uniqExact': (i) => ({ query: `SELECT ${bucket} AS k, ${rolledUp}, uniqExactIf(num, anonymous = 0) + countIf(anonymous = 1) AS u ${inRange('bench_user_times')} GROUP BY ROLLUP(k)`, query_params: params(i) }),
    'numbers, rows, groupBitmap': (i) => ({ query: `SELECT ${bucket} AS k, ${rolledUp}, groupBitmapIf(num, anonymous = 0) + countIf(anonymous = 1) AS u ${inRange('bench_user_times')} GROUP BY ROLLUP(k)`, query_params: params(i) }),
    'numbers, hour bitmaps + partial hours': (i) => ({
      query:
        `SELECT k, ${rolledUp}, groupBitmapMerge(users) + sum(anonymous_events) AS u FROM (` +
        `SELECT intDiv(toUnixTimestamp(hour) * 1000 - {s0:Int64}, 86400000) AS k, groupBitmapMergeState(users) AS users, sum(anonymous_events) AS anonymous_events FROM bench_user_hours WHERE ${wholeHours} GROUP BY k ` +
        `UNION ALL SELECT ${bucket} AS k, groupBitmapStateIf(num, anonymous = 0) AS users, countIf(anonymous = 1) AS anonymous_events ${inRange('bench_user_times')} AND toUnixTimestamp(toStartOfHour(timestamp)) IN {partial:Array(Int64)} GROUP BY k` +
        ') GROUP BY ROLLUP(k)',
      query_params: params(i),
    }),
  };
  // Every answer is compared with the service's, bucket by bucket and the total.
  const answer = (rows: { b: number | string | null; u: number | string }[]) =>
    rows.map((r) => `${r.b ?? 'total'}:${r.u}`).sort().join(',');
  const names = Object.keys(questions);
  const ms: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const cpu: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const engineCpuMs = () => (cpuSeconds(svc.enginePid()) ?? NaN) * 1000;
  const loadBefore = loadavg();
  for (let i = 0; i < iterations; i++) {
    const answers: string[] = [];
    for (const name of names) {
      const q = questions[name](i);
      const c0 = engineCpuMs();
      const t = performance.now();
      const rows = await rowsOf<{ b: number | string | null; u: number | string }>(q.query, q.query_params, q.settings);
      ms[name].push(performance.now() - t);
      cpu[name].push(engineCpuMs() - c0);
      answers.push(answer(rows));
    }
    const differ = answers.findIndex((a) => a !== answers[0]);
    if (differ > 0) throw new Error(`"${names[differ]}" answers differently from the service (iteration ${i})`);
  }
  const lines = names.map((n) => {
    const s = summarize(ms[n]);
    return `${n.padEnd(40)} p50 ${s.p50.toFixed(0).padStart(5)} ms  p95 ${s.p95.toFixed(0).padStart(5)} ms  engine CPU p50 ${summarize(cpu[n]).p50.toFixed(0).padStart(5)} ms`;
  });
  process.stdout.write(`${iterations} runs per question, answers identical to the service's | load ${loadBefore} -> ${loadavg()}\n${lines.join('\n')}\n`);
} finally {
  for (const t of SCRATCH) await client.command({ query: `DROP TABLE IF EXISTS ${t} SYNC` }).catch(() => undefined);
  await svc.stop();
}
