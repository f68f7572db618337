-- Survey rollups: the summary and the common aggregations of survey_responses, pre-aggregated per
-- (org, survey, hour) and per (org, survey, day), so that a dashboard's cost follows the number of
-- slices in its range rather than the number of responses (src/responses/rollups/).
--
-- ONE ROW PER SLICE. A slice's whole state (every group of responses and every answer count of
-- that hour or day) is one row, its parts parallel arrays, and a recomputation replaces the row as
-- a whole: ReplacingMergeTree(version) keeps the row with the highest version and every read uses
-- FINAL. There is no partial state to reconcile: a slice row is either the old one or the new
-- one. (Several rows per slice, one per group, were rejected: when a group empties, its old row
-- outlives the recomputation unless the recompute also reads the old rows, and two concurrent
-- recomputations can then leave a mix of both.)
--
-- MAINTENANCE: recompute the touched slices from the deduplicated rows (survey_responses FINAL),
-- chosen over rows with a sign cancelling a response's previous version because it is exact by
-- construction whatever the history: an upsert older than the stored version (a no-op for FINAL),
-- the same id twice in one batch, equal updated_at, two processes writing one id, and (issue 15)
-- deletions all give the slice FINAL gives, with no previous version to read back and cancel.
-- The cost is the rows of the touched slices, not the rows written: a live stream touches the
-- current hour (and day), a bulk import spread over months touches many slices (figures below).
--   1. `pending` +1 on each touched hour slice (survey_rollup_pending),
--   2. write survey_responses,
--   3. recompute the touched hours from survey_responses FINAL, then their days from the hour rows,
--   4. `pending` -1, and only then acknowledge the write.
-- `version` is now64(9) of the recomputing INSERT, taken when it starts, before it reads: the row
-- with the highest version was computed by the recomputation that started last, and it saw every
-- write committed before it started. Any write committed later is followed by its own
-- recomputation (step 3), with a higher version; if that never happens (crash, engine error)
-- `pending` stays non-zero. A reader serves a slice from here only while its `pending` sum is 0,
-- and reads the raw table for the others: a rollup that cannot be trusted is never served.
-- `tallyhouse seed` and `tallyhouse rollups rebuild` mark the whole org (survey_id and hour at
-- the sentinel values of src/responses/rollups/) for their duration.
--
-- GROUPS (g_*): responses grouped by the dimensions the summary and the rollup-served filters and
-- group_by rules need: channel_id, completion, end_reason, language and hf_support (the summary's
-- `support` values), with the response count and the NPS / CSAT / CES score counts of each group.
-- ANSWERS (a_*): per (channel_id, completion, end_reason, language, question, value), the number
-- of responses with that distinct value for that question (the aggregation's `answer` buckets).
--
-- FIGURES (1M seeded responses of one org, 5 surveys over 90 days; 2 shared cores under a load
-- average of 25-45 from other engineers' test runs, so wall times are inflated several times over
-- and only engine CPU per query is given; 7 first runs each, rollup-served vs forced raw):
--   rows: 10,790 hour rows (454,556 groups, 1,250,296 answer entries), 450 day rows (89,746 /
--   446,095), 20 month rows (6,100 / 59,983); `rollups rebuild` of the org: 58-95 s.
--   99-day range (the query bench's): summary 169 vs 291 ms, completion x 100 daily 61 vs 100 ms,
--   survey_id 49 vs 89 ms, answer buckets of one NPS question 184 vs 190 ms.
--   18-day range (5.5x fewer rows in scope), rollup vs raw: summary 134 vs 103, completion x daily
--   91 vs 46, survey_id 51 vs 34, answer 111 vs 80: on small scopes the raw table is cheaper.
--   Growth, 18 -> 99 days of the same org (5.5x rows): rollup summary x1.26, survey_id x1.0,
--   completion x daily x0.7-1.0 (noise), answer x1.66; raw x2.8, x2.6, x2.2, x2.4.
--   Writes: each acknowledged batch adds a pending mark, one recompute per span (hour from the
--   responses of the touched hours; day and month from the rows below) and the unmark: 4 more
--   statements; a batch spread over 90 days reads the responses of up to 1000 hours.
--   What remains costly is expanding the group arrays (ARRAY JOIN + GROUP BY: ~1 µs per group
--   entry); schema/050 adds per-slice totals that the requests without a filter read instead.
--   See the query bench for 5M and 10M figures.
-- `start`: the slice's first instant (hour or UTC day), DateTime64 like created_at (DateTime
-- would not hold 1900-1969, which the API accepts). `span` 'hour' or 'day': days let a query over
-- months read ~24x fewer rows; hours serve the partial days at a range's ends and hourly
-- histograms; the partial hours at the very ends are read from survey_responses.
CREATE TABLE IF NOT EXISTS survey_rollup
(
    org_id          UUID,
    span            Enum8('hour' = 1, 'day' = 2, 'month' = 3),
    survey_id       UUID,
    start           DateTime64(6, 'UTC'),
    version         DateTime64(9, 'UTC'),
    g_channel_id    Array(UUID),
    g_completion    Array(Enum8('not_started' = 0, 'partially_completed' = 1, 'fully_completed' = 2)),
    g_end_reason    Array(LowCardinality(String)),
    g_language      Array(LowCardinality(String)),
    g_support       Array(Array(LowCardinality(String))),
    g_responses     Array(UInt64),
    g_nps           Array(Map(UInt8, UInt64)),
    g_csat          Array(Map(UInt8, UInt64)),
    g_ces           Array(Map(UInt8, UInt64)),
    a_channel_id    Array(UUID),
    a_completion    Array(Enum8('not_started' = 0, 'partially_completed' = 1, 'fully_completed' = 2)),
    a_end_reason    Array(LowCardinality(String)),
    a_language      Array(LowCardinality(String)),
    a_question_id   Array(LowCardinality(String)),
    a_value         Array(String),
    a_responses     Array(UInt64)
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (org_id, span, survey_id, start)
-- A row is a whole slice (hundreds of array entries), so a granule of 128 rows, not 8192: a query
-- reads the day and month rows of its org without decompressing every hour row stored beside them.
-- Measured on 1M responses (10,790 hour, 450 day, 20 month rows), the summary's rollup part:
-- 103 -> 47 ms of engine CPU.
SETTINGS index_granularity = 128;

-- In-flight maintenance per hour slice: +1 before a write, -1 once its slices are recomputed.
-- SummingMergeTree: merges add the rows up and drop those that sum to 0, so the table holds only
-- slices with maintenance in flight or interrupted. Readers sum per slice (GROUP BY ... HAVING).
CREATE TABLE IF NOT EXISTS survey_rollup_pending
(
    org_id      UUID,
    survey_id   UUID,
    hour        DateTime64(6, 'UTC'),
    pending     Int64
)
ENGINE = SummingMergeTree(pending)
ORDER BY (org_id, survey_id, hour);
