-- Survey responses: one row per response version; the newest `updated_at` wins.
--
-- Engine: ReplacingMergeTree(updated_at). An upsert is just an insert of a newer version; merges
-- drop older ones in the background and every read uses FINAL, so a query never sees two versions
-- of one id (FINAL with a partition key that is part of the sorting key merges per partition, in
-- parallel). `created_at` is part of the key, so it is treated as immutable for a response id: the
-- writer keeps the stored created_at when an id is written again (see src/responses/store.ts).
--
-- Sorting key (org_id, survey_id, created_at, id): every read is one organization, usually a list
-- of surveys and a created_at window, newest first; the primary index prunes all three.
-- Partitions by week of created_at (Monday): range queries skip whole weeks, and only the current
-- week is still being written, hence in several parts (see "FINAL and merges" below). A write
-- batch (at most 1000 records) may touch up to 1000 weeks: store.ts raises
-- max_partitions_per_insert_block (default 100) for its INSERT.
--
-- Skip indexes, kept only where measured to pay (2M rows, 1.5M in one org, 12 monthly parts,
-- embedded engine, 2 cores; median of 9):
-- - id_bloom: the writer looks up a batch's ids in the org (src/responses/store.ts). Without it
--   that scans every granule of the org: 22 ms for 1 id, 22 ms for 10, 55 ms for 100. With it:
--   12 ms (3/229 granules), 15 ms (29/229), 43 ms (170/229); at 1000 ids every granule matches
--   and the check costs (56 -> 70 ms), so the writer turns skip indexes off for large batches.
--   Costs 2.4 MiB per 2M rows (0.4% of the table). Grows with the org; the common write is small.
-- - Not added: ngrambf_v1(3, 16384, 3, 0) on answer_text for `raw` keyword search skipped no
--   granule (229/229) even for a term in 293 of 1.5M rows: an 8192-row granule of free text holds
--   almost every trigram. `raw` stays a scan of answer_text (100-260 ms over 1.5M rows).
--
-- FINAL and merges: a partition held in ONE merged part is read without the FINAL merge (the engine
-- knows it holds one version per key); with several parts every read merges their key columns
-- (org_id, survey_id, created_at, id, updated_at), whatever the filter, and that merge costs ~14x
-- the plain read: on 10M responses of one org over 90 days (2 cores), count() FINAL took 68 ms for
-- the 7.3M rows of months in one part each and 361 ms for the 2.8M rows of a month in 10 parts.
-- So the size of the partition still being written bounds every query; on the same 10M responses
-- with all but the last partition in one part (engine time, ms, monthly -> weekly partitions):
-- search count 689 -> 189, summary 1120 -> 614, completion x daily histogram 620 -> 209; all
-- partitions in one part: 63, 564, 175. Partitions also split part ranges: with 1M responses,
-- count() FINAL took 18 ms with one part per month, 84 ms with 3-9 parts per month written in
-- time order (as a live stream writes them), 170 ms with 6 parts per month that each span the
-- whole range (as the seed writes them). Background merges alone left 3-6 parts per partition for
-- good; min_age_to_force_merge_seconds merges a partition into one part once all its parts are an
-- hour old (on_partition_only: a busy current week is not rewritten every hour; every past week
-- ends in one part).
--
-- Typed columns serve filters and aggregations; `doc` keeps the record exactly as written (org
-- aside) so that search returns it field for field without rebuilding it from columns.
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
