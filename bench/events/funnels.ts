/**
 * Funnels and retention bench (issue 24): first-run latency over HTTP of a 4-step funnel over 30
 * days, a 12-week retention table and a promoters-vs-detractors funnel, on N events of one
 * organization over 90 days (10M by default) whose users (200k by default) also answered its
 * surveys, embedded engine. Each case is also run directly on the engine in the same run: the very
 * query the service compiles for the request (the same {sql, params}, through the same client),
 * alternating with the HTTP request on the same range, so service/engine is what the service adds.
 *
 *   node --import tsx bench/events/funnels.ts [--events 10M] [--users 200k] [--responses 200k] [--iterations 20] [--data-dir DIR]
 *
 * The data set is seeded once into a persistent DATA_DIR (bench/.data/funnels-<N>) with the
 * generators of `tallyhouse seed` (events: the ingest bench's mix; responses: respondents
 * `user-<n>`, the event users), then reused. "First run": every iteration moves the range end by
 * one millisecond, so no cache answers. The load average is printed with the figures.
 */
import os from 'node:os';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as v from 'valibot';
import type { CompiledQuery } from '../../src/clickhouse/sql.ts';
import { compileFunnel } from '../../src/events/analysis/funnel-sql.ts';
import { funnelBodySchema, funnelQueryOf } from '../../src/events/analysis/funnel.ts';
import { compileRetention, retentionBodySchema, retentionQueryOf } from '../../src/events/analysis/retention.ts';
import { READ_SETTINGS } from '../../src/query/settings.ts';
import { parseCount } from '../../src/seed/args.ts';
import { seedEvents } from '../../src/seed/events.ts';
import { seedResponses } from '../../src/seed/responses.ts';
import { mintToken } from '../../src/tokens/tokens.ts';
import { parseFlags, positiveInt } from '../lib/args.ts';
import { REPO_ROOT } from '../lib/machine.ts';
import { cpuSeconds } from '../lib/proc.ts';
import { startService } from '../lib/service.ts';
import { summarize } from '../lib/stats.ts';
import { closeAgent, timedRequest } from '../query/http.ts';

const DAY = 86_400_000;
const TARGET_P95_MS = 500;

const USAGE = 'usage: node --import tsx bench/events/funnels.ts [--events 10M] [--users 200k] [--responses 200k] [--iterations 20] [--data-dir DIR]';
const flags = parseFlags(process.argv.slice(2), {
  events: { type: 'string' }, users: { type: 'string' }, responses: { type: 'string' }, iterations: { type: 'string' }, 'data-dir': { type: 'string' },
}, USAGE);
const count = (raw: string | undefined, fallback: number) => (raw ? parseCount(raw) ?? fallback : fallback);
const events = count(flags.events, 10_000_000);
const users = count(flags.users, 200_000);
const responses = count(flags.responses, 200_000);
const iterations = positiveInt('iterations', flags.iterations, 20);
const dataDir = resolve(flags['data-dir'] ?? join(REPO_ROOT, 'bench/.data', `funnels-${events}`));
const log = (line: string) => process.stderr.write(`[funnels] ${line}\n`);

const svc = await startService({ dataDir, embeddedOnly: true, log });
try {
  const stateFile = join(dataDir, 'bench-funnels.json');
  let state: { orgId: string; now: number } | undefined = existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, 'utf8')) : undefined;
  if (!state) {
    const orgId = crypto.randomUUID();
    const now = Date.now();
    const t0 = performance.now();
    log(`seeding ${events.toLocaleString('en-US')} events of ${users.toLocaleString('en-US')} users over 90 days into org ${orgId}`);
    await seedEvents(svc.client, { orgId, events, users, days: 90, now: new Date(now), onProgress: (d, t) => log(`events ${d.toLocaleString('en-US')} / ${t.toLocaleString('en-US')}, ${((performance.now() - t0) / 1000).toFixed(0)} s`) });
    log(`seeding ${responses.toLocaleString('en-US')} responses of the same users`);
    await seedResponses(svc.client, { orgId, responses, respondents: users, eventUsers: true, surveys: 5, days: 90, now: new Date(now) });
    state = { orgId, now };
    writeFileSync(stateFile, JSON.stringify(state));
  }
  const { orgId } = state;
  const token = (await mintToken(svc.client, orgId, ['events:read'], 'bench')).token;
  const end = (i: number) => new Date(state!.now - i).toISOString();
  const since = (days: number) => new Date(state!.now - days * DAY).toISOString();
  const named = (...names: string[]) => names.map((n) => ({ filters: [{ key: 'event_name', operator: 'eq', value: n }] }));
  const checkout = named('item_viewed', 'item_added_to_cart', 'checkout_started', 'checkout_completed');
  const cases: { name: string; path: string; target?: number; body: (i: number) => Record<string, unknown>; compile: (body: unknown) => CompiledQuery }[] = [
    {
      name: '4-step funnel, 30 days, 7-day window',
      path: '/1.0/event/funnel',
      target: TARGET_P95_MS,
      body: (i) => ({ range: { start: since(30), end: end(i) }, steps: checkout, window_seconds: 7 * 86_400 }),
      compile: (body) => compileFunnel(funnelQueryOf(orgId, v.parse(funnelBodySchema, body))),
    },
    {
      name: '12-week retention, signup -> any event',
      path: '/1.0/event/retention',
      target: TARGET_P95_MS,
      body: (i) => ({ range: { start: since(84), end: end(i) }, start: named('signup')[0], return: 'any', period: 'week', periods: 12 }),
      compile: (body) => compileRetention(retentionQueryOf(orgId, v.parse(retentionBodySchema, body))),
    },
    {
      name: '12-week retention, signup -> login',
      path: '/1.0/event/retention',
      target: TARGET_P95_MS,
      body: (i) => ({ range: { start: since(84), end: end(i) }, start: named('signup')[0], return: named('login')[0], period: 'week', periods: 12 }),
      compile: (body) => compileRetention(retentionQueryOf(orgId, v.parse(retentionBodySchema, body))),
    },
    {
      name: 'promoters vs detractors, same funnel',
      path: '/1.0/event/funnel',
      body: (i) => ({
        range: { start: since(30), end: end(i) }, steps: checkout, window_seconds: 7 * 86_400,
        split_by_cohorts: [{ name: 'promoters', cohort: { nps: 'promotor' } }, { name: 'detractors', cohort: { nps: 'detractor' } }],
      }),
      compile: (body) => compileFunnel(funnelQueryOf(orgId, v.parse(funnelBodySchema, body))),
    },
  ];
  // The engine's CPU during a direct run (its process: background merges, at nice 10, included),
  // what the query costs whatever else runs: on 2 cores its wall time is at least half of it.
  const askEngine = async (q: CompiledQuery): Promise<{ ms: number; cpuMs: number }> => {
    const c0 = cpuSeconds(svc.enginePid()) ?? NaN;
    const t0 = performance.now();
    await (await svc.client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow', clickhouse_settings: READ_SETTINGS })).json();
    return { ms: performance.now() - t0, cpuMs: ((cpuSeconds(svc.enginePid()) ?? NaN) - c0) * 1000 };
  };
  // What the engine read for a case: one extra, untimed run with wait_end_of_query (so the
  // X-ClickHouse-Summary header holds the final counts; the embedded engine keeps no query_log on
  // a reused directory, see src/clickhouse/engine.ts).
  const readFigures = async (q: CompiledQuery): Promise<string> => {
    const rs = await svc.client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow', clickhouse_settings: { ...READ_SETTINGS, wait_end_of_query: 1 } });
    await rs.json();
    const raw = rs.response_headers['x-clickhouse-summary'];
    const s = JSON.parse(Array.isArray(raw) ? raw[0] : (raw ?? '{}')) as Record<string, string>;
    return `read ${(Number(s.read_rows) / 1e6).toFixed(2)}M rows, ${(Number(s.read_bytes) / 2 ** 20).toFixed(0)} MiB, peak memory ${(Number(s.memory_usage) / 2 ** 20).toFixed(0)} MiB`;
  };
  const rows: string[] = [];
  for (const c of cases) {
    const ms: number[] = [];
    const engineMs: number[] = [];
    const engineCpuMs: number[] = [];
    let failed = 0;
    let answer = '';
    for (let i = 0; i < iterations; i++) {
      // Side by side, alternating: the service's query on the engine alone, then the request.
      const direct = await askEngine(c.compile(c.body(2 * i)));
      engineMs.push(direct.ms);
      engineCpuMs.push(direct.cpuMs);
      const res = await timedRequest(svc.url, 'SEARCH', c.path, token, c.body(2 * i + 1));
      if (res.status !== 200) {
        failed++;
        log(`${c.name}: ${res.status} after ${res.ms.toFixed(0)} ms ${res.text.slice(0, 200)}`);
        continue;
      }
      ms.push(res.ms);
      answer = res.text;
    }
    const s = ms.length ? summarize(ms) : { p50: NaN, p95: NaN };
    const e = summarize(engineMs);
    const cpu = summarize(engineCpuMs);
    const line =
      `${c.name.padEnd(40)} p50 ${s.p50.toFixed(0).padStart(5)} ms  p95 ${s.p95.toFixed(0).padStart(5)} ms  ${failed ? `${failed} of ${iterations} failed  ` : ''}` +
      `${c.target ? `target p95 ${c.target} ms  ` : ''}| engine p50 ${e.p50.toFixed(0).padStart(5)} ms  p95 ${e.p95.toFixed(0).padStart(5)} ms  ` +
      `service/engine p95 ${(s.p95 / e.p95).toFixed(2)}  engine CPU p50 ${cpu.p50.toFixed(0)} ms  load ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`;
    const read = await readFigures(c.compile(c.body(2 * iterations)));
    log(line);
    log(`  engine ${read}`);
    log(`  answer: ${answer.slice(0, 400)}`);
    rows.push(`${line}\n  engine ${read}`);
  }
  process.stdout.write(
    `${events.toLocaleString('en-US')} events, ${users.toLocaleString('en-US')} users, ${responses.toLocaleString('en-US')} responses, ` +
    `${iterations} first runs per case, ${os.cpus().length} CPUs\n${rows.join('\n')}\n`,
  );
} finally {
  closeAgent();
  await svc.stop();
}
