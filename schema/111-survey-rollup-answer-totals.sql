-- Answer totals: per rollup slice and per (question, value) answered in it, the totals of the
-- responses that gave that answer (t_rows, t_completion, t_end_reason, t_language, t_support,
-- t_nps, t_csat, t_ces: the slice totals of schema/050, restricted to those responses), stored
-- apart from the slice row and sorted by (org, question, value), so that a read filtered by one
-- answer (`response.answer` eq, alone) reads only the rows of that answer. From the slice row
-- itself it would read the answer arrays of every slice in its range, every question's and every
-- value's (the FINAL of survey_rollup moves no condition to PREWHERE), which costs far more than
-- the plain summary (bench/query/README.md, "Survey metrics").
--
-- Written by a materialized view from every INSERT into survey_rollup (the recomputes of
-- src/responses/rollups/maintain.ts: API writes, seed, rebuild, deletions): computed from the slice
-- row's own answer groups (a_*, schema/110), with the row's version, so no writer changes.
--
-- Which rows are current. A recompute replaces a slice row by a newer version; an answer the slice
-- no longer holds keeps its old row here (nothing deletes it). So a read takes a row only when its
-- (span, survey_id, start, version) is the slice's current one in survey_rollup FINAL.
--
-- Markers: every slice row also writes one row with question_id = '' and value = '' (no answer
-- has an empty question id: the filter refuses it), holding nothing but `complete`. A slice whose
-- current version has no marker here was written before this migration (or by an older writer);
-- one whose marker has complete = 0 was written before its answer groups had scores and supports
-- (schema/110). A read checks, in the same query, that every slice it reads has a complete marker,
-- and reads the raw table otherwise (src/responses/answer-rollups.ts); `tallyhouse rollups
-- rebuild` rewrites every slice, and so writes its answer totals.
CREATE TABLE IF NOT EXISTS survey_rollup_answers
(
    org_id          UUID,
    question_id     LowCardinality(String),
    value           String,
    span            Enum8('hour' = 1, 'day' = 2, 'month' = 3),
    survey_id       UUID,
    start           DateTime64(6, 'UTC'),
    version         DateTime64(9, 'UTC'),
    complete        UInt8,
    t_rows          UInt64,
    t_completion    Map(LowCardinality(String), UInt64),
    t_end_reason    Map(LowCardinality(String), UInt64),
    t_language      Map(LowCardinality(String), UInt64),
    t_support       Map(LowCardinality(String), UInt64),
    t_nps           Map(UInt8, UInt64),
    t_csat          Map(UInt8, UInt64),
    t_ces           Map(UInt8, UInt64)
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (org_id, question_id, value, span, survey_id, start)
-- A read takes a few rows per slice of its range: small granules keep it from decompressing the
-- neighbouring answers' maps.
SETTINGS index_granularity = 256;

-- The marker is a first entry pushed in front of the answer groups (question '', no responses);
-- arrays written before schema/110 have no score or support entries: padded to the groups, and
-- the row's `complete` says so. Zero counts (the marker's) are dropped from the maps.
CREATE MATERIALIZED VIEW IF NOT EXISTS survey_rollup_answers_mv TO survey_rollup_answers AS
SELECT
    org_id,
    question_id,
    value,
    span,
    survey_id,
    start,
    version,
    min(length(a_nps) = length(a_question_id) AND length(a_support) = length(a_question_id)) AS complete,
    sum(n) AS t_rows,
    mapFilter((k, x) -> x > 0, sumMap(map(toString(c), n))) AS t_completion,
    mapFilter((k, x) -> x > 0, sumMap(map(e, n))) AS t_end_reason,
    mapFilter((k, x) -> x > 0, sumMap(map(l, n))) AS t_language,
    mapFilter((k, x) -> x > 0, sumMap(mapFromArrays(s, arrayMap(x -> n, s)))) AS t_support,
    sumMap(nps) AS t_nps,
    sumMap(csat) AS t_csat,
    sumMap(ces) AS t_ces
FROM survey_rollup
ARRAY JOIN
    arrayPushFront(CAST(a_question_id, 'Array(String)'), '') AS question_id,
    arrayPushFront(a_value, '') AS value,
    arrayPushFront(a_responses, 0) AS n,
    arrayPushFront(CAST(a_completion, 'Array(String)'), '') AS c,
    arrayPushFront(CAST(a_end_reason, 'Array(String)'), '') AS e,
    arrayPushFront(CAST(a_language, 'Array(String)'), '') AS l,
    arrayPushFront(CAST(arrayResize(a_support, length(a_question_id)), 'Array(Array(String))'), []) AS s,
    arrayPushFront(arrayResize(a_nps, length(a_question_id)), map()) AS nps,
    arrayPushFront(arrayResize(a_csat, length(a_question_id)), map()) AS csat,
    arrayPushFront(arrayResize(a_ces, length(a_question_id)), map()) AS ces
GROUP BY org_id, question_id, value, span, survey_id, start, version;
