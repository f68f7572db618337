/**
 * Survey metrics bench (issue 23): on the query bench's large organization, how much survey
 * metrics and answer filters cost against the plain read of the same rules, measured in the same
 * run, the cases interleaved request by request (so that load on the machine hits all alike):
 *
 *   aggregation, plain        group_by a 90-bucket daily histogram over the last 90 days
 *   aggregation, NPS          the same + metrics ["nps"] + compare "previous_period"
 *   summary, plain            the summary of the same range
 *   summary, answer filter    the same + the answer filter NPS question = "10"
 *
 * Targets: p95 of each metrics case at most 1.5x the p95 of its plain case (first runs: every body
 * new to the polling cache, as in cases.ts). See bench/query/README.md, "Survey metrics".
 *
 *   node --import tsx bench/query/metrics.ts [--responses 10M] [--iterations 30]
 */
import { pathToFileURL } from 'node:url';
import { parseCount } from '../../src/seed/args.ts';
import { MICROS_PER_DAY, formatMicros, parseInstantMicros } from '../../src/query/histogram.ts';
import { parseFlags, positiveInt } from '../lib/args.ts';
import { machineInfo } from '../lib/machine.ts';
import { writeResult } from '../lib/results.ts';
import { startService } from '../lib/service.ts';
import { round, summarize, type LatencySummary } from '../lib/stats.ts';
import { printTable } from '../lib/table.ts';
import { ensureDataset, optimizeFinal, storageState, type Dataset } from './dataset.ts';
import { closeAgent, timedRequest } from './http.ts';
import { dataDirFor } from './service.ts';
import { waitForMerges } from '../lib/merges.ts';
import { rebuildOrg } from '../../src/responses/rollups/maintain.ts';
import type { ClickHouseClient } from '@clickhouse/client';

export const RATIO_TARGET = 1.5;

interface MetricsCase {
  name: string;
  path: string;
  /** The plain case this one is compared with (undefined for a plain case). */
  plain?: string;
  body(variant: number): Record<string, unknown>;
}

/** 90 whole days ending an hour after the newest response; variant i moves the end back i µs (same answer, new body). */
export function ninetyDays(data: Dataset, variant: number): { field: 'created_at'; start: string; end: string } {
  let end0 = parseInstantMicros(data.maxCreatedAt)! + 3_600_000_000n;
  if (end0 % MICROS_PER_DAY < 1_000_000n) end0 += 1_000_000n;
  const start = (end0 / MICROS_PER_DAY) * MICROS_PER_DAY - 89n * MICROS_PER_DAY;
  return { field: 'created_at', start: formatMicros(start), end: formatMicros(end0 - BigInt(variant % 1_000_000)) };
}

export function metricsCases(data: Dataset): MetricsCase[] {
  const daily = [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 90 }];
  const aggregation = '/1.0/survey/*/response/aggregation';
  const summary = '/1.0/survey/*/response/summary';
  const answer = { type: 'response.answer', key: data.npsQuestionId, operator: 'eq', value: '10' };
  return [
    { name: 'aggregation: daily x90 (plain)', path: aggregation, body: (i) => ({ range: ninetyDays(data, i), group_by: daily }) },
    {
      name: 'aggregation: NPS per day x90 + previous_period', path: aggregation, plain: 'aggregation: daily x90 (plain)',
      body: (i) => ({ range: ninetyDays(data, i), group_by: daily, metrics: ['nps'], compare: 'previous_period' }),
    },
    { name: 'summary (plain)', path: summary, body: (i) => ({ range: ninetyDays(data, i) }) },
    { name: 'summary: answer filter (NPS = 10)', path: summary, plain: 'summary (plain)', body: (i) => ({ range: ninetyDays(data, i), filters: [answer] }) },
  ];
}

/**
 * Slices of the org whose answer totals (schema/111) are missing or incomplete at their current
 * version: a data set seeded before that migration, which the answer-filtered reads would answer
 * from the raw table until a rebuild.
 */
async function slicesWithoutAnswerTotals(client: ClickHouseClient, orgId: string): Promise<number> {
  const rs = await client.query({
    query:
      'SELECT count() AS n FROM (SELECT span, survey_id, start, version FROM survey_rollup FINAL WHERE org_id = {org:UUID}) AS s ' +
      "LEFT ANTI JOIN (SELECT span, survey_id, start, version FROM survey_rollup_answers FINAL WHERE org_id = {org:UUID} AND question_id = '' AND value = '' AND complete = 1) AS m " +
      'USING (span, survey_id, start, version)',
    query_params: { org: orgId },
    format: 'JSONEachRow',
  });
  return Number((await rs.json<{ n: string | number }>())[0]?.n ?? 0);
}

export interface MetricsCaseResult {
  name: string;
  path: string;
  body: Record<string, unknown>;
  first: LatencySummary;
  /** p95 / the plain case's p95 (metrics cases). */
  p95_ratio?: number;
  meets_target?: boolean;
}

async function main(): Promise<void> {
  const usage = 'node --import tsx bench/query/metrics.ts [--responses 10M] [--iterations 30]';
  const flags = parseFlags(process.argv.slice(2), { responses: { type: 'string' }, iterations: { type: 'string' }, help: { type: 'boolean' } }, usage);
  if (flags.help) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  const responses = flags.responses ? parseCount(flags.responses) : 10_000_000;
  if (responses === undefined) {
    process.stderr.write(`--responses must be a count such as 10M or 500k\n\n${usage}\n`);
    process.exit(2);
  }
  const iterations = positiveInt('iterations', flags.iterations, 30);
  const log = (line: string) => process.stderr.write(`[metrics] ${line}\n`);
  const label = responses % 1_000_000 === 0 ? `${responses / 1_000_000}M` : String(responses);
  const service = await startService({ dataDir: dataDirFor(label), embeddedOnly: true, log });
  try {
    const client = service.client;
    const data = await ensureDataset(client, { endpoint: service.endpoint, database: service.config.clickhouse.database }, { responses, surveys: 5, days: 90 }, log);
    await waitForMerges(client, { table: 'survey_responses', timeoutMs: 300_000, pollMs: 1000, log });
    let storage = await storageState(client, data.responses);
    for (let attempt = 0; Object.values(storage.parts_per_partition).some((n) => n > 1) && attempt < 3; attempt++) {
      log('OPTIMIZE TABLE survey_responses FINAL');
      await optimizeFinal(service.endpoint, service.config.clickhouse.database);
      await waitForMerges(client, { table: 'survey_responses', timeoutMs: 300_000, pollMs: 1000, log });
      storage = await storageState(client, data.responses);
    }
    const missing = await slicesWithoutAnswerTotals(client, data.orgId);
    if (missing > 0) {
      // The state a live org reaches once `tallyhouse rollups rebuild` ran after the upgrade.
      log(`${missing} slices have no answer totals (written before schema/111): rollups rebuild of the org`);
      const t0 = performance.now();
      await rebuildOrg(client, data.orgId);
      log(`rebuilt in ${((performance.now() - t0) / 1000).toFixed(0)} s; OPTIMIZE TABLE survey_rollup, survey_rollup_answers FINAL`);
      // The rebuilt slices replace the old ones once merged, as they are a while after a rebuild.
      for (const table of ['survey_rollup', 'survey_rollup_answers'] as const) await optimizeFinal(service.endpoint, service.config.clickhouse.database, table);
    }
    const token = await service.mintToken(data.orgId, ['responses:read']);
    const cases = metricsCases(data);
    const machineBefore = await machineInfo(client);
    let variant = 1 + Math.floor(Math.random() * 500) * 1000;
    const samples = new Map(cases.map((c) => [c.name, [] as number[]]));
    const send = async (c: MetricsCase, v: number) => {
      const r = await timedRequest(service.url, 'SEARCH', c.path, token, c.body(v));
      if (r.status !== 200) throw new Error(`${c.name}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
      return r;
    };
    // One warm-up request per case (not counted), then the cases interleaved, each body new.
    for (const c of cases) await send(c, variant++);
    log(`${iterations} rounds of ${cases.length} cases`);
    for (let i = 0; i < iterations; i++) {
      const order = i % 2 === 0 ? cases : [...cases].reverse();
      for (const c of order) samples.get(c.name)!.push((await send(c, variant++)).ms);
    }
    const loadAfter = (await machineInfo(client)).load_average;
    const results: MetricsCaseResult[] = cases.map((c) => ({ name: c.name, path: c.path, body: c.body(0), first: summarize(samples.get(c.name)!) }));
    for (const r of results) {
      const c = cases.find((x) => x.name === r.name)!;
      const plain = results.find((x) => x.name === c.plain);
      if (!plain) continue;
      r.p95_ratio = round(r.first.p95 / plain.first.p95, 2);
      r.meets_target = r.p95_ratio <= RATIO_TARGET;
    }
    printTable(
      `survey metrics on ${label} responses, first runs over HTTP, ms (load ${machineBefore.load_average.map((x) => x.toFixed(2)).join(' ')} -> ${loadAfter.map((x) => x.toFixed(2)).join(' ')})`,
      ['case', 'p50', 'p95', 'p95 / plain', `<= ${RATIO_TARGET}`],
      results.map((r) => [r.name, round(r.first.p50, 1), round(r.first.p95, 1), r.p95_ratio, r.meets_target === undefined ? '' : r.meets_target ? 'yes' : 'NO']),
    );
    const file = writeResult(`query-metrics-${label}`, { bench: 'query-metrics', dataset: data, iterations, machine: machineBefore, load_average_after: loadAfter, cases: results });
    process.stdout.write(`\nresult: ${file}\n`);
  } finally {
    closeAgent();
    await service.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main();
