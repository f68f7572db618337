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
-- Partitions by month of created_at: range queries skip whole months; merges stay bounded.
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
    INDEX id_bloom id TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree(updated_at)
PARTITION BY toYYYYMM(created_at)
ORDER BY (org_id, survey_id, created_at, id);
