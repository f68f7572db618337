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
 * Where an INSERT's engine time goes, per target: each materialized view of the INSERTs
 * (system.query_views_log: runs, duration, rows written, CPU) and each table's new parts and
 * merges (system.part_log: parts, rows, duration, CPU), in a time window.
 */
export interface EngineCostRow {
  /** `view <name>`, `insert <table>` (new parts) or `merge <table>`. */
  what: string;
  count: number;
  rows: number;
  duration_ms_avg: number;
  cpu_s: number;
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
              sum(ProfileEvents['OSCPUVirtualTimeMicroseconds']) / 1e6 AS cpu_s
       FROM system.part_log
       WHERE event_time_microseconds BETWEEN fromUnixTimestamp64Micro({from_us:Int64}) AND fromUnixTimestamp64Micro({to_us:Int64})
         AND database = currentDatabase() AND event_type IN ('NewPart', 'MergeParts')
       GROUP BY event_type, table ORDER BY event_type, table`,
    ).catch(() => []);
    return [...views, ...parts].map((r) => ({
      what: String(r.what),
      count: Number(r.count),
      rows: Number(r.rows),
      duration_ms_avg: Math.round(Number(r.duration_ms_avg) * 10) / 10,
      cpu_s: Math.round(Number(r.cpu_s) * 100) / 100,
    }));
  } catch {
    return [];
  }
}
