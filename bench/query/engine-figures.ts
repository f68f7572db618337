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
  /**
   * q<i>: the case's i-th query in the order the service sends it (a search: the early page, the
   * count, then the pages of the windows read beside or after the count; summary/aggregation: q0).
   */
  query: string;
  read_rows: number;
  read_mib: number;
  result_rows: number;
  memory_mib: number;
  elapsed_ms: number;
}

export async function engineFigures(client: ClickHouseClient, c: BenchCase, variant: number): Promise<EngineFigures[]> {
  const out: EngineFigures[] = [];
  let sent = 0;
  await c.direct(async <T>(q: CompiledQuery) => {
    const query = `q${sent++}`;
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
      query,
      read_rows: n('read_rows'),
      read_mib: Math.round((n('read_bytes') / 2 ** 20) * 10) / 10,
      result_rows: n('result_rows'),
      memory_mib: Math.round((n('memory_usage') / 2 ** 20) * 10) / 10,
      elapsed_ms: Math.round(n('elapsed_ns') / 1e5) / 10,
    });
    return rows;
  }, variant);
  return out.sort((a, b) => Number(a.query.slice(1)) - Number(b.query.slice(1)));
}
