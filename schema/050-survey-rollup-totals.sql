-- Slice totals: each survey_rollup row (a slice, schema/020) also carries its groups folded along
-- each dimension on its own, so the common questions read a few small maps per slice instead of
-- expanding the groups (ARRAY JOIN of every (channel, completion, end reason, language, support)
-- group: ~100 per hour row, ~270 per day row, ~300 per month row at 5M responses).
--   t_rows                      responses in the slice
--   t_completion, t_end_reason, t_language: responses per value ('' included: an active response
--                               has no end reason, but it counts in the slice's total)
--   t_support                   responses per value of the hidden field `support` (a response
--                               with two values counts in both)
--   t_nps, t_csat, t_ces        the score counts (as g_nps... summed)
--   q_question_id, q_value, q_responses: the answer counts a_* without their group dimensions,
--                               per (question, value), sorted: 2.3x fewer entries per hour row and
--                               3.7x per day row than a_* (5M responses, 5 surveys).
-- Served when no filter narrows the groups (src/responses/rollups/read.ts): the summary with no
-- filter, and aggregations whose levels need at most one of completion / end_reason (or only an
-- answer level besides survey_id and created_at). With a filter on completion, language or
-- channel the groups are read as before.
--
-- MATERIALIZED from the row's own arrays: computed by the engine on every INSERT of a slice row,
-- so every writer of the rollup (the recomputes of src/responses/rollups/maintain.ts: API writes,
-- seed, rebuild, deletions) keeps them exact with no change, and a row can never hold totals that
-- disagree with its groups. Rows written before this migration compute them when read until
-- their part is rewritten (the MATERIALIZE mutations below, in the background).
--
-- Measured on the query bench's 5M org (one merged copy of its rollup, engine time, 99-day range:
-- 2 month rows, 140 day rows, the rest hour rows): summary 62-73 -> 11-15 ms; survey_id 27-63 ->
-- 6-10 ms; completion x daily 38-83 -> 10-12 ms; the answer buckets of one NPS question 42-58 ->
-- 19-29 ms. A trivial read of this table costs ~6 ms on the embedded engine.
ALTER TABLE survey_rollup
    ADD COLUMN IF NOT EXISTS t_rows UInt64 MATERIALIZED arraySum(g_responses),
    ADD COLUMN IF NOT EXISTS t_completion Map(LowCardinality(String), UInt64) MATERIALIZED arrayReduce('sumMap', arrayMap((k, n) -> map(toString(k), n), g_completion, g_responses)),
    ADD COLUMN IF NOT EXISTS t_end_reason Map(LowCardinality(String), UInt64) MATERIALIZED arrayReduce('sumMap', arrayMap((k, n) -> map(toString(k), n), g_end_reason, g_responses)),
    ADD COLUMN IF NOT EXISTS t_language Map(LowCardinality(String), UInt64) MATERIALIZED arrayReduce('sumMap', arrayMap((k, n) -> map(toString(k), n), g_language, g_responses)),
    ADD COLUMN IF NOT EXISTS t_support Map(LowCardinality(String), UInt64) MATERIALIZED arrayReduce('sumMap', arrayMap((vals, n) -> mapFromArrays(CAST(vals, 'Array(String)'), arrayMap(x -> n, vals)), g_support, g_responses)),
    ADD COLUMN IF NOT EXISTS t_nps Map(UInt8, UInt64) MATERIALIZED arrayReduce('sumMap', g_nps),
    ADD COLUMN IF NOT EXISTS t_csat Map(UInt8, UInt64) MATERIALIZED arrayReduce('sumMap', g_csat),
    ADD COLUMN IF NOT EXISTS t_ces Map(UInt8, UInt64) MATERIALIZED arrayReduce('sumMap', g_ces),
    ADD COLUMN IF NOT EXISTS q_question_id Array(LowCardinality(String)) MATERIALIZED arrayMap(t -> t.1, arrayReduce('sumMap', [arrayZip(CAST(a_question_id, 'Array(String)'), a_value)], [a_responses]).1),
    ADD COLUMN IF NOT EXISTS q_value Array(String) MATERIALIZED arrayMap(t -> t.2, arrayReduce('sumMap', [arrayZip(CAST(a_question_id, 'Array(String)'), a_value)], [a_responses]).1),
    ADD COLUMN IF NOT EXISTS q_responses Array(UInt64) MATERIALIZED arrayReduce('sumMap', [arrayZip(CAST(a_question_id, 'Array(String)'), a_value)], [a_responses]).2;

ALTER TABLE survey_rollup MATERIALIZE COLUMN t_rows, MATERIALIZE COLUMN t_completion, MATERIALIZE COLUMN t_end_reason,
    MATERIALIZE COLUMN t_language, MATERIALIZE COLUMN t_support, MATERIALIZE COLUMN t_nps, MATERIALIZE COLUMN t_csat,
    MATERIALIZE COLUMN t_ces, MATERIALIZE COLUMN q_question_id, MATERIALIZE COLUMN q_value, MATERIALIZE COLUMN q_responses;
