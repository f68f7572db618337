import type { ClickHouseClient } from '@clickhouse/client';
import type { CompiledQuery } from '../../src/clickhouse/sql.ts';
import { settingsFor, type BenchCase } from './cases.ts';

/**
 * The engine's own figures for a case's queries. The embedded engine (clickhouse-local) keeps
 * system.query_log in memory and only creates it when started on a new directory (see
 * src/clickhouse/engine.ts); this bench reuses its directory, so the figures come from the X-ClickHouse-Summary header of one extra, untimed run of
 * each query with `wait_end_of_query=1` (so the header is sent after the query finished and holds
 * its final counts): rows and bytes read, the engine's elapsed time, peak memory.
 */
export interface EngineFigures {
  /** q0: the first query (the search's count, or the one query of a summary/aggregation); q1: the search page. */
  query: string;
  read_rows: number;
  read_mib: number;
  result_rows: number;
  memory_mib: number;
  elapsed_ms: number;
}

export async function engineFigures(client: ClickHouseClient, c: BenchCase, variant: number): Promise<EngineFigures[]> {
  const out: EngineFigures[] = [];
  await c.direct(async <T>(q: CompiledQuery) => {
    const rs = await client.query({
      query: q.sql,
      query_params: { ...q.params },
      format: 'JSONEachRow',
      clickhouse_settings: { ...settingsFor(c.endpoint), wait_end_of_query: 1 },
    });
    const rows = await rs.json<T>();
    const raw = rs.response_headers['x-clickhouse-summary'];
    const s = JSON.parse(Array.isArray(raw) ? raw[0] : (raw ?? '{}')) as Record<string, string>;
    const n = (k: string) => Number(s[k] ?? NaN);
    out.push({
      query: `q${out.length}`,
      read_rows: n('read_rows'),
      read_mib: Math.round((n('read_bytes') / 2 ** 20) * 10) / 10,
      result_rows: n('result_rows'),
      memory_mib: Math.round((n('memory_usage') / 2 ** 20) * 10) / 10,
      elapsed_ms: Math.round(n('elapsed_ns') / 1e5) / 10,
    });
    return rows;
  }, variant);
  return out;
}
