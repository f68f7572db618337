/**
 * Ingest bench: how many events per second POST /1.0/event takes on this machine, with what ack
 * latency and CPU, and how that compares with inserting the same rows straight into ClickHouse.
 * See bench/ingest/README.md for the method and how to read the numbers.
 *
 *   node --import tsx bench/ingest/run.ts [--seconds 15] [--concurrency 64] [--rate 500] ...
 */
import { randomUUID } from 'node:crypto';
import { readdirSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildClient } from '../../src/clickhouse/connection.ts';
import { PROFILE_LOGS_CONFIG_XML } from '../../src/clickhouse/engine.ts';
import { loadConfig } from '../../src/config.ts';
import { envPairs, parseFlags, positiveInt, positiveNumber } from '../lib/args.ts';
import { monotonicMicros, summarizeProfile, type ProfileSummary } from '../lib/cpuprofile.ts';
import { machineInfo } from '../lib/machine.ts';
import { cpuDelta, cpuSnapshot, threadCpu, threadCpuDelta, type CpuSnapshot } from '../lib/proc.ts';
import { waitForMerges } from '../lib/merges.ts';
import { engineCosts, insertLog, insertProfile, type EngineCostRow, type InsertLogSummary } from '../lib/query-log.ts';
import { RESULTS_DIR, writeResult } from '../lib/results.ts';
import { attachService, startService, type BenchTarget } from '../lib/service.ts';
import { round } from '../lib/stats.ts';
import { printTable, type Cell } from '../lib/table.ts';
import { directInsert, prepareInserts, type DirectResult } from './direct.ts';
import { writeIngestChart } from './chart.ts';
import { generatePool, MessageIds } from './events.ts';
import { closedLoop, openLoop, type LoadResult } from './load.ts';

// The 100-row direct phase goes last: its thousands of small parts leave a merge backlog.
// `retry`: the closed loop again, each client resending a share of its acknowledged requests.
// `closed-noid`: the closed loop with the same events without message_id: the price of exactly-once.
export const PHASES = ['closed', 'closed-noid', 'retry', 'open', 'direct-large', 'direct'] as const;
export type Phase = (typeof PHASES)[number];
const isServicePhase = (p: Phase) => p === 'closed' || p === 'closed-noid' || p === 'retry' || p === 'open';

export interface IngestOptions {
  /** Measured seconds per phase (after warm-up). */
  seconds: number;
  warmupSeconds: number;
  /** Unmeasured closed-loop load right after start-up: JIT, caches and engine warm before phase 1. */
  serviceWarmupSeconds: number;
  /** Organizations (one events token each) the requests are spread over. */
  tokens: number;
  /** Closed-loop clients, and INSERTs in flight for the same-batch-size limit. */
  concurrency: number;
  /** Retry phase: share of acknowledged requests resent with the same message_ids. */
  resendShare: number;
  /** Open-loop arrival rates, requests/s (x batchSize events): one open-loop phase per rate. */
  rates: number[];
  openSockets: number;
  /** Open loop: requests outstanding at most, in seconds of arrivals; beyond, they are dropped. */
  openBacklogSeconds: number;
  /** Rows per INSERT and INSERTs in flight of the large-batch limit (default: the service's
   * INGEST_MAX_CONCURRENT_FLUSHES, so the limit gets the parallelism the service is allowed). */
  largeBatch: number;
  largeConcurrency?: number;
  batchSize: number;
  pool: number;
  /** Known users per organization in the workload (the rest of the events are anonymous). */
  users: number;
  phases: Phase[];
  /** Use a running service instead of starting one. */
  url?: string;
  dataDir?: string;
  pid?: number;
  /** Extra environment for the started service (INGEST_BATCH_ROWS=..., ...). */
  env: Record<string, string>;
  /** Start the service of another checkout (before/after comparisons); its schema may not take the direct phases' rows. */
  repo?: string;
  /** Open loop at this share of the closed loop's events/s measured earlier in the run (instead of `rates`). */
  openShare?: number;
  /** Extra node flags for the started service (e.g. --max-semi-space-size=64). */
  nodeArgs: string[];
  cpuProf: boolean;
  /**
   * Start the engine with system.query_views_log and system.part_log (DATA_DIR/engine.d, any
   * checkout), and read each phase's engine costs after its merges have settled: the per-view,
   * per-table and per-merge split of the engine's CPU. Off by default (the logs cost a little).
   */
  engineLogs: boolean;
  keepData: boolean;
  /** Write the JSON result (default true). */
  write: boolean;
  log: (line: string) => void;
}

export const DEFAULTS: IngestOptions = {
  seconds: 15,
  warmupSeconds: 2,
  serviceWarmupSeconds: 5,
  tokens: 16,
  concurrency: 64,
  resendShare: 0.2,
  rates: [500],
  openSockets: 256,
  openBacklogSeconds: 2,
  largeBatch: 10_000,
  batchSize: 100,
  pool: 64,
  users: 20_000,
  phases: [...PHASES],
  env: {},
  nodeArgs: [],
  cpuProf: false,
  engineLogs: false,
  keepData: false,
  write: true,
  log: (line) => process.stderr.write(`[ingest] ${line}\n`),
};

/** The targets on a 2-core machine with the embedded engine. */
export const TARGETS = { eventsPerSecond: 50_000, p99Ms: 250, ratioToLimit: 0.5 };

interface PhaseCommon {
  phase: Phase;
  org_ids: string[];
  cpu_s: CpuSnapshot;
  /** CPU microseconds per stored event, by process: what bounds events/s on a given number of cores. */
  cpu_us_per_event: { service?: number; engine?: number; bench: number };
  /** Rows of the organization in `events` after the phase, and what was acknowledged (each distinct request once). */
  stored_rows: number;
  expected_rows: number;
  rows_match: boolean;
  engine_inserts: InsertLogSummary | undefined;
  /** The engine's time per view and per table (new parts, merges) during the phase. */
  engine_costs: EngineCostRow[];
  /** The INSERTs' ProfileEvents summed (system.query_log), for comparing two runs counter by counter. */
  engine_insert_profile: Record<string, number>;
  /**
   * The engine's CPU during the phase by thread name (/proc): MergeMutate is the background merges,
   * HTTPHandler the INSERTs and every other statement; the embedded engine keeps no part_log.
   */
  engine_threads: { name: string; cpu_s: number; system_s: number }[];
}
export type ServicePhaseResult = PhaseCommon & { load: LoadResult; rows_per_insert: number | undefined; unanswered_requests: number };
export type DirectPhaseResult = PhaseCommon & { direct: DirectResult };
export type PhaseResult = ServicePhaseResult | DirectPhaseResult;

export interface IngestResult {
  bench: 'ingest';
  started_at: string;
  machine: Awaited<ReturnType<typeof machineInfo>>;
  settings: {
    options: Omit<IngestOptions, 'log'>;
    service_env: Record<string, string>;
    service_node_args: string[];
    storage: string;
    workload: { events_per_batch: number; mean_body_bytes: number; distinct_batches: number; type_mix_pct: Record<string, number> };
  };
  phases: PhaseResult[];
  ratios: { closed_vs_direct_same_batch?: number; closed_vs_direct_large_batch?: number; closed_vs_closed_noid?: number };
  targets: Array<{ target: string; value: number | undefined; ok: boolean | undefined }>;
  profile?: { file: string; summary: ProfileSummary };
  result_file?: string;
}

async function countRows(target: BenchTarget, orgIds: string[]): Promise<number> {
  const rs = await target.client.query({
    query: 'SELECT count() AS n FROM events WHERE org_id IN {orgs:Array(UUID)}',
    query_params: { orgs: orgIds },
    format: 'JSONEachRow',
  });
  return Number(((await rs.json()) as Array<{ n: string | number }>)[0].n);
}

const hasServicePhase = (phases: Phase[]) => phases.some(isServicePhase);

/** INSERTs in flight the service may use (INGEST_MAX_CONCURRENT_FLUSHES), read as the service reads it. */
function serviceFlushes(env: Record<string, string>): number {
  return loadConfig({ ...process.env, ...env }).ingest.maxConcurrentFlushes;
}

function perEvent(cpu: CpuSnapshot, events: number): PhaseCommon['cpu_us_per_event'] {
  const us = (sec: number | undefined) => (sec === undefined || events === 0 ? undefined : round((sec * 1e6) / events, 1));
  return { service: us(cpu.service), engine: us(cpu.engine), bench: us(cpu.bench) ?? 0 };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits (up to 20 s) until the engine runs no merge, so a phase does not pay for the previous one's. */
async function settle(target: BenchTarget): Promise<void> {
  await sleep(500);
  // system.merges not readable (a restricted CLICKHOUSE_USER): just go on.
  await waitForMerges(target.client, { timeoutMs: 20_000, pollMs: 250 }).catch(() => undefined);
}

/**
 * The engine's costs of a phase by view, table and statement. With --engine-logs, read after the
 * phase's merges have settled (so a table's merges include those the phase's parts started after
 * its window), over [t0, settled]; else over the window.
 */
async function phaseCosts(target: BenchTarget, opts: IngestOptions, t0: number, t1: number): Promise<EngineCostRow[]> {
  if (!opts.engineLogs) return engineCosts(target.client, t0, t1);
  await settle(target);
  return engineCosts(target.client, t0, Date.now());
}

export async function runIngestBench(partial: Partial<IngestOptions> = {}): Promise<IngestResult> {
  const opts: IngestOptions = { ...DEFAULTS, ...partial, env: { ...DEFAULTS.env, ...(partial.env ?? {}) } };
  const log = opts.log;
  const startedAt = new Date();

  const largeConcurrency = opts.largeConcurrency ?? serviceFlushes(opts.env);
  const load1 = os.loadavg()[0];
  if (load1 > 0.5) log(`note: load average ${load1.toFixed(2)} before the start: other processes share the CPUs (see "other CPU s")`);
  log(`generating ${opts.pool} batches of ${opts.batchSize} events`);
  const pool = generatePool(opts.pool, { batchSize: opts.batchSize, users: opts.users });
  const ids = new MessageIds(pool.bodies);
  const plain = opts.phases.includes('closed-noid') ? generatePool(opts.pool, { batchSize: opts.batchSize, users: opts.users, messageIds: false }) : pool;

  const profileDir = opts.cpuProf ? join(RESULTS_DIR, `profile-${startedAt.toISOString().replace(/[:.]/g, '-')}`) : undefined;
  const target = opts.url
    ? await attachService(opts.url, { dataDir: opts.dataDir, pid: opts.pid })
    : await startService({ env: opts.env, nodeArgs: opts.nodeArgs, cpuProfDir: profileDir, keepData: opts.keepData, repo: opts.repo, engineConfigXml: opts.engineLogs ? PROFILE_LOGS_CONFIG_XML : undefined, log });

  const phases: PhaseResult[] = [];
  const serviceWindows: Array<[number, number]> = [];
  let profile: IngestResult['profile'];
  let machine: IngestResult['machine'];
  try {
    machine = await machineInfo(target.client);
    const pids = () => ({ service: target.servicePid, engine: target.enginePid() });
    const table = `${target.config.clickhouse.database}.events`;

    if (opts.serviceWarmupSeconds > 0 && hasServicePhase(opts.phases)) {
      log(`warming the service up: ${opts.serviceWarmupSeconds} s of closed-loop load, not measured`);
      const tokens = [await target.mintEventsToken(randomUUID())];
      await closedLoop(
        { url: target.url, tokens, bodies: pool.bodies, ids },
        { concurrency: Math.min(opts.concurrency, 16), seconds: opts.serviceWarmupSeconds, warmupSeconds: 0 },
      );
    }

    // One open-loop phase per rate of the sweep.
    const plan = opts.phases.flatMap((phase): Array<{ phase: Phase; rate: number }> =>
      phase === 'open' ? opts.rates.map((rate) => ({ phase, rate })) : [{ phase, rate: 0 }],
    );
    for (const step of plan) {
      const { phase } = step;
      let rate = step.rate;
      const closedBefore = phases.find((p): p is ServicePhaseResult => p.phase === 'closed');
      if (phase === 'open' && opts.openShare && closedBefore) rate = Math.max(1, Math.round((closedBefore.load.events_per_s * opts.openShare) / opts.batchSize));
      const orgIds = Array.from({ length: isServicePhase(phase) ? opts.tokens : 1 }, () => randomUUID());
      await settle(target); // phases start alike: the previous phase's merges are done
      const large = phase === 'direct-large';
      // Built before the CPU snapshot: what the direct phases measure is the INSERTs.
      const prepared = phase.startsWith('direct') ? prepareInserts(pool.batches, orgIds[0], large ? opts.largeBatch : opts.batchSize) : [];
      const before = cpuSnapshot(pids());
      const threadsBefore = threadCpu(pids().engine);
      const t0 = Date.now();
      if (isServicePhase(phase)) {
        const tokens = await Promise.all(orgIds.map((org) => target.mintEventsToken(org)));
        const fromUs = monotonicMicros();
        const load = phase === 'closed-noid' ? { url: target.url, tokens, bodies: plain.bodies } : { url: target.url, tokens, bodies: pool.bodies, ids };
        const resendShare = phase === 'retry' ? opts.resendShare : 0;
        log(
          phase !== 'open'
            ? `closed loop${phase === 'closed-noid' ? ' without message_id' : ''}: ${opts.concurrency} clients over ${opts.tokens} tokens, ${opts.warmupSeconds}+${opts.seconds} s` +
                (resendShare ? `, each resending ${Math.round(resendShare * 100)} % of its acknowledged requests` : '')
            : `open loop: ${rate} requests/s (${rate * opts.batchSize} events/s) over ${opts.tokens} tokens, ${opts.warmupSeconds}+${opts.seconds} s`,
        );
        const res =
          phase !== 'open'
            ? await closedLoop(load, { concurrency: opts.concurrency, seconds: opts.seconds, warmupSeconds: opts.warmupSeconds, resendShare })
            : await openLoop(load, { rate, seconds: opts.seconds, warmupSeconds: opts.warmupSeconds, maxSockets: opts.openSockets, maxBacklogSeconds: opts.openBacklogSeconds });
        const cpu = cpuDelta(before, cpuSnapshot(pids()));
        const threads = threadCpuDelta(threadsBefore, threadCpu(pids().engine));
        serviceWindows.push([fromUs, monotonicMicros()]);
        const t1 = Date.now();
        const stored = await countRows(target, orgIds);
        const inserts = await insertLog(target.client, table, t0, t1);
        phases.push({
          phase,
          org_ids: orgIds,
          cpu_s: cpu,
          cpu_us_per_event: perEvent(cpu, res.distinct_acked_events_total),
          stored_rows: stored,
          // Each distinct request once: a resent one (same message_ids) must not be stored again.
          expected_rows: res.distinct_acked_events_total,
          // Exact: a request with no answer (network error) may or may not have been stored, so
          // it is reported beside the check (unanswered_requests) rather than guessed at.
          rows_match: stored === res.distinct_acked_events_total,
          unanswered_requests: res.unknown_requests_total,
          engine_inserts: inserts,
          engine_costs: await phaseCosts(target, opts, t0, t1),
          engine_insert_profile: await insertProfile(target.client, table, t0, t1),
          engine_threads: threads,
          load: res,
          rows_per_insert: inserts?.inserts ? res.distinct_acked_events_total / inserts.inserts : undefined,
        });
      } else {
        const rowsPerInsert = large ? opts.largeBatch : opts.batchSize;
        const concurrency = large ? largeConcurrency : opts.concurrency;
        log(`direct INSERT limit: ${rowsPerInsert} rows per INSERT, ${concurrency} in flight, ${opts.warmupSeconds}+${opts.seconds} s`);
        // A client with a socket per INSERT in flight (the shared one stops at 64).
        const client = buildClient(target.endpoint, target.config, target.config.clickhouse.database, concurrency);
        const res = await directInsert(client, prepared, { concurrency, seconds: opts.seconds, warmupSeconds: opts.warmupSeconds }).finally(() => client.close());
        const cpu = cpuDelta(before, cpuSnapshot(pids()));
        const threads = threadCpuDelta(threadsBefore, threadCpu(pids().engine));
        const t1 = Date.now();
        const stored = await countRows(target, orgIds);
        phases.push({
          phase,
          org_ids: orgIds,
          cpu_s: cpu,
          cpu_us_per_event: perEvent(cpu, res.inserted_rows_total),
          stored_rows: stored,
          expected_rows: res.inserted_rows_total,
          rows_match: stored === res.inserted_rows_total,
          engine_inserts: await insertLog(target.client, table, t0, t1),
          engine_costs: await phaseCosts(target, opts, t0, t1),
          engine_insert_profile: await insertProfile(target.client, table, t0, t1),
          engine_threads: threads,
          direct: res,
        });
      }
      const last = phases[phases.length - 1];
      log(`  ${Math.round(eventsPerSecond(last)).toLocaleString('en-US')} events/s; stored ${last.stored_rows} / expected ${last.expected_rows}`);
      const sample = 'load' in last ? last.load.failure_sample : last.direct.failure_sample;
      if (sample) log(`  first failure: ${sample}`);
      // What the service logged (warnings and errors) explains a mismatch better than the counts.
      if (!last.rows_match) log(`  stored != acknowledged; the service's last log lines:\n${target.stderrTail()}`);
    }
  } finally {
    await target.stop();
  }

  if (profileDir) {
    const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
    // Only the service phases: start-up and the direct phases (service idle) are left out.
    if (file) profile = { file: join(profileDir, file), summary: summarizeProfile(join(profileDir, file), 30, serviceWindows) };
  }

  const find = (p: Phase) => phases.find((x) => x.phase === p);
  const ratio = (a: PhaseResult | undefined, b: PhaseResult | undefined) =>
    a && b && eventsPerSecond(b) > 0 ? round(eventsPerSecond(a) / eventsPerSecond(b), 2) : undefined;
  const ratios = {
    closed_vs_direct_same_batch: ratio(find('closed'), find('direct')),
    closed_vs_direct_large_batch: ratio(find('closed'), find('direct-large')),
    closed_vs_closed_noid: ratio(find('closed'), find('closed-noid')),
  };

  const { log: _log, ...settingsOptions } = opts;
  const result: IngestResult = {
    bench: 'ingest',
    started_at: startedAt.toISOString(),
    machine: machine!,
    settings: {
      options: { ...settingsOptions, largeConcurrency },
      service_env: target.serviceEnv,
      service_node_args: target.serviceNodeArgs,
      storage: target.storage,
      workload: { events_per_batch: pool.eventsPerBatch, mean_body_bytes: pool.meanBodyBytes, distinct_batches: opts.pool, type_mix_pct: pool.typeMix },
    },
    phases,
    ratios,
    targets: evaluateTargets(phases, ratios, opts),
    profile,
  };
  report(result);
  if (opts.write) {
    result.result_file = writeResult('ingest', result);
    const chart = writeIngestChart(result, result.result_file.replace(/\.json$/, '.svg'));
    process.stdout.write(`\nresult: ${result.result_file}\nchart:  ${chart}\n`);
  }
  return result;
}

function eventsPerSecond(p: PhaseResult): number {
  return 'load' in p ? p.load.events_per_s : p.direct.events_per_s;
}

function evaluateTargets(phases: PhaseResult[], ratios: IngestResult['ratios'], opts: IngestOptions): IngestResult['targets'] {
  const out: IngestResult['targets'] = [];
  const opens = phases.filter((p): p is ServicePhaseResult => p.phase === 'open');
  const closed = phases.find((p): p is ServicePhaseResult => p.phase === 'closed');
  const failures = (p: ServicePhaseResult) => Object.values(p.load.failures).reduce((a, b) => a + b, 0);
  // Latency is measured from each request's due time, so p99 within bounds already means the
  // service kept up with the arrivals; every request due in the window must have been acknowledged.
  const sustained = (p: ServicePhaseResult) =>
    failures(p) === 0 && p.load.latency_ms.count >= (p.load.due_requests ?? 0) && p.load.latency_ms.p99 <= TARGETS.p99Ms;
  // The target is judged on the open loop offering the target rate (or the closest above it).
  const atTarget = opens
    .filter((p) => (p.load.target_rate ?? 0) * opts.batchSize >= TARGETS.eventsPerSecond)
    .sort((a, b) => (a.load.target_rate ?? 0) - (b.load.target_rate ?? 0))[0];
  if (atTarget) {
    const offered = (atTarget.load.target_rate ?? 0) * opts.batchSize;
    out.push({
      target: `open loop offering ${offered.toLocaleString('en-US')} events/s: >= ${TARGETS.eventsPerSecond.toLocaleString('en-US')} events/s acknowledged, no errors`,
      value: round(atTarget.load.events_per_s, 0),
      ok: atTarget.load.events_per_s >= TARGETS.eventsPerSecond * 0.99 && failures(atTarget) === 0,
    });
    out.push({ target: `  ... with p99 ack latency <= ${TARGETS.p99Ms} ms`, value: round(atTarget.load.latency_ms.p99, 1), ok: atTarget.load.latency_ms.p99 <= TARGETS.p99Ms });
  }
  if (opens.length > 1 || (opens.length === 1 && !atTarget)) {
    const best = opens.filter(sustained).sort((a, b) => (b.load.target_rate ?? 0) - (a.load.target_rate ?? 0))[0];
    const offered = best ? (best.load.target_rate ?? 0) * opts.batchSize : 0;
    out.push({
      target: `highest open-loop rate of this run sustained with p99 <= ${TARGETS.p99Ms} ms (events/s offered)`,
      value: offered,
      ok: offered >= TARGETS.eventsPerSecond,
    });
  }
  if (closed) {
    out.push({ target: `closed loop (max throughput) >= ${TARGETS.eventsPerSecond.toLocaleString('en-US')} events/s`, value: round(closed.load.events_per_s, 0), ok: closed.load.events_per_s >= TARGETS.eventsPerSecond });
  }
  if (closed && closed.cpu_us_per_event.service !== undefined && closed.cpu_us_per_event.engine !== undefined) {
    const big = (closed.rows_per_insert ?? 0) >= 3000;
    out.push({ target: `closed loop: service <= 12 µs of CPU per event${big ? '' : ' (INSERTs under 3,000 rows: not judged)'}`, value: closed.cpu_us_per_event.service, ok: big ? closed.cpu_us_per_event.service <= 12 : undefined });
    out.push({ target: `closed loop: engine <= 20 µs of CPU per event at >= 3,000 rows per INSERT`, value: closed.cpu_us_per_event.engine, ok: big ? closed.cpu_us_per_event.engine <= 20 : undefined });
  }
  if (opts.openShare && closed) {
    for (const open of opens) {
      out.push({ target: `open loop at ${opts.openShare} x the closed loop's rate: p99 <= ${TARGETS.p99Ms} ms, no errors`, value: round(open.load.latency_ms.p99, 1), ok: open.load.latency_ms.p99 <= TARGETS.p99Ms && failures(open) === 0 });
    }
  }
  if (ratios.closed_vs_closed_noid !== undefined) {
    out.push({ target: 'closed loop with message_id on every event / without (price of exactly-once) >= 0.9', value: ratios.closed_vs_closed_noid, ok: ratios.closed_vs_closed_noid >= 0.9 });
  }
  if (ratios.closed_vs_direct_large_batch !== undefined) {
    out.push({ target: `service / large-batch limit (${opts.largeBatch}-row INSERTs) >= 0.5`, value: ratios.closed_vs_direct_large_batch, ok: ratios.closed_vs_direct_large_batch >= 0.5 });
  }
  if (ratios.closed_vs_direct_same_batch !== undefined) {
    out.push({ target: `service / direct-insert limit (same ${opts.batchSize}-row batches) >= ${TARGETS.ratioToLimit}`, value: ratios.closed_vs_direct_same_batch, ok: ratios.closed_vs_direct_same_batch >= TARGETS.ratioToLimit });
  }
  for (const p of phases) {
    const label = 'load' in p && p.load.mode === 'open' ? `open ${p.load.target_rate} req/s` : p.phase;
    out.push({ target: `${label}: stored rows = distinct acknowledged rows (no loss, no duplicate)`, value: p.stored_rows, ok: p.rows_match });
  }
  const retry = phases.find((p): p is ServicePhaseResult => p.phase === 'retry');
  if (retry) {
    const resentEvents = retry.load.resent_requests_total * opts.batchSize;
    out.push({ target: `retry: ${retry.load.resent_requests_total} requests resent; duplicates answered = resent events (${resentEvents})`, value: retry.load.duplicates_reported_total, ok: retry.load.duplicates_reported_total === resentEvents });
  }
  return out;
}

function report(r: IngestResult): void {
  const rows: Cell[][] = r.phases.map((p) => {
    const common = [
      p.cpu_s.wall,
      p.cpu_s.service,
      p.cpu_s.engine,
      p.cpu_s.bench,
      p.cpu_s.other,
      'load' in p ? p.cpu_us_per_event.service : undefined,
      p.cpu_us_per_event.engine,
      p.cpu_us_per_event.bench,
      (p.rows_match ? 'yes' : `NO (${p.stored_rows}/${p.expected_rows})`) +
        ('unanswered_requests' in p && p.unanswered_requests > 0 ? ` (${p.unanswered_requests} unanswered)` : ''),
    ];
    if ('load' in p) {
      const l = p.load;
      const errors = Object.entries(l.failures).map(([k, v]) => `${k}x${v}`).join(' ') || '0';
      const label =
        l.mode === 'open'
          ? `service open loop ${l.target_rate} req/s`
          : p.phase === 'retry'
            ? `service closed loop, ${l.resent_requests_total} resent`
            : p.phase === 'closed-noid'
              ? 'service closed loop, no message_id'
              : 'service closed loop';
      return [label, l.events_per_s, l.requests_per_s, p.rows_per_insert, l.latency_ms.p50, l.latency_ms.p95, l.latency_ms.p99, l.latency_ms.max, errors, ...common];
    }
    const d = p.direct;
    const label = `direct INSERT ${d.rows_per_insert} rows x${d.concurrency}`;
    return [label, d.events_per_s, d.inserts_per_s, d.rows_per_insert, d.latency_ms.p50, d.latency_ms.p95, d.latency_ms.p99, d.latency_ms.max, String(d.failures), ...common];
  });
  const s = r.settings;
  printTable(
    `Ingest: ${r.machine.cpus} CPUs (${r.machine.cpu_model}), ${s.storage} ClickHouse ${r.machine.clickhouse ?? '?'}, ` +
      `${s.workload.events_per_batch} events/request (~${Math.round(s.workload.mean_body_bytes / 1024)} KB), ${s.options.seconds} s per phase`,
    ['phase', 'events/s', 'req/s', 'rows/INSERT', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'errors', 'wall s', 'svc CPU s', 'engine CPU s', 'bench CPU s', 'other CPU s', 'svc µs/ev', 'engine µs/ev', 'bench µs/ev', 'stored=acked'],
    rows,
  );
  process.stdout.write(
    `\nservice / limit (same ${s.workload.events_per_batch}-row batches): ${r.ratios.closed_vs_direct_same_batch ?? '-'}` +
      `    service / limit (large batches): ${r.ratios.closed_vs_direct_large_batch ?? '-'}` +
      `    with / without message_id: ${r.ratios.closed_vs_closed_noid ?? '-'}\n`,
  );
  const opens = r.phases.filter((p): p is ServicePhaseResult => 'load' in p && p.load.mode === 'open');
  if (opens.length) {
    // What became of every request due in the window: acknowledged (and when), refused fast
    // (503 + Retry-After: nothing stored), not sent (the client's backlog was full), or other.
    printTable(
      'Open loop: the requests due in the measured window',
      ['offered req/s', 'due', 'accepted (200)', '503', 'dropped', 'other errors', 'accepted p50 ms', 'accepted p99 ms', '503 p99 ms', 'stored=acked', 'events acknowledged per second'],
      opens.map((p) => {
        const l = p.load;
        const { 503: refused = 0, dropped = 0, ...rest } = l.failures;
        const other = Object.values(rest).reduce((a, b) => a + b, 0);
        return [l.target_rate, l.due_requests, l.answered_latency_ms.count, refused, dropped, other, l.answered_latency_ms.p50, l.answered_latency_ms.p99, l.refused_latency_ms.p99, p.rows_match ? 'yes' : `NO (${p.stored_rows}/${p.expected_rows})`, l.per_second_events.join(' ')];
      }),
    );
  }
  printTable('Targets', ['target', 'value', 'met'], r.targets.map((t) => [t.target, t.value, t.ok === undefined ? 'n/a' : t.ok ? 'yes' : 'NO']));
  const inserts = r.phases.filter((p) => p.engine_inserts);
  if (inserts.length) {
    printTable(
      'Engine (system.query_log, INSERTs into events during each phase)',
      ['phase', 'INSERTs', 'failed', 'written rows (with MVs)', 'p50 ms', 'p99 ms', 'max ms', 'INSERTs in progress (avg)', 'INSERT CPU s', 'engine CPU s'],
      inserts.map((p) => {
        const e = p.engine_inserts!;
        return [p.phase, e.inserts, e.failed, e.written_rows, e.duration_ms_p50, e.duration_ms_p99, e.duration_ms_max, e.busy_ratio, e.insert_cpu_s, p.cpu_s.engine];
      }),
    );
  }
  const costs = r.phases.filter((p) => p.engine_costs.length > 0);
  if (costs.length) {
    const perEv = (p: PhaseResult, v: number | undefined, scale = 1) => (p.expected_rows && v !== undefined ? round((v * scale) / p.expected_rows, 2) : undefined);
    printTable(
      'Engine time per view, table and statement (system.query_views_log, system.part_log, system.query_log by normalized text; µs per event stored in the phase; ' +
        'merges: rows read per event stored (how many times a row is merged), and the projections\' stage, skip indexes and statistics in µs per event)',
      ['phase', 'what', 'count', 'rows', 'avg ms', 'CPU s', 'CPU µs/ev', 'merged rows/ev', 'projections µs/ev', 'skip idx µs/ev', 'statistics µs/ev'],
      costs.flatMap((p) =>
        p.engine_costs.map((c) => [
          p.phase, c.what, c.count, c.rows, c.duration_ms_avg, c.cpu_s, perEv(p, c.cpu_s, 1e6),
          perEv(p, c.merged_rows), perEv(p, c.projection_ms, 1e3), perEv(p, c.skip_index_ms, 1e3), perEv(p, c.statistics_ms, 1e3),
        ]),
      ),
    );
    const keys = [
      ['OSCPUVirtualTimeMicroseconds', 'CPU'],
      ['MergeTreeDataWriterSortingBlocksMicroseconds', 'sort'],
      ['MergeTreeDataWriterProjectionsCalculationMicroseconds', 'projections'],
      ['MergeTreeDataProjectionWriterSortingBlocksMicroseconds', 'projections sort'],
      ['MergeTreeDataWriterSkipIndicesCalculationMicroseconds', 'skip idx'],
      ['MergeTreeDataWriterStatisticsCalculationMicroseconds', 'statistics'],
    ] as const;
    printTable(
      'The INSERTs into events by step (system.query_log ProfileEvents, views included; µs per event stored)',
      ['phase', ...keys.map(([, h]) => h), 'rows written', 'projection rows', 'compressed bytes/ev'],
      costs.map((p) => {
        const e = p.engine_insert_profile;
        return [
          p.phase, ...keys.map(([k]) => perEv(p, e[k] ?? 0)), e.MergeTreeDataWriterRows, e.MergeTreeDataProjectionWriterRows,
          perEv(p, (e.MergeTreeDataWriterCompressedBytes ?? 0) + (e.MergeTreeDataProjectionWriterCompressedBytes ?? 0)),
        ];
      }),
    );
  }
  const threaded = r.phases.filter((p) => p.engine_threads?.length);
  if (threaded.length) {
    printTable(
      'Engine CPU by thread (/proc/<engine>/task; MergeMutate: background merges, HTTPHandler: the INSERTs and every statement; µs per event stored in the phase)',
      ['phase', 'threads', 'CPU s', 'of which system', 'CPU µs/ev'],
      threaded.flatMap((p) =>
        p.engine_threads.filter((t) => t.cpu_s >= 0.05).map((t) => [p.phase, t.name, round(t.cpu_s), round(t.system_s), p.expected_rows ? round((t.cpu_s * 1e6) / p.expected_rows, 2) : undefined]),
      ),
    );
  }
  if (r.profile) {
    const ps = r.profile.summary;
    process.stdout.write(`\nService CPU profile ${r.profile.file} (service phases only): busy ${round((ps.total_ms - ps.idle_ms) / 1000)} s of ${round(ps.total_ms / 1000)} s\n`);
    printTable('Self time by area', ['area', 'ms', '% busy'], ps.by_area.slice(0, 15).map((a) => [a.area, a.ms, a.pct_busy]));
    printTable('Self time by function', ['function', 'ms', '% busy'], ps.top_self.slice(0, 20).map((a) => [a.fn, a.ms, a.pct_busy]));
    printTable('Inclusive time by function', ['function', 'ms', '% busy'], ps.top_inclusive.slice(0, 25).map((a) => [a.fn, a.ms, a.pct_busy]));
  }
}

const USAGE = `usage: node --import tsx bench/ingest/run.ts [flags]
  --seconds N             measured seconds per phase (default ${DEFAULTS.seconds}); --long = 60
  --warmup N              warm-up seconds before each phase's window (default ${DEFAULTS.warmupSeconds})
  --service-warmup N      unmeasured load right after the service starts (default ${DEFAULTS.serviceWarmupSeconds})
  --tokens N              organizations / events tokens the requests are spread over (default ${DEFAULTS.tokens})
  --concurrency N         closed-loop clients and direct INSERTs in flight (default ${DEFAULTS.concurrency})
  --resend-share X        retry phase: share of acknowledged requests resent with the same message_ids (default ${DEFAULTS.resendShare})
  --sweep                 open loop at 100,200,300,400,500 requests/s (10k..50k events/s): the sustainable rate
  --rate N[,N...]         open-loop arrival rate(s) in requests/s, one phase per rate (default ${DEFAULTS.rates[0]} = ${DEFAULTS.rates[0] * DEFAULTS.batchSize} events/s)
  --open-sockets N        open-loop client sockets (default ${DEFAULTS.openSockets})
  --open-backlog N        open loop: at most N seconds of arrivals outstanding; later ones are dropped
                          and count as errors with infinite latency (default ${DEFAULTS.openBacklogSeconds})
  --large-batch N         rows per INSERT of the large-batch limit (default ${DEFAULTS.largeBatch})
  --large-concurrency N   its INSERTs in flight (default: the service's INGEST_MAX_CONCURRENT_FLUSHES, 1)
  --batch-size N          events per request, 1..100 (default ${DEFAULTS.batchSize})
  --pool N                distinct pre-serialized batches (default ${DEFAULTS.pool})
  --users N               known users per organization (default ${DEFAULTS.users}); every phase's organizations are new,
                          so each user's first events in a phase get a dense number (a claims round in their flush)
  --phases LIST           comma list of ${PHASES.join(',')} (default all)
  --env KEY=VALUE         extra service environment, repeatable (e.g. INGEST_BATCH_DELAY_MS=5)
  --node-arg FLAG         extra node/V8 flag for the service, repeatable (e.g. --node-arg=--max-semi-space-size=64)
  --cpu-prof              V8 CPU profile of the service, summarized at the end
  --repo DIR              start the service of another checkout (before/after comparisons: same load generator)
  --open-share X          open loop at X times the closed loop's events/s of this run (e.g. 0.7), instead of --rate
  --url URL               bench a running service (needs --data-dir DIR or CLICKHOUSE_URL; --pid PID for its CPU)
  --engine-logs           start the engine with query_views_log and part_log (DATA_DIR/engine.d; any --repo):
                          each phase's engine CPU by view, table, merge and INSERT step, read after its merges
  --keep-data             keep the temporary DATA_DIR
  --no-write              do not write bench/results/ingest-<time>.json
Environment: CLICKHOUSE_URL runs the service (and the limit) against that server instead of the embedded engine.`;

export function optionsFromArgv(argv: string[]): Partial<IngestOptions> {
  const f = parseFlags(
    argv,
    {
      seconds: { type: 'string' },
      long: { type: 'boolean' },
      sweep: { type: 'boolean' },
      warmup: { type: 'string' },
      'service-warmup': { type: 'string' },
      concurrency: { type: 'string' },
      'resend-share': { type: 'string' },
      tokens: { type: 'string' },
      rate: { type: 'string' },
      'open-sockets': { type: 'string' },
      'open-backlog': { type: 'string' },
      'large-batch': { type: 'string' },
      'large-concurrency': { type: 'string' },
      'batch-size': { type: 'string' },
      pool: { type: 'string' },
      users: { type: 'string' },
      phases: { type: 'string' },
      env: { type: 'string', multiple: true },
      'cpu-prof': { type: 'boolean' },
      'engine-logs': { type: 'boolean' },
      'node-arg': { type: 'string', multiple: true },
      url: { type: 'string' },
      repo: { type: 'string' },
      'open-share': { type: 'string' },
      'data-dir': { type: 'string' },
      pid: { type: 'string' },
      'keep-data': { type: 'boolean' },
      'no-write': { type: 'boolean' },
      help: { type: 'boolean' },
    },
    USAGE,
  );
  if (f.help) {
    process.stdout.write(USAGE + '\n');
    process.exit(0);
  }
  const phases = f.phases?.split(',').map((s) => s.trim()).filter(Boolean);
  const bad = phases?.filter((p) => !(PHASES as readonly string[]).includes(p));
  if (bad?.length) {
    process.stderr.write(`unknown phase(s) ${bad.join(', ')}; known: ${PHASES.join(', ')}\n`);
    process.exit(2);
  }
  const batchSize = positiveInt('batch-size', f['batch-size'], DEFAULTS.batchSize);
  if (batchSize > 100) {
    process.stderr.write('--batch-size must be 1..100 (the endpoint takes at most 100 events)\n');
    process.exit(2);
  }
  return {
    seconds: positiveInt('seconds', f.seconds, f.long ? 60 : DEFAULTS.seconds),
    warmupSeconds: positiveInt('warmup', f.warmup, DEFAULTS.warmupSeconds, 0),
    serviceWarmupSeconds: positiveInt('service-warmup', f['service-warmup'], DEFAULTS.serviceWarmupSeconds, 0),
    concurrency: positiveInt('concurrency', f.concurrency, DEFAULTS.concurrency),
    resendShare: Math.min(1, positiveNumber('resend-share', f['resend-share'], DEFAULTS.resendShare, 0.01)),
    tokens: positiveInt('tokens', f.tokens, DEFAULTS.tokens),
    rates: f.rate ? f.rate.split(',').map((r) => positiveInt('rate', r.trim(), 0)) : f.sweep ? [100, 200, 300, 400, 500] : DEFAULTS.rates,
    openSockets: positiveInt('open-sockets', f['open-sockets'], DEFAULTS.openSockets),
    openBacklogSeconds: positiveNumber('open-backlog', f['open-backlog'], DEFAULTS.openBacklogSeconds, 0.1),
    largeBatch: positiveInt('large-batch', f['large-batch'], DEFAULTS.largeBatch),
    largeConcurrency: f['large-concurrency'] ? positiveInt('large-concurrency', f['large-concurrency'], 2) : undefined,
    batchSize,
    pool: positiveInt('pool', f.pool, DEFAULTS.pool),
    users: positiveInt('users', f.users, DEFAULTS.users),
    phases: (phases as Phase[] | undefined) ?? DEFAULTS.phases,
    env: envPairs(f.env),
    nodeArgs: f['node-arg'] ?? [],
    cpuProf: Boolean(f['cpu-prof']),
    engineLogs: Boolean(f['engine-logs']),
    url: f.url,
    repo: f.repo,
    openShare: f['open-share'] ? positiveNumber('open-share', f['open-share'], 0.7, 0.01) : undefined,
    dataDir: f['data-dir'],
    pid: f.pid ? positiveInt('pid', f.pid, 0) : undefined,
    keepData: Boolean(f['keep-data']),
    write: !f['no-write'],
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runIngestBench(optionsFromArgv(process.argv.slice(2))).then(
    (r) => process.exit(r.targets.some((t) => t.target.includes('stored rows') && t.ok === false) ? 1 : 0),
    (err) => {
      process.stderr.write(`ingest bench failed: ${err?.stack ?? err}\n`);
      process.exit(1);
    },
  );
}
