import type { ClickHouseSettings } from '@clickhouse/client';

/**
 * Settings every query of the service runs with (the client sends them with each request), so that
 * a server whose profile sets other defaults (CLICKHOUSE_URL: the user's server) cannot change an
 * answer, drop a row or acknowledge a write that is not stored. A query may still override one on
 * purpose (the dashboard queries turn the query cache on; survey queries set their limits).
 *
 * test/integration/pinned-settings.test.ts runs the service on an engine started with hostile
 * values of most of these and compares its answers with a default engine's. Measured on the engine
 * (26.7): a server-wide `limit` and `input_format_skip_unknown_fields=1` change answers and writes
 * outright (the test shows both). `optimize_move_to_prewhere_if_final=1` did not change a FINAL
 * count there (versions in separate parts, merges stopped); it is pinned anyway, as its documented
 * effect is to filter before the latest version is chosen and CLICKHOUSE_URL may be another version.
 */
export const PINNED_SETTINGS: ClickHouseSettings = Object.freeze({
  // --- FINAL reads (ReplacingMergeTree: survey_responses, api_tokens, releases) -----------------
  // Moving WHERE to PREWHERE before FINAL filters the row versions before the latest one is
  // chosen: a response whose older version matched a filter would show with its old values.
  optimize_move_to_prewhere_if_final: 0,
  // A skip index may drop the granule holding the latest version; exact mode rescans newer parts.
  use_skip_indexes_if_final_exact_mode: 1,
  // Our FINAL reads are written out; `final=1` would apply FINAL to every table (events too).
  final: 0,
  // Merging within partitions only is correct for our keys (a row's versions share its partition:
  // created_at is in the sorting key and decides the partition), but it is an assumption we keep
  // explicit rather than leave to the server.
  do_not_merge_across_partitions_select_final: 0,

  // --- writes ------------------------------------------------------------------------------------
  // A write is acknowledged after the engine stored it: never through an async insert queue
  // whose flush may still fail (and with wait_for_async_insert=0, not even waited for).
  async_insert: 0,
  wait_for_async_insert: 1,
  // A misspelled or removed column fails the INSERT instead of being dropped silently.
  input_format_skip_unknown_fields: 0,
  // A row that does not parse fails the INSERT; it is never skipped.
  input_format_allow_errors_num: '0',
  input_format_allow_errors_ratio: 0,
  // Omitted fields and nulls in non-Nullable columns take the column defaults (the writers rely on it).
  input_format_defaults_for_omitted_fields: 1,
  input_format_null_as_default: 1,
  // An identical block is only ever a retry: every event and token row carries a random id, and
  // responses and releases are upserts, so deduplicating a retried block is what we want.
  insert_deduplicate: 1,
  date_time_input_format: 'best_effort',

  // --- results -----------------------------------------------------------------------------------
  // Dates come back as text we parse ourselves; 64-bit integers as JSON numbers.
  date_time_output_format: 'simple',
  output_format_json_quote_64bit_integers: 0,
  output_format_json_quote_denormals: 0,
  output_format_json_quote_decimals: 0,
  // A result is all rows or an error: a server-wide limit/offset or a limit in 'break' mode would
  // return part of a result as if it were all of it.
  limit: '0',
  offset: '0',
  result_overflow_mode: 'throw',
  read_overflow_mode: 'throw',
  group_by_overflow_mode: 'throw',
  sort_overflow_mode: 'throw',
  distinct_overflow_mode: 'throw',
  set_overflow_mode: 'throw',
  join_overflow_mode: 'throw',
  transfer_overflow_mode: 'throw',
  timeout_overflow_mode: 'throw',
  extremes: 0,
  // Aggregates over nothing are 0 (count, sum), rolled-up keys are defaults (the aggregation's
  // ROLLUP tells levels apart by grouping()), NULL never equals NULL, exact distinct counts.
  aggregate_functions_null_for_empty: 0,
  group_by_use_nulls: 0,
  join_use_nulls: 0,
  transform_null_in: 0,
  cast_keep_nullable: 0,
  count_distinct_implementation: 'uniqExact',
  // Migrations: a column without Nullable is not Nullable.
  data_type_default_nullable: 0,
  // A stale cached result is only acceptable where a query asks for it (the polling window).
  use_query_cache: 0,
  // Rows deleted with a lightweight DELETE stay invisible.
  apply_deleted_mask: 1,
  // Times without a zone in our SQL mean UTC, whatever the server's zone.
  session_timezone: 'UTC',
});
