-- Survey responses: one row per response version; the newest `updated_at` wins.
--
-- Invariant: every read uses FINAL, so a query never sees two versions of one id; versions
-- collapse only when they share the sorting key and the partition, so (survey_id, created_at) is
-- an id's fixed identity (claimed in survey_response_ids, schema/030), and the writer stores every
-- version under it. Sorting key (org_id, survey_id, created_at, id): every read is one
-- organization, usually a list of surveys and a created_at window, newest first. Weekly
-- partitions, each merged into one part once all its parts are an hour old: FINAL over several
-- parts merges their key columns on every read, so the partition still being written bounds
-- every query. id_bloom skips the granules that cannot hold the ids of a deletion. `doc` keeps
-- the record as written, for search to return it field for field.
-- Why, and what was measured: docs/architecture.md ("Writing survey responses", "Why these
-- engines and keys"), bench/query/README.md ("Figures behind the schema and the code").
CREATE TABLE IF NOT EXISTS survey_responses
(
    org_id              UUID,
    survey_id           UUID,
    created_at          DateTime64(6, 'UTC'),
    id                  UUID,
    updated_at          DateTime64(6, 'UTC'),
    channel_id          UUID,
    respondent_id       UUID,
    respondent_aliases  Array(String),
    scenario_id         UUID,
    language            LowCardinality(String),
    locale              LowCardinality(String),
    group_ids           Array(UUID),
    completion          Enum8('not_started' = 0, 'partially_completed' = 1, 'fully_completed' = 2),
    active              Bool,
    end_reason          LowCardinality(String),
    ended_at            Nullable(DateTime64(6, 'UTC')),
    last_answer_at      Nullable(DateTime64(6, 'UTC')),
    -- hidden fields as parallel arrays: key, type tag t (0 string, 1 bool, 2 number) and the value
    hf_keys             Array(LowCardinality(String)),
    hf_types            Array(UInt8),
    hf_strings          Array(String),
    hf_bools            Array(Bool),
    hf_numbers          Array(Float64),
    -- answers as parallel arrays, one element per answer entry
    ans_question_ids    Array(String),              -- question_correlation_id
    ans_cta_types       Array(LowCardinality(String)),
    ans_values          Array(String),              -- bucket key: v_s, else v_d / v_b as text
    ans_scores          Array(Nullable(Float64)),   -- v_d, else v_s read as a number
    answer_text         String,                     -- lower-cased answer texts and translations, for `raw`
    doc                 String CODEC(ZSTD(3)),
    -- Narrow copies computed by the engine at insert (MATERIALIZED: writers never send them), so
    -- that the summary, hidden-field filters and hidden-field buckets read a few bytes per row
    -- instead of the wide arrays above. Their expressions are part of the contract with
    -- src/responses/summary.ts (SCALES, the `support` key) and compile.ts / group-by.ts (pairs).
    -- Whole-number scores on each scale, from the answers of that cta_type (summary.ts SCALES).
    nps_scores          Array(UInt8) MATERIALIZED arrayMap(s -> toUInt8(assumeNotNull(s)), arrayFilter((s, c) -> ifNull(c = 'nps' AND s >= 0 AND s <= 10 AND s = floor(s), false), ans_scores, ans_cta_types)),
    csat_scores         Array(UInt8) MATERIALIZED arrayMap(s -> toUInt8(assumeNotNull(s)), arrayFilter((s, c) -> ifNull(c = 'csat' AND s >= 1 AND s <= 5 AND s = floor(s), false), ans_scores, ans_cta_types)),
    ces_scores          Array(UInt8) MATERIALIZED arrayMap(s -> toUInt8(assumeNotNull(s)), arrayFilter((s, c) -> ifNull(c = 'ces' AND s >= 1 AND s <= 7 AND s = floor(s), false), ans_scores, ans_cta_types)),
    -- Hidden-field entries as one text each: key, NUL, a type tag (s string, b bool, n number) and
    -- the value as text (bool true/false, number as toString(Float64)). Keys containing NUL are
    -- left out, so the first NUL always ends the key (compile.ts falls back to the arrays for them).
    hf_pairs            Array(LowCardinality(String)) MATERIALIZED arrayFilter(p -> p != '', arrayMap((k, t, s, b, n) -> if(position(k, '\0') > 0, '', concat(k, '\0', multiIf(t = 0, concat('s', s), t = 1, if(b, 'btrue', 'bfalse'), concat('n', toString(n))))), hf_keys, hf_types, hf_strings, hf_bools, hf_numbers)),
    -- The distinct values (as text) of the hidden field `support`, which the summary counts.
    hf_support          Array(LowCardinality(String)) MATERIALIZED arrayDistinct(arrayFilter((v, k) -> k = 'support', arrayMap((t, s, b, n) -> multiIf(t = 0, s, t = 1, if(b, 'true', 'false'), toString(n)), hf_types, hf_strings, hf_bools, hf_numbers), hf_keys)),
    INDEX id_bloom id TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree(updated_at)
PARTITION BY toMonday(created_at)
ORDER BY (org_id, survey_id, created_at, id)
SETTINGS min_age_to_force_merge_seconds = 3600, min_age_to_force_merge_on_partition_only = 1;
