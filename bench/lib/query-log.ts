import type { ClickHouseClient } from '@clickhouse/client';

/**
 * The engine's own view of the INSERTs into a table during a time window, from system.query_log:
 * how many there were (so the rows per INSERT of the group commit), how long the engine took for
 * each, and how many failed.
 */
export interface InsertLogSummary {
  inserts: number;
  failed: number;
  /** Rows written by the INSERTs, materialized views included. */
  written_rows: number;
  duration_ms_p50: number;
  duration_ms_p99: number;
  duration_ms_max: number;
  /** Sum of INSERT durations / window: the average number of INSERTs in progress. */
  busy_ratio: number;
  /** CPU seconds the engine spent in these INSERTs (materialized views included); the rest of its
   * CPU in the window went to background work, mostly merging the parts the INSERTs created. */
  insert_cpu_s: number;
}

export async function insertLog(client: ClickHouseClient, table: string, fromMs: number, toMs: number): Promise<InsertLogSummary | undefined> {
  try {
    await client.command({ query: 'SYSTEM FLUSH LOGS' });
    const rs = await client.query({
      query: `SELECT
                countIf(type = 'QueryFinish') AS inserts,
                countIf(type != 'QueryFinish') AS failed,
                sumIf(written_rows, type = 'QueryFinish') AS written_rows,
                quantileExactIf(0.5)(query_duration_ms, type = 'QueryFinish') AS duration_ms_p50,
                quantileExactIf(0.99)(query_duration_ms, type = 'QueryFinish') AS duration_ms_p99,
                maxIf(query_duration_ms, type = 'QueryFinish') AS duration_ms_max,
                sumIf(query_duration_ms, type = 'QueryFinish') / {window_ms:Float64} AS busy_ratio,
                sum(ProfileEvents['OSCPUVirtualTimeMicroseconds']) / 1e6 AS insert_cpu_s
              FROM system.query_log
              WHERE type IN ('QueryFinish', 'ExceptionWhileProcessing')
                AND query_kind = 'Insert'
                AND has(tables, {table:String})
                AND event_time_microseconds >= fromUnixTimestamp64Micro({from_us:Int64})
                AND event_time_microseconds <= fromUnixTimestamp64Micro({to_us:Int64})`,
      query_params: { table, from_us: Math.round(fromMs * 1000), to_us: Math.round(toMs * 1000), window_ms: Math.max(1, toMs - fromMs) },
      format: 'JSONEachRow',
    });
    const [row] = (await rs.json()) as Array<Record<string, number | string>>;
    if (!row) return undefined;
    return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)])) as unknown as InsertLogSummary;
  } catch {
    return undefined; // query_log disabled or not readable (e.g. a restricted CLICKHOUSE_USER)
  }
}

/**
 * The ProfileEvents of the INSERTs into a table in a time window, summed (system.query_log): what
 * the engine did in them (rows and bytes through each step, the CPU and wait counters), to compare
 * two runs' INSERTs counter by counter.
 */
export async function insertProfile(client: ClickHouseClient, table: string, fromMs: number, toMs: number): Promise<Record<string, number>> {
  try {
    const rs = await client.query({
      query: `SELECT k, sum(v) AS v FROM system.query_log ARRAY JOIN mapKeys(ProfileEvents) AS k, mapValues(ProfileEvents) AS v
              WHERE type = 'QueryFinish' AND query_kind = 'Insert' AND has(tables, {table:String})
                AND event_time_microseconds BETWEEN fromUnixTimestamp64Micro({from_us:Int64}) AND fromUnixTimestamp64Micro({to_us:Int64})
              GROUP BY k ORDER BY k`,
      query_params: { table, from_us: Math.round(fromMs * 1000), to_us: Math.round(toMs * 1000) },
      format: 'JSONEachRow',
    });
    return Object.fromEntries(((await rs.json()) as Array<{ k: string; v: string | number }>).map((r) => [r.k, Number(r.v)]));
  } catch {
    return {};
  }
}

/**
 * Where an INSERT's engine time goes, per target: each materialized view of the INSERTs
 * (system.query_views_log: runs, duration, rows written, CPU) and each table's new parts and
 * merges (system.part_log: parts, rows, duration, CPU), and each kind of statement (system.query_log,
 * by normalized text: count, rows, duration, CPU), in a time window.
 */
export interface EngineCostRow {
  /** `view <name>`, `insert <table>` (new parts), `merge <table>` or `query <kind> <text>` (the statements, by normalized text). */
  what: string;
  count: number;
  rows: number;
  duration_ms_avg: number;
  cpu_s: number;
  /** Merges (part_log): rows read from the merged parts (ProfileEvents MergedRows), and how the
   * merge's time split: projections' stage (ms, wall), skip indexes and column statistics (ms of
   * calculation). */
  merged_rows?: number;
  projection_ms?: number;
  skip_index_ms?: number;
  statistics_ms?: number;
}

export async function engineCosts(client: ClickHouseClient, fromMs: number, toMs: number): Promise<EngineCostRow[]> {
  const params = { from_us: Math.round(fromMs * 1000), to_us: Math.round(toMs * 1000) };
  const rows = async (query: string) => {
    const rs = await client.query({ query, query_params: params, format: 'JSONEachRow' });
    return (await rs.json()) as Array<Record<string, string | number>>;
  };
  try {
    await client.command({ query: 'SYSTEM FLUSH LOGS' });
    const views = await rows(
      `SELECT concat('view ', view_name) AS what, count() AS count, sum(written_rows) AS rows, avg(view_duration_ms) AS duration_ms_avg,
              sum(ProfileEvents['OSCPUVirtualTimeMicroseconds']) / 1e6 AS cpu_s
       FROM system.query_views_log
       WHERE event_time_microseconds BETWEEN fromUnixTimestamp64Micro({from_us:Int64}) AND fromUnixTimestamp64Micro({to_us:Int64})
         AND view_name LIKE concat(currentDatabase(), '.%')
       GROUP BY view_name ORDER BY cpu_s DESC`,
    ).catch(() => []);
    const parts = await rows(
      `SELECT concat(if(event_type = 'NewPart', 'insert ', 'merge '), table) AS what, count() AS count, sum(rows) AS rows, avg(duration_ms) AS duration_ms_avg,
              sum(ProfileEvents['OSCPUVirtualTimeMicroseconds']) / 1e6 AS cpu_s,
              sum(ProfileEvents['MergedRows']) AS merged_rows,
              sum(ProfileEvents['MergeProjectionStageTotalMilliseconds']) AS projection_ms,
              sum(ProfileEvents['MergeTreeDataWriterSkipIndicesCalculationMicroseconds']) / 1e3 AS skip_index_ms,
              sum(ProfileEvents['MergeTreeDataWriterStatisticsCalculationMicroseconds']) / 1e3 AS statistics_ms
       FROM system.part_log
       WHERE event_time_microseconds BETWEEN fromUnixTimestamp64Micro({from_us:Int64}) AND fromUnixTimestamp64Micro({to_us:Int64})
         AND database = currentDatabase() AND event_type IN ('NewPart', 'MergeParts')
       GROUP BY event_type, table ORDER BY event_type, table`,
    ).catch(() => []);
    // Every statement the service sent in the window, by normalized text: the round trips a flush
    // makes besides its INSERT (claims, user numbers) show here with their count and CPU.
    const queries = await rows(
      `SELECT concat('query ', any(query_kind), ' ', replaceRegexpAll(substring(any(query), 1, 70), '\\\\s+', ' ')) AS what, count() AS count,
              sum(written_rows + if(query_kind = 'Insert', 0, read_rows)) AS rows, avg(query_duration_ms) AS duration_ms_avg,
              sum(ProfileEvents['OSCPUVirtualTimeMicroseconds']) / 1e6 AS cpu_s
       FROM system.query_log
       WHERE type = 'QueryFinish' AND event_time_microseconds BETWEEN fromUnixTimestamp64Micro({from_us:Int64}) AND fromUnixTimestamp64Micro({to_us:Int64})
         AND current_database = currentDatabase() AND is_initial_query
       GROUP BY normalized_query_hash HAVING count > 1 ORDER BY cpu_s DESC LIMIT 12`,
    ).catch(() => []);
    return [...views, ...parts, ...queries].map((r) => ({
      what: String(r.what),
      count: Number(r.count),
      rows: Number(r.rows),
      duration_ms_avg: Math.round(Number(r.duration_ms_avg) * 10) / 10,
      // To the microsecond: the table's µs-an-event column divides this by the phase's events, and
      // a statement kind run on a few flushes costs well under the 0.01 s it was rounded to.
      cpu_s: Math.round(Number(r.cpu_s) * 1e6) / 1e6,
      ...(String(r.what).startsWith('merge ')
        ? {
            merged_rows: Number(r.merged_rows),
            projection_ms: Math.round(Number(r.projection_ms)),
            skip_index_ms: Math.round(Number(r.skip_index_ms)),
            statistics_ms: Math.round(Number(r.statistics_ms)),
          }
        : {}),
    }));
  } catch {
    return [];
  }
}
