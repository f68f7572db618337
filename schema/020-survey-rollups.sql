-- Survey rollups: the groups and answer counts of survey_responses, pre-aggregated per
-- (org, survey, hour / UTC day / UTC month) slice of created_at (src/responses/rollups/).
--
-- Invariant: one row per slice holds its whole state (parallel arrays), and a recompute replaces
-- the row as a whole: ReplacingMergeTree(version), read with FINAL, so a slice row is the old one
-- or the new one, never a mix. `version` is now64(9) of the recomputing INSERT, taken before it
-- reads survey_responses FINAL: the highest version saw every write committed before it started.
-- A slice row is served only while the pending marks of its hours (survey_rollup_pending below)
-- sum to 0: +1 before a write, -n once its recompute has run.
--   g_*  responses grouped by channel_id, completion, end_reason, language and hf_support (the
--        `support` values), with their count and NPS / CSAT / CES score counts;
--   a_*  per group and (question, value), the responses with that distinct value.
-- `start` is the slice's first instant, DateTime64 like created_at (the API accepts 1900 on).
-- The protocol and why it is built so: docs/architecture.md ("The rollups").
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
SETTINGS index_granularity = 128;

-- The pending marks per hour slice: +1 before a write, -n once its slices are recomputed.
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
