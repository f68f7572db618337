-- Answer groups: the answer counts of each rollup slice (a_*, schema/020: responses per
-- (channel_id, completion, end_reason, language, question, value)) also split by the `support`
-- values and carrying the NPS / CSAT / CES score counts of those responses, like the response
-- groups g_*. The responses with a given answer to a question are then groups of their own, so a
-- summary, an aggregation or a search total filtered by an answer (`response.answer` eq, with or
-- without completion / language / channel_id filters) reads the slices instead of every response
-- (src/responses/answer-rollups.ts).
--   a_support   the group's `support` values (as g_support): a new dimension of the a_* groups;
--               the a_* sums stay the same (a group splits in one per support value set)
--   a_nps, a_csat, a_ces   the score counts of the group's responses (as g_nps ...)
-- Written by the recomputes (src/responses/rollups/maintain.ts) with the other arrays of a slice.
-- A slice row written before this migration has them empty (the default) while its a_question_id
-- is not: a read that needs them checks, in the same query, that every slice row it reads holds
-- them, and reads the raw table otherwise; `tallyhouse rollups rebuild` rewrites every slice.
ALTER TABLE survey_rollup
    ADD COLUMN IF NOT EXISTS a_support Array(Array(LowCardinality(String))),
    ADD COLUMN IF NOT EXISTS a_nps Array(Map(UInt8, UInt64)),
    ADD COLUMN IF NOT EXISTS a_csat Array(Map(UInt8, UInt64)),
    ADD COLUMN IF NOT EXISTS a_ces Array(Map(UInt8, UInt64));
