/**
 * The engine settings of the event search and aggregation: the query language's limits
 * (src/query/settings.ts; the ranked buckets' result bound for aggregations) with the engine's
 * JIT compilation of expressions off.
 *
 * Why: the engine compiles an expression (a filter, a bucket key, an aggregate) once it has met it
 * `min_count_to_compile_expression` times, synchronously, in the query that reaches the count,
 * before that query reads anything. An event read of a moving range meets its bucket and range
 * expressions a few times, so one of its first runs pays for the compilation, on one of the two
 * shared cores, and the compiled form gave these reads no measured gain afterwards (the figures:
 * bench/events/README.md). Interpreted expressions over the engine's column blocks cost the same
 * every run.
 *
 * And the engine's use of the partitions' minmax bounds in the primary key analysis off
 * (`use_partition_minmax_for_primary_key_pruning`, on by default in this engine, 26.7): `events`
 * is partitioned by month of `timestamp`, which its sorting key and event_times' key hold too, so
 * the engine adds each part's timestamp bounds to the analysis of every granule range of every
 * part, for the table and for each projection it considers, serially before reading. The event
 * reads bound the days themselves (source.ts, hours.ts); on the bench's 10M events the bounds
 * pruned no granule (the same marks and rows in all four of its cases) and took ~15 ms of the
 * primary key analysis of the count by name, unique users and the search count
 * (FilteringMarksWithPrimaryKeyMicroseconds 23 -> 8 ms; bench/events/README.md, 2026-11-27
 * 08:17). It only prunes: it never changes an answer.
 */
import type { ClickHouseSettings } from '@clickhouse/client';
import { RANKED_BUCKETS_SETTINGS } from '../../query/ranked-buckets.ts';
import { NO_JIT_SETTINGS as NO_JIT, READ_SETTINGS } from '../../query/settings.ts';

/** The primary key analysis without the partitions' minmax bounds (above). */
const PRIMARY_KEY_ANALYSIS: ClickHouseSettings = Object.freeze({ use_partition_minmax_for_primary_key_pruning: 0 });

/** The event search's queries (the count, the pages). */
export const EVENT_SEARCH_SETTINGS: ClickHouseSettings = Object.freeze({ ...READ_SETTINGS, ...NO_JIT, ...PRIMARY_KEY_ANALYSIS });

/** The event aggregation's queries (the bounds, the grouped query, the release marks). */
export const EVENT_AGGREGATION_SETTINGS: ClickHouseSettings = Object.freeze({ ...RANKED_BUCKETS_SETTINGS, ...NO_JIT, ...PRIMARY_KEY_ANALYSIS });
