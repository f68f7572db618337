-- Hidden-field entries by type, for the comparisons (`gt`, `lt`) that cannot use hf_pairs
-- (schema/004: `has` finds one exact entry, not an order): a comparison reads the entries of its
-- type only, never the five parallel arrays, whose hf_strings holds every user agent.
--   hf_number_keys, hf_number_values   the number entries (t = 2): key and value
--   hf_string_keys, hf_string_heads    the string entries (t = 0): key and the value's first
--                                       HEAD_BYTES (32) bytes
-- A head answers a text comparison exactly whenever the filter value is shorter than a head
-- (src/responses/compile.ts): s > v and head(s) > v agree when v has at most 31 bytes, as the
-- engine compares strings byte by byte and a longer string sorts after its prefix. Heads of long
-- values (user agents, URLs) share their first bytes, so the LowCardinality column stays small;
-- a longer filter value reads hf_strings. Keys repeat as in hf_keys (a key may hold several
-- entries); entries whose key holds a NUL are kept (they never need hf_pairs' separator).
--
-- Invariant: MATERIALIZED like hf_pairs, so the writers send nothing new and a row can never
-- disagree with its arrays. Parts written before this migration compute them when read until the
-- MATERIALIZE mutation below rewrites them.
ALTER TABLE survey_responses
    ADD COLUMN IF NOT EXISTS hf_number_keys Array(LowCardinality(String)) MATERIALIZED arrayFilter((k, t) -> t = 2, hf_keys, hf_types),
    ADD COLUMN IF NOT EXISTS hf_number_values Array(Float64) MATERIALIZED arrayFilter((n, t) -> t = 2, hf_numbers, hf_types),
    ADD COLUMN IF NOT EXISTS hf_string_keys Array(LowCardinality(String)) MATERIALIZED arrayFilter((k, t) -> t = 0, hf_keys, hf_types),
    ADD COLUMN IF NOT EXISTS hf_string_heads Array(LowCardinality(String)) MATERIALIZED arrayFilter((s, t) -> t = 0, arrayMap(s -> substring(s, 1, 32), hf_strings), hf_types);

ALTER TABLE survey_responses MATERIALIZE COLUMN hf_number_keys, MATERIALIZE COLUMN hf_number_values,
    MATERIALIZE COLUMN hf_string_keys, MATERIALIZE COLUMN hf_string_heads;
