-- Every slice row of survey_rollup has its marker in survey_rollup_answers (schema/111), at its
-- version: the view of schema/111 writes one with every slice row written since, and this backfill
-- covers the slice rows written before it. It writes again the current row of each slice that has
-- no marker at its version, unchanged (same key, same version: ReplacingMergeTree keeps one), so
-- that the view computes its answer totals, marker included, as it does for every write.
--
-- Why: with that invariant, a read filtered by one answer takes each slice's current version from
-- the markers it reads beside the answer's rows, in one read of survey_rollup_answers, instead of
-- joining every slice key of survey_rollup (src/responses/answer-rollups.ts). A marker whose
-- `complete` is 0 (a slice written before its answer groups had scores, schema/110) still sends
-- the read to the raw table.
--
-- Idempotent: run again, it finds every slice marked and writes nothing. A slice written while it
-- runs gets its marker from the view, and a newer version wins over the copy.
INSERT INTO survey_rollup
SELECT * FROM survey_rollup FINAL
WHERE (org_id, span, survey_id, start, version) GLOBAL NOT IN (
    SELECT org_id, span, survey_id, start, version FROM survey_rollup_answers WHERE question_id = '' AND value = ''
);
