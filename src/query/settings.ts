/**
 * The resource limits of every read of the query language (survey responses, events), passed as
 * `clickhouse_settings`. Over a limit ClickHouse throws instead of running on
 * (`*_overflow_mode: 'throw'`) and src/clickhouse/errors.ts maps it: 158 TOO_MANY_ROWS, 307
 * TOO_MANY_BYTES, 396 TOO_MANY_ROWS_OR_BYTES, 241 MEMORY_LIMIT_EXCEEDED -> 400
 * query_too_expensive ("narrow the range"); 159 TIMEOUT_EXCEEDED, 202 TOO_MANY_SIMULTANEOUS_QUERIES
 * -> 503 with Retry-After.
 * Sizing: 15 s is far beyond any sane read of one organization; a read past 100M rows fails as soon
 * as it passes the limit rather than after the timeout; memory stays low (streaming aggregation,
 * ORDER BY ... LIMIT), and 2 GiB only stops a runaway.
 * One snapshot per query: a read that reads a table twice (a projection for whole hours and the
 * rows for the partial ones, src/events/read/hours.ts) sees the same parts in both, so a
 * concurrent INSERT or deletion is counted in both or in neither.
 */
import type { ClickHouseSettings } from '@clickhouse/client';

export const READ_SETTINGS: ClickHouseSettings = Object.freeze({
  max_execution_time: 15,
  timeout_overflow_mode: 'throw',
  max_rows_to_read: '100000000',
  read_overflow_mode: 'throw',
  max_memory_usage: '2147483648',
  enable_shared_storage_snapshot_in_query: 1,
});

/**
 * The engine's JIT compilation of expressions off, for the interactive reads of the query language
 * (survey responses and events: search, summary, aggregation).
 *
 * Why: the engine compiles an expression (a filter, a bucket key, an aggregate) once it has met it
 * `min_count_to_compile_expression` times, synchronously, inside the query that reaches the count,
 * before that query reads anything. A read asked again with a moving range meets its expressions a
 * few times, so one of its first runs pays for the compilation on one of the two shared cores, and
 * the compiled form gave these reads no measured gain afterwards (bench/query/README.md,
 * bench/events/README.md). Interpreted expressions over the engine's column blocks cost the same
 * every run.
 */
export const NO_JIT_SETTINGS: ClickHouseSettings = Object.freeze({
  compile_expressions: 0,
  compile_aggregate_expressions: 0,
  compile_sort_description: 0,
});
