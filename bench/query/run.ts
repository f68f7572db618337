/**
 * Query bench: how fast search, summary and aggregation answer over HTTP on 1M (or 10M) survey
 * responses, first run and repeated (polling cache), and what HTTP + JSON shaping add to the same
 * SQL run directly on the engine. See bench/query/README.md for the method and how to read it.
 *
 *   node --import tsx bench/query/run.ts [--large] [--responses N] [--iterations 20] [--repeats 30] ...
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseCount } from '../../src/seed/args.ts';
import { mintToken } from '../../src/tokens/tokens.ts';
import { envPairs, parseFlags, positiveInt } from '../lib/args.ts';
import { summarizeProfile, type ProfileSummary } from '../lib/cpuprofile.ts';
import { machineInfo } from '../lib/machine.ts';
import { cpuDelta, cpuSeconds, cpuSnapshot } from '../lib/proc.ts';
import { writeResult } from '../lib/results.ts';
import { barChartSvg, type BarChart } from '../lib/chart.ts';
import { measureWrites, type WriteRun } from './writes.ts';
import { round, summarize, type LatencySummary } from '../lib/stats.ts';
import { printTable, type Cell } from '../lib/table.ts';
import { benchCases, pathOf, runDirect, type Endpoint } from './cases.ts';
import { waitForMerges } from '../lib/merges.ts';
import { ensureDataset, optimizeFinal, storageState, type Dataset, type StorageState } from './dataset.ts';
import { closeAgent, timedRequest } from './http.ts';
import { engineFigures, type EngineFigures } from './engine-figures.ts';
import { startService } from '../lib/service.ts';
import { dataDirFor } from './service.ts';

export interface QueryOptions {
  /** Responses in the bench organization (1M by default, 10M with --large). */
  responses: number;
  surveys: number;
  days: number;
  /** Non-cached ("first") runs per case, each through HTTP and directly. */
  iterations: number;
  /** Back-to-back repeats of one body per case (the polling cache serves them). */
  repeats: number;
  /** Only the cases whose name contains this text. */
  only?: string;
  /**
   * OPTIMIZE TABLE ... FINAL before measuring when a partition has more than one part (default):
   * the state once background merges have caught up. false: measure the parts as they are (after
   * a seed: several parts per week whose key ranges all overlap, the worst case for FINAL).
   */
  optimize: boolean;
  /** Seconds to wait for background merges after a seed before measuring. */
  mergeWaitSeconds: number;
  /** Persistent DATA_DIR; default bench/.data/query-<size>. */
  dataDir?: string;
  env: Record<string, string>;
  cpuProf: boolean;
  write: boolean;
  /** Write-throughput requests per phase (POST /1.0/survey/response); 0 skips the phase. */
  writeRequests: number;
  /** Clients sending them at once. */
  writeClients: number;
  /** Rounds of (empty org, large org) write phases, interleaved. */
  writeRounds: number;
  /** Also run every case at GROWTH_FACTOR times the size (its own data set), and report the ratios. */
  growth: boolean;
  log: (line: string) => void;
}

/** --growth: the second size, as a multiple of the first. */
export const GROWTH_FACTOR = 5;
/** Records per write request (the endpoint's maximum). */
export const RECORDS_PER_REQUEST = 1000;

export const DEFAULTS: QueryOptions = {
  responses: 1_000_000,
  surveys: 5,
  days: 90,
  iterations: 20,
  repeats: 30,
  optimize: true,
  mergeWaitSeconds: 300,
  env: {},
  cpuProf: false,
  write: true,
  writeRequests: 100,
  writeClients: 4,
  writeRounds: 2,
  growth: false,
  log: (line) => process.stderr.write(`[query] ${line}\n`),
};

/** `npm run bench`: the same 1M data set, fewer runs (the ingest bench shares the 5 minutes). */
export const SHORT: Partial<QueryOptions> = { iterations: 7, repeats: 15, mergeWaitSeconds: 60, writeRequests: 40, writeRounds: 1 };

/**
 * Issue 10's targets (p95 of first runs, 10M responses, 2 cores, embedded engine), per case: search
 * newest page + exact count with no filter or dimension filters 50 ms, keyword (and the alias
 * substring) 150 ms, summary and the completion / survey_id aggregations 30 ms, the answer buckets
 * of one question 50 ms. (Issue 5's were search 100, summary and aggregation 250.)
 */
export const TARGET_P95_MS: Record<string, number> = {
  'search: newest page, no filter': 50,
  'search: dimension filter (completion)': 50,
  'search: keyword (raw contains "slow")': 150,
  'search: hidden field country = FR': 50,
  'search: alias contains "user-42"': 150,
  'search: segment (busiest group)': 50,
  'summary (all surveys)': 30,
  'aggregation: completion x 100 daily': 30,
  'aggregation: survey_id under *': 30,
  'aggregation: answer (NPS question)': 50,
};
const DEFAULT_TARGET_P95_MS: Record<Endpoint, number> = { search: 50, summary: 30, aggregation: 30 };

export interface CaseResult {
  name: string;
  endpoint: Endpoint;
  method: 'SEARCH';
  path: string;
  body: Record<string, unknown>;
  /** What the answer held (a sanity check that the bench measured real work). */
  answer: Record<string, unknown>;
  /** The first request of the case in this run (after the service started). */
  cold_ms: number;
  /** HTTP, each body new to the polling cache. */
  http_first: LatencySummary;
  /** HTTP, the same body back to back (polling cache; search has no cache). */
  http_repeated: LatencySummary;
  /** The same compiled SQL run on the engine with @clickhouse/client (search: page + count side by side). */
  direct: LatencySummary;
  /** http_first p50 - direct p50: what the service adds (HTTP, auth, validation, JSON shaping). */
  service_overhead_ms_p50: number;
  /** Service CPU per HTTP request of the first runs (ms; /proc, 10 ms ticks averaged over the runs). */
  service_cpu_ms_per_request: number | undefined;
  /** Engine CPU per direct run (ms, all its threads): robust to other load on the machine, unlike wall time. */
  engine_cpu_ms_per_run: number | undefined;
  /** Rows/bytes read, elapsed and memory of each query, from the engine (one extra untimed run). */
  engine: EngineFigures[];
  /**
   * Cores kept busy by OTHER processes on the machine during this case (their CPU seconds / wall
   * seconds, from /proc/stat minus the service, the engine and the bench): noise. Above ~0.3 the
   * figures of the case are inflated by contention for the 2 cores.
   */
  other_cores_busy: number | undefined;
  target_p95_ms: number;
  first_meets_target: boolean;
  repeated_meets_target: boolean;
}

export interface QueryBenchResult {
  bench: 'query';
  started_at: string;
  options: Omit<QueryOptions, 'log' | 'env'> & { short: boolean };
  machine: Awaited<ReturnType<typeof machineInfo>>;
  service_env: Record<string, string>;
  dataset: Dataset;
  storage: StorageState;
  optimize_seconds?: number;
  merges_settled: boolean;
  cases: CaseResult[];
  /** Write throughput, in (empty org, large org) pairs of phases. */
  writes: WriteRun[];
  /** Summed throughput into the large org / into the empty one (target >= 0.9). */
  write_ratio_large_to_empty?: number;
  profile?: ProfileSummary;
  seconds: number;
  result_file?: string;
}

function summarizeAnswer(endpoint: Endpoint, body: any): Record<string, unknown> {
  if (endpoint === 'search') return { total: body?.hits?.total?.value, returned: body?.hits?.responses?.length };
  if (endpoint === 'summary') return { nps_total: body?.nps_groups?.total, nps_score: body?.nps_score, completion: body?.completion };
  return { total: body?.hits?.total?.value, top_buckets: body?.aggregations?.buckets?.length };
}

/** The bench: one size, or with `growth` the same at GROWTH_FACTOR times it; prints and writes the results (JSON + SVG). */
export async function runQueryBench(input: Partial<QueryOptions> & { short?: boolean } = {}): Promise<QueryBenchResult | QueryGrowthResult> {
  const short = input.short ?? false;
  const opts: QueryOptions = { ...DEFAULTS, ...(short ? SHORT : {}), ...stripUndefined(input) };
  if (!opts.growth) {
    const result = await runOneSize(opts, short);
    printResult(result);
    if (opts.write) {
      result.result_file = writeResult(`query-${shortCount(opts.responses)}`, result);
      writeFileSync(result.result_file.replace(/\.json$/, '.svg'), barChartSvg(latencyChart([result])));
      process.stdout.write(`\nresult: ${result.result_file} (chart: .svg beside it)\n`);
    }
    return result;
  }
  const t0 = Date.now();
  const sizes: QueryBenchResult[] = [];
  for (const responses of [opts.responses, opts.responses * GROWTH_FACTOR]) {
    const r = await runOneSize({ ...opts, responses, dataDir: opts.dataDir ? `${opts.dataDir}-${shortCount(responses)}` : undefined }, short);
    printResult(r);
    sizes.push(r);
  }
  const result: QueryGrowthResult = {
    bench: 'query-growth',
    started_at: new Date(t0).toISOString(),
    factor: GROWTH_FACTOR,
    growth: growthRows(sizes[0], sizes[1]),
    sizes,
    seconds: Math.round((Date.now() - t0) / 1000),
  };
  printGrowth(result);
  if (opts.write) {
    result.result_file = writeResult(`query-growth-${shortCount(opts.responses)}x${GROWTH_FACTOR}`, result);
    writeFileSync(result.result_file.replace(/\.json$/, '.svg'), barChartSvg(latencyChart(sizes)));
    process.stdout.write(`\nresult: ${result.result_file} (chart: .svg beside it)\n`);
  }
  return result;
}

export interface GrowthRow {
  name: string;
  first_p50: [number, number];
  first_p95: [number, number];
  /** Large / small. */
  first_p50_ratio: number;
  first_p95_ratio: number;
  engine_cpu_ratio: number | undefined;
}

export interface QueryGrowthResult {
  bench: 'query-growth';
  started_at: string;
  factor: number;
  growth: GrowthRow[];
  sizes: QueryBenchResult[];
  seconds: number;
  result_file?: string;
}

function growthRows(small: QueryBenchResult, large: QueryBenchResult): GrowthRow[] {
  return small.cases.flatMap((a) => {
    const b = large.cases.find((c) => c.name === a.name);
    if (!b) return [];
    return [{
      name: a.name,
      first_p50: [a.http_first.p50, b.http_first.p50] as [number, number],
      first_p95: [a.http_first.p95, b.http_first.p95] as [number, number],
      first_p50_ratio: round(b.http_first.p50 / a.http_first.p50, 2),
      first_p95_ratio: round(b.http_first.p95 / a.http_first.p95, 2),
      engine_cpu_ratio: a.engine_cpu_ms_per_run && b.engine_cpu_ms_per_run ? round(b.engine_cpu_ms_per_run / a.engine_cpu_ms_per_run, 2) : undefined,
    }];
  });
}

/** p95 per case: first and repeated runs, for each size measured. */
export function latencyChart(sizes: readonly QueryBenchResult[]): BarChart {
  const names = sizes[0].cases.map((c) => c.name);
  const label = (r: QueryBenchResult) => shortCount(r.dataset.responses);
  const pick = (r: QueryBenchResult, f: (c: CaseResult) => number) => names.map((n) => { const c = r.cases.find((x) => x.name === n); return c ? f(c) : undefined; });
  const load = sizes.map((r) => `${label(r)}: load ${r.machine.load_average.map((x) => x.toFixed(1)).join(' ')}`).join('; ');
  return {
    title: `Query bench: p95 latency over HTTP per case (${sizes.map(label).join(' and ')} responses in one org; ${load})`,
    unit: 'p95 latency, ms (first = a body new to the polling cache; repeated = the same body again); dashed red = target at 10M',
    categories: names,
    series: sizes.flatMap((r) => [
      { label: `${label(r)} first`, values: pick(r, (c) => c.http_first.p95) },
      { label: `${label(r)} repeated`, values: pick(r, (c) => c.http_repeated.p95) },
    ]),
    markers: names.map((n) => sizes[0].cases.find((c) => c.name === n)?.target_p95_ms),
  };
}

function printGrowth(r: QueryGrowthResult): void {
  const [a, b] = r.sizes;
  printTable(
    `growth: ${shortCount(a.dataset.responses)} -> ${shortCount(b.dataset.responses)} responses (x${r.factor}), first runs over HTTP, ms`,
    ['case', 'p50 small', 'p50 large', 'x p50', 'p95 small', 'p95 large', 'x p95', 'x eng cpu'],
    r.growth.map((g) => [g.name, g.first_p50[0], g.first_p50[1], g.first_p50_ratio, g.first_p95[0], g.first_p95[1], g.first_p95_ratio, g.engine_cpu_ratio]),
  );
  process.stdout.write(`\nquery growth bench done in ${r.seconds} s\n`);
}

/** One data set: seed or reuse, merge state, every case, then the write phases. */
async function runOneSize(opts: QueryOptions, short: boolean): Promise<QueryBenchResult> {
  const log = opts.log;
  const t0 = Date.now();
  const profDir = opts.cpuProf ? mkdtempSync(join(os.tmpdir(), 'tallyhouse-query-prof-')) : undefined;
  const service = await startService({ dataDir: opts.dataDir ?? dataDirFor(shortCount(opts.responses)), embeddedOnly: true, env: opts.env, cpuProfDir: profDir, log });
  let result: QueryBenchResult | undefined;
  try {
    const client = service.client;
    const dataset = await ensureDataset(client, { endpoint: service.endpoint, database: service.config.clickhouse.database }, { responses: opts.responses, surveys: opts.surveys, days: opts.days }, log);
    let merges_settled = await waitForMerges(client, { table: 'survey_responses', timeoutMs: opts.mergeWaitSeconds * 1000, pollMs: 1000, log });
    let optimize_seconds: number | undefined;
    let storage = await storageState(client, dataset.responses);
    const multiPart = () => Object.values(storage.parts_per_partition).some((n) => n > 1);
    // OPTIMIZE does nothing (silently) for a partition whose parts a running merge holds: retry.
    for (let attempt = 0; opts.optimize && multiPart() && attempt < 3; attempt++) {
      log(`OPTIMIZE TABLE survey_responses FINAL (${storage.active_parts} parts in ${Object.keys(storage.parts_per_partition).length} partitions)`);
      optimize_seconds = round((optimize_seconds ?? 0) + (await optimizeFinal(service.endpoint, service.config.clickhouse.database)), 1);
      merges_settled = await waitForMerges(client, { table: 'survey_responses', timeoutMs: opts.mergeWaitSeconds * 1000, pollMs: 1000, log });
      storage = await storageState(client, dataset.responses);
    }
    if (optimize_seconds !== undefined) log(`optimized in ${optimize_seconds} s: parts per partition ${JSON.stringify(storage.parts_per_partition)}`);
    const machine = await machineInfo(client);
    const token = (await mintToken(client, dataset.orgId, ['responses:read'], 'query bench')).token;

    let variant = 1 + Math.floor(Math.random() * 500) * 1000; // unique bodies across runs of one service too
    const cases = benchCases(dataset).filter((c) => !opts.only || c.name.includes(opts.only));
    const results: CaseResult[] = [];
    for (const c of cases) {
      log(`${c.name}: ${opts.iterations} first runs (HTTP and direct), ${opts.repeats} repeated`);
      const send = async (v: number) => {
        const r = await timedRequest(service.url, 'SEARCH', pathOf(c), token, c.body(v));
        if (r.status !== 200) throw new Error(`${c.name}: HTTP ${r.status} ${r.text.slice(0, 500)}`);
        return r;
      };
      const before = cpuSnapshot({ service: service.servicePid, engine: service.enginePid() });
      const cold = await send(variant++);
      const answer = summarizeAnswer(c.endpoint, JSON.parse(cold.text));

      const first: number[] = [];
      const direct: number[] = [];
      let serviceCpu = 0;
      let engineCpu = 0;
      const enginePid = service.enginePid();
      for (let i = 0; i < opts.iterations; i++) {
        const v = variant++;
        // Alternate which goes first, so neither always meets the other's warm caches.
        const http = async () => {
          const before = cpuSeconds(service.servicePid);
          first.push((await send(v)).ms);
          const after = cpuSeconds(service.servicePid);
          if (before !== undefined && after !== undefined) serviceCpu += after - before;
        };
        const dir = async () => {
          const before = cpuSeconds(enginePid);
          const s = performance.now();
          await runDirect(client, c, v);
          direct.push(performance.now() - s);
          const after = cpuSeconds(enginePid);
          if (before !== undefined && after !== undefined) engineCpu += after - before;
        };
        if (i % 2 === 0) { await http(); await dir(); } else { await dir(); await http(); }
      }
      await send(0); // fills the polling cache for the repeats
      const repeated: number[] = [];
      for (let i = 0; i < opts.repeats; i++) repeated.push((await send(0)).ms);

      const spent = cpuDelta(before, cpuSnapshot({ service: service.servicePid, engine: service.enginePid() }));
      const engine = await engineFigures(client, c, variant++);
      const httpFirst = summarize(first);
      const directSummary = summarize(direct);
      const httpRepeated = summarize(repeated);
      const target = TARGET_P95_MS[c.name] ?? DEFAULT_TARGET_P95_MS[c.endpoint];
      results.push({
        name: c.name,
        endpoint: c.endpoint,
        method: 'SEARCH',
        path: pathOf(c),
        body: c.body(0),
        answer,
        cold_ms: round(cold.ms),
        http_first: roundSummary(httpFirst),
        http_repeated: roundSummary(httpRepeated),
        direct: roundSummary(directSummary),
        service_overhead_ms_p50: round(httpFirst.p50 - directSummary.p50),
        service_cpu_ms_per_request: cpuSeconds(service.servicePid) !== undefined ? round((serviceCpu * 1000) / first.length) : undefined,
        engine_cpu_ms_per_run: cpuSeconds(enginePid) !== undefined ? round((engineCpu * 1000) / direct.length) : undefined,
        engine,
        other_cores_busy: spent.other !== undefined && spent.wall ? round(spent.other / spent.wall, 2) : undefined,
        target_p95_ms: target,
        first_meets_target: httpFirst.p95 <= target,
        repeated_meets_target: httpRepeated.p95 <= target,
      });
    }

    const writes: WriteRun[] = [];
    if (opts.writeRequests > 0) {
      const writeToken = (await mintToken(client, dataset.orgId, ['responses:write'], 'query bench writes')).token;
      for (let round = 0; round < opts.writeRounds; round++) {
        // A new empty org each round, then the large one: same engine, same table, same bodies' shape.
        for (const org of ['empty', 'large'] as const) {
          const orgId = org === 'large' ? dataset.orgId : randomUUID();
          const token = org === 'large' ? writeToken : (await mintToken(client, orgId, ['responses:write'], 'query bench writes')).token;
          log(`writes into the ${org} org: ${opts.writeRequests} requests of ${RECORDS_PER_REQUEST} records, ${opts.writeClients} clients`);
          const w = await measureWrites({ url: service.url, client, token, orgId, org, clients: opts.writeClients, requests: opts.writeRequests, recordsPerRequest: RECORDS_PER_REQUEST });
          log(`  ${w.responses_per_second.toLocaleString('en-US')} responses/s, request p50 ${w.request_ms.p50} ms p95 ${w.request_ms.p95} ms`);
          writes.push(w);
        }
      }
    }
    const rate = (org: WriteRun['org']) => writes.filter((w) => w.org === org).reduce((a, w) => ({ n: a.n + w.responses, s: a.s + w.seconds }), { n: 0, s: 0 });
    const [empty, large] = [rate('empty'), rate('large')];

    result = {
      bench: 'query',
      started_at: new Date(t0).toISOString(),
      options: { ...withoutFns(opts), short },
      machine,
      service_env: service.serviceEnv,
      dataset,
      storage,
      optimize_seconds,
      merges_settled,
      cases: results,
      writes,
      write_ratio_large_to_empty: empty.s > 0 && large.s > 0 ? round(large.n / large.s / (empty.n / empty.s), 2) : undefined,
      seconds: 0,
    };
  } finally {
    closeAgent();
    await service.stop();
  }
  if (profDir) {
    const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
    if (file) result.profile = summarizeProfile(join(profDir, file));
  }
  result!.seconds = Math.round((Date.now() - t0) / 1000);
  return result!;
}

function roundSummary(s: LatencySummary): LatencySummary {
  return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, k === 'count' ? v : round(v)])) as unknown as LatencySummary;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function withoutFns(o: QueryOptions): Omit<QueryOptions, 'log' | 'env'> {
  const { log: _log, env: _env, ...rest } = o;
  return rest;
}

const shortCount = (n: number) => (n >= 1e6 && n % 1e6 === 0 ? `${n / 1e6}M` : n >= 1e3 && n % 1e3 === 0 ? `${n / 1e3}k` : String(n));

function printResult(r: QueryBenchResult): void {
  const d = r.dataset;
  const st = r.storage;
  process.stdout.write(
    `\nquery bench: ${d.responses.toLocaleString('en-US')} responses in org ${d.orgId} (${d.surveys} surveys, ${d.days} days)` +
      `${d.seeded ? `, seeded in this run at ${d.seeded.responses_per_second.toLocaleString('en-US')} responses/s` : ', reused'}\n` +
      `storage: ${st.table_rows.toLocaleString('en-US')} rows in the table, ${st.active_parts} active parts (per partition ${JSON.stringify(st.parts_per_partition)}), ` +
      `${(st.compressed_bytes / 2 ** 20).toFixed(0)} MiB compressed${r.optimize_seconds !== undefined ? `, OPTIMIZE FINAL took ${r.optimize_seconds} s` : ''}` +
      `${r.merges_settled ? '' : ', MERGES STILL RUNNING (figures include their CPU use)'}\n` +
      `machine: ${r.machine.cpus} CPUs (${r.machine.cpu_model}), ClickHouse ${r.machine.clickhouse}, node ${r.machine.node}, load average at start ${r.machine.load_average.join(' ')}\n`,
  );
  const rows: Cell[][] = r.cases.map((c) => {
    // The slowest query (a search's count), and the others together (its pages).
    const main = c.engine.reduce<EngineFigures | undefined>((m, e) => (m && m.elapsed_ms >= e.elapsed_ms ? m : e), undefined);
    const others = c.engine.filter((e) => e !== main);
    const second = others.length === 0 ? undefined : { elapsed_ms: round(others.reduce((t, e) => t + e.elapsed_ms, 0), 1), read_rows: others.reduce((t, e) => t + e.read_rows, 0), read_mib: others.reduce((t, e) => t + e.read_mib, 0) };
    return [
      c.name,
      c.cold_ms,
      c.http_first.p50,
      c.http_first.p95,
      c.http_repeated.p50,
      c.http_repeated.p95,
      c.direct.p50,
      c.direct.p95,
      c.service_overhead_ms_p50,
      main?.elapsed_ms,
      second?.elapsed_ms,
      c.engine_cpu_ms_per_run,
      c.service_cpu_ms_per_request,
      main ? round((main.read_rows + (second?.read_rows ?? 0)) / 1e6, 2) : undefined,
      main ? round(main.read_mib + (second?.read_mib ?? 0), 0) : undefined,
      c.other_cores_busy,
      `${c.target_p95_ms} ${c.first_meets_target ? 'met' : 'MISSED'} / ${c.repeated_meets_target ? 'met' : 'MISSED'}`,
    ];
  });
  printTable(
    'latency in ms (first = new to the polling cache; repeated = same body back to back; direct = same SQL on the engine)',
    ['case', 'cold', 'first p50', 'first p95', 'rep p50', 'rep p95', 'direct p50', 'direct p95', 'svc +ms', 'main ms', 'rest ms', 'eng cpu', 'svc cpu', 'Mrows', 'MiB', 'noise', 'p95 target first/rep'],
    rows,
  );
  process.stdout.write(
    `\nsvc +ms = first p50 - direct p50 (HTTP, auth, validation, JSON shaping)\n` +
      `main ms / rest ms = the engine's elapsed time of the slowest query (search: the count; others: the one query) / of the others together (search: its pages), from one extra run\n` +
      `eng cpu / svc cpu = CPU ms per run of the engine (direct runs) / of the service (HTTP first runs)\n` +
      `Mrows / MiB = rows / bytes the engine read per run (search: all its queries)\n` +
      `noise = cores kept busy by other processes during the case (0 to 2): above ~0.3 the latencies are inflated\n` +
      `targets are for 10M responses; on smaller sets they are shown for reference\n`,
  );
  if (r.profile) {
    printTable('service CPU profile: self time by area', ['area', 'ms', '% busy'], r.profile.by_area.slice(0, 12).map((a) => [a.area, a.ms, a.pct_busy]));
  }
  if (r.writes.length) {
    printTable(
      `POST /1.0/survey/response: ${r.writes[0].records_per_request} records a request, ${r.writes[0].clients} clients, new ids, created_at in the last 7 days`,
      ['into', 'org rows before', 'responses', 's', 'responses/s', 'req p50 ms', 'req p95 ms'],
      r.writes.map((w) => [w.org, w.org_rows_before, w.responses, w.seconds, w.responses_per_second, w.request_ms.p50, w.request_ms.p95]),
    );
    process.stdout.write(`large / empty throughput: ${r.write_ratio_large_to_empty} (target >= 0.9; >= 30,000 responses/s)\n`);
  }
  process.stdout.write(`\nquery bench done in ${r.seconds} s\n`);
}

// --- CLI ---------------------------------------------------------------------------------------------

const USAGE = `usage: node --import tsx bench/query/run.ts [options]
  --large             10M responses instead of 1M (seeded once, then reused)
  --responses N       any size (10000, 500k, 10M)
  --surveys S         surveys of the data set (default ${DEFAULTS.surveys})
  --days D            days the data spans (default ${DEFAULTS.days})
  --iterations N      first (not cached) runs per case, HTTP and direct each (default ${DEFAULTS.iterations})
  --repeats N         repeated runs of one body per case (default ${DEFAULTS.repeats})
  --only TEXT         only the cases whose name contains TEXT (e.g. search, summary, "completion")
  --no-optimize       measure the parts as they are (default: OPTIMIZE ... FINAL first when a
                      partition has several parts, the state after background merges)
  --merge-wait S      seconds to wait for background merges before measuring (default ${DEFAULTS.mergeWaitSeconds})
  --short             the npm run bench version (${SHORT.iterations} first runs, ${SHORT.repeats} repeats)
  --data-dir DIR      the persistent DATA_DIR (default bench/.data/query-<size>, e.g. query-1M)
  --env KEY=VALUE     extra service environment (repeatable)
  --cpu-prof          profile the service (node --cpu-prof) and summarize it
  --growth            also the same cases at ${GROWTH_FACTOR}x the size (its own data set), in one run, with the ratios
                      (e.g. --growth: 1M and 5M; seeding 5M takes ~3 min the first time)
  --write-requests N  POST /1.0/survey/response requests of ${RECORDS_PER_REQUEST} records per write phase (default ${DEFAULTS.writeRequests}; 0: no write phase)
  --write-clients N   clients sending them at once (default ${DEFAULTS.writeClients})
  --write-rounds N    (empty org, large org) pairs of write phases (default ${DEFAULTS.writeRounds})
  --no-write          do not write the JSON result (and its SVG chart) to bench/results/`;

async function main(): Promise<number> {
  const flags = parseFlags(
    process.argv.slice(2),
    {
      large: { type: 'boolean' },
      responses: { type: 'string' },
      surveys: { type: 'string' },
      days: { type: 'string' },
      iterations: { type: 'string' },
      repeats: { type: 'string' },
      only: { type: 'string' },
      'no-optimize': { type: 'boolean' },
      'merge-wait': { type: 'string' },
      short: { type: 'boolean' },
      'data-dir': { type: 'string' },
      env: { type: 'string', multiple: true },
      'cpu-prof': { type: 'boolean' },
      'no-write': { type: 'boolean' },
      growth: { type: 'boolean' },
      'write-requests': { type: 'string' },
      'write-clients': { type: 'string' },
      'write-rounds': { type: 'string' },
      help: { type: 'boolean' },
    },
    USAGE,
  );
  if (flags.help) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  // The seed's own parser reads 10M, 500k, 10_000 the same way `tallyhouse seed` does.
  const responses = flags.responses !== undefined ? parseCount(flags.responses) : flags.large ? 10_000_000 : undefined;
  if (flags.responses !== undefined && !(responses! >= 1)) {
    process.stderr.write(`--responses must be a count such as 1M, 500k or 250000, got "${flags.responses}"\n`);
    return 2;
  }
  const env = envPairs(flags.env);
  await runQueryBench({
    short: flags.short,
    responses,
    surveys: flags.surveys !== undefined ? positiveInt('surveys', flags.surveys, DEFAULTS.surveys) : undefined,
    days: flags.days !== undefined ? positiveInt('days', flags.days, DEFAULTS.days) : undefined,
    iterations: flags.iterations !== undefined ? positiveInt('iterations', flags.iterations, DEFAULTS.iterations) : undefined,
    repeats: flags.repeats !== undefined ? positiveInt('repeats', flags.repeats, DEFAULTS.repeats) : undefined,
    only: flags.only,
    optimize: flags['no-optimize'] ? false : undefined,
    mergeWaitSeconds: flags['merge-wait'] !== undefined ? positiveInt('merge-wait', flags['merge-wait'], DEFAULTS.mergeWaitSeconds, 0) : undefined,
    dataDir: flags['data-dir'],
    env,
    cpuProf: flags['cpu-prof'],
    write: flags['no-write'] ? false : undefined,
    growth: flags.growth,
    writeRequests: flags['write-requests'] !== undefined ? positiveInt('write-requests', flags['write-requests'], DEFAULTS.writeRequests, 0) : undefined,
    writeClients: flags['write-clients'] !== undefined ? positiveInt('write-clients', flags['write-clients'], DEFAULTS.writeClients) : undefined,
    writeRounds: flags['write-rounds'] !== undefined ? positiveInt('write-rounds', flags['write-rounds'], DEFAULTS.writeRounds) : undefined,
  });
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`query bench failed: ${err?.stack ?? err}\n`);
      process.exit(1);
    },
  );
}
