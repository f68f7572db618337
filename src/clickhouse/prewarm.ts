/**
 * The engine's caches of a table loaded ahead of its first read: the primary index of every
 * active part and the marks of every column, for the table's own parts and for each of its
 * projections' parts.
 *
 * Why: an engine that has just started holds none of them. The first query that analyses a part
 * loads its primary index, and the first one that reads a column of a part loads that column's
 * whole mark file, on the query's own time: the first read after a start pays for every part and
 * projection it touches (bench/events/README.md). The MergeTree settings `prewarm_mark_cache` and
 * `prewarm_primary_key_cache`, and `SYSTEM PREWARM MARK CACHE`, load the table's own parts only,
 * not its projections' parts, which are what the event reads are answered from.
 *
 * How: one query per projection and one for the table, each reading the first granule of every
 * active part (`_part_offset < 1`, which the index analysis prunes to one granule per part) with
 * every column (`NOT ignore(*)`). What it costs grows with the number of parts and columns, not
 * the rows read; the marks it loads are the files the reads would load, held in the engine's mark
 * cache (bounded by its size, least recently used first out).
 */
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';

/** A warm-up query never holds the start-up longer than this (seconds). */
const PREWARM_SETTINGS: ClickHouseSettings = Object.freeze({ max_execution_time: 30, log_comment: 'prewarm' });

/** Loads `table`'s primary indexes and marks (and its projections'); returns the projections warmed (those with parts). */
export async function prewarmTable(client: ClickHouseClient, table: string): Promise<string[]> {
  const rows = async <T>(query: string, params: Record<string, unknown>) =>
    (await client.query({ query, query_params: params, format: 'JSONEachRow', clickhouse_settings: PREWARM_SETTINGS })).json<T>();
  // Only what has active parts: the engine's table function fails on a projection with none.
  const projections = (await rows<{ name: string }>(
    'SELECT name FROM system.projection_parts WHERE database = currentDatabase() AND table = {table:String} AND active GROUP BY name ORDER BY name',
    { table },
  )).map((r) => r.name);
  for (const projection of projections) {
    await rows('SELECT count() FROM mergeTreeProjection(currentDatabase(), {table:String}, {projection:String}) WHERE _part_offset < 1 AND NOT ignore(*)', { table, projection });
  }
  await rows('SELECT count() FROM {table:Identifier} WHERE _part_offset < 1 AND NOT ignore(*)', { table });
  return projections;
}
