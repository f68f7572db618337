/**
 * Issue 22's five questions, asked of the service over HTTP and of bare ClickHouse (bare.ts) on
 * the same responses in the same run, interleaved: the ratio service / bare per question, at one
 * size or (--growth) at that size and 5x it, and the bytes on disk of both. With --http-p95, also
 * the p95 of the service alone (the 10M targets). See bench/query/README.md.
 *
 *   node --import tsx bench/query/versus.ts [--responses 1M] [--growth] [--iterations 20] [--only Q4]
 *     [--data-dir <dir>] [--repo <checkout>]
 *
 * --data-dir: the data set's DATA_DIR (default bench/.data/query-<size>; one size only, no --growth).
 * --repo: another checkout whose service answers (its bin/tallyhouse.js), on the same data, with
 * this bench's harness and bare side: before/after runs of two codes, alternated by the caller.
 */
import { createClient, ClickHouseLogLevel } from '@clickhouse/client';
import { pathToFileURL } from 'node:url';
import { parseCount } from '../../src/seed/args.ts';
import { mintToken } from '../../src/tokens/tokens.ts';
import { parseFlags, positiveInt } from '../lib/args.ts';
import { machineInfo } from '../lib/machine.ts';
import { waitForMerges } from '../lib/merges.ts';
import { writeResult } from '../lib/results.ts';
import { startService } from '../lib/service.ts';
import { round, summarize } from '../lib/stats.ts';
import { printTable } from '../lib/table.ts';
import { BARE_TABLE, bareQueries, ensureBareTable, questionRange, runBare, tableBytes } from './bare.ts';
import { ensureDataset, optimizeFinal, storageState, type Dataset } from './dataset.ts';
import { closeAgent, timedRequest } from './http.ts';
import { dataDirFor } from './service.ts';
import { readFileSync } from 'node:fs';

const KEYWORD = 'slow';

interface Question {
  id: 'Q1' | 'Q2' | 'Q3' | 'Q4' | 'Q4d' | 'Q5';
  title: string;
  /** Served from the rollups: its target is service / bare <= 0.5 (else 1.0). */
  rollup: boolean;
  path: string;
  body(range: { start: string; end: string }): Record<string, unknown>;
  /** Starts the range on the UTC day 99 days before the end's day (day buckets on whole days). */
  wholeDays?: boolean;
  /** A number both sides answer, compared once per size (the bench measured the same question). */
  check(service: any, bare: any[]): [number, number];
}

const search = '/1.0/survey/*/response';
const QUESTIONS: Question[] = [
  {
    id: 'Q1', title: 'completion = fully_completed AND language != fr: count + newest 20', rollup: false, path: search,
    body: (range) => ({ range, size: 20, filters: [
      { type: 'response', key: 'completion', operator: 'eq', value: 'fully_completed' },
      { type: 'response', key: 'language', operator: 'neq', value: 'fr' },
    ] }),
    check: (s, b) => [s.hits.total.value, Number(b[0].total)],
  },
  {
    id: 'Q2', title: `keyword "${KEYWORD}" in any text answer: count + newest 20`, rollup: false, path: search,
    body: (range) => ({ range, size: 20, filters: [{ type: 'response', key: 'raw', operator: 'contains', value: KEYWORD }] }),
    check: (s, b) => [s.hits.total.value, Number(b[0].total)],
  },
  {
    id: 'Q3', title: 'summary over the whole org', rollup: true, path: `${search}/summary`,
    body: (range) => ({ range }),
    check: (s, b) => [s.nps_groups.total, (b[0].nps[1] as number[]).reduce((a: number, n) => a + Number(n), 0)],
  },
  {
    id: 'Q4', title: 'created_at by day (100 days) then completion', rollup: true, path: `${search}/aggregation`,
    body: (range) => ({ range, group_by: [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 100 }, { field: 'completion' }] }),
    // The grand total is the ROLLUP's largest row.
    check: (s, b) => [s.hits.total.value, b.reduce((a, r) => Math.max(a, Number(r.n)), 0)],
  },
  {
    id: 'Q4d', title: 'the same over 100 whole UTC days (range ending inside an hour)', rollup: true, path: `${search}/aggregation`, wholeDays: true,
    body: (range) => ({ range, group_by: [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 100 }, { field: 'completion' }] }),
    check: (s, b) => [s.hits.total.value, b.reduce((a, r) => Math.max(a, Number(r.n)), 0)],
  },
  {
    id: 'Q5', title: 'hidden field session_count > 5, grouped by hidden field platform', rollup: false, path: `${search}/aggregation`,
    body: (range) => ({ range, filters: [{ type: 'response.hidden_field', key: 'session_count', operator: 'gt', value: 5 }], group_by: [{ field: 'hidden_field', hidden_field_key: 'platform' }] }),
    check: (s, b) => [s.aggregations.buckets[0].doc_count, Number(b[0].n)],
  },
];

interface Options {
  responses: number;
  growth: boolean;
  iterations: number;
  only?: string;
  dataDir?: string;
  repo?: string;
  log: (line: string) => void;
}

interface QuestionResult {
  id: string;
  title: string;
  served_from: 'rollups' | 'raw';
  bare_ms: ReturnType<typeof summarize>;
  service_ms: ReturnType<typeof summarize>;
  ratio_p50: number;
  target: number;
  meets: boolean;
  check: [number, number];
}

interface SizeResult {
  responses: number;
  machine: unknown;
  dataset: Dataset;
  load_before: string;
  load_after: string;
  disk: { survey_responses: number; bare: number; ratio: number; survey_rollup: number; columns: Record<string, number> };
  questions: QuestionResult[];
}

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').trim().split(' ').slice(0, 3).join(' ');

async function runSize(responses: number, opts: Options): Promise<SizeResult> {
  const log = opts.log;
  const label = responses % 1_000_000 === 0 ? `${responses / 1_000_000}M` : responses % 1000 === 0 ? `${responses / 1000}k` : String(responses);
  const service = await startService({ dataDir: opts.dataDir ?? dataDirFor(label), repo: opts.repo, embeddedOnly: true, log });
  const bare = createClient({ url: service.endpoint.url, http_headers: service.endpoint.headers, database: service.config.clickhouse.database, request_timeout: 3_600_000, log: { level: ClickHouseLogLevel.OFF } });
  try {
    const client = service.client;
    const dataset = await ensureDataset(client, { endpoint: service.endpoint, database: service.config.clickhouse.database }, { responses, surveys: 5, days: 90 }, log);
    const multiPart = async () => Object.values((await storageState(client, responses)).parts_per_partition).some((n) => n > 1);
    for (let i = 0; i < 3 && (await multiPart()); i++) {
      log('OPTIMIZE TABLE survey_responses FINAL');
      await optimizeFinal(service.endpoint, service.config.clickhouse.database);
      await waitForMerges(client, { table: 'survey_responses', timeoutMs: 300_000, pollMs: 1000, log });
    }
    // The slice tables as an organization's are an hour after its last write (schema/280 merges
    // their parts once an hour old). A freshly seeded set wrote 90 days of slices at once, so every
    // part spans the whole key range and FINAL would merge them on each read, a state no live org
    // stays in: its later writes touch recent slices only.
    for (const table of ['survey_rollup', 'survey_rollup_answers'] as const) await optimizeFinal(service.endpoint, service.config.clickhouse.database, table);
    await ensureBareTable(bare, dataset.orgId, responses, log);
    await waitForMerges(client, { timeoutMs: 300_000, pollMs: 1000, log });
    const storage = await storageState(client, responses);
    const disk = {
      survey_responses: await tableBytes(client, 'survey_responses'),
      bare: await tableBytes(client, BARE_TABLE),
      survey_rollup: await tableBytes(client, 'survey_rollup'),
      ratio: 0,
      columns: storage.column_bytes,
    };
    disk.ratio = round(disk.survey_responses / disk.bare, 2);
    const token = (await mintToken(client, dataset.orgId, ['responses:read'], 'versus bench')).token;
    const load_before = loadavg();
    const results: QuestionResult[] = [];
    let variant = 1 + Math.floor(Math.random() * 500) * 1000;
    for (const q of QUESTIONS.filter((x) => !opts.only || x.id.startsWith(opts.only))) {
      const ask = async (v: number) => {
        const range = questionRange(dataset.maxCreatedAt, v);
        const r = await timedRequest(service.url, 'SEARCH', q.path, token, q.body({ start: q.wholeDays ? range.dayStart : range.start, end: range.end }));
        if (r.status !== 200) throw new Error(`${q.id}: HTTP ${r.status} ${r.text.slice(0, 500)}`);
        return r;
      };
      const askBare = async (v: number) => {
        const t0 = performance.now();
        const rows = await runBare(bare, bareQueries(dataset.orgId, questionRange(dataset.maxCreatedAt, v), KEYWORD)[q.id]);
        return { rows, ms: performance.now() - t0 };
      };
      // Warm-up of both sides (and the answers compared).
      const first = await ask(variant++);
      const firstBare = await askBare(variant++);
      const check = q.check(JSON.parse(first.text), firstBare.rows as any[]);
      if (check[0] !== check[1]) log(`${q.id}: the service answered ${check[0]}, bare ClickHouse ${check[1]}`);
      const svc: number[] = [];
      const raw: number[] = [];
      for (let i = 0; i < opts.iterations; i++) {
        const v = variant++;
        if (i % 2 === 0) { svc.push((await ask(v)).ms); raw.push((await askBare(v)).ms); }
        else { raw.push((await askBare(v)).ms); svc.push((await ask(v)).ms); }
      }
      const s = summarize(svc);
      const b = summarize(raw);
      const target = q.rollup ? 0.5 : 1.0;
      const ratio = round(s.p50 / b.p50, 2);
      results.push({ id: q.id, title: q.title, served_from: q.rollup ? 'rollups' : 'raw', bare_ms: b, service_ms: s, ratio_p50: ratio, target, meets: ratio <= target, check });
      log(`${q.id}: bare ${round(b.p50, 1)} ms, service ${round(s.p50, 1)} ms (p50), ratio ${ratio}`);
    }
    return { responses, machine: await machineInfo(client), dataset, load_before, load_after: loadavg(), disk, questions: results };
  } finally {
    closeAgent();
    await bare.close();
    await service.stop();
  }
}

function print(r: SizeResult): void {
  printTable(
    `${r.responses.toLocaleString('en-US')} responses (load ${r.load_before} -> ${r.load_after}); disk: survey_responses ${(r.disk.survey_responses / 1e6).toFixed(1)} MB, bare ${(r.disk.bare / 1e6).toFixed(1)} MB (x${r.disk.ratio}), rollups ${(r.disk.survey_rollup / 1e6).toFixed(1)} MB`,
    ['question', 'bare p50', 'bare p95', 'svc p50', 'svc p95', 'ratio', 'target', 'met', 'answers'],
    r.questions.map((q) => [`${q.id} ${q.title}`, round(q.bare_ms.p50, 1), round(q.bare_ms.p95, 1), round(q.service_ms.p50, 1), round(q.service_ms.p95, 1), q.ratio_p50, q.target, q.meets ? 'yes' : 'NO', q.check[0] === q.check[1] ? 'same' : `${q.check[0]} vs ${q.check[1]}`]),
  );
}

export async function runVersus(opts: Options) {
  const sizes: SizeResult[] = [];
  for (const n of opts.growth ? [opts.responses, opts.responses * 5] : [opts.responses]) {
    const r = await runSize(n, opts);
    print(r);
    sizes.push(r);
  }
  if (sizes.length === 2) {
    printTable('growth (p50, large / small)', ['question', 'x service', 'x bare'], sizes[0].questions.map((q, i) => [
      q.id, round(sizes[1].questions[i].service_ms.p50 / q.service_ms.p50, 2), round(sizes[1].questions[i].bare_ms.p50 / q.bare_ms.p50, 2),
    ]));
  }
  const file = writeResult(`versus-${opts.growth ? 'growth-' : ''}${opts.responses}`, { options: { ...opts, log: undefined }, sizes });
  process.stdout.write(`\nresult: ${file}\n`);
  return sizes;
}

const USAGE = `node --import tsx bench/query/versus.ts [--responses 1M] [--growth] [--iterations 20] [--only Q1..Q5] [--data-dir <dir>] [--repo <checkout>]`;

async function main(): Promise<number> {
  const flags = parseFlags(process.argv.slice(2), {
    responses: { type: 'string' }, growth: { type: 'boolean' }, iterations: { type: 'string' }, only: { type: 'string' }, 'data-dir': { type: 'string' }, repo: { type: 'string' }, help: { type: 'boolean' },
  }, USAGE);
  if (flags.help) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  if (flags['data-dir'] !== undefined && flags.growth) throw new Error('--data-dir names one data set: not with --growth');
  await runVersus({
    responses: flags.responses !== undefined ? (parseCount(flags.responses) ?? 1_000_000) : 1_000_000,
    growth: Boolean(flags.growth),
    iterations: positiveInt('iterations', flags.iterations, 20),
    only: flags.only,
    dataDir: flags['data-dir'],
    repo: flags.repo,
    log: (line) => process.stderr.write(`[versus] ${line}\n`),
  });
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().then((code) => process.exit(code), (err) => {
    process.stderr.write(`versus bench failed: ${err?.stack ?? err}\n`);
    process.exit(1);
  });
}
