-- Slice totals: each survey_rollup row (schema/020) also carries its groups folded along each
-- dimension on its own, so the requests without a filter read a few small maps per slice instead
-- of expanding every group (src/responses/rollups/read.ts).
--   t_rows                      responses in the slice
--   t_completion, t_end_reason, t_language: responses per value ('' included: an active response
--                               has no end reason, but it counts in the slice's total)
--   t_support                   responses per value of the hidden field `support` (a response
--                               with two values counts in both)
--   t_nps, t_csat, t_ces        the score counts (as g_nps... summed)
--   q_question_id, q_value, q_responses: the answer counts a_* without their group dimensions,
--                               per (question, value), sorted
-- Invariant: MATERIALIZED from the row's own arrays, computed by the engine on every INSERT of a
-- slice row, so every writer of the rollup keeps them exact with no change, and a row can never
-- hold totals that disagree with its groups. Parts written before this migration compute them when
-- read until the MATERIALIZE mutations below rewrite them. docs/architecture.md ("The rollups").
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
