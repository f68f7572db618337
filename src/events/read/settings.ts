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
 */
import type { ClickHouseSettings } from '@clickhouse/client';
import { RANKED_BUCKETS_SETTINGS } from '../../query/ranked-buckets.ts';
import { NO_JIT_SETTINGS as NO_JIT, READ_SETTINGS } from '../../query/settings.ts';

/** The event search's queries (the count, the pages). */
export const EVENT_SEARCH_SETTINGS: ClickHouseSettings = Object.freeze({ ...READ_SETTINGS, ...NO_JIT });

/** The event aggregation's queries (the bounds, the grouped query, the release marks). */
export const EVENT_AGGREGATION_SETTINGS: ClickHouseSettings = Object.freeze({ ...RANKED_BUCKETS_SETTINGS, ...NO_JIT });
